//! Sleep and wake: how idle workers park and how new work wakes them
//! (Blip's starvation manager; the C task framework's `immediate`/`wait`/`notify`
//! message strategies map onto [`IdleStrategy`](super::IdleStrategy)).
//!
//! # State
//!
//! One atomic word, [`Counters`], packs two 16-bit counts:
//!
//! | bits   | field      | meaning                                                  |
//! |--------|------------|----------------------------------------------------------|
//! | 0..16  | `sleeping` | workers registered as parked (or about to park)         |
//! | 16..32 | `idle`     | workers in their idle loop, sleeping ones included       |
//!
//! `idle - sleeping` is the number of *searching* workers: awake, out of work,
//! and scanning every queue. Each worker also has a `blocked` flag behind its
//! own mutex and a condvar to park on.
//!
//! # Protocol
//!
//! A worker that finds no work increments `idle`, then searches for a bounded
//! number of rounds (spinning, then yielding). To park it:
//!
//! 1. locks its mutex and moves its latch `UNSET → SLEEPING` (if the latch it
//!    waits for was set meanwhile it stops here);
//! 2. increments `sleeping` (SeqCst RMW), then issues a SeqCst fence;
//! 3. scans every queue once more; if any holds work it undoes 1–2 and goes
//!    back to searching;
//! 4. sets `blocked` and waits on the condvar until `blocked` is cleared.
//!
//! A waker that wants worker `i` awake locks `i`'s mutex; if `blocked` is set
//! it clears it, decrements `sleeping` and notifies. The waker does the
//! decrement, so `sleeping` never counts a thread that has been told to wake.
//!
//! Publishing work:
//!
//! * **Injected** work (pushed by a thread that will not run it itself: the
//!   global injector, a timer, another runtime) is pushed, then a SeqCst
//!   fence, then `Counters` is read. If some worker is sleeping and none is
//!   searching, one sleeper is woken.
//! * **Internal** work (a worker's own deque, run-next slot or FIFO) does the
//!   same without the fence.
//!
//! # Why no wake-up is lost
//!
//! For injected work, call the push `P`, the publisher's fence `F1` and its
//! read of the counters `L`; for a parking worker, its increment `R`, its fence
//! `F2` and its final scan `H`. Both fences are in the single SeqCst order.
//! If `F1` precedes `F2`, then `H` (after `F2`) observes `P` (before `F1`): the
//! worker does not park. Otherwise `F2` precedes `F1`, so `L` observes `R`: the
//! publisher sees a sleeper. It then wakes one unless it saw a searching worker
//! `S`; but `S`'s own increment of `sleeping` was not yet visible to `L`, so
//! `L` precedes it in the SeqCst order, and by the first case `S`'s final scan
//! sees `P`. Either way somebody runs the work.
//!
//! For internal work the fence is skipped on purpose (it would cost a full
//! barrier per `join`): the publisher may miss a worker that is just parking.
//! That costs parallelism, never progress, because the publisher itself will
//! pop its own queues before it parks or returns — every blocking wait in the
//! runtime keeps executing its own worker's work. Rayon makes the same trade.
//!
//! Latch wake-ups (a stolen `join` half finishing, a `block_on` waker) go to a
//! specific worker and are described in `latch.rs`.
//!
//! # Idle waiters (the runtime's idle hook)
//!
//! An external engine that idle workers drive ([`IdlePollers`]) may also
//! offer an [`IdleWaiter`]: an OS primitive a parked worker can block on
//! instead of its condvar (a futex in shared memory, later an epoll set), so
//! that input from another process wakes a worker directly and the worker
//! that drains it runs the tasks it wakes, without a hand-off. At most one
//! worker blocks in the waiter at a time (`Sleep::claim_waiter`); the others
//! park as usual. The protocol is the one above with one change in step 4:
//! the worker sets `blocked` *and* `in_waiter` under its mutex, releases the
//! mutex and calls [`IdleWaiter::block`], passing a `stay` test that reads
//! `blocked` under the mutex. A waker that finds `blocked` set and
//! `in_waiter` set clears `blocked`, decrements `sleeping` and calls
//! [`IdleWaiter::unblock`] instead of notifying the condvar. The waiter arms
//! its wake-up before it calls `stay`, so either `stay` sees the cleared
//! flag (the worker does not block) or `unblock` comes after the arming and
//! ends the block. Returning for any other reason (input, timeout, a
//! spurious wake), the worker withdraws itself as a timed-out sleeper does.
//! `loom_tests::a_worker_blocked_in_the_waiter_is_woken` checks this.
//!
//! [`IdlePollers`]: super::registry::IdlePollers
//!
//! These protocols are model-checked with loom in `tests` below.

