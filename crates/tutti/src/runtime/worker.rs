//! One worker thread: its queues, its main loop, and the "wait while doing
//! other work" loop every blocking operation on a worker uses.
//!
//! # Queues and the order they are served
//!
//! Each worker owns three places for work:
//!
//! * `lazy` — the private list of `join` halves (`lazy.rs`): recorded and
//!   taken back without atomic operations, for the outermost `join`s only
//!   (`join.rs`); the oldest is promoted to `deque` when another worker is
//!   idle. A runtime with a single worker has no thieves and never promotes.
//! * `deque` — a Chase–Lev deque for **recursive** work (promoted `join`
//!   halves, `scope` spawns). The owner pushes and pops at the back
//!   (depth-first); thieves steal from the front, i.e. the oldest and largest
//!   pieces.
//! * `fifo` — a FIFO queue for **independent** tasks (`spawn`). New tasks
//!   join its back; thieves steal batches from its front.
//! * `run_next` — one slot for the task most recently woken *by this worker*.
//!   It runs next, on this core, which keeps a message ping-pong between two
//!   tasks on one worker with warm caches. At most [`RUN_NEXT_BOUND`] tasks in
//!   a row come from this slot while other tasks are queued on this worker or
//!   in the injector; then the slot's task goes to the back of the FIFO so
//!   queued tasks get their turn (two tasks ping-ponging cannot monopolise a
//!   worker). Thieves cannot see the slot; a task that goes on computing after
//!   waking another hands the woken one to the FIFO (`share_run_next`), so that
//!   long-running tasks that met once (SPMD locations at a collective) do not
//!   stay on one worker while the others idle.
//!
//! * `low` — a FIFO for **low-priority** tasks, stolen in batches like `fifo`.
//!
//! `find_work` serves: the runtime's high-priority queue, then `run_next`, then
//! the own list and deque (newest first), then the own FIFO, then
//! the global injector, then other workers (deque first, then FIFO), and only
//! then low-priority tasks (the own low FIFO, the low injector, other workers'
//! low FIFOs). Every [`INJECTOR_INTERVAL`] calls the injector is looked at
//! before the own FIFO, so tasks injected from outside the runtime cannot be
//! starved by a worker that keeps feeding its own FIFO; the aging rules of
//! `priority.rs` ([`HIGH_BURST`], [`LOW_EVERY`]) do the same for priorities.

use std::cell::Cell;
use std::ptr;

use crossbeam_deque::{Steal, Worker};

use super::builder::IdleStrategy;
use super::job::JobRef;
use super::join::RECORDED_DEPTH;
use super::latch::CoreLatch;
use super::lazy::{LazyJobs, LazyNode};
use super::priority::{Priority, HIGH_BURST, LOW_EVERY};
use super::registry::{IdlePollers, Registry, ThreadInfo};
use std::sync::Arc;

/// Operations that complete at once (sends on unbounded channels) one poll of a task may
/// do before it yields: a task that never has to wait would otherwise keep its worker
/// for as long as it runs, and the tasks queued behind it (the receiver draining its
/// channel, say) would wait for all of it.
pub(crate) const TASK_BUDGET: u32 = 128;

/// Consecutive `run_next` turns before the slot yields to the FIFO.
pub(crate) const RUN_NEXT_BOUND: u32 = 32;
/// Every this many `find_work` calls the injector is checked first.
const INJECTOR_INTERVAL: u32 = 61;

/// An idle worker that does not park (spin and yield strategies) calls the idle hook
/// (`context.rs`) once every this many rounds; a parking one calls it before it parks.
const IDLE_HOOK_EVERY: u32 = 1024;

/// A worker spinning for the idle pollers' input calls them once every this many
/// idle rounds and only searches the queues in the others: a poll is a system call
/// (`epoll_wait` with a zero timeout for the I/O driver), a search a few loads.
/// Every round counts towards the spin budget, so the spin ends sooner.
const SPIN_POLL_EVERY: u32 = 8;

std::thread_local! {
    static CURRENT: Cell<*const WorkerThread> = const { Cell::new(ptr::null()) };
}

