//! Layer 0: the work-stealing scheduler every other layer runs on.
//!
//! Two scheduling regimes, chosen by the programmer (Blip):
//!
//! * **recursive work** — [`join`], [`scope`], [`par_for`],
//!   [`par_chunks_mut`]: depth-first on the own deque, thieves take the
//!   oldest and largest pieces, no heap allocation per `join`, and a worker
//!   waiting for a stolen half executes other work meanwhile;
//! * **independent tasks** — [`spawn`]: futures served FIFO so that a deep
//!   recursion or a busy task cannot starve another task; a task that returns
//!   `Pending` gives its worker back and its waker resubmits it (Blip's
//!   delay/resubmit); the most recently woken task runs next on the waking
//!   worker, bounded so two tasks cannot monopolise it.
//!
//! Closures that block (files, foreign calls) go to [`spawn_blocking`]: a bounded pool
//! of threads apart from the workers (`blocking.rs`).
//!
//! Independent tasks have a [`Priority`] ([`spawn_with_priority`]): high-priority tasks
//! are taken before queued normal work, low-priority ones after it, with an aging rule
//! so that neither starves the other (`priority.rs`).
//!
//! Idle workers spin briefly, then park (see `sleep.rs` for the protocol and
//! its proof sketch); [`IdleStrategy`] selects the policy. Timers
//! ([`sleep`], [`timeout`]) run on one lazily started timer thread, and busy
//! workers fire due timers between jobs (`timer.rs`).
//!
//! Every free function has a [`Runtime`] method twin. Free functions use the
//! *current* runtime: the one whose worker is calling, else the one entered by
//! [`Runtime::block_on`] or [`Runtime::enter`] on this thread, else a global
//! runtime created on first use (configured by `TUTTI_WORKERS` and
//! `TUTTI_IDLE`, see [`Builder::from_env`]).

mod block_on;
mod blocking;
mod builder;
pub(crate) mod context;
mod ids;
pub(crate) mod io;
mod job;
mod join;
mod latch;
mod lazy;
mod owned;
mod par_for;
mod priority;
mod registry;
mod scope;
mod sequential;
pub(crate) mod sleep;
pub(crate) mod task;
mod timer;
mod unwind;
mod worker;

use std::cell::RefCell;
use std::future::Future;
use std::ops::Range;

pub use block_on::block_on;
pub use blocking::spawn_blocking;
pub(crate) use builder::available_cores;
pub use builder::{BuildError, Builder, IdleStrategy};
pub use join::join;
pub(crate) use join::join_context;
#[allow(unused_imports)] // the deadline facility for `csp::Alt` timeouts
pub(crate) use owned::{CellOwner, TaskCell};
pub use par_for::{par_chunks_mut, par_for};
pub use priority::{Priority, HIGH_BURST, LOW_EVERY};
pub use scope::{scope, Scope};
pub use sequential::SequentialGroup;
pub use task::{
    spawn, spawn_named, spawn_with_priority, yield_now, JoinError, JoinHandle, Outcome, TaskResult,
    YieldNow,
};
pub(crate) use timer::Deadline;
pub use timer::{sleep, sleep_until, timeout, timeout_at, Elapsed, Sleep, Timeout};
pub(crate) use unwind::payload_text;

use registry::Registry;
use std::sync::Arc;
use worker::WorkerThread;

std::thread_local! {
    /// The runtime entered on this (non-worker) thread, if any.
    static ENTERED: RefCell<Vec<Arc<Registry>>> = const { RefCell::new(Vec::new()) };
}

/// The runtime entered on this thread by `block_on`/`enter`, if any.
pub(crate) fn entered_registry() -> Option<Arc<Registry>> {
    ENTERED.with(|e| e.borrow().last().cloned())
}

