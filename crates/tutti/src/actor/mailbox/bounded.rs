//! The bounded mailbox: a `Mutex<VecDeque>` of envelopes with a capacity and an
//! [`Overflow`] policy.
//!
//! Bounded mailboxes are for back-pressure and load shedding, not for the fastest path,
//! so everything happens under one lock: the capacity check, the policy, the senders
//! waiting for room and the consumer's pops. The mailbox state word (`state.rs`) is still
//! what schedules the actor: a push reserves under the lock (so the consumer, which pops
//! under the same lock, can never pop a message before it was counted), and a push that
//! finds the actor idle wakes it after unlocking.
//!
//! # Policies when full
//!
//! * [`Overflow::Block`] — [`send`](crate::actor::Addr::send) waits for room: it queues a
//!   ticket with its waker; every pop wakes the oldest ticket. A waiting sender that is
//!   dropped after being woken passes the wake-up on, so no room goes unnoticed.
//!   [`tell`](crate::actor::Addr::tell) never waits and reports `Full`.
//! * [`Overflow::Fail`] — `tell` and `ask` are refused with a `Full` error; `send`,
//!   the explicitly waiting form, waits for room as with `Block`.
//! * [`Overflow::DropOldest`] — the oldest queued message is discarded to make room
//!   (an asker of it gets [`AskError::Dropped`](crate::actor::AskError::Dropped)), counted
//!   in [`Addr::dropped`](crate::actor::Addr::dropped), and reported to the actor through
//!   [`Actor::messages_dropped`](crate::actor::Actor::messages_dropped) before it handles
//!   its next message. Never silent.

use std::collections::VecDeque;
use std::task::Waker;

use super::state::{MailState, Reserved};
use crate::actor::Actor;
use crate::loom::{lock, AtomicU64, Mutex, Ordering};
use crate::msg::{Envelope, NoReply};

/// What a full bounded mailbox does with one more message.
///
/// ```
/// use tutti::actor::Overflow;
/// let policy = Overflow::DropOldest;
/// assert_ne!(policy, Overflow::Block);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Overflow {
    /// The sender waits for room (`send(msg).await`, `send_blocking`); `tell` fails with
    /// `Full` instead of waiting.
    Block,
    /// `tell` and `ask` are refused with a `Full` error (`send` still waits for room).
    Fail,
    /// The oldest queued message is discarded (counted and reported) to make room.
    DropOldest,
}

/// Why an offer was not queued.
pub(crate) enum Refusal {
    /// The actor has stopped.
    Stopped,
    /// Full, and the caller does not wait.
    Full,
    /// Full; the caller's waker is queued for room (`Overflow::Block`).
    Wait,
}

struct Inner<A: Actor> {
    queue: VecDeque<Envelope<A>>,
    closed: bool,
    /// Senders waiting for room: (ticket, waker), oldest first.
    waiters: VecDeque<(u64, Waker)>,
    next_ticket: u64,
    /// Discarded by `DropOldest` since the consumer last looked.
    unreported: u64,
}

/// A bounded mailbox; see the module documentation.
pub(crate) struct Bounded<A: Actor> {
    capacity: usize,
    policy: Overflow,
    inner: Mutex<Inner<A>>,
    dropped: AtomicU64,
}

impl<A: Actor> Bounded<A> {
    pub(crate) fn new(capacity: usize, policy: Overflow) -> Self {
        Bounded {
            capacity: capacity.max(1),
            policy,
            inner: Mutex::new(Inner {
                queue: VecDeque::new(),
                closed: false,
                waiters: VecDeque::new(),
                next_ticket: 0,
                unreported: 0,
            }),
            dropped: AtomicU64::new(0),
        }
    }

