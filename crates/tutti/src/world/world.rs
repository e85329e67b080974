//! [`World`]: start-up (resolving the configuration, choosing and attaching
//! the transport, building the rank's runtime), the SPMD entry point
//! ([`World::run`]) and what a program asks of its world (ranks, locations,
//! the runtime, aborting the job). The state behind it is `rank.rs`.

use std::future::Future;
use std::ops::Range;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use super::config::{WorldBuilder, WorldConfig};
use super::error::{LocationPanic, WorldError};
use super::outbox::Limits;
use super::rank::{Local, Shared};
use super::transport::{inproc::InProcess, Transport};
// The transports between processes (not built under loom).
#[cfg(not(loom))]
use super::{config::TransportKind, transport::Sink};
use super::{frame, Location, LocationId};
use crate::runtime::Runtime;
use crate::runtime::{JoinError, JoinHandle};

/// Polls with a yield between them that an idle worker of an oversubscribed
/// rank makes after traffic before it parks (it spins none; see
/// [`WorldConfig::oversubscribed`]).
const OVERSUBSCRIBED_YIELD_POLLS: u32 = 16;

/// A world of `ranks()` processes × `locations_per_rank()` locations: the
/// embedded default is one process of threads; `mpirun -n P` of the same binary,
/// built with the `mpi` feature, makes it distributed with no code change.
///
/// Start-up decides the transport (see [`WorldBuilder`] and
/// [`TransportKind`]); the world owns the rank's [`Runtime`], on which its
/// locations run as tasks. Run SPMD code on every location with [`run`](Self::run):
///
/// ```
/// use tutti::world::World;
/// let world = World::builder().locations(4).workers(2).build().unwrap();
/// let sums = world.run(|loc| async move {
///     let me = loc.id().index() as u64;
///     loc.all_reduce(me, |a, b| a + b).await
/// });
/// assert_eq!(sums, [6, 6, 6, 6]);
/// ```
///
/// Dropping the last handle shuts the world down: buffered messages are sent,
/// the transport completes its sends and waits for the frames other ranks sent
/// here, and MPI is finalized. Under MPI only one world can exist per process,
/// once.
#[derive(Clone)]
pub struct World {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for World {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("World")
            .field("rank", &self.rank())
            .field("ranks", &self.ranks())
            .field("locations_per_rank", &self.locations_per_rank())
            .finish_non_exhaustive()
    }
}

impl World {
    /// A builder reading the `TUTTI_*` environment variables.
    pub fn builder() -> WorldBuilder {
        WorldBuilder::new()
    }

    /// A world configured by the environment alone (see [`WorldBuilder`]).
    ///
    /// ```
    /// let world = tutti::world::World::from_env().unwrap();
    /// assert!(world.rank() < world.ranks());
    /// ```
    pub fn from_env() -> Result<World, WorldError> {
        WorldBuilder::new().build()
    }

    pub(crate) fn start(b: WorldBuilder) -> Result<World, WorldError> {
        if let Some(path) = &b.trace {
            crate::diag::trace::start_for(path)
                .map_err(|e| WorldError::Runtime(crate::runtime::BuildError::Trace(e)))?;
        }
        let mut config = b.resolve(&|k| std::env::var(k).ok())?;
        for w in config.warnings() {
            crate::world::say(&format!("warning: {w}"));
        }
        // The runtime's own settings (TUTTI_IDLE) apply; the world sets the
        // worker count.
        let runtime = crate::runtime::Builder::from_env()
            .map_err(WorldError::Runtime)?
            .workers(config.workers())
            .thread_name(|i| format!("tutti-world-{i}"))
            .build()
            .map_err(WorldError::Runtime)?;
        let per_rank = config.locations();
        let limits = Limits {
            factor: config.aggregation(),
            bytes: config.aggregation_bytes(),
            per_rank,
        };
        let make_local =
            |rank: usize, ranks: usize| Local::new(rank, ranks, per_rank, limits.inline_max());
        let (local, transport): (Arc<Local>, Arc<dyn Transport>) = match config.transport() {
            #[cfg(feature = "mpi")]
            TransportKind::Mpi | TransportKind::Hybrid => {
                let pending = super::transport::mpi::Mpi::init(&config)?;
                let local = make_local(pending.rank(), pending.ranks());
                let mpi = pending.attach(Arc::clone(&local) as Arc<dyn Sink>)?;
                (local, Arc::new(mpi))
            }
            #[cfg(not(loom))]
            TransportKind::Shm => {
                let pending = super::transport::shm::Shm::init(&config)?;
                let local = make_local(pending.rank(), pending.ranks());
                let shm = pending.attach(Arc::clone(&local) as Arc<dyn Sink>)?;
                (local, Arc::new(shm))
            }
            _ => (make_local(0, 1), Arc::new(InProcess)),
        };
        if (local.ranks * per_rank) > u32::MAX as usize {
            return Err(WorldError::BadSetting {
                var: "TUTTI_LOCATIONS",
                value: per_rank.to_string(),
                expected: "fewer than 2^32 locations in all",
            });
        }
        if local.ranks > 1 {
            super::stall::register(&local, &transport);
        }
        config.rank = local.rank;
        config.ranks = local.ranks;
        config.engine = transport.describe();
        if transport.polled() {
            let t = Arc::clone(&transport);
            runtime.add_idle_poller(Arc::new(move || t.progress()), transport.input_wakes());
            if let Some(w) = transport.idle_waiter() {
                runtime.set_idle_waiter(w);
            }
            if config.oversubscribed() {
                // The message a spinning worker waits for comes from a rank that
                // needs this core: yield it at once (a few polls), then park.
                runtime.set_idle_poll_budget(0, OVERSUBSCRIBED_YIELD_POLLS);
            }
        }
        let world = World {
            shared: Shared::new(config, local, transport, runtime, limits),
        };
        if crate::diag::trace::on() {
            let offset = world.trace_clock_offset();
            crate::diag::trace::set_rank(world.rank(), world.ranks(), offset);
        }
        Ok(world)
    }

