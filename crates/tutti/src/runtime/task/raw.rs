//! The task allocation and the state machine of its header.
//!
//! A task is one allocation: a [`Header`] followed by the *stage*, a union of the future
//! (until it is dropped) and its output (once it completed). The header is five words:
//! the state word (`state.rs`), a pointer to the future type's [`TaskVTable`], the join
//! word (`join.rs`) and the two links of the runtime's live list (`live.rs`). Everything
//! that depends on the future's type goes through the vtable, so the state machine below
//! is compiled once, not once per future type.
//!
//! A [`RawTask`] is a pointer to a header. Who may do what with it is decided by the state
//! word alone; the transitions below keep the invariants T1–T5 of `state.rs`:
//!
//! | operation | by | effect |
//! |---|---|---|
//! | `run` | the job | `SCHEDULED → RUNNING` taking the poll's spare reference (T6), polls; then completes, re-queues (woken meanwhile), closes (aborted meanwhile, or unreachable) or parks, giving the spare back if nobody took it |
//! | `discard` | a job dropped at shutdown | closes and drops the future |
//! | `wake` / `wake_by_ref` | a waker | idle → `SCHEDULED` with a job; running → request a re-run; otherwise nothing |
//! | `add_ref` | a waker clone, a registration | the poll's spare if the caller is the task's poll and the spare is untaken (T6), else one reference more |
//! | `drop_ref` | a waker | one reference fewer; frees a settled task, gives an unreachable live one a closing job |
//! | `take_output`, `drop_handle`, `abort` | the `JoinHandle` | see `join.rs` |
//!
//! Every transition is a compare-and-swap of the whole word, so concurrent parties see
//! one order of transitions. `AcqRel` throughout: a wake's `Release` makes what the waker
//! did before waking visible to the poll it causes (whose start is an `Acquire` of the
//! same word), the end of one poll is `Release`d to the start of the next (which may run
//! on another worker), and the completion's `Release` publishes the output to the handle.

use std::alloc::Layout;
use std::future::Future;
use std::mem::ManuallyDrop;
use std::pin::Pin;
use std::ptr::{self, NonNull};
use std::task::{Context, Poll, RawWaker, RawWakerVTable, Waker};

use super::join::{JoinWord, Outcome};
use super::live::Links;
use super::state::{State, CLOSED, COMPLETED, HANDLE, REF, RUNNING, SCHEDULED};
use crate::loom::{AtomicU64, Ordering, UnsafeCell};
use crate::runtime::unwind::{halt_unwinding, payload_text, Payload};

/// The first part of every task allocation.
#[repr(C)]
pub(crate) struct Header {
    /// See `state.rs`.
    pub(super) state: AtomicU64,
    /// The operations that depend on the future's type.
    pub(super) vtable: &'static TaskVTable,
    /// Awaiters and completion callbacks, then the outcome (`join.rs`).
    pub(super) join: JoinWord,
    /// The task's place in its runtime's live list (`live.rs`).
    pub(super) links: Links,
}

/// What a poll of the future came to.
pub(super) enum Polled {
    /// Still pending.
    Pending,
    /// The future returned; it is dropped and its output stored.
    Completed,
    /// The future panicked; it is dropped and the payload stored as its output.
    Panicked,
}

