//! A timeline trace in Chrome's trace-event JSON, the format
//! [ui.perfetto.dev](https://ui.perfetto.dev) and `chrome://tracing` open.
//!
//! Set `TUTTI_TRACE=file.json` (or call [`start`], or
//! [`Builder::trace`](crate::runtime::Builder::trace) /
//! [`WorldBuilder::trace`](crate::world::WorldBuilder::trace)) and the program
//! records, per worker thread:
//!
//! * a slice per task poll (named after the future's type), per `block_on` poll,
//!   per actor turn (`Actor: Message`; turns that ran back to back on
//!   messages already queued share one slice, with how many in `args`), per run of RMI requests (the method's
//!   message type and how many ran) and per graph `act()` call (the actor's name);
//! * flows from send to receive: actor tells and asks (from the slice that sent
//!   to the turn that handled), and world messages (which carry RMI requests
//!   and answers between locations, within a rank and across ranks);
//! * metadata naming the process (`rank N`) and threads (`worker K`, `mpi
//!   engine`, …).
//!
//! In the JSON, `pid` is the rank and `tid` a thread of that process.
//!
//! # Cost
//!
//! Off, every recording site costs one relaxed load of a flag and a branch. On,
//! a timestamp is one `rdtsc` where the time-stamp counter is invariant (else a
//! `CLOCK_MONOTONIC` read; `TUTTI_TRACE_CLOCK=monotonic` forces it), turned into
//! nanoseconds only when written out, and an event is a fixed-size record (48
//! bytes; names are `'static` type names) stored in the recording thread's own
//! log with no lock and no atomic read-modify-write (a write-out drains the
//! logs of running threads through a hand-off protocol, `log.rs`); no lock is
//! taken per event. Slices that follow each other at once on a thread (a
//! worker's task polls, an actor's turns in one poll) share readings: each
//! reads the clock when it starts, which also ends the previous one
//! (`chain.rs`). A traced actor message is one record on each side: the
//! flow's start, recorded once the message is queued, and its turn, which
//! reads the clock, or, when its message was queued before the turns just
//! before it read the clock, shares their reading and slice and records only
//! where its flow ends (`chain.rs`). The flow's start is the sending thread's latest reading
//! within the sending slice (its start, or an earlier flow's), read anew for
//! every eighth flow of the slice and for every flow sent outside a poll, so a
//! stream of tells pays for a fraction of a reading each. Chunks are reused
//! once written out, within a trace and by the next one (up to 32 MiB kept):
//! writing into mapped memory costs a fraction of faulting in fresh pages.
//! Formatting JSON costs far more than recording, so it waits for a write-out:
//! a buffer that reaches [`CHUNK`] events is handed to the process's sink (one global lock per chunk) and kept there, up to [`HOLD`]
//! bytes; beyond that the thread that filled a buffer formats it into the file
//! at once. Memory is bounded by `HOLD` plus `CHUNK` events per thread however
//! long the program runs; only the time of a long trace grows.
//!
//! # Writing out
//!
//! The file is valid JSON after every write-out: events are appended where the
//! previous write ended and the closing part (process and thread names, the
//! `otherData` object with the rank and clock offset) is rewritten after them.
//! A write-out happens at the end of
//! [`World::run`](crate::world::World::run), when a runtime or world is dropped, on
//! [`flush`] and [`stop`]; every buffer is drained then, so no event recorded
//! before the write-out is lost. Events recorded by a thread after its
//! thread-local storage has been torn down cannot be kept; they are counted
//! (`lost_events` in `otherData`).
//!
//! # Ranks
//!
//! Under a launcher (`mpirun`, `tutti launch`: `OMPI_COMM_WORLD_RANK`,
//! `PMI_RANK`, `PMIX_RANK` or `TUTTI_RANK` with more than one process) each
//! rank writes its own file, `file.rankN.json`. Timestamps in the file are the
//! machine's `CLOCK_MONOTONIC` in nanoseconds (counter ticks are interpolated
//! between readings of both clocks taken when the trace starts and at every
//! write-out, so a tick converts the same in every write-out); when an MPI world starts, every rank measures its clock
//! against rank 0's by a ping-pong (the sample with the smallest round trip
//! wins) and records the offset in `otherData`. [`merge`] (the CLI's
//! `tutti trace merge out.json in...`) joins the files, shifting each onto rank
//! 0's clock, so flows across ranks point forward in time.
//!
//! ```
//! let path = std::env::temp_dir().join(format!("tutti-doc-trace-{}.json", std::process::id()));
//! tutti::diag::trace::start(&path).unwrap();
//! assert_eq!(tutti::block_on(async { tutti::spawn(async { 6 * 7 }).await }), 42);
//! tutti::diag::trace::stop().unwrap();
//! let text = std::fs::read_to_string(&path).unwrap();
//! assert!(text.contains("\"ph\":\"X\""));
//! # std::fs::remove_file(&path).unwrap();
//! ```

