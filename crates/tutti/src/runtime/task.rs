//! Independent async tasks: `spawn`, `JoinHandle`, completion callbacks.
//!
//! Tasks are allocated by `async-task`; a `Runnable` travels through the
//! queues as a [`JobRef`]. Scheduling policy (Blip's fairness between
//! independent tasks, and delay/resubmit):
//!
//! * a new task goes to the back of the spawning worker's FIFO (or the global
//!   injector from outside the runtime);
//! * a task that returns `Pending` gives its worker back; whoever wakes it
//!   resubmits it: a worker of the same runtime puts it in its `run_next` slot
//!   (the ping-pong fast path, bounded: see `worker.rs`), a task that woke
//!   itself (`yield_now`) goes to the back of the FIFO, any other thread
//!   injects it.
//!
//! The future is wrapped so that a panic is caught and delivered to the
//! joiner, and so that completion callbacks run exactly once with the task's
//! [`Outcome`].
//!
//! # Completion callback protocol
//!
//! `TaskMeta::done` is one word that is either a small integer or a
//! pointer (callback nodes are 8-aligned, so the two never collide):
//!
//! | value | meaning |
//! |---|---|
//! | `0` (null) | running, no callbacks |
//! | a node pointer | running; a stack of callbacks, newest first |
//! | `DONE + outcome` (1..=3) | finished with that outcome; no callbacks left |
//!
//! The finishing task swaps in `DONE + outcome` and runs the stack it
//! displaced (oldest first). A registrar pushes its node with a
//! compare-exchange against a value that is null or a node; if it finds
//! `DONE + outcome` instead, it runs its callback itself. Every transition
//! is a read-modify-write of the one word, so each callback is either in
//! the stack the finisher displaced or sees `DONE`: it runs exactly once.
//! The word also answers `is_finished`, so a task needs no other flag.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::ptr::NonNull;
use std::task::{Context, Poll};

use async_task::{FallibleTask, Runnable, ScheduleInfo, WithInfo};

use super::job::{JobRef, JobVTable};
use super::registry::{with_current_registry, Registry};
use super::unwind::{halt_unwinding, payload_text, resume_unwinding, Payload};
use super::worker::WorkerThread;
use std::sync::Arc;

use super::task_set::TaskKey;
use crate::loom::{AtomicPtr, AtomicU64, Ordering};

/// How a task ended, as told to [`JoinHandle::on_finish`] callbacks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The future returned a value.
    Completed,
    /// The future panicked; the panic is re-raised at the joiner.
    Panicked,
    /// The task was dropped before completing: aborted, or its runtime shut
    /// down.
    Cancelled,
}

/// Why awaiting a task produced no value.
pub enum JoinError {
    /// The task panicked; the payload can be re-raised with
    /// [`std::panic::resume_unwind`].
    Panicked(Box<dyn std::any::Any + Send + 'static>),
    /// The task was aborted or its runtime shut down before it completed.
    Cancelled,
}

impl fmt::Debug for JoinError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            JoinError::Panicked(p) => write!(f, "Panicked({:?})", payload_text(p)),
            JoinError::Cancelled => f.write_str("Cancelled"),
        }
    }
}

impl fmt::Display for JoinError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            JoinError::Panicked(p) => write!(f, "task panicked: {}", payload_text(p)),
            JoinError::Cancelled => {
                f.write_str("task was cancelled (aborted, or its runtime shut down)")
            }
        }
    }
}

impl std::error::Error for JoinError {}

type Callback = Box<dyn FnOnce(Outcome) + Send + 'static>;

/// `DONE + outcome` is stored in `TaskMeta::done` once the task ended.
const DONE: usize = 1;

/// One registered callback in `TaskMeta::done`'s stack.
struct CallbackNode {
    callback: Callback,
    /// The node registered before this one (null at the bottom).
    next: *mut CallbackNode,
}

/// Per-task data kept in the task's header by async-task: three words.
pub(crate) struct TaskMeta {
    /// Null, a callback stack, or `DONE + outcome`; see the module doc.
    done: AtomicPtr<CallbackNode>,
    /// The runtime whose live-task set holds this task and whose queues it is
    /// scheduled on (none in loom tests).
    registry: Option<Arc<Registry>>,
    /// This task's key in that set; written before the task is first
    /// scheduled, so every poll sees it (the queue push/pop synchronises).
    key: AtomicU64,
}

