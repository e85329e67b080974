//! The shared state of one runtime: the workers' stealers, the global
//! injectors (normal, high and low priority), sleep/wake, and the entry points that move work from outside
//! threads onto the workers.

use std::sync::OnceLock;
use std::thread::JoinHandle as ThreadHandle;

use crossbeam_deque::{Injector, Steal, Stealer, Worker};

use super::builder::{BuildError, Builder, IdleStrategy};
use super::ids::RuntimeId;
use super::job::{JobRef, StackJob};
use super::latch::{CoreLatch, LockLatch, SpinLatch};
use super::priority::Priority;
use super::sleep::Sleep;
use super::task::LiveTasks;
use super::worker::WorkerThread;
use std::sync::Arc;

use crate::loom::{fence, lock, AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Mutex, Ordering};

/// What every other thread may see of one worker.
pub(crate) struct ThreadInfo {
    /// Steals the oldest recursive job (`join`/`scope` halves).
    pub(crate) deque: Stealer<JobRef>,
    /// Steals independent tasks from the worker's FIFO.
    pub(crate) fifo: Stealer<JobRef>,
    /// Steals low-priority tasks from the worker's low FIFO.
    pub(crate) low: Stealer<JobRef>,
    /// Set when the runtime shuts down; the worker's main loop waits on it.
    pub(crate) terminate: CoreLatch,
}

/// One runtime's shared state.
pub(crate) struct Registry {
    pub(crate) thread_infos: Box<[ThreadInfo]>,
    pub(crate) injector: Injector<JobRef>,
    /// Every high-priority task waiting to run (`priority.rs`).
    pub(crate) high: Injector<JobRef>,
    /// Low-priority tasks queued from outside the workers.
    pub(crate) low_injector: Injector<JobRef>,
    /// The priority of tasks spawned without one.
    pub(crate) default_priority: Priority,
    pub(crate) sleep: Sleep,
    pub(crate) idle: IdleStrategy,
    /// Live async tasks, cancelled at shutdown.
    pub(crate) live: LiveTasks,
    /// The name tasks keep of this runtime (`ids.rs`).
    id: RuntimeId,
    /// Engines that idle workers drive (see [`IdlePollers`]).
    pub(crate) pollers: IdlePollers,
    terminated: AtomicBool,
    handles: Mutex<Vec<ThreadHandle<()>>>,
    /// Idle workers inside a search for work (see [`Registry::all_idle`]).
    searching: AtomicUsize,
    /// Threads for blocking closures (`blocking.rs`).
    pub(crate) blocking: super::blocking::BlockingPool,
    /// The I/O driver, created by the first socket (`io.rs`).
    pub(crate) io: std::sync::OnceLock<Arc<super::io::Driver>>,
}