    /// With several MPI ranks: this rank's clock offset from rank 0's and the
    /// round trip it was measured in, by a ping-pong with rank 0 (the sample
    /// with the smallest round trip counts); rank 0 answers every other rank.
    /// Ranks sharing a machine share `CLOCK_MONOTONIC`, so elsewhere: `None`.
    fn trace_clock_offset(&self) -> Option<(i64, u64)> {
        #[cfg(feature = "mpi")]
        if self.ranks() > 1 {
            use crate::diag::trace::{best_offset, mono, Sample};
            use mpi::point_to_point::{Destination, Source};
            use mpi::topology::Communicator;
            const ROUNDS: usize = 16;
            return super::transport::mpi::with_mpi(&self.shared.transport, |comm| {
                let me = comm.rank();
                if me == 0 {
                    for r in 1..comm.size() {
                        for _ in 0..ROUNDS {
                            let (_, _) = comm.process_at_rank(r).receive::<u8>();
                            comm.process_at_rank(r).send(&mono());
                        }
                    }
                    Some((0, 0))
                } else {
                    let zero = comm.process_at_rank(0);
                    let samples: Vec<Sample> = (0..ROUNDS)
                        .map(|_| {
                            let sent = mono();
                            zero.send(&1u8);
                            let (remote, _) = zero.receive::<u64>();
                            Sample {
                                sent,
                                remote,
                                back: mono(),
                            }
                        })
                        .collect();
                    best_offset(&samples)
                }
            })
            .flatten();
        }
        None
    }

    /// The world's id in the wait-for graph (`crate::diag`): its shared state's address.
    pub(crate) fn diag_id(&self) -> u64 {
        Arc::as_ptr(&self.shared) as usize as u64
    }

    pub(crate) fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    /// This process's rank.
    pub fn rank(&self) -> usize {
        self.shared.local.rank
    }

    /// This process's incarnation of its rank: 1, unless the rank belonged to
    /// a process of a shared-memory system that died and this process took it
    /// over (then one more than the dead process's). Lets a program tell the
    /// messages of a rank's new process from those of its dead predecessor.
    ///
    /// ```
    /// let world = tutti::world::World::builder().locations(2).build().unwrap();
    /// assert_eq!(world.incarnation(), 1);
    /// ```
    pub fn incarnation(&self) -> u64 {
        // Loom models run one process: no rank is ever taken over.
        #[cfg(loom)]
        return 1;
        #[cfg(not(loom))]
        return crate::world::transport::shm::incarnation(&self.shared.transport).unwrap_or(1);
    }

    /// Processes in the world.
    pub fn ranks(&self) -> usize {
        self.shared.local.ranks
    }

    /// Locations on every rank.
    pub fn locations_per_rank(&self) -> usize {
        self.shared.local.per_rank
    }

    /// Locations in the whole world (`ranks × locations_per_rank`).
    pub fn locations(&self) -> usize {
        self.ranks() * self.locations_per_rank()
    }

    /// The ids of this rank's locations.
    ///
    /// ```
    /// let world = tutti::world::World::builder().locations(3).workers(1).build().unwrap();
    /// let ids: Vec<usize> = world.local_locations().map(|l| l.index()).collect();
    /// assert_eq!(ids, [0, 1, 2]);
    /// ```
    pub fn local_locations(&self) -> impl Iterator<Item = LocationId> {
        let l = self.locations_per_rank();
        let start = self.rank() * l;
        (start..start + l).map(|i| LocationId::new(i as u32))
    }

