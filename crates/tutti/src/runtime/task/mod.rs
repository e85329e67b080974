//! Independent async tasks: `spawn`, `JoinHandle`, completion callbacks.
//!
//! A task is one allocation: a five-word header (`raw.rs`) and the future, replaced by
//! its output once it completes. The header's state word (`state.rs`) carries the
//! task's life cycle, its reference count and the runtime and live-list shard it belongs
//! to; the join word (`join.rs`) its awaiters and callbacks; two links put it on its
//! runtime's live list (`live.rs`), which shutdown uses to cancel parked tasks.
//!
//! Scheduling policy (Blip's fairness between independent tasks, and delay/resubmit):
//!
//! * a new task goes to the back of the spawning worker's FIFO (or the global injector
//!   from outside the runtime); a task of high or low priority goes to the queues of its
//!   priority instead, on spawn and on every wake-up (`runtime/priority.rs`);
//! * a task that returns `Pending` gives its worker back; whoever wakes it resubmits it:
//!   a worker of the same runtime puts it in its `run_next` slot (the ping-pong fast
//!   path, bounded: see `worker.rs`), a task that woke itself (`yield_now`) goes to the
//!   back of the FIFO, any other thread injects it.
//!
//! A panic in the future is caught and delivered to the joiner; a panic while dropping
//! the future or its output is reported on stderr. Completion callbacks run exactly once
//! with the task's [`Outcome`].

mod compact;
mod join;
mod live;
mod name;
mod raw;
mod state;

#[cfg(all(test, loom))]
mod loom_tests;

use std::borrow::Cow;
use std::future::Future;
use std::pin::Pin;
use std::ptr::NonNull;
use std::sync::Arc;
use std::task::{Context, Poll};

use super::context::{self, TaskContext};
use super::job::{JobRef, JobVTable};
use super::priority::Priority;
use super::registry::{with_current_registry, Registry};
use super::worker::WorkerThread;

pub(crate) use compact::CompactWaker;
pub use join::{JoinError, JoinHandle, Outcome, TaskResult};
pub(crate) use live::{LiveTasks, Tagged};
use raw::NameSlot;
pub(crate) use raw::RawTask;
/// The bytes every task allocation starts with (its header), for the memory tests.
#[cfg(test)]
pub(crate) const HEADER_BYTES: usize = std::mem::size_of::<raw::Header>();
pub(crate) use state::RUNTIME_BITS;

static TASK_JOB: JobVTable = JobVTable {
    execute: run_task,
    discard: discard_task,
};

/// The job that runs (or discards) `task`; it owns the task's job reference.
fn task_job(task: RawTask) -> JobRef {
    // SAFETY: the pointer is a task header; the job is run or discarded exactly once
    // (the queues hand each job to one taker), which is what the job reference allows.
    unsafe { JobRef::new(task.as_ptr(), &TASK_JOB) }
}

unsafe fn run_task(ptr: NonNull<()>, worker: &WorkerThread) {
    // A task run while another task's poll is on this stack (a worker helping inside a
    // `join`) must not see its host's task context; at the top level it is empty already.
    let nested = worker.enter_task();
    let host = nested.then(|| context::replace_task_context(TaskContext::NONE));
    // SAFETY: `ptr` came from `task_job`, and this is the job's one execution.
    unsafe { RawTask::from_ptr(ptr).run() };
    if let Some(host) = host {
        context::replace_task_context(host);
    }
    worker.leave_task();
}

unsafe fn discard_task(ptr: NonNull<()>) {
    // SAFETY: `ptr` came from `task_job`, and the job is discarded instead of run.
    unsafe { RawTask::from_ptr(ptr).discard() };
}

