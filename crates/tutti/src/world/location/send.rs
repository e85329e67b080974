//! Sending from a location: typed values to any location (moved within a
//! rank, serialized across ranks), bytes and slices to any location, and the outbox that
//! aggregates them per destination (`outbox.rs`) with its flush. Every send
//! counts the message for quiescence (`Slot::sent`) when it is called, so
//! buffered messages count; a send to a rank that died is refused.

use std::any::{type_name, Any};

use serde::Serialize;

use super::Location;
use crate::loom::{lock, Ordering};
use crate::world::error::SendError;
use crate::world::inbox::{Parcel, Payload};
use crate::world::outbox::{Bytes, Outgoing};
use crate::world::rank::Slot;
use crate::world::{cast, tag, typed, LocationId};

impl Location {
    /// Sends `value` to location `to`, on this rank or another. To a location
    /// of this rank the value moves as it is (never serialized). To another
    /// rank it is serialized with the message core's codec (`typed.rs`) and
    /// decoded on arrival by a typed receive ([`Delivery::typed`](crate::world::Delivery::typed)).
    /// A `Vec<u8>` is sent as bytes (see [`send_bytes`](Self::send_bytes)).
    /// So the same program runs in one process and across ranks.
    ///
    /// Sending never blocks: the message may wait in this location's buffer for
    /// `to` (aggregation) until the buffer fills, the location flushes or waits,
    /// or the world's time bound passes. A value whose `Serialize` fails on its
    /// way to another rank comes back in [`SendError::Encode`].
    ///
    /// ```
    /// use tutti::world::{LocationId, World};
    /// let world = World::builder().locations(3).workers(2).build().unwrap();
    /// let sums = world.run(|loc| async move {
    ///     let n = loc.world().locations();
    ///     let right = LocationId::new(((loc.id().index() + 1) % n) as u32);
    ///     loc.send(right, vec![loc.id().index() as u64; 2]).unwrap();
    ///     loc.recv().await.typed::<Vec<u64>>().unwrap().iter().sum::<u64>()
    /// });
    /// assert_eq!(sums, [4, 0, 2]);
    /// ```
    pub fn send<T: Serialize + Any + Send>(
        &self,
        to: LocationId,
        value: T,
    ) -> Result<(), SendError<T>> {
        let Some(value) = self.checked_unless_bytes(to, value)? else {
            return Ok(());
        };
        if to.rank(self.world.locations_per_rank()) != self.rank() {
            return match typed::encode(&value) {
                Ok(bytes) => {
                    self.push_bytes(to, bytes);
                    Ok(())
                }
                Err(e) => Err(SendError::Encode(to, value, e.to_string())),
            };
        }
        self.send_local(to, Payload::Value(Box::new(value), type_name::<T>()));
        Ok(())
    }

    /// [`send`](Self::send) with a tag: a number of the caller's choosing
    /// that travels with the message, so that the receiver can take the next
    /// message with that tag ([`recv_matching`](Self::recv_matching) with
    /// [`Match::tag`](crate::world::Match::tag)) and leave the others queued
    /// (MPI's `tag`). The delivery shows it ([`Delivery::tag`](crate::world::Delivery::tag)).
    /// A `Vec<u8>` goes as bytes, as with `send`.
    ///
    /// ```
    /// use tutti::world::{Match, World};
    /// let world = World::builder().locations(1).workers(1).build().unwrap();
    /// let loc = world.location(0).unwrap();
    /// loc.send_tagged(loc.id(), 7, String::from("data")).unwrap();
    /// loc.send_tagged(loc.id(), 8, String::from("control")).unwrap();
    /// let mut d = loc.recv_matching_blocking(Match::any().tag(8));
    /// assert_eq!(d.typed::<String>().unwrap(), "control");
    /// assert_eq!(loc.recv_blocking().tag(), Some(7));
    /// ```
    pub fn send_tagged<T: Serialize + Any + Send>(
        &self,
        to: LocationId,
        tag: u64,
        value: T,
    ) -> Result<(), SendError<T>> {
        if to.index() >= self.world.locations() {
            return Err(SendError::NoSuchLocation(to, value));
        }
        if self.rank_died(to) {
            return Err(SendError::RankDied(to, value));
        }
        let remote = to.rank(self.world.locations_per_rank()) != self.rank();
        let value = match cast::<T, Vec<u8>>(value) {
            Ok(bytes) => {
                let mut out = Vec::with_capacity(tag::HEADER + bytes.len());
                out.extend_from_slice(&tag::header(tag));
                out.extend_from_slice(&bytes);
                self.push_bytes(to, out);
                return Ok(());
            }
            Err(value) => value,
        };
        if remote {
            let mut out = tag::header(tag).to_vec();
            return match typed::encode_into(&value, &mut out) {
                Ok(()) => {
                    self.push_bytes(to, out);
                    Ok(())
                }
                Err(e) => Err(SendError::Encode(to, value, e.to_string())),
            };
        }
        let tagged = tag::Tagged {
            tag,
            value: Box::new(value),
            name: type_name::<T>(),
        };
        self.send_local(to, Payload::Value(Box::new(tagged), type_name::<T>()));
        Ok(())
    }

    /// Sends `value`, which need not be serializable (a closure, a handle, a
    /// reply slot), to a location of this rank: it moves as it is. To another
    /// rank it is [`SendError::NotLocal`]; use [`send`](Self::send) for
    /// messages that may cross ranks.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use tutti::world::{SendError, World};
    /// let world = World::builder().locations(1).workers(1).build().unwrap();
    /// let loc = world.location(0).unwrap();
    /// let shared = Arc::new(5u32);
    /// loc.send_value(loc.id(), Arc::clone(&shared)).unwrap();
    /// assert_eq!(*loc.recv_blocking().take::<Arc<u32>>().unwrap(), 5);
    /// ```
    pub fn send_value<T: Any + Send>(&self, to: LocationId, value: T) -> Result<(), SendError<T>> {
        let Some(value) = self.checked_unless_bytes(to, value)? else {
            return Ok(());
        };
        if to.rank(self.world.locations_per_rank()) != self.rank() {
            return Err(SendError::NotLocal(to, value));
        }
        self.send_local(to, Payload::Value(Box::new(value), type_name::<T>()));
        Ok(())
    }

    /// What [`send`](Self::send) and [`send_value`](Self::send_value) check
    /// first: `to` exists and its rank is alive. A `Vec<u8>` goes out as bytes
    /// at once (`None`); any other value comes back to be sent (`Some`).
    fn checked_unless_bytes<T: Any + Send>(
        &self,
        to: LocationId,
        value: T,
    ) -> Result<Option<T>, SendError<T>> {
        if to.index() >= self.world.locations() {
            return Err(SendError::NoSuchLocation(to, value));
        }
        if self.rank_died(to) {
            return Err(SendError::RankDied(to, value));
        }
        match cast::<T, Vec<u8>>(value) {
            Ok(bytes) => {
                self.push_bytes(to, bytes);
                Ok(None)
            }
            Err(value) => Ok(Some(value)),
        }
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
    /// [`WorldBuilder::aggregation_bytes`](crate::world::WorldBuilder::aggregation_bytes))
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
            && crate::world::transport::shm::rank_died(&shared.transport, rank);
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
}

/// Counts a message `slot` sends to `to`, naming its flow in the trace.
#[cold]
fn trace_sent(slot: &Slot, to: LocationId) {
    if let Some(pairs) = &slot.trace {
        pairs.sent(slot.id.index() as u32, to.index() as u32);
    }
}