// SAFETY: the callback nodes behind `done` are owned by the stack (moved in by
// one registrar, taken out by the finisher once); callbacks are `Send`.
unsafe impl Send for TaskMeta {}
// SAFETY: as above; all shared access goes through the atomic word.
unsafe impl Sync for TaskMeta {}

fn encode(o: Outcome) -> *mut CallbackNode {
    // A small integer, never dereferenced: nodes are aligned above it.
    (DONE + o as usize) as *mut CallbackNode
}

/// The outcome if `word` is `DONE + outcome`, else `None` (null or a node).
fn decode(word: *mut CallbackNode) -> Option<Outcome> {
    match (word as usize).wrapping_sub(DONE) {
        0 => Some(Outcome::Completed),
        1 => Some(Outcome::Panicked),
        2 => Some(Outcome::Cancelled),
        _ => None,
    }
}

impl TaskMeta {
    fn new(registry: Option<Arc<Registry>>) -> Self {
        TaskMeta {
            done: AtomicPtr::new(std::ptr::null_mut()),
            registry,
            key: AtomicU64::new(u64::MAX),
        }
    }

    /// Records the outcome, leaves the live-task set and runs the
    /// registered callbacks (once). Only the first call counts.
    fn finish(&self, outcome: Outcome) {
        if self.outcome().is_some() {
            return;
        }
        if let Some(r) = &self.registry {
            r.tasks
                .remove(TaskKey::from_raw(self.key.load(Ordering::Relaxed)));
        }
        // AcqRel: acquire the registrars' nodes (released by their CAS).
        let prev = self.done.swap(encode(outcome), Ordering::AcqRel);
        if !prev.is_null() && decode(prev).is_none() {
            finish_cold(prev, outcome);
        }
    }

    fn on_finish(&self, cb: Callback) {
        let node = Box::into_raw(Box::new(CallbackNode {
            callback: cb,
            next: std::ptr::null_mut(),
        }));
        let mut head = self.done.load(Ordering::Acquire);
        loop {
            if let Some(outcome) = decode(head) {
                // SAFETY: never shared: the push below did not happen.
                let node = unsafe { Box::from_raw(node) };
                run_callbacks(vec![node.callback], outcome);
                return;
            }
            // SAFETY: the node is still ours until the CAS succeeds.
            unsafe { (*node).next = head };
            // Release: the finisher that displaces this node sees it whole.
            match self
                .done
                .compare_exchange(head, node, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return,
                Err(now) => head = now,
            }
        }
    }

    fn outcome(&self) -> Option<Outcome> {
        decode(self.done.load(Ordering::Acquire))
    }
}

/// Runs the callback stack a finisher displaced, oldest first.
#[cold]
fn finish_cold(mut top: *mut CallbackNode, outcome: Outcome) {
    let mut callbacks = Vec::new();
    while !top.is_null() {
        // SAFETY: the finisher's swap made it the sole owner of the stack;
        // every node came from `Box::into_raw` in `on_finish`.
        let node = unsafe { Box::from_raw(top) };
        top = node.next;
        callbacks.push(node.callback);
    }
    callbacks.reverse();
    run_callbacks(callbacks, outcome);
}

fn run_callbacks(callbacks: Vec<Callback>, outcome: Outcome) {
    for cb in callbacks {
        if let Err(p) = halt_unwinding(|| cb(outcome)) {
            eprintln!(
                "tutti: a task completion callback panicked: {}",
                payload_text(&p)
            );
        }
    }
}

/// The user's future, with panic capture and completion reporting.
struct TaskFuture<'m, F> {
    fut: F,
    meta: &'m TaskMeta,
}