impl Registry {
    /// Creates the registry and starts its worker threads.
    pub(crate) fn start(builder: &Builder) -> Result<Arc<Registry>, BuildError> {
        crate::diag::trace::start_from_env();
        if let Some(mode) = builder.deadlock_mode_value() {
            super::context::set_deadlock_mode(mode);
        }
        let n = builder.resolved_workers();
        let id = RuntimeId::take().ok_or(BuildError::TooManyRuntimes {
            max: RuntimeId::capacity(),
        })?;
        let mut locals = Vec::with_capacity(n);
        let mut infos = Vec::with_capacity(n);
        for _ in 0..n {
            let deque = Worker::new_lifo();
            let fifo = Worker::new_fifo();
            let low = Worker::new_fifo();
            infos.push(ThreadInfo {
                deque: deque.stealer(),
                fifo: fifo.stealer(),
                low: low.stealer(),
                terminate: CoreLatch::new(),
            });
            locals.push((deque, fifo, low));
        }
        let runtime_id = id.get();
        let registry = Arc::new(Registry {
            thread_infos: infos.into_boxed_slice(),
            injector: Injector::new(),
            high: Injector::new(),
            low_injector: Injector::new(),
            default_priority: builder.default_priority_value(),
            sleep: Sleep::new(n),
            idle: builder.idle_strategy_value(),
            live: LiveTasks::new(n + 1),
            id,
            pollers: IdlePollers::default(),
            terminated: AtomicBool::new(false),
            handles: Mutex::new(Vec::with_capacity(n)),
            searching: AtomicUsize::new(0),
            blocking: super::blocking::BlockingPool::new(
                builder.max_blocking_threads_value(),
                builder.blocking_keep_alive_value(),
                runtime_id,
            ),
            io: std::sync::OnceLock::new(),
        });
        registry.id.publish(Arc::as_ptr(&registry));
        for (index, queues) in locals.into_iter().enumerate() {
            let mut thread = std::thread::Builder::new().name(builder.name_of(index));
            if let Some(size) = builder.stack_size_bytes() {
                thread = thread.stack_size(size);
            }
            let pin = builder.pinned_core(index);
            let reg = Arc::clone(&registry);
            let spawned = thread.spawn(move || {
                if let Some(core) = pin {
                    super::builder::pin_current_thread(core);
                }
                WorkerThread::run(reg, index, queues);
            });
            match spawned {
                Ok(h) => lock(&registry.handles).push(h),
                Err(e) => {
                    registry.terminate();
                    registry.join_workers();
                    return Err(BuildError::Spawn(e));
                }
            }
        }
        Ok(registry)
    }

    /// The runtime's id, as its tasks keep it.
    #[inline]
    pub(crate) fn id(&self) -> u16 {
        self.id.get()
    }

    /// Number of worker threads.
    #[inline]
    pub(crate) fn num_workers(&self) -> usize {
        self.thread_infos.len()
    }

    /// Pushes a job from a thread that will not run it itself.
    pub(crate) fn inject(&self, job: JobRef) {
        self.inject_into(&self.injector, job);
    }

    /// Pushes a task's job, by its priority, from a thread that will not run it itself
    /// (or, for a high-priority task, from any thread: `priority.rs`).
    #[inline]
    pub(crate) fn inject_with(&self, job: JobRef, priority: Priority) {
        let queue = match priority {
            Priority::Normal => &self.injector,
            Priority::High => &self.high,
            Priority::Low => &self.low_injector,
        };
        self.inject_into(queue, job);
    }

    #[inline]
    fn inject_into(&self, queue: &Injector<JobRef>, job: JobRef) {
        queue.push(job);
        self.sleep.new_injected_jobs();
        // `new_injected_jobs` issued a SeqCst fence after the push; paired
        // with the one in `shutdown`, either we see `terminated` here or the
        // shutdown drain sees our job.
        if self.terminated.load(Ordering::Relaxed) {
            self.discard_injected();
        }
    }

    /// Every worker is in its idle loop and no queue holds work: nothing runs or
    /// is about to run (until something outside the workers wakes a task).
    ///
    /// An idle worker that finds work takes it out of its queue *before* it leaves
    /// the idle count, so the count and the queues alone would call a runtime quiet
    /// while such a worker holds a job it has not started (for as long as it is
    /// preempted). Idle workers therefore announce each search
    /// ([`begin_idle_search`](Self::begin_idle_search), SeqCst, before touching a
    /// queue) and withdraw it only after leaving the idle count or finding nothing;
    /// this reads the count and the queues first and the searches last, so a job
    /// taken before the queues were read is seen either in the count or here.
    pub(crate) fn all_idle(&self) -> bool {
        self.sleep.counters().idle() == self.thread_infos.len() as u64
            && !self.has_visible_work()
            && {
                fence(Ordering::SeqCst);
                self.searching.load(Ordering::SeqCst) == 0
            }
    }