/// The type-dependent operations of a task; one static table per future type.
pub(crate) struct TaskVTable {
    /// Polls the future; on `Ready` or a panic, drops it and stores the output.
    pub(super) poll: unsafe fn(NonNull<Header>, &mut Context<'_>) -> Polled,
    /// Drops the (not completed) future in place.
    pub(super) drop_future: unsafe fn(NonNull<Header>),
    /// Moves the output out into `*out`, an `Option<Result<T, Payload>>`.
    pub(super) take_output: unsafe fn(NonNull<Header>, *mut ()),
    /// Drops the output in place.
    pub(super) drop_output: unsafe fn(NonNull<Header>),
    /// Frees the allocation.
    pub(super) dealloc: unsafe fn(NonNull<Header>),
    /// The address of the future, for the layer that tagged the task.
    pub(super) future: unsafe fn(NonNull<Header>) -> *const (),
    /// The task's name (given at spawn, else the future's type), naming its slices in
    /// a trace and its entry in a dump. Valid for as long as the allocation is.
    pub(super) name: unsafe fn(NonNull<Header>) -> &'static str,
    /// Whether the task was given a name at spawn.
    pub(super) named: bool,
}

/// Where a task keeps the name given at spawn: nowhere for an unnamed task (`()`, no
/// byte and no allocation: its name is its future's type), one `&'static str` for a
/// named one (`task/name.rs` interns names given as `String`s).
pub(crate) trait NameSlot: Send + 'static {
    /// Whether this slot holds a name given at spawn.
    const NAMED: bool;
    /// The name, or `type_name` if the slot holds none.
    fn get(&self, type_name: &'static str) -> &'static str;
}

impl NameSlot for () {
    const NAMED: bool = false;
    #[inline]
    fn get(&self, type_name: &'static str) -> &'static str {
        type_name
    }
}

impl NameSlot for &'static str {
    const NAMED: bool = true;
    #[inline]
    fn get(&self, _: &'static str) -> &'static str {
        self
    }
}

/// A task allocation of future type `F`, its name in `N` (after the stage, so the header
/// stays five words and its place does not depend on `N`).
#[repr(C)]
struct Cell<F: Future, N: NameSlot> {
    header: Header,
    stage: UnsafeCell<Stage<F>>,
    name: N,
}

/// The future until it is dropped, then (if it completed) its output.
union Stage<F: Future> {
    future: ManuallyDrop<F>,
    output: ManuallyDrop<Result<F::Output, Payload>>,
}

impl<F: Future, N: NameSlot> Cell<F, N> {
    const VTABLE: TaskVTable = TaskVTable {
        poll: Self::poll,
        drop_future: Self::drop_future,
        take_output: Self::take_output,
        drop_output: Self::drop_output,
        dealloc: Self::dealloc,
        future: Self::future,
        name: Self::name,
        named: N::NAMED,
    };

    unsafe fn name(ptr: NonNull<Header>) -> &'static str {
        // SAFETY: the caller holds a right to the task, so the allocation is alive; the
        // name is written once at allocation and never changed, so it may be read
        // beside any user of the stage.
        let cell = unsafe { ptr.cast::<Cell<F, N>>().as_ref() };
        cell.name.get(std::any::type_name::<F>())
    }

    /// # Safety (of every function below)
    /// `ptr` points to a live `Cell<F>`, and the caller has the right the state word grants
    /// for the operation (T2, T3 of `state.rs`).
    unsafe fn stage<R>(ptr: NonNull<Header>, f: impl FnOnce(*mut Stage<F>) -> R) -> R {
        // SAFETY: the header is the first field of the `repr(C)` cell.
        let cell = unsafe { ptr.cast::<Cell<F, N>>().as_ref() };
        cell.stage.with_mut(f)
    }

    unsafe fn poll(ptr: NonNull<Header>, cx: &mut Context<'_>) -> Polled {
        // SAFETY: the caller runs the task's job: the future is present and only it
        // touches the stage (T2).
        unsafe {
            Self::stage(ptr, |stage| {
                let future = Pin::new_unchecked(&mut *(*stage).future);
                let output = match halt_unwinding(|| future.poll(cx)) {
                    Ok(Poll::Pending) => return Polled::Pending,
                    Ok(Poll::Ready(v)) => Ok(v),
                    Err(p) => Err(p),
                };
                let polled = if output.is_ok() {
                    Polled::Completed
                } else {
                    Polled::Panicked
                };
                drop_future_in(stage);
                // Leave the live list before the output overwrites the future's memory:
                // a detector walking the list (under its locks) reads the futures of
                // linked tagged tasks, and must find a dropped process's `Member`
                // (marked ended), never bytes of the output (`complete` skips this step).
                super::live::remove(RawTask(ptr));
                (*stage).output = ManuallyDrop::new(output);
                polled
            })
        }
    }

    unsafe fn drop_future(ptr: NonNull<Header>) {
        // SAFETY: see `stage`; the future is present (T2).
        unsafe { Self::stage(ptr, |stage| drop_future_in(stage)) }
    }

    unsafe fn take_output(ptr: NonNull<Header>, out: *mut ()) {
        // SAFETY: see `stage`; the handle claimed the completed output (T3), and `out` is
        // an `Option<Result<F::Output, Payload>>` by the caller's contract.
        unsafe {
            Self::stage(ptr, |stage| {
                let v = ManuallyDrop::take(&mut (*stage).output);
                *out.cast::<Option<Result<F::Output, Payload>>>() = Some(v);
            })
        }
    }