use std::time::Duration;

use super::latch::CoreLatch;
use crate::loom::{fence, lock, AtomicBool, AtomicU64, Condvar, Mutex, Ordering};

/// The longest a worker blocks in an [`IdleWaiter`] while no timer is armed
/// and the caller gives no bound: a safety net, not a polling interval (the
/// waiter's input and every runtime wake-up end the block; a timer bounds it,
/// see [`Sleep::sleep`]).
pub(crate) const WAITER_MAX: Duration = Duration::from_secs(30);

/// Most workers one runtime may have (16-bit fields in [`Counters`]).
pub(crate) const MAX_WORKERS: usize = 0x7fff;

const SLEEPING_ONE: u64 = 1;
const IDLE_ONE: u64 = 1 << 16;
const FIELD_MASK: u64 = 0xffff;

/// A snapshot of the packed counter word.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Counters(u64);

impl Counters {
    #[inline]
    pub(crate) fn sleeping(self) -> u64 {
        self.0 & FIELD_MASK
    }

    #[inline]
    pub(crate) fn idle(self) -> u64 {
        (self.0 >> 16) & FIELD_MASK
    }

    /// Awake idle workers that are scanning queues.
    #[inline]
    pub(crate) fn searching(self) -> u64 {
        self.idle() - self.sleeping()
    }

    /// Work just published might sit unseen: someone sleeps, nobody searches.
    #[inline]
    fn needs_wake(self) -> bool {
        self.sleeping() > 0 && self.searching() == 0
    }
}

/// The shared counter word with named transitions. Alone in its cache line:
/// every `join` reads it ([`Sleep::any_idle`]), so a write to a neighbour
/// must not evict it.
#[repr(align(128))]
struct CounterWord(AtomicU64);

impl CounterWord {
    #[inline]
    fn load(&self) -> Counters {
        Counters(self.0.load(Ordering::SeqCst))
    }
    #[inline]
    fn add_idle(&self) {
        self.0.fetch_add(IDLE_ONE, Ordering::SeqCst);
    }
    #[inline]
    fn sub_idle(&self) {
        self.0.fetch_sub(IDLE_ONE, Ordering::SeqCst);
    }
    #[inline]
    fn add_sleeping(&self) {
        self.0.fetch_add(SLEEPING_ONE, Ordering::SeqCst);
    }
    #[inline]
    fn sub_sleeping(&self) {
        self.0.fetch_sub(SLEEPING_ONE, Ordering::SeqCst);
    }
}

struct WorkerSleep {
    blocked: Mutex<bool>,
    /// Set (under `blocked`'s mutex) while the worker blocks in the
    /// [`IdleWaiter`] instead of on `cond`.
    in_waiter: AtomicBool,
    cond: Condvar,
}

/// An OS primitive an idle worker may block on instead of its condvar (see
/// "Idle waiters" in the module documentation). Contract:
///
/// * [`block`](Self::block)`(max, stay)` first arms its wake-up (so that an
///   [`unblock`](Self::unblock) or the engine's input from now on ends the
///   block), then calls `stay()` and returns at once if it is `false`;
///   otherwise it blocks until the engine may have input for its poller,
///   `unblock` is called, or `max` passes. Returning early is allowed.
/// * `unblock` ends a `block` in progress, or one about to block; it is
///   called with a worker's sleep lock held, from any thread, so it must not
///   block or call into the runtime.
/// * Neither drains the engine: the worker polls the runtime's pollers after
///   it returns. An engine registers its poller and its waiter together.
pub(crate) trait IdleWaiter: Send + Sync {
    /// Blocks until input, [`unblock`](Self::unblock), or `max`, unless
    /// `stay()` is false once the wake-up is armed.
    fn block(&self, max: Duration, stay: &dyn Fn() -> bool);
    /// Ends a [`block`](Self::block) in progress (or about to block).
    fn unblock(&self);
}

