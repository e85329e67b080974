//! [`Location`]: one location's handle — send, receive, flush, collectives and
//! quiescence.

use std::any::Any;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use serde::de::DeserializeOwned;
use serde::Serialize;

use super::collective::{self, Collective, Kind, Op, Reduction};
use super::delivery::{Content, Delivery};
use super::error::SendError;
use super::frame::{next_entry, HEADER};
use super::inbox::{Parcel, Payload};
use super::outbox::{Bytes, Limits, Outgoing};
use super::rank::{Shared, Slot};
use super::{cast, LocationId, World};
use crate::loom::{lock, Mutex, Ordering};

/// Where the location is in consuming its inbox's current parcel.
enum Cursor {
    Idle,
    One(LocationId, Payload),
    Batch(LocationId, std::vec::IntoIter<Payload>),
    Frame {
        from: LocationId,
        head: Arc<[u8]>,
        pos: usize,
        left: u32,
        body: Option<Vec<u8>>,
    },
}

impl Cursor {
    fn of(p: Parcel) -> Cursor {
        match p {
            Parcel::One { from, payload, .. } => Cursor::One(from, payload),
            Parcel::Batch { from, items, .. } => Cursor::Batch(from, items.into_iter()),
            Parcel::Frame {
                from,
                head,
                inline,
                body,
                ..
            } => Cursor::Frame {
                from,
                head,
                pos: HEADER,
                left: inline,
                body,
            },
        }
    }
}

/// The parcel a location is consuming, and the phase it was sent in.
struct Current {
    cursor: Cursor,
    phase: u64,
}

impl Current {
    fn set(&mut self, p: Parcel) {
        self.phase = p.phase();
        self.cursor = Cursor::of(p);
    }
}

/// How long a waiting location drives a polled engine itself before it lets its
/// worker go: a reply to a small message is due within a round trip (about a
/// microsecond between ranks of one machine), while handing the worker back
/// and being woken through the scheduler costs more than that.
const SPIN_FOR: Duration = Duration::from_micros(30);
/// Engine rounds between looks at the clock and the worker's queues.
const SPIN_CHECK_EVERY: u32 = 16;

/// The wave this location has contributed to and not yet seen complete.
#[derive(Clone, Copy, Default)]
struct Quiet {
    wave: Option<u64>,
}

/// One location of a [`World`]: the endpoint its SPMD code sends and receives
/// through. A location is a *logical* place (ARMI's thread): its code runs as a
/// task on the rank's runtime, not on a thread of its own.
///
/// Messages from one location to another arrive in the order they were sent.
/// The handle is `Send + Sync`, so its futures can be awaited in spawned tasks;
/// normally one task drives a location (several tasks receiving from one
/// location each get different messages).
pub struct Location {
    world: World,
    local: usize,
    /// Only this location's receiving task takes it, so it is uncontended.
    cursor: Mutex<Current>,
    quiet: Mutex<Quiet>,
}

impl fmt::Debug for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Location").field("id", &self.id()).finish()
    }
}

impl Location {
    pub(crate) fn new(world: World, local: usize) -> Location {
        Location {
            world,
            local,
            cursor: Mutex::new(Current {
                cursor: Cursor::Idle,
                phase: 0,
            }),
            quiet: Mutex::new(Quiet::default()),
        }
    }

    pub(crate) fn shared(&self) -> &Arc<Shared> {
        self.world.shared()
    }

    pub(crate) fn local_index(&self) -> usize {
        self.local
    }

    /// Tells `watcher` when a rank of this world dies (see `RankDeath`).
    pub(crate) fn watch_deaths(&self, watcher: std::sync::Weak<dyn super::rank::RankDeath>) {
        self.shared().local.watch_deaths(watcher);
    }

    fn slot(&self) -> &Slot {
        &self.shared().local.slots[self.local]
    }

    /// The limits this location's buffers work with.
    fn limits(&self) -> Limits {
        let lim = self.shared().limits;
        match self.slot().factor.load(Ordering::Relaxed) {
            0 => lim,
            factor => Limits { factor, ..lim },
        }
    }

