//! Merging the per-rank trace files of one job into one, on rank 0's clock.

use std::fmt;
use std::fs::File;
use std::io::{self, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

/// Why [`merge`] failed; every variant names the file concerned.
#[derive(Debug)]
pub enum MergeError {
    /// No input files were given.
    NoInputs,
    /// A file could not be read or written.
    Io {
        /// The file.
        path: PathBuf,
        /// What the system said.
        error: io::Error,
    },
    /// A file is not JSON.
    Json {
        /// The file.
        path: PathBuf,
        /// What the parser said.
        error: serde_json::Error,
    },
    /// A file is JSON but not a tutti trace (or a damaged one).
    NotATrace {
        /// The file.
        path: PathBuf,
        /// What is missing or wrong.
        why: String,
    },
    /// Two files come from the same rank.
    SameRank {
        /// The rank.
        rank: u64,
        /// The first file of that rank.
        first: PathBuf,
        /// The second one.
        second: PathBuf,
    },
}

impl fmt::Display for MergeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MergeError::NoInputs => write!(f, "tutti::diag::trace: no trace files to merge"),
            MergeError::Io { path, error } => {
                write!(f, "tutti::diag::trace: {}: {error}", path.display())
            }
            MergeError::Json { path, error } => write!(
                f,
                "tutti::diag::trace: {} is not valid JSON: {error}",
                path.display()
            ),
            MergeError::NotATrace { path, why } => write!(
                f,
                "tutti::diag::trace: {} is not a tutti trace: {why}",
                path.display()
            ),
            MergeError::SameRank {
                rank,
                first,
                second,
            } => write!(
                f,
                "tutti::diag::trace: {} and {} are both traces of rank {rank}",
                first.display(),
                second.display()
            ),
        }
    }
}

impl std::error::Error for MergeError {}

/// What [`merge`] wrote.
#[derive(Clone, Debug, PartialEq)]
pub struct MergeSummary {
    /// The ranks merged, in input order.
    pub ranks: Vec<u64>,
    /// Events written.
    pub events: usize,
    /// The clock offset applied to each rank's events, in nanoseconds.
    pub offsets_ns: Vec<i64>,
}

/// Merges the trace files `inputs` (one per rank, as written under a launcher)
/// into `out`, shifting each file's timestamps by its recorded clock offset so
/// that all are on rank 0's clock.
///
/// ```
/// use tutti::diag::trace;
/// let dir = std::env::temp_dir();
/// let out = dir.join(format!("tutti-doc-merge-{}.json", std::process::id()));
/// let err = trace::merge(&[dir.join("no-such-trace.json")], &out).unwrap_err();
/// assert!(err.to_string().contains("no-such-trace.json"));
/// ```
pub fn merge(
    inputs: &[impl AsRef<Path>],
    out: impl AsRef<Path>,
) -> Result<MergeSummary, MergeError> {
    if inputs.is_empty() {
        return Err(MergeError::NoInputs);
    }
    let mut all = Vec::new();
    let mut summary = MergeSummary {
        ranks: Vec::new(),
        events: 0,
        offsets_ns: Vec::new(),
    };
    let mut seen: Vec<(u64, PathBuf)> = Vec::new();
    for input in inputs {
        let path = input.as_ref();
        let (rank, offset, events) = read_trace(path)?;
        if let Some((_, first)) = seen.iter().find(|(r, _)| *r == rank) {
            return Err(MergeError::SameRank {
                rank,
                first: first.clone(),
                second: path.to_path_buf(),
            });
        }
        seen.push((rank, path.to_path_buf()));
        summary.ranks.push(rank);
        summary.offsets_ns.push(offset);
        for mut e in events {
            shift(&mut e, offset);
            all.push(e);
        }
    }
    summary.events = all.len();
    let mut other = Map::new();
    other.insert("tutti_trace".into(), Value::from(1));
    other.insert("merged".into(), Value::from(true));
    other.insert("ranks".into(), Value::from(summary.ranks.clone()));
    other.insert(
        "clock_offsets_ns".into(),
        Value::from(summary.offsets_ns.clone()),
    );
    let mut top = Map::new();
    top.insert("traceEvents".into(), Value::Array(all));
    top.insert("displayTimeUnit".into(), Value::from("ns"));
    top.insert("otherData".into(), Value::Object(other));
    let out = out.as_ref();
    let io_err = |error| MergeError::Io {
        path: out.to_path_buf(),
        error,
    };
    let file = File::create(out).map_err(io_err)?;
    let mut w = BufWriter::new(file);
    serde_json::to_writer(&mut w, &Value::Object(top)).map_err(|e| MergeError::Io {
        path: out.to_path_buf(),
        error: e.into(),
    })?;
    w.flush().map_err(io_err)?;
    Ok(summary)
}

/// A trace file's rank, clock offset and events.
fn read_trace(path: &Path) -> Result<(u64, i64, Vec<Value>), MergeError> {
    let not = |why: &str| MergeError::NotATrace {
        path: path.to_path_buf(),
        why: why.to_string(),
    };
    let file = File::open(path).map_err(|error| MergeError::Io {
        path: path.to_path_buf(),
        error,
    })?;
    let v: Value =
        serde_json::from_reader(BufReader::new(file)).map_err(|error| MergeError::Json {
            path: path.to_path_buf(),
            error,
        })?;
    let Value::Object(mut top) = v else {
        return Err(not("the top level is not an object"));
    };
    let other = top
        .get("otherData")
        .and_then(Value::as_object)
        .ok_or_else(|| not("no \"otherData\" object"))?;
    if other.get("tutti_trace").and_then(Value::as_u64) != Some(1) {
        return Err(not("\"otherData\" has no \"tutti_trace\": 1"));
    }
    if other.get("merged").is_some() {
        return Err(not("it is already a merged trace"));
    }
    let rank = other
        .get("rank")
        .and_then(Value::as_u64)
        .ok_or_else(|| not("\"otherData\" has no \"rank\""))?;
    let offset = other
        .get("clock_offset_ns")
        .and_then(Value::as_i64)
        .ok_or_else(|| not("\"otherData\" has no \"clock_offset_ns\""))?;
    let Some(Value::Array(events)) = top.remove("traceEvents") else {
        return Err(not("no \"traceEvents\" array"));
    };
    for (i, e) in events.iter().enumerate() {
        let ok = e.get("ph").and_then(Value::as_str).is_some()
            && e.get("pid").and_then(Value::as_u64) == Some(rank);
        if !ok {
            return Err(not(&format!(
                "event {i} has no \"ph\" or a \"pid\" other than its rank {rank}"
            )));
        }
    }
    Ok((rank, offset, events))
}

/// Moves an event's `ts` (microseconds) by `offset_ns`.
fn shift(e: &mut Value, offset_ns: i64) {
    if offset_ns == 0 {
        return;
    }
    if let Some(ts) = e.get_mut("ts") {
        if let Some(t) = ts.as_f64() {
            let shifted = t + offset_ns as f64 / 1000.0;
            // Keep nanosecond digits and no more (f64 noise otherwise shows).
            *ts = Value::from((shifted * 1000.0).round() / 1000.0);
        }
    }
}
