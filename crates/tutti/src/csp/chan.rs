//! The channel core: one lock, the waiting senders and receivers, the buffered values,
//! the count of ends and the end-of-life flags (closed, poisoned).
//!
//! # State
//!
//! Under the channel's lock (`Chan::inner`):
//!
//! * `buffer` — the buffered values ([`Buffer`]): nothing for a rendezvous (apart from
//!   values given back by cancelled receivers), a bounded FIFO otherwise.
//! * `senders` — queued waiters of senders that could not complete, each holding its
//!   value in its slot (plain futures or `Alt` send guards).
//! * `receivers` — queued waiters of receivers (plain futures or `Alt` receive guards)
//!   with empty slots.
//!
//! A queued `Alt` waiter whose selector has been decided elsewhere (the `Alt` fired
//! another guard, or withdrew) is *dead*: it stays queued until popped or removed, and
//! counterparts skip it. Every other queued waiter is *live*.
//!
//! In `Chan::ends` (one atomic word): the numbers of live `Tx` and `Rx` handles, changed
//! without the lock, and three flags, each set once, under the lock:
//!
//! * `CLOSED` — no more values may be sent: every `Tx` was dropped, or `close()` was
//!   called. Receivers still get what is buffered.
//! * `RX_GONE` — every `Rx` was dropped: senders get their values back.
//! * `POISONED` — `poison()` was called on some end; wins over everything.
//!
//! and `KEEP_OPEN`, fixed at creation: dropping the last `Tx` does not close the channel
//! (timer channels, whose sender is internal, never close).
//!
//! # Invariants
//!
//! 1. **One side waits.** A live receiver is queued only while the buffer is empty and
//!    no live sender (of another party) is queued; a sender is queued only while no live
//!    receiver (of another party) is queued and the buffer has no room. An `Alt` may
//!    have a send and a receive waiter on the same channel; they never match each other.
//! 2. **One place per value.** Every sent value is at each moment in exactly one place:
//!    a sender's slot, the buffer, a receiver's slot, or returned to user code. It moves
//!    between places only under the lock, or by the owner of an unqueued waiter.
//! 3. **Pop, move, decide.** A counterpart completes a waiter in one critical section: it
//!    pops the waiter, moves the value (into a receiver's slot, out of a sender's slot, or
//!    neither for close/poison), then decides the waiter. If the decision fails (an `Alt`
//!    decided elsewhere) it moves the value back before unlocking.
//! 4. **Nobody waits on a finished channel.** Once `POISONED`, or `CLOSED` for senders,
//!    or `CLOSED` with nothing left for receivers, or `RX_GONE` for senders, no waiter of
//!    that kind is queued: the critical section that sets the flag pops and decides them
//!    all, and later arrivals see the flag under the lock.
//! 5. **Only the unregistered decide.** A party decides another party's waiter only while
//!    it has no waiter of its own queued anywhere (a plain operation, or an `Alt` in its
//!    first, look-only pass). An `Alt` registering its waiters never decides anybody: if
//!    it finds a guard ready while registering, it withdraws and looks again (see the
//!    [`alt`](super::alt) module). So a party that commits to a counterpart can always
//!    complete its own side.
//!
//! # Operations
//!
//! *Send* (`offer`): poisoned → `Poisoned(v)`; closed or no receivers → `Closed(v)`; a
//! live receiver is queued → hand `v` into its slot and decide it (the send is complete:
//! a receiver has the value); room in the buffer → append; otherwise the sender waits
//! with `v` in its own slot.
//!
//! *Receive* (`take`): poisoned → `Poisoned`; a buffered value → take it, and if that made
//! room move the oldest live sender's value in (completing that send); a live sender
//! (rendezvous) → take its value and decide it (completing that send); closed → `Closed`;
//! otherwise wait with an empty slot.
//!
//! A waiting party is woken exactly when it is decided (invariant 3), and its waker is
//! taken or cloned *before* deciding, so a counterpart never touches a waiter after the
//! owner could have seen the decision and freed it.
//!
//! # Readiness hints
//!
//! `Chan::hints` is a lock-free summary of the state, rewritten (if it changed) by every
//! critical section just before it unlocks: `RECV_READY` — a receive might complete now
//! (a buffered value, a queued sender, or an end state); `SEND_READY` — a send might
//! (room, a queued receiver, or an end state). Readers load it `Relaxed` and use it only
//! to *skip* taking the lock when it says "not ready": `try_send`/`try_recv` then report
//! `Full`/`Empty`, and a look-only `Alt` pass skips the guard. The same byte holds the
//! `RESUMING` mark of rotating `Alt`s (`alt/resume.rs`). A hint can be stale only
//! with respect to critical sections that do not happen-before the reader, so a
//! `try_recv` still sees every value whose sending happens-before it. Anything that
//! *waits* decides under the lock, never on a hint.
//!
//! # Memory
//!
//! A channel is one 56-byte allocation (64 with the allocator's header): one word for the
//! lock byte, the hints byte and the capacity (48 bits: larger capacities count as
//! unbounded), the two queues (a word each: `waiter.rs`), the buffer pointer, the ends
//! word, the deadlock detector's record (a word, null for a channel made outside every
//! process network) and the record of its only sender (`deadlock/sender.rs`). `Tx` and `Rx` are a pointer each; the ends word is the
//! reference count.
//!
//! # Why no value is lost or duplicated under cancellation
//!
//! By invariant 2 it suffices that every place a future or an `Alt` abandons hands its
//! value on.
//!
//! * **A send future dropped while waiting** locks the channel. If its waiter is still
//!   queued, no counterpart has popped it, so (invariant 3) its value is still in its
//!   slot: the future removes the waiter and the value goes back to the future's owner
//!   (dropped with the future, or returned by `SendFuture::cancel`) — into nobody else's
//!   hands. If the waiter is not queued, a counterpart popped it and, in that same
//!   critical section, either took the value (a receiver has it; the send happened) or
//!   left it there because the channel was closed or poisoned (the value is the owner's).
//!   There is no third case, so for a rendezvous the value stays with the sender until a
//!   receiver commits, and a dropped sender never has a value in two places.
//! * **A receive future dropped while waiting** locks the channel. Still queued → nothing
//!   was delivered; remove it. Not queued → a counterpart delivered a value into its slot
//!   (or just woke it): the future *gives the value back* — to the next live receiver, or
//!   to the front of the buffer — so another receiver gets it. The sender's completion
//!   stands (a receiver did take the value), and the value is received exactly once.
//! * **An `Alt`** is the same per guard; additionally a counterpart that loses the race for
//!   the selector moves its value back (invariant 3) before unlocking. See the
//!   [`alt`](super::alt) module for the commit protocol itself.
//!
//! The `loom_tests` module model-checks these races.