impl<F: Future> Future for TaskFuture<'_, F> {
    type Output = Result<F::Output, Payload>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // SAFETY: `fut` is structurally pinned: it is never moved out of
        // `self`, and `Drop` below does not move it.
        let this = unsafe { self.get_unchecked_mut() };
        // SAFETY: as above.
        let fut = unsafe { Pin::new_unchecked(&mut this.fut) };
        let result = match halt_unwinding(|| fut.poll(cx)) {
            Ok(Poll::Pending) => return Poll::Pending,
            Ok(Poll::Ready(v)) => Ok(v),
            Err(p) => Err(p),
        };
        this.meta.finish(if result.is_ok() {
            Outcome::Completed
        } else {
            Outcome::Panicked
        });
        Poll::Ready(result)
    }
}

impl<F> Drop for TaskFuture<'_, F> {
    fn drop(&mut self) {
        // A no-op if the future completed (`finish` counts the first call).
        self.meta.finish(Outcome::Cancelled);
    }
}

static TASK_VTABLE: JobVTable = JobVTable {
    execute: run_task,
    discard: discard_task,
};

fn task_job(runnable: Runnable<TaskMeta>) -> JobRef {
    // SAFETY: the pointer comes from `into_raw` and is turned back into a
    // Runnable exactly once, by `run_task` or `discard_task`.
    unsafe { JobRef::new(runnable.into_raw(), &TASK_VTABLE) }
}

unsafe fn run_task(ptr: NonNull<()>) {
    // SAFETY: `ptr` came from `Runnable::into_raw` in `task_job`.
    let runnable = unsafe { Runnable::<TaskMeta>::from_raw(ptr) };
    let worker = WorkerThread::current();
    if let Some(w) = worker {
        w.enter_task();
    }
    // A task nested inside another one's poll must not see its host's context.
    let host = super::context::replace_task_context(super::context::TaskContext::NONE);
    // The future's own panics are caught inside `TaskFuture`; this catches a
    // panic from a destructor run when the task completes.
    if let Err(p) = halt_unwinding(|| runnable.run()) {
        eprintln!("tutti: a task's destructor panicked: {}", payload_text(&p));
    }
    super::context::replace_task_context(host);
    if let Some(w) = worker {
        w.leave_task();
    }
}

unsafe fn discard_task(ptr: NonNull<()>) {
    // SAFETY: `ptr` came from `Runnable::into_raw` in `task_job`.
    drop(unsafe { Runnable::<TaskMeta>::from_raw(ptr) });
}

/// Where a woken task goes (see module doc). The runtime is the one in the
/// task's metadata; the schedule function itself is zero-sized, which also
/// spares async-task a reference-count round trip per wake-up.
fn schedule(runnable: Runnable<TaskMeta>, info: ScheduleInfo) {
    let Some(registry) = runnable.metadata().registry.as_ref() else {
        // Only the loom models make tasks without a runtime, and never run them.
        unreachable!("tutti: a task without a runtime was scheduled");
    };
    match WorkerThread::current() {
        Some(w) if Arc::ptr_eq(w.registry(), registry) => {
            // The worker holds the runtime; the task's metadata may be freed
            // as soon as the job is queued and is not touched after that.
            let job = task_job(runnable);
            if info.woken_while_running {
                w.push_fifo(job);
            } else {
                w.push_run_next(job);
            }
        }
        _ => {
            // Hold the runtime: once queued (or discarded, by a runtime that
            // shut down) the task and the reference in its metadata may go.
            let registry = Arc::clone(registry);
            registry.inject(task_job(runnable));
        }
    }
}

/// Spawns an independent task on the current runtime: the runtime of the
/// calling worker, the one entered with [`Runtime::block_on`](crate::Runtime::block_on),
/// or else the global runtime.
///
/// Await the returned handle for the task's value (a panic in the task is
/// re-raised there), or drop it to let the task run detached.
///
/// ```
/// let h = tutti::spawn(async { 6 * 7 });
/// assert_eq!(h.join(), 42);
/// ```
///
/// A task may move to another worker whenever it is woken, so its future must
/// be `Send`; holding an `Rc` does not compile:
///
/// ```compile_fail
/// let rc = std::rc::Rc::new(1);
/// let h = tutti::spawn(async move { *rc + 1 });
/// ```
pub fn spawn<F>(future: F) -> JoinHandle<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    with_current_registry(|r| spawn_on(r, future))
}