/// Runs `f` with `registry` entered on this thread (left again when `f` returns or
/// unwinds).
pub(crate) fn with_entered<R>(registry: Arc<Registry>, f: impl FnOnce() -> R) -> R {
    struct Leave;
    impl Drop for Leave {
        fn drop(&mut self) {
            ENTERED.with(|e| e.borrow_mut().pop());
        }
    }
    ENTERED.with(|e| e.borrow_mut().push(registry));
    let _leave = Leave;
    f()
}

/// A pool of worker threads running tasks, `join`s, scopes and loops.
///
/// Dropping a `Runtime` shuts it down: each worker finishes the job it is
/// running and any recursive work left in its deque, queued and pending async
/// tasks are cancelled (their handles report [`JoinError::Cancelled`]), and
/// the worker threads are joined.
///
/// ```
/// let rt = tutti::Runtime::builder().workers(2).build().unwrap();
/// let (a, b) = rt.join(|| 1 + 1, || 2 + 2);
/// assert_eq!((a, b), (2, 4));
/// assert_eq!(rt.block_on(rt.spawn(async { 5 })), 5);
/// ```
pub struct Runtime {
    registry: Arc<Registry>,
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime")
            .field("workers", &self.workers())
            .finish_non_exhaustive()
    }
}

impl Default for Runtime {
    fn default() -> Self {
        Runtime::new()
    }
}

impl Runtime {
    /// A runtime with the default configuration (one worker per core).
    ///
    /// # Panics
    /// If the operating system refuses to start the worker threads; use
    /// [`Runtime::builder`] to handle that as an error.
    pub fn new() -> Runtime {
        Builder::new()
            .build()
            .unwrap_or_else(|e| panic!("tutti: cannot start a runtime: {e}"))
    }

    /// A builder to configure a runtime.
    pub fn builder() -> Builder {
        Builder::new()
    }

    pub(crate) fn start(b: &Builder) -> Result<Runtime, BuildError> {
        Ok(Runtime {
            registry: Registry::start(b)?,
        })
    }

    /// Number of worker threads.
    pub fn workers(&self) -> usize {
        self.registry.num_workers()
    }

    /// Runs `f` on one of this runtime's workers and returns its result;
    /// inside `f` the free functions use this runtime. The caller blocks (or,
    /// on a worker of another runtime, keeps executing that runtime's work).
    ///
    /// ```
    /// let rt = tutti::Runtime::builder().workers(2).build().unwrap();
    /// let sum: u64 = rt.install(|| {
    ///     let (a, b) = tutti::join(|| (0..50u64).sum::<u64>(), || (50..100u64).sum::<u64>());
    ///     a + b
    /// });
    /// assert_eq!(sum, 4950);
    /// ```
    pub fn install<F, R>(&self, f: F) -> R
    where
        F: FnOnce() -> R + Send,
        R: Send,
    {
        self.registry.in_worker(|_, _| f())
    }

    /// [`join`] on this runtime.
    pub fn join<A, B, RA, RB>(&self, a: A, b: B) -> (RA, RB)
    where
        A: FnOnce() -> RA + Send,
        B: FnOnce() -> RB + Send,
        RA: Send,
        RB: Send,
    {
        self.registry.in_worker(|w, _| join::join_on(w, a, b))
    }

    /// [`scope`] on this runtime.
    pub fn scope<'scope, OP, R>(&self, op: OP) -> R
    where
        OP: FnOnce(&Scope<'scope>) -> R + Send,
        R: Send,
    {
        self.registry.in_worker(|w, _| scope::scope_on(w, op))
    }

    /// [`spawn`] on this runtime.
    pub fn spawn<F>(&self, future: F) -> JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        task::spawn_on(&self.registry, future, None)
    }