    unsafe fn drop_output(ptr: NonNull<Header>) {
        // SAFETY: see `stage`; the output is present and claimed (T3).
        let r = halt_unwinding(|| unsafe {
            Self::stage(ptr, |stage| ManuallyDrop::drop(&mut (*stage).output))
        });
        if let Err(p) = r {
            eprintln!(
                "tutti: dropping a task's output panicked: {}",
                payload_text(&*p)
            );
        }
    }

    unsafe fn dealloc(ptr: NonNull<Header>) {
        let cell = ptr.cast::<Cell<F, N>>().as_ptr();
        // SAFETY: the stage is empty (settled and claimed), so only the header and the
        // name need dropping (the header owns loom objects under loom); the allocation
        // came from `allocate`.
        unsafe {
            std::ptr::drop_in_place(std::ptr::addr_of_mut!((*cell).header));
            std::ptr::drop_in_place(std::ptr::addr_of_mut!((*cell).stage));
            std::ptr::drop_in_place(std::ptr::addr_of_mut!((*cell).name));
            std::alloc::dealloc(cell.cast(), Layout::new::<Cell<F, N>>());
        }
    }

    unsafe fn future(ptr: NonNull<Header>) -> *const () {
        // SAFETY: see `stage`; only the address is taken.
        unsafe { Self::stage(ptr, |stage| std::ptr::addr_of!((*stage).future).cast()) }
    }
}

/// Drops the future in `stage`, reporting (not propagating) a panic of its destructor.
///
/// # Safety
/// The future is present and owned by the caller.
unsafe fn drop_future_in<F: Future>(stage: *mut Stage<F>) {
    // SAFETY: by the caller's contract.
    if let Err(p) = halt_unwinding(|| unsafe { ManuallyDrop::drop(&mut (*stage).future) }) {
        eprintln!(
            "tutti: a task's future panicked while dropped: {}",
            payload_text(&*p)
        );
    }
}

/// Allocates a task holding `future` and its name, with the state word `state`.
pub(super) fn allocate<F: Future, N: NameSlot>(future: F, name: N, state: State) -> RawTask {
    let layout = Layout::new::<Cell<F, N>>();
    // SAFETY: the layout has a non-zero size (the header).
    let ptr = unsafe { std::alloc::alloc(layout) }.cast::<Cell<F, N>>();
    let Some(ptr) = NonNull::new(ptr) else {
        std::alloc::handle_alloc_error(layout);
    };
    // SAFETY: freshly allocated for a `Cell<F>`.
    unsafe {
        ptr.as_ptr().write(Cell {
            header: Header {
                state: AtomicU64::new(state.0),
                vtable: &Cell::<F, N>::VTABLE,
                join: JoinWord::new(),
                links: Links::new(),
            },
            stage: UnsafeCell::new(Stage {
                future: ManuallyDrop::new(future),
            }),
            name,
        });
    }
    #[cfg(loom)]
    super::loom_queue::count_allocation(1);
    RawTask(ptr.cast())
}

/// A pointer to a task; what it may be used for is decided by the state word.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct RawTask(NonNull<Header>);

// SAFETY: a `RawTask` is a pointer whose uses are synchronised by the state word; the
// futures and outputs behind it are `Send` (the spawn bounds).
unsafe impl Send for RawTask {}
// SAFETY: as above.
unsafe impl Sync for RawTask {}

impl RawTask {
    /// # Safety
    /// `ptr` came from [`RawTask::as_ptr`] of a task the caller holds a right to.
    #[inline]
    pub(crate) unsafe fn from_ptr(ptr: NonNull<()>) -> RawTask {
        RawTask(ptr.cast())
    }

    #[inline]
    pub(crate) fn as_ptr(self) -> NonNull<()> {
        self.0.cast()
    }

    #[inline]
    pub(super) fn header_ptr(self) -> NonNull<Header> {
        self.0
    }

    #[inline]
    pub(super) fn header<'a>(self) -> &'a Header {
        // SAFETY: every holder of a `RawTask` holds a reference, the job, the handle or a
        // live-list lock, which keeps the allocation alive (T4, T5).
        unsafe { self.0.as_ref() }
    }

    #[inline]
    pub(super) fn state(self) -> State {
        State(self.header().state.load(Ordering::Acquire))
    }

