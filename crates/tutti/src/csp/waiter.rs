//! Waiters: how a party that cannot complete at once sits in a channel's queue, and how
//! a counterpart completes it.
//!
//! A waiting party owns one [`Selector`] (its one-shot decision) and one [`Waiter`] per
//! channel it waits on: a plain `send`/`recv` future has one of each, inline and pinned;
//! an [`Alt`](super::Alt) has one selector and one waiter per input guard, each at a
//! stable heap address. A channel's queues hold pointers to waiters; the channel lock
//! protects the queues and, while a waiter is queued, the waiter's fields.
//!
//! # `Selector::state` (one `usize`)
//!
//! | value | name | meaning | set by |
//! |---|---|---|---|
//! | `0` | `WAITING` | undecided; counterparts may commit | the owner, while no waiter of it is queued |
//! | `i + 1` | `SELECTED(i)` | guard `i` fired; final for this round | the one counterpart (or the owner itself) that wins |
//! | `usize::MAX` | `ABORTED` | the owner withdrew; final for this round | the owner (an `Alt` being dropped, or changing its waker) |
//!
//! `WAITING → SELECTED(i)` and `WAITING → ABORTED` are the only transitions within a
//! round; for a multi-channel selector (an `Alt`) they are compare-and-swaps, so exactly
//! one party decides. A single-channel selector (a plain future) is only ever decided by
//! a counterpart holding that one channel's lock, so a `Release` store suffices.
//!
//! # Who may touch what
//!
//! * `Selector::waker` is written by the owner only while none of its waiters is queued
//!   (or, for a single-channel selector, under that channel's lock). A counterpart reads
//!   it under the lock of a channel where a waiter of this selector is queued: a
//!   multi-channel selector's waker is *cloned* (other channels may read it at the same
//!   time), a single-channel selector's is *taken* (nobody else can).
//! * `Waiter::selector` and `Waiter::index` are written by the owner while the waiter is
//!   not queued, and read by counterparts under the lock while it is.
//! * `Waiter::slot` holds a sender's offered value, or the value delivered to a receiver.
//!   While the waiter is queued only a counterpart holding the lock touches it, and it
//!   decides the selector *after* writing it and never touches the waiter again after
//!   deciding. The owner touches the slot only when the waiter is not queued and no
//!   counterpart is mid-commit: after observing the decision with `Acquire`, or after
//!   removing (or failing to find) the waiter under the lock.
//!
//! # The queue invariant
//!
//! A pointer to a waiter is in a channel queue only while the waiter is alive at that
//! address. Owners guarantee this by registering only from pinned memory (a `!Unpin`
//! future, or an `Alt`'s heap entries) and by removing the waiter, under the lock, before
//! that memory is released (their `Drop` does it). A counterpart pops the pointer before
//! deciding, so once the owner sees the decision nothing refers to the waiter any more.

use std::cell::{Cell, UnsafeCell as StdUnsafeCell};
use std::collections::VecDeque;
use std::fmt;
use std::marker::PhantomPinned;
use std::mem::MaybeUninit;
use std::ptr::{self, NonNull};
use std::task::Waker;

use crate::loom::{AtomicUsize, Ordering, UnsafeCell};

/// `Selector::state`: undecided.
const WAITING: usize = 0;
/// `Selector::state`: withdrawn by the owner.
const ABORTED: usize = usize::MAX;

/// Where a send or receive future stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Phase {
    /// Not offered yet, or to be offered again after a close/poison wake-up
    /// (a send future still holds its value).
    Start,
    /// The waiter is queued in the channel, or was popped and decided by a
    /// counterpart.
    Waiting,
    /// Completed (a send future's value is gone).
    Done,
}

/// A decoded [`Selector`] state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Status {
    /// No decision yet.
    Waiting,
    /// Guard `i` fired.
    Selected(usize),
    /// The owner withdrew.
    Aborted,
}

