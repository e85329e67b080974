//! Mailboxes: the state word that schedules an actor, and the two queue flavors behind it.
//!
//! * `state.rs` — the per-actor state word (count of reserved messages, `CLOSED`,
//!   `AWAITING`, `SYSTEM`) and the protocol that decides who wakes the actor.
//! * `queue.rs` — the unbounded flavor: a lock-free intrusive MPSC queue (the default).
//! * `bounded.rs` — the bounded flavor: capacity plus an [`Overflow`] policy, under a lock.
//!
//! [`Mailbox`] (here) ties the state word to the unbounded queue and to the consumer's
//! count of popped messages; it is all the lock-free code of a mailbox, free of actor
//! types, so that the loom models in `loom_tests.rs` check exactly the code actors run.
//! A bounded actor uses its `state` and `done` with a boxed
//! [`Bounded`](bounded::Bounded) queue instead of `queue`.

pub(crate) mod bounded;
pub(crate) mod queue;
pub(crate) mod state;

use std::cell::Cell;
use std::ptr::NonNull;

pub use bounded::Overflow;
use queue::{Pop, Queue};
use state::{MailState, Reserved, Retired};

use crate::msg::Link;

/// The lock-free core of one actor's mailbox; see the module documentation.
pub(crate) struct Mailbox {
    pub(crate) state: MailState,
    queue: Queue,
    /// Consumer only: messages popped (plus the start token) and not yet retired in
    /// `state`.
    done: Cell<u64>,
}

// SAFETY: `done` is only touched by the consumer (the `unsafe` consumer methods' contract
// and `count_pop`/`retire`, which only the consumer calls); the rest is atomic or
// the queue (itself Send + Sync).
unsafe impl Sync for Mailbox {}

impl Mailbox {
    pub(crate) fn new() -> Mailbox {
        Mailbox {
            state: MailState::new(),
            queue: Queue::new(),
            done: Cell::new(1), // the start token
        }
    }

    /// Producer: reserves, then pushes the link `make` returns (called only if the
    /// mailbox is open). Returns whether the actor must be woken, or `None` if closed.
    #[inline]
    pub(crate) fn offer(&self, make: impl FnOnce() -> NonNull<Link>) -> Option<bool> {
        match self.state.reserve() {
            Reserved::Closed => None,
            reserved => {
                // SAFETY: `make` hands over a link it owns.
                unsafe { self.queue.push(make()) };
                Some(reserved == Reserved::Idle)
            }
        }
    }

    /// Consumer: the oldest link, counted as popped. `Busy` if a reserved message is
    /// still being pushed.
    ///
    /// # Safety
    /// Only the consumer may call it.
    #[inline]
    pub(crate) unsafe fn pop(&self) -> Pop {
        // SAFETY: the caller is the consumer.
        let p = unsafe { self.queue.pop() };
        match p {
            Pop::Item(_) => self.count_pop(),
            Pop::Empty if self.state.count() > self.done.get() => return Pop::Busy,
            _ => {}
        }
        p
    }

    /// The address of the message queued last (0: none); see [`Queue::last`].
    #[inline]
    pub(crate) fn last(&self) -> usize {
        self.queue.last()
    }

    /// Consumer: one message was taken (from a bounded queue).
    #[inline]
    pub(crate) fn count_pop(&self) {
        self.done.set(self.done.get() + 1);
    }

    /// Consumer: messages reserved and not yet popped (they may still be in flight).
    #[inline]
    pub(crate) fn waiting(&self) -> u64 {
        self.state.count().saturating_sub(self.done.get())
    }

    /// Consumer: retires the popped messages; `Idle` means the actor may now wait.
    #[inline]
    pub(crate) fn retire(&self) -> Retired {
        self.state.retire(self.done.replace(0))
    }

    /// Consumer, stopping a bounded actor: closes the state word only (the messages are
    /// in the bounded queue, which the caller closes).
    pub(crate) fn close_state(&self) {
        self.state.close();
        self.done.set(0);
    }

    /// Consumer, stopping: closes the mailbox and hands every message that was reserved
    /// and not popped to `each` (waiting for pushes in flight).
    ///
    /// # Safety
    /// Only the consumer may call it, and only for an unbounded actor.
    pub(crate) unsafe fn close(&self, mut each: impl FnMut(NonNull<Link>)) {
        let reserved = self.state.close();
        let mut left = reserved.saturating_sub(self.done.replace(0));
        while left > 0 {
            // SAFETY: the caller is the consumer.
            match unsafe { self.queue.pop() } {
                Pop::Item(link) => {
                    left -= 1;
                    each(link);
                }
                // A reserved message is still being pushed: a few instructions away.
                Pop::Busy | Pop::Empty => crate::loom::thread::yield_now(),
            }
        }
    }

    /// Pops whatever is left, when nobody can push any more.
    ///
    /// # Safety
    /// The caller has exclusive access.
    pub(crate) unsafe fn drain(&self, mut each: impl FnMut(NonNull<Link>)) {
        // SAFETY: exclusive access.
        while let Pop::Item(link) = unsafe { self.queue.pop() } {
            each(link);
        }
    }
}

#[cfg(all(test, loom))]
mod loom_tests;
