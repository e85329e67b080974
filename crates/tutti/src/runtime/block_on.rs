//! `block_on`: drive a future to completion from synchronous code.
//!
//! # When it is safe to block
//!
//! * **On a plain thread** (not a worker): the thread parks between polls
//!   and is unparked by the future's waker. Always safe.
//! * **On a worker, outside an async task** (in a `join`/`scope` closure, a
//!   parallel loop body, or code run through [`Runtime::install`](crate::runtime::Runtime::install)):
//!   the worker keeps executing other jobs and tasks while the future is
//!   pending, exactly like a `join` waiting for its stolen half. Safe, with
//!   one caveat shared by every help-while-waiting scheduler: waits nest like
//!   a stack. If a job run during the wait itself blocks, the outer wait can
//!   only finish after the inner one, so an inner wait that needs the outer
//!   one to finish first deadlocks.
//! * **Inside an async task** (anything reached from a spawned future's
//!   `poll`): not allowed. The task would hold its worker hostage and every
//!   task woken onto that worker's run-next slot would wait behind it. This is
//!   always a bug, so `block_on` panics at once with a message saying to use
//!   `.await`, instead of deadlocking later.

use std::future::Future;
use std::pin::{pin, Pin};
use std::sync::{Arc, Arc as StdArc};
use std::task::{Context, Poll, Wake, Waker};
use std::thread::{self, Thread};

use super::latch::CoreLatch;
use super::registry::Registry;
use super::worker::WorkerThread;
use crate::loom::{AtomicBool, Ordering};

/// Runs `future` to completion on the calling thread and returns its output.
///
/// See the [module documentation](crate::runtime) for when this may be called: from
/// any plain thread, and from a worker outside an async task (the worker keeps
/// executing other work meanwhile).
///
/// # Panics
/// When called from inside an async task (use `.await` there), or when the
/// future panics.
///
/// ```
/// let v = tutti::block_on(async { tutti::spawn(async { 21 }).await * 2 });
/// assert_eq!(v, 42);
/// ```
pub fn block_on<F: Future>(future: F) -> F::Output {
    match WorkerThread::current() {
        Some(w) => {
            if w.in_task() {
                block_on_in_task();
            }
            block_on_worker(w, future)
        }
        None => block_on_thread(future),
    }
}

#[cold]
#[track_caller]
fn block_on_in_task() -> ! {
    panic!(
        "tutti::block_on (or a blocking `join()`/`get()`) was called inside an async task; \
         blocking there would hold the worker hostage. Use `.await` instead."
    )
}

/// Wakes a worker that waits in `block_on` through its latch.
struct WorkerWake {
    latch: CoreLatch,
    registry: Arc<Registry>,
    index: usize,
}

impl Wake for WorkerWake {
    fn wake(self: StdArc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &StdArc<Self>) {
        // SAFETY: `self` is kept alive by the Arc for the whole call.
        if unsafe { CoreLatch::set(&self.latch) } {
            self.registry.sleep.wake_specific_thread(self.index);
        }
    }
}

/// One poll of a `block_on` future, a slice in the trace when one is recorded.
#[inline]
fn traced_poll<F: Future>(future: Pin<&mut F>, cx: &mut Context<'_>) -> Poll<F::Output> {
    let traced = crate::diag::trace::poll_begin();
    let r = future.poll(cx);
    crate::diag::trace::block_on_end(traced, std::any::type_name::<F>());
    r
}

fn block_on_worker<F: Future>(worker: &WorkerThread, future: F) -> F::Output {
    let state = StdArc::new(WorkerWake {
        latch: CoreLatch::new(),
        registry: Arc::clone(worker.registry()),
        index: worker.index(),
    });
    let waker = Waker::from(StdArc::clone(&state));
    let mut cx = Context::from_waker(&waker);
    let mut future = pin!(future);
    loop {
        // A wake that arrives during the poll sets the latch again, so the
        // wait below returns at once and we poll again.
        state.latch.reset();
        if let Poll::Ready(v) = traced_poll(future.as_mut(), &mut cx) {
            return v;
        }
        worker.wait_until(&state.latch);
    }
}

/// Unparks a plain thread waiting in `block_on`.
struct ThreadWake {
    thread: Thread,
    notified: AtomicBool,
}

impl Wake for ThreadWake {
    fn wake(self: StdArc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &StdArc<Self>) {
        // Release pairs with the Acquire swap of the waiting thread, so what
        // the waker wrote before waking is visible to the next poll.
        if !self.notified.swap(true, Ordering::Release) {
            self.thread.unpark();
        }
    }
}