/// Queues the job of `task`, whose state word just became `state` with `SCHEDULED` set
/// (the job owns a reference). `yielded`: the task woke itself while running.
///
/// The usual case inline: a task of normal priority woken on a worker of its runtime
/// whose `run_next` slot is empty (a rendezvous waking its partner) goes into the slot;
/// everything else is [`schedule_queued`]'s.
#[inline]
fn schedule(task: RawTask, state: state::State, yielded: bool) {
    #[cfg(not(loom))]
    if !yielded && state.priority() == Priority::Normal {
        if let Some(w) = WorkerThread::current() {
            if w.registry().id() == state.runtime() && w.fill_run_next(|| task_job(task)) {
                return;
            }
        }
    }
    schedule_queued(task, state, yielded);
}

/// [`schedule`] past its inline case.
#[inline(never)]
fn schedule_queued(task: RawTask, state: state::State, yielded: bool) {
    let runtime = state.runtime();
    #[cfg(loom)]
    if runtime == 0 {
        loom_queue::push(task);
        return;
    }
    let job = task_job(task);
    let priority = state.priority();
    match WorkerThread::current() {
        Some(w) if w.registry().id() == runtime => {
            if priority != Priority::Normal {
                w.push_prioritized(job, priority);
            } else if yielded {
                w.push_fifo(job);
            } else {
                w.push_run_next(job);
            }
        }
        _ => schedule_remote(job, runtime, priority),
    }
}

/// Injects a job into its runtime from a thread that is not one of its workers.
#[cold]
fn schedule_remote(job: JobRef, runtime: u16, priority: Priority) {
    // SAFETY: the task is live (it has a job), so its runtime is allocated (T5).
    let registry = unsafe { super::ids::registry(runtime) };
    // Hold the runtime across the injection: once queued, the task may run, end and
    // release the last hold on it before `inject` returns.
    let registry: *const Registry = registry;
    // SAFETY: the registry is allocated and was made by `Arc::new` (ids.rs publishes
    // `Arc::as_ptr`); we take a count of our own and give it back below.
    let registry = unsafe {
        Arc::increment_strong_count(registry);
        Arc::from_raw(registry)
    };
    registry.inject_with(job, priority);
}

/// Spawns an independent task on the current runtime: the runtime of the calling worker,
/// the one entered with [`Runtime::block_on`](crate::runtime::Runtime::block_on), or else the
/// global runtime.
///
/// Await the returned handle for the task's value (a panic in the task is re-raised
/// there), or drop it to let the task run detached.
///
/// ```
/// let h = tutti::spawn(async { 6 * 7 });
/// assert_eq!(h.join(), 42);
/// ```
///
/// A task may move to another worker whenever it is woken, so its future must be `Send`;
/// holding an `Rc` does not compile:
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
    match WorkerThread::current() {
        Some(w) => spawn_with(w.registry(), Some(w), future, (), false, None),
        None => with_current_registry(|r| spawn_with(r, None, future, (), false, None)),
    }
}

/// Spawns an independent task with `priority` on the current runtime (see [`spawn`]).
///
/// A high-priority task is taken before every queued normal and low task of its
/// runtime, each time it is spawned or woken; a low-priority one only when no normal
/// work is queued (and at least once every [`LOW_EVERY`](crate::runtime::LOW_EVERY)
/// normal tasks a worker takes, so that it is never starved). The priority stays the
/// task's for its whole life; tasks it spawns get the runtime's default unless they say
/// otherwise.
///
/// ```
/// use tutti::Priority;
/// let urgent = tutti::spawn_with_priority(Priority::High, async { 1 });
/// let background = tutti::spawn_with_priority(Priority::Low, async { 2 });
/// assert_eq!(urgent.priority(), Priority::High);
/// assert_eq!(urgent.join() + background.join(), 3);
/// ```
pub fn spawn_with_priority<F>(priority: Priority, future: F) -> JoinHandle<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    let p = Some(priority);
    match WorkerThread::current() {
        Some(w) => spawn_with(w.registry(), Some(w), future, (), false, p),
        None => with_current_registry(|r| spawn_with(r, None, future, (), false, p)),
    }
}

