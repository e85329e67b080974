//! Dumps: every live actor, location and CSP process with its state and what it waits
//! on, and each runtime's live tasks — read from the same state words and notes as the
//! detector, without stopping anything.

use crate::loom::unmodelled::Mutex;
use std::fmt::Write as _;

use super::node::{self, Kind, Node, On, BLOCKED, ENDED, IDLE};
use crate::loom::lock;
use crate::runtime::context::{LiveTasksView, RuntimeRef};

/// One entry of a dump: a live participant, its state and what it waits on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// `actor`, `location`, `process` or `task` (a task given a name at spawn, see
    /// [`spawn_named`](crate::runtime::spawn_named)).
    pub kind: &'static str,
    /// Its name (as in deadlock reports).
    pub name: String,
    /// Its rank.
    pub rank: usize,
    /// `running`, `blocked` (waiting on `waits`) or `idle` (waiting for work); for a task
    /// `running`, `queued` (woken, waiting for a worker) or `parked` (waiting for its
    /// waker), followed by ` (high priority)` or ` (low priority)` for a task spawned with
    /// one of those.
    pub state: &'static str,
    /// What it waits on, when blocked.
    pub waits: Option<String>,
}

/// A contributor's entries (CSP processes, from `csp::deadlock`).
pub(crate) type Source = fn(&mut Vec<Entry>);

static SOURCES: Mutex<Vec<Source>> = Mutex::new(Vec::new());

/// Adds a contributor of dump entries. Idempotent.
pub(crate) fn add_source(source: Source) {
    let mut all = lock(&SOURCES);
    if !all.iter().any(|s| *s as usize == source as usize) {
        all.push(source);
    }
}

/// Every entry now.
pub(crate) fn entries() -> (Vec<Entry>, Vec<LiveTasksView>) {
    let nodes = node::all();
    let mut out: Vec<Entry> = nodes.iter().filter_map(|n| entry(n)).collect();
    let sources: Vec<Source> = lock(&SOURCES).clone();
    for s in sources {
        s(&mut out);
    }
    let mut runtimes: Vec<LiveTasksView> = Vec::new();
    let here = RuntimeRef::current();
    let rank = super::rank();
    for r in nodes
        .iter()
        .map(|n| &n.runtime)
        .chain(std::iter::once(&here))
    {
        if let Some(t) = r.live_tasks() {
            if !runtimes.iter().any(|x| x.runtime == t.runtime) {
                runtimes.push(t);
                out.extend(r.named_tasks().into_iter().map(|(name, state)| Entry {
                    kind: "task",
                    name: name.to_string(),
                    rank,
                    state,
                    waits: None,
                }));
            }
        }
    }
    runtimes.sort();
    (out, runtimes)
}

fn entry(n: &Node) -> Option<Entry> {
    let state = match Node::state_of(n.word()) {
        ENDED => return None,
        BLOCKED => "blocked",
        IDLE => "idle",
        _ => "running",
    };
    let waits = (state == "blocked").then(|| n.wait()).flatten().map(|w| {
        let mut s = w.describe();
        if let On::World(_) = w.on {
            s.push_str(" (needs every location)");
        }
        s
    });
    Some(Entry {
        kind: match n.kind {
            Kind::Actor => "actor",
            Kind::Location => "location",
        },
        name: n.name.clone(),
        rank: n.rank,
        state,
        waits,
    })
}

/// The text form.
pub(crate) fn text() -> String {
    let (entries, runtimes) = entries();
    let mut s = String::from("tutti: dump\n");
    for r in runtimes {
        let _ = write!(
            s,
            "  runtime #{}: {} workers, {} live tasks",
            r.runtime, r.workers, r.tasks
        );
        if r.high + r.low > 0 {
            let normal = r.tasks.saturating_sub(r.high + r.low);
            let _ = write!(
                s,
                " ({} high, {normal} normal, {} low priority)",
                r.high, r.low
            );
        }
        if r.blocking > 0 {
            let _ = write!(s, ", {} blocking threads", r.blocking);
        }
        s.push('\n');
    }
    for e in &entries {
        let _ = write!(
            s,
            "  [rank {}] {} `{}`: {}",
            e.rank, e.kind, e.name, e.state
        );
        match &e.waits {
            Some(w) => {
                let _ = writeln!(s, ", {w}");
            }
            None => s.push('\n'),
        }
    }
    if let Some(d) = super::detect::last() {
        let _ = writeln!(s, "  last deadlock declared:\n{d}");
    }
    s
}

/// The JSON form.
pub(crate) fn json() -> String {
    let (entries, runtimes) = entries();
    let entries: Vec<serde_json::Value> = entries
        .iter()
        .map(|e| {
            serde_json::json!({
                "kind": e.kind, "name": e.name, "rank": e.rank,
                "state": e.state, "waits": e.waits,
            })
        })
        .collect();
    let runtimes: Vec<serde_json::Value> = runtimes
        .iter()
        .map(|r| {
            let normal = r.tasks.saturating_sub(r.high + r.low);
            serde_json::json!({
                "runtime": r.runtime, "live_tasks": r.tasks, "workers": r.workers,
                "blocking_threads": r.blocking,
                "by_priority": {"high": r.high, "normal": normal, "low": r.low},
            })
        })
        .collect();
    serde_json::json!({
        "runtimes": runtimes,
        "entries": entries,
        "last_deadlock": super::detect::last().map(|d| d.to_string()),
    })
    .to_string()
}