/// Sleep/wake state of one runtime.
pub(crate) struct Sleep {
    counters: CounterWord,
    workers: Box<[WorkerSleep]>,
    /// The engine's waiter, once one is registered.
    waiter: std::sync::OnceLock<std::sync::Arc<dyn IdleWaiter>>,
    /// A worker blocks in the waiter now.
    waiter_taken: AtomicBool,
}

impl Sleep {
    pub(crate) fn new(n: usize) -> Sleep {
        assert!(n <= MAX_WORKERS, "tutti: at most {MAX_WORKERS} workers");
        Sleep {
            counters: CounterWord(AtomicU64::new(0)),
            workers: (0..n)
                .map(|_| WorkerSleep {
                    blocked: Mutex::new(false),
                    in_waiter: AtomicBool::new(false),
                    cond: Condvar::new(),
                })
                .collect(),
            waiter: std::sync::OnceLock::new(),
            waiter_taken: AtomicBool::new(false),
        }
    }

    /// Registers the engine's waiter; `false` if one is registered already.
    pub(crate) fn set_waiter(&self, waiter: std::sync::Arc<dyn IdleWaiter>) -> bool {
        self.waiter.set(waiter).is_ok()
    }

    /// Whether a waiter is registered.
    pub(crate) fn has_waiter(&self) -> bool {
        self.waiter.get().is_some()
    }

    /// Whether a worker blocks in the waiter now (the engine's input then
    /// wakes it: the other parked workers need not poll).
    pub(crate) fn waiter_occupied(&self) -> bool {
        self.waiter_taken.load(Ordering::Relaxed)
    }

    /// The waiter, for the calling worker to block in, unless another
    /// worker blocks in it; give it back with [`Self::release_waiter`].
    pub(crate) fn claim_waiter(&self) -> Option<&dyn IdleWaiter> {
        let w = self.waiter.get()?;
        if self.waiter_taken.swap(true, Ordering::Acquire) {
            return None;
        }
        Some(&**w)
    }

    pub(crate) fn release_waiter(&self) {
        self.waiter_taken.store(false, Ordering::Release);
    }

    /// A snapshot of the counters.
    pub(crate) fn counters(&self) -> Counters {
        self.counters.load()
    }

    /// Some worker is idle (searching or parked): work that only the calling
    /// worker can see should be published. Read by every `join` that records a
    /// private half; a stale answer costs parallelism for one `join`, never
    /// progress (the caller runs what it keeps private itself).
    #[inline]
    pub(crate) fn any_idle(&self) -> bool {
        self.counters.0.load(Ordering::Relaxed) >> 16 & FIELD_MASK != 0
    }

    /// The calling worker ran out of work and starts searching.
    #[inline]
    pub(crate) fn start_looking(&self) {
        self.counters.add_idle();
    }

    /// The calling worker found work (or its latch) and leaves the idle loop.
    #[inline]
    pub(crate) fn stop_looking(&self) {
        self.counters.sub_idle();
    }

    /// Work was pushed to a queue that its publisher will drain itself.
    #[inline]
    pub(crate) fn new_internal_jobs(&self) {
        let c = self.counters.load();
        if c.needs_wake() {
            self.wake_any_cold();
        }
    }

    /// Work was pushed by a thread that will not run it (see module doc).
    #[inline]
    pub(crate) fn new_injected_jobs(&self) {
        // Pairs with the fence in `sleep`: see "Why no wake-up is lost".
        fence(Ordering::SeqCst);
        let c = self.counters.load();
        if c.needs_wake() {
            self.wake_any_cold();
        }
    }

    #[cold]
    fn wake_any_cold(&self) -> bool {
        for i in 0..self.workers.len() {
            if self.wake_specific_thread(i) {
                return true;
            }
        }
        false
    }

