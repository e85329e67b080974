//! The channel output guard of an [`Alt`](super::Alt): `alt.send(&tx, value)`.
//!
//! The value to send waits in the guard's waiter slot. The guard fires when the value
//! was handed to a receiver or buffered — the send happened — or when the channel ended
//! (closed or poisoned), in which case the value is still in the slot and goes back to
//! the user with the error. A send guard whose value was sent has nothing to offer: later
//! selections skip it until [`Alt::offer`](super::Alt::offer) gives it a new value.
//!
//! The commit is the receive guard's, mirrored (`chan.rs`): looking, the `Alt` sends at
//! once if it can (deciding the receiver it meets) and then decides its own round, which
//! nobody else can touch; registered, its waiter sits in the channel's sender queue with
//! the value, and the receiver that wins the `Alt`'s selector takes the value in the same
//! critical section. A receiver that loses the race leaves the value where it was.
//!
//! # Two-phase offers (selections that may be cancelled)
//!
//! A value taken from a registered waiter is sent before the `Alt`'s owner knows it: if
//! the selection's future is then dropped (an enclosing timeout), the caller of a
//! `select!` cannot tell that its value went out, and a retry would deliver it twice. So
//! an async selection ([`Alt::select`](super::Alt::select) and its kin, hence every
//! `select!`) registers its send guards as *offers* (`OFFER` in `waiter.rs`): a
//! counterpart that meets an offer does not take the value; it decides the `Alt`'s round
//! for the guard — a *poke* — and goes on as if the offer were not there (a receiver
//! then waits, or a `try_recv` finds nothing). The poked `Alt`, on its next poll, sees
//! the guard decided with its value still in the slot and the channel not ended
//! ([`poked`](Guard::poked)), disables its other guards (nothing was consumed: the round
//! was decided by the poke) and runs a new round, whose look sends the value itself —
//! to the receiver that now waits — and completes the selection in that same poll.
//!
//! * **Complete-or-not-sent.** A value leaves the guard only in the owner's look, in a
//!   poll that then returns `Ready`; so a selection future dropped before it completed
//!   has not sent, and [`Alt::withdraw`](super::Alt::withdraw) returns its value.
//! * **No lost wake-up.** A receive guard that registers beside an offer (an offer is no
//!   partner to complete with, so it does not withdraw for it) pokes every live offer of
//!   another party in the critical section that queues it (`poke_offers` in `chan.rs`);
//!   a plain receiver pokes them while looking for a value, before it queues. Either way
//!   the offering `Alt` looks again after the receiver is queued, and finds it. A sender
//!   registering later sees the queued receiver and looks again itself.
//! * **Cost.** A rendezvous with a waiting offer takes two wake-ups (the receiver's poke,
//!   the `Alt`'s hand-over) instead of one, and a `try_recv` cannot take an offered value
//!   on a rendezvous channel. Blocking selections cannot be cancelled, so they register
//!   plain waiters and keep the one-step hand-over.

use crate::csp::chan::{wake, Chan};
use crate::csp::deadlock::{self, Wait};
use crate::csp::waiter::{GuardWaiter, Selector};

use super::guard::{Direction, Enable, Guard};

/// Offers a value on one channel, on behalf of an `Alt`.
pub(crate) struct OutputGuard<'a, T> {
    chan: &'a Chan<T>,
    /// This guard's place in the channel's sender queue, holding the value to send. It
    /// lives in an `Aliased` allocation, so its address is stable.
    waiter: GuardWaiter<T>,
}

impl<'a, T> OutputGuard<'a, T> {
    /// Guard `index` of the `Alt` whose selector is `selector` (which outlives the guard),
    /// offering `value`.
    pub(crate) fn new(chan: &'a Chan<T>, selector: &Selector, index: usize, value: T) -> Self {
        OutputGuard {
            chan,
            waiter: GuardWaiter::new(selector, index, Some(value)),
        }
    }
}

impl<T: Send> Guard for OutputGuard<'_, T> {
    unsafe fn enable(&self, selector: &Selector, index: usize, register: bool) -> Enable {
        self.chan.act_send();
        if !self.waiter.is_full() {
            return Enable::NotReady; // sent already: nothing to offer
        }
        if !register && !self.chan.may_send() {
            // A look-only pass may trust the hint; waiting never does (see `chan.rs`).
            return Enable::NotReady;
        }
        let (enable, waker) = {
            let mut st = self.chan.lock();
            // SAFETY: the waiter is ours and not queued (the `Alt` enables each guard once
            // per pass, after disabling them all) and holds the value; it sits in an
            // `Aliased` allocation that the `Alt` frees only after disabling; `selector`
            // per our contract.
            unsafe { st.enable_send(&self.waiter, selector, index, register) }
        };
        wake(waker);
        enable
    }

    fn disable(&self) {
        self.chan.lock().cancel_send(self.waiter.node());
    }

    fn set_two_phase(&self, two_phase: bool) {
        self.waiter.set_offer(two_phase);
    }

    fn poked(&self) -> bool {
        // Decided with the value still here: either the channel ended (the guard fires
        // with the value in the error) or a receiver poked the offer.
        self.waiter.is_full() && !self.chan.is_send_closed()
    }

    fn give_back(&self) {
        // Nothing was received from anybody: if the guard fired, its value was sent (or
        // is still in the slot, the channel having ended), and stays so.
    }

    fn note_wait(&self) {
        deadlock::note(Wait::AltSend, &self.chan.home);
    }

    fn withdraw_wait(&self) {
        deadlock::withdrawn(&self.chan.home);
    }

    fn id(&self) -> *const () {
        self.chan.id()
    }

    fn direction(&self) -> Direction {
        Direction::Send
    }

    unsafe fn take_value(&self, out: *mut ()) {
        // SAFETY: `out` is an `Option<T>` and the waiter is unqueued (caller's contract).
        unsafe { *out.cast::<Option<T>>() = self.waiter.take_slot() };
    }

    unsafe fn swap_value(&self, input: *mut ()) {
        // SAFETY: `input` is an `Option<T>` and the waiter is unqueued (caller's contract).
        unsafe {
            let input = &mut *input.cast::<Option<T>>();
            let old = self.waiter.take_slot();
            if let Some(v) = input.take() {
                self.waiter.put_slot(v);
            }
            *input = old;
        }
    }
}
