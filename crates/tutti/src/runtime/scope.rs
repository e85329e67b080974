//! `scope`: spawn any number of closures that may borrow from the enclosing
//! stack frame; the scope returns once all of them have finished.
//!
//! Each spawn is a boxed job on the spawning worker's deque (recursive work,
//! so depth-first locally and oldest-first for thieves). A counting latch
//! starts at one for the scope body; each spawn adds one and each finished
//! job (or the body) subtracts one. The worker that runs the scope body waits
//! for zero while executing other work.

use std::marker::PhantomData;

use super::job::HeapJob;
use super::latch::CountLatch;
use super::registry::{with_current_registry, Registry};
use super::unwind::{halt_unwinding, resume_unwinding, Payload};
use super::worker::WorkerThread;
use std::sync::Arc;

use crate::loom::Mutex;

/// A scope in which closures borrowing from the enclosing frame can be
/// spawned; see [`scope`].
pub struct Scope<'scope> {
    latch: CountLatch,
    registry: Arc<Registry>,
    /// The first panic of a spawned job, re-raised when the scope ends.
    panic: Mutex<Option<Payload>>,
    /// Invariant in `'scope`, like a `&'scope mut` would be.
    marker: PhantomData<fn(&'scope ()) -> &'scope ()>,
}

/// Creates a scope, runs `op` in it, and returns once `op` and every closure
/// spawned in the scope have finished.
///
/// A panic in `op` or in a spawned closure is re-raised after all of them
/// have finished (the first panic wins).
///
/// ```
/// let mut left = vec![3, 1, 2];
/// let mut right = vec![9, 7, 8];
/// tutti::scope(|s| {
///     s.spawn(|_| left.sort());
///     s.spawn(|_| right.sort());
/// });
/// assert_eq!(left, [1, 2, 3]);
/// assert_eq!(right, [7, 8, 9]);
/// ```
///
/// Spawned closures run concurrently with the scope body, so the borrow
/// checker refuses two of them mutating the same data:
///
/// ```compile_fail
/// let mut v = vec![1];
/// tutti::scope(|s| {
///     s.spawn(|_| v.push(2));
///     s.spawn(|_| v.push(3));
/// });
/// ```
pub fn scope<'scope, OP, R>(op: OP) -> R
where
    OP: FnOnce(&Scope<'scope>) -> R + Send,
    R: Send,
{
    match WorkerThread::current() {
        Some(w) => scope_on(w, op),
        None => with_current_registry(|r| r.in_worker(|w, _| scope_on(w, op))),
    }
}

/// `scope` on a known worker.
pub(crate) fn scope_on<'scope, OP, R>(worker: &WorkerThread, op: OP) -> R
where
    OP: FnOnce(&Scope<'scope>) -> R + Send,
    R: Send,
{
    let scope = Scope {
        latch: CountLatch::new(Arc::clone(worker.registry()), worker.index()),
        registry: Arc::clone(worker.registry()),
        panic: Mutex::new(None),
        marker: PhantomData,
    };
    let result = halt_unwinding(|| op(&scope));
    // The body counts as one job.
    // SAFETY: `scope` lives until the wait below returns.
    unsafe { CountLatch::decrement(&scope.latch) };
    worker.wait_until(&scope.latch.core);
    if let Some(p) = scope.take_panic() {
        resume_unwinding(p);
    }
    match result {
        Ok(r) => r,
        Err(p) => resume_unwinding(p),
    }
}

impl<'scope> Scope<'scope> {
    /// Spawns `body` into the scope. It may borrow anything that outlives
    /// the scope and may itself spawn more work into the same scope.
    ///
    /// ```
    /// use std::sync::Mutex;
    /// let count = Mutex::new(0);
    /// tutti::scope(|s| {
    ///     for _ in 0..10 {
    ///         s.spawn(|s| {
    ///             *count.lock().unwrap() += 1;
    ///             s.spawn(|_| *count.lock().unwrap() += 1);
    ///         });
    ///     }
    /// });
    /// assert_eq!(count.into_inner().unwrap(), 20);
    /// ```
    pub fn spawn<F>(&self, body: F)
    where
        F: FnOnce(&Scope<'scope>) + Send + 'scope,
    {
        self.latch.increment();
        let scope_ptr = ScopePtr(self as *const Scope<'scope>);
        let job = move || {
            let scope_ptr = scope_ptr;
            // SAFETY: the scope waits for this job's decrement before it
            // returns, so the pointer is valid for the whole job.
            let scope = unsafe { &*scope_ptr.0 };
            if let Err(p) = halt_unwinding(|| body(scope)) {
                scope.record_panic(p);
            }
            // SAFETY: valid on entry; the scope may be freed after this.
            unsafe { CountLatch::decrement(&scope.latch) };
        };
        // SAFETY: the job borrows only `'scope` data and the scope itself,
        // both of which outlive it because the scope waits for the job.
        let job_ref = unsafe { HeapJob::into_job_ref(job) };
        match WorkerThread::current() {
            Some(w) if Arc::ptr_eq(w.registry(), &self.registry) => w.push(job_ref),
            _ => self.registry.inject(job_ref),
        }
    }

    fn record_panic(&self, p: Payload) {
        let mut slot = crate::loom::lock(&self.panic);
        if slot.is_none() {
            *slot = Some(p);
        }
    }

    fn take_panic(&self) -> Option<Payload> {
        crate::loom::lock(&self.panic).take()
    }
}

/// A pointer to a scope that may cross threads with its job.
struct ScopePtr<'scope>(*const Scope<'scope>);

// SAFETY: `Scope` is `Sync` (all its fields are), so sending a pointer to it
// is like sending a shared reference; validity is argued at the use.
unsafe impl Send for ScopePtr<'_> {}