    /// [`spawn_with_priority`] on this runtime.
    ///
    /// ```
    /// use tutti::Priority;
    /// let rt = tutti::Runtime::builder().workers(1).build().unwrap();
    /// let h = rt.spawn_with_priority(Priority::High, async { 7 });
    /// assert_eq!(rt.block_on(h), 7);
    /// ```
    pub fn spawn_with_priority<F>(&self, priority: Priority, future: F) -> JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        task::spawn_on(&self.registry, future, Some(priority))
    }

    /// The priority of tasks spawned on this runtime without one (see
    /// [`Builder::default_priority`]).
    pub fn default_priority(&self) -> Priority {
        self.registry.default_priority
    }

    /// [`spawn_blocking`] on this runtime.
    pub fn spawn_blocking<F, R>(&self, f: F) -> JoinHandle<R>
    where
        F: FnOnce() -> R + Send + 'static,
        R: Send + 'static,
    {
        task::spawn_blocking_on(&self.registry, f)
    }

    /// [`spawn_named`] on this runtime.
    pub fn spawn_named<F>(
        &self,
        name: impl Into<std::borrow::Cow<'static, str>>,
        future: F,
    ) -> JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        task::spawn_named_on(&self.registry, name.into(), future)
    }

    /// [`block_on`] with this runtime entered: free functions called by the
    /// future (e.g. [`spawn`]) use this runtime. On a worker of another
    /// runtime, that worker's runtime stays current.
    pub fn block_on<F: Future>(&self, future: F) -> F::Output {
        let _guard = self.enter();
        block_on(future)
    }

    /// Makes this runtime current on the calling thread until the guard is
    /// dropped, so that free functions ([`spawn`], [`join`], …) use it.
    ///
    /// ```
    /// let rt = tutti::Runtime::builder().workers(1).build().unwrap();
    /// let _g = rt.enter();
    /// assert_eq!(tutti::spawn(async { 3 }).join(), 3);
    /// ```
    pub fn enter(&self) -> EnterGuard<'_> {
        ENTERED.with(|e| e.borrow_mut().push(Arc::clone(&self.registry)));
        EnterGuard { _rt: self }
    }

    /// [`par_for`] on this runtime.
    pub fn par_for<F>(&self, range: Range<usize>, grain: usize, f: F)
    where
        F: Fn(usize) + Sync + Send,
    {
        self.install(|| par_for(range, grain, f))
    }

    /// [`par_chunks_mut`] on this runtime.
    pub fn par_chunks_mut<T, F>(&self, slice: &mut [T], grain: usize, f: F)
    where
        T: Send,
        F: Fn(usize, &mut [T]) + Sync + Send,
    {
        self.install(|| par_chunks_mut(slice, grain, f))
    }

    /// Registers `poller` to be called by idle workers, one at a time, before
    /// each idle round; `wakes` says whether its engine's input can wake a
    /// parked worker (else one parked worker polls it on a backing-off timer,
    /// see `registry::IdlePollers`).
    pub(crate) fn add_idle_poller(&self, poller: registry::IdlePoller, wakes: bool) {
        self.registry.pollers.add(poller, wakes);
    }

    /// Registers `waiter`, the OS primitive of the engine whose poller is
    /// registered with [`add_idle_poller`](Self::add_idle_poller): one parked
    /// worker blocks in it instead of on its condvar, so the engine's input
    /// wakes a worker that then polls and runs what it wakes itself (the
    /// contract is `sleep::IdleWaiter`'s). `false` if a waiter is registered
    /// already (one per runtime; the engine then relies on polling).
    pub(crate) fn set_idle_waiter(&self, waiter: Arc<dyn sleep::IdleWaiter>) -> bool {
        self.registry.sleep.set_waiter(waiter)
    }

    /// How long idle workers keep driving the pollers after traffic before
    /// they use the idle strategy: `spin` polls without pause, then `yields`
    /// polls with a `sched_yield` between them (see [`registry::IdlePollers`]).
    /// A process that shares its cores with other processes (more ranks on the
    /// host than cores) should not spin: the message it spins for comes from a
    /// process that needs the core.
    pub(crate) fn set_idle_poll_budget(&self, spin: u32, yields: u32) {
        self.registry.pollers.set_budget(spin, yields);
    }

    /// Stops idle workers from calling the pollers until the guard is dropped
    /// (while something else drives the engine, so that idle workers do not
    /// compete with it for the cores).
    #[cfg_attr(not(feature = "mpi"), allow(dead_code))]
    pub(crate) fn pause_idle_pollers(&self) -> PollersPaused<'_> {
        self.registry.pollers.pause();
        PollersPaused { rt: self }
    }

    /// Shuts the runtime down now; the same as dropping it.
    pub fn shutdown(self) {}
}