    /// Sets this location's aggregation factor (messages per destination buffer;
    /// 1 sends every message at once), overriding the world's for this location.
    /// What is buffered is sent first.
    ///
    /// # Panics
    /// If `factor` is 0.
    pub fn set_aggregation(&self, factor: usize) {
        assert!(
            factor > 0,
            "tutti: an aggregation factor must be at least 1"
        );
        self.flush();
        self.slot().factor.store(factor, Ordering::Relaxed);
    }

    /// This location's aggregation factor.
    pub fn aggregation(&self) -> usize {
        self.limits().factor
    }

    /// This location's id.
    pub fn id(&self) -> LocationId {
        self.slot().id
    }

    /// The world this location belongs to.
    pub fn world(&self) -> &World {
        &self.world
    }

    /// This location's rank.
    pub fn rank(&self) -> usize {
        self.world.rank()
    }

    /// Sends `value` to location `to`. To a location of this rank the value moves
    /// as it is (never serialized). To another rank only bytes travel: a `Vec<u8>`
    /// is sent as bytes (see [`send_bytes`](Self::send_bytes)); any other type is
    /// [`SendError::NotLocal`].
    ///
    /// Sending never blocks: the message may wait in this location's buffer for
    /// `to` (aggregation) until the buffer fills, the location flushes or waits,
    /// or the world's time bound passes.
    pub fn send<T: Any + Send>(&self, to: LocationId, value: T) -> Result<(), SendError<T>> {
        if to.index() >= self.world.locations() {
            return Err(SendError::NoSuchLocation(to, value));
        }
        if self.rank_died(to) {
            return Err(SendError::RankDied(to, value));
        }
        let value = match cast::<T, Vec<u8>>(value) {
            Ok(bytes) => {
                self.push_bytes(to, bytes);
                return Ok(());
            }
            Err(value) => value,
        };
        if to.rank(self.world.locations_per_rank()) != self.rank() {
            return Err(SendError::NotLocal(to, value));
        }
        self.send_local(to, Payload::Value(Box::new(value)));
        Ok(())
    }

    /// Sends bytes to any location (the form every message takes across ranks).
    /// Large messages are not copied into batches: they travel on their own.
    ///
    /// ```
    /// use tutti::world::{LocationId, World};
    /// let world = World::builder().locations(2).workers(1).build().unwrap();
    /// let got = world.run(|loc| async move {
    ///     loc.send_bytes(LocationId::new(0), vec![loc.id().index() as u8; 3]).unwrap();
    ///     if loc.id().index() == 0 {
    ///         let mut seen = Vec::new();
    ///         for _ in 0..2 {
    ///             let d = loc.recv().await;
    ///             seen.push(d.bytes().unwrap().to_vec());
    ///         }
    ///         seen.sort();
    ///         seen
    ///     } else {
    ///         Vec::new()
    ///     }
    /// });
    /// assert_eq!(got[0], [vec![0, 0, 0], vec![1, 1, 1]]);
    /// ```
    pub fn send_bytes(&self, to: LocationId, bytes: Vec<u8>) -> Result<(), SendError<Vec<u8>>> {
        if to.index() >= self.world.locations() {
            return Err(SendError::NoSuchLocation(to, bytes));
        }
        if self.rank_died(to) {
            return Err(SendError::RankDied(to, bytes));
        }
        self.push_bytes(to, bytes);
        Ok(())
    }

    /// A buffer of `len` bytes to fill and send with
    /// [`send_bytes`](Self::send_bytes): for a large message (64 KiB or more)
    /// one the rank kept for reuse — the body of a message sent earlier whose
    /// send completed, or of a received one whose delivery was dropped — so
    /// that neither side pays page faults per message (its bytes are left over
    /// from that use); otherwise a fresh zeroed one.
    ///
    /// ```
    /// use tutti::world::World;
    /// let world = World::builder().locations(1).workers(1).build().unwrap();
    /// let loc = world.location(0).unwrap();
    /// let mut b = loc.buffer(100_000);
    /// assert_eq!(b.len(), 100_000);
    /// b.fill(7);
    /// loc.send_bytes(loc.id(), b).unwrap();
    /// assert_eq!(loc.recv_blocking().bytes().map(|b| b.len()), Some(100_000));
    /// ```
    pub fn buffer(&self, len: usize) -> Vec<u8> {
        self.shared()
            .local
            .pool
            .take(len)
            .unwrap_or_else(|| vec![0; len])
    }