use std::borrow::Cow;
use std::cell::UnsafeCell;
use std::collections::VecDeque;
use std::fmt;
use std::ptr::NonNull;
use std::task::Waker;

use super::alt::guard::Enable;
use super::buffer::Buffer;
use super::deadlock::{Home, Object, SenderNode, Side};
use super::error::{TryRecvError, TrySendError};
use super::waiter::{GuardWaiter, Node, Selector, Taking, WaitQueue};

use crate::loom::{AtomicU64, AtomicU8, Ordering};

#[cfg(not(loom))]
use super::lock::{Lock as RawLock, LockGuard as RawLockGuard};
#[cfg(loom)]
use crate::loom::{Mutex as RawLock, MutexGuard as RawLockGuard};

/// `Chan::hints`: a receive might complete now.
const RECV_READY: u8 = 1;
/// `Chan::hints`: a send might complete now.
const SEND_READY: u8 = 2;
/// `Chan::hints`: a sender whose value a rotating `Alt` took has not offered again yet. Not a
/// readiness hint but a mark, set and cleared only under the lock and kept across the
/// rewrites of the two hints (`alt/resume.rs`).
const RESUMING: u8 = 4;

/// `Chan::ends`: one `Tx`.
const TX_ONE: u64 = 1;
/// `Chan::ends`: one `Rx`.
const RX_ONE: u64 = 1 << 30;
/// Ends of one kind at most.
const MAX_ENDS: u64 = (1 << 30) - 1;
const TX_MASK: u64 = MAX_ENDS;
const RX_MASK: u64 = MAX_ENDS << 30;
/// `Chan::ends`: no more values may be sent.
const CLOSED: u64 = 1 << 60;
/// `Chan::ends`: every `Rx` was dropped.
const RX_GONE: u64 = 1 << 61;
/// `Chan::ends`: poisoned.
const POISONED: u64 = 1 << 62;
/// `Chan::ends`: dropping the last `Tx` does not close the channel.
const KEEP_OPEN: u64 = 1 << 63;

/// A channel: the state behind every `Tx` and `Rx` of it.
pub(crate) struct Chan<T> {
    /// Guards `inner` (module docs).
    lock: RawLock<()>,
    /// `RECV_READY | SEND_READY` as of the last critical section (module docs).
    hints: AtomicU8,
    /// The buffer and the queues; only touched while `lock` is held.
    inner: UnsafeCell<Inner<T>>,
    /// Numbers of `Tx` and `Rx` handles, and the end flags (module docs).
    ends: AtomicU64,
    /// The buffer's capacity (0 for a rendezvous); fixed, so readable without the lock.
    /// Six bytes, beside the lock and hint bytes in one word (see "Memory" above).
    capacity: Capacity,
    /// What the deadlock detector knows of the channel (`deadlock/home.rs`).
    pub(crate) home: Home,
    /// The actor or location that alone sends on it, if one does (`deadlock/sender.rs`).
    sender: SenderNode,
}

// SAFETY: `inner` is only touched under the lock; the channel moves `T`s between threads.
unsafe impl<T: Send> Send for Chan<T> {}
// SAFETY: as above.
unsafe impl<T: Send> Sync for Chan<T> {}

/// A channel's capacity in 48 bits, so that it fits in the word that holds the lock and
/// hint bytes. Capacities from [`Capacity::UNBOUNDED_FROM`] up are stored as unbounded
/// (`usize::MAX`): a buffer that large could never be filled in practice (2^48 values).
/// Packed to 2-byte alignment, so it takes 6 bytes and fills the word with the two bytes.
#[derive(Clone, Copy)]
#[repr(C, packed(2))]
struct Capacity {
    high: u16,
    low: u32,
}

impl Capacity {
    /// The smallest capacity stored as unbounded: `2^48 − 1`, all 48 bits set.
    const UNBOUNDED_FROM: usize = (1 << 48) - 1;

    fn new(capacity: usize) -> Capacity {
        let c = capacity.min(Self::UNBOUNDED_FROM) as u64;
        Capacity {
            high: (c >> 32) as u16,
            low: c as u32,
        }
    }

    #[inline]
    fn get(self) -> usize {
        let c = (u64::from(self.high) << 32) | u64::from(self.low);
        if c as usize >= Self::UNBOUNDED_FROM {
            super::channel::UNBOUNDED
        } else {
            c as usize
        }
    }
}

