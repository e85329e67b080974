//! The MPI progress engine: the one place that calls MPI for the world.
//!
//! # Wire protocol
//!
//! Three communicators duplicated from `MPI_COMM_WORLD`:
//!
//! * **data**: every frame's head. A frame without a body is one message with
//!   tag `FRAME`; a frame with a body is one message with tag `FRAME_BODY`
//!   carrying the body's length (u64 LE) followed by the head. Heads are small
//!   (the world keeps them under [`EAGER`]).
//! * **bulk**: bodies, in chunks of at most `chunk` bytes (2^30 by default, so no
//!   MPI count reaches 2^31), tag `BULK`, sent right after their announcement.
//! * **coll**: the sums of quiescence waves, 16 bytes per message (see
//!   `sum.rs`): recursive doubling over point-to-point messages, so two
//!   ranks sum a wave with one exchange. (Open MPI's `MPI_Iallreduce`, from
//!   libnbc, cost about four `MPI_Barrier`s here.) A message's tag holds its
//!   step and its wave modulo 256.
//!
//! # Receiving
//!
//! [`POSTED`] receives of [`EAGER`] bytes are kept posted on the data
//! communicator for any source and tag. MPI matches messages to receives in
//! posting order, so the engine only tests the oldest posted receive and
//! handles completions strictly in posting order (a later one waits for an
//! earlier, still transferring one). A completed receive is re-posted at the
//! start of the next progress round, so that the message it brought reaches
//! its location first.
//! An announcement queues the body's chunks (its length says how many). A
//! chunk is received once its message has arrived: a matched probe
//! (`MPI_Improbe`) on the bulk communicator from that source finds it (bulk
//! messages from one source arrive in the order they were announced,
//! non-overtaking), its probed size is checked against the announced one, and
//! `MPI_Imrecv` receives it into the body's buffer, taken when the first chunk
//! is there from the rank's pool (`world/pool.rs`: the most recently kept
//! fitting one, whose bytes are likeliest in the cache). At most
//! [`BODY_WINDOW`] bytes of chunks are received at once (a larger chunk alone):
//! later ones wait in announcement order, and a sender's large send stays
//! pending until its receive is started (MPI's rendezvous), so a stream of
//! large messages cycles through a few warm buffers instead of touching all of
//! them; a source whose body has not arrived yet holds up no other source's.
//! Each source has a queue of frames in arrival order; a frame is delivered to
//! the world when it and every frame before it from that source are complete,
//! so the world sees each rank's frames in the order they were sent.
//!
//! # Sending
//!
//! Frames handed over by the locations wait in a lock-free queue (in polling
//! mode a location that finds the engine free and the queue empty starts its
//! frame at once, [`Engine::send_now`]); the engine starts an `Isend` per
//! message (at most [`MAX_IN_FLIGHT`] requests in flight;
//! beyond that frames wait in the queue) and keeps each buffer until its request
//! completes. Requests are kept in the order they started and completion passes
//! test the oldest ones (and, now and then, all), so their cost does not grow
//! with the number in flight. Every test passes through MPI's progress, so a
//! progress round completes sends only when many are in flight or every eighth
//! round; a completed body's buffer goes back to the rank's pool. A *lent*
//! body ([`Lent`], `Location::send_slice_blocking`) is sent straight from the
//! sender's memory: each of its chunk requests counts down a counter on
//! completion, and the sender, which keeps the bytes borrowed, returns at 0.
//!
//! # Shutdown
//!
//! 1. Send everything handed over and wait until every send completed.
//! 2. Exchange, with a non-blocking all-to-all, how many frames each rank sent to
//!    each other rank.
//! 3. Keep receiving until that many frames from each rank have arrived and been
//!    delivered.
//! 4. Cancel the posted receives (nothing can match them any more), and those
//!    of a quiescence wave left unfinished (a program that gave up a
//!    detection), free the communicators; the owner thread then calls
//!    `MPI_Finalize`.

use std::collections::VecDeque;
use std::sync::Arc;