fn decode(state: usize) -> Status {
    match state {
        WAITING => Status::Waiting,
        ABORTED => Status::Aborted,
        s => Status::Selected(s - 1),
    }
}

/// The one-shot decision of a waiting party, and the waker to tell it about it.
pub(crate) struct Selector {
    /// See the module table.
    state: AtomicUsize,
    /// The owner's waker; see "Who may touch what".
    waker: UnsafeCell<Option<Waker>>,
    /// Whether this selector's waiters may sit on several channels at once (an `Alt`).
    multi: bool,
}

// SAFETY: `state` is atomic; `waker` is only accessed under the protocol of the module
// docs (owner writes while unreachable or under the one lock; counterparts read or take
// under a channel lock), and a `Waker` is `Send + Sync`.
unsafe impl Send for Selector {}
// SAFETY: as above.
unsafe impl Sync for Selector {}

impl Selector {
    /// A selector for a plain future (`multi == false`) or an `Alt` (`multi == true`).
    #[inline]
    pub(crate) fn new(multi: bool) -> Self {
        Selector {
            state: AtomicUsize::new(WAITING),
            waker: UnsafeCell::new(None),
            multi,
        }
    }

    /// Starts a new round. Only the owner calls this, while none of its waiters is
    /// queued; the lock taken to queue the first waiter publishes it to counterparts.
    pub(crate) fn reset(&self) {
        self.state.store(WAITING, Ordering::Relaxed);
    }

    /// The current decision. `Acquire`: a `Selected` result makes the deciding
    /// counterpart's write of the waiter's slot visible.
    #[inline]
    pub(crate) fn status(&self) -> Status {
        decode(self.state.load(Ordering::Acquire))
    }

    /// Whether the round is undecided (a hint for counterparts holding a lock).
    #[inline]
    fn is_waiting(&self) -> bool {
        self.state.load(Ordering::Relaxed) == WAITING
    }

    /// Decides the round for guard `index`; false if it was already decided.
    ///
    /// `Release` publishes the slot written (or emptied) just before; `Acquire` on the
    /// compare-and-swap orders the decision after earlier decisions' effects.
    #[inline]
    pub(crate) fn try_select(&self, index: usize) -> bool {
        debug_assert!(index < ABORTED - 1, "tutti: guard index out of range");
        if !self.multi {
            // Single channel: only counterparts holding that channel's lock decide, and a
            // waiter is popped before being decided, so it is decided at most once.
            debug_assert!(self.is_waiting());
            self.state.store(index + 1, Ordering::Release);
            return true;
        }
        self.state
            .compare_exchange(WAITING, index + 1, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }

    /// The owner withdraws; `Err(i)` if guard `i` was selected first.
    pub(crate) fn abort(&self) -> Result<(), usize> {
        match self
            .state
            .compare_exchange(WAITING, ABORTED, Ordering::AcqRel, Ordering::Acquire)
        {
            Ok(_) => Ok(()),
            Err(s) => match decode(s) {
                Status::Selected(i) => Err(i),
                // Already withdrawn: nothing can be selected any more.
                Status::Aborted | Status::Waiting => Ok(()),
            },
        }
    }

    /// Stores the owner's waker (keeping the old one if it wakes the same task).
    ///
    /// # Safety
    /// No counterpart may read the waker concurrently: none of this selector's waiters is
    /// queued, or (single-channel selector) the caller holds that channel's lock.
    pub(crate) unsafe fn set_waker(&self, waker: &Waker) {
        self.waker.with_mut(|w| {
            // SAFETY: exclusive access by the caller's contract.
            let w = unsafe { &mut *w };
            match w {
                Some(old) if old.will_wake(waker) => {}
                _ => *w = Some(waker.clone()),
            }
        });
    }

    /// Whether the stored waker wakes the same task as `waker`.
    ///
    /// # Safety
    /// As for [`set_waker`](Self::set_waker), or the selector is multi-channel
    /// (counterparts only ever read its waker).
    pub(crate) unsafe fn will_wake(&self, waker: &Waker) -> bool {
        // SAFETY: no concurrent writer by the caller's contract.
        self.waker
            .with(|w| unsafe { &*w }.as_ref().is_some_and(|w| w.will_wake(waker)))
    }

    /// The waker a counterpart wakes after deciding the round.
    ///
    /// # Safety
    /// The caller holds the lock of a channel in whose queue a waiter of this selector sat
    /// when the lock was taken, and has not decided the round yet.
    unsafe fn waker_for_commit(&self) -> Option<Waker> {
        if self.multi {
            // SAFETY: other counterparts may read concurrently; nobody writes (module docs).
            self.waker.with(|w| unsafe { &*w }.clone())
        } else {
            // SAFETY: a single-channel selector is only reachable under this lock.
            self.waker.with_mut(|w| unsafe { &mut *w }.take())
        }
    }
}

impl fmt::Debug for Selector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Selector")
            .field("status", &self.status())
            .finish_non_exhaustive()
    }
}