    #[inline]
    fn cas(self, current: State, new: State) -> Result<State, State> {
        self.header()
            .state
            .compare_exchange_weak(current.0, new.0, Ordering::AcqRel, Ordering::Acquire)
            .map(|_| new)
            .map_err(State)
    }

    /// Runs the task's job: polls the future once and settles what follows.
    ///
    /// # Safety
    /// The caller holds the task's job (took it from a queue).
    pub(crate) unsafe fn run(self) {
        let mut state = self.state();
        loop {
            debug_assert!(state.has(SCHEDULED) && !state.has(RUNNING), "{state:?}");
            if state.has(CLOSED) {
                // A cancellation made this job to drop the future on a worker.
                self.close_job(Outcome::Cancelled, false);
                return;
            }
            // The same transition takes the poll's spare reference (T6).
            match self.cas(
                state,
                checked(state.without(SCHEDULED).with(RUNNING).add_ref()),
            ) {
                Ok(_) => break,
                Err(s) => state = s,
            }
        }
        // A borrowed waker: polling does not take a reference; `clone` takes one.
        let raw = RawWaker::new(self.0.as_ptr().cast_const().cast(), &WAKER_VTABLE);
        // SAFETY: the vtable's functions uphold the `RawWaker` contract (see below).
        let waker = ManuallyDrop::new(unsafe { Waker::from_raw(raw) });
        let mut cx = Context::from_waker(&waker);
        let traced = crate::diag::trace::poll_begin();
        // The spare is offered to this poll's `add_ref`s; a poll of another task nested
        // in this one (a worker helping inside a `join`) offers its own meanwhile.
        let me = self.0.as_ptr().cast_const();
        let outer = SPARE.with(|s| s.replace(me));
        // SAFETY: we hold the job and the future is present (T2).
        let polled = unsafe { (self.header().vtable.poll)(self.0, &mut cx) };
        // Whether nobody took the spare: the transition below gives it back.
        let spare = SPARE.with(|s| s.replace(outer)) == me;
        if traced != 0 {
            crate::diag::trace::poll_end(traced, self.name(), self.is_named());
        }
        match polled {
            Polled::Pending => self.after_pending(spare),
            Polled::Completed => self.complete(Outcome::Completed, spare),
            Polled::Panicked => self.complete(Outcome::Panicked, spare),
        }
    }

    /// The poll returned `Pending`: re-queue, close, or park. `spare`: nobody took the
    /// poll's spare reference (T6), which goes back with the transition.
    fn after_pending(self, spare: bool) {
        let mut state = self.state();
        loop {
            if state.has(CLOSED) {
                // Aborted during the poll: the future is ours to drop.
                self.close_job(Outcome::Cancelled, spare);
                return;
            }
            // The count as it is without the spare.
            let kept = if spare { state.unref() } else { state };
            let next = if kept.has(SCHEDULED) {
                // Woken during the poll (or yielding): run again, behind queued tasks.
                kept.without(RUNNING)
            } else if kept.refs() == 1 && !kept.has(HANDLE) {
                // No waker and no handle left: nobody can ever wake or await it (T4).
                kept.with(CLOSED)
            } else {
                kept.without(RUNNING).unref()
            };
            match self.cas(state, next) {
                Ok(next) if next.has(SCHEDULED) => {
                    super::schedule(self, next, true);
                    return;
                }
                Ok(next) if next.has(CLOSED) => {
                    self.close_job(Outcome::Cancelled, false);
                    return;
                }
                Ok(_) => return,
                Err(s) => state = s,
            }
        }
    }

    /// The future completed (or panicked); the poll dropped it and stored the output.
    /// `spare`: as for [`after_pending`](Self::after_pending).
    fn complete(self, outcome: Outcome, spare: bool) {
        let mut state = self.state();
        let drop_output = loop {
            // Without a handle (or after an abort during the poll) nobody takes the output.
            let unclaimed = !state.has(HANDLE) || state.has(CLOSED);
            let mut next = state.without(RUNNING | SCHEDULED).with(COMPLETED);
            if unclaimed {
                next = next.with(CLOSED);
            }
            if spare {
                next = next.unref(); // the job's reference is left: not the last
            }
            match self.cas(state, next) {
                Ok(_) => break unclaimed,
                Err(s) => state = s,
            }
        };
        if drop_output {
            // SAFETY: completed, and claimed by the CAS above (T3).
            unsafe { (self.header().vtable.drop_output)(self.0) };
        }
        // The poll took the task off the live list already (before storing the output).
        self.header().join.finish(outcome);
        self.drop_ref(); // the job's
    }

