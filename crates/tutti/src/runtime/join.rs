//! `join`: run two closures, potentially in parallel (recursive work).
//!
//! The outermost `join`s on a worker's stack — the first [`RECORDED_DEPTH`]
//! of them, counting those whose second half is running — **record** their
//! second half in the worker's private list (`lazy.rs`). Deeper `join`s run
//! `a` and then `b` right there and record nothing: a counter test, and while
//! the runtime has other workers a test of whether one of them is idle. While
//! one is, every `join` records, and each recording `join` promotes the
//! worker's oldest private half (the largest piece of work) to its deque,
//! where the idle worker steals it; a thief's own `join`s record the top of
//! the stolen subtree again.
//!
//! A recording `join` records `b`, runs `a`, then takes `b` back and runs it
//! inline: a few plain stores, a load and a compare when nobody wanted `b`. If
//! `b` was promoted (or run by a wait inside `a`), the caller takes it back
//! from its deque or, if a thief stole it, executes other work until `b`'s
//! latch is set. No heap allocation: `b` lives in this stack frame, which
//! cannot return before `b` has run.
//!
//! A `join` that did not record runs `b` after `a` even when `a` panics (then
//! `a`'s panic is the one re-raised). What it cannot do is let a wait inside
//! `a` run its `b`: a first half that blocks until its own second half ran
//! completes only when that `join` recorded it, as the outermost
//! [`RECORDED_DEPTH`] `join`s of a worker's stack always do.

use super::job::StackJob;
use super::latch::SpinLatch;
use super::lazy::LazyNode;
use super::registry::with_current_registry;
use super::unwind::{halt_unwinding, resume_unwinding, Payload};
use super::worker::WorkerThread;
use std::marker::PhantomData;
use std::mem::{self, ManuallyDrop};

/// How many recording `join`s a worker's stack holds before deeper `join`s
/// stop recording their second halves (unless another worker is idle). A
/// recursion splitting in two at every level records its top
/// `2^RECORDED_DEPTH − 1` `join`s and none below.
pub(crate) const RECORDED_DEPTH: usize = 8;

/// Runs `a` and `b`, potentially in parallel, and returns both results.
///
/// Called on a worker, `b` can be taken by an idle worker while the caller
/// runs `a` (the outermost `join`s of the worker's stack always record their
/// `b` for that; deeper ones only while a worker is idle, and otherwise cost
/// about two calls); called from any other thread, the whole `join` runs on
/// the current runtime (the global one unless inside
/// [`Runtime::block_on`](crate::runtime::Runtime::block_on)) and the caller
/// blocks until it is done.
///
/// If either closure panics, the panic is re-raised here after both have
/// finished (a panic of `a` wins over one of `b`).
///
/// If `a` blocks (a channel receive, a dataflow variable) until `b` has run,
/// the worker runs `b` itself while it waits, as long as this `join` is one
/// of the outermost eight on the worker's stack; deeper in a recursion, `b`
/// is not recorded and such an `a` waits until another worker or thread
/// does what it waits for.
///
/// ```
/// let v = vec![1, 2, 3, 4, 5, 6];
/// let (l, r) = v.split_at(3);
/// let (x, y) = tutti::join(|| l.iter().sum::<i32>(), || r.iter().sum::<i32>());
/// assert_eq!(x + y, 21);
/// ```
///
/// Both closures may run on other threads, so what they capture must be
/// `Send`:
///
/// ```compile_fail
/// let rc = std::rc::Rc::new(5);
/// let (a, b) = tutti::join(|| *rc, || 1);
/// ```
// Not inlined: a recursion through `join` then has the caller's small body
// (its base case, the call to `join`) inlined into the two halves here, one
// call per `join` instead of one per half.
#[inline(never)]
pub fn join<A, B, RA, RB>(a: A, b: B) -> (RA, RB)
where
    A: FnOnce() -> RA + Send,
    B: FnOnce() -> RB + Send,
    RA: Send,
    RB: Send,
{
    match WorkerThread::current() {
        Some(w) => join_on(w, a, b),
        None => with_current_registry(|r| r.in_worker(|w, _| join_on(w, a, b))),
    }
}

/// `join` for splitting work adaptively (the parallel iterators): each closure is told
/// whether it runs on a worker other than the one that called `join_context` — `b` was
/// stolen — which is the sign that other workers are idle and the work should be cut
/// finer. `a` always runs on the calling worker (`false`). Off the workers the whole
/// `join` first moves onto the current runtime, as [`join`] does.
#[inline]
pub(crate) fn join_context<A, B, RA, RB>(a: A, b: B) -> (RA, RB)
where
    A: FnOnce(bool) -> RA + Send,
    B: FnOnce(bool) -> RB + Send,
    RA: Send,
    RB: Send,
{
    let on = |w: &WorkerThread| {
        let owner = w.index();
        join_on(
            w,
            || a(false),
            move || b(WorkerThread::current().is_none_or(|w| w.index() != owner)),
        )
    };
    match WorkerThread::current() {
        Some(w) => on(w),
        None => with_current_registry(|r| r.in_worker(|w, _| on(w))),
    }
}

