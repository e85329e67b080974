//! Per-thread event buffers and the process's one sink (the open file).
//!
//! Each thread that records owns a [`ThreadBuf`]: a vector of events under a
//! mutex that only this thread locks per event (uncontended); the sink holds
//! another reference, so a write-out can drain the buffers of every thread,
//! running or finished. Lock order: the sink, then a thread's buffer; a
//! recording thread never takes the sink while it holds its own buffer.

use std::cell::RefCell;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use super::clock::{self, Timebase};
use super::event::Event;
use super::file::TraceFile;
use super::{CHUNK, HOLD};

/// One thread's events.
pub(crate) struct ThreadBuf {
    pub(crate) tid: u32,
    pub(crate) name: String,
    events: Mutex<Vec<Event>>,
}

struct Sink {
    file: TraceFile,
    /// Full buffers kept for the next write-out, and their bytes.
    full: Vec<(u32, Vec<Event>)>,
    held: usize,
    threads: Vec<Arc<ThreadBuf>>,
    next_tid: u32,
    /// Converts the events' ticks to nanoseconds when they are formatted.
    clock: Timebase,
}

static SINK: Mutex<Option<Sink>> = Mutex::new(None);
/// Events that found no buffer (recorded while the thread was exiting).
static LOST: AtomicU64 = AtomicU64::new(0);
/// Events per thread buffer before it is written out: [`CHUNK`], or
/// `TUTTI_TRACE_CHUNK` (at least 1024) read when a trace starts.
static CHUNK_NOW: AtomicUsize = AtomicUsize::new(CHUNK);
/// Bytes of full buffers held for the next write-out before a full buffer is
/// written to the file at once by the thread that filled it: [`HOLD`], or
/// `TUTTI_TRACE_HOLD_MB` read when a trace starts.
static HOLD_MAX: AtomicUsize = AtomicUsize::new(HOLD);

/// Bumped by every [`install`]: a thread's buffer from an earlier trace is
/// replaced by one registered with the current sink.
static GENERATION: AtomicU64 = AtomicU64::new(0);

std::thread_local! {
    /// This thread's buffer and the generation of the sink it belongs to.
    static LOCAL: RefCell<Option<(u64, Arc<ThreadBuf>)>> = const { RefCell::new(None) };
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Opens `path` as the process's trace.
pub(super) fn install(path: &Path, rank: usize) -> io::Result<()> {
    let mut sink = lock(&SINK);
    if let Some(s) = sink.as_ref() {
        return Err(io::Error::new(
            io::ErrorKind::AlreadyExists,
            format!(
                "tutti::diag::trace: already recording into {}",
                s.file.path().display()
            ),
        ));
    }
    let file = TraceFile::create(path, rank)?;
    clock::choose();
    GENERATION.fetch_add(1, Ordering::Relaxed);
    *sink = Some(Sink {
        file,
        full: Vec::new(),
        held: 0,
        threads: Vec::new(),
        next_tid: 1,
        clock: Timebase::new(),
    });
    LOST.store(0, Ordering::Relaxed);
    let chunk = std::env::var("TUTTI_TRACE_CHUNK")
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok())
        .map_or(CHUNK, |c| c.max(1024));
    CHUNK_NOW.store(chunk, Ordering::Relaxed);
    let hold = std::env::var("TUTTI_TRACE_HOLD_MB")
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok())
        .map_or(HOLD, |mb| mb << 20);
    HOLD_MAX.store(hold, Ordering::Relaxed);
    Ok(())
}

pub(super) fn path() -> Option<PathBuf> {
    lock(&SINK).as_ref().map(|s| s.file.path().to_path_buf())
}

pub(super) fn set_rank(rank: usize, ranks: usize, offset: Option<(i64, u64)>) {
    if let Some(s) = lock(&SINK).as_mut() {
        s.file.meta.rank = rank;
        s.file.meta.ranks = ranks;
        if offset.is_some() {
            s.file.meta.offset = offset;
        }
    }
}