use mpi::topology::{Communicator, SimpleCommunicator};
use mpi::traits::AsRaw;

use crate::loom::{AtomicUsize, Ordering};

use super::raw::{self, Request, Status, Tester};
use super::sum::Sums;
use super::Out;
use crate::world::frame::Frame;
use crate::world::inbox::Mailslot;
use crate::world::transport::Sink;

const TAG_FRAME: i32 = 1;
const TAG_FRAME_BODY: i32 = 2;
const TAG_BULK: i32 = 3;

/// Bytes of each posted receive: the largest frame head (plus announcement).
pub(crate) const EAGER: usize = 64 * 1024;
// A head is at most the aggregation byte limit plus padding; with a body it is
// announced by 8 more bytes.
const _: () = assert!(crate::world::MAX_AGGREGATION_BYTES + 16 <= EAGER);
/// Receives kept posted on the data communicator.
pub(crate) const POSTED: usize = 16;
/// Send requests in flight before further frames wait in the queue (testing
/// requests costs time linear in their number).
pub(crate) const MAX_IN_FLIGHT: usize = 512;
/// In-flight sends beyond which [`Engine::start_sends`] also completes sends.
const COMPLETE_AT: usize = 16;
/// Every this many progress rounds complete sends even when few are in flight.
const SEND_TEST_EVERY: u64 = 8;
/// How many of the oldest in-flight sends a completion pass tests.
const TEST_WINDOW: usize = 32;
/// Every this many completion passes test every in-flight send.
const FULL_TEST_EVERY: u32 = 64;
/// Default largest MPI message of a body.
pub(crate) const DEFAULT_CHUNK: usize = 1 << 30;
/// Body bytes the engine receives at once: further announced chunks wait
/// until earlier ones are in, so that a stream of large messages cycles through
/// a few buffers that stay in the cache (a chunk larger than this is received
/// alone).
const BODY_WINDOW: usize = 4 << 20;