impl Drop for Runtime {
    fn drop(&mut self) {
        self.registry.terminate();
        self.registry.join_workers();
        crate::diag::trace::write_out_quietly();
    }
}

/// Keeps a runtime's idle pollers paused; see `Runtime::pause_idle_pollers`.
#[cfg_attr(not(feature = "mpi"), allow(dead_code))]
pub(crate) struct PollersPaused<'a> {
    rt: &'a Runtime,
}

impl Drop for PollersPaused<'_> {
    fn drop(&mut self) {
        self.rt.registry.pollers.resume();
    }
}

/// Keeps a runtime entered on this thread; see [`Runtime::enter`].
#[must_use = "the runtime is only entered while the guard lives"]
#[derive(Debug)]
pub struct EnterGuard<'a> {
    _rt: &'a Runtime,
}

impl Drop for EnterGuard<'_> {
    fn drop(&mut self) {
        ENTERED.with(|e| e.borrow_mut().pop());
    }
}

/// Whether other work waits for the calling worker's thread: in its own queues
/// or in any queue it could take from. A task that spins for an external event
/// (the world's MPI engine) stops spinning then. `false` off the workers.
#[cfg_attr(not(feature = "mpi"), allow(dead_code))]
pub(crate) fn work_waiting() -> bool {
    WorkerThread::current().is_some_and(|w| w.has_local_work() || w.registry().has_visible_work())
}

/// The calling task is going to keep its worker busy for long (an SPMD
/// location computing after a collective): a task it woke, waiting in the
/// worker's `run_next` slot to run next on this core (the ping-pong fast path),
/// is handed to the other workers instead, so that two long-running tasks that
/// met once do not end up sharing one worker while others idle. No-op off the
/// workers or when the slot is empty.
#[inline]
pub(crate) fn share_woken() {
    if let Some(w) = WorkerThread::current() {
        w.share_run_next();
    }
}

/// Runs `op` on a worker of the current runtime and returns its result: at once on a
/// worker, else moved onto the runtime while the calling thread blocks (as the free
/// [`join`] does). For operations that split work among the workers from the start.
#[inline]
pub(crate) fn in_worker<OP, R>(op: OP) -> R
where
    OP: FnOnce() -> R + Send,
    R: Send,
{
    match WorkerThread::current() {
        Some(_) => op(),
        None => registry::with_current_registry(|r| r.in_worker(|_, _| op())),
    }
}

/// Called by an operation that would complete at once inside an async task: true when
/// the task has done its budget of such operations in this poll and should yield (wake
/// itself and return `Pending`) before doing this one. Always false off the workers and
/// outside tasks.
#[inline]
pub(crate) fn budget_spent() -> bool {
    WorkerThread::current().is_some_and(|w| w.spend_budget())
}

/// Number of workers of the current runtime.
///
/// ```
/// assert!(tutti::runtime::current_workers() >= 1);
/// ```
pub fn current_workers() -> usize {
    registry::with_current_registry(|r| r.num_workers())
}

/// Index of the calling worker within its runtime, or `None` off the workers.
///
/// ```
/// assert_eq!(tutti::runtime::worker_index(), None);
/// ```
pub fn worker_index() -> Option<usize> {
    WorkerThread::current().map(|w| w.index())
}