/// What the lock protects.
struct Inner<T> {
    buffer: Buffer<T>,
    senders: WaitQueue<T>,
    receivers: WaitQueue<T>,
}

/// Result of a sender's attempt under the lock.
pub(crate) enum Offer<T> {
    /// Delivered or buffered; wake this waker (of the receiver that got it) after unlocking.
    Done(Option<Waker>),
    /// Nobody to take it and no room: the sender must wait (or fail, for `try_send`).
    Wait(T),
    /// The channel is closed for sending (or every receiver is gone).
    Closed(T),
    /// The channel is poisoned.
    Poisoned(T),
}

/// Result of a receiver's attempt under the lock.
pub(crate) enum Take<T> {
    /// A value; wake this waker (of the sender that got completed) after unlocking.
    Value(T, Option<Waker>),
    /// Nothing yet.
    Empty,
    /// Closed and nothing left.
    Closed,
    /// The channel is poisoned.
    Poisoned,
}

/// Wakes `waker`, if any.
#[inline]
pub(crate) fn wake(waker: Option<Waker>) {
    if let Some(w) = waker {
        w.wake();
    }
}

/// The channel lock held: the state's operations. On drop it refreshes `Chan::hints`,
/// then unlocks.
pub(crate) struct State<'a, T> {
    chan: &'a Chan<T>,
    inner: &'a mut Inner<T>,
    /// The end flags, read when the lock was taken: only lock holders set them.
    flags: u64,
    /// The channel's capacity, decoded once per critical section (`Capacity::get`).
    capacity: usize,
    /// The owner of a two-phase offer poked in this critical section, woken after
    /// unlocking (`poke`).
    poked: Option<Waker>,
    /// Released by `drop`, before the poked owners are woken.
    lock: std::mem::ManuallyDrop<RawLockGuard<'a, ()>>,
}

