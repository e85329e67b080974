//! Waiting for a task: the [`JoinHandle`], and the join word in the task's header that
//! holds its awaiters and completion callbacks until the task ends.
//!
//! # The join word (one `usize`)
//!
//! | value | meaning |
//! |---|---|
//! | `0` | the task has not ended; nobody waits |
//! | `DONE + outcome` (1..=3) | the task ended with that [`Outcome`]; final |
//! | a task pointer with bit 0 set | one awaiter, a tutti task (it holds a reference) |
//! | a node pointer (8-aligned) | a stack of registrations, newest first: wakers and callbacks; the bottom one's `next` may be a tagged task pointer |
//!
//! Pointers are at least 4096 and 8-aligned, so the three kinds never collide.
//!
//! The task's end (`finish`) swaps in `DONE + outcome` and then wakes every awaiter and
//! runs every callback it displaced, oldest first. A registrar compare-and-swaps its
//! entry on top of a value that is `0`, a tagged task or a node; if it finds `DONE`
//! instead, the task has ended and it acts on the outcome itself. Every transition is a
//! read-modify-write of the one word, so each registration is either in the stack the
//! finisher displaced or sees `DONE`: each awaiter is woken and each callback runs exactly
//! once. The state word is settled (`COMPLETED` or `CLOSED`) *before* the swap, so a
//! handle that sees `DONE` and then reads the state finds the result.
//!
//! A tutti task awaiting a handle (the common case) is stored as its tagged pointer, so
//! awaiting allocates nothing; other wakers and callbacks are pushed as nodes.

use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use super::raw::RawTask;
use super::state::{CLOSED, COMPLETED, HANDLE, SCHEDULED};
use crate::loom::{AtomicUsize, Ordering};
use crate::runtime::unwind::{halt_unwinding, payload_text, resume_unwinding, Payload};

/// How a task ended, as told to [`JoinHandle::on_finish`] callbacks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The future returned a value.
    Completed,
    /// The future panicked; the panic is re-raised at the joiner.
    Panicked,
    /// The task was dropped before completing: aborted, or its runtime shut down.
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
            JoinError::Panicked(p) => write!(f, "Panicked({:?})", payload_text(&**p)),
            JoinError::Cancelled => f.write_str("Cancelled"),
        }
    }
}

impl fmt::Display for JoinError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            JoinError::Panicked(p) => write!(f, "task panicked: {}", payload_text(&**p)),
            JoinError::Cancelled => {
                f.write_str("task was cancelled (aborted, or its runtime shut down)")
            }
        }
    }
}

impl std::error::Error for JoinError {}

type Callback = Box<dyn FnOnce(Outcome) + Send + 'static>;

/// `DONE + outcome` is stored once the task ended.
const DONE: usize = 1;
/// Tags a task pointer stored as an awaiter.
const TASK_TAG: usize = 1;
/// Values below this are `0` or `DONE + outcome`.
const SMALL: usize = 8;

fn encode(o: Outcome) -> usize {
    DONE + o as usize
}

fn decode(word: usize) -> Option<Outcome> {
    match word.wrapping_sub(DONE) {
        0 => Some(Outcome::Completed),
        1 => Some(Outcome::Panicked),
        2 => Some(Outcome::Cancelled),
        _ => None,
    }
}

/// One registration in the join word's stack.
enum Entry {
    Waker(Waker),
    Callback(Callback),
}

struct Node {
    entry: Entry,
    /// The registration below: `0`, a node, or a tagged task.
    next: usize,
}

/// The join word; see the module docs.
pub(crate) struct JoinWord(AtomicUsize);

impl JoinWord {
    pub(super) fn new() -> JoinWord {
        JoinWord(AtomicUsize::new(0))
    }

    /// The outcome, once the task ended.
    pub(super) fn outcome(&self) -> Option<Outcome> {
        decode(self.0.load(Ordering::Acquire))
    }

    pub(super) fn is_done(&self) -> bool {
        self.outcome().is_some()
    }