/// A buffer an in-flight send reads from.
enum Keep {
    Head(#[allow(dead_code)] Vec<u8>),
    Body(#[allow(dead_code)] Arc<Vec<u8>>),
    /// A chunk of a lent body: counted down when its send completed.
    Lent(Arc<AtomicUsize>),
}

/// A body lent by a sender that waits until the engine is done with it
/// ([`Transport::send_borrowed`](crate::world::transport::Transport::send_borrowed)).
pub(crate) struct Lent {
    ptr: *const u8,
    len: usize,
    /// `usize::MAX` until the engine started the body's sends, then the
    /// number of them not yet completed: the bytes are free again at 0.
    left: Arc<AtomicUsize>,
}

// SAFETY: a `Lent` is the address of bytes that its sender keeps borrowed,
// unmodified, until `left` reaches 0; the engine only reads them (MPI sends
// from them), from whichever thread drives it.
unsafe impl Send for Lent {}

impl Lent {
    /// # Safety
    /// `body` must stay allocated and unmodified until `left` reads 0 (the
    /// sender waits for that).
    pub(crate) unsafe fn new(body: &[u8], left: Arc<AtomicUsize>) -> Lent {
        Lent {
            ptr: body.as_ptr(),
            len: body.len(),
            left,
        }
    }
}

/// One posted receive of the data communicator.
struct Posted {
    buf: Box<[u8]>,
}

/// An announced chunk of a body whose message has not been received yet.
#[derive(Clone, Copy)]
struct Unposted {
    source: usize,
    frame: u64,
    /// Where the chunk goes in the body.
    offset: usize,
    len: usize,
}

/// One chunk receive of a body.
struct Chunk {
    source: usize,
    frame: u64,
    len: usize,
}

/// A frame from one source, complete or waiting for its body's chunks.
struct Inbound {
    id: u64,
    head: Arc<[u8]>,
    /// The body: `None` until its first chunk is received, then capacity
    /// `body_len` and length 0 until every chunk has arrived.
    body: Option<Vec<u8>>,
    body_len: usize,
    chunks_left: usize,
}

/// Counts for `tutti mpi-bench` and diagnostics.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct EngineStats {
    pub(crate) frames_sent: u64,
    pub(crate) frames_received: u64,
    pub(crate) progress_calls: u64,
}

/// The engine; see the module documentation. Owned by the progress thread, or
/// (polling mode) by whoever holds its mutex.
pub(crate) struct Engine {
    world: SimpleCommunicator,
    data: SimpleCommunicator,
    bulk: SimpleCommunicator,
    /// The waves' sums (their own messages, see `sum.rs`).
    coll: SimpleCommunicator,
    pub(crate) user: SimpleCommunicator,
    rank: usize,
    ranks: usize,
    chunk: usize,
    posted_reqs: Vec<Request>,
    posted: Vec<Posted>,
    /// Indices of `posted` in posting order.
    order: VecDeque<usize>,
    send_reqs: Vec<Request>,
    sending: Vec<Keep>,
    chunk_reqs: Vec<Request>,
    chunks: Vec<Chunk>,
    inbound: Vec<VecDeque<Inbound>>,
    /// Announced body chunks not yet received, in arrival order.
    unposted: VecDeque<Unposted>,
    /// Scratch of `post_bodies`: sources whose next chunk has not arrived.
    stalled: Vec<usize>,
    /// Bytes of the body chunks being received now (see [`BODY_WINDOW`]).
    body_bytes: usize,
    /// Posted receives that completed, re-posted at the start of the next
    /// round (off the path of the message that just arrived).
    repost: Vec<usize>,
    next_id: u64,
    frames_to: Vec<u64>,
    frames_from: Vec<u64>,
    touched: Vec<usize>,
    outgoing: Arc<Mailslot<Out>>,
    sink: Arc<dyn Sink>,
    /// The quiescence waves' sums in flight (`sum.rs`).
    sums: Sums,
    tester: Tester,
    done: Vec<(usize, Status)>,
    /// Scratch of `complete_sends`: which tested requests completed.
    gone: Vec<bool>,
    /// Completion passes so far.
    sweeps: u32,
    pub(crate) stats: EngineStats,
}

// SAFETY: the engine's MPI handles are plain identifiers. MPI is initialized with
// MPI_THREAD_FUNNELED when the engine stays on the progress thread that
// initialized MPI, and with MPI_THREAD_SERIALIZED when it moves (polling mode),
// where every use goes through one mutex, so MPI is never called concurrently.
unsafe impl Send for Engine {}

impl Engine {
    pub(crate) fn new(
        world: SimpleCommunicator,
        outgoing: Arc<Mailslot<Out>>,
        sink: Arc<dyn Sink>,
        chunk: usize,
    ) -> Engine {
        let rank = world.rank() as usize;
        let ranks = world.size() as usize;
        let data = world.duplicate();
        let bulk = world.duplicate();
        let coll = world.duplicate();
        let user = world.duplicate();
        let mut e = Engine {
            world,
            data,
            bulk,
            coll,
            user,
            rank,
            ranks,
            chunk: chunk.clamp(1, DEFAULT_CHUNK),
            posted_reqs: Vec::with_capacity(POSTED),
            posted: Vec::with_capacity(POSTED),
            order: VecDeque::with_capacity(POSTED),
            send_reqs: Vec::new(),
            sending: Vec::new(),
            chunk_reqs: Vec::new(),
            chunks: Vec::new(),
            inbound: (0..ranks).map(|_| VecDeque::new()).collect(),
            unposted: VecDeque::new(),
            stalled: Vec::new(),
            body_bytes: 0,
            repost: Vec::with_capacity(POSTED),
            next_id: 0,
            frames_to: vec![0; ranks],
            frames_from: vec![0; ranks],
            touched: Vec::new(),
            outgoing,
            sink,
            sums: Sums::new(rank, ranks),
            tester: Tester::new(),
            done: Vec::new(),
            gone: Vec::new(),
            sweeps: 0,
            stats: EngineStats::default(),
        };
        for i in 0..POSTED {
            e.posted.push(Posted {
                buf: vec![0u8; EAGER].into_boxed_slice(),
            });
            e.posted_reqs.push(raw::null_request());
            e.post(i);
        }
        e
    }

