//! The one-sided scheme for channels between ranks (Miguel 2019, ch. 7): the
//! producer puts each token's bytes into a slot of a window on the
//! consumer's rank (`MPI_Put` + `MPI_Win_flush`) and then sends a small
//! signal message naming the slot and length; the consumer's router copies
//! the token out of the slot and into the channel's ring.
//!
//! # Layout
//!
//! Every location has one window (possibly empty). The one-sided channels
//! that come into a location from another rank get, in channel order,
//! `capacity` slots of `slot` bytes each. Every rank computes the same
//! layout from the graph and the placement ([`layout`]).
//!
//! # Backpressure and slot reuse
//!
//! Credits work as in the two-sided scheme (one per token, returned when the
//! consumer takes the token), and the producer fills slots round-robin. A
//! slot is written again only `capacity` puts later; to send at all the
//! producer needs a credit, and with at most `capacity` tokens uncredited the
//! token that used the slot before has been credited, hence taken from the
//! ring, hence copied out of the slot. A token whose encoding exceeds the
//! slot travels as a two-sided message instead (in order: both ride the same
//! location-to-location messages), counted in
//! [`RunReport::oversize`](super::RunReport::oversize).
//!
//! # Windows are collective
//!
//! `MPI_Win_allocate` and `MPI_Win_free` are collective over the ranks, and
//! each location makes its own window: location `j` of every rank makes
//! its window in round `j`, the rounds separated by world barriers, so the
//! collective calls match across ranks.

use std::sync::Arc;

use super::build::{ActorGraph, Scheme};
use super::partition::Placement;
use super::run::RunError;
use crate::world::{Location, LocationId};

#[cfg(feature = "mpi")]
pub(crate) type Win = crate::world::Window;

/// Without MPI there are no windows (uninhabited).
#[cfg(not(feature = "mpi"))]
pub(crate) enum Win {}

/// Where channel `c`'s slots lie in its consumer's window.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Slots {
    pub(crate) offset: usize,
    pub(crate) slot: usize,
    pub(crate) count: usize,
}

/// Per channel, its slots if it is one-sided and crosses ranks; and per
/// location, its window's size.
pub(crate) fn layout(
    graph: &ActorGraph,
    placement: &Placement,
    per_rank: usize,
    locations: usize,
) -> (Vec<Option<Slots>>, Vec<usize>) {
    let mut sizes = vec![0usize; locations];
    let slots = graph
        .channels
        .iter()
        .map(|c| {
            let (from, to) = (placement.location(c.from.0), placement.location(c.to.0));
            match c.scheme {
                Some(Scheme::OneSided { slot }) if from.rank(per_rank) != to.rank(per_rank) => {
                    let size = &mut sizes[to.index()];
                    let s = Slots {
                        offset: *size,
                        slot,
                        count: c.capacity,
                    };
                    *size += slot * c.capacity;
                    Some(s)
                }
                _ => None,
            }
        })
        .collect();
    (slots, sizes)
}

/// The windows of this rank's locations during a run (one per local index):
/// the one of local index `j` is made by location `j`, and used by every
/// location of the rank that puts into location `j` of another rank (an MPI
/// window is one object per rank, matched across ranks by creation order).
#[derive(Clone)]
pub(crate) struct Windows(Vec<Arc<Win>>);

impl Windows {
    /// The window of the location with local index `j` (on every rank).
    pub(crate) fn of(&self, j: usize) -> &Arc<Win> {
        &self.0[j]
    }
}

/// Makes this location's window (collectively, see the module docs) and
/// collects those of the other locations of this rank; `None` if no channel
/// of the graph is one-sided across ranks.
pub(crate) async fn open(
    loc: &Location,
    any: bool,
    size: usize,
    digest: u64,
) -> Result<Option<Windows>, RunError> {
    if !any {
        return Ok(None);
    }
    if !loc.world().uses_mpi() {
        return Err(RunError::Scheme(format!(
            "one-sided channels between ranks need the MPI transport (MPI_Put); this world's ranks use {}: choose Scheme::TwoSided",
            loc.world().config().engine
        )));
    }
    make(loc, size, digest).await
}

/// Windows handed between the locations of a rank, by (world, graph digest,
/// local index). An entry lives from its round in [`open`] to its round in
/// [`close`]; every location takes its copies in between (the barriers
/// order it), so sequential runs of one graph never see each other's.
#[cfg(feature = "mpi")]
#[allow(clippy::type_complexity)]
static HANDED: crate::loom::unmodelled::Mutex<Vec<((usize, u64, usize), Arc<Win>)>> =
    crate::loom::unmodelled::Mutex::new(Vec::new());

#[cfg(feature = "mpi")]
fn key(loc: &Location, digest: u64, j: usize) -> (usize, u64, usize) {
    (Arc::as_ptr(loc.world().shared()) as usize, digest, j)
}

