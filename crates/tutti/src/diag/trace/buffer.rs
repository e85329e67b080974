//! Per-thread event logs and the process's one sink (the open file).
//!
//! Each thread that records owns a [`ThreadBuf`]: a [`Log`] only this thread
//! writes, without a lock (see `log.rs`); the sink holds another reference, so a
//! write-out can drain the logs of every thread, running or finished. The sink
//! lock is the logs' hand-off lock: a thread whose chunk is full takes it to
//! exchange the chunk, a write-out takes it to drain. A recording thread takes
//! no other lock.

use std::cell::{Cell, RefCell};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::loom::unmodelled::{AtomicU64, AtomicUsize, Mutex};
use crate::loom::{lock, Ordering};

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

impl Drop for ThreadBuf {
    fn drop(&mut self) {
        // Its chunk's events were read (or the trace ended): the memory is
        // reused.
        keep_chunk(self.log.take_chunk(), true);
    }
}

struct Sink {
    file: TraceFile,
    generation: u64,
    /// Full chunks kept for the next write-out, and their bytes.
    full: Vec<(u32, Full<Event>)>,
    held: usize,
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
    /// This thread's buffer, for the recording path: no destructor, so reading
    /// it needs no check; null until registered and once [`OWNER`] is gone.
    static BUF: Cell<*const ThreadBuf> = const { Cell::new(std::ptr::null()) };
    /// Keeps [`BUF`]'s buffer alive; clears `BUF` when the thread exits.
    static OWNER: RefCell<Owner> = const { RefCell::new(Owner(None)) };
}

/// This thread's reference to its buffer.
struct Owner(Option<Arc<ThreadBuf>>);

impl Drop for Owner {
    fn drop(&mut self) {
        // Later events of this thread (other thread-locals' destructors) find
        // no buffer and are counted lost.
        let _ = BUF.try_with(|b| b.set(std::ptr::null()));
    }
}

/// Empty chunks kept for reuse, in this trace or the next: writing into
/// memory already mapped costs a fraction of a first touch (a page fault per
/// 4 KiB, about 1.4 µs on the machine measured, 30 ns per event pair).
static SPARE: Mutex<Vec<Box<[Slot<Event>]>>> = Mutex::new(Vec::new());

/// Bytes of spare chunks kept once a trace has ended, for the next one.
const KEEP: usize = 32 << 20;

/// An empty chunk of the current size: a spare one if any.
fn spare_chunk() -> Box<[Slot<Event>]> {
    let n = CHUNK_NOW.load(Ordering::Relaxed);
    let mut spare = lock(&SPARE);
    while let Some(c) = spare.pop() {
        if c.len() == n {
            return c;
        }
    }
    drop(spare);
    log::chunk(n)
}

/// Keeps an empty chunk for reuse: within the memory full chunks may hold
/// while a trace runs, within [`KEEP`] after it ended.
fn keep_chunk(c: Box<[Slot<Event>]>, ended: bool) {
    let bytes = c.len() * std::mem::size_of::<Event>();
    if bytes == 0 {
        return;
    }
    let limit = if ended {
        KEEP
    } else {
        HOLD_MAX.load(Ordering::Relaxed).max(KEEP)
    };
    let mut spare = lock(&SPARE);
    if (spare.len() + 1) * bytes <= limit {
        spare.push(c);
    }
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

/// Records an event (its fields as scalars, see `event.rs`) on this thread's
/// log; hands the chunk off when it is full.
#[inline(always)]
pub(super) fn record(ts: u64, dur: u64, id: u64, what: (u64, usize, usize)) {
    let mut buf = BUF.with(Cell::get);
    // SAFETY: a non-null `BUF` points at the buffer `OWNER` keeps alive
    // (`OWNER` clears `BUF` before it lets go of it).
    let current =
        unsafe { buf.as_ref() }.is_some_and(|b| b.generation == GENERATION.load(Ordering::Relaxed));
    if !current {
        buf = register_here();
        if buf.is_null() {
            return;
        }
    }
    // SAFETY: as above (`register_here` set `BUF` to the buffer it returned).
    let b = unsafe { &*buf };
    // SAFETY: this thread owns the log of its own buffer.
    if unsafe { b.log.push(Event::new(ts, dur, id, what)) } {
        return;
    }
    // SAFETY: as above.
    if !hand_off(b) || !unsafe { b.log.push(Event::new(ts, dur, id, what)) } {
        LOST.fetch_add(1, Ordering::Relaxed);
    }
}

/// This thread's first event in this trace: registers its buffer (null and
/// the event counted lost if no trace is open or the thread is exiting).
#[cold]
#[inline(never)]
fn register_here() -> *const ThreadBuf {
    let registered = OWNER.try_with(|o| {
        let mut o = o.borrow_mut();
        let buf = register();
        let ptr = buf.as_ref().map_or(std::ptr::null(), Arc::as_ptr);
        BUF.with(|b| b.set(ptr));
        // The previous trace's buffer (if any) is released after `BUF` moved on.
        o.0 = buf;
        ptr
    });
    let ptr = registered.unwrap_or(std::ptr::null());
    if ptr.is_null() {
        LOST.fetch_add(1, Ordering::Relaxed);
    }
    ptr
}

/// `buf`'s chunk is full: hands it to the sink (kept for the next write-out,
/// or formatted into the file at once beyond the hold) and gives the log a
/// fresh chunk. `false` if the trace it recorded for has ended.
#[cold]
#[inline(never)]
fn hand_off(buf: &ThreadBuf) -> bool {
    let mut sink = lock(&SINK);
    let Some(s) = sink.as_mut().filter(|s| s.generation == buf.generation) else {
        return false;
    };
    let fresh = spare_chunk();
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
        keep_chunk(full.into_chunk(), false);
    }
    true
}

/// This thread's buffer, registered with the sink (`None`: no trace is open).
#[cold]
fn register() -> Option<Arc<ThreadBuf>> {
    let mut sink = lock(&SINK);
    let s = sink.as_mut()?;
    let tid = s.next_tid;
    s.next_tid += 1;
    let chunk = spare_chunk();
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
        keep_chunk(chunk.into_chunk(), close);
    }
    for (tid, events) in live {
        if let Err(e) = s.file.append_events(tid, events, &s.clock) {
            result = result.and(Err(e));
        }
    }
    s.file.meta.lost = LOST.load(Ordering::Relaxed);
    result = result.and(s.file.finish());
    // A thread that exited left its buffer to us alone; its name is kept.
    s.threads.retain(|t| Arc::strong_count(t) > 1);
    if close {
        *guard = None;
        drop(guard);
        let mut spare = lock(&SPARE);
        let bytes = spare
            .first()
            .map_or(1, |c| c.len() * std::mem::size_of::<Event>());
        spare.truncate(KEEP / bytes.max(1));
    }
    result
}