impl<T> State<'_, T> {
    #[inline]
    fn flags(&self) -> u64 {
        self.flags
    }

    #[inline]
    fn set_flag(&mut self, flag: u64) {
        self.flags |= flag;
        // Relaxed: the flags are read under the lock (the unlock publishes them), or by
        // lock-free readers that only need a recent value.
        self.chan.ends.fetch_or(flag, Ordering::Relaxed);
    }

    /// Whether the channel is poisoned.
    #[inline]
    pub(crate) fn is_poisoned(&self) -> bool {
        self.flags() & POISONED != 0
    }

    #[inline]
    fn is_closed(&self) -> bool {
        self.flags() & CLOSED != 0
    }

    /// A sender's attempt: deliver, buffer, or report why not.
    #[inline]
    pub(crate) fn offer(&mut self, value: T) -> Offer<T> {
        let flags = self.flags();
        if flags & POISONED != 0 {
            return Offer::Poisoned(value);
        }
        if flags & (CLOSED | RX_GONE) != 0 {
            return Offer::Closed(value);
        }
        // A sender offers: the one a rotating `Alt` may wait for has come back (or
        // another came first, which serves the `Alt` as well): `alt/resume.rs`. Whatever
        // happens to the value below wakes such an `Alt` or is seen by its next look.
        if self.chan.is_resuming() {
            self.set_resuming(false);
        }
        let value = match self.deliver(value) {
            Ok(waker) => return Offer::Done(waker),
            Err(value) => value,
        };
        if self.inner.buffer.has_room(self.capacity) {
            self.inner.buffer.push(value);
            return Offer::Done(None);
        }
        Offer::Wait(value)
    }

    /// Hands `value` to the oldest live receiver, popping dead ones on the way.
    #[inline]
    fn deliver(&mut self, value: T) -> Result<Option<Waker>, T> {
        if self.inner.receivers.is_empty() {
            return Err(value);
        }
        self.deliver_queued(value)
    }

    /// [`deliver`](Self::deliver) with a receiver queued: the rendezvous hand-over, so
    /// not cold; the loop past a first dead `Alt` guard is the rare part.
    #[inline]
    fn deliver_queued(&mut self, mut value: T) -> Result<Option<Waker>, T> {
        while let Some(w) = self.inner.receivers.pop() {
            // SAFETY: popped under the lock we hold: alive (queue invariant), and ours
            // to complete.
            match unsafe { w.get().complete_with(value) } {
                Ok(waker) => return Ok(waker),
                Err(back) => value = back,
            }
        }
        Err(value)
    }

    /// A receiver's attempt: a buffered value, a waiting sender's value, or why not.
    #[inline]
    pub(crate) fn take(&mut self) -> Take<T> {
        self.take_marking(false)
    }

    /// [`take`](Self::take); with `resume`, a plain sender whose value is taken is marked
    /// by the channel's `RESUMING` mark until a sender offers again (`alt/resume.rs`).
    #[inline]
    fn take_marking(&mut self, resume: bool) -> Take<T> {
        if self.is_poisoned() {
            return Take::Poisoned;
        }
        if let Some(value) = self.inner.buffer.pop() {
            if self.capacity == super::channel::UNBOUNDED {
                self.inner.buffer.trim();
                return Take::Value(value, None); // no sender ever waits
            }
            let waker = if self.inner.buffer.has_room(self.capacity) {
                self.refill()
            } else {
                None
            };
            return Take::Value(value, waker);
        }
        if let Some((value, waker)) = self.take_from_sender(resume) {
            return Take::Value(value, waker);
        }
        if self.is_closed() {
            Take::Closed
        } else {
            Take::Empty
        }
    }

    /// Moves the oldest live sender's value into the buffer, completing that send.
    fn refill(&mut self) -> Option<Waker> {
        let (value, waker) = self.take_from_sender(false)?;
        self.inner.buffer.push(value);
        waker
    }

    /// Takes the oldest live sender's value, completing that send (marking a plain sender
    /// with `resume`).
    #[inline]
    fn take_from_sender(&mut self, resume: bool) -> Option<(T, Option<Waker>)> {
        if self.inner.senders.is_empty() {
            return None;
        }
        self.take_from_queued_sender(resume)
    }

    /// Pops senders until one gives its value; two-phase offers on the way are poked
    /// (their `Alt`s look again and send themselves, `alt/output.rs`). The rendezvous
    /// receive's usual path, so not cold.
    #[inline]
    fn take_from_queued_sender(&mut self, resume: bool) -> Option<(T, Option<Waker>)> {
        while let Some(w) = self.inner.senders.pop() {
            // SAFETY: popped under the lock we hold: alive (queue invariant).
            let node = unsafe { w.get() };
            // A plain sender's value is always taken. Marked before the decision is
            // stored (`Release`), so that the sender, having seen it (`Acquire`), sees
            // the mark when its end is dropped (`alt/resume.rs`).
            // SAFETY: as above.
            if resume && unsafe { node.is_plain() } {
                self.set_resuming(true);
            }
            // SAFETY: as above.
            match unsafe { node.complete_taking() } {
                Taking::Took(value, waker) => return Some((value, waker)),
                Taking::Poked(waker) => self.poke(waker),
                Taking::Dead => {}
            }
        }
        None
    }

    /// Sets or clears the `RESUMING` mark. Every write of `hints` is made under the
    /// lock, so a load and a store suffice.
    fn set_resuming(&mut self, on: bool) {
        let h = self.chan.hints.load(Ordering::Relaxed);
        let new = if on { h | RESUMING } else { h & !RESUMING };
        if new != h {
            self.chan.hints.store(new, Ordering::Relaxed);
        }
    }

    /// Clears `RESUMING` without an offer — the sender's end was dropped, or a selection
    /// gave up waiting for it — and hands `each` the waker of every undecided `Alt`
    /// queued to receive here, to wake after unlocking (one of them may be waiting for
    /// the sender: `alt/resume.rs`).
    pub(crate) fn stop_resuming(&mut self, each: impl FnMut(Waker)) {
        self.set_resuming(false);
        self.inner.receivers.guard_wakers(each);
    }

    /// Notes the waker of a poked offer's owner. Poking two in one critical section
    /// (several `Alt`s offering on one channel) is rare: the first waits for the unlock,
    /// later ones are woken at once, under the lock.
    #[cold]
    fn poke(&mut self, waker: Option<Waker>) {
        match (&self.poked, waker) {
            (None, w) => self.poked = w,
            (Some(_), Some(w)) => w.wake(),
            (Some(_), None) => {}
        }
    }

    /// A receive guard of the `Alt` of `selector` has just queued: pokes every live
    /// two-phase offer of another party, so that its `Alt` looks again and finds the
    /// receiver (an offer is never a partner a receiver could complete with, so the
    /// registering `Alt` does not withdraw for it). The `Alt`'s own guards stay queued,
    /// in their order.
    #[cold]
    fn poke_offers(&mut self, selector: &Selector) {
        for _ in 0..self.inner.senders.len() {
            let Some(w) = self.inner.senders.pop() else {
                break;
            };
            // SAFETY: popped under the lock we hold: alive (queue invariant).
            let node = unsafe { w.get() };
            // SAFETY: as above.
            if unsafe { node.is_guard_of(selector) } {
                // SAFETY: alive until its owner removes it, which needs this lock.
                unsafe { self.inner.senders.push(node) };
                continue;
            }
            // SAFETY: as above.
            match unsafe { node.complete_taking() } {
                Taking::Poked(waker) => self.poke(waker),
                Taking::Dead => {}
                Taking::Took(..) => unreachable!(
                    "tutti: a receive guard registered beside a sender it could take from"
                ),
            }
        }
    }

    /// Puts back a value that was committed to a receiver which then went away without
    /// returning it: to the next live receiver, or to the front of the buffer. Returns
    /// the waker to wake, or the value if the channel is poisoned (to be dropped after
    /// unlocking).
    pub(crate) fn give_back(&mut self, value: T) -> Result<Option<Waker>, T> {
        if self.is_poisoned() {
            return Err(value);
        }
        match self.deliver(value) {
            Ok(waker) => Ok(waker),
            Err(value) => {
                self.inner.buffer.push_front(value);
                Ok(None)
            }
        }
    }

    /// Queues a sending waiter (its value already in its slot).
    ///
    /// # Safety
    /// `node` meets [`WaitQueue::push`]'s contract.
    #[inline]
    pub(crate) unsafe fn wait_send(&mut self, node: &Node<T>) {
        // SAFETY: caller's contract.
        unsafe { self.inner.senders.push(node) }
    }

    /// Queues a receiving waiter.
    ///
    /// # Safety
    /// As for [`wait_send`](Self::wait_send).
    #[inline]
    pub(crate) unsafe fn wait_recv(&mut self, node: &Node<T>) {
        // SAFETY: caller's contract.
        unsafe { self.inner.receivers.push(node) }
    }

    /// Removes a sending waiter; false if a counterpart popped it already.
    pub(crate) fn cancel_send(&mut self, node: &Node<T>) -> bool {
        self.inner.senders.remove(node)
    }

    /// Removes a receiving waiter; false if a counterpart popped it already.
    pub(crate) fn cancel_recv(&mut self, node: &Node<T>) -> bool {
        self.inner.receivers.remove(node)
    }

    /// An `Alt` receive guard's enabling step (see the [`alt`](super::alt) module).
    ///
    /// Look-only (`register == false`, the `Alt` has no waiter queued anywhere): if a
    /// receive completes now, take its outcome into `waiter` and decide the selector for
    /// `index` (nobody else can, invariant 5); `resume` marks a plain sender taken from
    /// (a rotating `Alt`: `alt/resume.rs`). Registering: if a receive could complete
    /// now, `Retry` (the `Alt` withdraws and looks again); otherwise queue `waiter`.
    ///
    /// # Safety
    /// `waiter` is guard `index` of `selector`'s owner, who calls this; it is not queued
    /// anywhere and meets [`WaitQueue::push`]'s contract.
    pub(crate) unsafe fn enable_recv(
        &mut self,
        waiter: &GuardWaiter<T>,
        selector: &Selector,
        index: usize,
        register: bool,
        resume: bool,
    ) -> (Enable, Option<Waker>) {
        if register {
            if self.recv_ready_for(selector) {
                return (Enable::Retry, None);
            }
            // SAFETY: caller's contract.
            unsafe { self.wait_recv(waiter.node()) };
            if !self.inner.senders.is_empty() {
                self.poke_offers(selector);
            }
            return (Enable::Waiting, None);
        }
        let (value, waker) = match self.take_marking(resume) {
            Take::Value(v, w) => (Some(v), w),
            Take::Closed | Take::Poisoned => (None, None),
            Take::Empty => return (Enable::NotReady, None),
        };
        if let Some(v) = value {
            // SAFETY: our own unqueued waiter.
            unsafe { waiter.put_slot(v) };
        }
        // Unregistered: nobody else can decide the round (invariant 5).
        let won = selector.try_select(index);
        debug_assert!(
            won,
            "tutti: an unregistered Alt was decided by someone else"
        );
        (Enable::Fired, waker)
    }

    /// An `Alt` send guard's enabling step; the value to send is in `waiter`'s slot. As
    /// [`enable_recv`](Self::enable_recv): look-only, it sends now if it can (or finds the
    /// channel ended, leaving the value in the slot) and decides the selector; registering,
    /// it queues the waiter unless a send could complete now.
    ///
    /// # Safety
    /// As for [`enable_recv`](Self::enable_recv); the slot holds a value.
    pub(crate) unsafe fn enable_send(
        &mut self,
        waiter: &GuardWaiter<T>,
        selector: &Selector,
        index: usize,
        register: bool,
    ) -> (Enable, Option<Waker>) {
        if register {
            if self.send_ready_for(selector) {
                return (Enable::Retry, None);
            }
            // SAFETY: caller's contract.
            unsafe { self.wait_send(waiter.node()) };
            return (Enable::Waiting, None);
        }
        // SAFETY: our own unqueued waiter.
        let value = unsafe { waiter.take_slot() }.expect("tutti: a send guard without a value");
        let waker = match self.offer(value) {
            Offer::Done(waker) => waker,
            Offer::Wait(value) => {
                // SAFETY: as above.
                unsafe { waiter.put_slot(value) };
                return (Enable::NotReady, None);
            }
            Offer::Closed(value) | Offer::Poisoned(value) => {
                // The guard fires with the value still here: the channel ended.
                // SAFETY: as above.
                unsafe { waiter.put_slot(value) };
                None
            }
        };
        let won = selector.try_select(index);
        debug_assert!(
            won,
            "tutti: an unregistered Alt was decided by someone else"
        );
        (Enable::Fired, waker)
    }

    /// Whether a receive by the `Alt` of `selector` could complete now: a buffered value,
    /// a live sender of another party, or an end state.
    fn recv_ready_for(&self, selector: &Selector) -> bool {
        self.flags() & (POISONED | CLOSED) != 0
            || !self.inner.buffer.is_empty()
            || self.inner.senders.has_live_peer(selector)
    }

    /// Whether a send by the `Alt` of `selector` could complete now: room, a live
    /// receiver of another party, or an end state.
    fn send_ready_for(&self, selector: &Selector) -> bool {
        self.flags() & (POISONED | CLOSED | RX_GONE) != 0
            || self.inner.buffer.has_room(self.capacity)
            || self.inner.receivers.has_live_peer(selector)
    }

    /// Decides every queued receiver without a value: they wake and see the end state.
    fn wake_receivers(&mut self, woken: &mut Vec<Waker>) {
        while let Some(w) = self.inner.receivers.pop() {
            // SAFETY: popped under the lock we hold: alive (queue invariant).
            if let Some(Some(waker)) = unsafe { w.get().complete_empty() } {
                woken.push(waker);
            }
        }
    }

    /// Decides every queued sender, leaving each its value: they wake and see the end state.
    fn wake_senders(&mut self, woken: &mut Vec<Waker>) {
        while let Some(w) = self.inner.senders.pop() {
            // SAFETY: popped under the lock we hold: alive (queue invariant).
            if let Some(Some(waker)) = unsafe { w.get().complete_empty() } {
                woken.push(waker);
            }
        }
    }

    /// The readiness hints this state implies (module docs).
    #[inline]
    fn hints(&self) -> u8 {
        let flags = self.flags();
        let ended = flags & POISONED != 0;
        let recv = ended
            || flags & CLOSED != 0
            || !self.inner.buffer.is_empty()
            || !self.inner.senders.is_empty();
        let send = ended
            || flags & (CLOSED | RX_GONE) != 0
            || self.inner.buffer.has_room(self.capacity)
            || !self.inner.receivers.is_empty();
        (if recv { RECV_READY } else { 0 }) | (if send { SEND_READY } else { 0 })
    }

    /// Number of buffered values.
    pub(crate) fn len(&self) -> usize {
        self.inner.buffer.len()
    }

    /// Numbers of queued senders and receivers (dead ones included).
    #[cfg(all(test, not(loom)))]
    pub(crate) fn waiting(&self) -> (usize, usize) {
        (self.inner.senders.len(), self.inner.receivers.len())
    }
}

