//! The private half of a worker's recursive work: `join` halves that no other
//! worker can see yet (lazy splitting).
//!
//! A `join` records its second half here instead of publishing it in the
//! worker's deque: a node in the `join`'s own stack frame, linked to the
//! previous newest node. Recording is three plain stores; taking the half back
//! after the first half returned is a load, a compare and a store — no atomic
//! operation, no fence, so a `join` that nobody steals costs about a function
//! call. A half becomes stealable only when the worker **promotes** it: unlinks
//! the oldest recorded half (the largest piece of work, nearest the root of the
//! recursion) and pushes it onto its deque, where thieves take it. The worker
//! promotes at its own `join`s whenever another worker of the runtime is idle
//! (`WorkerThread::push_lazy`, `WorkerThread::take_lazy`).
//!
//! # Invariants
//!
//! Only the owner thread touches the list (every field is a `Cell`; the
//! `WorkerThread` holding it is not `Sync`).
//!
//! * **L1** — the list links the recorded halves from the newest back to the
//!   oldest, in the reverse order their `join`s started; every node lies in the
//!   frame of a `join` that has not returned.
//! * **L2** — every half promoted to the deque is older than every half in the
//!   list: promotion takes the oldest, and a new half is younger than all. (The
//!   deque also takes `scope` spawns, which are not halves of any `join`.)
//! * **L3** — when a `join`'s first half returns, no half recorded after its own
//!   is still in the list: those belong to `join`s nested in the first half,
//!   which returned before it (each took its half back or saw it gone). So the
//!   `join`'s half is in the list iff its node is the newest
//!   ([`LazyJobs::take_newest_if`]); and a `join` never returns with its node
//!   still linked (L1).
//!
//! A half leaves the list in one of three ways: its `join` takes it back and
//! runs it inline; the owner promotes it; or the owner, blocked somewhere
//! inside the first half (a channel receive, a nested `join` whose half was
//! stolen), runs it from its wait loop, newest first, as it would run its own
//! deque's work. In the last two cases the `join` finds its half gone and
//! waits for the half's latch like any stolen half.
//!
//! Promotion walks the list from the newest node to the oldest. The list holds
//! only halves recorded since the last promotion, and while a worker is idle
//! every `join` promotes, so the walk stays short exactly when it is frequent.

use std::cell::Cell;
use std::ptr;

use super::job::JobRef;

/// One recorded half, in its `join`'s stack frame.
pub(crate) struct LazyNode {
    /// The next older node, or null for the oldest.
    prev: Cell<*const LazyNode>,
    job: JobRef,
}

impl LazyNode {
    #[inline]
    pub(crate) fn new(job: JobRef) -> LazyNode {
        LazyNode {
            prev: Cell::new(ptr::null()),
            job,
        }
    }
}

/// The list of private `join` halves of one worker.
pub(crate) struct LazyJobs {
    /// The newest node, or null when the list is empty.
    newest: Cell<*const LazyNode>,
}

impl LazyJobs {
    pub(crate) fn new() -> LazyJobs {
        LazyJobs {
            newest: Cell::new(ptr::null()),
        }
    }

    /// Records `node` as the newest half.
    ///
    /// # Safety
    /// `node` must stay where it is and alive until it has left the list:
    /// until [`take_newest_if`](Self::take_newest_if) returns `true` for it or
    /// it was returned by [`pop_newest`](Self::pop_newest) or
    /// [`pop_oldest`](Self::pop_oldest) (L1, L3: its `join` does not return
    /// before).
    #[inline]
    pub(crate) unsafe fn push(&self, node: &LazyNode) {
        node.prev.set(self.newest.get());
        self.newest.set(node);
    }

    /// Takes `node` back if it is the newest (L3: then it is still private);
    /// `false` if it is no longer in the list.
    #[inline]
    pub(crate) fn take_newest_if(&self, node: &LazyNode) -> bool {
        if !ptr::eq(self.newest.get(), node) {
            return false;
        }
        self.newest.set(node.prev.get());
        true
    }

    /// Takes the newest half, whoever's it is (the owner's wait loop).
    #[inline]
    pub(crate) fn pop_newest(&self) -> Option<JobRef> {
        // SAFETY: a linked node is alive (the contract of `push`).
        let newest = unsafe { self.newest.get().as_ref() }?;
        self.newest.set(newest.prev.get());
        Some(newest.job)
    }