    /// Wakes one parked worker, if any is parked or about to park; true if
    /// one was. Whatever the caller stored before is seen by a worker that
    /// parks meanwhile (in its `has_work` look), or that worker is woken:
    /// the fence pairs with the one in [`Self::sleep`], as for injected work
    /// (the poll turn's hand-over, `registry::IdlePollers`).
    pub(crate) fn wake_one_sleeper(&self) -> bool {
        fence(Ordering::SeqCst);
        self.counters.load().sleeping() > 0 && self.wake_any_cold()
    }

    /// Wakes every parked worker (shutdown).
    pub(crate) fn wake_all(&self) {
        for i in 0..self.workers.len() {
            self.wake_specific_thread(i);
        }
    }

    /// Wakes worker `index` if it is parked; true if it was.
    pub(crate) fn wake_specific_thread(&self, index: usize) -> bool {
        let w = &self.workers[index];
        let mut blocked = lock(&w.blocked);
        if *blocked {
            *blocked = false;
            // The waker decrements, so a woken thread is never counted as
            // sleeping (see module doc).
            self.counters.sub_sleeping();
            if w.in_waiter.load(Ordering::Relaxed) {
                if let Some(waiter) = self.waiter.get() {
                    waiter.unblock();
                }
            } else {
                w.cond.notify_one();
            }
            true
        } else {
            false
        }
    }

    /// Parks worker `index` unless `latch` is set or `has_work` finds work.
    /// With `max` set the park ends after that long even without a wake-up
    /// (used by the bounded idle strategies, never by the default one).
    #[cold]
    ///
    /// With `waiter` (claimed with [`Self::claim_waiter`]) the worker blocks
    /// in it instead of on its condvar, for at most `max`, and at most until
    /// the earliest armed timer is due (`timer::until_next_due`: the worker
    /// then fires it itself, with no hop through the timer thread), else
    /// [`WAITER_MAX`].
    pub(crate) fn sleep(
        &self,
        index: usize,
        latch: &CoreLatch,
        max: Option<Duration>,
        waiter: Option<&dyn IdleWaiter>,
        has_work: impl Fn() -> bool,
    ) {
        let w = &self.workers[index];
        let mut blocked = lock(&w.blocked);
        if !latch.fall_asleep() {
            return;
        }
        self.counters.add_sleeping();
        // Pairs with the fence in `new_injected_jobs`.
        fence(Ordering::SeqCst);
        if has_work() {
            self.counters.sub_sleeping();
            latch.wake_up();
            return;
        }
        *blocked = true;
        if let Some(waiter) = waiter {
            w.in_waiter.store(true, Ordering::Relaxed);
            drop(blocked);
            let bound = match (max, super::timer::until_next_due()) {
                (Some(m), Some(t)) => m.min(t),
                (m, t) => m.or(t).unwrap_or(WAITER_MAX),
            };
            waiter.block(bound, &|| *lock(&w.blocked));
            let mut blocked = lock(&w.blocked);
            w.in_waiter.store(false, Ordering::Relaxed);
            if *blocked {
                // Input, a timeout or a spurious return: withdraw ourselves
                // exactly as a waker would.
                *blocked = false;
                self.counters.sub_sleeping();
            }
            drop(blocked);
            latch.wake_up();
            return;
        }
        match max {
            None => {
                while *blocked {
                    blocked = match w.cond.wait(blocked) {
                        Ok(g) => g,
                        Err(p) => p.into_inner(),
                    };
                }
            }
            Some(d) => {
                #[cfg(not(loom))]
                {
                    blocked = match w.cond.wait_timeout(blocked, d) {
                        Ok((g, _)) => g,
                        Err(p) => p.into_inner().0,
                    };
                }
                #[cfg(loom)]
                {
                    let _ = d;
                    blocked = match w.cond.wait(blocked) {
                        Ok(g) => g,
                        Err(p) => p.into_inner(),
                    };
                }
                if *blocked {
                    // Timed out: withdraw ourselves exactly as a waker would.
                    *blocked = false;
                    self.counters.sub_sleeping();
                }
            }
        }
        drop(blocked);
        latch.wake_up();
    }
}

