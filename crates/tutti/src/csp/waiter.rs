//! Waiters: how a party that cannot complete at once sits in a channel's queue, and how
//! a counterpart completes it.
//!
//! A channel's queues are intrusive: each holds [`Node`]s, chained through their `next`
//! pointers, and the node lives inside the waiting party. There are two kinds of party:
//!
//! * a plain `send`/`recv` future has one [`PlainWaiter`] inline (its node, and its waker
//!   in one word). The node's own word holds the decision: the one counterpart that pops
//!   it (under the channel lock) sets `DECIDED` as its last write.
//! * an [`Alt`](super::Alt) has one [`Selector`] (the decision shared by all its guards,
//!   `WAITING → SELECTED(i)` or `ABORTED` by compare-and-swap, and the owner's waker) and
//!   one [`GuardWaiter`] per channel guard (its node, a pointer to the selector, its guard
//!   index), each at a stable heap address.
//!
//! A plain receive future waiting on a channel of `u32` is 32 bytes: the channel
//! reference, the node (16) and the waker (8).
//!
//! # `Node::word` (one `u32`)
//!
//! | bits | name | meaning | written by |
//! |---|---|---|---|
//! | 0–1 | phase | a plain future's `Start` / `Waiting` / `Done` | the owner, only while not queued |
//! | 2 | `DECIDED` | a counterpart popped this plain waiter and completed it | that counterpart, under the lock, last (`Release`) |
//! | 3 | `FULL` | the slot holds a value | the owner while not queued; a counterpart while queued |
//! | 4 | `GUARD` | the node belongs to a [`GuardWaiter`] | at creation; never changes |
//! | 5 | `OFFER` | a send guard's two-phase offer: a counterpart may not take the value, only decide the selector (a *poke*) | the owner, only while not queued |
//!
//! # `Selector::state` (one `usize`)
//!
//! | value | name | meaning | set by |
//! |---|---|---|---|
//! | `0` | `WAITING` | undecided; counterparts may commit | the owner, while no waiter of it is queued |
//! | `i + 1` | `SELECTED(i)` | guard `i` fired; final for this round | the one counterpart (or the owner itself) that wins |
//! | `usize::MAX` | `ABORTED` | the owner withdrew; final for this round | the owner (an `Alt` being dropped, or changing its waker) |
//!
//! # Who may touch what
//!
//! * A node's `next` and, while it is queued, its slot belong to the holder of the lock of
//!   the channel whose queue holds it. A counterpart reads or writes the slot, then
//!   decides (a plain waiter's `DECIDED`, a guard's selector), and never touches the node
//!   again after deciding. The owner touches the slot only when the node is not queued
//!   and no counterpart is mid-commit: after observing the decision with `Acquire`, or
//!   after removing (or failing to find) the node under the lock.
//! * A plain waiter's waker is written by the owner while not queued or under the lock,
//!   and taken by the counterpart under the lock (only one counterpart can pop it). A
//!   selector's waker is written by the owner only while none of its waiters is queued,
//!   and *cloned* by counterparts under a channel lock (several may read it at once).
//!
//! # The queue invariant
//!
//! A pointer to a node is in a channel queue only while the node is alive at that
//! address. Owners guarantee this by queueing only from pinned memory (a `!Unpin` future,
//! or an `Alt`'s heap entries) and by removing the node, under the lock, before that
//! memory is released (their `Drop` does it). A counterpart pops the node before
//! deciding, so once the owner sees the decision nothing refers to the node any more —
//! which is also why a plain waiter that is not `DECIDED` is exactly one that is queued.

use std::fmt;
use std::marker::PhantomPinned;
use std::mem::MaybeUninit;
use std::ptr;
use std::task::{Context, Waker};

use crate::loom::{AtomicU32, AtomicUsize, Ordering, UnsafeCell};
use crate::runtime::task::CompactWaker;

const PHASE: u32 = 0b11;
const DECIDED: u32 = 1 << 2;
const FULL: u32 = 1 << 3;
const GUARD: u32 = 1 << 4;
const OFFER: u32 = 1 << 5;