/// Records `e` on this thread's buffer; writes the buffer out when it holds
/// [`CHUNK`] events.
pub(super) fn record(e: Event) {
    let full = LOCAL.try_with(|l| {
        let mut l = l.borrow_mut();
        let generation = GENERATION.load(Ordering::Relaxed);
        if l.as_ref().is_none_or(|(g, _)| *g < generation) {
            *l = register();
        }
        let (_, buf) = l.as_ref()?;
        let mut events = lock(&buf.events);
        events.push(e);
        if events.len() < CHUNK_NOW.load(Ordering::Relaxed) {
            return None;
        }
        let full = std::mem::replace(
            &mut *events,
            Vec::with_capacity(CHUNK_NOW.load(Ordering::Relaxed)),
        );
        drop(events);
        Some((Arc::clone(buf), full))
    });
    match full {
        Ok(Some((buf, events))) => {
            if let Some(s) = lock(&SINK).as_mut() {
                let bytes = events.len() * std::mem::size_of::<Event>();
                if s.held + bytes <= HOLD_MAX.load(Ordering::Relaxed) {
                    // Formatting waits for the next write-out.
                    s.held += bytes;
                    s.full.push((buf.tid, events));
                } else if let Err(err) = {
                    s.clock.mark();
                    s.file.append(buf.tid, &events, &s.clock)
                } {
                    eprintln!("tutti: cannot write the trace: {err}");
                }
            }
        }
        Ok(None) => {}
        Err(_) => {
            LOST.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// This thread's buffer, registered with the sink, and the sink's generation
/// (`None`: no trace is open).
#[cold]
fn register() -> Option<(u64, Arc<ThreadBuf>)> {
    let mut sink = lock(&SINK);
    let s = sink.as_mut()?;
    // Bumped under this lock, so it is the current sink's.
    let generation = GENERATION.load(Ordering::Relaxed);
    let tid = s.next_tid;
    s.next_tid += 1;
    let buf = Arc::new(ThreadBuf {
        tid,
        name: thread_label(std::thread::current().name(), tid),
        events: Mutex::new(Vec::with_capacity(CHUNK_NOW.load(Ordering::Relaxed))),
    });
    s.threads.push(Arc::clone(&buf));
    s.file.meta.threads.insert(tid, buf.name.clone());
    Some((generation, buf))
}

/// The name a thread gets in the trace.
fn thread_label(name: Option<&str>, tid: u32) -> String {
    let Some(name) = name else {
        return format!("thread {tid}");
    };
    for (prefix, label) in [
        ("tutti-worker-", "worker "),
        ("tutti-world-", "worker "),
        ("tutti-shm-", "shm engine "),
    ] {
        if let Some(k) = name.strip_prefix(prefix) {
            return format!("{label}{k}");
        }
    }
    match name {
        "tutti-mpi" => "mpi engine".into(),
        "tutti-timer" => "timer".into(),
        "tutti-rpc" => "rpc reactor".into(),
        other => other.into(),
    }
}

/// Drains every thread's buffer into the file and rewrites its closing part;
/// `close` also closes the file (the trace ends).
pub(super) fn write_out(close: bool) -> io::Result<()> {
    let mut guard = lock(&SINK);
    let Some(s) = guard.as_mut() else {
        return Ok(());
    };
    let mut result = Ok(());
    let mut all = std::mem::take(&mut s.full);
    s.held = 0;
    for t in &s.threads {
        let events = std::mem::take(&mut *lock(&t.events));
        if !events.is_empty() {
            all.push((t.tid, events));
        }
    }
    // Every event to format was recorded before this anchor.
    s.clock.mark();
    for (tid, events) in all {
        if let Err(e) = s.file.append_events(tid, &events, &s.clock) {
            result = result.and(Err(e));
        }
    }
    s.file.meta.lost = LOST.load(Ordering::Relaxed);
    result = result.and(s.file.finish());
    // A thread that exited left its buffer to us alone; its name is kept.
    s.threads.retain(|t| Arc::strong_count(t) > 1);
    if close {
        *guard = None;
    }
    result
}
