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

mod receive;
mod send;

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
use receive::{Chunk, Inbound, Posted, Unposted};
use send::Keep;
pub(crate) use send::Lent;

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
            e.posted.push(Posted::new());
            e.posted_reqs.push(raw::null_request());
            e.post(i);
        }
        e
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

    /// How many quiescence waves this rank has summed (handed to the sink).
    pub(crate) fn sums_completed(&self) -> u64 {
        self.sums.completed()
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
