//! Jobs: type-erased units of work that sit in the deques.
//!
//! A [`JobRef`] is two words: a pointer to the job's data and a pointer to a
//! static vtable that knows how to execute or discard it. Three kinds exist:
//!
//! * [`StackJob`]: the second half of a `join`, or a closure injected from a
//!   thread outside the runtime. It lives in the waiting thread's stack frame;
//!   the frame does not return before the job's latch is set, which is what
//!   makes the raw pointer valid.
//! * [`HeapJob`]: a `scope` spawn, boxed because the spawner does not wait.
//! * async tasks: a pointer to the task's header; the job owns the task's
//!   job reference (see `task/`).

use std::cell::UnsafeCell;
use std::ptr::NonNull;

use super::latch::Latch;
use super::unwind::{halt_unwinding, resume_unwinding, Payload};
use super::worker::WorkerThread;

/// How to run or throw away one kind of job.
pub(crate) struct JobVTable {
    /// Runs the job on the given worker (the one whose thread calls it). Called at
    /// most once per job.
    pub(crate) execute: unsafe fn(NonNull<()>, &WorkerThread),
    /// Drops the job without running it (runtime shutdown). Jobs that can
    /// never be pending at shutdown abort here.
    pub(crate) discard: unsafe fn(NonNull<()>),
}

/// A type-erased pointer to a job.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct JobRef {
    pointer: NonNull<()>,
    vtable: &'static JobVTable,
}

impl PartialEq for JobVTable {
    fn eq(&self, other: &Self) -> bool {
        std::ptr::eq(self, other)
    }
}
impl Eq for JobVTable {}
impl std::fmt::Debug for JobVTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("JobVTable")
    }
}

// SAFETY: a JobRef is only a pointer; every job kind that is turned into a
// JobRef is `Send` in the sense that its closure/future and result are `Send`
// (enforced by the bounds of `join`, `scope` and `spawn`).
unsafe impl Send for JobRef {}
// SAFETY: see `Send`; a JobRef is never dereferenced through a shared reference.
unsafe impl Sync for JobRef {}

impl JobRef {
    /// # Safety
    /// `pointer` must stay valid until the job is executed or discarded, and
    /// `vtable` must match the pointee's type.
    #[inline]
    pub(crate) unsafe fn new(pointer: NonNull<()>, vtable: &'static JobVTable) -> JobRef {
        JobRef { pointer, vtable }
    }

    /// Runs the job.
    ///
    /// # Safety
    /// Each job is executed or discarded exactly once.
    #[inline]
    pub(crate) unsafe fn execute(self, worker: &WorkerThread) {
        // SAFETY: the caller upholds exactly-once; validity comes from `new`.
        unsafe { (self.vtable.execute)(self.pointer, worker) }
    }

    /// Drops the job without running it.
    ///
    /// # Safety
    /// Each job is executed or discarded exactly once.
    pub(crate) unsafe fn discard(self) {
        // SAFETY: as for `execute`.
        unsafe { (self.vtable.discard)(self.pointer) }
    }
}

/// Outcome slot of a [`StackJob`].
enum JobResult<R> {
    None,
    Ok(R),
    Panic(Payload),
}

/// A job living in its waiter's stack frame, with a latch that the waiter
/// watches. After the latch is set the job's memory may be gone at once.
pub(crate) struct StackJob<L: Latch, F, R> {
    pub(crate) latch: L,
    func: UnsafeCell<Option<F>>,
    result: UnsafeCell<JobResult<R>>,
}

impl<L: Latch, F: FnOnce() -> R + Send, R: Send> StackJob<L, F, R> {
    pub(crate) fn new(func: F, latch: L) -> Self {
        StackJob {
            latch,
            func: UnsafeCell::new(Some(func)),
            result: UnsafeCell::new(JobResult::None),
        }
    }

    const VTABLE: JobVTable = JobVTable {
        execute: Self::execute,
        discard: Self::discard,
    };

    /// A reference to this job for the deques.
    ///
    /// # Safety
    /// The job must not move or be dropped before it has run (the caller
    /// waits on the latch, or runs the job inline after taking it back).
    #[inline]
    pub(crate) unsafe fn as_job_ref(&self) -> JobRef {
        let ptr = NonNull::from(self).cast::<()>();
        // SAFETY: the caller keeps `self` alive and pinned until it has run.
        unsafe { JobRef::new(ptr, &Self::VTABLE) }
    }