/// The per-thread half of a worker. Lives on the worker thread's stack for
/// the thread's whole life; `CURRENT` points at it meanwhile.
pub(crate) struct WorkerThread {
    /// `join` halves no other worker can see yet (`lazy.rs`).
    lazy: LazyJobs,
    /// Recording `join`s on this thread's stack (`join.rs`), whether their
    /// half is still recorded or not.
    recording: Cell<usize>,
    /// Whether other workers exist that could steal a promoted half.
    thieves: bool,
    deque: Worker<JobRef>,
    fifo: Worker<JobRef>,
    low: Worker<JobRef>,
    run_next: Cell<Option<JobRef>>,
    /// High-priority jobs taken in a row while the high queue never ran dry
    /// (bounded by [`HIGH_BURST`]).
    high_streak: Cell<u32>,
    run_next_streak: Cell<u32>,
    tick: Cell<u32>,
    /// How many task polls are on this thread's stack right now.
    task_depth: Cell<u32>,
    /// Operations that completed at once the task being polled may still do before it
    /// gives the worker back ([`WorkerThread::spend_budget`]).
    budget: Cell<u32>,
    /// Idle pollers: polls by this worker that moved nothing since traffic was
    /// last seen, and the pollers' move count when it was.
    quiet_polls: Cell<u32>,
    seen_moves: Cell<u64>,
    /// With an idle waiter: how many quiet polls to spin before blocking in
    /// it (adaptive, see `idle_round`).
    spin_budget: Cell<u32>,
    /// Idle rounds since this worker last ran a job ([`SPIN_POLL_EVERY`]).
    spin_rounds: Cell<u32>,
    /// This worker's last park held the poll turn of deaf engines
    /// (`IdlePollers`): its next idle round polls once and parks again.
    turn_park: Cell<bool>,
    /// This worker has parked since it last ran a job (only such a worker
    /// takes the poll turn over, `IdlePollers::take_handoff`).
    parked: Cell<bool>,
    rng: Cell<u64>,
    index: usize,
    registry: Arc<Registry>,
}

/// Counts one recording `join` on the worker's stack while it lives
/// ([`WorkerThread::enter_recording`]).
pub(crate) struct Recording<'w>(&'w Cell<usize>);

impl Drop for Recording<'_> {
    #[inline]
    fn drop(&mut self) {
        self.0.set(self.0.get() - 1);
    }
}