impl<T> Drop for State<'_, T> {
    #[inline]
    fn drop(&mut self) {
        let current = self.chan.hints.load(Ordering::Relaxed);
        let hints = self.hints() | (current & RESUMING);
        // Store only on change, so that readers polling the hint keep their cached copy.
        // Relaxed: it is only a hint; the unlock right after publishes the state itself.
        if current != hints {
            self.chan.hints.store(hints, Ordering::Relaxed);
        }
        let poked = self.poked.take();
        // SAFETY: dropped once, here; `inner` is not touched after it.
        unsafe { std::mem::ManuallyDrop::drop(&mut self.lock) };
        wake(poked);
    }
}

impl<T> Chan<T> {
    /// A channel with one `Tx` and one `Rx`, on the heap; `capacity == 0` makes it a
    /// rendezvous. `keep_open`: dropping the last `Tx` does not close it; `senders`: how
    /// many `Tx` handles the caller makes (0 or 1).
    pub(crate) fn allocate(
        capacity: usize,
        object: Object,
        name: Option<Cow<'static, str>>,
        senders: u64,
        keep_open: bool,
    ) -> NonNull<Chan<T>> {
        let keep = if keep_open { KEEP_OPEN } else { 0 };
        let chan = Box::new(Chan {
            home: Home::new(object, name),
            sender: SenderNode::new(),
            hints: AtomicU8::new(if capacity > 0 { SEND_READY } else { 0 }),
            lock: RawLock::new(()),
            inner: UnsafeCell::new(Inner {
                buffer: Buffer::new(capacity),
                senders: WaitQueue::new(),
                receivers: WaitQueue::new(),
            }),
            ends: AtomicU64::new(senders * TX_ONE + RX_ONE + keep),
            capacity: Capacity::new(capacity),
        });
        NonNull::from(Box::leak(chan))
    }