pub(crate) fn spawn_on<F>(registry: &Arc<Registry>, future: F) -> JoinHandle<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    let sched = WithInfo(schedule);
    // SAFETY: the future and its output are `Send + 'static`; the only
    // borrow is of the task's own metadata, which async-task keeps alive for
    // as long as the future exists; the schedule closure is `Send + Sync +
    // 'static` (a plain function). These are exactly the conditions of `spawn_unchecked`.
    let (runnable, task) = unsafe {
        async_task::Builder::new()
            .metadata(TaskMeta::new(Some(Arc::clone(registry))))
            .spawn_unchecked(move |meta| TaskFuture { fut: future, meta }, sched)
    };
    let meta = NonNull::from(task.metadata());
    let worker = WorkerThread::current().filter(|w| Arc::ptr_eq(w.registry(), registry));
    let shard = worker.map_or(0, |w| w.index() + 1);
    let key = registry.tasks.insert(shard, runnable.waker());
    task.metadata().key.store(key.into_raw(), Ordering::Relaxed);
    let job = task_job(runnable);
    match worker {
        Some(w) => w.push_fifo(job),
        None => registry.inject(job),
    }
    JoinHandle {
        task: Some(task.fallible()),
        meta,
        taken: false,
    }
}

/// An owned permission to await a spawned task.
///
/// Awaiting it yields the task's value and re-raises its panic. Dropping it
/// detaches the task, which keeps running. [`JoinHandle::join`] is the
/// blocking form for plain threads.
#[must_use = "dropping a JoinHandle detaches the task; await it or call .join()"]
pub struct JoinHandle<T> {
    /// `None` only inside `abort`/`drop`; kept after completion so that
    /// `meta` stays valid.
    task: Option<FallibleTask<Result<T, Payload>, TaskMeta>>,
    /// Points into the task's header, which `task` keeps allocated.
    meta: NonNull<TaskMeta>,
    /// The task's output has been taken.
    taken: bool,
}

// SAFETY: the handle owns a `FallibleTask` (Send when `T: Send`) and points
// at `TaskMeta`, which is `Sync`.
unsafe impl<T: Send> Send for JoinHandle<T> {}
// SAFETY: `&JoinHandle` only reads the metadata, which is `Sync`.
unsafe impl<T: Send> Sync for JoinHandle<T> {}

impl<T> JoinHandle<T> {
    fn meta(&self) -> &TaskMeta {
        // SAFETY: `task` keeps the task allocation, and with it the metadata,
        // alive; it is only taken by `abort` and `drop`, which consume the
        // handle.
        unsafe { self.meta.as_ref() }
    }

    /// True once the task has completed, panicked or been cancelled.
    ///
    /// ```
    /// let h = tutti::spawn(async {});
    /// while !h.is_finished() { std::thread::yield_now(); }
    /// ```
    pub fn is_finished(&self) -> bool {
        self.meta().outcome().is_some()
    }

    /// Runs `f` when the task ends (Blip's `appendOnFinish`), on the thread
    /// that finishes it, or right away if it already has. Callbacks run in
    /// registration order; a panicking callback is reported on stderr.
    ///
    /// ```
    /// use std::sync::mpsc;
    /// let (tx, rx) = mpsc::channel();
    /// let h = tutti::spawn(async { 1 });
    /// h.on_finish(move |outcome| tx.send(outcome).unwrap());
    /// assert_eq!(rx.recv().unwrap(), tutti::Outcome::Completed);
    /// ```
    pub fn on_finish(&self, f: impl FnOnce(Outcome) + Send + 'static) {
        self.meta().on_finish(Box::new(f));
    }

    /// Cancels the task: its future is dropped without completing (at once
    /// if it is not running, else when its current poll returns).
    ///
    /// ```
    /// let h = tutti::spawn(std::future::pending::<()>());
    /// let (tx, rx) = std::sync::mpsc::channel();
    /// h.on_finish(move |o| tx.send(o).unwrap());
    /// h.abort();
    /// assert_eq!(rx.recv().unwrap(), tutti::Outcome::Cancelled);
    /// ```
    pub fn abort(mut self) {
        // Dropping the task (instead of detaching it) cancels it.
        drop(self.task.take());
    }