    /// Takes the oldest half, to promote it.
    pub(crate) fn pop_oldest(&self) -> Option<JobRef> {
        // SAFETY: a linked node is alive (the contract of `push`).
        let mut oldest = unsafe { self.newest.get().as_ref() }?;
        let mut younger: Option<&LazyNode> = None;
        // SAFETY: as above: `prev` of a linked node is linked (or null).
        while let Some(prev) = unsafe { oldest.prev.get().as_ref() } {
            younger = Some(oldest);
            oldest = prev;
        }
        match younger {
            Some(y) => y.prev.set(ptr::null()),
            None => self.newest.set(ptr::null()),
        }
        Some(oldest.job)
    }

    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.newest.get().is_null()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::runtime::job::JobVTable;
    use std::ptr::NonNull;

    static VTABLE: JobVTable = JobVTable {
        execute: |_, _| {},
        discard: |_| {},
    };

    fn job(i: usize) -> JobRef {
        // SAFETY: these job references are only compared, never executed.
        unsafe { JobRef::new(NonNull::new(((i + 1) * 8) as *mut ()).unwrap(), &VTABLE) }
    }

    #[test]
    fn newest_comes_back_oldest_is_promoted() {
        let list = LazyJobs::new();
        let nodes: Vec<LazyNode> = (0..4).map(|i| LazyNode::new(job(i))).collect();
        for n in &nodes {
            // SAFETY: `nodes` outlives the list's use of them and does not move.
            unsafe { list.push(n) };
        }
        assert_eq!(list.pop_oldest(), Some(job(0)));
        assert!(!list.take_newest_if(&nodes[2]), "node 2 is not the newest");
        assert!(list.take_newest_if(&nodes[3]));
        assert_eq!(list.pop_oldest(), Some(job(1)));
        assert!(list.take_newest_if(&nodes[2]));
        assert!(
            !list.take_newest_if(&nodes[1]),
            "promoted: gone from the list"
        );
        assert!(list.is_empty());
        assert_eq!(list.pop_newest(), None);
        assert_eq!(list.pop_oldest(), None);
    }

    #[test]
    fn the_wait_loop_takes_the_newest() {
        let list = LazyJobs::new();
        let nodes: Vec<LazyNode> = (0..3).map(|i| LazyNode::new(job(i))).collect();
        for n in &nodes {
            // SAFETY: as above.
            unsafe { list.push(n) };
        }
        assert_eq!(list.pop_newest(), Some(job(2)));
        assert!(!list.take_newest_if(&nodes[2]), "run by the wait loop");
        assert_eq!(list.pop_oldest(), Some(job(0)));
        assert_eq!(list.pop_oldest(), Some(job(1)));
        assert!(list.is_empty());
    }
}