/// [`spawn`] with a name: trace slices of the task and its entry in
/// [`diag::dump`](crate::diag::dump) show `name` instead of the future's type (an
/// `async` block's type reads like `{async_block#0}` inside a chain of combinators).
///
/// A `&'static str` is kept as it is. A `String` is interned: each distinct name is
/// stored once for the life of the process (the trace records names as `'static`
/// strings), so name tasks by role (`"acceptor"`, `"conn"`), not by a number that
/// grows without bound. An unnamed task stores no name at all.
///
/// ```
/// let h = tutti::runtime::spawn_named("answer", async { 6 * 7 });
/// assert_eq!(h.join(), 42);
/// ```
pub fn spawn_named<F>(name: impl Into<Cow<'static, str>>, future: F) -> JoinHandle<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    let name = name::intern(name.into());
    match WorkerThread::current() {
        Some(w) => spawn_with(w.registry(), Some(w), future, name, false, None),
        None => with_current_registry(|r| spawn_with(r, None, future, name, false, None)),
    }
}

/// Spawns on `registry` (from any thread).
pub(crate) fn spawn_on<F>(
    registry: &Arc<Registry>,
    future: F,
    priority: Option<Priority>,
) -> JoinHandle<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    let worker = WorkerThread::current().filter(|w| Arc::ptr_eq(w.registry(), registry));
    spawn_with(registry, worker, future, (), false, priority)
}

/// [`spawn_named`] on `registry` (from any thread).
pub(crate) fn spawn_named_on<F>(
    registry: &Arc<Registry>,
    name: Cow<'static, str>,
    future: F,
) -> JoinHandle<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    let worker = WorkerThread::current().filter(|w| Arc::ptr_eq(w.registry(), registry));
    spawn_with(registry, worker, future, name::intern(name), false, None)
}

/// Runs the blocking closure `f` on a thread of `registry`'s blocking pool, as a task
/// whose one poll calls `f` (`runtime/blocking.rs`).
pub(crate) fn spawn_blocking_on<F, R>(registry: &Arc<Registry>, f: F) -> JoinHandle<R>
where
    F: FnOnce() -> R + Send + 'static,
    R: Send + 'static,
{
    let worker = WorkerThread::current().filter(|w| Arc::ptr_eq(w.registry(), registry));
    let shard = registry.live.shard_for(worker.map_or(0, |w| w.index() + 1));
    // The pool runs it; its priority would only order a wake-up, which it never gets.
    let state = state::State::new(registry.id(), shard, false, Priority::Normal);
    let task = raw::allocate(Blocking(Some(f)), (), state);
    registry.live.insert(registry, task);
    registry.blocking.submit(registry, task);
    JoinHandle::new(task)
}

/// The future of a blocking task: its one poll calls the closure.
struct Blocking<F>(Option<F>);

impl<F> Unpin for Blocking<F> {}

impl<F: FnOnce() -> R, R> Future for Blocking<F> {
    type Output = R;

    fn poll(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<R> {
        let f = self
            .0
            .take()
            .unwrap_or_else(|| unreachable!("a blocking task is polled once"));
        Poll::Ready(f())
    }
}

/// The names and states of the named live tasks of `registry`, for dumps.
pub(crate) fn named_tasks(registry: &Registry) -> Vec<(&'static str, &'static str)> {
    registry.live.named()
}

/// Spawns a task marked for the layer above (a CSP process, found again through
/// [`with_tagged_tasks`]) on the current runtime.
pub(crate) fn spawn_tagged<F>(future: F) -> JoinHandle<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    match WorkerThread::current() {
        Some(w) => spawn_with(w.registry(), Some(w), future, (), true, None),
        None => with_current_registry(|r| spawn_with(r, None, future, (), true, None)),
    }
}

