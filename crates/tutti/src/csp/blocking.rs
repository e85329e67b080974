//! The blocking forms of channel and `Alt` operations.
//!
//! A blocking operation is its async form driven by [`runtime::block_on`]: on a worker
//! (outside an async task) the worker keeps executing other work while it waits; inside
//! an async task it panics (use `.await`). On a plain thread one refinement comes first:
//! the future is polled with a no-op waker and the thread spins briefly, re-polling only
//! once the future reports that a counterpart has decided it. A partner that answers
//! within a few microseconds (a ping-pong between two threads) is thus served without a
//! park/unpark pair or a waker allocation; otherwise `block_on` takes over, re-polling
//! with its real waker (the future swaps the waker in under its channel lock).
//!
//! On a *buffered* channel a plain thread first retries the non-blocking form with
//! exponential back-off ([`retry`]) before it queues at all. A producer that finds the
//! buffer full then lets the consumer drain a batch undisturbed, instead of queueing and
//! making the consumer hand over every slot one at a time under the lock (the two threads
//! would otherwise run in lock-step, one contended lock transfer per value). A rendezvous
//! channel skips this: there the partner can only find a party that is queued.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Wake, Waker};
use std::time::Instant;

use crate::runtime;

/// Exponential spin steps before yielding (`2^0 + … + 2^(YIELD_FROM-1)` spin hints).
const YIELD_FROM: u32 = 7;
/// Total spin/yield steps before parking.
const SPIN_STEPS: u32 = 10;

/// Futures that can tell, without being polled, that their next poll makes progress.
pub(crate) trait Settle {
    /// Whether a counterpart has decided this future since it last returned `Pending`.
    fn is_settled(&self) -> bool;
}

struct Noop;

impl Wake for Noop {
    fn wake(self: std::sync::Arc<Self>) {}
}

std::thread_local! {
    /// A per-thread no-op waker: cloning it touches no shared cache line.
    static NOOP: Waker = Waker::from(std::sync::Arc::new(Noop));
}

/// On a plain thread, retries `attempt` with exponential back-off while it hands its
/// input back (the operation would have to wait); `Err` with the input if it still would
/// after the back-off, or at once on a worker thread (which should wait by running other
/// work, not by spinning).
pub(crate) fn retry<T, R>(
    mut input: T,
    mut attempt: impl FnMut(T) -> Result<R, T>,
) -> Result<R, T> {
    if runtime::worker_index().is_some() {
        return Err(input);
    }
    for step in 0..SPIN_STEPS {
        match attempt(input) {
            Ok(r) => return Ok(r),
            Err(back) => input = back,
        }
        backoff(step);
    }
    Err(input)
}

/// Step `step` of the back-off: `2^step` spin hints, then yields.
#[inline]
fn backoff(step: u32) {
    if step < YIELD_FROM {
        for _ in 0..(1u32 << step) {
            crate::loom::spin_hint();
        }
    } else {
        std::thread::yield_now();
    }
}

/// Runs `future` to completion on the calling thread.
pub(crate) fn wait<F: Future + Settle>(mut future: Pin<&mut F>) -> F::Output {
    if runtime::worker_index().is_none() {
        if let Some(out) = spin(future.as_mut()) {
            return out;
        }
    }
    runtime::block_on(future)
}

/// Runs `future` until it completes or `deadline` passes (`None`; the caller then
/// cancels the future to recover its value).
pub(crate) fn wait_until<F: Future + Settle>(
    mut future: Pin<&mut F>,
    deadline: Instant,
) -> Option<F::Output> {
    if runtime::worker_index().is_none() && Instant::now() < deadline {
        if let Some(out) = spin(future.as_mut()) {
            return Some(out);
        }
    }
    runtime::block_on(runtime::timeout_at(deadline, future)).ok()
}

/// The plain-thread spin phase; `None` if the future is still pending afterwards.
#[cold]
fn spin<F: Future + Settle>(mut future: Pin<&mut F>) -> Option<F::Output> {
    NOOP.with(|waker| {
        let mut cx = Context::from_waker(waker);
        if let Poll::Ready(out) = future.as_mut().poll(&mut cx) {
            return Some(out);
        }
        for step in 0..SPIN_STEPS {
            backoff(step);
            if future.as_ref().get_ref().is_settled() {
                if let Poll::Ready(out) = future.as_mut().poll(&mut cx) {
                    return Some(out);
                }
            }
        }
        None
    })
}