#[cfg(all(test, loom))]
pub(super) mod loom_tests {
    use super::*;
    use crate::loom::{thread, Arc, AtomicBool};

    /// An injector racing a worker that is about to park: the job is either
    /// seen by the worker's final scan or the worker is woken.
    #[test]
    fn injected_work_is_never_lost() {
        injected_job_reaches_a_parking_worker(false);
    }

    /// An injector racing a worker that parks until a job appears, blocking
    /// in the engine's waiter when `waiter` (else on its own condvar): the job
    /// is seen or the worker woken, and no count of it is left behind.
    fn injected_job_reaches_a_parking_worker(waiter: bool) {
        loom::model(move || {
            let sleep = Arc::new(Sleep::new(1));
            if waiter {
                assert!(sleep.set_waiter(std::sync::Arc::new(TestWaiter::new())));
            }
            let job = Arc::new(AtomicBool::new(false));
            let latch = Arc::new(CoreLatch::new());

            let worker = {
                let (sleep, job, latch) = (sleep.clone(), job.clone(), latch.clone());
                thread::spawn(move || {
                    sleep.start_looking();
                    while !job.load(Ordering::Acquire) {
                        let w = sleep.claim_waiter();
                        assert_eq!(w.is_some(), waiter, "one worker: the waiter is free");
                        sleep.sleep(0, &latch, None, w, || job.load(Ordering::Acquire));
                        if waiter {
                            sleep.release_waiter();
                        }
                    }
                    sleep.stop_looking();
                })
            };
            job.store(true, Ordering::Release);
            sleep.new_injected_jobs();
            worker.join().unwrap();
            assert_eq!(sleep.counters().idle(), 0);
            assert_eq!(sleep.counters().sleeping(), 0);
        });
    }

    /// A latch set from another thread wakes its parked owner.
    #[test]
    fn latch_set_wakes_owner() {
        loom::model(|| {
            let sleep = Arc::new(Sleep::new(1));
            let latch = Arc::new(CoreLatch::new());
            let owner = {
                let (sleep, latch) = (sleep.clone(), latch.clone());
                thread::spawn(move || {
                    sleep.start_looking();
                    while !latch.probe() {
                        sleep.sleep(0, &latch, None, None, || false);
                    }
                    sleep.stop_looking();
                })
            };
            // SAFETY: the latch is kept alive by the Arc for the whole test.
            if unsafe { CoreLatch::set(&*latch) } {
                sleep.wake_specific_thread(0);
            }
            owner.join().unwrap();
            assert_eq!(sleep.counters().sleeping(), 0);
        });
    }

    /// Two workers, one job: the job runs exactly once and both workers end
    /// up parked or done; a second injection later wakes a sleeper.
    #[test]
    fn one_of_two_sleepers_is_woken() {
        // Three threads: bound preemptions to keep the state space tractable.
        let mut model = loom::model::Builder::new();
        model.preemption_bound = Some(3);
        model.check(|| {
            let sleep = Arc::new(Sleep::new(2));
            let jobs = Arc::new(crate::loom::AtomicUsize::new(0));
            let done = Arc::new(crate::loom::AtomicUsize::new(0));
            let stop = Arc::new([CoreLatch::new(), CoreLatch::new()]);
            let mut handles = Vec::new();
            for i in 0..2 {
                let (sleep, jobs, done, stop) =
                    (sleep.clone(), jobs.clone(), done.clone(), stop.clone());
                handles.push(thread::spawn(move || {
                    sleep.start_looking();
                    loop {
                        if stop[i].probe() {
                            break;
                        }
                        let n = jobs.load(Ordering::Acquire);
                        if n > 0
                            && jobs
                                .compare_exchange(n, n - 1, Ordering::AcqRel, Ordering::Relaxed)
                                .is_ok()
                        {
                            done.fetch_add(1, Ordering::AcqRel);
                            continue;
                        }
                        sleep.sleep(i, &stop[i], None, None, || jobs.load(Ordering::Acquire) > 0);
                    }
                    sleep.stop_looking();
                }));
            }
            jobs.fetch_add(1, Ordering::Release);
            sleep.new_injected_jobs();
            while done.load(Ordering::Acquire) == 0 {
                thread::yield_now();
            }
            for (i, l) in stop.iter().enumerate() {
                // SAFETY: the latches live in the Arc for the whole test.
                if unsafe { CoreLatch::set(l) } {
                    sleep.wake_specific_thread(i);
                }
            }
            for h in handles {
                h.join().unwrap();
            }
            assert_eq!(done.load(Ordering::Relaxed), 1);
        });
    }