/// What a counterpart did with a sending waiter it popped.
pub(crate) enum Taking<T> {
    /// It took the value and decided the waiter: wake the waker (after unlocking).
    Took(T, Option<Waker>),
    /// A two-phase offer: it decided the waiter's `Alt` without taking the value, so that
    /// the `Alt` looks again and sends itself; wake the waker.
    Poked(Option<Waker>),
    /// The waiter's `Alt` had been decided already: nothing happened.
    Dead,
}

/// Where a plain send or receive future stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Phase {
    /// Not offered yet, or to be offered again after a close/poison wake-up (a send
    /// future's value is in its slot).
    Start = 0,
    /// The waiter is queued in the channel, or was popped and decided by a counterpart.
    Waiting = 1,
    /// Completed (a send future's value is gone).
    Done = 2,
}

/// The part of every waiter that a channel queue links.
#[repr(C)]
pub(crate) struct Node<T> {
    /// The next node of the queue (circular; see [`WaitQueue`]).
    next: UnsafeCell<*const Node<T>>,
    /// See the module table.
    word: AtomicU32,
    /// A sender's offered value, or the value delivered to a receiver (`FULL`).
    slot: UnsafeCell<MaybeUninit<T>>,
}

// SAFETY: a node carries a `T` between threads (hence `T: Send`); its fields are only
// touched under the protocol of the module docs.
unsafe impl<T: Send> Send for Node<T> {}
// SAFETY: as above.
unsafe impl<T: Send> Sync for Node<T> {}

impl<T> Node<T> {
    fn new(value: Option<T>, guard: bool) -> Node<T> {
        let mut word = if guard { GUARD } else { 0 };
        let slot = match value {
            Some(v) => {
                word |= FULL;
                MaybeUninit::new(v)
            }
            None => MaybeUninit::uninit(),
        };
        Node {
            next: UnsafeCell::new(ptr::null()),
            word: AtomicU32::new(word),
            slot: UnsafeCell::new(slot),
        }
    }

    #[inline]
    fn word(&self) -> u32 {
        self.word.load(Ordering::Relaxed)
    }

    /// Moves the value out of a full slot; `None` if it is empty.
    ///
    /// # Safety
    /// The caller has the slot (module docs); for a plain node, its decision (if any) was
    /// observed with `Acquire`.
    unsafe fn take(&self) -> Option<T> {
        let w = self.word();
        if w & FULL == 0 {
            return None;
        }
        self.word.store(w & !FULL, Ordering::Relaxed);
        // SAFETY: `FULL` says the slot is initialised; the caller has it.
        Some(self.slot.with(|s| unsafe { (*s).assume_init_read() }))
    }

    /// Puts a value into the empty slot. Same contract as [`take`](Self::take).
    unsafe fn put(&self, value: T) {
        let w = self.word();
        debug_assert!(w & FULL == 0, "tutti: a waiter's slot was full");
        // SAFETY: the caller has the slot.
        self.slot.with_mut(|s| unsafe { (*s).write(value) });
        self.word.store(w | FULL, Ordering::Relaxed);
    }

    /// The guard waiter this node belongs to.
    ///
    /// # Safety
    /// The node has `GUARD` (it is the first field of a `repr(C)` `GuardWaiter`).
    unsafe fn guard(&self) -> &GuardWaiter<T> {
        // SAFETY: by the caller's contract.
        unsafe { &*(self as *const Node<T>).cast::<GuardWaiter<T>>() }
    }

    /// The plain waiter this node belongs to.
    ///
    /// # Safety
    /// The node lacks `GUARD` (it is the first field of a `repr(C)` `PlainWaiter`).
    unsafe fn plain(&self) -> &PlainWaiter<T> {
        // SAFETY: by the caller's contract.
        unsafe { &*(self as *const Node<T>).cast::<PlainWaiter<T>>() }
    }

    /// Whether this queued node is a live waiter of a party other than the `Alt` of
    /// `selector` (plain: always live while queued).
    ///
    /// # Safety
    /// The node is queued in a channel whose lock the caller holds.
    unsafe fn is_live_peer_of(&self, selector: &Selector) -> bool {
        let w = self.word();
        if w & GUARD == 0 {
            return true;
        }
        if w & OFFER != 0 {
            return false; // nobody can complete against it: it is poked instead
        }
        // SAFETY: a guard node, queued (alive) under the caller's lock.
        let g = unsafe { self.guard() };
        !std::ptr::eq(g.selector, selector) && g.selector().is_waiting()
    }