    /// Registers `waker` to be woken when the task ends, unless the value on top is
    /// `*registered` (this handle's last registration, still current). Returns false if
    /// the task has ended already.
    fn register(&self, waker: &Waker, registered: &mut usize) -> bool {
        let mut top = self.0.load(Ordering::Acquire);
        let mut node: Option<Box<Node>> = None;
        loop {
            if decode(top).is_some() {
                return false;
            }
            if top == *registered && top != 0 {
                return true;
            }
            let new = match (top, RawTask::of_waker(waker)) {
                (0, Some(task)) => {
                    task.add_ref();
                    task.as_ptr().as_ptr() as usize | TASK_TAG
                }
                _ => {
                    let n = node.get_or_insert_with(|| {
                        Box::new(Node {
                            entry: Entry::Waker(waker.clone()),
                            next: 0,
                        })
                    });
                    n.next = top;
                    std::ptr::from_mut::<Node>(n) as usize
                }
            };
            // Release: the finisher that displaces the entry sees it whole.
            match self
                .0
                .compare_exchange(top, new, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => {
                    if let Some(n) = node {
                        let _ = Box::into_raw(n); // owned by the stack now
                    }
                    *registered = new;
                    return true;
                }
                Err(now) => {
                    if new & TASK_TAG != 0 {
                        task_of(new).drop_ref();
                    }
                    top = now;
                }
            }
        }
    }

    /// Runs `cb` when the task ends, or now if it has.
    pub(super) fn on_finish(&self, cb: Callback) {
        let mut node = Box::new(Node {
            entry: Entry::Callback(cb),
            next: 0,
        });
        let mut top = self.0.load(Ordering::Acquire);
        loop {
            if let Some(outcome) = decode(top) {
                run_entry(node.entry, outcome);
                return;
            }
            node.next = top;
            let ptr = std::ptr::from_mut::<Node>(&mut node) as usize;
            match self
                .0
                .compare_exchange(top, ptr, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => {
                    let _ = Box::into_raw(node); // owned by the stack now
                    return;
                }
                Err(now) => top = now,
            }
        }
    }

    /// The task ended: record `outcome`, then wake and run what was registered.
    pub(super) fn finish(&self, outcome: Outcome) {
        // AcqRel: acquire the registrations (released by their CAS).
        let top = self.0.swap(encode(outcome), Ordering::AcqRel);
        if top >= SMALL {
            finish_cold(top, outcome);
        }
    }
}

/// Wakes and runs the registrations a finisher displaced, oldest first.
#[cold]
fn finish_cold(mut top: usize, outcome: Outcome) {
    let mut entries = Vec::new();
    let mut task = None;
    while top >= SMALL {
        if top & TASK_TAG != 0 {
            task = Some(task_of(top));
            break;
        }
        // SAFETY: the finisher's swap made it the sole owner of the stack; every node came
        // from a `Box` leaked on a successful CAS.
        let node = unsafe { Box::from_raw(top as *mut Node) };
        top = node.next;
        entries.push(node.entry);
    }
    if let Some(t) = task {
        t.wake(); // consumes the reference taken at registration
    }
    for entry in entries.into_iter().rev() {
        run_entry(entry, outcome);
    }
}

fn run_entry(entry: Entry, outcome: Outcome) {
    match entry {
        Entry::Waker(w) => w.wake(),
        Entry::Callback(cb) => {
            if let Err(p) = halt_unwinding(|| cb(outcome)) {
                eprintln!(
                    "tutti: a task completion callback panicked: {}",
                    payload_text(&*p)
                );
            }
        }
    }
}

fn task_of(tagged: usize) -> RawTask {
    let ptr = (tagged & !TASK_TAG) as *mut ();
    // SAFETY: a tagged value was made from a task pointer by `register`, which took a
    // reference that keeps the task allocated until `finish_cold` (or the failed CAS)
    // gives it back.
    unsafe { RawTask::from_ptr(std::ptr::NonNull::new_unchecked(ptr)) }
}