    /// Sends a copy of `bytes` to any location: for small messages towards
    /// another rank this copies them straight into the aggregation buffer, with
    /// no allocation per message.
    ///
    /// ```
    /// use tutti::world::{LocationId, World};
    /// let world = World::builder().locations(1).workers(1).build().unwrap();
    /// let loc = world.location(0).unwrap();
    /// loc.send_slice(loc.id(), b"hi").unwrap();
    /// assert_eq!(loc.recv_blocking().bytes(), Some(&b"hi"[..]));
    /// assert!(loc.send_slice(LocationId::new(7), b"x").is_err());
    /// ```
    pub fn send_slice(&self, to: LocationId, bytes: &[u8]) -> Result<(), SendError<()>> {
        if to.index() >= self.world.locations() {
            return Err(SendError::NoSuchLocation(to, ()));
        }
        if self.rank_died(to) {
            return Err(SendError::RankDied(to, ()));
        }
        self.push(to, Bytes::Borrowed(bytes));
        Ok(())
    }

    /// Sends `bytes` to any location like [`send_slice`](Self::send_slice),
    /// but a large message (above the world's inline limit, see
    /// [`WorldBuilder::aggregation_bytes`](super::WorldBuilder::aggregation_bytes))
    /// for another rank is **not copied**: the transport sends it straight from
    /// `bytes`, and this call returns once it no longer reads them (under MPI:
    /// once the send completed, as `MPI_Send`). So a sender can stream large
    /// messages from one reused buffer, as an MPI program does. Numeric slices
    /// are sent as their bytes (`bytemuck::cast_slice`).
    ///
    /// Small messages, and messages to a location of this rank, are copied as
    /// by `send_slice` and it returns at once. Messages buffered for `to` go
    /// first (order is kept).
    ///
    /// It blocks the calling thread (inside a task, its worker) while the
    /// message is on its way: in polling mode the thread drives the engine
    /// meanwhile (so the receiving rank need not be waiting in a receive, as
    /// its engine takes the message in), with a progress thread it waits for
    /// that thread. The shared-memory transport copies.
    ///
    /// ```
    /// use tutti::world::{LocationId, World};
    /// let world = World::builder().locations(2).workers(1).build().unwrap();
    /// let got = world.run(|loc| async move {
    ///     let data: Vec<u64> = (0..100_000).collect();
    ///     if loc.id().index() == 0 {
    ///         loc.send_slice_blocking(LocationId::new(1), bytemuck::cast_slice(&data))
    ///             .unwrap();
    ///         0
    ///     } else {
    ///         loc.recv().await.bytes().map_or(0, <[u8]>::len)
    ///     }
    /// });
    /// assert_eq!(got[1], 800_000);
    /// ```
    pub fn send_slice_blocking(&self, to: LocationId, bytes: &[u8]) -> Result<(), SendError<()>> {
        if to.index() >= self.world.locations() {
            return Err(SendError::NoSuchLocation(to, ()));
        }
        if self.rank_died(to) {
            return Err(SendError::RankDied(to, ()));
        }
        let shared = self.shared();
        let rank = to.rank(shared.local.per_rank);
        let limits = self.limits();
        if rank == shared.local.rank || bytes.len() <= limits.inline_max() {
            self.push(to, Bytes::Borrowed(bytes));
            return Ok(());
        }
        let slot = self.slot();
        slot.sent.fetch_add(1, Ordering::Relaxed);
        if crate::diag::trace::on() {
            trace_sent(slot, to);
        }
        // What is buffered goes first (only this location buffers into its
        // outbox, and it is busy here until the frame is handed over).
        let mut remote = false;
        let head = {
            let mut outbox = lock(&slot.outbox);
            outbox.flush(limits, &mut |o| {
                remote |= matches!(o, Outgoing::Remote(..));
                shared.dispatch(o)
            });
            slot.buffered.store(false, Ordering::Relaxed);
            outbox.head_for(to, true)
        };
        self.after_dispatch(false, remote);
        shared.transport.send_borrowed(rank, head, bytes);
        Ok(())
    }