    /// All location ids of the world.
    pub fn all_locations(&self) -> impl Iterator<Item = LocationId> {
        (0..self.locations()).map(|i| LocationId::new(i as u32))
    }

    /// The rank `id` lives on (`None` if there is no such location).
    pub fn rank_of(&self, id: LocationId) -> Option<usize> {
        (id.index() < self.locations()).then(|| id.rank(self.locations_per_rank()))
    }

    /// The settings this world runs with (printed by the CLI's `--verbose`).
    pub fn config(&self) -> &WorldConfig {
        &self.shared.config
    }

    /// The rank's runtime, on which the locations run.
    pub fn runtime(&self) -> &Runtime {
        &self.shared.runtime
    }

    /// The handle of this rank's `local`-th location, for code that drives a
    /// location itself (e.g. from the main thread with blocking calls). `None` if
    /// there is no such location or its handle is in use.
    ///
    /// ```
    /// let world = tutti::world::World::builder().locations(1).workers(1).build().unwrap();
    /// let loc = world.location(0).unwrap();
    /// assert!(world.location(0).is_none(), "one handle at a time");
    /// drop(loc);
    /// assert!(world.location(0).is_some());
    /// ```
    pub fn location(&self, local: usize) -> Option<Location> {
        let slot = self.shared.local.slots.get(local)?;
        if !slot.claim() {
            return None;
        }
        Some(Location::new(self.clone(), local))
    }

    /// Runs `body` on every location of this rank, each as a task of the rank's
    /// runtime, and returns their results in location order (SPMD: every rank runs
    /// the same program).
    ///
    /// # Panics
    /// If a location's body panics: in a one-process world this call panics with
    /// the location and message (see [`try_run`](Self::try_run)); with several
    /// ranks the whole job is taken down (`MPI_Abort`) with that message, so no
    /// rank is left waiting in a collective. Also if a location handle from
    /// [`location`](Self::location) is still alive.
    pub fn run<F, Fut>(&self, body: F) -> Vec<Fut::Output>
    where
        F: Fn(Location) -> Fut,
        Fut: Future + Send + 'static,
        Fut::Output: Send + 'static,
    {
        match self.try_run(body) {
            Ok(v) => v,
            Err(p) => panic!("tutti: {p}"),
        }
    }

    /// [`run`](Self::run), reporting a panicking location as an error instead of
    /// panicking (in a one-process world; with several ranks a panic still takes
    /// the job down). Returns as soon as one location has panicked; the others
    /// keep running until they finish or the world is dropped.
    ///
    /// ```
    /// let world = tutti::world::World::builder().locations(2).workers(1).build().unwrap();
    /// let err = world
    ///     .try_run(|loc| async move {
    ///         if loc.id().index() == 1 {
    ///             panic!("boom");
    ///         }
    ///     })
    ///     .unwrap_err();
    /// assert_eq!(err.location.index(), 1);
    /// assert_eq!(err.message, "boom");
    /// ```
    pub fn try_run<F, Fut>(&self, body: F) -> Result<Vec<Fut::Output>, LocationPanic>
    where
        F: Fn(Location) -> Fut,
        Fut: Future + Send + 'static,
        Fut::Output: Send + 'static,
    {
        let n = self.locations_per_rank();
        let mut locations = Vec::with_capacity(n);
        for i in 0..n {
            match self.location(i) {
                Some(l) => locations.push(l),
                None => panic!(
                    "tutti: World::run while the handle of location {} is in use",
                    self.rank() * n + i
                ),
            }
        }
        crate::diag::set_rank(self.rank());
        // The locations in the wait-for graph (`crate::diag`): their bodies' polls are
        // the nodes', so what a location waits on is noted on its node. Every node
        // exists before any location runs: the detector judges a world by the
        // location nodes it finds, and a location already waiting in a barrier while
        // the others had no node yet (this thread descheduled between two spawns)
        // looked like a world of one, stalled.
        let nodes: Vec<Arc<crate::diag::node::Node>> = {
            let _on = self.shared.runtime.enter();
            locations
                .iter()
                .map(|loc| {
                    crate::diag::node::Node::new(
                        crate::diag::node::Kind::Location,
                        format!("location {}", loc.id().index()),
                        self.rank(),
                        self.diag_id(),
                        self.ranks(),
                        loc.id().index() as u32,
                        n as u32,
                    )
                })
                .collect()
        };
        self.shared.local.stall.set_nodes(nodes.clone());
        let handles: Vec<(LocationId, JoinHandle<Fut::Output>)> = locations
            .into_iter()
            .zip(nodes)
            .map(|(loc, node)| {
                let id = loc.id();
                let mut fut = Box::pin(body(loc));
                let tracked = std::future::poll_fn(move |cx| {
                    let entered = node.enter();
                    let p = fut.as_mut().poll(cx);
                    entered.leave(p.is_pending());
                    p
                });
                (id, self.shared.runtime.spawn(tracked))
            })
            .collect();
        let outcome = self.shared.runtime.block_on(JoinAll::new(handles));
        self.shared.local.stall.set_nodes(Vec::new());
        // A run that ended cleanly is in the trace file now.
        crate::diag::trace::write_out_quietly();
        match outcome {
            Ok(v) => Ok(v),
            Err(p) => {
                if self.ranks() > 1 {
                    self.shared.transport.abort(&p.to_string());
                }
                Err(p)
            }
        }
    }

