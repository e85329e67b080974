//! Per-thread event logs and the process's one sink (the open file).
//!
//! Each thread that records owns a [`ThreadBuf`]: a [`Log`] only this thread
//! writes, without a lock (see `log.rs`); the sink holds another reference, so a
//! write-out can drain the logs of every thread, running or finished. The sink
//! lock is the logs' hand-off lock: a thread whose chunk is full takes it to
//! exchange the chunk, a write-out takes it to drain. A recording thread takes
//! no other lock.

use std::cell::RefCell;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use super::clock::{self, Timebase};
use super::event::Event;
use super::file::TraceFile;
use super::log::{self, Full, Log, Slot};
use super::{CHUNK, HOLD};

/// One thread's events.
pub(crate) struct ThreadBuf {
    pub(crate) tid: u32,
    pub(crate) name: String,
    /// The sink generation it belongs to.
    generation: u64,
    log: Log<Event>,
}

struct Sink {
    file: TraceFile,
    generation: u64,
    /// Full chunks kept for the next write-out, and their bytes.
    full: Vec<(u32, Full<Event>)>,
    held: usize,
    /// Empty chunks to reuse (their pages are already mapped), within the
    /// memory `full` may hold.
    spare: Vec<Box<[Slot<Event>]>>,
    threads: Vec<Arc<ThreadBuf>>,
    next_tid: u32,
    /// Converts the events' ticks to nanoseconds when they are formatted.
    clock: Timebase,
}

static SINK: Mutex<Option<Sink>> = Mutex::new(None);
/// Events that found no buffer (recorded while the thread was exiting).
static LOST: AtomicU64 = AtomicU64::new(0);
/// Events per thread chunk before it is handed off: [`CHUNK`], or
/// `TUTTI_TRACE_CHUNK` (at least 1024) read when a trace starts.
static CHUNK_NOW: AtomicUsize = AtomicUsize::new(CHUNK);
/// Bytes of full chunks held for the next write-out before a full chunk is
/// written to the file at once by the thread that filled it: [`HOLD`], or
/// `TUTTI_TRACE_HOLD_MB` read when a trace starts.
static HOLD_MAX: AtomicUsize = AtomicUsize::new(HOLD);

/// Bumped by every [`install`]: a thread's buffer from an earlier trace is
/// replaced by one registered with the current sink.
static GENERATION: AtomicU64 = AtomicU64::new(0);