    /// Whether a sender whose value a rotating `Alt` took has not offered again yet (the
    /// `RESUMING` mark; `Relaxed`, see `alt/resume.rs` for when it may be trusted).
    #[inline]
    pub(crate) fn is_resuming(&self) -> bool {
        self.hints.load(Ordering::Relaxed) & RESUMING != 0
    }

    /// Clears the `RESUMING` mark without an offer and wakes the rotating `Alt`s queued
    /// to receive here, which may be waiting for the marked sender (`alt/resume.rs`):
    /// a `Tx` was dropped, or a selection stopped waiting for the sender.
    #[cold]
    pub(crate) fn stop_resuming(&self) {
        let mut first = None;
        let mut st = self.lock();
        // Usually one `Alt` receives here; any others are woken under the lock.
        st.stop_resuming(|w| match first {
            None => first = Some(w),
            Some(_) => w.wake(),
        });
        drop(st);
        wake(first);
    }

    /// Locks the channel; the hints are refreshed when the guard is dropped.
    #[inline]
    pub(crate) fn lock(&self) -> State<'_, T> {
        #[cfg(not(loom))]
        let guard = self.lock.lock();
        #[cfg(loom)]
        let guard = crate::loom::lock(&self.lock);
        State {
            chan: self,
            // SAFETY: we hold the lock: nobody else touches `inner` until the guard goes.
            inner: unsafe { &mut *self.inner.get() },
            // Relaxed: flags are only set under the lock we hold now.
            flags: self.ends.load(Ordering::Relaxed) & (CLOSED | RX_GONE | POISONED),
            capacity: self.capacity(),
            poked: None,
            lock: std::mem::ManuallyDrop::new(guard),
        }
    }

    /// Whether a receive might complete now (a hint: see the module docs).
    #[inline]
    pub(crate) fn may_recv(&self) -> bool {
        self.hints.load(Ordering::Relaxed) & RECV_READY != 0
    }

    /// Whether a send might complete now (a hint: see the module docs).
    #[inline]
    pub(crate) fn may_send(&self) -> bool {
        self.hints.load(Ordering::Relaxed) & SEND_READY != 0
    }

    /// An identity for this channel (its address), used to match `Alt` guards to ends.
    pub(crate) fn id(&self) -> *const () {
        (self as *const Self).cast()
    }

    pub(crate) fn capacity(&self) -> usize {
        self.capacity.get()
    }

    /// Number of buffered values.
    pub(crate) fn len(&self) -> usize {
        self.lock().len()
    }

    pub(crate) fn try_send(&self, value: T) -> Result<(), TrySendError<T>> {
        self.act_send();
        if !self.may_send() {
            return Err(TrySendError::Full(value));
        }
        let offer = self.lock().offer(value);
        match offer {
            Offer::Done(waker) => {
                wake(waker);
                Ok(())
            }
            Offer::Wait(v) => Err(TrySendError::Full(v)),
            Offer::Closed(v) => Err(TrySendError::Closed(v)),
            Offer::Poisoned(v) => Err(TrySendError::Poisoned(v)),
        }
    }

    pub(crate) fn try_recv(&self) -> Result<T, TryRecvError> {
        self.home.act(Some(Side::Recv));
        if !self.may_recv() {
            return Err(TryRecvError::Empty);
        }
        let take = self.lock().take();
        match take {
            Take::Value(v, waker) => {
                wake(waker);
                Ok(v)
            }
            Take::Empty => Err(TryRecvError::Empty),
            Take::Closed => Err(TryRecvError::Closed),
            Take::Poisoned => Err(TryRecvError::Poisoned),
        }
    }

    /// Gives back a value a receiver was handed but never returned (see module docs).
    pub(crate) fn give_back(&self, value: T) {
        let r = self.lock().give_back(value);
        match r {
            Ok(waker) => wake(waker),
            Err(value) => propagate(drop_values(std::iter::once(value))),
        }
    }

    /// Poisons the channel: every queued party wakes and fails, buffered values are
    /// dropped, and every later operation fails with `Poisoned`.
    pub(crate) fn poison(&self) {
        self.home.act(None);
        let mut woken = Vec::new();
        let dropped = {
            let mut st = self.lock();
            if st.is_poisoned() {
                return;
            }
            st.set_flag(POISONED);
            st.wake_receivers(&mut woken);
            st.wake_senders(&mut woken);
            st.inner.buffer.take_all()
        };
        propagate(finish(woken, dropped));
    }

    /// Closes the channel for sending: later sends fail with `Closed`, waiting senders get
    /// their values back, and receivers get what is buffered, then `Closed`.
    pub(crate) fn close(&self) {
        self.home.act(None);
        let mut woken = Vec::new();
        {
            let mut st = self.lock();
            if st.is_closed() {
                return;
            }
            st.set_flag(CLOSED);
            st.wake_senders(&mut woken);
            if st.inner.buffer.is_empty() {
                st.wake_receivers(&mut woken);
            }
        }
        for w in woken {
            w.wake();
        }
    }

    pub(crate) fn is_poisoned(&self) -> bool {
        self.ends.load(Ordering::Acquire) & POISONED != 0
    }

    /// Whether sending is over: closed, every receiver gone, or poisoned.
    pub(crate) fn is_send_closed(&self) -> bool {
        self.ends.load(Ordering::Acquire) & (CLOSED | RX_GONE | POISONED) != 0
    }

    /// Whether the channel is closed for sending (by `close()` or the last `Tx`).
    pub(crate) fn is_closed(&self) -> bool {
        self.ends.load(Ordering::Acquire) & CLOSED != 0
    }

    /// The calling context sends (or offers a value) on the channel: for the deadlock
    /// detectors.
    #[inline]
    pub(crate) fn act_send(&self) {
        self.home.act(Some(Side::Send));
        self.sender.used();
    }

    /// The actor or location a receiver of this channel waits for: the one that alone
    /// sends on it, while one `Tx` is left (`deadlock/sender.rs`).
    pub(crate) fn sole_sender(&self) -> Option<u64> {
        let senders = (self.ends.load(Ordering::Relaxed) & TX_MASK) / TX_ONE;
        self.sender.sole(senders)
    }

    /// A new `Tx` handle exists (cloned from a live one).
    pub(crate) fn add_sender(&self) {
        self.home.act(None);
        self.sender.used();
        // Relaxed: a new handle is cloned from a live one, so the count cannot be 0 here
        // and nothing else is published by the increment.
        let old = self.ends.fetch_add(TX_ONE, Ordering::Relaxed);
        if old & TX_MASK >= MAX_ENDS {
            self.ends.fetch_sub(TX_ONE, Ordering::Relaxed);
            panic!("tutti::csp: more than {MAX_ENDS} senders on one channel");
        }
    }

    /// A new `Rx` handle exists (cloned from a live one).
    pub(crate) fn add_receiver(&self) {
        self.home.act(None);
        // Relaxed: as in `add_sender`.
        let old = self.ends.fetch_add(RX_ONE, Ordering::Relaxed);
        if old & RX_MASK >= RX_MASK {
            self.ends.fetch_sub(RX_ONE, Ordering::Relaxed);
            panic!("tutti::csp: more than {MAX_ENDS} receivers on one channel");
        }
    }

    /// A `Tx` handle is gone: the last one closes the sending side (unless the channel
    /// stays open), and the last handle of either kind frees the channel.
    ///
    /// # Safety
    /// `this` points to a live channel and the caller gives up one `Tx` count of it.
    pub(crate) unsafe fn drop_sender(this: NonNull<Chan<T>>) {
        // SAFETY: our count keeps the channel allocated.
        let chan = unsafe { this.as_ref() };
        chan.home.act(None);
        if chan.release_unless_last(TX_ONE, TX_MASK) {
            // Relaxed: exact for the sender an `Alt` marked, which saw its send decided
            // (`Acquire`) after the mark was set (`alt/resume.rs`).
            if chan.is_resuming() {
                chan.stop_resuming();
            }
            return;
        }
        // The last `Tx`: our count keeps the channel alive while we close it.
        if chan.ends.load(Ordering::Relaxed) & KEEP_OPEN == 0 {
            chan.close_tx();
        }
        // SAFETY: by the caller's contract.
        propagate(unsafe { Self::release(this, TX_ONE) });
    }

    /// An `Rx` handle is gone: the last one closes the receiving side, and the last
    /// handle of either kind frees the channel.
    ///
    /// # Safety
    /// `this` points to a live channel and the caller gives up one `Rx` count of it.
    pub(crate) unsafe fn drop_receiver(this: NonNull<Chan<T>>) {
        // SAFETY: our count keeps the channel allocated.
        let chan = unsafe { this.as_ref() };
        chan.home.act(None);
        if chan.release_unless_last(RX_ONE, RX_MASK) {
            return;
        }
        let panicked = chan.close_rx();
        // SAFETY: by the caller's contract.
        let panicked_too = unsafe { Self::release(this, RX_ONE) };
        // The channel is settled (and maybe freed): a buffered value's panic may unwind.
        propagate(panicked.or(panicked_too));
    }

    /// Gives up one count of `one` unless it is the last of its kind; returns whether it
    /// did.
    fn release_unless_last(&self, one: u64, mask: u64) -> bool {
        let mut ends = self.ends.load(Ordering::Relaxed);
        loop {
            if ends & mask == one {
                return false;
            }
            // AcqRel: the last release (below) comes after every other handle's uses.
            match self.ends.compare_exchange_weak(
                ends,
                ends - one,
                Ordering::AcqRel,
                Ordering::Relaxed,
            ) {
                Ok(_) => return true,
                Err(now) => ends = now,
            }
        }
    }

    /// Gives up the last count of a kind; frees the channel if no handle is left, and
    /// returns the panic of a buffered value's destructor, if one panicked.
    ///
    /// # Safety
    /// As for [`drop_sender`](Self::drop_sender).
    #[must_use]
    unsafe fn release(this: NonNull<Chan<T>>, one: u64) -> Option<Panic> {
        // SAFETY: our count keeps the channel allocated until this subtraction.
        let old = unsafe { this.as_ref() }
            .ends
            .fetch_sub(one, Ordering::AcqRel);
        if (old - one) & (TX_MASK | RX_MASK) == 0 {
            // SAFETY: no handle is left, and every future or `Alt` borrows a handle, so
            // nobody refers to the channel; it came from `Box::leak` in `allocate`.
            let mut chan = unsafe { Box::from_raw(this.as_ptr()) };
            // Values still buffered (a channel whose receivers dropped it without taking
            // them went through `close_rx` already; this is the rest, e.g. given-back
            // values): dropped after the channel is freed, so a panicking destructor
            // cannot leak it.
            let values = chan.inner.get_mut().buffer.take_all();
            drop(chan);
            return drop_values(values);
        }
        None
    }

    #[cold]
    fn close_tx(&self) {
        self.close();
    }

    /// Returns the panic of a buffered value's destructor, if one panicked.
    #[cold]
    #[must_use]
    fn close_rx(&self) -> Option<Panic> {
        let mut woken = Vec::new();
        let dropped = {
            let mut st = self.lock();
            st.set_flag(RX_GONE);
            st.wake_senders(&mut woken);
            // Nobody can receive these any more.
            st.inner.buffer.take_all()
        };
        finish(woken, dropped)
    }
}