impl Drop for JoinWord {
    fn drop(&mut self) {
        // A task is freed only after it finished (`RawTask::dealloc`), so nothing is left.
        debug_assert!(decode(self.0.load(Ordering::Relaxed)).is_some());
    }
}

/// An owned permission to await a spawned task.
///
/// Awaiting it yields the task's value and re-raises its panic. Dropping it (or calling
/// [`detach`](JoinHandle::detach)) lets the task run on unobserved.
/// [`JoinHandle::join`] is the blocking form for plain threads.
#[must_use = "dropping a JoinHandle detaches the task; await it, call .join(), or .detach() it"]
pub struct JoinHandle<T> {
    task: RawTask,
    /// The join-word value this handle registered last (`0`: none), so that re-polls do
    /// not register again.
    registered: usize,
    /// The output has been taken.
    taken: bool,
    _output: PhantomData<T>,
}

// SAFETY: the handle moves the task's `T` to whoever holds it, so it is `Send` when `T`
// is; everything else it touches is synchronised by the task's state word.
unsafe impl<T: Send> Send for JoinHandle<T> {}
// SAFETY: `&JoinHandle` only reads the state and join words (atomics) and registers
// callbacks (a lock-free stack).
unsafe impl<T: Send> Sync for JoinHandle<T> {}

impl<T> Unpin for JoinHandle<T> {}

impl<T> JoinHandle<T> {
    /// The handle of a task just spawned (its state has `HANDLE`).
    pub(super) fn new(task: RawTask) -> JoinHandle<T> {
        JoinHandle {
            task,
            registered: 0,
            taken: false,
            _output: PhantomData,
        }
    }

    /// True once the task has completed, panicked or been cancelled.
    ///
    /// ```
    /// let h = tutti::spawn(async {});
    /// while !h.is_finished() { std::thread::yield_now(); }
    /// ```
    pub fn is_finished(&self) -> bool {
        self.task.header().join.is_done()
    }

    /// The priority the task was spawned with (it never changes).
    ///
    /// ```
    /// let h = tutti::spawn_with_priority(tutti::Priority::Low, async {});
    /// assert_eq!(h.priority(), tutti::Priority::Low);
    /// ```
    pub fn priority(&self) -> crate::runtime::Priority {
        self.task.state().priority()
    }

    /// Runs `f` when the task ends (Blip's `appendOnFinish`), on the thread that finishes
    /// it, or right away if it already has. Callbacks run in registration order; a
    /// panicking callback is reported on stderr.
    ///
    /// ```
    /// use std::sync::mpsc;
    /// let (tx, rx) = mpsc::channel();
    /// let h = tutti::spawn(async { 1 });
    /// h.on_finish(move |outcome| tx.send(outcome).unwrap());
    /// assert_eq!(rx.recv().unwrap(), tutti::Outcome::Completed);
    /// ```
    pub fn on_finish(&self, f: impl FnOnce(Outcome) + Send + 'static) {
        self.task.header().join.on_finish(Box::new(f));
    }

    /// Cancels the task: its future is dropped without completing, on a worker (at once
    /// if it is queued or parked, else when its current poll returns).
    ///
    /// ```
    /// let h = tutti::spawn(std::future::pending::<()>());
    /// let (tx, rx) = std::sync::mpsc::channel();
    /// h.on_finish(move |o| tx.send(o).unwrap());
    /// h.abort();
    /// assert_eq!(rx.recv().unwrap(), tutti::Outcome::Cancelled);
    /// ```
    pub fn abort(self) {
        let task = self.task;
        std::mem::forget(self);
        task.cancel();
        drop_handle(task);
    }

    /// Lets the task run on without anyone awaiting it; the same as dropping the handle,
    /// but says so.
    ///
    /// ```
    /// let (tx, rx) = std::sync::mpsc::channel();
    /// tutti::spawn(async move { tx.send(5).unwrap() }).detach();
    /// assert_eq!(rx.recv().unwrap(), 5);
    /// ```
    pub fn detach(self) {
        drop(self);
    }

