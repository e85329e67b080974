//! One process of a `par`: the user's future, wrapped so that its end — completion, panic
//! or cancellation — counts down the `par`'s [`Shared`] state.
//!
//! # The count-down protocol
//!
//! `Shared::remaining` (one `AtomicUsize`) counts processes not yet ended, plus one *hold*
//! kept by the `par` while it is still spawning (so that early finishers cannot complete
//! it before the last process exists). The `par` adds one per process before spawning it,
//! and drops the hold when done spawning. Each process subtracts one when it ends; whoever
//! takes the count to zero — the last process, or the `par` dropping its hold — *finishes*
//! it: it takes the `par`'s waker under `Shared::waker`'s lock and wakes it.
//!
//! The `par`'s poll reads `remaining` (`Acquire`); if it is not zero it stores its waker
//! under the lock and reads `remaining` again before returning `Pending`.
//!
//! **Invariant C1.** `remaining` reaches zero exactly once, after every process ended
//! (each subtracts exactly once: at its end, or in its `Drop` if cancelled).
//!
//! **No lost wake-up.** The finisher's decrement precedes its lock. If the poll's critical
//! section comes first, the finisher finds the waker; otherwise the poll acquires the lock
//! after the finisher released it, so its second read sees zero. **Visibility:** every
//! decrement is `AcqRel` in one release sequence, so the `par` reading zero with `Acquire`
//! sees everything every process did, including the panics recorded before decrementing.

use std::future::Future;
use std::mem::ManuallyDrop;
use std::pin::Pin;
use std::sync::OnceLock;
use std::task::{Context, Poll, Waker};

use super::Names;
use crate::csp::deadlock::{Member, Network};
use crate::csp::Arc;
use crate::loom::{lock, AtomicUsize, Mutex, Ordering};

/// A caught panic payload.
pub(crate) type Payload = Box<dyn std::any::Any + Send + 'static>;

/// How a process ended badly.
pub(crate) enum Failure {
    /// It panicked with this payload.
    Panicked(Payload),
    /// It was dropped before completing (its runtime shut down).
    Cancelled,
    /// The deadlock detector cancelled it (the root `par` reports the deadlock).
    Deadlocked,
}

/// What a `par` and its processes share.
pub(crate) struct Shared {
    /// See the module docs.
    remaining: AtomicUsize,
    /// The waker of the `par` awaiting the processes.
    waker: Mutex<Option<Waker>>,
    /// Processes that failed: (index, failure).
    failures: Mutex<Vec<(usize, Failure)>>,
    /// The network the processes belong to (`None`: deadlock detection off).
    pub(crate) net: Option<std::sync::Arc<Network>>,
    /// The process that runs this `par`, if it is one: its `par` and index (for names).
    pub(crate) parent: Option<(Arc<Shared>, usize)>,
    /// How the processes are named, once they have all been started.
    pub(crate) names: OnceLock<Names>,
}

impl Shared {
    /// Counts the `par`'s own hold.
    pub(crate) fn new(
        net: Option<std::sync::Arc<Network>>,
        parent: Option<(Arc<Shared>, usize)>,
    ) -> Shared {
        Shared {
            remaining: AtomicUsize::new(1),
            waker: Mutex::new(None),
            failures: Mutex::new(Vec::new()),
            net,
            parent,
            names: OnceLock::new(),
        }
    }

    /// Counts one more process (before it is spawned).
    #[inline]
    pub(crate) fn add(&self) {
        // Relaxed: the hold keeps the count above zero, and the spawn publishes the rest.
        self.remaining.fetch_add(1, Ordering::Relaxed);
    }

    /// One process ended, or the `par` dropped its hold.
    #[inline]
    pub(crate) fn done(&self) {
        if self.remaining.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.finish();
        }
    }

    #[cold]
    fn finish(&self) {
        let waker = lock(&self.waker).take();
        if let Some(w) = waker {
            w.wake();
        }
    }

    /// Whether every process has ended; otherwise registers `waker` to be woken when they
    /// have.
    pub(crate) fn poll_done(&self, waker: &Waker) -> bool {
        if self.remaining.load(Ordering::Acquire) == 0 {
            return true;
        }
        {
            let mut slot = lock(&self.waker);
            match &mut *slot {
                Some(w) if w.will_wake(waker) => {}
                slot => *slot = Some(waker.clone()),
            }
        }
        self.remaining.load(Ordering::Acquire) == 0
    }

    pub(crate) fn fail(&self, index: usize, failure: Failure) {
        lock(&self.failures).push((index, failure));
    }

    /// The failures, once every process has ended.
    pub(crate) fn take_failures(&self) -> Vec<(usize, Failure)> {
        std::mem::take(&mut *lock(&self.failures))
    }
}