    /// An idle worker is about to look for work (see [`all_idle`](Self::all_idle)).
    #[inline]
    pub(crate) fn begin_idle_search(&self) {
        self.searching.fetch_add(1, Ordering::SeqCst);
    }

    /// The search of [`begin_idle_search`](Self::begin_idle_search) is over: it
    /// found nothing, or the worker has left the idle count with what it found.
    #[inline]
    pub(crate) fn end_idle_search(&self) {
        self.searching.fetch_sub(1, Ordering::SeqCst);
    }

    /// Any queue of any worker, or the injector, holds work. Used for the
    /// final scan before parking.
    pub(crate) fn has_visible_work(&self) -> bool {
        !self.injector.is_empty()
            || !self.high.is_empty()
            || !self.low_injector.is_empty()
            || self
                .thread_infos
                .iter()
                .any(|t| !t.deque.is_empty() || !t.fifo.is_empty() || !t.low.is_empty())
    }

    /// Moves a batch from the injector into `dest`, returning one job.
    #[inline]
    pub(crate) fn steal_injected(&self, dest: &Worker<JobRef>) -> Option<JobRef> {
        steal_batch(&self.injector, dest)
    }

    /// Moves a batch from the low injector into `dest`, returning one job.
    pub(crate) fn steal_low_injected(&self, dest: &Worker<JobRef>) -> Option<JobRef> {
        steal_batch(&self.low_injector, dest)
    }

    /// Takes the oldest high-priority job. One at a time: a batch moved into one
    /// worker's queue would wait there behind the job it runs.
    #[cold]
    pub(crate) fn steal_high(&self) -> Option<JobRef> {
        loop {
            match self.high.steal() {
                Steal::Success(job) => return Some(job),
                Steal::Empty => return None,
                Steal::Retry => {}
            }
        }
    }

    /// Runs `op` on a worker of this registry and returns its result. The
    /// flag tells `op` whether it was moved from another thread.
    #[inline]
    pub(crate) fn in_worker<OP, R>(self: &Arc<Self>, op: OP) -> R
    where
        OP: FnOnce(&WorkerThread, bool) -> R + Send,
        R: Send,
    {
        match WorkerThread::current() {
            Some(w) if Arc::ptr_eq(w.registry(), self) => op(w, false),
            Some(w) => self.in_worker_cross(w, op),
            None => self.in_worker_cold(op),
        }
    }

    /// From a thread outside any runtime: inject and block on a condvar.
    #[cold]
    fn in_worker_cold<OP, R>(self: &Arc<Self>, op: OP) -> R
    where
        OP: FnOnce(&WorkerThread, bool) -> R + Send,
        R: Send,
    {
        std::thread_local! {
            static LOCK_LATCH: LockLatch = LockLatch::new();
        }
        LOCK_LATCH.with(|latch| {
            let job = StackJob::new(run_injected(op), latch);
            // SAFETY: `job` stays on this frame until its latch is set: we
            // block right below and nothing between can unwind.
            self.inject(unsafe { job.as_job_ref() });
            latch.wait_and_reset();
            job.into_result()
        })
    }

    /// From a worker of another runtime: inject here and keep that worker
    /// busy with its own runtime's work until the job is done.
    #[cold]
    fn in_worker_cross<OP, R>(self: &Arc<Self>, current: &WorkerThread, op: OP) -> R
    where
        OP: FnOnce(&WorkerThread, bool) -> R + Send,
        R: Send,
    {
        let latch = SpinLatch::cross(current.registry(), current.index());
        let job = StackJob::new(run_injected(op), latch);
        // SAFETY: as in `in_worker_cold`; `wait_until` returns only once the
        // latch is set.
        self.inject(unsafe { job.as_job_ref() });
        current.wait_until(&job.latch.core);
        job.into_result()
    }