    unsafe fn execute(this: NonNull<()>, _worker: &WorkerThread) {
        // SAFETY: `this` came from `as_job_ref` on a live StackJob of this type.
        let this = unsafe { this.cast::<Self>().as_ref() };
        // SAFETY: only the single executor touches `func` and `result` before
        // the latch is set; the owner reads `result` only after the latch.
        let func = unsafe { (*this.func.get()).take() }.expect("tutti: stack job run twice");
        let result = match halt_unwinding(func) {
            Ok(r) => JobResult::Ok(r),
            Err(p) => JobResult::Panic(p),
        };
        // SAFETY: as above; the owner is not reading yet.
        unsafe { *this.result.get() = result };
        // SAFETY: `this` is valid until this call sets the latch; `set` does
        // not touch `this` after the store that releases the owner.
        unsafe { L::set(&this.latch) };
    }

    unsafe fn discard(_this: NonNull<()>) {
        // A stack job is always awaited by a live frame, so none can be left
        // in a queue when the workers stop.
        let _abort = AbortOnDiscard;
    }

    /// Runs the job on the current thread after taking it back from the
    /// deque or the private list; panics propagate directly.
    #[inline]
    pub(crate) fn run_inline(self) -> R {
        // SAFETY: the job was taken back before anybody else could execute
        // it, so only this thread touches `func`.
        let func = unsafe { (*self.func.get()).take() };
        // Nothing is left to drop: `func` is taken and `result` was never
        // written (only an executor writes it). Forgetting the job spares
        // the drop code of both on the hot path of `join`.
        std::mem::forget(self);
        match func {
            Some(func) => func(),
            None => run_twice(),
        }
    }

    /// The result after the latch was observed set; re-raises a panic.
    pub(crate) fn into_result(self) -> R {
        match self.result.into_inner() {
            JobResult::Ok(r) => r,
            JobResult::Panic(p) => resume_unwinding(p),
            JobResult::None => {
                let _abort =
                    super::unwind::AbortIfPanic("a stack job's latch was set without a result");
                panic!("stack job finished without result");
            }
        }
    }
}

#[cold]
fn run_twice() -> ! {
    panic!("tutti: stack job run twice")
}

struct AbortOnDiscard;
impl Drop for AbortOnDiscard {
    fn drop(&mut self) {
        eprintln!("tutti: fatal: a join job was still queued when its runtime stopped");
        std::process::abort();
    }
}

/// A boxed job that nobody waits for directly (scope spawns). The closure is
/// responsible for its own completion signalling and panic handling.
pub(crate) struct HeapJob<F> {
    func: F,
}

impl<F: FnOnce() + Send> HeapJob<F> {
    const VTABLE: JobVTable = JobVTable {
        execute: Self::execute,
        discard: Self::discard,
    };

    /// Boxes `func` and returns a reference for the deques. The box is freed
    /// when the job runs.
    ///
    /// # Safety
    /// Whatever `func` borrows must outlive its execution (the scope waits).
    pub(crate) unsafe fn into_job_ref(func: F) -> JobRef {
        let ptr = Box::into_raw(Box::new(HeapJob { func }));
        // SAFETY: `Box::into_raw` never returns null.
        let ptr = unsafe { NonNull::new_unchecked(ptr) }.cast::<()>();
        // SAFETY: the box stays allocated until `execute` or `discard`.
        unsafe { JobRef::new(ptr, &Self::VTABLE) }
    }

    unsafe fn execute(this: NonNull<()>, _worker: &WorkerThread) {
        // SAFETY: `this` came from `into_job_ref` and is consumed once.
        let job = unsafe { Box::from_raw(this.cast::<Self>().as_ptr()) };
        (job.func)();
    }

    unsafe fn discard(this: NonNull<()>) {
        // Scopes wait for their jobs, so none is pending at shutdown; if one
        // ever is, dropping the closure unrun is the only sound choice.
        // SAFETY: `this` came from `into_job_ref` and is consumed once.
        drop(unsafe { Box::from_raw(this.cast::<Self>().as_ptr()) });
    }
}