    /// A counterpart delivers `value` to this receiving waiter and decides it. Returns the
    /// waker to wake (after unlocking), or the value back if the waiter's `Alt` had been
    /// decided already (for another guard, or withdrawn).
    ///
    /// # Safety
    /// The caller popped this node from a queue of the channel whose lock it holds.
    #[inline]
    pub(crate) unsafe fn complete_with(&self, value: T) -> Result<Option<Waker>, T> {
        if self.word() & GUARD != 0 {
            // SAFETY: by the caller's contract.
            return unsafe { self.complete_guard_with(value) };
        }
        // SAFETY: a plain node, popped under the lock: undecided and ours.
        unsafe {
            let waker = self.plain().take_waker();
            self.slot.with_mut(|s| (*s).write(value));
            self.word
                .store(self.word() | FULL | DECIDED, Ordering::Release);
            Ok(waker)
        }
    }

    /// [`complete_with`](Self::complete_with) for an `Alt` guard's node: out of line, so
    /// that a plain rendezvous inlines only its own branch.
    ///
    /// # Safety
    /// As for [`complete_with`](Self::complete_with), and the node is a guard's.
    #[inline(never)]
    unsafe fn complete_guard_with(&self, value: T) -> Result<Option<Waker>, T> {
        // SAFETY: a guard node; popped under the lock (caller).
        unsafe {
            let g = self.guard();
            let sel = g.selector();
            if !sel.is_waiting() {
                return Err(value);
            }
            // Read everything we need before deciding: afterwards the owner may free it.
            let waker = sel.clone_waker();
            self.put(value);
            if sel.try_select(g.index) {
                return Ok(waker);
            }
            // Lost the race to another channel's counterpart: move the value back.
            Err(self.take().expect("tutti: a guard's slot was emptied"))
        }
    }

    /// Whether this node is a guard of the `Alt` of `selector`.
    ///
    /// # Safety
    /// As for [`is_live_peer_of`](Self::is_live_peer_of), or popped under the lock.
    pub(crate) unsafe fn is_guard_of(&self, selector: &Selector) -> bool {
        // SAFETY: by the caller's contract, the node is alive.
        self.word() & GUARD != 0 && std::ptr::eq(unsafe { self.guard() }.selector, selector)
    }

    /// Whether this node is a plain future's (not an `Alt` guard's).
    ///
    /// # Safety
    /// As for [`complete_with`](Self::complete_with).
    pub(crate) unsafe fn is_plain(&self) -> bool {
        self.word() & GUARD == 0
    }

    /// A counterpart takes this sending waiter's value and decides it — or, for a
    /// two-phase offer (`OFFER`), only decides it, leaving the value (a poke).
    ///
    /// # Safety
    /// As for [`complete_with`](Self::complete_with).
    #[inline]
    pub(crate) unsafe fn complete_taking(&self) -> Taking<T> {
        let w = self.word();
        if w & GUARD != 0 {
            // SAFETY: by the caller's contract.
            return unsafe { self.complete_guard_taking(w) };
        }
        // SAFETY: a plain node, popped under the lock: undecided and ours.
        unsafe {
            let waker = self.plain().take_waker();
            debug_assert!(w & FULL != 0, "tutti: a waiting sender without a value");
            let value = self.slot.with(|s| (*s).assume_init_read());
            self.word.store((w & !FULL) | DECIDED, Ordering::Release);
            Taking::Took(value, waker)
        }
    }

    /// [`complete_taking`](Self::complete_taking) for an `Alt` guard's node (`w`: its
    /// word): out of line, as [`complete_guard_with`](Self::complete_guard_with).
    ///
    /// # Safety
    /// As for [`complete_with`](Self::complete_with), and the node is a guard's.
    #[inline(never)]
    unsafe fn complete_guard_taking(&self, w: u32) -> Taking<T> {
        // SAFETY: a guard node; popped under the lock (caller).
        unsafe {
            let g = self.guard();
            let sel = g.selector();
            if !sel.is_waiting() {
                return Taking::Dead;
            }
            let waker = sel.clone_waker();
            if w & OFFER != 0 {
                // The value stays: the owner sends it in its own poll, or keeps it.
                return match sel.try_select(g.index) {
                    true => Taking::Poked(waker),
                    false => Taking::Dead,
                };
            }
            let Some(value) = self.take() else {
                return Taking::Dead;
            };
            if sel.try_select(g.index) {
                return Taking::Took(value, waker);
            }
            self.put(value);
            Taking::Dead
        }
    }