fn block_on_thread<F: Future>(future: F) -> F::Output {
    // One waker per call (not per thread): nested `block_on`s on one thread
    // must not consume each other's notifications.
    let state = StdArc::new(ThreadWake {
        thread: thread::current(),
        notified: AtomicBool::new(false),
    });
    let waker = Waker::from(StdArc::clone(&state));
    let mut cx = Context::from_waker(&waker);
    let mut future = pin!(future);
    loop {
        if let Poll::Ready(v) = traced_poll(future.as_mut(), &mut cx) {
            return v;
        }
        if spin_until_notified(&state.notified) {
            continue;
        }
        while !state.notified.swap(false, Ordering::Acquire) {
            thread::park();
        }
    }
}

/// Adaptive spinning before a plain thread parks.
///
/// An answer from a worker (an actor's reply, a short task) often comes within
/// a microsecond or two, while parking and being unparked costs two system
/// calls and a trip through the OS scheduler (6–15 µs per round trip of
/// `ask_blocking`, measured by `tutti bench actor ask`). So a waiting thread
/// first watches its flag for a while. How long adapts per thread, like an
/// adaptive mutex: a spin that catches the wake-up doubles the next budget (up
/// to [`MAX_SPIN_NS`]), one that times out halves it, down to nothing; with no
/// budget, every [`PROBE_EVERY`]th wait tries a short spin again. On a machine
/// with more runnable threads than cores the spins keep timing out — the
/// spinner would take the core the answering worker needs — and the thread
/// just parks, which measured best there.
mod spin {
    use std::cell::Cell;

    /// The longest spin, in nanoseconds.
    pub(super) const MAX_SPIN_NS: u32 = 8_000;
    /// A probing spin, in nanoseconds.
    pub(super) const PROBE_NS: u32 = 1_000;
    /// With no budget, one wait in this many probes.
    pub(super) const PROBE_EVERY: u32 = 32;

    std::thread_local! {
        /// This thread's current budget (ns) and waits since the last probe.
        static BUDGET: Cell<(u32, u32)> = const { Cell::new((PROBE_NS, 0)) };
    }

    /// The budget for this wait (0: park at once).
    pub(super) fn budget() -> u32 {
        BUDGET
            .try_with(|b| {
                let (ns, waits) = b.get();
                if ns > 0 {
                    return ns;
                }
                if waits + 1 >= PROBE_EVERY {
                    b.set((0, 0));
                    PROBE_NS
                } else {
                    b.set((0, waits + 1));
                    0
                }
            })
            .unwrap_or(0)
    }

    /// Records whether a spin of `ns` caught its wake-up.
    pub(super) fn record(ns: u32, caught: bool) {
        let next = if caught {
            ns.saturating_mul(2).clamp(PROBE_NS, MAX_SPIN_NS)
        } else if ns / 2 < PROBE_NS {
            0
        } else {
            ns / 2
        };
        let _ = BUDGET.try_with(|b| b.set((next, 0)));
    }
}

/// Spins for this thread's budget; true (and the flag consumed) if the
/// wake-up came meanwhile.
fn spin_until_notified(notified: &AtomicBool) -> bool {
    if cfg!(loom) {
        return false;
    }
    let ns = spin::budget();
    if ns == 0 {
        return false;
    }
    let limit = std::time::Duration::from_nanos(u64::from(ns));
    let start = std::time::Instant::now();
    let caught = loop {
        // A plain load while waiting; the swap takes the flag (Acquire, as in
        // the park loop).
        if notified.load(Ordering::Relaxed) && notified.swap(false, Ordering::Acquire) {
            break true;
        }
        for _ in 0..16 {
            crate::loom::spin_hint();
        }
        if start.elapsed() >= limit {
            break false;
        }
    };
    spin::record(ns, caught);
    caught
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::spin::{budget, record, MAX_SPIN_NS, PROBE_EVERY, PROBE_NS};

    #[test]
    fn the_spin_budget_grows_when_spins_catch_and_fades_when_they_do_not() {
        // A fresh thread starts with a probe.
        std::thread::spawn(|| {
            assert_eq!(budget(), PROBE_NS);
            record(PROBE_NS, true);
            assert_eq!(budget(), 2 * PROBE_NS);
            for _ in 0..10 {
                let b = budget();
                record(b, true);
            }
            assert_eq!(budget(), MAX_SPIN_NS, "capped");
            let mut b = budget();
            while b > 0 {
                record(b, false);
                b = budget();
            }
            // Without a budget, one wait in PROBE_EVERY spins a little.
            let probes = (0..3 * PROBE_EVERY).filter(|_| budget() > 0).count();
            assert_eq!(probes, 3);
        })
        .join()
        .unwrap();
    }

    #[test]
    fn blocking_on_a_thread_sees_wakeups_during_and_after_the_spin() {
        for delay_us in [0, 5, 200] {
            let (tx, rx) = std::sync::mpsc::channel::<()>();
            let h = crate::runtime::spawn(async move {
                crate::runtime::sleep(std::time::Duration::from_micros(delay_us)).await;
                drop(tx);
                delay_us
            });
            assert_eq!(crate::runtime::block_on(h), delay_us);
            assert!(rx.recv().is_err());
        }
    }
}