std::thread_local! {
    /// This thread's buffer.
    static LOCAL: RefCell<Option<Arc<ThreadBuf>>> = const { RefCell::new(None) };
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The current trace's generation (bumped by every trace started).
#[inline]
pub(super) fn generation() -> u64 {
    GENERATION.load(Ordering::Relaxed)
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
    let generation = GENERATION.fetch_add(1, Ordering::Relaxed) + 1;
    *sink = Some(Sink {
        file,
        generation,
        full: Vec::new(),
        held: 0,
        spare: Vec::new(),
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

/// Records `e` on this thread's log; hands the chunk off when it is full.
#[inline]
pub(super) fn record(e: Event) {
    let recorded = LOCAL.try_with(|l| {
        {
            let l = l.borrow();
            if let Some(buf) = l.as_ref() {
                if buf.generation == GENERATION.load(Ordering::Relaxed) {
                    // SAFETY: this thread owns the log in its thread-local slot.
                    if unsafe { buf.log.push(e) } {
                        return;
                    }
                    return hand_off(buf, e);
                }
            }
        }
        record_cold(l, e);
    });
    if recorded.is_err() {
        LOST.fetch_add(1, Ordering::Relaxed);
    }
}

/// The first event of this thread in this trace: registers its buffer.
#[cold]
#[inline(never)]
fn record_cold(l: &RefCell<Option<Arc<ThreadBuf>>>, e: Event) {
    let buf = register();
    let mut l = l.borrow_mut();
    *l = buf;
    if let Some(buf) = l.as_ref() {
        // SAFETY: this thread owns the log in its thread-local slot.
        if !unsafe { buf.log.push(e) } {
            hand_off(buf, e);
        }
    }
}

/// `buf`'s chunk is full: hands it to the sink (kept for the next write-out,
/// or formatted into the file at once beyond the hold) and records `e` on a
/// fresh one.
#[cold]
#[inline(never)]
fn hand_off(buf: &ThreadBuf, e: Event) {
    let mut sink = lock(&SINK);
    let s = sink.as_mut().filter(|s| s.generation == buf.generation);
    let Some(s) = s else {
        // The trace this buffer recorded for has ended: nothing to keep.
        drop(sink);
        LOST.fetch_add(1, Ordering::Relaxed);
        return;
    };
    let fresh = s
        .spare
        .pop()
        .unwrap_or_else(|| log::chunk(CHUNK_NOW.load(Ordering::Relaxed)));
    // SAFETY: we own `buf`'s log (it is this thread's) and hold the sink lock,
    // its hand-off lock.
    let full = unsafe { buf.log.hand_off(fresh) };
    let bytes = full.len() * std::mem::size_of::<Event>();
    if s.held + bytes <= HOLD_MAX.load(Ordering::Relaxed) {
        // Formatting waits for the next write-out.
        s.held += bytes;
        s.full.push((buf.tid, full));
    } else {
        s.clock.mark();
        if let Err(err) = s.file.append(buf.tid, full.events(), &s.clock) {
            eprintln!("tutti: cannot write the trace: {err}");
        }
        s.spare.push(full.into_chunk());
    }
    drop(sink);
    // SAFETY: as above; the fresh chunk has room.
    let pushed = unsafe { buf.log.push(e) };
    debug_assert!(pushed, "a fresh chunk has room");
}

/// This thread's buffer, registered with the sink (`None`: no trace is open).
#[cold]
fn register() -> Option<Arc<ThreadBuf>> {
    let mut sink = lock(&SINK);
    let s = sink.as_mut()?;
    let tid = s.next_tid;
    s.next_tid += 1;
    let chunk = s
        .spare
        .pop()
        .unwrap_or_else(|| log::chunk(CHUNK_NOW.load(Ordering::Relaxed)));
    let buf = Arc::new(ThreadBuf {
        tid,
        name: thread_label(std::thread::current().name(), tid),
        generation: s.generation,
        log: Log::new(chunk),
    });
    s.threads.push(Arc::clone(&buf));
    s.file.meta.threads.insert(tid, buf.name.clone());
    Some(buf)
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

/// Drains every thread's log into the file and rewrites its closing part;
/// `close` also closes the file (the trace ends).
pub(super) fn write_out(close: bool) -> io::Result<()> {
    let mut guard = lock(&SINK);
    let Some(s) = guard.as_mut() else {
        return Ok(());
    };
    let mut result = Ok(());
    let full = std::mem::take(&mut s.full);
    s.held = 0;
    let mut live = Vec::new();
    for t in &s.threads {
        let mut events = Vec::new();
        // SAFETY: we hold the sink lock, the logs' hand-off lock.
        unsafe { t.log.take(|e| events.push(e)) };
        if !events.is_empty() {
            live.push((t.tid, events));
        }
    }
    // Every event to format was recorded before this anchor.
    s.clock.mark();
    for (tid, chunk) in full {
        if let Err(e) = s.file.append_events(tid, chunk.events(), &s.clock) {
            result = result.and(Err(e));
        }
        s.spare.push(chunk.into_chunk());
    }
    for (tid, events) in live {
        if let Err(e) = s.file.append_events(tid, events, &s.clock) {
            result = result.and(Err(e));
        }
    }
    // Spare chunks stay within the memory the held ones may take.
    let chunk_bytes = CHUNK_NOW.load(Ordering::Relaxed) * std::mem::size_of::<Event>();
    s.spare
        .truncate(HOLD_MAX.load(Ordering::Relaxed) / chunk_bytes.max(1));
    s.file.meta.lost = LOST.load(Ordering::Relaxed);
    result = result.and(s.file.finish());
    // A thread that exited left its buffer to us alone; its name is kept.
    s.threads.retain(|t| Arc::strong_count(t) > 1);
    if close {
        *guard = None;
    }
    result
}