/// Runs `f` with a view of the tagged live tasks of `registry`, during which no task of
/// it starts or stops being live.
pub(crate) fn with_tagged_tasks<R>(registry: &Registry, f: impl FnOnce(&Tagged<'_>) -> R) -> R {
    registry.live.with_tagged(f)
}

/// `worker`: the calling worker, if it belongs to `registry`; `priority`: the task's, if
/// not the runtime's default.
#[inline]
fn spawn_with<F, N: NameSlot>(
    registry: &Arc<Registry>,
    worker: Option<&WorkerThread>,
    future: F,
    name: N,
    tagged: bool,
    priority: Option<Priority>,
) -> JoinHandle<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    let priority = priority.unwrap_or(registry.default_priority);
    let shard = registry.live.shard_for(worker.map_or(0, |w| w.index() + 1));
    let state = state::State::new(registry.id(), shard, tagged, priority);
    let task = raw::allocate(future, name, state);
    registry.live.insert(registry, task);
    let job = task_job(task);
    match worker {
        Some(w) if priority == Priority::Normal => w.push_fifo(job),
        Some(w) => w.push_prioritized(job, priority),
        None => registry.inject_with(job, priority),
    }
    JoinHandle::new(task)
}

/// Gives the worker back to the scheduler once: the current task goes to the back of its
/// worker's FIFO, so other queued tasks run first.
///
/// ```
/// tutti::block_on(async { tutti::yield_now().await });
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

#[cfg(all(test, not(loom)))]
mod tests {
    use crate::loom::{AtomicUsize, Ordering};
    use std::sync::Arc;

    struct Count(Arc<AtomicUsize>);
    impl Drop for Count {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// Every task leaves the live list when its future goes, including a detached task
    /// that parks with nobody left to wake it (its future is dropped at once, T4).
    #[test]
    fn live_list_empties_and_unreachable_tasks_are_dropped() {
        let rt = crate::runtime::Runtime::builder()
            .workers(2)
            .build()
            .unwrap();
        let handles: Vec<_> = (0..1000u64).map(|i| rt.spawn(async move { i })).collect();
        let sum: u64 = handles.into_iter().map(|h| rt.block_on(h)).sum();
        assert_eq!(sum, 999 * 1000 / 2);
        let dropped = Arc::new(AtomicUsize::new(0));
        let c = Count(dropped.clone());
        rt.spawn(async move {
            let _c = c;
            std::future::pending::<()>().await;
        })
        .detach();
        while dropped.load(Ordering::SeqCst) == 0 {
            std::thread::yield_now();
        }
        while rt.registry.live.len() != 0 {
            std::thread::yield_now();
        }
    }

    /// A parked task with a handle stays live until the runtime shuts down, which cancels
    /// it (the handle reports it).
    #[test]
    fn shutdown_cancels_a_parked_task() {
        let rt = crate::runtime::Runtime::builder()
            .workers(1)
            .build()
            .unwrap();
        let h = rt.spawn(std::future::pending::<()>());
        while rt.registry.live.len() != 1 {
            std::thread::yield_now();
        }
        drop(rt);
        assert!(matches!(
            crate::runtime::block_on(h.result()),
            Err(crate::runtime::JoinError::Cancelled)
        ));
    }
}

/// Under loom, tasks made without a runtime (id 0) are scheduled into this queue, from
/// which a model runs them.
#[cfg(loom)]
pub(crate) mod loom_queue {
    use super::RawTask;

    loom::lazy_static! {
        static ref QUEUE: loom::sync::Mutex<Vec<RawTask>> = loom::sync::Mutex::new(Vec::new());
        static ref ALLOCATED: loom::sync::atomic::AtomicUsize = loom::sync::atomic::AtomicUsize::new(0);
    }

    /// A task was allocated (`+1`) or freed (`-1`).
    pub(crate) fn count_allocation(delta: isize) {
        use loom::sync::atomic::Ordering::Relaxed;
        if delta > 0 {
            ALLOCATED.fetch_add(1, Relaxed);
        } else {
            ALLOCATED.fetch_sub(1, Relaxed);
        }
    }

    /// Tasks allocated and not freed yet.
    pub(crate) fn tasks_allocated() -> usize {
        ALLOCATED.load(loom::sync::atomic::Ordering::Relaxed)
    }

    pub(super) fn push(task: RawTask) {
        QUEUE.lock().unwrap().push(task);
    }

    /// Takes the jobs scheduled so far.
    pub(crate) fn take() -> Vec<RawTask> {
        std::mem::take(&mut *QUEUE.lock().unwrap())
    }
}