/// One registration of a waiting party on one channel: where its value lives and which
/// selector decides it.
pub(crate) struct Waiter<T> {
    /// The selector deciding this waiter; valid while the waiter is queued.
    selector: UnsafeCell<*const Selector>,
    /// The guard index this waiter stands for in its selector.
    index: UnsafeCell<usize>,
    /// A sender's offered value, or the value delivered to a receiver.
    slot: UnsafeCell<Option<T>>,
    /// Queues point at waiters: they must not move while queued.
    _pinned: PhantomPinned,
}

// SAFETY: a waiter carries a `T` between threads (hence `T: Send`); its fields are only
// touched under the protocol of the module docs (the channel lock, or exclusive ownership
// while unqueued), never through unsynchronised shared access.
unsafe impl<T: Send> Send for Waiter<T> {}
// SAFETY: as above; shared references only reach `UnsafeCell`s under that protocol.
unsafe impl<T: Send> Sync for Waiter<T> {}

impl<T> Waiter<T> {
    /// A waiter holding `value` (a sender's) or nothing (a receiver's).
    #[inline]
    pub(crate) fn new(value: Option<T>) -> Self {
        Waiter {
            selector: UnsafeCell::new(ptr::null()),
            index: UnsafeCell::new(0),
            slot: UnsafeCell::new(value),
            _pinned: PhantomPinned,
        }
    }

    /// Points this waiter at `selector`'s guard `index` before it is queued.
    ///
    /// # Safety
    /// The waiter is not queued anywhere, and `selector` outlives its next stay in a queue.
    pub(crate) unsafe fn prepare(&self, selector: &Selector, index: usize) {
        // SAFETY: not queued, so no counterpart reads these fields (module docs).
        self.selector.with_mut(|p| unsafe { *p = selector });
        // SAFETY: as above.
        self.index.with_mut(|p| unsafe { *p = index });
    }

    /// The owner takes the slot's value.
    ///
    /// # Safety
    /// The waiter is not queued and no counterpart is mid-commit on it: its decision was
    /// observed with `Acquire`, or it was removed (or found missing) under the lock, or it
    /// was never queued.
    pub(crate) unsafe fn take_slot(&self) -> Option<T> {
        // SAFETY: exclusive by the caller's contract.
        self.slot.with_mut(|p| unsafe { (*p).take() })
    }

    /// The owner puts a value into the (empty) slot. Same contract as
    /// [`take_slot`](Self::take_slot).
    pub(crate) unsafe fn put_slot(&self, value: T) {
        // SAFETY: exclusive by the caller's contract.
        self.slot.with_mut(|p| unsafe { *p = Some(value) });
    }

    /// The selector and guard index; for counterparts holding the lock.
    ///
    /// # Safety
    /// The waiter was queued when the caller took the channel lock, which it still holds.
    unsafe fn target(&self) -> (&Selector, usize) {
        // SAFETY: written before queueing; the selector outlives the queue stay.
        let sel = self.selector.with(|p| unsafe { &**p });
        // SAFETY: as above.
        let index = self.index.with(|p| unsafe { *p });
        (sel, index)
    }