    /// Marks the runtime terminated and tells every worker to leave its main
    /// loop once it runs out of work at hand.
    pub(crate) fn terminate(&self) {
        self.terminated.store(true, Ordering::SeqCst);
        self.blocking.shutdown();
        for (i, info) in self.thread_infos.iter().enumerate() {
            // SAFETY: the latch lives in the registry, which outlives this call.
            if unsafe { CoreLatch::set(&info.terminate) } {
                self.sleep.wake_specific_thread(i);
            }
        }
        self.sleep.wake_all();
    }

    /// Joins the worker threads (not from one of them), then discards jobs
    /// that were injected after the workers left.
    pub(crate) fn join_workers(&self) {
        let handles: Vec<_> = std::mem::take(&mut *lock(&self.handles));
        let me = std::thread::current().id();
        for h in handles {
            if h.thread().id() == me {
                // Dropped from one of its own workers: that worker exits by
                // itself once this job returns.
                continue;
            }
            if h.join().is_err() {
                eprintln!("tutti: a worker thread panicked outside any job");
            }
        }
        // Tasks parked in no queue: wake them so that, the runtime being
        // terminated, their wake-up discards them (their futures are dropped
        // and their handles report `Cancelled`). A task dropped here may wake
        // others; those are injected and discarded the same way.
        for task in self.live.drain() {
            task.wake();
        }
        // Pairs with the fence in `inject` (see there).
        fence(Ordering::SeqCst);
        self.discard_injected();
    }

    fn discard_injected(&self) {
        for queue in [&self.injector, &self.high, &self.low_injector] {
            loop {
                match queue.steal() {
                    // SAFETY: the job was stolen exclusively from the injector,
                    // so it is discarded exactly once.
                    Steal::Success(job) => unsafe { job.discard() },
                    Steal::Empty => break,
                    Steal::Retry => {}
                }
            }
        }
    }
}

/// Moves a batch from `queue` into `dest`, returning one job.
#[inline]
fn steal_batch(queue: &Injector<JobRef>, dest: &Worker<JobRef>) -> Option<JobRef> {
    loop {
        match queue.steal_batch_and_pop(dest) {
            Steal::Success(job) => return Some(job),
            Steal::Empty => return None,
            Steal::Retry => {}
        }
    }
}

/// A function an idle worker calls to drive an external engine; returns whether
/// anything moved (new work may then exist).
pub(crate) type IdlePoller = Arc<dyn Fn() -> bool + Send + Sync>;