mod buffer;
mod chain;
mod check;
mod clock;
mod event;
mod file;
mod log;
#[cfg(all(test, loom))]
mod loom_tests;
mod merge;
mod pairs;

use crate::loom::{unmodelled, Ordering};
use std::io;
use std::path::{Path, PathBuf};

pub(crate) use chain::{block_on_end, flow_begin, poll_begin, poll_end, poll_gap, Chain};
pub use check::{check, CheckSummary};
pub(crate) use clock::now;
#[cfg_attr(not(feature = "mpi"), allow(unused_imports))]
pub(crate) use clock::{best_offset, mono, Sample};
pub(crate) use event::What;
pub use merge::{merge, MergeError, MergeSummary};
pub(crate) use pairs::Pairs;

/// Events in a thread's buffer before it is handed on (`TUTTI_TRACE_CHUNK`
/// overrides it).
pub const CHUNK: usize = 16 * 1024;

/// Bytes of full buffers the process keeps for the next write-out (128 MiB,
/// about 2.8 million events; `TUTTI_TRACE_HOLD_MB` overrides it). Beyond it,
/// a thread that fills its buffer formats it into the file at once.
pub const HOLD: usize = 128 << 20;

/// Whether recording is on. Set only after the sink exists; read with
/// `Relaxed` at every recording site: a site that misses the switch-on records
/// nothing (harmless), and one that sees it finds the sink installed because the
/// sink is reached through its own lock.
static ON: unmodelled::AtomicBool = unmodelled::AtomicBool::new(false);

/// Whether tracing is recording (one relaxed load).
#[inline(always)]
pub(crate) fn on() -> bool {
    ON.load(Ordering::Relaxed)
}

/// Whether a trace is being recorded in this process.
///
/// ```
/// // Off unless TUTTI_TRACE or `start` turned it on.
/// let _ = tutti::diag::trace::is_on();
/// ```
pub fn is_on() -> bool {
    on()
}

/// Starts recording into `path` (under a launcher, `path` with `.rankN` before
/// its extension; the name actually used is returned). Fails if a trace is
/// already being recorded or the file cannot be created.
///
/// ```
/// let path = std::env::temp_dir().join(format!("tutti-doc-start-{}.json", std::process::id()));
/// let used = tutti::diag::trace::start(&path).unwrap();
/// assert!(tutti::diag::trace::start(&path).is_err()); // one trace at a time
/// tutti::diag::trace::stop().unwrap();
/// # std::fs::remove_file(used).unwrap();
/// ```
pub fn start(path: impl AsRef<Path>) -> io::Result<PathBuf> {
    let path = per_rank_path(path.as_ref(), launcher_rank());
    buffer::install(&path, launcher_rank().map_or(0, |(r, _)| r))?;
    ON.store(true, Ordering::Relaxed);
    Ok(path)
}

/// Starts recording into `path` unless that trace is being recorded already
/// (the builders' option).
pub(crate) fn start_for(path: &Path) -> io::Result<()> {
    if on() && buffer::path().as_deref() == Some(&*per_rank_path(path, launcher_rank())) {
        return Ok(());
    }
    start(path).map(|_| ())
}

/// Writes every buffered event to the file (which is then complete, valid JSON)
/// and keeps recording. Does nothing when no trace is recorded.
///
/// ```
/// tutti::diag::trace::flush().unwrap();
/// ```
pub fn flush() -> io::Result<()> {
    buffer::write_out(false)
}

/// Stops recording, writes everything out and closes the file. Does nothing
/// when no trace is recorded.
///
/// ```
/// tutti::diag::trace::stop().unwrap();
/// ```
pub fn stop() -> io::Result<()> {
    ON.store(false, Ordering::Relaxed);
    buffer::write_out(true)
}

/// The file being written, if a trace is recorded.
///
/// ```
/// assert!(tutti::diag::trace::path().is_none() || tutti::diag::trace::is_on());
/// ```
pub fn path() -> Option<PathBuf> {
    buffer::path()
}