    /// Polls for the task's result without re-raising a panic.
    pub fn poll_result(&mut self, cx: &mut Context<'_>) -> Poll<Result<T, JoinError>> {
        assert!(!self.taken, "tutti: JoinHandle polled after it completed");
        let task = self
            .task
            .as_mut()
            .expect("tutti: JoinHandle without a task");
        match Pin::new(task).poll(cx) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(out) => {
                self.taken = true;
                Poll::Ready(match out {
                    Some(Ok(v)) => Ok(v),
                    Some(Err(p)) => Err(JoinError::Panicked(p)),
                    None => Err(JoinError::Cancelled),
                })
            }
        }
    }

    /// A future for the task's result that reports a panic or cancellation
    /// as a [`JoinError`] instead of re-raising it.
    ///
    /// ```
    /// let h = tutti::spawn(async { panic!("boom") });
    /// let err = tutti::block_on(h.result()).unwrap_err();
    /// assert!(err.to_string().contains("boom"));
    /// ```
    pub fn result(self) -> TaskResult<T> {
        TaskResult { handle: self }
    }

    /// Blocks until the task ends and returns its value, re-raising its
    /// panic. On a worker thread it keeps executing other work meanwhile.
    ///
    /// # Panics
    /// If the task panicked (with its payload), if it was cancelled, or if
    /// called from inside an async task (use `.await` there).
    ///
    /// ```
    /// assert_eq!(tutti::spawn(async { "done" }).join(), "done");
    /// ```
    pub fn join(self) -> T {
        super::block_on::block_on(self)
    }
}

impl<T> Future for JoinHandle<T> {
    type Output = T;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T> {
        match self.poll_result(cx) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(Ok(v)) => Poll::Ready(v),
            Poll::Ready(Err(JoinError::Panicked(p))) => resume_unwinding(p),
            Poll::Ready(Err(JoinError::Cancelled)) => {
                panic!(
                    "tutti: awaited a task that was cancelled (aborted, or its runtime shut down)"
                )
            }
        }
    }
}

impl<T> Drop for JoinHandle<T> {
    fn drop(&mut self) {
        if let Some(task) = self.task.take() {
            if !self.taken {
                task.detach();
            }
        }
    }
}

impl<T> fmt::Debug for JoinHandle<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JoinHandle")
            .field("finished", &self.is_finished())
            .finish()
    }
}

/// The future returned by [`JoinHandle::result`].
#[must_use = "futures do nothing unless awaited"]
#[derive(Debug)]
pub struct TaskResult<T> {
    handle: JoinHandle<T>,
}

impl<T> Future for TaskResult<T> {
    type Output = Result<T, JoinError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.handle.poll_result(cx)
    }
}

/// Gives the worker back to the scheduler once: the current task goes to the
/// back of its worker's FIFO, so other queued tasks run first.
///
/// ```
/// tutti::block_on(async { tutti::runtime::yield_now().await });
/// ```
pub fn yield_now() -> YieldNow {
    YieldNow { yielded: false }
}

/// The future returned by [`yield_now`].
#[must_use = "futures do nothing unless awaited"]
#[derive(Debug)]
pub struct YieldNow {
    yielded: bool,
}

impl Future for YieldNow {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.yielded {
            return Poll::Ready(());
        }
        self.yielded = true;
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use crate::loom::{thread, AtomicUsize};

    /// A callback registered concurrently with completion runs exactly once.
    #[test]
    fn callback_runs_exactly_once() {
        loom::model(|| {
            let meta = crate::loom::Arc::new(TaskMeta::new(None));
            let ran = crate::loom::Arc::new(AtomicUsize::new(0));
            let t = {
                let meta = meta.clone();
                thread::spawn(move || meta.finish(Outcome::Completed))
            };
            let r = ran.clone();
            meta.on_finish(Box::new(move |o| {
                assert_eq!(o, Outcome::Completed);
                r.fetch_add(1, Ordering::Relaxed);
            }));
            t.join().unwrap();
            assert_eq!(ran.load(Ordering::Relaxed), 1);
        });
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::TaskMeta;

    /// Every task carries a `TaskMeta`; keep it to three words.
    #[test]
    fn task_meta_stays_small() {
        assert!(
            std::mem::size_of::<TaskMeta>() <= 24,
            "{}",
            std::mem::size_of::<TaskMeta>()
        );
    }
}