    /// The job's holder drops the future of a task that was closed before completing,
    /// reports the outcome and ends the job; `spare`: the poll's spare reference (T6)
    /// goes with the job's.
    fn close_job(self, outcome: Outcome, spare: bool) {
        // SAFETY: we hold the job, and the task is closed but not completed: the future is
        // present and ours (T2).
        unsafe { (self.header().vtable.drop_future)(self.0) };
        self.finish(outcome);
        let mut state = self.state();
        loop {
            let mut next = state.without(SCHEDULED | RUNNING).unref();
            if spare {
                next = next.unref();
            }
            match self.cas(state, next) {
                Ok(next) => {
                    if next.refs() == 0 && !next.has(HANDLE) {
                        self.dealloc();
                    }
                    return;
                }
                Err(s) => state = s,
            }
        }
    }

    /// Drops a job without running it (its runtime shut down): the task is cancelled.
    ///
    /// # Safety
    /// The caller holds the task's job.
    pub(crate) unsafe fn discard(self) {
        self.header().state.fetch_or(CLOSED, Ordering::AcqRel);
        self.close_job(Outcome::Cancelled, false);
    }

    /// The future is gone: leave the live list, then tell awaiters and callbacks.
    fn finish(self, outcome: Outcome) {
        super::live::remove(self);
        self.header().join.finish(outcome);
    }

    /// Wakes the task without consuming a reference.
    pub(crate) fn wake_by_ref(self) {
        let mut state = self.state();
        loop {
            if state.is_settled() || state.has(SCHEDULED) {
                return;
            }
            let next = if state.has(RUNNING) {
                state.with(SCHEDULED) // the run re-queues it with its own reference
            } else {
                checked(state.with(SCHEDULED).add_ref()) // the new job's reference
            };
            match self.cas(state, next) {
                Ok(next) => {
                    if !next.has(RUNNING) {
                        super::schedule(self, next, false);
                    }
                    return;
                }
                Err(s) => state = s,
            }
        }
    }

    /// Wakes the task, consuming the caller's reference.
    pub(crate) fn wake(self) {
        let mut state = self.state();
        loop {
            if state.is_settled() || state.has(SCHEDULED) {
                self.drop_ref();
                return;
            }
            let next = if state.has(RUNNING) {
                // The job holds a reference too, so ours is not the last.
                state.with(SCHEDULED).unref()
            } else {
                state.with(SCHEDULED) // our reference becomes the job's
            };
            match self.cas(state, next) {
                Ok(next) => {
                    if !next.has(RUNNING) {
                        super::schedule(self, next, false);
                    }
                    return;
                }
                Err(s) => state = s,
            }
        }
    }

    /// Cancels the task (an abort without a handle): a parked task gets a job that drops
    /// its future; a queued or running one drops it when its job runs or its poll
    /// returns. Nothing happens to a task that ended already.
    ///
    /// The caller keeps the task allocated across the call (a reference, the handle, or a
    /// live-list lock).
    pub(crate) fn cancel(self) {
        let mut state = self.state();
        loop {
            if state.is_settled() {
                return;
            }
            let next = if state.is_idle() {
                // Make a job that drops the future on a worker (T2).
                checked(state.with(CLOSED | SCHEDULED).add_ref())
            } else {
                state.with(CLOSED) // the job drops it
            };
            match self.cas(state, next) {
                Ok(next) => {
                    if state.is_idle() {
                        super::schedule(self, next, false);
                    }
                    return;
                }
                Err(s) => state = s,
            }
        }
    }

    /// The task's name: the one given at spawn, else its future's type.
    #[inline]
    pub(crate) fn name(self) -> &'static str {
        // SAFETY: the caller holds a right to the task (see `header`).
        unsafe { (self.header().vtable.name)(self.0) }
    }

    /// Whether the task was given a name at spawn.
    #[inline]
    pub(crate) fn is_named(self) -> bool {
        self.header().vtable.named
    }