/// Engines driven by idle workers (the world's MPI transport in polling mode).
///
/// An idle worker calls every poller before each idle round; the list's lock is
/// only *tried*, so one worker polls at a time and the others go on idling
/// (this serializes the engine's progress as `MPI_THREAD_SERIALIZED` requires).
/// After a poll that moved something, idle workers poll continuously for
/// [`SPIN_POLLS`](IdlePollers::SPIN_POLLS) polls, then yield between polls, and
/// only then fall back to the runtime's idle strategy, which parks them.
///
/// How parked workers learn of an engine's input depends on the engine:
///
/// * **It can wake a worker** (registered with `wakes`): the shared-memory
///   rings, whose futex a parked worker blocks on (the engine's idle waiter,
///   `sleep::IdleWaiter`; the spin then adapts and there are no yields) or
///   whose receiving thread delivers and so wakes the tasks; the I/O driver,
///   whose `epoll_wait` is the waiter. Parked workers sleep without a bound.
/// * **It cannot** (a *deaf* engine: MPI, which has no descriptor to wait
///   on): one parked worker at a time holds the *poll turn* and parks with a
///   timeout, polls when it ends, and parks again with twice the timeout, from
///   [`POLL_INTERVAL`](IdlePollers::POLL_INTERVAL) up to
///   [`POLL_MAX`](IdlePollers::POLL_MAX); input resets it. The other parked
///   workers sleep without a bound; when the turn's worker wakes to run
///   something (its poll found input, or work was handed to it), it wakes
///   one of them, which takes the turn over meanwhile. So an idle process
///   polls a deaf engine about `1 / POLL_MAX` times a second, and a message
///   reaching it after a long silence waits up to `POLL_MAX` more than one
///   that arrives during traffic.
///
/// # The poll turn's hand-over
///
/// The turn is a flag taken by a swap ([`claim_turn`](Self::claim_turn)) and
/// given back after the park. A worker that finds it taken parks without a
/// bound, so the holder must not leave it while such a worker sleeps on: the
/// *hand-over* ([`hand_turn_over`](Self::hand_turn_over)) sets `handoff`,
/// then, after a SeqCst fence, wakes a parked worker if the sleep counters
/// show one (`Sleep::wake_one_sleeper`). A worker parking without the turn
/// counts itself sleeping, issues its SeqCst fence and only then reads
/// `handoff` among its last looks for work (`handoff_pending`): the two
/// fences are ordered, so either the parking worker sees `handoff` and does
/// not park, or the hand-over sees it counted and wakes it (the waker takes
/// the parked worker's lock, which that worker holds until it blocks). The
/// worker so woken (or not parked) takes `handoff` and parks again at once,
/// claiming the turn; a successful claim clears `handoff`, since the turn is
/// held again. This is `sleep.rs`'s argument for injected work, with
/// `handoff` as the work. A `handoff` left over (set after another worker
/// claimed the turn) costs a turnless worker one extra idle round, never
/// more: taking it clears it.
/// `loom_tests::the_poll_turn_reaches_a_parking_worker` checks the
/// hand-over.
pub(crate) struct IdlePollers {
    list: Mutex<Vec<IdlePoller>>,
    active: AtomicBool,
    /// Registered pollers whose engine cannot wake a parked worker.
    deaf: AtomicUsize,
    /// A parked worker polls the deaf engines on a timer now.
    turn: AtomicBool,
    /// The poll turn's next park timeout, in nanoseconds (see the type doc).
    turn_wait: AtomicU64,
    /// The poll turn's worker found input and woke another worker to take
    /// the turn over: the first worker to see this parks with it at once.
    handoff: AtomicBool,
    /// Pauses in force (`Runtime::pause_idle_pollers`); while any is, the
    /// pollers are not called.
    paused: AtomicUsize,
    /// Polls so far that moved something (any worker's).
    moves: AtomicU64,
    /// Polls without pause, then polls with a yield between them, after
    /// traffic ([`SPIN_POLLS`](Self::SPIN_POLLS), [`YIELD_POLLS`](Self::YIELD_POLLS)
    /// unless set otherwise).
    spin_polls: AtomicU32,
    yield_polls: AtomicU32,
}

impl Default for IdlePollers {
    fn default() -> Self {
        IdlePollers {
            list: Mutex::new(Vec::new()),
            active: AtomicBool::new(false),
            deaf: AtomicUsize::new(0),
            turn: AtomicBool::new(false),
            turn_wait: AtomicU64::new(Self::POLL_INTERVAL.as_nanos() as u64),
            handoff: AtomicBool::new(false),
            paused: AtomicUsize::new(0),
            moves: AtomicU64::new(0),
            spin_polls: AtomicU32::new(Self::SPIN_POLLS),
            yield_polls: AtomicU32::new(Self::YIELD_POLLS),
        }
    }
}

impl IdlePollers {
    /// The poll turn's first park timeout after input (see the type doc).
    pub(crate) const POLL_INTERVAL: std::time::Duration = std::time::Duration::from_micros(100);
    /// The poll turn's longest park timeout: the most a message to an idle
    /// process waits for a deaf engine to be polled.
    pub(crate) const POLL_MAX: std::time::Duration = std::time::Duration::from_millis(2);
    /// After a poll moved something, idle workers keep polling without pause
    /// for this many polls that move nothing (about 0.2–0.5 ms: traffic tends to
    /// continue, and a ping-pong's reply is due within a round trip), then yield
    /// between polls for [`Self::YIELD_POLLS`] more, then use the runtime's idle
    /// strategy. Counting polls instead of reading a clock keeps the loop short.
    pub(crate) const SPIN_POLLS: u32 = 2048;
    /// See [`Self::SPIN_POLLS`].
    pub(crate) const YIELD_POLLS: u32 = 2048;
    /// With an idle waiter the spin adapts between this and
    /// [`Self::SPIN_POLLS`] (see `WorkerThread::idle_round`).
    pub(crate) const MIN_SPIN_POLLS: u32 = 16;