    /// Polls for the task's result without re-raising a panic.
    ///
    /// # Panics
    /// If polled again after it returned `Ready`.
    pub fn poll_result(&mut self, cx: &mut Context<'_>) -> Poll<Result<T, JoinError>> {
        assert!(!self.taken, "tutti: JoinHandle polled after it completed");
        loop {
            let state = self.task.state();
            if state.has(COMPLETED) {
                debug_assert!(!state.has(CLOSED), "the output belongs to the handle");
                // Claim the output (T3): with the handle alive nobody else closes a
                // completed task.
                self.task.header().state.fetch_or(CLOSED, Ordering::AcqRel);
                let mut out: Option<Result<T, Payload>> = None;
                // SAFETY: completed and claimed; `out` has the output's type.
                unsafe {
                    (self.task.header().vtable.take_output)(
                        self.task.header_ptr(),
                        std::ptr::from_mut(&mut out).cast(),
                    )
                };
                self.taken = true;
                return Poll::Ready(match out {
                    Some(Ok(v)) => Ok(v),
                    Some(Err(p)) => Err(JoinError::Panicked(p)),
                    None => unreachable!("tutti: a completed task had no output"),
                });
            }
            if state.has(CLOSED) {
                self.taken = true;
                return Poll::Ready(Err(JoinError::Cancelled));
            }
            if self
                .task
                .header()
                .join
                .register(cx.waker(), &mut self.registered)
            {
                // Registered; the end of the task (after its state settles) wakes us.
                let state = self.task.state();
                if !state.is_settled() {
                    return Poll::Pending;
                }
            }
            // Ended meanwhile: the state is settled now.
        }
    }

    /// A future for the task's result that reports a panic or cancellation as a
    /// [`JoinError`] instead of re-raising it.
    ///
    /// ```
    /// let h = tutti::spawn(async { panic!("boom") });
    /// let err = tutti::block_on(h.result()).unwrap_err();
    /// assert!(err.to_string().contains("boom"));
    /// ```
    pub fn result(self) -> TaskResult<T> {
        TaskResult { handle: self }
    }

    /// Blocks until the task ends and returns its value, re-raising its panic. On a
    /// worker thread it keeps executing other work meanwhile.
    ///
    /// # Panics
    /// If the task panicked (with its payload), if it was cancelled, or if called from
    /// inside an async task (use `.await` there).
    ///
    /// ```
    /// assert_eq!(tutti::spawn(async { "done" }).join(), "done");
    /// ```
    pub fn join(self) -> T {
        crate::runtime::block_on::block_on(self)
    }
}

/// The handle goes away: claim and drop an untaken output first, then clear `HANDLE`
/// (freeing a settled task nobody refers to, or giving an unreachable live one a closing
/// job, T4).
fn drop_handle(task: RawTask) {
    let mut state = task.state();
    loop {
        if state.has(COMPLETED) && !state.has(CLOSED) {
            // The output is the handle's (T3); drop it while the handle still keeps the
            // task allocated. (The task may complete while we clear `HANDLE` below: the
            // failed CAS brings us back here.)
            task.header().state.fetch_or(CLOSED, Ordering::AcqRel);
            // SAFETY: completed and claimed just above.
            unsafe { (task.header().vtable.drop_output)(task.header_ptr()) };
            state = task.state();
        }
        let mut next = state.without(HANDLE);
        let last = next.refs() == 0 && next.is_idle();
        let closing = last && !next.is_settled();
        if closing {
            next = next.with(SCHEDULED | CLOSED).add_ref();
        }
        match task.header().state.compare_exchange_weak(
            state.0,
            next.0,
            Ordering::AcqRel,
            Ordering::Acquire,
        ) {
            Ok(_) => {
                if closing {
                    super::schedule(task, next, false);
                } else if last {
                    task.dealloc();
                }
                return;
            }
            Err(s) => state = super::state::State(s),
        }
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
        drop_handle(self.task);
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
