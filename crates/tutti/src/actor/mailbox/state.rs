//! The mailbox state word: scheduling, counting and closing of one actor's mailbox.
//!
//! # Encoding
//!
//! One `AtomicU64` per actor:
//!
//! | bits | name | set by | cleared by | meaning |
//! |---|---|---|---|---|
//! | 0 | `CLOSED` | consumer, once, when the actor stops | never | every later reservation fails |
//! | 1 | `AWAITING` | consumer, when a handler returns `Pending` | consumer, when it completes | a handler is suspended; a stop request must wake the actor to cancel it |
//! | 2 | `SYSTEM` | system senders (stop, priority lane, last address dropped) | consumer, *before* it reads the events | a system event may be pending |
//! | 3.. | count | producers (`+1` per reserved message) | consumer (`-n` per retired batch) | messages reserved and not yet retired, plus the start token |
//!
//! The count starts at 1, the **start token**, which the consumer retires at the end of
//! its first turn: before that the count cannot be 0, so no producer tries to wake an
//! actor whose waker has not been published yet.
//!
//! # Protocol
//!
//! An actor is **idle** — its task returned `Pending` and nobody has promised to wake
//! it — exactly when the consumer's last retire left `count == 0` and `SYSTEM` clear.
//!
//! * *Produce*: [`reserve`](MailState::reserve) (`fetch_add(1)`) **before** pushing. If it
//!   finds `CLOSED`, the message is refused (and not pushed). If it finds the actor idle,
//!   the producer pushes and then wakes the actor. Pushing after reserving means the
//!   consumer may see a count larger than what the queue yields for a moment (a push in
//!   flight); it then retries later instead of going idle.
//! * *Consume*: the consumer pops and handles messages, counting them, and
//!   [`retire`](MailState::retire)s the batch with one `fetch_sub`. If that leaves the
//!   count at 0 with no `SYSTEM`, the actor goes idle; otherwise it continues.
//! * *Signal*: a system sender records its event (under the actor's aux lock) and then
//!   [`signal`](MailState::signal)s (`fetch_or(SYSTEM)`), waking the actor if it was idle —
//!   or, for an interrupting event such as a stop, if a handler is suspended.
//! * *Close*: when the actor stops, the consumer sets `CLOSED`; the count it displaces
//!   says how many reserved messages are in (or on their way into) the queue, and it
//!   drains exactly those.
//!
//! # Why no wake-up is lost and nothing is left behind
//!
//! All transitions are read-modify-writes of this one word, so they are totally ordered.
//! A producer's reservation either precedes the consumer's idle-making retire — then
//! that retire could not have brought the count to 0 without the consumer having popped
//! the message — or follows it, and then the producer sees `count == 0` and wakes the
//! actor after pushing. A system signal is the same with `SYSTEM`: the consumer clears
//! `SYSTEM` before it reads the events, so an event recorded after the clear sets it again
//! and either wakes the actor or makes its next retire report more work. A reservation
//! that succeeds precedes the close and is counted in the value the close displaces, so
//! the closing consumer drains it; a reservation after the close fails and is never
//! pushed. A handler that awaits sets `AWAITING`; a stop request that finds it set wakes
//! the actor, and one that came before it is seen by the consumer in the value its
//! `fetch_or(AWAITING)` returns.
//!
//! The `loom_tests` module model-checks these claims together with the queue.

use crate::loom::{AtomicU64, Ordering};

const CLOSED: u64 = 1 << 0;
const AWAITING: u64 = 1 << 1;
const SYSTEM: u64 = 1 << 2;
const SHIFT: u32 = 3;
const ONE: u64 = 1 << SHIFT;

/// What a producer's reservation found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Reserved {
    /// The mailbox is closed: do not push.
    Closed,
    /// The actor was idle: push, then wake it.
    Idle,
    /// The actor is scheduled or running: push, nothing else.
    Busy,
}

/// What a consumer's retire found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Retired {
    /// Nothing left: the actor is now idle.
    Idle,
    /// More messages (possibly still being pushed) or system events remain.
    More,
}

/// The state word; see the module documentation.
pub(crate) struct MailState(AtomicU64);

impl MailState {
    /// A fresh mailbox: open, holding the start token.
    pub(crate) fn new() -> MailState {
        MailState(AtomicU64::new(ONE))
    }