    /// Sets the polls without pause and the polls with yields after traffic.
    pub(crate) fn set_budget(&self, spin: u32, yields: u32) {
        self.spin_polls.store(spin, Ordering::Relaxed);
        self.yield_polls.store(yields, Ordering::Relaxed);
    }

    /// The polls without pause and the polls with yields after traffic.
    #[inline]
    pub(crate) fn budget(&self) -> (u32, u32) {
        (
            self.spin_polls.load(Ordering::Relaxed),
            self.yield_polls.load(Ordering::Relaxed),
        )
    }

    /// Registers `p`; `wakes` says whether its engine's input can wake a
    /// parked worker (see the type doc), else parked workers poll it on a
    /// timer.
    pub(crate) fn add(&self, p: IdlePoller, wakes: bool) {
        lock(&self.list).push(p);
        if !wakes {
            self.deaf.fetch_add(1, Ordering::Relaxed);
        }
        self.active.store(true, Ordering::Release);
    }

    /// Whether a registered engine cannot wake a parked worker.
    #[inline]
    pub(crate) fn deaf(&self) -> bool {
        self.deaf.load(Ordering::Relaxed) != 0
    }

    /// Takes the poll turn for the calling parking worker, with the timeout
    /// to park for; `None` if another parked worker holds it. Give it back
    /// with [`release_turn`](Self::release_turn).
    pub(crate) fn claim_turn(&self) -> Option<std::time::Duration> {
        // A compare-exchange, not a swap: a failed claim writes nothing, so
        // the holder's release is the newest store a later claim can read
        // (a swap that fails still writes `true`; loom then lets a later
        // claim read that write instead of the release it has seen).
        if self
            .turn
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            return None;
        }
        // The turn is held again: no hand-over is owed.
        self.handoff.store(false, Ordering::Relaxed);
        Some(std::time::Duration::from_nanos(
            self.turn_wait.load(Ordering::Relaxed),
        ))
    }

    /// Gives the poll turn back after its park.
    pub(crate) fn release_turn(&self) {
        self.turn.store(false, Ordering::Release);
    }

    /// The poll turn's worker left its park to run something (it released
    /// the turn already): asks a parked worker to take the turn over, waking
    /// one if any is parked (see "The poll turn's hand-over"). If none is,
    /// `handoff` stays set for the next worker that parks without the turn.
    pub(crate) fn hand_turn_over(&self, sleep: &super::sleep::Sleep) {
        // `wake_one_sleeper`'s SeqCst fence orders this store before its
        // read of the sleep counters (type doc). Release: a worker that
        // sees the request (Acquire) also sees the turn given back, so its
        // claim succeeds (unless another worker's claim came between).
        self.handoff.store(true, Ordering::Release);
        sleep.wake_one_sleeper();
    }

    /// Whether a hand-over of the poll turn waits for a taker: a worker
    /// about to park without the turn asks this after its SeqCst fence
    /// (`Sleep::sleep`'s last look for work), and does not park if so.
    pub(crate) fn handoff_pending(&self) -> bool {
        self.handoff.load(Ordering::Acquire)
    }

    /// Whether the calling worker is to take the poll turn over (it then
    /// parks with it at once); clears the request.
    pub(crate) fn take_handoff(&self) -> bool {
        self.handoff.load(Ordering::Acquire) && self.handoff.swap(false, Ordering::Acquire)
    }

    /// The poll turn's park ended and its poll found nothing: the next park
    /// waits twice as long, up to [`Self::POLL_MAX`].
    pub(crate) fn turn_was_quiet(&self) {
        let next = self
            .turn_wait
            .load(Ordering::Relaxed)
            .saturating_mul(2)
            .min(Self::POLL_MAX.as_nanos() as u64);
        self.turn_wait.store(next, Ordering::Relaxed);
    }

    /// Whether any poller is registered and polling is not paused.
    #[inline]
    pub(crate) fn active(&self) -> bool {
        self.active.load(Ordering::Relaxed) && self.paused.load(Ordering::Relaxed) == 0
    }

    #[cfg_attr(not(feature = "mpi"), allow(dead_code))]
    pub(crate) fn pause(&self) {
        self.paused.fetch_add(1, Ordering::Relaxed);
    }

    #[cfg_attr(not(feature = "mpi"), allow(dead_code))]
    pub(crate) fn resume(&self) {
        self.paused.fetch_sub(1, Ordering::Relaxed);
    }

    /// Runs the pollers unless another worker is running them; true if anything
    /// moved.
    pub(crate) fn poll(&self) -> bool {
        let moved = match self.list.try_lock() {
            Ok(list) => list.iter().fold(false, |moved, p| p() | moved),
            Err(_) => false,
        };
        if moved {
            self.moves.fetch_add(1, Ordering::Relaxed);
            if self.turn_wait.load(Ordering::Relaxed) != Self::POLL_INTERVAL.as_nanos() as u64 {
                self.turn_wait
                    .store(Self::POLL_INTERVAL.as_nanos() as u64, Ordering::Relaxed);
            }
        }
        moved
    }

    /// How many polls have moved something so far (for workers to notice that
    /// another worker's poll did).
    pub(crate) fn moves(&self) -> u64 {
        self.moves.load(Ordering::Relaxed)
    }
}