    /// Whether `to` lives on a rank that died (shared-memory systems).
    fn rank_died(&self, to: LocationId) -> bool {
        let shared = self.shared();
        let rank = to.rank(shared.local.per_rank);
        // Loom models run one process: nobody else can die.
        #[cfg(loom)]
        return {
            let _ = (shared, rank);
            false
        };
        #[cfg(not(loom))]
        return rank != shared.local.rank
            && super::transport::shm::rank_died(&shared.transport, rank);
    }

    /// Sends bytes to `to`, a location of the world.
    fn push_bytes(&self, to: LocationId, bytes: Vec<u8>) {
        self.push(to, Bytes::Owned(bytes));
    }

    fn push(&self, to: LocationId, bytes: Bytes<'_>) {
        let shared = self.shared();
        let rank = to.rank(shared.local.per_rank);
        if rank == shared.local.rank {
            let bytes = match bytes {
                Bytes::Owned(v) => v,
                Bytes::Borrowed(s) => s.to_vec(),
            };
            self.send_local(to, Payload::Bytes(bytes));
            return;
        }
        let slot = self.slot();
        slot.sent.fetch_add(1, Ordering::Relaxed);
        if crate::diag::trace::on() {
            trace_sent(slot, to);
        }
        let mut remote = false;
        let first = {
            let mut outbox = lock(&slot.outbox);
            let first = outbox.push_remote(to, rank, bytes, self.limits(), &mut |o| {
                remote = true;
                shared.dispatch(o)
            });
            slot.buffered.store(!outbox.is_empty(), Ordering::Relaxed);
            first
        };
        self.after_dispatch(first, remote);
    }

    fn send_local(&self, to: LocationId, payload: Payload) {
        let shared = self.shared();
        let slot = self.slot();
        slot.sent.fetch_add(1, Ordering::Relaxed);
        if crate::diag::trace::on() {
            trace_sent(slot, to);
        }
        let limits = self.limits();
        if limits.factor == 1 {
            // Nothing is ever buffered towards local destinations: deliver now.
            if let Some(dest) = shared.local.slot_of(to) {
                dest.inbox.push(Parcel::One {
                    from: slot.id,
                    phase: slot.phase.load(Ordering::Relaxed),
                    payload,
                });
            }
            return;
        }
        let first = {
            let mut outbox = lock(&slot.outbox);
            let first = outbox.push_local(to, payload, limits, &mut |o| shared.dispatch(o));
            slot.buffered.store(!outbox.is_empty(), Ordering::Relaxed);
            first
        };
        self.after_dispatch(first, false);
    }

    /// After a push: arm the sweeper if the outbox just became non-empty, and get
    /// frames moving at once if nobody else drives the transport.
    fn after_dispatch(&self, first: bool, remote: bool) {
        let shared = self.shared();
        if first {
            shared.arm_sweeper();
        }
        if remote {
            shared.transport.start_sends();
        }
    }

    /// Sends everything this location has buffered.
    pub fn flush(&self) {
        let shared = self.shared();
        let slot = self.slot();
        // Only this location buffers into its outbox, so it sees its own
        // `true`; a stale `true` (the sweeper flushed) just takes the lock.
        if !slot.buffered.load(Ordering::Relaxed) {
            return;
        }
        let mut remote = false;
        {
            let mut outbox = lock(&slot.outbox);
            outbox.flush(shared.limits, &mut |o| {
                remote |= matches!(o, Outgoing::Remote(..));
                shared.dispatch(o)
            });
            slot.buffered.store(false, Ordering::Relaxed);
        }
        self.after_dispatch(false, remote);
    }

    /// Flushes, lets the transport make progress (in polling mode), and says
    /// whether a message is waiting (ARMI's `rmi_poll`).
    pub fn poll(&self) -> bool {
        self.flush();
        self.progress_now();
        !matches!(lock(&self.cursor).cursor, Cursor::Idle) || !self.slot().inbox.is_empty()
    }

    /// In polling mode, drives the engine once. Waiting futures do not call it:
    /// the worker that runs them polls as soon as it is idle.
    fn progress_now(&self) {
        let t = &self.shared().transport;
        if t.polled() {
            t.progress();
        }
    }

