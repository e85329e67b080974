//! The channel core shared by both flavors: one lock, the waiting senders and receivers,
//! and the end-of-life flags (closed on either side, poisoned).
//!
//! # State (all under `Chan::state`'s lock)
//!
//! * `buffer` — the flavor's storage ([`Buffer`]): nothing for a rendezvous (apart from
//!   values given back by cancelled receivers), a bounded FIFO otherwise.
//! * `senders` — queued waiters of senders that could not complete, each holding its
//!   value in its slot.
//! * `receivers` — queued waiters of receivers (plain futures or `Alt` guards) with empty
//!   slots. A waiter whose selector has been decided elsewhere (an `Alt` that fired
//!   another guard) is *dead*: it stays queued until popped or removed, and counterparts
//!   skip it. Every other queued waiter is *live*.
//! * `tx_gone` / `rx_gone` — every `Tx` / every `Rx` has been dropped. Set once.
//! * `poisoned` — `poison()` was called on some end. Set once; wins over everything.
//!
//! # Invariants
//!
//! 1. **One side waits.** A live receiver is queued only while the buffer is empty and
//!    no sender is queued; a sender is queued only while no live receiver is queued and
//!    the buffer has no room.
//! 2. **One place per value.** Every sent value is at each moment in exactly one place:
//!    a sender's slot, the buffer, a receiver's slot, or returned to user code. It moves
//!    between places only under the lock, or by the owner of an unqueued waiter.
//! 3. **Pop, move, decide.** A counterpart completes a waiter in one critical section: it
//!    pops the waiter, moves the value (into a receiver's slot, out of a sender's slot, or
//!    neither for close/poison), then decides the waiter's selector. If the decision fails
//!    (the selector was decided elsewhere) it moves the value back before unlocking.
//! 4. **Nobody waits on a finished channel.** Once `poisoned`, or `tx_gone` for
//!    receivers, or `rx_gone` for senders, no waiter of that kind is queued: the critical
//!    section that sets the flag pops and decides them all, and later arrivals see the
//!    flag under the lock.
//!
//! # Operations
//!
//! *Send* (`offer`): poisoned → `Poisoned(v)`; no receivers → `Closed(v)`; a live
//! receiver is queued → hand `v` into its slot and decide it (the send is complete: a
//! receiver has the value); room in the buffer → append; otherwise the sender waits with
//! `v` in its own slot.
//!
//! *Receive* (`take`): poisoned → `Poisoned`; a buffered value → take it, and if that made
//! room move the oldest waiting sender's value in (completing that send); a waiting sender
//! (rendezvous) → take its value and decide it (completing that send); no senders left →
//! `Closed`; otherwise wait with an empty slot.
//!
//! A waiting party is woken exactly when its selector is decided (invariant 3), and the
//! waker is taken or cloned *before* deciding, so a counterpart never touches a waiter
//! after the owner could have seen the decision and freed it.
//!
//! # Readiness hints
//!
//! `Chan::hints` is a lock-free summary of the state, rewritten (if it changed) by every
//! critical section just before it unlocks: `RECV_READY` — a receive would complete now
//! (a buffered value, a waiting sender, or an end state); `SEND_READY` — a send would
//! (room, a queued receiver, or an end state). Readers load it `Relaxed` and use it only
//! to *skip* taking the lock when it says "not ready": `try_send`/`try_recv` then report
//! `Full`/`Empty`, and a look-only `Alt` pass skips the guard. A hint can be stale only
//! with respect to critical sections that do not happen-before the reader, so a
//! `try_recv` still sees every value whose sending happens-before it. Anything that
//! *waits* decides under the lock, never on a hint.
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

use std::collections::VecDeque;
use std::fmt;
use std::task::Waker;

use std::borrow::Cow;

use super::alt::guard::Enable;
use super::deadlock::{Home, Object, Side};
use super::error::{TryRecvError, TrySendError};
use super::flavors::Buffer;
use super::waiter::{GuardWaiter, Node, Selector, WaitQueue};
use std::ops::{Deref, DerefMut};

use crate::loom::{AtomicU8, AtomicUsize, Ordering};

#[cfg(not(loom))]
use super::lock::{Lock, LockGuard};
#[cfg(loom)]
use crate::loom::{Mutex as Lock, MutexGuard as LockGuard};

/// `Chan::hints`: a receive would complete now.
const RECV_READY: u8 = 1;
/// `Chan::hints`: a send would complete now.
const SEND_READY: u8 = 2;

