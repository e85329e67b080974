//! [`Location`]: one location's handle. This file holds the handle itself
//! (its ids, its aggregation factor, driving a polled engine while it waits,
//! reporting a wait on the whole world to `crate::diag`) and the collectives
//! it joins (gather, scatter, all-to-all, the scans and reduce-scatter are
//! `gather.rs`); sending is `send.rs` (typed values, bytes, slices, the outbox and
//! its flush), receiving `recv.rs` (walking the inbox's parcels, the
//! [`Recv`] future) and the fence `quiet.rs` (quiescence waves, the
//! [`UntilQuiet`] future; the algorithm and its proof are in the module
//! documentation of [`crate::world`]).

mod gather;
mod quiet;
mod recv;
mod send;

use quiet::Quiet;
pub(crate) use recv::Current;

pub use quiet::UntilQuiet;
pub use recv::{Recv, RecvMatching};

use std::fmt;
use std::sync::Arc;
use std::task::Context;

use serde::de::DeserializeOwned;
use serde::Serialize;

use super::collective::{self, Collective, Kind, Op, Reduction};
use super::outbox::Limits;
use super::rank::{Shared, Slot};
use super::{LocationId, World};
use crate::loom::{lock, Mutex, Ordering};

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

    /// Flushes, lets the transport make progress (in polling mode), and says
    /// whether a message is waiting (ARMI's `rmi_poll`).
    pub fn poll(&self) -> bool {
        self.flush();
        self.progress_now();
        lock(&self.slot().cursor).has_message() || !self.slot().inbox.is_empty()
    }

    /// In polling mode, drives the engine once. Waiting futures do not call it:
    /// the worker that runs them polls as soon as it is idle.
    fn progress_now(&self) {
        let t = &self.shared().transport;
        if t.polled() {
            t.progress();
        }
    }

    /// In polling mode, drives the engine from this task until `ready` holds,
    /// briefly (see `Shared::spin_until`). Returns whether `ready` held.
    pub(crate) fn spin_until(&self, ready: impl FnMut() -> bool) -> bool {
        self.shared().spin_until(ready)
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
}

impl Drop for Location {
    fn drop(&mut self) {
        self.flush();
        self.slot().release();
    }
}
