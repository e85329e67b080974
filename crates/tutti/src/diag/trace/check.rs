//! Checking a trace file: what a viewer needs to show it faithfully.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::io::BufReader;
use std::path::Path;

use serde_json::Value;

/// What [`check`] found in a well-formed trace.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CheckSummary {
    /// Events in the file.
    pub events: usize,
    /// Complete slices (`"ph":"X"`).
    pub slices: usize,
    /// Flows (a start with its end).
    pub flows: usize,
    /// Flows whose start and end are in different processes (ranks).
    pub cross_process_flows: usize,
    /// The processes (ranks) with events, each named by a `process_name`
    /// metadata event.
    pub processes: BTreeSet<u64>,
    /// Slice counts by category (`task`, `actor`, `rmi`, `graph`).
    pub categories: BTreeMap<String, usize>,
}

/// Checks the trace file at `path`: it is a JSON trace (`traceEvents`); every
/// event has a phase, process and thread; slices have a start and a duration
/// and those on one thread nest (none overlaps another partially); every flow
/// start has exactly one end, no earlier than it, and both lie inside a slice
/// of their thread (so a viewer can draw the arrow); every process and thread
/// with events is named by metadata. The error names the first problem.
///
/// ```
/// let path = std::env::temp_dir().join(format!("tutti-doc-check-{}.json", std::process::id()));
/// std::fs::write(&path, r#"{"traceEvents":[
///   {"ph":"X","name":"outer","pid":0,"tid":1,"ts":0,"dur":10},
///   {"ph":"X","name":"inner","pid":0,"tid":1,"ts":5,"dur":10}
/// ]}"#).unwrap();
/// let err = tutti::diag::trace::check(&path).unwrap_err();
/// assert!(err.contains("overlap"), "{err}");
/// # std::fs::remove_file(&path).unwrap();
/// ```
pub fn check(path: impl AsRef<Path>) -> Result<CheckSummary, String> {
    let path = path.as_ref();
    let file = File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let v: Value = serde_json::from_reader(BufReader::new(file))
        .map_err(|e| format!("{} is not valid JSON: {e}", path.display()))?;
    check_value(&v).map_err(|e| format!("{}: {e}", path.display()))
}

/// Nanoseconds from a `ts`/`dur` in microseconds.
fn ns(v: Option<&Value>) -> Option<i64> {
    v.and_then(Value::as_f64)
        .map(|us| (us * 1000.0).round() as i64)
}