    /// Takes one more reference: the poll's spare, if this is the thread polling the
    /// task and nobody took the spare yet (T6), else a new one.
    #[inline]
    pub(crate) fn add_ref(self) {
        let me = self.0.as_ptr().cast_const();
        // A plain thread-local, no atomic: the run made the spare on this thread, and only
        // this thread takes it.
        let took_spare = SPARE.with(|s| {
            let offered = s.get() == me;
            if offered {
                s.set(ptr::null());
            }
            offered
        });
        if !took_spare {
            self.add_ref_counted();
        }
    }

    fn add_ref_counted(self) {
        let old = State(self.header().state.fetch_add(REF, Ordering::Relaxed));
        checked(old.add_ref());
    }

    /// Gives one reference back (see T4).
    pub(crate) fn drop_ref(self) {
        let mut state = self.state();
        loop {
            let closing =
                state.refs() == 1 && !state.has(HANDLE) && state.is_idle() && !state.is_settled();
            let next = if closing {
                // Our reference becomes the closing job's.
                state.with(SCHEDULED | CLOSED)
            } else {
                state.unref()
            };
            match self.cas(state, next) {
                Ok(next) => {
                    if closing {
                        super::schedule(self, next, false);
                    } else if next.refs() == 0 && !next.has(HANDLE) {
                        self.dealloc();
                    }
                    return;
                }
                Err(s) => state = s,
            }
        }
    }

    /// Frees the allocation; the state is settled, without references or handle.
    pub(super) fn dealloc(self) {
        debug_assert!(
            self.header().join.is_done(),
            "tutti: freeing an unfinished task"
        );
        #[cfg(loom)]
        super::loom_queue::count_allocation(-1);
        // SAFETY: nobody refers to the task any more (T4).
        unsafe { (self.header().vtable.dealloc)(self.0) }
    }

    /// A waker owning the reference the caller holds.
    pub(crate) fn into_waker(self) -> Waker {
        let raw = RawWaker::new(self.0.as_ptr().cast_const().cast(), &WAKER_VTABLE);
        // SAFETY: the waker owns the caller's reference; the vtable keeps the contract.
        unsafe { Waker::from_raw(raw) }
    }

    /// The task a waker wakes, if it is a tutti task's waker.
    pub(crate) fn of_waker(waker: &Waker) -> Option<RawTask> {
        if std::ptr::eq(waker.vtable(), &WAKER_VTABLE) {
            NonNull::new(waker.data().cast_mut()).map(|p| RawTask(p.cast()))
        } else {
            None
        }
    }
}

// The task whose poll runs on this thread and still offers its spare reference (T6 of
// `state.rs`), or null. Set and reset around the poll by `run`, cleared by the `add_ref`
// that takes the spare.
#[cfg(not(loom))]
std::thread_local! {
    static SPARE: std::cell::Cell<*const Header> = const { std::cell::Cell::new(ptr::null()) };
}
#[cfg(loom)]
loom::thread_local! {
    static SPARE: std::cell::Cell<*const Header> = std::cell::Cell::new(ptr::null());
}

/// `state` unless the reference count overflowed (a leak of wakers): then abort, as
/// `Arc` does.
#[inline]
fn checked(state: State) -> State {
    if state.overflowed() {
        eprintln!("tutti: fatal: a task's reference count overflowed (leaked wakers)");
        std::process::abort();
    }
    state
}

/// The waker of a tutti task: its data is the task's header; an owned waker holds one
/// reference.
static WAKER_VTABLE: RawWakerVTable =
    RawWakerVTable::new(waker_clone, waker_wake, waker_wake_by_ref, waker_drop);

fn task_of(data: *const ()) -> RawTask {
    // SAFETY: every `RawWaker` with this vtable was made from a task header pointer.
    RawTask(unsafe { NonNull::new_unchecked(data.cast_mut()) }.cast())
}

unsafe fn waker_clone(data: *const ()) -> RawWaker {
    task_of(data).add_ref();
    RawWaker::new(data, &WAKER_VTABLE)
}

unsafe fn waker_wake(data: *const ()) {
    task_of(data).wake();
}

unsafe fn waker_wake_by_ref(data: *const ()) {
    task_of(data).wake_by_ref();
}

unsafe fn waker_drop(data: *const ()) {
    task_of(data).drop_ref();
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::Header;

    /// Every task pays for its header: five words.
    #[test]
    fn header_is_five_words() {
        assert_eq!(std::mem::size_of::<Header>(), 40);
    }
}