    /// A counterpart decides this waiter without moving a value (the channel was closed
    /// or poisoned): the owner wakes and looks at the channel again. Returns the waker, or
    /// `None` if the waiter's `Alt` had been decided already.
    ///
    /// # Safety
    /// As for [`complete_with`](Self::complete_with).
    pub(crate) unsafe fn complete_empty(&self) -> Option<Option<Waker>> {
        if self.word() & GUARD != 0 {
            // SAFETY: a guard node; popped under the lock (caller).
            unsafe {
                let g = self.guard();
                let sel = g.selector();
                if !sel.is_waiting() {
                    return None;
                }
                let waker = sel.clone_waker();
                sel.try_select(g.index).then_some(waker)
            }
        } else {
            // SAFETY: a plain node, popped under the lock: undecided and ours.
            unsafe {
                let waker = self.plain().take_waker();
                self.word.store(self.word() | DECIDED, Ordering::Release);
                Some(waker)
            }
        }
    }
}

impl<T> Drop for Node<T> {
    #[inline]
    fn drop(&mut self) {
        if self.word() & FULL != 0 {
            // SAFETY: `&mut self`: not queued any more (owners remove their nodes before
            // dropping them), and `FULL` says the slot is initialised.
            self.slot.with_mut(|s| unsafe { (*s).assume_init_drop() });
        }
    }
}

/// The waiting half of a plain send or receive future: its queue node and its waker.
#[repr(C)]
pub(crate) struct PlainWaiter<T> {
    node: Node<T>,
    waker: UnsafeCell<CompactWaker>,
    /// Queues point at the node: it must not move while queued.
    _pinned: PhantomPinned,
}

// SAFETY: see `Node`; the waker is `Send + Sync`.
unsafe impl<T: Send> Send for PlainWaiter<T> {}
// SAFETY: as above.
unsafe impl<T: Send> Sync for PlainWaiter<T> {}

impl<T> PlainWaiter<T> {
    /// A waiter holding `value` (a sender's) or nothing (a receiver's), in phase `Start`.
    #[inline]
    pub(crate) fn new(value: Option<T>) -> Self {
        PlainWaiter {
            node: Node::new(value, false),
            waker: UnsafeCell::new(CompactWaker::new()),
            _pinned: PhantomPinned,
        }
    }

    /// The node, to queue it.
    #[inline]
    pub(crate) fn node(&self) -> &Node<T> {
        &self.node
    }

    /// The phase (owner only).
    #[inline]
    pub(crate) fn phase(&self) -> Phase {
        match self.node.word() & PHASE {
            0 => Phase::Start,
            1 => Phase::Waiting,
            _ => Phase::Done,
        }
    }

    /// Sets the phase. The owner only, while the node is not queued (clears `DECIDED`).
    #[inline]
    pub(crate) fn set_phase(&self, phase: Phase) {
        let w = self.node.word();
        self.node
            .word
            .store((w & !(PHASE | DECIDED)) | phase as u32, Ordering::Relaxed);
    }

    /// Whether a counterpart has popped and completed the waiter (`Acquire`: its writes
    /// to the slot are visible afterwards). While it has not, the node is queued.
    #[inline]
    pub(crate) fn is_decided(&self) -> bool {
        self.node.word.load(Ordering::Acquire) & DECIDED != 0
    }

    /// Takes the slot's value, if any.
    ///
    /// # Safety
    /// The node is not queued and no counterpart is mid-commit on it: its decision was
    /// observed with `Acquire`, or it was removed (or found missing) under the lock, or
    /// it was never queued.
    #[inline]
    pub(crate) unsafe fn take_slot(&self) -> Option<T> {
        // SAFETY: by the caller's contract.
        unsafe { self.node.take() }
    }

    /// Puts a value into the empty slot. Same contract as [`take_slot`](Self::take_slot).
    #[inline]
    pub(crate) unsafe fn put_slot(&self, value: T) {
        // SAFETY: by the caller's contract.
        unsafe { self.node.put(value) }
    }