impl WorkerThread {
    /// The worker running on this thread, if any.
    ///
    /// The reference is valid for as long as code runs on this thread inside
    /// [`WorkerThread::run`], which covers every job; `WorkerThread` is not
    /// `Sync`, so the reference cannot travel to another thread.
    #[inline]
    pub(crate) fn current() -> Option<&'static WorkerThread> {
        let p = CURRENT.with(Cell::get);
        // SAFETY: non-null only between the set and the reset in `run`, while
        // the pointee is alive on this thread's stack (see above).
        unsafe { p.as_ref() }
    }

    /// The worker thread's body.
    pub(crate) fn run(
        registry: Arc<Registry>,
        index: usize,
        (deque, fifo, low): (Worker<JobRef>, Worker<JobRef>, Worker<JobRef>),
    ) {
        let worker = WorkerThread {
            lazy: LazyJobs::new(),
            recording: Cell::new(0),
            thieves: registry.num_workers() > 1,
            deque,
            fifo,
            low,
            run_next: Cell::new(None),
            high_streak: Cell::new(0),
            run_next_streak: Cell::new(0),
            tick: Cell::new(0),
            task_depth: Cell::new(0),
            budget: Cell::new(TASK_BUDGET),
            quiet_polls: Cell::new(u32::MAX / 2),
            seen_moves: Cell::new(0),
            spin_budget: Cell::new(IdlePollers::SPIN_POLLS),
            spin_rounds: Cell::new(0),
            turn_park: Cell::new(false),
            parked: Cell::new(false),
            rng: Cell::new(0x9E37_79B9_7F4A_7C15 ^ ((index as u64 + 1) << 17)),
            index,
            registry,
        };
        CURRENT.with(|c| c.set(&worker));
        // Clear the pointer even if something below unwinds.
        struct Reset;
        impl Drop for Reset {
            fn drop(&mut self) {
                CURRENT.with(|c| c.set(ptr::null()));
            }
        }
        let _reset = Reset;
        let terminate = &worker.registry.thread_infos[index].terminate;
        worker.wait_until(terminate);
        // Recursive work left in the own deque belongs to a scope that some
        // other frame is waiting for: finish it. Only independent tasks are
        // cancelled by a shutdown.
        while let Some(job) = worker.take_local_job() {
            worker.execute(job);
        }
        crate::diag::trace::poll_gap();
        worker.discard_local();
    }

    #[inline]
    pub(crate) fn index(&self) -> usize {
        self.index
    }

    #[inline]
    pub(crate) fn registry(&self) -> &Arc<Registry> {
        &self.registry
    }

    /// True while an async task is being polled on this thread.
    #[inline]
    pub(crate) fn in_task(&self) -> bool {
        self.task_depth.get() > 0
    }

    /// A task's poll starts; returns whether another task's poll is on the stack below.
    #[inline]
    pub(crate) fn enter_task(&self) -> bool {
        self.budget.set(TASK_BUDGET);
        let depth = self.task_depth.get();
        self.task_depth.set(depth + 1);
        depth > 0
    }

    /// The task being polled is about to do an operation that would complete at once
    /// (a send on an unbounded channel); returns true when it has done
    /// [`TASK_BUDGET`] of them in this poll and should give the worker back first.
    #[inline]
    pub(crate) fn spend_budget(&self) -> bool {
        if !self.in_task() {
            return false;
        }
        match self.budget.get() {
            0 => {
                self.budget.set(TASK_BUDGET);
                true
            }
            left => {
                self.budget.set(left - 1);
                false
            }
        }
    }

    #[inline]
    pub(crate) fn leave_task(&self) {
        self.task_depth.set(self.task_depth.get() - 1);
    }

    /// Pushes recursive work onto the own deque, where thieves see it.
    #[inline]
    pub(crate) fn push(&self, job: JobRef) {
        self.deque.push(job);
        self.registry.sleep.new_internal_jobs();
    }

    /// Whether a `join` starting now records its second half (`join.rs`):
    /// while fewer than [`RECORDED_DEPTH`] recording `join`s are on this
    /// thread's stack, or while another worker is idle (it may want one of
    /// the halves).
    #[inline(always)]
    pub(crate) fn records_join(&self) -> bool {
        self.recording.get() < RECORDED_DEPTH || (self.thieves && self.registry.sleep.any_idle())
    }

    /// A recording `join` starts; the returned guard counts it on this
    /// thread's stack until it returns or unwinds.
    #[inline]
    pub(crate) fn enter_recording(&self) -> Recording<'_> {
        self.recording.set(self.recording.get() + 1);
        Recording(&self.recording)
    }

    /// Records a `join`'s second half privately (`lazy.rs`); promotes the
    /// oldest private half if another worker is idle, so that it can steal.
    ///
    /// # Safety
    /// As [`LazyJobs::push`]: `node` stays put until it has left the list.
    #[inline]
    pub(crate) unsafe fn push_lazy(&self, node: &LazyNode) {
        // SAFETY: the caller's contract.
        unsafe { self.lazy.push(node) };
        if self.thieves && self.registry.sleep.any_idle() {
            self.promote_oldest();
        }
    }

    /// Takes a `join`'s half back if it is still private (then the caller runs
    /// it inline); `false` if it was promoted or already run.
    #[inline]
    pub(crate) fn take_lazy(&self, node: &LazyNode) -> bool {
        let taken = self.lazy.take_newest_if(node);
        // The first half may have run for long without a `join` of its own:
        // an idle worker may be waiting for the older halves.
        if self.thieves && self.registry.sleep.any_idle() {
            self.promote_oldest();
        }
        taken
    }

    /// Moves the oldest private half to the deque, where thieves take it.
    #[cold]
    fn promote_oldest(&self) {
        if let Some(job) = self.lazy.pop_oldest() {
            self.push(job);
        }
    }

    /// Pushes an independent task onto the back of the own FIFO.
    #[inline]
    pub(crate) fn push_fifo(&self, job: JobRef) {
        self.fifo.push(job);
        self.registry.sleep.new_internal_jobs();
    }

    /// Queues the job of a task of high or low priority, spawned or woken on
    /// this worker: a high one where every worker looks first, a low one at
    /// the back of the own low FIFO.
    #[cold]
    pub(crate) fn push_prioritized(&self, job: JobRef, priority: Priority) {
        match priority {
            Priority::Low => {
                self.low.push(job);
                self.registry.sleep.new_internal_jobs();
            }
            _ => self.registry.inject_with(job, priority),
        }
    }

    /// Makes `job` the next thing this worker runs; a task already in the
    /// slot moves to the back of the FIFO.
    #[inline]
    pub(crate) fn push_run_next(&self, job: JobRef) {
        if let Some(old) = self.run_next.replace(Some(job)) {
            self.push_fifo(old);
        }
    }

    /// Makes the job `make` returns the next thing this worker runs if the
    /// `run_next` slot is empty; returns whether it did (else nothing is made).
    #[inline]
    pub(crate) fn fill_run_next(&self, make: impl FnOnce() -> JobRef) -> bool {
        match self.run_next.take() {
            None => {
                self.run_next.set(Some(make()));
                true
            }
            queued => {
                self.run_next.set(queued);
                false
            }
        }
    }

    /// Hands the task waiting in the `run_next` slot to the other workers: it
    /// goes to the back of the FIFO, where thieves see it, and a parked worker
    /// is woken if nobody is searching. For a task that is about to keep this
    /// worker busy for long after waking another (see [`super::share_woken`]).
    #[inline]
    pub(crate) fn share_run_next(&self) {
        if let Some(job) = self.run_next.take() {
            self.push_fifo(job);
        }
    }

    /// Takes the newest recursive job of this worker: a private `join` half,
    /// else the back of the own deque (whose halves are older, `lazy.rs` L2).
    #[inline]
    pub(crate) fn take_local_job(&self) -> Option<JobRef> {
        match self.lazy.pop_newest() {
            Some(job) => Some(job),
            None => self.deque.pop(),
        }
    }

    /// Runs a job on this worker.
    #[inline]
    pub(crate) fn execute(&self, job: JobRef) {
        // SAFETY: every JobRef in our queues was popped or stolen exclusively,
        // so this is its one execution.
        unsafe { job.execute(self) }
    }

    #[inline]
    fn take_run_next(&self) -> Option<JobRef> {
        let job = self.run_next.take()?;
        let streak = self.run_next_streak.get() + 1;
        if streak <= RUN_NEXT_BOUND {
            self.run_next_streak.set(streak);
            return Some(job);
        }
        self.run_next_streak.set(0);
        if self.fifo.is_empty()
            && self.registry.injector.is_empty()
            && self.low.is_empty()
            && self.registry.low_injector.is_empty()
        {
            // Nothing queued here is waiting for a turn: demoting the task
            // would only hand a ping-pong pair to a thief and split it across
            // cores.
            return Some(job);
        }
        self.push_fifo(job);
        None
    }

    /// The next job for this worker, or `None` if no queue anywhere has one.
    #[inline]
    pub(crate) fn find_work(&self) -> Option<JobRef> {
        if !self.registry.high.is_empty() {
            if let Some(job) = self.take_high() {
                return Some(job);
            }
        } else if self.high_streak.get() != 0 {
            // The high queue ran dry: this search serves the other queues.
            self.high_streak.set(0);
        }
        if let Some(job) = self.take_run_next() {
            return Some(job);
        }
        self.run_next_streak.set(0);
        if let Some(job) = self.take_local_job() {
            return Some(job);
        }
        self.find_work_cold()
    }

    /// The oldest high-priority job, unless this worker has taken
    /// [`HIGH_BURST`] in a row: then `None` once, so that the search goes on to
    /// the other queues (`priority.rs`, aging).
    #[cold]
    fn take_high(&self) -> Option<JobRef> {
        let streak = self.high_streak.get();
        if streak >= HIGH_BURST {
            self.high_streak.set(0);
            return None;
        }
        let job = self.registry.steal_high()?;
        self.high_streak.set(streak + 1);
        Some(job)
    }

    #[cold]
    fn find_work_cold(&self) -> Option<JobRef> {
        // Beyond the own queues: the trace's open poll slice ends here.
        crate::diag::trace::poll_gap();
        let tick = self.tick.get().wrapping_add(1);
        self.tick.set(tick);
        if tick % LOW_EVERY == 0 {
            // Aging: a worker kept busy by normal tasks still runs low ones.
            if let Some(job) = self.take_low() {
                return Some(job);
            }
        }
        if tick % INJECTOR_INTERVAL == 0 {
            if let Some(job) = self.registry.steal_injected(&self.fifo) {
                return Some(job);
            }
        }
        if let Some(job) = self.fifo.pop() {
            return Some(job);
        }
        if let Some(job) = self.registry.steal_injected(&self.fifo) {
            return Some(job);
        }
        if let Some(job) = self.steal() {
            return Some(job);
        }
        self.take_low().or_else(|| self.steal_low())
    }

    /// A low-priority job from the own low FIFO, else a batch of them from the
    /// low injector.
    fn take_low(&self) -> Option<JobRef> {
        self.low
            .pop()
            .or_else(|| self.registry.steal_low_injected(&self.low))
    }

    /// Steals a batch of low-priority jobs from another worker's low FIFO.
    fn steal_low(&self) -> Option<JobRef> {
        self.steal_from_others(|victim| victim.low.steal_batch_and_pop(&self.low))
    }

    /// Tries `take` on every other worker, starting at a random victim, until
    /// one gives a job or a whole round finds them all empty (a `Retry` from
    /// any of them means another round).
    #[inline]
    fn steal_from_others(&self, take: impl Fn(&ThreadInfo) -> Steal<JobRef>) -> Option<JobRef> {
        let infos = &self.registry.thread_infos;
        let n = infos.len();
        if n <= 1 {
            return None;
        }
        let start = (self.next_random() % n as u64) as usize;
        loop {
            let mut retry = false;
            for i in (start..n).chain(0..start) {
                if i == self.index {
                    continue;
                }
                match take(&infos[i]) {
                    Steal::Success(job) => return Some(job),
                    Steal::Retry => retry = true,
                    Steal::Empty => {}
                }
            }
            if !retry {
                return None;
            }
        }
    }

    fn next_random(&self) -> u64 {
        // xorshift64*: cheap, and good enough to pick victims.
        let mut x = self.rng.get();
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.rng.set(x);
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Steals from other workers, starting at a random victim: first the
    /// oldest recursive job, then a batch of independent tasks.
    fn steal(&self) -> Option<JobRef> {
        self.steal_from_others(|victim| match victim.deque.steal() {
            Steal::Success(job) => Steal::Success(job),
            deque => match victim.fifo.steal_batch_and_pop(&self.fifo) {
                Steal::Empty if deque.is_retry() => Steal::Retry,
                fifo => fifo,
            },
        })
    }

    /// Executes other work until `latch` is set. This is how every blocking
    /// operation waits on a worker: the thread is never idle while anything
    /// runnable exists.
    #[inline]
    pub(crate) fn wait_until(&self, latch: &CoreLatch) {
        if !latch.probe() {
            self.wait_until_cold(latch);
        }
    }

    #[cold]
    fn wait_until_cold(&self, latch: &CoreLatch) {
        let sleep = &self.registry.sleep;
        let mut idle = false;
        let mut rounds = 0u32;
        while !latch.probe() {
            // An idle worker's search is announced, so that a job it takes is never
            // out of every queue while it still counts as idle (`Registry::all_idle`).
            if idle {
                self.registry.begin_idle_search();
            }
            // A timer due now wakes its task before the search, which then finds it
            // (first, when it is of high priority): `timer.rs`, "Busy workers fire due
            // timers too".
            super::timer::fire_due_here();
            let found = self.find_work();
            if idle {
                if found.is_some() {
                    sleep.stop_looking();
                    idle = false;
                }
                self.registry.end_idle_search();
            }
            if let Some(job) = found {
                rounds = 0;
                self.spin_rounds.set(0);
                if self.turn_park.replace(false) && self.registry.pollers.deaf() {
                    // Woken from the poll turn to run this: another parked
                    // worker takes the turn over meanwhile.
                    self.registry.pollers.hand_turn_over(sleep);
                }
                self.parked.set(false);
                self.execute(job);
                continue;
            }
            if !idle {
                sleep.start_looking();
                idle = true;
            }
            rounds = self.idle_round(rounds, latch);
        }
        if idle {
            sleep.stop_looking();
        }
    }

    /// One round of waiting without work, per the idle strategy. Returns the
    /// next round number.
    fn idle_round(&self, rounds: u32, latch: &CoreLatch) -> u32 {
        let pollers = &self.registry.pollers;
        let waiter = self.registry.sleep.has_waiter()
            && matches!(self.registry.idle, IdleStrategy::Park { .. });
        if pollers.active() && self.turn_park.replace(false) {
            // The poll turn's park ended: poll once; nothing came, so park
            // again at once, twice as long (no spin: the silence goes on).
            if pollers.poll() {
                // Input: another parked worker takes the turn while this
                // one runs what the poll woke.
                pollers.hand_turn_over(&self.registry.sleep);
                self.quiet_polls.set(0);
                return 0;
            }
            pollers.turn_was_quiet();
            return self.park(latch);
        }
        if self.parked.get() && pollers.active() && pollers.deaf() && pollers.take_handoff() {
            // Woken to take the poll turn over: park with it at once.
            return self.park(latch);
        }
        if pollers.active() {
            // With a waiter the spin adapts: input that arrives while this
            // worker spins doubles the next spin, a spin that runs out
            // halves it. On an idle machine a reply due within a round trip
            // is caught spinning; under load (replies slower than the spin)
            // the worker soon blocks at once and leaves the core to the
            // process it waits for, as a blocking socket read would.
            // An oversubscribed world caps the spin and the yields (see
            // `IdlePollers::set_budget`); by default the caps change nothing.
            let (spin_cap, yield_polls) = pollers.budget();
            let budget = if waiter {
                self.spin_budget.get()
            } else {
                IdlePollers::SPIN_POLLS
            }
            .min(spin_cap);
            // Between polls the round only searches the queues (the caller's
            // `find_work`); the last round of the spin always polls.
            let round = self.spin_rounds.get();
            self.spin_rounds.set(round.wrapping_add(1));
            if round % SPIN_POLL_EVERY != 0 {
                let quiet = self.quiet_polls.get().saturating_add(1);
                if quiet < budget {
                    self.quiet_polls.set(quiet);
                    crate::loom::spin_hint();
                    return 0;
                }
            }
            if pollers.poll() {
                if waiter && self.quiet_polls.get() < budget {
                    self.spin_budget.set(
                        (budget * 2).clamp(IdlePollers::MIN_SPIN_POLLS, IdlePollers::SPIN_POLLS),
                    );
                }
                self.quiet_polls.set(0);
                return 0;
            }
            // Recent traffic (ours or another worker's): keep polling.
            let moves = pollers.moves();
            if moves != self.seen_moves.get() {
                self.seen_moves.set(moves);
                self.quiet_polls.set(0);
            }
            let quiet = self.quiet_polls.get().saturating_add(1);
            self.quiet_polls.set(quiet);
            if quiet < budget {
                crate::loom::spin_hint();
                return 0;
            }
            if waiter {
                if quiet == budget {
                    self.spin_budget
                        .set((budget / 2).max(IdlePollers::MIN_SPIN_POLLS));
                }
                // Blocking in the waiter wakes as promptly as yielding and
                // costs nothing meanwhile (under load a yield can take a
                // whole time slice): no yields, no further spins.
                return self.park(latch);
            }
            if quiet < budget.saturating_add(yield_polls) {
                std::thread::yield_now();
                return 0;
            }
        }
        let (spins, yields, park) = match self.registry.idle {
            IdleStrategy::Spin => (u32::MAX, 0, false),
            IdleStrategy::Yield { spins } => (spins, u32::MAX, false),
            IdleStrategy::Park { spins, yields } => (spins, yields, true),
        };
        if rounds % IDLE_HOOK_EVERY == IDLE_HOOK_EVERY - 1 {
            // A request to look again is honoured when this worker parks.
            let _ = super::context::on_idle(&self.registry);
        }
        if rounds < spins {
            // Back off exponentially (up to 64 hints) between scans so that
            // spinning workers do not hammer the other workers' queues.
            for _ in 0..(1u32 << rounds.min(6)) {
                crate::loom::spin_hint();
            }
            return rounds.saturating_add(1);
        }
        if rounds - spins < yields {
            std::thread::yield_now();
            return rounds.saturating_add(1);
        }
        if park {
            return self.park(latch);
        }
        0
    }

    /// Parks this worker (the last step of an idle round), in the engine's
    /// waiter if it can claim it.
    fn park(&self, latch: &CoreLatch) -> u32 {
        let pollers = &self.registry.pollers;
        {
            let registry = &self.registry;
            let again = super::context::on_idle(registry);
            // The hook may have woken tasks onto this worker (the deadlock detector
            // cancelling a network's processes): they sit in its own queues, which a
            // parked worker does not look at, so run them before parking.
            if self.has_local_work() {
                return 0;
            }
            let sleep = &registry.sleep;
            // One parked worker blocks in the engine's waiter (its input
            // wakes it); the others need not wake to poll meanwhile. Engines
            // that cannot wake a worker are polled by the one parked worker
            // that holds the poll turn, on a backing-off timer
            // (`IdlePollers`).
            let active = pollers.active();
            let waiter = if active { sleep.claim_waiter() } else { None };
            let turn = if active && pollers.deaf() {
                pollers.claim_turn()
            } else {
                None
            };
            // A waiter registered but between two workers: poll soon.
            let between = active
                && !pollers.deaf()
                && sleep.has_waiter()
                && waiter.is_none()
                && !sleep.waiter_occupied();
            let poll = turn.or(between.then_some(IdlePollers::POLL_INTERVAL));
            let recheck = again.then_some(super::context::IDLE_RECHECK);
            let max = match (poll, recheck) {
                (Some(p), Some(r)) => Some(p.min(r)),
                (p, r) => p.or(r),
            };
            // Without the turn, a hand-over of it counts as work: this
            // worker must not park without a bound while nobody holds the
            // turn (`IdlePollers`, "The poll turn's hand-over").
            let turnless = turn.is_none() && pollers.deaf();
            sleep.sleep(self.index, latch, max, waiter, || {
                registry.has_visible_work() || (turnless && pollers.handoff_pending())
            });
            if waiter.is_some() {
                sleep.release_waiter();
            }
            if turn.is_some() {
                pollers.release_turn();
                self.turn_park.set(true);
            }
            self.parked.set(true);
        }
        0
    }

    /// Whether this worker's own queues hold work (its `run_next` slot included, which
    /// no other worker can see).
    pub(crate) fn has_local_work(&self) -> bool {
        // Peek: take and put back the slot (a `Cell`).
        let next = self.run_next.take();
        let has = next.is_some();
        self.run_next.set(next);
        has || !self.fifo.is_empty()
            || !self.low.is_empty()
            || !self.lazy.is_empty()
            || !self.deque.is_empty()
    }

    /// Drops whatever is left in this worker's queues at shutdown.
    /// Dropping a task's future may wake other tasks onto this worker, so
    /// repeat until the queues stay empty.
    fn discard_local(&self) {
        loop {
            let mut left = Vec::new();
            left.extend(self.run_next.take());
            while let Some(job) = self.fifo.pop().or_else(|| self.low.pop()) {
                left.push(job);
            }
            if left.is_empty() {
                return;
            }
            for job in left {
                // SAFETY: popped exclusively from our own queues: discarded once.
                unsafe { job.discard() };
            }
        }
    }
}