/// Lazy splitting against the sleep protocol: a worker runs two nested
/// `join`s while a second worker goes idle and parks. The owner promotes a
/// half only when it sees the other idle, publishes it as internal work
/// (`Sleep::new_internal_jobs`, no fence), takes it back from its deque or
/// waits for its latch (parking), and the thief steals, runs and sets the
/// latch. Checked: every half runs exactly once and neither worker is left
/// parked for ever (a lost wake-up deadlocks the model). The owner's steps
/// are those of `WorkerThread::{push_lazy, take_lazy, take_local_job}`,
/// `join_on` and `wait_until_cold`; the deque is a locked double-ended queue.
#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use crate::loom::{lock, thread, Arc, AtomicUsize, Mutex, Ordering};
    use crate::runtime::job::JobVTable;
    use crate::runtime::latch::CoreLatch;
    use crate::runtime::sleep::Sleep;
    use std::collections::VecDeque;
    use std::ptr::NonNull;

    const DEPTH: usize = 2;

    static VTABLE: JobVTable = JobVTable {
        execute: |_, _| {},
        discard: |_| {},
    };

    /// The job reference of the half of the `join` at `depth` (1-based).
    fn job(depth: usize) -> JobRef {
        // SAFETY: these job references are only compared, never executed.
        unsafe { JobRef::new(NonNull::new((depth * 8) as *mut ()).unwrap(), &VTABLE) }
    }

    fn depth_of(job: JobRef) -> usize {
        (1..=DEPTH).find(|&d| self::job(d) == job).unwrap()
    }

    struct Shared {
        sleep: Sleep,
        deque: Mutex<VecDeque<JobRef>>,
        /// The latch of each half (index: depth − 1), set by whoever runs it
        /// from a queue.
        latches: [CoreLatch; DEPTH],
        ran: [AtomicUsize; DEPTH],
        /// Ends the thief's loop.
        stop: CoreLatch,
    }

    impl Shared {
        /// Runs a half taken from a queue: as `StackJob::execute`, sets its
        /// latch and wakes the owner (worker 0) if it sleeps on it.
        fn execute(&self, job: JobRef) {
            let d = depth_of(job);
            self.ran[d - 1].fetch_add(1, Ordering::Relaxed);
            // SAFETY: the latch lives in `self` for the whole model.
            if unsafe { CoreLatch::set(&self.latches[d - 1]) } {
                self.sleep.wake_specific_thread(0);
            }
        }
    }

    struct Owner<'s> {
        s: &'s Shared,
        lazy: LazyJobs,
    }

    impl Owner<'_> {
        fn promote_if_idle(&self) {
            if self.s.sleep.any_idle() {
                if let Some(job) = self.lazy.pop_oldest() {
                    lock(&self.s.deque).push_back(job);
                    self.s.sleep.new_internal_jobs();
                }
            }
        }

        fn take_local_job(&self) -> Option<JobRef> {
            self.lazy
                .pop_newest()
                .or_else(|| lock(&self.s.deque).pop_back())
        }

        /// `join_on`, with a nested `join` as its first half down to depth 1.
        fn join(&self, depth: usize) {
            let node = LazyNode::new(job(depth));
            // SAFETY: `node` outlives its stay in the list: it is taken back
            // or found gone below, before this frame returns.
            unsafe { self.lazy.push(&node) };
            self.promote_if_idle();
            if depth > 1 {
                self.join(depth - 1);
            }
            let taken = self.lazy.take_newest_if(&node);
            self.promote_if_idle();
            if taken {
                self.s.ran[depth - 1].fetch_add(1, Ordering::Relaxed);
                return;
            }
            // `join_published`.
            let latch = &self.s.latches[depth - 1];
            while !latch.probe() {
                match self.take_local_job() {
                    Some(j) if j == job(depth) => {
                        self.s.ran[depth - 1].fetch_add(1, Ordering::Relaxed);
                        return;
                    }
                    Some(j) => self.s.execute(j),
                    None => {
                        self.wait_until(latch);
                        break;
                    }
                }
            }
        }

        /// `wait_until_cold` with the park strategy and no spinning.
        fn wait_until(&self, latch: &CoreLatch) {
            let sleep = &self.s.sleep;
            sleep.start_looking();
            while !latch.probe() {
                if let Some(j) = self.take_local_job() {
                    sleep.stop_looking();
                    self.s.execute(j);
                    sleep.start_looking();
                    continue;
                }
                sleep.sleep(0, latch, None, None, || !lock(&self.s.deque).is_empty());
            }
            sleep.stop_looking();
        }
    }

    #[test]
    fn promoted_halves_run_once_and_no_wake_up_is_lost() {
        let mut model = loom::model::Builder::new();
        model.preemption_bound = Some(3);
        model.check(|| {
            let s = Arc::new(Shared {
                sleep: Sleep::new(2),
                deque: Mutex::new(VecDeque::new()),
                latches: std::array::from_fn(|_| CoreLatch::new()),
                ran: std::array::from_fn(|_| AtomicUsize::new(0)),
                stop: CoreLatch::new(),
            });
            let thief = {
                let s = s.clone();
                thread::spawn(move || {
                    s.sleep.start_looking();
                    while !s.stop.probe() {
                        let stolen = lock(&s.deque).pop_front();
                        match stolen {
                            Some(job) => {
                                s.sleep.stop_looking();
                                s.execute(job);
                                s.sleep.start_looking();
                            }
                            None => s
                                .sleep
                                .sleep(1, &s.stop, None, None, || !lock(&s.deque).is_empty()),
                        }
                    }
                    s.sleep.stop_looking();
                })
            };
            let owner = Owner {
                s: &s,
                lazy: LazyJobs::new(),
            };
            owner.join(DEPTH);
            assert!(owner.lazy.is_empty());
            // SAFETY: the latch lives in `s` for the whole model.
            if unsafe { CoreLatch::set(&s.stop) } {
                s.sleep.wake_specific_thread(1);
            }
            thief.join().unwrap();
            for (d, ran) in s.ran.iter().enumerate() {
                assert_eq!(ran.load(Ordering::Relaxed), 1, "half {} ran once", d + 1);
            }
            assert_eq!(s.sleep.counters().idle(), 0);
            assert_eq!(s.sleep.counters().sleeping(), 0);
        });
    }
}