/// Wraps `op` as a job injected from another thread: it runs on whichever
/// worker picks it up, told that it was moved.
fn run_injected<OP, R>(op: OP) -> impl FnOnce() -> R + Send
where
    OP: FnOnce(&WorkerThread, bool) -> R + Send,
    R: Send,
{
    move || {
        let w = WorkerThread::current().expect("tutti: injected job executed off a worker thread");
        op(w, true)
    }
}

/// The lazily created global runtime used by the free functions when called
/// from a thread outside every runtime.
pub(crate) fn global_registry() -> &'static Arc<Registry> {
    static GLOBAL: OnceLock<Arc<Registry>> = OnceLock::new();
    GLOBAL.get_or_init(|| {
        let builder = Builder::from_env().unwrap_or_else(|e| panic!("tutti: global runtime: {e}"));
        Registry::start(&builder)
            .unwrap_or_else(|e| panic!("tutti: cannot start the global runtime: {e}"))
    })
}

/// Runs `f` with the current registry: the calling worker's, else the one
/// entered on this thread, else the global one.
#[inline]
pub(crate) fn with_current_registry<R>(f: impl FnOnce(&Arc<Registry>) -> R) -> R {
    match WorkerThread::current() {
        Some(w) => f(w.registry()),
        None => with_current_registry_cold(f),
    }
}