    /// Offers `msg`, made into an envelope by `make` only once it is accepted. Returns
    /// whether the actor must be woken, or the message with the reason it was refused.
    /// With `wait`, a full `Block` or `Fail` mailbox queues the waker under the ticket.
    pub(crate) fn offer<M>(
        &self,
        state: &MailState,
        msg: M,
        make: impl FnOnce(M) -> Envelope<A>,
        wait: Option<(&Waker, &mut Option<u64>)>,
    ) -> Result<bool, (M, Refusal)> {
        let mut g = lock(&self.inner);
        if g.closed {
            return Err((msg, Refusal::Stopped));
        }
        if g.queue.len() >= self.capacity {
            match self.policy {
                Overflow::Fail | Overflow::Block => {
                    let Some((waker, ticket)) = wait else {
                        return Err((msg, Refusal::Full));
                    };
                    let g = &mut *g;
                    match ticket.and_then(|t| g.waiters.iter_mut().find(|(id, _)| *id == t)) {
                        Some((_, w)) => w.clone_from(waker),
                        None => {
                            let t = g.next_ticket;
                            g.next_ticket += 1;
                            g.waiters.push_back((t, waker.clone()));
                            *ticket = Some(t);
                        }
                    }
                    return Err((msg, Refusal::Wait));
                }
                Overflow::DropOldest => {
                    // One out, one in: the count of the state word stays right.
                    let oldest = g.queue.pop_front();
                    g.queue.push_back(make(msg));
                    g.unreported += 1;
                    self.dropped.fetch_add(1, Ordering::Relaxed);
                    drop(g);
                    if let Some(e) = oldest {
                        e.discard(NoReply::Overflowed);
                    }
                    return Ok(false);
                }
            }
        }
        let reserved = state.reserve();
        if reserved == Reserved::Closed {
            // The consumer is closing (it will set `closed` under this lock next).
            return Err((msg, Refusal::Stopped));
        }
        g.queue.push_back(make(msg));
        if let Some(t) = wait.and_then(|(_, t)| t.take()) {
            g.waiters.retain(|(id, _)| *id != t);
        }
        Ok(reserved == Reserved::Idle)
    }

    /// Consumer: the oldest message, and how many were discarded since the last call.
    pub(crate) fn pop(&self) -> (Option<Envelope<A>>, u64) {
        let mut g = lock(&self.inner);
        let e = g.queue.pop_front();
        let dropped = std::mem::take(&mut g.unreported);
        let waiter = if e.is_some() {
            g.waiters.pop_front()
        } else {
            None
        };
        drop(g);
        if let Some((_, w)) = waiter {
            w.wake();
        }
        (e, dropped)
    }

    /// A waiting sender gave up (dropped) holding `ticket`.
    pub(crate) fn cancel(&self, ticket: u64) {
        let mut g = lock(&self.inner);
        if let Some(i) = g.waiters.iter().position(|(id, _)| *id == ticket) {
            g.waiters.remove(i);
            return;
        }
        // We were woken for room we will not use: pass the wake-up on.
        let next = if g.queue.len() < self.capacity {
            g.waiters.pop_front()
        } else {
            None
        };
        drop(g);
        if let Some((_, w)) = next {
            w.wake();
        }
    }

    /// Consumer, stopping: refuses everything from now on and hands back the queue.
    /// Waiting senders are woken to learn that the actor stopped.
    pub(crate) fn close(&self) -> VecDeque<Envelope<A>> {
        let mut g = lock(&self.inner);
        g.closed = true;
        let queue = std::mem::take(&mut g.queue);
        let waiters = std::mem::take(&mut g.waiters);
        drop(g);
        for (_, w) in waiters {
            w.wake();
        }
        queue
    }

    /// Messages queued now.
    pub(crate) fn len(&self) -> usize {
        lock(&self.inner).queue.len()
    }

    /// Total discarded by `DropOldest`.
    pub(crate) fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    pub(crate) fn capacity(&self) -> usize {
        self.capacity
    }

    pub(crate) fn policy(&self) -> Overflow {
        self.policy
    }
}