    /// Stores the owner's waker (keeping the stored one if it wakes the same task).
    ///
    /// # Safety
    /// The node is not queued, or the caller holds the lock of the channel queueing it.
    #[inline]
    pub(crate) unsafe fn set_waker(&self, cx: &Context<'_>) {
        // SAFETY: exclusive by the caller's contract.
        self.waker.with_mut(|w| unsafe { (*w).set(cx.waker()) });
    }

    /// # Safety
    /// The caller holds the lock of the channel that queued the node and popped it.
    unsafe fn take_waker(&self) -> Option<Waker> {
        // SAFETY: by the caller's contract nobody else touches the waker.
        self.waker.with_mut(|w| unsafe { (*w).take() })
    }
}

/// A channel guard's waiter in an `Alt`: its node, the `Alt`'s selector, its index.
#[repr(C)]
pub(crate) struct GuardWaiter<T> {
    node: Node<T>,
    selector: *const Selector,
    index: usize,
}

// SAFETY: see `Node`; the selector pointer is only followed under the protocol.
unsafe impl<T: Send> Send for GuardWaiter<T> {}
// SAFETY: as above.
unsafe impl<T: Send> Sync for GuardWaiter<T> {}

impl<T> GuardWaiter<T> {
    /// A waiter for guard `index` of the `Alt` whose selector is `selector` (which must
    /// outlive every stay of the waiter in a queue), holding `value` for a send guard.
    pub(crate) fn new(selector: &Selector, index: usize, value: Option<T>) -> Self {
        GuardWaiter {
            node: Node::new(value, true),
            selector,
            index,
        }
    }

    /// The node, to queue it.
    #[inline]
    pub(crate) fn node(&self) -> &Node<T> {
        &self.node
    }

    /// The `Alt`'s selector.
    fn selector(&self) -> &Selector {
        // SAFETY: the selector outlives every stay of the waiter in a queue (`new`), and
        // only counterparts holding a lock of a queue that held the waiter follow it.
        unsafe { &*self.selector }
    }

    /// Takes the slot's value, if any. Same contract as [`PlainWaiter::take_slot`], the
    /// decision being the selector's.
    pub(crate) unsafe fn take_slot(&self) -> Option<T> {
        // SAFETY: by the caller's contract.
        unsafe { self.node.take() }
    }

    /// Puts a value into the empty slot. Same contract as
    /// [`take_slot`](Self::take_slot).
    pub(crate) unsafe fn put_slot(&self, value: T) {
        // SAFETY: by the caller's contract.
        unsafe { self.node.put(value) }
    }

    /// Whether the slot holds a value (the owner, while the waiter is not queued).
    pub(crate) fn is_full(&self) -> bool {
        self.node.word() & FULL != 0
    }

    /// Makes a send guard's waiter a two-phase offer (`OFFER`) or a plain one. Only the
    /// owner calls this, while the waiter is not queued; the channel lock taken to queue
    /// it publishes the bit to counterparts.
    pub(crate) fn set_offer(&self, offer: bool) {
        let w = self.node.word();
        let to = if offer { w | OFFER } else { w & !OFFER };
        if to != w {
            self.node.word.store(to, Ordering::Relaxed);
        }
    }
}

/// `Selector::state`: undecided.
const WAITING: usize = 0;
/// `Selector::state`: withdrawn by the owner.
const ABORTED: usize = usize::MAX;

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

/// The one-shot decision of an `Alt` round, and the waker to tell it about it.
pub(crate) struct Selector {
    /// See the module table.
    state: AtomicUsize,
    /// The owner's waker; see "Who may touch what".
    waker: UnsafeCell<Option<Waker>>,
}

// SAFETY: `state` is atomic; `waker` is only accessed under the protocol of the module
// docs, and a `Waker` is `Send + Sync`.
unsafe impl Send for Selector {}
// SAFETY: as above.
unsafe impl Sync for Selector {}