    /// An engine waiter modelled on the shared-memory ring's futex: a word
    /// set while someone blocks, input published then the word checked.
    struct TestWaiter {
        input: AtomicBool,
        waiting: crate::loom::AtomicU32,
        futex: (Mutex<()>, Condvar),
    }

    impl TestWaiter {
        fn new() -> Self {
            TestWaiter {
                input: AtomicBool::new(false),
                waiting: crate::loom::AtomicU32::new(0),
                futex: (Mutex::new(()), Condvar::new()),
            }
        }

        /// The engine's input arrives (a producer's publish and wake).
        fn publish(&self) {
            self.input.store(true, Ordering::Release);
            fence(Ordering::SeqCst);
            if self.waiting.swap(0, Ordering::Relaxed) != 0 {
                let _g = lock(&self.futex.0);
                self.futex.1.notify_all();
            }
        }
    }

    impl IdleWaiter for TestWaiter {
        fn block(&self, _max: Duration, stay: &dyn Fn() -> bool) {
            self.waiting.store(1, Ordering::Relaxed);
            fence(Ordering::SeqCst);
            if self.input.load(Ordering::Acquire) || !stay() {
                self.waiting.store(0, Ordering::Relaxed);
                return;
            }
            // No timeout in the model: a lost wake-up blocks for ever.
            let mut g = lock(&self.futex.0);
            while self.waiting.load(Ordering::Relaxed) == 1 {
                g = self.futex.1.wait(g).unwrap();
            }
            drop(g);
            self.waiting.store(0, Ordering::Relaxed);
        }

        fn unblock(&self) {
            self.waiting.store(0, Ordering::Relaxed);
            let _g = lock(&self.futex.0);
            self.futex.1.notify_all();
        }
    }

    /// A worker about to block in the engine's waiter, racing an injected
    /// job: the runtime's wake-up (through `unblock`) is never lost.
    #[test]
    fn a_worker_blocked_in_the_waiter_is_woken() {
        injected_job_reaches_a_parking_worker(true);
    }

    /// A worker about to block in the engine's waiter, racing the engine's
    /// input: it sees the input or is woken by it, and leaves no count of
    /// itself as sleeping.
    #[test]
    fn engine_input_wakes_the_worker_in_the_waiter() {
        input_wakes_the_worker_in_the_waiter(
            TestWaiter::new,
            |w| w.input.load(Ordering::Acquire),
            TestWaiter::publish,
        );
    }

    /// The model of a worker blocking in a waiter (made by `make`) while
    /// another thread makes its input arrive (`publish`; `arrived` tells):
    /// the worker ends, and no count of it as sleeping is left. Shared by
    /// every idle waiter's model (the engine's here, the I/O driver's).
    pub(in crate::runtime) fn input_wakes_the_worker_in_the_waiter<W: IdleWaiter + 'static>(
        make: fn() -> W,
        arrived: fn(&W) -> bool,
        publish: fn(&W),
    ) {
        loom::model(move || {
            let sleep = Arc::new(Sleep::new(1));
            let waiter = std::sync::Arc::new(make());
            assert!(sleep.set_waiter(waiter.clone()));
            let latch = Arc::new(CoreLatch::new());
            let worker = {
                let (sleep, latch, waiter) = (sleep.clone(), latch.clone(), waiter.clone());
                thread::spawn(move || {
                    sleep.start_looking();
                    while !arrived(&waiter) {
                        let w = sleep.claim_waiter();
                        sleep.sleep(0, &latch, None, w, || false);
                        sleep.release_waiter();
                    }
                    sleep.stop_looking();
                })
            };
            publish(&waiter);
            worker.join().unwrap();
            assert_eq!(sleep.counters().sleeping(), 0);
        });
    }
}