    fn post(&mut self, i: usize) {
        let p = &mut self.posted[i];
        // SAFETY: the boxed buffer stays allocated and untouched until the
        // request completes: it is only read after `test` reported completion,
        // and freed only after the request is completed or cancelled and
        // completed (`shutdown`).
        self.posted_reqs[i] = unsafe {
            raw::irecv(
                p.buf.as_mut_ptr(),
                p.buf.len(),
                raw::any_source(),
                raw::any_tag(),
                self.data.as_raw(),
            )
        };
        self.order.push_back(i);
    }

    /// Takes the job down (from the engine's own thread).
    #[cold]
    pub(crate) fn abort(&self, why: &str) -> ! {
        crate::world::say(&format!(
            "rank {} of {} aborts the job: {why}",
            self.rank, self.ranks
        ));
        self.world.abort(1)
    }

    /// Before the progress thread parks: registers `waker` with the outgoing
    /// queue. True if a frame was there after all (it is started; no parking).
    pub(crate) fn register_idle(&mut self, waker: &std::task::Waker) -> bool {
        match self.outgoing.pop_or_register(waker) {
            Some(out) => {
                self.start(out);
                true
            }
            None => false,
        }
    }

    /// Starts sending the queued frames (up to the in-flight bound); returns
    /// whether there were any.
    pub(crate) fn start_queued(&mut self) -> bool {
        let mut moved = false;
        while self.send_reqs.len() < MAX_IN_FLIGHT {
            match self.outgoing.pop() {
                Some(out) => {
                    self.start(out);
                    moved = true;
                }
                None => break,
            }
        }
        moved
    }

    /// Starts sending `frame` to rank `to` at once if nothing handed over
    /// earlier still waits in the queue (which keeps each rank's frames in
    /// order); otherwise gives it back.
    pub(crate) fn send_now(&mut self, to: usize, frame: Frame) -> Result<(), Frame> {
        self.start_queued();
        if self.send_reqs.len() >= MAX_IN_FLIGHT || !self.outgoing.is_empty() {
            return Err(frame);
        }
        self.start_send(to, frame);
        Ok(())
    }

    /// Starts the queued frames, completing finished sends when many are in
    /// flight (a sender that never idles keeps its request array short).
    pub(crate) fn start_sends(&mut self) {
        self.start_queued();
        if self.send_reqs.len() >= COMPLETE_AT {
            self.complete_sends();
            self.start_queued();
        }
    }

    /// One round of work; returns whether anything moved.
    pub(crate) fn progress(&mut self) -> bool {
        self.stats.progress_calls += 1;
        // The receives completed in the previous round: re-posted only now, so
        // that the message that completed one reached its location sooner.
        self.repost_receives();
        let mut moved = self.start_queued();
        moved |= self.complete_receives();
        moved |= self.complete_chunks();
        if !self.unposted.is_empty() {
            moved |= self.post_bodies();
        }
        self.deliver_ready();
        moved |= self.complete_sums();
        // Completing sends only frees their buffers, and every test is a pass
        // through MPI's progress: a few in flight wait for a later round.
        if self.send_reqs.len() >= COMPLETE_AT || self.stats.progress_calls % SEND_TEST_EVERY == 0 {
            moved |= self.complete_sends();
        }
        moved
    }

    fn start(&mut self, out: Out) {
        match out {
            Out::Frame(to, f) => self.start_send(to, f),
            Out::Lent(to, head, body) => self.start_lent(to, head, body),
            Out::Sum(epoch, value) => self.start_sum(epoch, value),
        }
    }