    /// Takes the whole job down with `why` (every rank stops; with MPI through
    /// `MPI_Abort`). For a condition from which the program cannot continue.
    pub fn abort(&self, why: &str) -> ! {
        self.shared.transport.abort(why)
    }

    /// Runs `f` with MPI (on the thread that owns it, with the engine paused) and
    /// a communicator of its own over all ranks, for code that calls MPI directly
    /// alongside the world. `None` if the world is not using MPI.
    #[cfg(feature = "mpi")]
    pub fn with_mpi<R: Send + 'static>(
        &self,
        f: impl FnOnce(&mpi::topology::SimpleCommunicator) -> R + Send + 'static,
    ) -> Option<R> {
        // Idle workers would only compete with `f` for the cores (in polling
        // mode they cannot get the engine while `f` has it).
        let _paused = self.shared.runtime.pause_idle_pollers();
        super::transport::mpi::with_mpi(&self.shared.transport, f)
    }

    /// Runs `f` where MPI calls are allowed (the progress thread, or under the
    /// engine's lock in polling mode) with the engine's user communicator,
    /// without pausing idle pollers: for short calls on a hot path (the
    /// graph's one-sided puts). `None` if the world is not using MPI.
    #[cfg(feature = "mpi")]
    pub(crate) fn mpi_call<R: Send + 'static>(
        &self,
        f: impl FnOnce(&mpi::topology::SimpleCommunicator) -> R + Send + 'static,
    ) -> Option<R> {
        super::transport::mpi::with_mpi(&self.shared.transport, f)
    }

    /// Whether the world's ranks are joined by MPI.
    pub(crate) fn uses_mpi(&self) -> bool {
        #[cfg(feature = "mpi")]
        {
            self.shared
                .transport
                .as_any()
                .downcast_ref::<super::transport::mpi::Mpi>()
                .is_some()
        }
        #[cfg(not(feature = "mpi"))]
        false
    }

    /// Sends raw bytes as a frame to `rank` (testing the receiver's validation:
    /// a malformed frame takes the job down naming the sender).
    #[doc(hidden)]
    pub fn send_raw_frame(&self, rank: usize, head: Vec<u8>) {
        if rank < self.ranks() && rank != self.rank() {
            self.shared
                .transport
                .send(rank, frame::Frame { head, body: None });
        }
    }

    /// The range of flat ids of rank `rank`'s locations.
    pub fn locations_of(&self, rank: usize) -> Range<usize> {
        let l = self.locations_per_rank();
        rank * l..(rank + 1) * l
    }
}

/// Waits for every location's task; the first panic ends the wait.
struct JoinAll<T> {
    handles: Vec<(LocationId, Option<JoinHandle<T>>)>,
    results: Vec<Option<T>>,
}

impl<T> JoinAll<T> {
    fn new(handles: Vec<(LocationId, JoinHandle<T>)>) -> Self {
        let n = handles.len();
        JoinAll {
            handles: handles.into_iter().map(|(id, h)| (id, Some(h))).collect(),
            results: (0..n).map(|_| None).collect(),
        }
    }
}

impl<T> Unpin for JoinAll<T> {}

impl<T> Future for JoinAll<T> {
    type Output = Result<Vec<T>, LocationPanic>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        let mut pending = false;
        for (i, (id, slot)) in this.handles.iter_mut().enumerate() {
            let Some(h) = slot else { continue };
            match h.poll_result(cx) {
                Poll::Pending => pending = true,
                Poll::Ready(Ok(v)) => {
                    this.results[i] = Some(v);
                    *slot = None;
                }
                Poll::Ready(Err(e)) => {
                    *slot = None;
                    let message = match e {
                        JoinError::Panicked(p) => crate::runtime::payload_text(&*p).to_string(),
                        JoinError::Cancelled => "its task was cancelled".to_string(),
                    };
                    return Poll::Ready(Err(LocationPanic {
                        location: *id,
                        message,
                    }));
                }
            }
        }
        if pending {
            return Poll::Pending;
        }
        Poll::Ready(Ok(this
            .results
            .iter_mut()
            .map(|r| r.take().expect("every location finished"))
            .collect()))
    }
}