/// A channel: the state behind every `Tx` and `Rx` of it.
pub(crate) struct Chan<T> {
    /// Everything but the handle counts; see the module docs.
    state: Lock<State<T>>,
    /// `RECV_READY | SEND_READY` as of the last critical section (module docs).
    hints: AtomicU8,
    /// Number of live `Tx` handles; the one that drops it to 0 closes the sending side.
    senders: AtomicUsize,
    /// Number of live `Rx` handles; the one that drops it to 0 closes the receiving side.
    receivers: AtomicUsize,
    /// The buffer's capacity (0 for a rendezvous); fixed, so readable without the lock.
    capacity: usize,
    /// What the deadlock detector knows of the channel (`deadlock/home.rs`).
    pub(crate) home: Home,
}

/// What [`Chan::state`] protects.
pub(crate) struct State<T> {
    buffer: Buffer<T>,
    senders: WaitQueue<T>,
    receivers: WaitQueue<T>,
    tx_gone: bool,
    rx_gone: bool,
    poisoned: bool,
}

/// Result of a sender's attempt under the lock.
pub(crate) enum Offer<T> {
    /// Delivered or buffered; wake this waker (of the receiver that got it) after unlocking.
    Done(Option<Waker>),
    /// Nobody to take it and no room: the sender must wait (or fail, for `try_send`).
    Wait(T),
    /// Every receiver is gone.
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
    /// Every sender is gone and nothing is left.
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

impl<T> State<T> {
    /// A sender's attempt: deliver, buffer, or report why not.
    #[inline]
    pub(crate) fn offer(&mut self, value: T) -> Offer<T> {
        if self.poisoned {
            return Offer::Poisoned(value);
        }
        if self.rx_gone {
            return Offer::Closed(value);
        }
        let value = match self.deliver(value) {
            Ok(waker) => return Offer::Done(waker),
            Err(value) => value,
        };
        if self.buffer.has_room() {
            self.buffer.push(value);
            return Offer::Done(None);
        }
        Offer::Wait(value)
    }

    /// Hands `value` to the oldest live receiver, popping dead ones on the way.
    #[inline]
    fn deliver(&mut self, mut value: T) -> Result<Option<Waker>, T> {
        while let Some(w) = self.receivers.pop() {
            // SAFETY: popped under the lock we hold: alive (queue invariant).
            let w = unsafe { w.get() };
            // SAFETY: popped from this channel's queue under its lock.
            match unsafe { w.complete_with(value) } {
                Ok(waker) => return Ok(waker),
                Err(back) => value = back,
            }
        }
        Err(value)
    }

    /// A receiver's attempt: a buffered value, a waiting sender's value, or why not.
    #[inline]
    pub(crate) fn take(&mut self) -> Take<T> {
        if self.poisoned {
            return Take::Poisoned;
        }
        if let Some(value) = self.buffer.pop() {
            let waker = if self.buffer.has_room() {
                self.refill()
            } else {
                None
            };
            return Take::Value(value, waker);
        }
        if let Some((value, waker)) = self.take_from_sender() {
            return Take::Value(value, waker);
        }
        if self.tx_gone {
            Take::Closed
        } else {
            Take::Empty
        }
    }

    /// Whether a receiver would complete at once (a value, or an end state).
    pub(crate) fn recv_ready(&self) -> bool {
        self.poisoned || self.tx_gone || !self.buffer.is_empty() || !self.senders.is_empty()
    }

    /// Moves the oldest waiting sender's value into the buffer, completing that send.
    fn refill(&mut self) -> Option<Waker> {
        let (value, waker) = self.take_from_sender()?;
        self.buffer.push(value);
        waker
    }

    /// Takes the oldest waiting sender's value, completing that send.
    fn take_from_sender(&mut self) -> Option<(T, Option<Waker>)> {
        while let Some(w) = self.senders.pop() {
            // SAFETY: popped under the lock we hold: alive (queue invariant).
            let w = unsafe { w.get() };
            // SAFETY: popped from this channel's queue under its lock.
            if let Some(done) = unsafe { w.complete_taking() } {
                return Some(done);
            }
        }
        None
    }