#[cold]
fn with_current_registry_cold<R>(f: impl FnOnce(&Arc<Registry>) -> R) -> R {
    match super::entered_registry() {
        Some(r) => f(&r),
        None => f(global_registry()),
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use std::sync::Arc;
    use std::task::{Poll, Waker};
    use std::time::Duration;

    use crate::loom::{AtomicBool, AtomicU64, Mutex as StdMutex, Ordering as O};

    /// An engine whose input cannot wake a parked worker (like MPI): input
    /// shows in a flag only a poll sees, and the poll wakes the task waiting
    /// for it.
    #[derive(Default)]
    struct Deaf {
        input: AtomicBool,
        delivered: AtomicBool,
        polls: AtomicU64,
        waiting: StdMutex<Option<Waker>>,
    }

    impl Deaf {
        fn poll(&self) -> bool {
            self.polls.fetch_add(1, O::Relaxed);
            if !self.input.swap(false, O::AcqRel) {
                return false;
            }
            self.delivered.store(true, O::Release);
            if let Some(w) = self.waiting.lock().unwrap().take() {
                w.wake();
            }
            true
        }
    }

    /// Every worker parked (the poll turn backed off to its longest wait),
    /// input of a deaf engine still reaches its task, through the worker
    /// that holds the poll turn: with one worker and with two.
    #[test]
    fn a_parked_runtime_finds_a_deaf_engines_input() {
        for workers in [1, 2] {
            let rt = crate::Runtime::builder().workers(workers).build().unwrap();
            let deaf = Arc::new(Deaf::default());
            let d = Arc::clone(&deaf);
            rt.add_idle_poller(Arc::new(move || d.poll()), false);
            for round in 0..3 {
                let d = Arc::clone(&deaf);
                let task = rt.spawn(std::future::poll_fn(move |cx| {
                    *d.waiting.lock().unwrap() = Some(cx.waker().clone());
                    if d.delivered.swap(false, O::AcqRel) {
                        Poll::Ready(())
                    } else {
                        Poll::Pending
                    }
                }));
                std::thread::sleep(Duration::from_millis(30));
                let before = deaf.polls.load(O::Relaxed);
                deaf.input.store(true, O::Release);
                task.join();
                assert!(
                    deaf.polls.load(O::Relaxed) > before,
                    "{workers} workers, round {round}: the input was found by a poll"
                );
            }
        }
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    use super::IdlePollers;
    use crate::loom::{thread, Arc};
    use crate::runtime::latch::CoreLatch;
    use crate::runtime::sleep::Sleep;

    /// The poll turn's hand-over (`IdlePollers`): worker 0 holds the turn
    /// and leaves its park to run work while worker 1, finding the turn
    /// taken, parks without a bound. Worker 1 must end up holding the turn:
    /// it sees the hand-over before it parks or is woken by it. Under loom a
    /// park has no timeout, so a worker left parked with nobody to wake it
    /// (the turn's holder gone to run work, the engine polled by nobody) is
    /// a deadlock loom reports.
    #[test]
    fn the_poll_turn_reaches_a_parking_worker() {
        let mut model = loom::model::Builder::new();
        model.preemption_bound = Some(3);
        model.check(|| {
            let sleep = Arc::new(Sleep::new(2));
            let pollers = Arc::new(IdlePollers::default());
            pollers.add(std::sync::Arc::new(|| false), false);
            assert!(pollers.claim_turn().is_some(), "worker 0 takes the turn");
            let parker = {
                let (sleep, pollers) = (Arc::clone(&sleep), Arc::clone(&pollers));
                thread::spawn(move || {
                    let latch = CoreLatch::new();
                    sleep.start_looking();
                    // As `WorkerThread::park`: a worker without the turn
                    // counts a pending hand-over as work.
                    while pollers.claim_turn().is_none() {
                        sleep.sleep(1, &latch, None, None, || pollers.handoff_pending());
                        pollers.take_handoff();
                    }
                    sleep.stop_looking();
                })
            };
            // Worker 0's park ended with work to run: it gives the turn
            // back and hands it over.
            pollers.release_turn();
            pollers.hand_turn_over(&sleep);
            parker.join().unwrap();
            assert_eq!(sleep.counters().sleeping(), 0);
            assert!(pollers.claim_turn().is_none(), "worker 1 holds the turn");
            // A hand-over set after worker 1's claim may be left over: the
            // next worker to park without the turn takes it (type doc).
        });
    }
}