    /// Starts the sum of a quiescence wave over the ranks (`sum.rs`). Every
    /// rank starts its waves in the same order (a location contributes to a
    /// wave only after it has seen the previous wave's result), and each step's
    /// messages carry the wave and step in their tag.
    fn start_sum(&mut self, epoch: u64, value: [u64; 2]) {
        self.sums.start(epoch, value);
        self.advance_sums();
    }

    fn complete_sums(&mut self) -> bool {
        if self.sums.is_empty() {
            return false;
        }
        self.advance_sums()
    }

    /// Moves every wave's sum as far as its messages allow; whether any moved.
    fn advance_sums(&mut self) -> bool {
        match self.sums.advance(&self.coll, &*self.sink) {
            Ok(moved) => moved,
            Err(why) => self.abort(&why),
        }
    }

    fn start_send(&mut self, to: usize, frame: Frame) {
        if to >= self.ranks || to == self.rank {
            self.abort(&format!("a frame for rank {to} (broken invariant)"));
        }
        self.frames_to[to] += 1;
        self.stats.frames_sent += 1;
        let Frame { head, body } = frame;
        match body {
            None => {
                if head.len() > EAGER {
                    self.abort(&format!(
                        "a frame head of {} bytes exceeds {EAGER} (broken invariant)",
                        head.len()
                    ));
                }
                // SAFETY: `head` moves into `sending` beside its request (the heap
                // buffer does not move) and is dropped only once the request
                // completed (`complete_sends`, `shutdown`).
                let req = unsafe { raw::isend(&head, to, TAG_FRAME, self.data.as_raw()) };
                self.send_reqs.push(req);
                self.sending.push(Keep::Head(head));
            }
            Some(body) => {
                let mut ann = Vec::with_capacity(8 + head.len());
                ann.extend_from_slice(&(body.len() as u64).to_le_bytes());
                ann.extend_from_slice(&head);
                if ann.len() > EAGER {
                    self.abort(&format!(
                        "a frame head of {} bytes exceeds {EAGER} (broken invariant)",
                        head.len()
                    ));
                }
                // SAFETY: as above, for the announcement.
                let req = unsafe { raw::isend(&ann, to, TAG_FRAME_BODY, self.data.as_raw()) };
                self.send_reqs.push(req);
                self.sending.push(Keep::Head(ann));
                let body = Arc::new(body);
                let mut off = 0;
                while off < body.len() {
                    let end = (off + self.chunk).min(body.len());
                    // SAFETY: every chunk request keeps a clone of the Arc holding
                    // the body, so the buffer lives until the last one completes;
                    // nobody writes to it.
                    let req =
                        unsafe { raw::isend(&body[off..end], to, TAG_BULK, self.bulk.as_raw()) };
                    self.send_reqs.push(req);
                    self.sending.push(Keep::Body(Arc::clone(&body)));
                    off = end;
                }
            }
        }
    }

    /// Starts a frame whose body is lent ([`Lent`]): the announcement, then
    /// the body's chunks straight from the sender's memory.
    fn start_lent(&mut self, to: usize, head: Vec<u8>, body: Lent) {
        if to >= self.ranks || to == self.rank || body.len == 0 {
            self.abort(&format!("a lent body for rank {to} (broken invariant)"));
        }
        self.frames_to[to] += 1;
        self.stats.frames_sent += 1;
        let mut ann = Vec::with_capacity(8 + head.len());
        ann.extend_from_slice(&(body.len as u64).to_le_bytes());
        ann.extend_from_slice(&head);
        if ann.len() > EAGER {
            self.abort(&format!(
                "a frame head of {} bytes exceeds {EAGER} (broken invariant)",
                head.len()
            ));
        }
        // SAFETY: as in `start_send`, for the announcement.
        let req = unsafe { raw::isend(&ann, to, TAG_FRAME_BODY, self.data.as_raw()) };
        self.send_reqs.push(req);
        self.sending.push(Keep::Head(ann));
        body.left
            .store(body.len.div_ceil(self.chunk), Ordering::Relaxed);
        let mut off = 0;
        while off < body.len {
            let end = (off + self.chunk).min(body.len);
            // SAFETY: the sender keeps `body.len` bytes at `body.ptr` allocated
            // and unmodified until `left` reaches 0 (`Lent::new`); it is counted
            // down only when this chunk's request completed (`complete_sends`).
            let req = unsafe {
                let chunk = std::slice::from_raw_parts(body.ptr.add(off), end - off);
                raw::isend(chunk, to, TAG_BULK, self.bulk.as_raw())
            };
            self.send_reqs.push(req);
            self.sending.push(Keep::Lent(Arc::clone(&body.left)));
            off = end;
        }
    }