/// `join` on a known worker.
#[inline]
pub(crate) fn join_on<A, B, RA, RB>(worker: &WorkerThread, a: A, b: B) -> (RA, RB)
where
    A: FnOnce() -> RA + Send,
    B: FnOnce() -> RB + Send,
    RA: Send,
    RB: Send,
{
    if worker.records_join() {
        join_recorded(worker, a, b)
    } else {
        join_unrecorded(a, b)
    }
}

/// `a` then `b`, on this worker, with nothing recorded: `b` runs even if `a`
/// panics.
#[inline(always)]
fn join_unrecorded<A, B, RA, RB>(a: A, b: B) -> (RA, RB)
where
    A: FnOnce() -> RA,
    B: FnOnce() -> RB,
{
    let mut pending = RunOnUnwind(ManuallyDrop::new(b), PhantomData);
    let result_a = a();
    // SAFETY: taken once; `forget` keeps the guard's `drop` from taking it again.
    let b = unsafe { ManuallyDrop::take(&mut pending.0) };
    mem::forget(pending);
    (result_a, b())
}

/// Holds the second half of an unrecorded `join` while the first runs; dropped
/// only if the first half unwinds, and then runs it (catching its panic: the
/// first half's is the one re-raised).
struct RunOnUnwind<B: FnOnce() -> RB, RB>(ManuallyDrop<B>, PhantomData<fn() -> RB>);

impl<B: FnOnce() -> RB, RB> Drop for RunOnUnwind<B, RB> {
    #[cold]
    fn drop(&mut self) {
        // SAFETY: the guard is dropped at most once, and never after the
        // half was taken (`join_unrecorded` forgets it then).
        let b = unsafe { ManuallyDrop::take(&mut self.0) };
        // Its panic, if any, is dropped here: the first half's wins.
        let _ = halt_unwinding(b);
    }
}

/// A `join` that records `b` in the worker's private list (`lazy.rs`). Cold:
/// most `join`s of a recursion are deeper than [`RECORDED_DEPTH`], and the
/// unrecorded path is laid out as the fall-through one.
#[cold]
#[inline(never)]
fn join_recorded<A, B, RA, RB>(worker: &WorkerThread, a: A, b: B) -> (RA, RB)
where
    A: FnOnce() -> RA + Send,
    B: FnOnce() -> RB + Send,
    RA: Send,
    RB: Send,
{
    let _recording = worker.enter_recording();
    let job_b = StackJob::new(b, SpinLatch::new(worker.registry(), worker.index()));
    // SAFETY: `job_b` stays in this frame until it has run: below we either
    // take it back and run it inline or wait for its latch, and a panic of `a`
    // is caught so the frame cannot unwind before that.
    let job_b_ref = unsafe { job_b.as_job_ref() };
    let node = LazyNode::new(job_b_ref);
    // SAFETY: `node` stays in this frame, which does not return before the
    // node has left the list: `take_lazy` below takes it back or finds it gone
    // (`lazy.rs` L3), and a panic of `a` is caught.
    unsafe { worker.push_lazy(&node) };

    let result_a = match halt_unwinding(a) {
        Ok(r) => r,
        Err(p) => join_recover_from_panic(worker, &job_b.latch, p),
    };

    if worker.take_lazy(&node) || join_published(worker, &job_b, job_b_ref) {
        // Not seen by anybody else (still private, or taken back from the
        // deque): run it right here, no latch involved.
        return (result_a, job_b.run_inline());
    }
    (result_a, job_b.into_result())
}

/// The second half of a `join` left the private list: it was promoted to the
/// deque (perhaps stolen) or already run by a wait inside the first half.
/// Returns `true` if the caller took it back from the deque and must run it,
/// `false` once its latch is set. (`job_b` is borrowed, not moved: a thief may
/// be writing its result into this very frame.)
#[cold]
fn join_published<F, RB>(
    worker: &WorkerThread,
    job_b: &StackJob<SpinLatch<'_>, F, RB>,
    job_b_ref: super::job::JobRef,
) -> bool
where
    F: FnOnce() -> RB + Send,
    RB: Send,
{
    while !job_b.latch.probe() {
        match worker.take_local_job() {
            Some(job) if job == job_b_ref => return true,
            // Something pushed before `b` (b was stolen): run it meanwhile.
            Some(job) => worker.execute(job),
            None => {
                worker.wait_until(&job_b.latch.core);
                break;
            }
        }
    }
    false
}

/// `a` panicked: `b` may still be running on another worker and borrow this
/// frame, so wait for it before re-raising.
#[cold]
fn join_recover_from_panic(worker: &WorkerThread, latch: &SpinLatch<'_>, p: Payload) -> ! {
    worker.wait_until(&latch.core);
    resume_unwinding(p)
}