pub(super) fn check_value(v: &Value) -> Result<CheckSummary, String> {
    let events = v
        .get("traceEvents")
        .and_then(Value::as_array)
        .ok_or("no \"traceEvents\" array")?;
    let mut s = CheckSummary {
        events: events.len(),
        ..CheckSummary::default()
    };
    // (pid, tid) → slices as (start, end, name).
    type Slices = Vec<(i64, i64, String)>;
    let mut slices: BTreeMap<(u64, u64), Slices> = BTreeMap::new();
    // flow id → starts and ends as (ts, pid, tid).
    type Ends = Vec<(i64, u64, u64)>;
    let mut flows: BTreeMap<String, (Ends, Ends)> = BTreeMap::new();
    let mut process_names = BTreeSet::new();
    let mut thread_names = BTreeSet::new();
    let mut threads = BTreeSet::new();
    for (i, e) in events.iter().enumerate() {
        let ph = e
            .get("ph")
            .and_then(Value::as_str)
            .ok_or_else(|| format!("event {i} has no \"ph\""))?;
        let pid = e
            .get("pid")
            .and_then(Value::as_u64)
            .ok_or_else(|| format!("event {i} has no \"pid\""))?;
        let tid = e
            .get("tid")
            .and_then(Value::as_u64)
            .ok_or_else(|| format!("event {i} has no \"tid\""))?;
        match ph {
            "M" => {
                let named = e
                    .get("args")
                    .and_then(|a| a.get("name"))
                    .and_then(Value::as_str)
                    .is_some_and(|n| !n.is_empty());
                match e.get("name").and_then(Value::as_str) {
                    Some("process_name") if named => {
                        process_names.insert(pid);
                    }
                    Some("thread_name") if named => {
                        thread_names.insert((pid, tid));
                    }
                    _ => {}
                }
            }
            "X" => {
                let ts = ns(e.get("ts")).ok_or_else(|| format!("slice {i} has no \"ts\""))?;
                let dur = ns(e.get("dur")).ok_or_else(|| format!("slice {i} has no \"dur\""))?;
                if dur < 0 {
                    return Err(format!("slice {i} has a negative duration"));
                }
                let name = e
                    .get("name")
                    .and_then(Value::as_str)
                    .ok_or_else(|| format!("slice {i} has no name"))?;
                let cat = e.get("cat").and_then(Value::as_str).unwrap_or("");
                *s.categories.entry(cat.to_string()).or_default() += 1;
                slices
                    .entry((pid, tid))
                    .or_default()
                    .push((ts, ts + dur, name.to_string()));
                threads.insert((pid, tid));
                s.slices += 1;
            }
            "s" | "f" => {
                let ts = ns(e.get("ts")).ok_or_else(|| format!("flow event {i} has no \"ts\""))?;
                let id = match e.get("id") {
                    Some(Value::String(s)) => s.clone(),
                    Some(Value::Number(n)) => n.to_string(),
                    _ => return Err(format!("flow event {i} has no \"id\"")),
                };
                let entry = flows.entry(id).or_default();
                if ph == "s" {
                    entry.0.push((ts, pid, tid));
                } else {
                    entry.1.push((ts, pid, tid));
                }
                threads.insert((pid, tid));
            }
            _ => {}
        }
    }
    for ((pid, tid), list) in &mut slices {
        // Longest first among equal starts, so a parent precedes its children.
        list.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
        let mut open: Vec<&(i64, i64, String)> = Vec::new();
        for sl in list.iter() {
            while open.last().is_some_and(|top| top.1 <= sl.0) {
                open.pop();
            }
            if let Some(top) = open.last() {
                if sl.1 > top.1 {
                    return Err(format!(
                        "slices \"{}\" [{}, {}] ns and \"{}\" [{}, {}] ns on pid {pid} tid {tid} overlap \
                         without nesting",
                        top.2, top.0, top.1, sl.2, sl.0, sl.1
                    ));
                }
            }
            open.push(sl);
        }
    }
    // Slices nest, so the outermost ones are disjoint: a point is in a slice
    // iff it is in one of those (found by binary search).
    let outermost: BTreeMap<(u64, u64), Vec<(i64, i64)>> = slices
        .iter()
        .map(|(k, list)| {
            let mut top: Vec<(i64, i64)> = Vec::new();
            for sl in list {
                if top.last().is_none_or(|t| sl.0 >= t.1) {
                    top.push((sl.0, sl.1));
                }
            }
            (*k, top)
        })
        .collect();
    let inside = |ts: i64, pid: u64, tid: u64| {
        outermost.get(&(pid, tid)).is_some_and(|top| {
            let i = top.partition_point(|t| t.0 <= ts);
            // The last outermost slice starting at or before `ts`, or the one
            // before it when `ts` is exactly where one ends and the next starts.
            (i > 0 && top[i - 1].1 >= ts) || (i > 1 && top[i - 2].1 >= ts)
        })
    };
    for (id, (starts, ends)) in &mut flows {
        if starts.len() != ends.len() {
            return Err(format!(
                "flow {id} has {} start(s) and {} end(s)",
                starts.len(),
                ends.len()
            ));
        }
        // An id may be reused once its flow ended: pair the k-th start with
        // the k-th end in time.
        starts.sort();
        ends.sort();
        for (st, en) in starts.iter().zip(ends.iter()) {
            if en.0 < st.0 {
                return Err(format!(
                    "flow {id} ends ({} ns, pid {} tid {}) before it starts ({} ns, pid {} tid {})",
                    en.0, en.1, en.2, st.0, st.1, st.2
                ));
            }
            for (what, p) in [("start", st), ("end", en)] {
                if !inside(p.0, p.1, p.2) {
                    return Err(format!(
                        "the {what} of flow {id} ({} ns, pid {} tid {}) is in no slice of its thread",
                        p.0, p.1, p.2
                    ));
                }
            }
            s.flows += 1;
            if st.1 != en.1 {
                s.cross_process_flows += 1;
            }
        }
    }
    for (pid, tid) in &threads {
        s.processes.insert(*pid);
        if !process_names.contains(pid) {
            return Err(format!("process {pid} has events but no process_name"));
        }
        if !thread_names.contains(&(*pid, *tid)) {
            return Err(format!(
                "thread {tid} of process {pid} has events but no thread_name"
            ));
        }
    }
    Ok(s)
}