/// A process of a `par`: its membership (which starts it, so that the deadlock detector
/// finds it at the start of the task's future; `member.rs`) and the user's future.
///
/// A process costs its future plus 32 bytes.
#[repr(C)]
pub(crate) struct Process<F> {
    member: Member,
    /// Dropped when the process is dropped, after it ended.
    future: ManuallyDrop<F>,
}

impl<F> Process<F> {
    pub(crate) fn new(future: F, shared: Arc<Shared>, index: usize) -> Self {
        Process {
            member: Member::new(shared, index),
            future: ManuallyDrop::new(future),
        }
    }

    /// The process ended: mark it (once) and count the `par` down.
    fn end(&self, failure: Option<Failure>) {
        if !self.member.end() {
            return;
        }
        let shared = self.member.par();
        if let Some(f) = failure {
            shared.fail(self.member.index(), f);
        }
        shared.done();
    }
}

impl<F: Future<Output = ()>> Future for Process<F> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        // SAFETY: `future` is structurally pinned — never moved out of `self`: it is only
        // polled in place or dropped in place — and `member` is pinned too (the detector
        // finds it by address while the task is live). `Process` is not `Unpin` unless
        // `F` is.
        let this = unsafe { self.get_unchecked_mut() };
        // SAFETY: as above; the future is dropped only with the process.
        let future = unsafe { Pin::new_unchecked(&mut *this.future) };
        let tracked = this.member.begin_poll();
        // A process's panic is caught here and re-raised by the `par` once all have ended.
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| future.poll(cx)));
        if tracked {
            this.member.end_poll(matches!(result, Ok(Poll::Pending)));
        }
        match result {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(())) => {
                this.end(None);
                Poll::Ready(())
            }
            Err(payload) => {
                this.end(Some(Failure::Panicked(payload)));
                Poll::Ready(())
            }
        }
    }
}

impl<F> Drop for Process<F> {
    fn drop(&mut self) {
        // Dropped before it ended: its task was cancelled — by the deadlock detector (the
        // network's report is set before it cancels), or by its runtime shutting down.
        // End it before the future goes (the future may hold what a detector looks at).
        let deadlocked = self
            .member
            .par()
            .net
            .as_deref()
            .is_some_and(|n| n.deadlock().is_some());
        self.end(Some(if deadlocked {
            Failure::Deadlocked
        } else {
            Failure::Cancelled
        }));
        // SAFETY: dropped once, in place (it is pinned), here.
        unsafe { ManuallyDrop::drop(&mut self.future) };
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use crate::loom::{thread, Condvar};
    use std::sync::Arc as StdArc;
    use std::task::Wake;

    struct Flag {
        woken: Mutex<bool>,
        cond: Condvar,
    }

    impl Wake for Flag {
        fn wake(self: StdArc<Self>) {
            *lock(&self.woken) = true;
            self.cond.notify_one();
        }
    }

    /// Two processes end while the `par` drops its hold and waits: it is woken exactly
    /// when both have ended (a lost wake-up would be a loom deadlock).
    #[test]
    fn count_down_wakes_the_par() {
        loom::model(|| {
            let shared = Arc::new(Shared::new(None, None));
            let ended = Arc::new(AtomicUsize::new(0));
            let mut threads = Vec::new();
            for _ in 0..2 {
                shared.add();
                let (shared, ended) = (shared.clone(), ended.clone());
                threads.push(thread::spawn(move || {
                    ended.fetch_add(1, Ordering::Relaxed);
                    shared.done();
                }));
            }
            shared.done(); // the hold
            let flag = StdArc::new(Flag {
                woken: Mutex::new(false),
                cond: Condvar::new(),
            });
            let waker = Waker::from(flag.clone());
            while !shared.poll_done(&waker) {
                let mut woken = lock(&flag.woken);
                while !*woken {
                    woken = flag.cond.wait(woken).unwrap();
                }
                *woken = false;
            }
            assert_eq!(ended.load(Ordering::Relaxed), 2);
            for t in threads {
                t.join().unwrap();
            }
        });
    }
}