    /// In polling mode, drives the engine from this task until `ready` holds —
    /// for at most [`SPIN_FOR`], and only while no other work waits for this
    /// worker — so that a reply due within a round trip costs no trip through
    /// the scheduler. Returns whether `ready` held. With a progress thread it
    /// returns `false` at once (the thread needs the core more), and so it does
    /// on an oversubscribed host (the sender needs the core more).
    pub(crate) fn spin_until(&self, mut ready: impl FnMut() -> bool) -> bool {
        let shared = self.shared();
        let t = &shared.transport;
        if !t.polled() || !t.location_spins() || shared.config.oversubscribed() {
            return false;
        }
        let start = Instant::now();
        let mut rounds = 0u32;
        loop {
            t.progress();
            if ready() {
                return true;
            }
            rounds = rounds.wrapping_add(1);
            if rounds % SPIN_CHECK_EVERY == 0
                && (start.elapsed() >= SPIN_FOR || crate::runtime::work_waiting())
            {
                return false;
            }
            crate::loom::spin_hint();
        }
    }

    /// Whether a message waits in this location's inbox.
    pub(crate) fn has_arrived(&self) -> bool {
        !self.slot().inbox.is_empty()
    }

    /// The next message, if one has arrived (no flush, no waiting).
    pub fn try_recv(&self) -> Option<Delivery<'_>> {
        self.next(u64::MAX)
    }

    /// The next message sent in a phase up to `phase`, if one has arrived; a
    /// later phase's parcel stays where it is.
    fn next(&self, phase: u64) -> Option<Delivery<'_>> {
        let d = self.next_parcel(phase);
        if crate::diag::trace::on() {
            if let (Some(d), Some(pairs)) = (&d, &self.slot().trace) {
                pairs.got(d.from().index() as u32, self.id().index() as u32);
            }
        }
        d
    }

    fn next_parcel(&self, phase: u64) -> Option<Delivery<'_>> {
        let mut cur = lock(&self.cursor);
        loop {
            if cur.phase > phase && !matches!(cur.cursor, Cursor::Idle) {
                return None;
            }
            match std::mem::replace(&mut cur.cursor, Cursor::Idle) {
                Cursor::Idle => cur.set(self.slot().inbox.pop()?),
                Cursor::One(from, p) => return Some(self.delivery(from, p)),
                Cursor::Batch(from, mut items) => {
                    if let Some(p) = items.next() {
                        cur.cursor = Cursor::Batch(from, items);
                        return Some(self.delivery(from, p));
                    }
                }
                Cursor::Frame {
                    from,
                    head,
                    mut pos,
                    left,
                    mut body,
                } => {
                    if left > 0 {
                        let Some(r) = next_entry(&head, &mut pos) else {
                            self.shared()
                                .local
                                .fail_invariant("a validated frame ran out of messages");
                        };
                        let content = Content::Shared(Arc::clone(&head), r);
                        cur.cursor = Cursor::Frame {
                            from,
                            head,
                            pos,
                            left: left - 1,
                            body,
                        };
                        return Some(Delivery::new(
                            from,
                            content,
                            &self.slot().handled,
                            &self.shared().local.pool,
                        ));
                    }
                    if let Some(b) = body.take() {
                        return Some(Delivery::new(
                            from,
                            Content::Bytes(b),
                            &self.slot().handled,
                            &self.shared().local.pool,
                        ));
                    }
                }
            }
        }
    }

    fn delivery(&self, from: LocationId, p: Payload) -> Delivery<'_> {
        let content = match p {
            Payload::Value(v) => Content::Value(v),
            Payload::Bytes(b) => Content::Bytes(b),
        };
        Delivery::new(
            from,
            content,
            &self.slot().handled,
            &self.shared().local.pool,
        )
    }

    /// Receives the next message, waiting (without holding a worker) until one
    /// arrives. Flushes this location's buffers first: a location that waits has
    /// nothing buffered.
    pub fn recv(&self) -> Recv<'_> {
        Recv { loc: self }
    }

    /// [`recv`](Self::recv) for plain threads (on a worker, outside an async
    /// task, the worker keeps executing other work meanwhile).
    ///
    /// # Panics
    /// Inside an async task (use `recv().await`).
    pub fn recv_blocking(&self) -> Delivery<'_> {
        crate::block_on(self.recv())
    }

    fn poll_recv(&self, cx: &mut Context<'_>) -> Poll<Delivery<'_>> {
        if let Some(d) = self.try_recv() {
            return Poll::Ready(d);
        }
        self.flush();
        if self.spin_until(|| !self.slot().inbox.is_empty()) {
            if let Some(d) = self.try_recv() {
                return Poll::Ready(d);
            }
        }
        if let Some(p) = self.slot().inbox.pop_or_register(cx.waker()) {
            lock(&self.cursor).set(p);
            if let Some(d) = self.try_recv() {
                return Poll::Ready(d);
            }
            // An empty batch: look again (after re-registering).
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        crate::diag::node::note(
            || crate::diag::node::Wait {
                on: crate::diag::node::On::Unknown,
                what: crate::diag::node::What::Text(
                    "waits to receive a message (`Location::recv`)",
                ),
            },
            Some(cx.waker()),
        );
        Poll::Pending
    }

    /// This location waits (in a fence, quiescence wave or collective) for every
    /// location of the world: noted for `crate::diag`; if the detector found the world
    /// stalled (fail mode), the location panics with its report.
    #[cold]
    pub(crate) fn wait_for_world(&self, what: crate::diag::node::What, cx: &Context<'_>) {
        if let Some(d) = crate::diag::node::take_failure() {
            let wait = crate::diag::node::Wait {
                on: crate::diag::node::On::Unknown,
                what,
            };
            panic!(
                "tutti::world: location {} cannot finish: it {}\n{d}",
                self.id().index(),
                wait.describe()
            );
        }
        let world = self.world().diag_id();
        crate::diag::node::note(
            || crate::diag::node::Wait {
                on: crate::diag::node::On::World(world),
                what,
            },
            Some(cx.waker()),
        );
    }

    /// A barrier over every location of the world. The arrival happens now; the
    /// returned future waits for the others, so awaiting it later makes a
    /// non-blocking barrier.
    ///
    /// ```
    /// use tutti::world::World;
    /// let world = World::builder().locations(3).workers(2).build().unwrap();
    /// world.run(|loc| async move {
    ///     let arrived = loc.barrier(); // arrive now…
    ///     let local_work = loc.id().index() * 2; // …work meanwhile…
    ///     arrived.await; // …then wait for everyone
    ///     local_work
    /// });
    /// ```
    pub fn barrier(&self) -> Collective<'_, ()> {
        self.flush();
        let epoch = collective::arrive::<()>(self, Kind::Barrier, 0, Some(()), None);
        Collective::new(self, epoch)
    }

    /// Broadcasts the `root` location's value to every location. The root passes
    /// `Some(value)`; the others' values are ignored.
    ///
    /// # Panics
    /// If `root` is not a location of the world, or the root passes `None`
    /// (with several ranks, the job is taken down instead).
    ///
    /// ```
    /// use tutti::world::{LocationId, World};
    /// let world = World::builder().locations(3).workers(1).build().unwrap();
    /// let got = world.run(|loc| async move {
    ///     let mine = (loc.id().index() == 2).then(|| String::from("from 2"));
    ///     loc.broadcast(LocationId::new(2), mine).await
    /// });
    /// assert!(got.iter().all(|s| s == "from 2"));
    /// ```
    pub fn broadcast<T>(&self, root: LocationId, value: Option<T>) -> Collective<'_, T>
    where
        T: Serialize + DeserializeOwned + Clone + Send + 'static,
    {
        self.check_root(root, "broadcast");
        if root == self.id() && value.is_none() {
            self.shared()
                .fail(&format!("broadcast: the root {root} passed no value"));
        }
        self.flush();
        let value = if root == self.id() { value } else { None };
        let epoch = collective::arrive(self, Kind::Broadcast, root.raw(), value, None);
        Collective::new(self, epoch)
    }

    /// Combines every location's value with `op` and gives the result to every
    /// location. `op` must be associative; it need not be commutative: values are
    /// combined in location order.
    ///
    /// ```
    /// use tutti::world::World;
    /// let world = World::builder().locations(4).workers(2).build().unwrap();
    /// let got = world.run(|loc| async move {
    ///     let digit = loc.id().index().to_string();
    ///     loc.all_reduce(digit, |a, b| a + &b).await
    /// });
    /// assert!(got.iter().all(|s| s == "0123"));
    /// ```
    pub fn all_reduce<T, F>(&self, value: T, op: F) -> Collective<'_, T>
    where
        T: Serialize + DeserializeOwned + Clone + Send + 'static,
        F: Fn(T, T) -> T + Send + Sync + 'static,
    {
        self.flush();
        let op: Op<T> = Arc::new(op);
        let epoch = collective::arrive(self, Kind::AllReduce, 0, Some(value), Some(op));
        Collective::new(self, epoch)
    }

    /// Combines every location's value with `op` (associative, applied in location
    /// order) and gives the result to the `root` location; the others get `None`
    /// at once.
    ///
    /// ```
    /// use tutti::world::{LocationId, World};
    /// let world = World::builder().locations(3).workers(1).build().unwrap();
    /// let got = world.run(|loc| async move {
    ///     loc.reduce(LocationId::new(1), loc.id().index() as u32 + 1, |a, b| a * b).await
    /// });
    /// assert_eq!(got, [None, Some(6), None]);
    /// ```
    pub fn reduce<T, F>(&self, root: LocationId, value: T, op: F) -> Reduction<'_, T>
    where
        T: Serialize + DeserializeOwned + Clone + Send + 'static,
        F: Fn(T, T) -> T + Send + Sync + 'static,
    {
        self.check_root(root, "reduce");
        self.flush();
        let op: Op<T> = Arc::new(op);
        let epoch = collective::arrive(self, Kind::Reduce, root.raw(), Some(value), Some(op));
        Reduction::new((root == self.id()).then(|| Collective::new(self, epoch)))
    }

    fn check_root(&self, root: LocationId, what: &str) {
        if root.index() >= self.world.locations() {
            self.shared().fail(&format!(
                "{what}: the root {root} is not a location of this world of {}",
                self.world.locations()
            ));
        }
    }

    /// Receives the next message, or returns `None` once the whole world is
    /// **quiescent**: every message sent anywhere has been received and handled,
    /// and nothing is left in any buffer. Every location must call it (it is a
    /// collective, ARMI's `rmi_fence`), typically as
    ///
    /// ```
    /// use tutti::world::{LocationId, World};
    /// let world = World::builder().locations(3).workers(2).build().unwrap();
    /// let handled = world.run(|loc| async move {
    ///     let n = loc.world().locations() as u32;
    ///     // Start a chain: each message is passed on, one hop at a time.
    ///     if loc.id().index() == 0 {
    ///         loc.send(LocationId::new(1), 10u32).unwrap();
    ///     }
    ///     let mut handled = 0;
    ///     while let Some(mut d) = loc.recv_until_quiet().await {
    ///         let hops = d.take::<u32>().unwrap();
    ///         if hops > 0 {
    ///             let next = LocationId::new((loc.id().index() as u32 + 1) % n);
    ///             loc.send(next, hops - 1).unwrap();
    ///         }
    ///         handled += 1;
    ///     } // `d` is dropped here: handled
    ///     handled
    /// });
    /// assert_eq!(handled.iter().sum::<u32>(), 11);
    /// ```
    ///
    /// Messages may only be sent while handling a delivery (or before the first
    /// call); see the `quiescence` section of the module documentation for the
    /// algorithm and why it cannot end early.
    ///
    /// It also separates phases: a message sent after the sender's
    /// `recv_until_quiet` returned `None` is handed out by the receiver only
    /// after its own `recv_until_quiet` has returned `None` (no barrier is
    /// needed). A detection after a phase that sent nothing costs one wave (one
    /// all-reduce), else two once everything is handled.
    pub fn recv_until_quiet(&self) -> UntilQuiet<'_> {
        UntilQuiet { loc: self }
    }

    /// [`recv_until_quiet`](Self::recv_until_quiet) for plain threads.
    pub fn recv_until_quiet_blocking(&self) -> Option<Delivery<'_>> {
        crate::block_on(self.recv_until_quiet())
    }

    fn poll_until_quiet(&self, cx: &mut Context<'_>) -> Poll<Option<Delivery<'_>>> {
        let slot = self.slot();
        let phase = slot.phase.load(Ordering::Relaxed);
        loop {
            // Only this phase's messages: a later phase's were sent by a
            // location that saw this detection end, so its last wave has
            // completed and its result is about to be seen here.
            if let Some(d) = self.next(phase) {
                return Poll::Ready(Some(d));
            }
            self.flush();
            let mut q = *lock(&self.quiet);
            let epoch = match q.wave {
                Some(e) => e,
                None => {
                    // Handled first (Acquire), then sent: a handled message's
                    // onward sends are then counted too (see `delivery.rs`).
                    let handled = slot.handled.load(Ordering::Acquire);
                    let sent = slot.sent.load(Ordering::Relaxed);
                    let sum: Op<[u64; 2]> =
                        Arc::new(|a, b| [a[0].wrapping_add(b[0]), a[1].wrapping_add(b[1])]);
                    let e = collective::arrive(
                        self,
                        Kind::Quiescence,
                        0,
                        Some([sent, handled]),
                        Some(sum),
                    );
                    q.wave = Some(e);
                    *lock(&self.quiet) = q;
                    e
                }
            };
            match collective::poll_result::<[u64; 2]>(self, epoch, cx) {
                Poll::Ready(r) => {
                    let Some([sent, handled]) = r else {
                        self.shared()
                            .local
                            .fail_invariant("a quiescence wave completed without its sums");
                    };
                    *lock(&self.quiet) = Quiet { wave: None };
                    let before = slot.last_handled.swap(handled, Ordering::Relaxed);
                    if sent == before {
                        // Quiescent. Nothing is buffered (every message sent
                        // was handled), so the next phase starts here.
                        slot.phase.store(phase + 1, Ordering::Relaxed);
                        lock(&slot.outbox).set_phase(phase + 1);
                        return Poll::Ready(None);
                    }
                }
                Poll::Pending => {
                    if !matches!(lock(&self.cursor).cursor, Cursor::Idle) {
                        // A later phase's parcel is waiting: only the wave's
                        // result (its waker is registered) can move this on.
                        if self.spin_until(|| collective::is_done(self, epoch)) {
                            continue;
                        }
                        self.wait_for_world(crate::diag::node::What::Fence(epoch), cx);
                        return Poll::Pending;
                    }
                    if self
                        .spin_until(|| collective::is_done(self, epoch) || !slot.inbox.is_empty())
                    {
                        continue;
                    }
                    match slot.inbox.pop_or_register(cx.waker()) {
                        Some(p) => lock(&self.cursor).set(p),
                        None => {
                            self.wait_for_world(crate::diag::node::What::Fence(epoch), cx);
                            return Poll::Pending;
                        }
                    }
                }
            }
        }
    }
}

impl Drop for Location {
    fn drop(&mut self) {
        self.flush();
        self.slot().release();
    }
}

/// Future of [`Location::recv`].
#[must_use = "futures do nothing unless polled"]
#[derive(Debug)]
pub struct Recv<'a> {
    loc: &'a Location,
}

impl<'a> Future for Recv<'a> {
    type Output = Delivery<'a>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Delivery<'a>> {
        let loc: &'a Location = self.loc;
        loc.poll_recv(cx)
    }
}

/// Future of [`Location::recv_until_quiet`].
#[must_use = "futures do nothing unless polled"]
#[derive(Debug)]
pub struct UntilQuiet<'a> {
    loc: &'a Location,
}

impl<'a> Future for UntilQuiet<'a> {
    type Output = Option<Delivery<'a>>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Delivery<'a>>> {
        let loc: &'a Location = self.loc;
        loc.poll_until_quiet(cx)
    }
}

/// Counts a message `slot` sends to `to`, naming its flow in the trace.
#[cold]
fn trace_sent(slot: &Slot, to: LocationId) {
    if let Some(pairs) = &slot.trace {
        pairs.sent(slot.id.index() as u32, to.index() as u32);
    }
}