    /// Producer: reserves room for one message before pushing it.
    #[inline]
    pub(crate) fn reserve(&self) -> Reserved {
        // Acquire: if we are to wake the actor, see the waker it published (Release in
        // the consumer's retire). Release: nothing needed; the push publishes itself.
        let old = self.0.fetch_add(ONE, Ordering::AcqRel);
        if old & CLOSED != 0 {
            Reserved::Closed
        } else if old >> SHIFT == 0 && old & SYSTEM == 0 {
            Reserved::Idle
        } else {
            Reserved::Busy
        }
    }

    /// System sender: flags a recorded event. Returns true if the caller must wake the
    /// actor: it was idle, or (`interrupt`) a handler is suspended.
    pub(crate) fn signal(&self, interrupt: bool) -> bool {
        // Release: the event (recorded under the aux lock) happens before the consumer
        // sees `SYSTEM`. Acquire: see the published waker.
        let old = self.0.fetch_or(SYSTEM, Ordering::AcqRel);
        if old & CLOSED != 0 {
            return false;
        }
        let idle = old >> SHIFT == 0 && old & SYSTEM == 0;
        idle || (interrupt && old & AWAITING != 0)
    }

    /// Consumer: true if a system event may be pending (a plain load).
    #[inline]
    pub(crate) fn has_system(&self) -> bool {
        self.0.load(Ordering::Acquire) & SYSTEM != 0
    }

    /// Consumer: clears `SYSTEM` before reading the events it announces.
    pub(crate) fn take_system(&self) -> bool {
        // AcqRel: a signal recorded before this clear is visible to the reads that
        // follow; one recorded after it sets `SYSTEM` again.
        self.0.fetch_and(!SYSTEM, Ordering::AcqRel) & SYSTEM != 0
    }

    /// Consumer: retires `n` handled messages (and the start token) and reports whether
    /// the actor is now idle.
    #[inline]
    pub(crate) fn retire(&self, n: u64) -> Retired {
        let new = if n == 0 {
            self.0.load(Ordering::Acquire)
        } else {
            // Release: publishes the waker (first turn) to producers that find the
            // actor idle. Acquire: see events signalled meanwhile.
            self.0.fetch_sub(n * ONE, Ordering::AcqRel) - n * ONE
        };
        if new >> SHIFT == 0 && new & SYSTEM == 0 {
            Retired::Idle
        } else {
            Retired::More
        }
    }

    /// Consumer: a handler returned `Pending`. Returns true if a system event arrived
    /// before this point (the consumer should poll again to look at it).
    pub(crate) fn set_awaiting(&self) -> bool {
        self.0.fetch_or(AWAITING, Ordering::AcqRel) & SYSTEM != 0
    }

    /// Consumer: the suspended handler completed.
    pub(crate) fn clear_awaiting(&self) {
        self.0.fetch_and(!AWAITING, Ordering::AcqRel);
    }

    /// Consumer: closes the mailbox; returns the count it displaced (reserved messages,
    /// retired or not).
    pub(crate) fn close(&self) -> u64 {
        self.0.fetch_or(CLOSED, Ordering::AcqRel) >> SHIFT
    }

    /// The current count (meaningless once closed).
    #[inline]
    pub(crate) fn count(&self) -> u64 {
        self.0.load(Ordering::Acquire) >> SHIFT
    }

    /// True once the actor has begun to stop.
    pub(crate) fn is_closed(&self) -> bool {
        self.0.load(Ordering::Acquire) & CLOSED != 0
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn start_token_then_idle_then_wake() {
        let s = MailState::new();
        assert_eq!(s.reserve(), Reserved::Busy, "start token: not idle yet");
        assert_eq!(s.retire(2), Retired::Idle);
        assert_eq!(s.reserve(), Reserved::Idle);
        assert_eq!(s.reserve(), Reserved::Busy);
        assert_eq!(s.retire(1), Retired::More);
        assert!(!s.signal(false), "busy: no wake");
        assert!(s.has_system() && s.take_system());
        assert_eq!(s.retire(1), Retired::Idle);
        assert!(s.signal(false), "idle: wake");
        assert!(!s.signal(true), "already signalled");
        assert!(s.take_system());
        assert_eq!(s.reserve(), Reserved::Idle);
        assert!(!s.set_awaiting());
        assert!(s.signal(true), "interrupt wakes a suspended handler");
        assert!(s.take_system());
        s.clear_awaiting();
        assert_eq!(s.close(), 1);
        assert!(s.is_closed());
        assert_eq!(s.reserve(), Reserved::Closed);
        assert!(!s.signal(true));
    }
}