    /// Puts back a value that was committed to a receiver which then went away without
    /// returning it: to the next live receiver, or to the front of the buffer. Returns
    /// the waker to wake, or the value if the channel is poisoned (to be dropped after
    /// unlocking).
    pub(crate) fn give_back(&mut self, value: T) -> Result<Option<Waker>, T> {
        if self.poisoned {
            return Err(value);
        }
        match self.deliver(value) {
            Ok(waker) => Ok(waker),
            Err(value) => {
                self.buffer.push_front(value);
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
        unsafe { self.senders.push(node) }
    }

    /// Queues a receiving waiter.
    ///
    /// # Safety
    /// As for [`wait_send`](Self::wait_send).
    #[inline]
    pub(crate) unsafe fn wait_recv(&mut self, node: &Node<T>) {
        // SAFETY: caller's contract.
        unsafe { self.receivers.push(node) }
    }

    /// Removes a sending waiter; false if a counterpart popped it already.
    pub(crate) fn cancel_send(&mut self, node: &Node<T>) -> bool {
        self.senders.remove(node)
    }

    /// Removes a receiving waiter; false if a counterpart popped it already.
    pub(crate) fn cancel_recv(&mut self, node: &Node<T>) -> bool {
        self.receivers.remove(node)
    }

    /// An `Alt` input guard's enabling step (see the [`alt`](super::alt) module): if a
    /// receive would complete now, decide the selector for `index` and take the value into
    /// `waiter`'s slot; otherwise queue `waiter` if `register`.
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
    ) -> (Enable, Option<Waker>) {
        if self.recv_ready() {
            if !selector.try_select(index) {
                // A counterpart on another guard decided first.
                return (Enable::Lost, None);
            }
            let (value, waker) = match self.take() {
                Take::Value(v, w) => (Some(v), w),
                Take::Closed | Take::Poisoned => (None, None),
                Take::Empty => unreachable!("tutti: a ready channel had nothing to take"),
            };
            if let Some(v) = value {
                // SAFETY: our own unqueued waiter, and we just decided the round ourselves.
                unsafe { waiter.put_slot(v) };
            }
            return (Enable::Fired, waker);
        }
        if register {
            // SAFETY: caller's contract.
            unsafe { self.wait_recv(waiter.node()) };
            (Enable::Waiting, None)
        } else {
            (Enable::NotReady, None)
        }
    }

    /// Decides every queued receiver without a value: they wake and see the end state.
    fn wake_receivers(&mut self, woken: &mut Vec<Waker>) {
        while let Some(w) = self.receivers.pop() {
            // SAFETY: popped under the lock we hold: alive (queue invariant).
            let w = unsafe { w.get() };
            // SAFETY: popped from this channel's queue under its lock.
            if let Some(Some(waker)) = unsafe { w.complete_empty() } {
                woken.push(waker);
            }
        }
    }

    /// Decides every queued sender, leaving each its value: they wake and see the end state.
    fn wake_senders(&mut self, woken: &mut Vec<Waker>) {
        while let Some(w) = self.senders.pop() {
            // SAFETY: popped under the lock we hold: alive (queue invariant).
            let w = unsafe { w.get() };
            // SAFETY: popped from this channel's queue under its lock.
            if let Some(Some(waker)) = unsafe { w.complete_empty() } {
                woken.push(waker);
            }
        }
    }

    pub(crate) fn is_poisoned(&self) -> bool {
        self.poisoned
    }

    /// The readiness hints this state implies (module docs).
    #[inline]
    fn hints(&self) -> u8 {
        let recv =
            self.poisoned || self.tx_gone || !self.buffer.is_empty() || !self.senders.is_empty();
        let send =
            self.poisoned || self.rx_gone || self.buffer.has_room() || !self.receivers.is_empty();
        (if recv { RECV_READY } else { 0 }) | (if send { SEND_READY } else { 0 })
    }

    /// Numbers of queued senders and receivers (dead ones included).
    #[cfg(all(test, not(loom)))]
    pub(crate) fn waiting(&self) -> (usize, usize) {
        (self.senders.len(), self.receivers.len())
    }

    pub(crate) fn is_rx_gone(&self) -> bool {
        self.rx_gone
    }
}

impl<T> Chan<T> {
    /// A channel with one `Tx` and one `Rx`; `capacity == 0` makes it a rendezvous.
    pub(crate) fn new(capacity: usize, name: Option<Cow<'static, str>>) -> Self {
        Chan {
            home: Home::new(Object::Channel(capacity), name),
            hints: AtomicU8::new(if capacity > 0 { SEND_READY } else { 0 }),
            state: Lock::new(State {
                buffer: Buffer::new(capacity),
                senders: WaitQueue::new(),
                receivers: WaitQueue::new(),
                tx_gone: false,
                rx_gone: false,
                poisoned: false,
            }),
            senders: AtomicUsize::new(1),
            receivers: AtomicUsize::new(1),
            capacity,
        }
    }

    /// Locks the channel state; the hints are refreshed when the guard is dropped.
    #[inline]
    pub(crate) fn lock(&self) -> ChanGuard<'_, T> {
        #[cfg(not(loom))]
        let state = self.state.lock();
        #[cfg(loom)]
        let state = crate::loom::lock(&self.state);
        ChanGuard {
            state,
            hints: &self.hints,
        }
    }

    /// Whether a receive might complete now (a hint: see the module docs).
    #[inline]
    pub(crate) fn may_recv(&self) -> bool {
        self.hints.load(Ordering::Relaxed) & RECV_READY != 0
    }