/// Starts the trace `TUTTI_TRACE` names, once per process (runtimes and worlds
/// call this when they start). A file that cannot be created is reported on
/// stderr and the program runs untraced.
pub(crate) fn start_from_env() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        if let Some(p) = std::env::var_os("TUTTI_TRACE").filter(|p| !p.is_empty()) {
            if let Err(e) = start(&p) {
                eprintln!(
                    "tutti: TUTTI_TRACE={}: cannot record the trace: {e}",
                    Path::new(&p).display()
                );
            }
        }
    });
}

/// Writes out at a natural end (a world's run finished, a runtime or world
/// dropped), reporting a failure on stderr.
pub(crate) fn write_out_quietly() {
    if on() {
        if let Err(e) = flush() {
            eprintln!("tutti: cannot write the trace: {e}");
        }
    }
}

/// Sets this process's rank (a world learnt it from its transport) and the
/// offset of its clock from rank 0's, with the round trip it was measured in.
pub(crate) fn set_rank(rank: usize, ranks: usize, offset: Option<(i64, u64)>) {
    buffer::set_rank(rank, ranks, offset);
}

/// `(rank, ranks)` from a launcher's environment, if more than one process runs.
fn launcher_rank() -> Option<(usize, usize)> {
    let var = |k: &str| {
        std::env::var(k)
            .ok()
            .and_then(|v| v.trim().parse::<usize>().ok())
    };
    for (rank, size) in [
        ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"),
        ("PMI_RANK", "PMI_SIZE"),
        ("PMIX_RANK", "PMIX_SIZE"),
        ("TUTTI_RANK", "TUTTI_RANKS"),
    ] {
        if let (Some(r), Some(n)) = (var(rank), var(size)) {
            if n > 1 {
                return Some((r, n));
            }
        }
    }
    None
}

/// `file.json` → `file.rankN.json` under a launcher.
fn per_rank_path(path: &Path, rank: Option<(usize, usize)>) -> PathBuf {
    let Some((r, _)) = rank else {
        return path.to_path_buf();
    };
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let name = match path.extension() {
        Some(ext) => format!("{stem}.rank{r}.{}", ext.to_string_lossy()),
        None => format!("{stem}.rank{r}"),
    };
    path.with_file_name(name)
}

// ---- recording sites (each: one relaxed load and a branch when off) ----

/// Starts a slice: its start time if recording, else 0.
#[inline(always)]
pub(crate) fn begin() -> u64 {
    if on() {
        let t = now();
        chain::slice_started(t);
        t
    } else {
        0
    }
}

/// Ends a slice begun at `ts` (a `begin()` of 0: not recording); returns its
/// end time (0 if not recording).
#[inline(always)]
pub(crate) fn end(ts: u64, what: What, id: u64) -> u64 {
    if ts != 0 {
        end_cold(ts, what, id)
    } else {
        0
    }
}

#[cold]
#[inline(never)]
fn end_cold(ts: u64, what: What, id: u64) -> u64 {
    chain::slice_ended();
    let t = now();
    buffer::record(ts, t.saturating_sub(ts), id, what.pack());
    t
}

/// A message leaves from inside the current slice; `id` names its flow (an
/// address unique while the message is in flight).
#[inline(always)]
pub(crate) fn flow_out(id: usize) {
    if on() {
        instant(What::FlowOut.pack(), id as u64, 0);
    }
}

/// A message that left from inside the current slice, at `ts` (a
/// [`flow_begin`]: 0 when not recording), is queued; `id` names its flow.
#[inline(always)]
pub(crate) fn flow_out_at(ts: u64, id: usize) {
    if ts != 0 {
        flow_out_cold(ts, id as u64);
    }
}

#[cold]
#[inline(never)]
fn flow_out_cold(ts: u64, id: u64) {
    buffer::record(ts, 0, id, What::FlowOut.pack());
}

/// World message `seq` from `from` to `to` is sent (`out`) or received.
#[inline]
pub(crate) fn world_flow(out: bool, from: u32, to: u32, seq: u64) {
    let what = if out { What::WorldOut } else { What::WorldIn };
    instant(what.pack(), seq, (u64::from(from) << 32) | u64::from(to));
}

#[cold]
#[inline(never)]
fn instant(what: (u64, usize, usize), id: u64, pair: u64) {
    buffer::record(now(), pair, id, what);
}

#[cfg(test)]
mod tests;