    /// A counterpart delivers `value` to this receiving waiter and decides its selector.
    /// Returns the waker to wake (after unlocking), or the value back if the selector was
    /// already decided (an `Alt` that fired another guard, or withdrew).
    ///
    /// # Safety
    /// The caller popped this waiter from a queue of the channel whose lock it holds.
    pub(crate) unsafe fn complete_with(&self, value: T) -> Result<Option<Waker>, T> {
        // SAFETY: caller's contract.
        let (sel, index) = unsafe { self.target() };
        if !sel.is_waiting() {
            return Err(value);
        }
        // Everything we need from the waiter is read before deciding: once decided, the
        // owner may free it.
        // SAFETY: popped under the lock, undecided.
        let waker = unsafe { sel.waker_for_commit() };
        // SAFETY: a queued waiter's slot belongs to the lock holder.
        self.slot.with_mut(|p| unsafe { *p = Some(value) });
        if sel.try_select(index) {
            return Ok(waker);
        }
        // Lost the race to another channel's counterpart (only multi-channel selectors can
        // lose, and their waker was cloned, not taken).
        // SAFETY: undecided by us, so the slot is still ours under the lock.
        let value = self.slot.with_mut(|p| unsafe { (*p).take() });
        Err(value.expect("tutti: a waiter's slot was emptied by someone else"))
    }

    /// A counterpart takes this sending waiter's value and decides its selector. Returns
    /// the value and the waker, or `None` if the selector was already decided.
    ///
    /// # Safety
    /// As for [`complete_with`](Self::complete_with).
    pub(crate) unsafe fn complete_taking(&self) -> Option<(T, Option<Waker>)> {
        // SAFETY: caller's contract.
        let (sel, index) = unsafe { self.target() };
        if !sel.is_waiting() {
            return None;
        }
        // SAFETY: popped under the lock, undecided.
        let waker = unsafe { sel.waker_for_commit() };
        // SAFETY: a queued waiter's slot belongs to the lock holder.
        let value = self.slot.with_mut(|p| unsafe { (*p).take() })?;
        if sel.try_select(index) {
            return Some((value, waker));
        }
        // SAFETY: undecided by us, so the slot is still ours under the lock.
        self.slot.with_mut(|p| unsafe { *p = Some(value) });
        None
    }

    /// A counterpart decides this waiter's selector without moving a value (the channel
    /// was closed or poisoned): the owner wakes and looks at the channel again. Returns the
    /// waker, or `None` if the selector was already decided.
    ///
    /// # Safety
    /// As for [`complete_with`](Self::complete_with).
    pub(crate) unsafe fn complete_empty(&self) -> Option<Option<Waker>> {
        // SAFETY: caller's contract.
        let (sel, index) = unsafe { self.target() };
        if !sel.is_waiting() {
            return None;
        }
        // SAFETY: popped under the lock, undecided.
        let waker = unsafe { sel.waker_for_commit() };
        sel.try_select(index).then_some(waker)
    }
}

/// The waiting half of a plain send or receive future: its selector and its waiter,
/// created in place the first time the future has to wait.
///
/// A future that completes on its first poll (the common case in a ping-pong: the partner
/// is already waiting) thus never writes them, and creating the future writes almost
/// nothing — which also spares the copy of a freshly zeroed future into the awaiting
/// task's state a store-forwarding stall. Only the owner touches the cell itself;
/// counterparts reach the selector and waiter through the pointers queued in a channel,
/// after `get_or_init` returned.
pub(crate) struct Registration<T> {
    init: Cell<bool>,
    parts: StdUnsafeCell<MaybeUninit<(Selector, Waiter<T>)>>,
}

impl<T> Registration<T> {
    #[inline]
    pub(crate) const fn new() -> Self {
        Registration {
            init: Cell::new(false),
            parts: StdUnsafeCell::new(MaybeUninit::uninit()),
        }
    }