    fn complete_sends(&mut self) -> bool {
        // Sends complete roughly in the order they started, so testing the
        // oldest few finds the completed ones at a cost independent of how many
        // are in flight; now and then every request is tested, in case an old
        // one to a slow rank hides newer completed ones.
        let n = self.send_reqs.len();
        self.sweeps = self.sweeps.wrapping_add(1);
        let k = if self.sweeps % FULL_TEST_EVERY == 0 {
            n
        } else {
            n.min(TEST_WINDOW)
        };
        self.done.clear();
        self.tester
            .test_some(&mut self.send_reqs[..k], &mut self.done);
        if self.done.is_empty() {
            return false;
        }
        // Drop the completed requests and their buffers, keeping the order.
        self.gone.clear();
        self.gone.resize(k, false);
        for &(i, _) in &self.done {
            self.gone[i] = true;
        }
        let mut w = 0;
        for r in 0..n {
            if r < k && self.gone[r] {
                continue;
            }
            self.send_reqs.swap(w, r);
            self.sending.swap(w, r);
            w += 1;
        }
        self.send_reqs.truncate(w);
        for kept in self.sending.drain(w..) {
            match kept {
                // The last chunk's completion frees the body for reuse.
                Keep::Body(b) => {
                    if let Ok(b) = Arc::try_unwrap(b) {
                        self.sink.recycle(b);
                    }
                }
                // Release: the sender reuses the bytes after reading 0.
                Keep::Lent(left) => {
                    left.fetch_sub(1, Ordering::Release);
                }
                Keep::Head(_) => {}
            }
        }
        true
    }

    fn complete_receives(&mut self) -> bool {
        // The receives match messages in posting order, so only the oldest one
        // can hold the next message to handle: test it, and on completion the
        // next one.
        let mut moved = false;
        while let Some(&i) = self.order.front() {
            let Some(st) = raw::test(&mut self.posted_reqs[i]) else {
                break;
            };
            self.order.pop_front();
            self.handle(i, st);
            self.repost.push(i);
            moved = true;
        }
        moved
    }

    fn handle(&mut self, i: usize, st: Status) {
        let src = st.source;
        if src >= self.ranks {
            self.abort(&format!("a message from unknown rank {src}"));
        }
        let n = st.count.min(EAGER);
        self.frames_from[src] += 1;
        self.stats.frames_received += 1;
        let id = self.next_id;
        self.next_id += 1;
        let bytes = &self.posted[i].buf[..n];
        let inbound = match st.tag {
            // Nothing earlier from `src` waits for its body: the frame goes to
            // the sink straight from the receive buffer, in order.
            TAG_FRAME if self.inbound[src].is_empty() => {
                if let Err(why) = self.sink.deliver_head(src, bytes) {
                    self.abort(&format!("a malformed frame from rank {src}: {why}"));
                }
                return;
            }
            TAG_FRAME => Inbound {
                id,
                head: Arc::from(bytes),
                body: None,
                body_len: 0,
                chunks_left: 0,
            },
            TAG_FRAME_BODY => {
                let Some(len) = bytes.get(..8).map(|b| {
                    let mut a = [0u8; 8];
                    a.copy_from_slice(b);
                    u64::from_le_bytes(a)
                }) else {
                    self.abort(&format!(
                        "a body announcement of {n} bytes from rank {src} (at least 8 expected)"
                    ))
                };
                let head: Arc<[u8]> = Arc::from(&bytes[8..]);
                let len = match usize::try_from(len) {
                    Ok(l) if l <= isize::MAX as usize => l,
                    _ => self.abort(&format!("rank {src} announces a body of {len} bytes")),
                };
                let mut offset = 0;
                while offset < len {
                    let end = (offset + self.chunk).min(len);
                    self.unposted.push_back(Unposted {
                        source: src,
                        frame: id,
                        offset,
                        len: end - offset,
                    });
                    offset = end;
                }
                Inbound {
                    id,
                    head,
                    body: (len == 0).then(Vec::new),
                    body_len: len,
                    chunks_left: len.div_ceil(self.chunk),
                }
            }
            t => self.abort(&format!("a message with unknown tag {t} from rank {src}")),
        };
        self.inbound[src].push_back(inbound);
        self.touched.push(src);
        self.post_bodies();
    }