#[cfg(feature = "mpi")]
async fn make(loc: &Location, size: usize, digest: u64) -> Result<Option<Windows>, RunError> {
    let per_rank = loc.world().locations_per_rank();
    for round in 0..per_rank {
        if round == loc.local_index() {
            let Some(w) = loc.world().mpi_call(move |c| Win::allocate(c, size)) else {
                return Err(RunError::Scheme("the MPI engine is gone".into()));
            };
            let k = key(loc, digest, round);
            crate::loom::lock(&HANDED).push((k, Arc::new(w)));
        }
        loc.barrier().await;
    }
    let handed = crate::loom::lock(&HANDED);
    let mut all = Vec::with_capacity(per_rank);
    for j in 0..per_rank {
        let k = key(loc, digest, j);
        match handed.iter().find(|(kk, _)| *kk == k) {
            Some((_, w)) => all.push(Arc::clone(w)),
            None => loc
                .world()
                .abort("tutti graph: a window of this rank vanished before the run"),
        }
    }
    Ok(Some(Windows(all)))
}

#[cfg(not(feature = "mpi"))]
async fn make(_loc: &Location, _size: usize, _digest: u64) -> Result<Option<Windows>, RunError> {
    Err(RunError::Scheme(
        "tutti was built without the `mpi` feature".into(),
    ))
}

/// Frees this location's window (collectively, after the run is quiescent).
#[cfg(feature = "mpi")]
pub(crate) async fn close(loc: &Location, windows: Option<Windows>, digest: u64) {
    let Some(windows) = windows else { return };
    let me = loc.local_index();
    let mine = Arc::clone(windows.of(me));
    drop(windows);
    for round in 0..loc.world().locations_per_rank() {
        if round == me {
            let k = key(loc, digest, me);
            crate::loom::lock(&HANDED).retain(|(kk, _)| *kk != k);
            let w = Arc::clone(&mine);
            let _ = loc.world().mpi_call(move |c| w.free(c));
        }
        loc.barrier().await;
    }
}

#[cfg(not(feature = "mpi"))]
pub(crate) async fn close(_loc: &Location, windows: Option<Windows>, _digest: u64) {
    if let Some(w) = windows {
        match **w.of(0) {}
    }
}

/// The producer's view of a one-sided channel: the consumer's window.
#[cfg_attr(not(feature = "mpi"), allow(dead_code))]
pub(crate) struct Target {
    win: Arc<Win>,
    slots: Slots,
    rank: usize,
    target_len: usize,
    next: usize,
}

impl Target {
    pub(crate) fn new(
        win: Arc<Win>,
        slots: Slots,
        to: LocationId,
        per_rank: usize,
        target_len: usize,
    ) -> Target {
        Target {
            win,
            slots,
            rank: to.rank(per_rank),
            target_len,
            next: 0,
        }
    }

    /// Whether a token of `len` encoded bytes fits a slot.
    pub(crate) fn fits(&self, len: usize) -> bool {
        len <= self.slots.slot
    }

    /// Puts `bytes[from..]` (which fit) into the next slot and waits until they are
    /// in the target's memory; returns the slot's index. `bytes` travels to
    /// the MPI engine and back (no copy).
    #[cfg(feature = "mpi")]
    pub(crate) fn put(&mut self, loc: &Location, bytes: &mut Vec<u8>, from: usize) -> u32 {
        let k = self.next;
        self.next = (k + 1) % self.slots.count;
        let offset = self.slots.offset + k * self.slots.slot;
        let (win, rank, target_len) = (Arc::clone(&self.win), self.rank, self.target_len);
        let buf = std::mem::take(bytes);
        match loc.world().mpi_call(move |c| {
            win.put(c, &buf[from..], rank, offset, target_len);
            buf
        }) {
            Some(b) => *bytes = b,
            None => loc
                .world()
                .abort("tutti graph: a one-sided put found the MPI engine gone"),
        }
        k as u32
    }

    #[cfg(not(feature = "mpi"))]
    pub(crate) fn put(&mut self, _loc: &Location, _bytes: &mut Vec<u8>, _from: usize) -> u32 {
        match *self.win {}
    }
}

/// The consumer's view of a one-sided channel: its slots in this location's window.
#[cfg_attr(not(feature = "mpi"), allow(dead_code))]
pub(crate) struct Source {
    win: Arc<Win>,
    slots: Slots,
}

impl Source {
    pub(crate) fn new(win: Arc<Win>, slots: Slots) -> Source {
        Source { win, slots }
    }

    /// Copies the token in slot `k` (`len` bytes, as its signal says) into `out`.
    #[cfg(feature = "mpi")]
    pub(crate) fn take(
        &self,
        loc: &Location,
        k: u32,
        len: u32,
        out: &mut Vec<u8>,
    ) -> Result<(), String> {
        let (k, len) = (k as usize, len as usize);
        if k >= self.slots.count || len > self.slots.slot {
            return Err(format!(
                "a signal for slot {k} of {len} bytes; the channel has {} slots of {} bytes",
                self.slots.count, self.slots.slot
            ));
        }
        if !self.win.unified() {
            let w = Arc::clone(&self.win);
            let _ = loc.world().mpi_call(move |c| w.sync(c));
        }
        self.win
            .read(self.slots.offset + k * self.slots.slot, len, out);
        Ok(())
    }

    #[cfg(not(feature = "mpi"))]
    pub(crate) fn take(
        &self,
        _loc: &Location,
        _k: u32,
        _len: u32,
        _out: &mut Vec<u8>,
    ) -> Result<(), String> {
        match *self.win {}
    }
}