/// A panic caught from a value's destructor, to be resumed by whoever dropped it.
type Panic = Box<dyn std::any::Any + Send>;

/// After unlocking: wake the decided parties, then drop the discarded values; returns
/// the first destructor panic.
#[must_use]
fn finish<T>(woken: Vec<Waker>, dropped: VecDeque<T>) -> Option<Panic> {
    for w in woken {
        w.wake();
    }
    drop_values(dropped)
}

/// Drops values nobody will receive. They are user values whose destructors may panic:
/// as `Vec` and crossbeam's channels do, every value is dropped even if one panics, and
/// the first panic is returned for the caller to resume once its own bookkeeping is done
/// (see [`propagate`]). Unlike `Vec`, a second panic does not abort the process: each
/// value is dropped on its own, and later panics are reported by the panic hook only.
#[must_use]
fn drop_values<T>(values: impl IntoIterator<Item = T>) -> Option<Panic> {
    let mut first = None;
    for value in values {
        if let Err(p) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| drop(value))) {
            first.get_or_insert(p);
        }
    }
    first
}

/// Resumes a destructor's panic in whoever dropped the value (the last `Rx`, the
/// channel, a poisoner). While that thread is already unwinding a second panic would
/// abort the process, so then the panic is reported on stderr instead.
fn propagate(panicked: Option<Panic>) {
    let Some(p) = panicked else { return };
    if std::thread::panicking() {
        let text = p
            .downcast_ref::<&'static str>()
            .copied()
            .or_else(|| p.downcast_ref::<String>().map(String::as_str))
            .unwrap_or("<non-string panic payload>");
        eprintln!(
            "tutti::csp: dropping a value nobody will receive panicked while unwinding: {text}"
        );
    } else {
        std::panic::resume_unwind(p);
    }
}

impl<T> fmt::Debug for Chan<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let st = self.lock();
        let flags = st.flags();
        f.debug_struct("Chan")
            .field("name", &self.home.name())
            .field(
                "capacity",
                &(self.capacity() != super::channel::UNBOUNDED).then_some(self.capacity()),
            )
            .field("buffered", &st.inner.buffer.len())
            .field("waiting_senders", &st.inner.senders.len())
            .field("waiting_receivers", &st.inner.receivers.len())
            .field("closed", &(flags & CLOSED != 0))
            .field("receivers_gone", &(flags & RX_GONE != 0))
            .field("poisoned", &(flags & POISONED != 0))
            .finish()
    }
}