impl Selector {
    pub(crate) fn new() -> Self {
        Selector {
            state: AtomicUsize::new(WAITING),
            waker: UnsafeCell::new(None),
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
    /// None of this selector's waiters is queued (no counterpart reads the waker).
    pub(crate) unsafe fn set_waker(&self, waker: &Waker) {
        self.waker.with_mut(|w| {
            // SAFETY: exclusive by the caller's contract.
            let w = unsafe { &mut *w };
            match w {
                Some(old) if old.will_wake(waker) => {}
                _ => *w = Some(waker.clone()),
            }
        });
    }

    /// Whether the stored waker wakes the same task as `waker`. Counterparts only ever
    /// read the waker, so the owner may ask at any time.
    pub(crate) fn will_wake(&self, waker: &Waker) -> bool {
        // SAFETY: only the owner writes the waker, and it is the caller.
        self.waker
            .with(|w| unsafe { &*w }.as_ref().is_some_and(|w| w.will_wake(waker)))
    }

    /// A clone of the owner's waker, for a counterpart about to decide the round.
    ///
    /// # Safety
    /// The caller holds the lock of a channel in whose queue a waiter of this selector sat
    /// when the lock was taken.
    unsafe fn clone_waker(&self) -> Option<Waker> {
        // SAFETY: other counterparts may read concurrently; nobody writes (module docs).
        self.waker.with(|w| unsafe { &*w }.clone())
    }
}

impl fmt::Debug for Selector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Selector")
            .field("status", &self.status())
            .finish_non_exhaustive()
    }
}

/// A queued node. Only the channel lock's holder dereferences it.
pub(crate) struct NodeRef<T>(*const Node<T>);

impl<T> NodeRef<T> {
    /// The node.
    ///
    /// # Safety
    /// The caller holds the lock of the channel from whose queue it popped this reference,
    /// so by the queue invariant the node is alive for as long as the lock is held.
    pub(crate) unsafe fn get<'a>(&self) -> &'a Node<T> {
        // SAFETY: alive by the queue invariant.
        unsafe { &*self.0 }
    }
}

/// A FIFO of waiters (waiting senders, or waiting receivers, of one channel): a circular
/// singly linked list through the nodes' `next`, kept by its tail (whose `next` is the
/// head), so a queue is one word. Pushing and popping are O(1); removing a node (a future
/// dropped while waiting, an `Alt` disabling its other guards) walks the queue.
pub(crate) struct WaitQueue<T> {
    tail: *const Node<T>,
}

// SAFETY: the queue is only used under its channel's lock; the nodes carry `T`s.
unsafe impl<T: Send> Send for WaitQueue<T> {}

impl<T> WaitQueue<T> {
    pub(crate) const fn new() -> Self {
        WaitQueue { tail: ptr::null() }
    }

    /// # Safety (of the link accessors)
    /// The caller holds the channel lock and `node` is queued here (or being queued).
    unsafe fn next_of(node: *const Node<T>) -> *const Node<T> {
        // SAFETY: by the caller's contract.
        unsafe { (*node).next.with(|n| *n) }
    }

    unsafe fn set_next(node: *const Node<T>, to: *const Node<T>) {
        // SAFETY: by the caller's contract.
        unsafe { (*node).next.with_mut(|n| *n = to) }
    }

    /// Queues `node` at the back.
    ///
    /// # Safety
    /// `node` stays alive at its address until it is popped or removed (the queue
    /// invariant), and is in no queue.
    pub(crate) unsafe fn push(&mut self, node: &Node<T>) {
        let node: *const Node<T> = node;
        // SAFETY: under the lock (the caller holds `&mut` of the channel state); `node`
        // and the queued nodes are alive.
        unsafe {
            if self.tail.is_null() {
                Self::set_next(node, node);
            } else {
                Self::set_next(node, Self::next_of(self.tail));
                Self::set_next(self.tail, node);
            }
        }
        self.tail = node;
    }

    /// Pops the oldest node.
    #[inline]
    pub(crate) fn pop(&mut self) -> Option<NodeRef<T>> {
        if self.tail.is_null() {
            return None;
        }
        // SAFETY: under the lock; queued nodes are alive.
        unsafe {
            let head = Self::next_of(self.tail);
            if head == self.tail {
                self.tail = ptr::null();
            } else {
                Self::set_next(self.tail, Self::next_of(head));
            }
            Self::set_next(head, ptr::null());
            Some(NodeRef(head))
        }
    }

