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

    fn give_back(&self) {
        // Nothing was received from anybody: if the guard fired, its value was sent (or
        // is still in the slot, the channel having ended), and stays so.
    }

    fn note_wait(&self) {
        deadlock::note(Wait::AltSend, &self.chan.home);
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