    /// Re-posts the receives that completed in earlier rounds.
    fn repost_receives(&mut self) {
        while let Some(i) = self.repost.pop() {
            self.post(i);
        }
    }

    /// Receives the announced body chunks whose messages have arrived, in
    /// order of announcement, while the chunks being received stay within
    /// [`BODY_WINDOW`] (one at least); returns whether any was started.
    ///
    /// Each chunk is found with a matched probe (`MPI_Improbe` on the bulk
    /// communicator, from its source: bulk messages from one source arrive in
    /// the order they were announced), checked against its announced size,
    /// and received (`MPI_Imrecv`) into the body's buffer, which is taken
    /// from the pool when the first chunk is there. So a buffer is never tied
    /// to a body still in transit, a source whose body has not arrived holds
    /// up no other source's, and a body of the wrong size is refused (naming
    /// its rank) before a byte of it is written.
    fn post_bodies(&mut self) -> bool {
        let mut moved = false;
        let mut i = 0;
        while let Some(&u) = self.unposted.get(i) {
            if self.stalled.contains(&u.source) {
                i += 1;
                continue;
            }
            if self.body_bytes > 0 && self.body_bytes + u.len > BODY_WINDOW {
                break;
            }
            let Some((mut message, st)) =
                raw::improbe(u.source as i32, TAG_BULK, self.bulk.as_raw())
            else {
                // Later chunks of this source come after this one.
                self.stalled.push(u.source);
                i += 1;
                continue;
            };
            if st.count != u.len {
                self.abort(&format!(
                    "a body chunk of {} bytes from rank {} where {} were announced",
                    st.count, u.source, u.len
                ));
            }
            self.unposted.remove(i);
            let Some(f) = self.inbound[u.source].iter_mut().find(|f| f.id == u.frame) else {
                self.abort("an announced body of an unknown frame (broken invariant)");
            };
            if f.body.is_none() {
                let len = f.body_len;
                let mut body: Vec<u8> = match self.sink.body_buffer(len) {
                    Some(mut b) => {
                        b.clear();
                        b
                    }
                    None => Vec::new(),
                };
                if body.try_reserve_exact(len).is_err() {
                    let src = u.source;
                    self.abort(&format!(
                        "cannot allocate {len} bytes for a message from rank {src}"
                    ));
                }
                f.body = Some(body);
            }
            let Some(base) = f.body.as_mut().map(Vec::as_mut_ptr) else {
                self.abort("a body without its buffer (broken invariant)");
            };
            // SAFETY: the body has capacity `body_len`, and the announced chunks
            // tile `0..body_len` without overlap, so `base + offset` is valid
            // for `len` bytes (the probed size, checked above). The Vec stays in
            // its `Inbound` (its heap buffer does not move) and is neither read
            // nor freed before every chunk request completed
            // (`complete_chunks`, `shutdown`).
            let req = unsafe { raw::imrecv(base.add(u.offset), u.len, &mut message) };
            self.chunk_reqs.push(req);
            self.chunks.push(Chunk {
                source: u.source,
                frame: u.frame,
                len: u.len,
            });
            self.body_bytes += u.len;
            moved = true;
        }
        self.stalled.clear();
        moved
    }