    /// Whether a send might complete now (a hint: see the module docs).
    #[inline]
    fn may_send(&self) -> bool {
        self.hints.load(Ordering::Relaxed) & SEND_READY != 0
    }

    /// An identity for this channel (its address), used to match `Alt` guards to ends.
    pub(crate) fn id(&self) -> *const () {
        (self as *const Self).cast()
    }

    pub(crate) fn capacity(&self) -> usize {
        self.capacity
    }

    pub(crate) fn len(&self) -> usize {
        self.lock().buffer.len()
    }

    pub(crate) fn try_send(&self, value: T) -> Result<(), TrySendError<T>> {
        self.home.act(Some(Side::Send));
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
            Err(value) => drop(value),
        }
    }

    /// Poisons the channel: every queued party wakes and fails, buffered values are
    /// dropped, and every later operation fails with `Poisoned`.
    pub(crate) fn poison(&self) {
        self.home.act(None);
        let mut woken = Vec::new();
        let dropped = {
            let mut st = self.lock();
            if st.poisoned {
                return;
            }
            st.poisoned = true;
            st.wake_receivers(&mut woken);
            st.wake_senders(&mut woken);
            st.buffer.take_all()
        };
        finish(woken, dropped);
    }

    pub(crate) fn is_poisoned(&self) -> bool {
        self.lock().poisoned
    }

    /// A new `Tx` handle exists.
    pub(crate) fn add_sender(&self) {
        self.home.act(None);
        // Relaxed: a new handle is cloned from a live one, so the count cannot be 0 here
        // and nothing else is published by the increment.
        self.senders.fetch_add(1, Ordering::Relaxed);
    }

    /// A `Tx` handle is gone; the last one closes the sending side.
    pub(crate) fn remove_sender(&self) {
        self.home.act(None);
        // AcqRel: the last dropper's closing critical section comes after every other
        // handle's last use (the lock orders the rest).
        if self.senders.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.close_tx();
        }
    }

    /// A new `Rx` handle exists.
    pub(crate) fn add_receiver(&self) {
        self.home.act(None);
        // Relaxed: as in `add_sender`.
        self.receivers.fetch_add(1, Ordering::Relaxed);
    }

    /// An `Rx` handle is gone; the last one closes the receiving side.
    pub(crate) fn remove_receiver(&self) {
        self.home.act(None);
        // AcqRel: as in `remove_sender`.
        if self.receivers.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.close_rx();
        }
    }

    #[cold]
    fn close_tx(&self) {
        let mut woken = Vec::new();
        {
            let mut st = self.lock();
            st.tx_gone = true;
            st.wake_receivers(&mut woken);
        }
        finish(woken, VecDeque::<T>::new());
    }

    #[cold]
    fn close_rx(&self) {
        let mut woken = Vec::new();
        let dropped = {
            let mut st = self.lock();
            st.rx_gone = true;
            st.wake_senders(&mut woken);
            // Nobody can receive these any more.
            st.buffer.take_all()
        };
        finish(woken, dropped);
    }
}

/// The channel lock held: derefs to the [`State`]; on drop refreshes `Chan::hints`, then
/// unlocks.
pub(crate) struct ChanGuard<'a, T> {
    state: LockGuard<'a, State<T>>,
    hints: &'a AtomicU8,
}

impl<T> Deref for ChanGuard<'_, T> {
    type Target = State<T>;

    #[inline]
    fn deref(&self) -> &State<T> {
        &self.state
    }
}

impl<T> DerefMut for ChanGuard<'_, T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut State<T> {
        &mut self.state
    }
}

impl<T> Drop for ChanGuard<'_, T> {
    #[inline]
    fn drop(&mut self) {
        let hints = self.state.hints();
        // Store only on change, so that readers polling the hint keep their cached copy.
        // Relaxed: it is only a hint; the unlock right after publishes the state itself.
        if self.hints.load(Ordering::Relaxed) != hints {
            self.hints.store(hints, Ordering::Relaxed);
        }
    }
}

/// After unlocking: wake the decided parties, then drop the discarded values (user code).
fn finish<T>(woken: Vec<Waker>, dropped: VecDeque<T>) {
    for w in woken {
        w.wake();
    }
    drop(dropped);
}

impl<T> fmt::Debug for Chan<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let st = self.lock();
        f.debug_struct("Chan")
            .field("name", &self.home.name())
            .field("capacity", &st.buffer.capacity())
            .field("buffered", &st.buffer.len())
            .field("waiting_senders", &st.senders.len())
            .field("waiting_receivers", &st.receivers.len())
            .field("senders_gone", &st.tx_gone)
            .field("receivers_gone", &st.rx_gone)
            .field("poisoned", &st.poisoned)
            .finish()
    }
}