    /// Removes `node` if it is queued; returns whether it was.
    pub(crate) fn remove(&mut self, node: &Node<T>) -> bool {
        let target: *const Node<T> = node;
        if self.tail.is_null() {
            return false;
        }
        let mut prev = self.tail;
        // SAFETY: under the lock; queued nodes are alive.
        unsafe {
            loop {
                let cur = Self::next_of(prev);
                if cur == target {
                    if cur == prev {
                        self.tail = ptr::null(); // it was the only one
                    } else {
                        Self::set_next(prev, Self::next_of(cur));
                        if cur == self.tail {
                            self.tail = prev;
                        }
                    }
                    Self::set_next(cur, ptr::null());
                    return true;
                }
                if cur == self.tail {
                    return false;
                }
                prev = cur;
            }
        }
    }

    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.tail.is_null()
    }

    /// Whether a live waiter of a party other than the `Alt` of `selector` is queued: a
    /// plain waiter (queued means undecided), or a guard of another undecided `Alt`.
    pub(crate) fn has_live_peer(&self, selector: &Selector) -> bool {
        if self.tail.is_null() {
            return false;
        }
        // SAFETY: under the lock; queued nodes are alive.
        unsafe {
            let mut p = Self::next_of(self.tail);
            loop {
                if (*p).is_live_peer_of(selector) {
                    return true;
                }
                if p == self.tail {
                    return false;
                }
                p = Self::next_of(p);
            }
        }
    }

    /// The wakers of the undecided `Alt`s with a guard waiter queued here, without
    /// deciding any of them: a channel whose `RESUMING` mark is cleared without an offer
    /// nudges the rotating `Alt`s that may wait for its sender (`alt/resume.rs`). Under the lock of the queue's channel.
    pub(crate) fn guard_wakers(&self, mut each: impl FnMut(Waker)) {
        if self.tail.is_null() {
            return;
        }
        // SAFETY: under the lock; queued nodes are alive, and a queued guard's selector
        // outlives its stay in the queue.
        unsafe {
            let mut p = Self::next_of(self.tail);
            loop {
                if (*p).word() & GUARD != 0 {
                    let sel = (*p).guard().selector();
                    if sel.is_waiting() {
                        if let Some(w) = sel.clone_waker() {
                            each(w);
                        }
                    }
                }
                if p == self.tail {
                    return;
                }
                p = Self::next_of(p);
            }
        }
    }

    /// Number of queued nodes (a walk; for reports and tests).
    pub(crate) fn len(&self) -> usize {
        if self.tail.is_null() {
            return 0;
        }
        let mut n = 1;
        // SAFETY: under the lock; queued nodes are alive.
        unsafe {
            let mut p = Self::next_of(self.tail);
            while p != self.tail {
                n += 1;
                p = Self::next_of(p);
            }
        }
        n
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn queue_is_fifo_and_removes_anywhere() {
        let nodes: Vec<Node<u32>> = (0..4).map(|i| Node::new(Some(i), false)).collect();
        let mut q = WaitQueue::new();
        assert!(q.is_empty());
        assert_eq!(q.len(), 0);
        for n in &nodes {
            // SAFETY: the nodes outlive the queue's use below.
            unsafe { q.push(n) };
        }
        assert_eq!(q.len(), 4);
        assert!(q.remove(&nodes[3]), "the tail");
        assert!(q.remove(&nodes[1]), "a middle one");
        assert!(!q.remove(&nodes[1]), "not queued any more");
        assert_eq!(q.len(), 2);
        // SAFETY: popped under our exclusive access; the nodes are alive.
        let first = q.pop().map(|r| unsafe { r.get() } as *const _);
        assert_eq!(first, Some(&nodes[0] as *const _));
        // SAFETY: as above.
        unsafe { q.push(&nodes[3]) };
        let order: Vec<*const Node<u32>> = std::iter::from_fn(|| q.pop())
            // SAFETY: as above.
            .map(|r| unsafe { r.get() } as *const _)
            .collect();
        assert_eq!(order, [&nodes[2] as *const _, &nodes[3] as *const _]);
        assert!(q.is_empty());
        assert!(!q.remove(&nodes[0]));
    }

    #[test]
    fn a_plain_receive_waiter_is_small() {
        assert_eq!(std::mem::size_of::<PlainWaiter<u32>>(), 24);
    }
}