    /// The selector and waiter, if they were ever created.
    #[inline]
    pub(crate) fn get(&self) -> Option<(&Selector, &Waiter<T>)> {
        if !self.init.get() {
            return None;
        }
        // SAFETY: initialised (flag set after the write below), never written again, and
        // dropped only with `self`; only shared references are handed out.
        let (sel, waiter) = unsafe { (*self.parts.get()).assume_init_ref() };
        Some((sel, waiter))
    }

    /// The selector and waiter, created on first use (for a plain future: single-channel
    /// selector, empty waiter).
    #[inline]
    pub(crate) fn get_or_init(&self) -> (&Selector, &Waiter<T>) {
        if !self.init.get() {
            // SAFETY: not initialised, so no reference into `parts` exists yet and no
            // counterpart can reach it; `self` is `!Sync` (the `Cell`), so no other
            // thread runs this concurrently.
            unsafe { (*self.parts.get()).write((Selector::new(false), Waiter::new(None))) };
            self.init.set(true);
        }
        self.get()
            .expect("tutti: registration initialised just above")
    }
}

impl<T> Drop for Registration<T> {
    fn drop(&mut self) {
        if self.init.get() {
            // SAFETY: initialised, and `&mut self`: nothing refers to it any more (the
            // owning future withdrew its waiter before this drop).
            unsafe { self.parts.get_mut().assume_init_drop() };
        }
    }
}

// SAFETY: a registration is owned by one future; its parts are `Send` for `T: Send`.
unsafe impl<T: Send> Send for Registration<T> {}

/// A queued waiter. Only the channel lock's holder dereferences it.
pub(crate) struct WaiterRef<T>(NonNull<Waiter<T>>);

// SAFETY: a `WaiterRef` is only dereferenced under the channel lock, per the module
// protocol; it moves `T` values between threads, hence `T: Send`.
unsafe impl<T: Send> Send for WaiterRef<T> {}

impl<T> WaiterRef<T> {
    /// The waiter.
    ///
    /// # Safety
    /// The caller holds the lock of the channel from whose queue it popped this reference,
    /// so by the queue invariant the waiter is alive for as long as the lock is held.
    pub(crate) unsafe fn get<'a>(&self) -> &'a Waiter<T> {
        // SAFETY: alive by the queue invariant.
        unsafe { self.0.as_ref() }
    }
}

/// A FIFO of waiters: waiting senders, or waiting receivers, of one channel.
pub(crate) struct WaitQueue<T> {
    list: VecDeque<WaiterRef<T>>,
}

impl<T> WaitQueue<T> {
    pub(crate) const fn new() -> Self {
        WaitQueue {
            list: VecDeque::new(),
        }
    }

    /// Queues `waiter` at the back.
    ///
    /// # Safety
    /// `waiter` stays alive at its address until it is popped or removed (the queue
    /// invariant), was prepared for its selector, and is in no other queue.
    pub(crate) unsafe fn push(&mut self, waiter: &Waiter<T>) {
        self.list.push_back(WaiterRef(NonNull::from(waiter)));
    }

    /// Pops the oldest waiter.
    #[inline]
    pub(crate) fn pop(&mut self) -> Option<WaiterRef<T>> {
        self.list.pop_front()
    }

    /// Removes `waiter` if it is queued; returns whether it was.
    pub(crate) fn remove(&mut self, waiter: &Waiter<T>) -> bool {
        let target = NonNull::from(waiter);
        match self.list.iter().position(|w| w.0 == target) {
            Some(i) => {
                self.list.remove(i);
                true
            }
            None => false,
        }
    }

    /// Whether `waiter` is queued.
    pub(crate) fn contains(&self, waiter: &Waiter<T>) -> bool {
        let target = NonNull::from(waiter);
        self.list.iter().any(|w| w.0 == target)
    }

    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// Number of queued waiters.
    pub(crate) fn len(&self) -> usize {
        self.list.len()
    }
}
