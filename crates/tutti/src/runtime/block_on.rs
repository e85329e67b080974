//! `block_on`: drive a future to completion from synchronous code.
//!
//! # When it is safe to block
//!
//! * **On a plain thread** (not a worker): the thread parks between polls
//!   and is unparked by the future's waker. Always safe.
//! * **On a worker, outside an async task** (in a `join`/`scope` closure, a
//!   parallel loop body, or code run through [`Runtime::install`](crate::Runtime::install)):
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
use std::pin::pin;
use std::sync::{Arc, Arc as StdArc};
use std::task::{Context, Poll, Wake, Waker};
use std::thread::{self, Thread};

use super::latch::CoreLatch;
use super::registry::Registry;
use super::worker::WorkerThread;
use crate::loom::{AtomicBool, Ordering};

/// Runs `future` to completion on the calling thread and returns its output.
///
/// See the [module documentation](self) for when this may be called: from
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
        if let Poll::Ready(v) = future.as_mut().poll(&mut cx) {
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
        if let Poll::Ready(v) = future.as_mut().poll(&mut cx) {
            return v;
        }
        while !state.notified.swap(false, Ordering::Acquire) {
            thread::park();
        }
    }
}