    fn complete_chunks(&mut self) -> bool {
        self.done.clear();
        self.tester.test_some(&mut self.chunk_reqs, &mut self.done);
        if self.done.is_empty() {
            return false;
        }
        self.done.sort_unstable_by_key(|d| std::cmp::Reverse(d.0));
        for k in 0..self.done.len() {
            let (i, st) = self.done[k];
            let c = self.chunks.swap_remove(i);
            self.chunk_reqs.swap_remove(i);
            if st.count != c.len {
                self.abort(&format!(
                    "a body chunk of {} bytes from rank {} where {} were announced",
                    st.count, c.source, c.len
                ));
            }
            let Some(f) = self.inbound[c.source].iter_mut().find(|f| f.id == c.frame) else {
                self.abort("a body chunk for an unknown frame (broken invariant)");
            };
            f.chunks_left -= 1;
            self.body_bytes -= c.len;
            if f.chunks_left == 0 {
                if let Some(b) = f.body.as_mut() {
                    // SAFETY: every chunk request completed having written exactly
                    // its length (checked above), and the chunks tile
                    // `0..body_len`, which is within the capacity reserved.
                    unsafe { b.set_len(f.body_len) };
                }
            }
            self.touched.push(c.source);
        }
        self.post_bodies();
        true
    }

    fn deliver_ready(&mut self) {
        while let Some(src) = self.touched.pop() {
            while self.inbound[src]
                .front()
                .is_some_and(|f| f.chunks_left == 0)
            {
                let Some(f) = self.inbound[src].pop_front() else {
                    break;
                };
                if let Err(why) = self.sink.deliver(src, f.head, f.body) {
                    self.abort(&format!("a malformed frame from rank {src}: {why}"));
                }
            }
        }
    }

    /// The drain described in the module documentation; on return nothing is in
    /// flight and the engine may be dropped.
    pub(crate) fn shutdown(&mut self) {
        // 1. Everything handed over goes out and completes.
        while !self.outgoing.is_empty() || !self.send_reqs.is_empty() {
            if !self.progress() {
                std::thread::yield_now();
            }
        }
        // 2. How many frames did each rank send here?
        let sent = self.frames_to.clone();
        let mut expect = vec![0u64; self.ranks];
        // SAFETY: `sent` and `expect` hold one element per rank and live until
        // the request completes below; `expect` is read only after that.
        let mut req = unsafe { raw::ialltoall_u64(&sent, &mut expect, self.data.as_raw()) };
        while raw::test(&mut req).is_none() {
            if !self.progress() {
                std::thread::yield_now();
            }
        }
        // 3. Receive and deliver all of them.
        loop {
            let all_in = (0..self.ranks).all(|r| self.frames_from[r] >= expect[r]);
            if all_in && self.chunk_reqs.is_empty() && self.inbound.iter().all(VecDeque::is_empty) {
                break;
            }
            if !self.progress() {
                std::thread::yield_now();
            }
        }
        // 4. Nothing can match the posted receives any more: cancel them.
        self.repost_receives();
        for req in self.posted_reqs.iter_mut() {
            raw::cancel(req);
        }
        for i in 0..self.posted_reqs.len() {
            loop {
                if let Some(st) = raw::test(&mut self.posted_reqs[i]) {
                    if !st.cancelled {
                        crate::world::say(&format!(
                            "rank {}: a message from rank {} arrived during shutdown, \
                             after every announced frame",
                            self.rank, st.source
                        ));
                    }
                    break;
                }
                std::thread::yield_now();
            }
        }
        self.order.clear();
        // 5. A wave left unfinished (a location gave up its detection, and a
        //    rank never joined the wave): its receive is cancelled; its send is
        //    16 bytes, which MPI completes without the peer.
        self.sums.abandon(self.rank);
    }
}
