//! The channel input guard of an [`Alt`](super::Alt): `alt.recv(&rx)`.

use crate::csp::chan::{wake, Chan};
use crate::csp::deadlock::{self, Side, Wait};
use crate::csp::waiter::{GuardWaiter, Selector};

use super::guard::{Direction, Enable, Guard};

/// Waits for a value (or the end) of one channel, on behalf of an `Alt`.
pub(crate) struct InputGuard<'a, T> {
    chan: &'a Chan<T>,
    /// This guard's place in the channel's receiver queue; the fired value lands in its
    /// slot. It lives in an `Aliased` allocation, so its address is stable.
    waiter: GuardWaiter<T>,
}

impl<'a, T> InputGuard<'a, T> {
    /// Guard `index` of the `Alt` whose selector is `selector` (which outlives the guard).
    pub(crate) fn new(chan: &'a Chan<T>, selector: &Selector, index: usize) -> Self {
        InputGuard {
            chan,
            waiter: GuardWaiter::new(selector, index, None),
        }
    }
}

impl<T: Send> InputGuard<'_, T> {
    /// `Guard::enable`; `resume` (a rotating `Alt`'s look) marks a plain sender taken
    /// from (`resume.rs`).
    ///
    /// # Safety
    /// As for `Guard::enable`.
    unsafe fn enable_in(
        &self,
        selector: &Selector,
        index: usize,
        register: bool,
        resume: bool,
    ) -> Enable {
        self.chan.home.act(Some(Side::Recv));
        if !register && !self.chan.may_recv() {
            // A look-only pass may trust the hint; waiting never does (see `chan.rs`).
            return Enable::NotReady;
        }
        let (enable, waker) = {
            let mut st = self.chan.lock();
            // SAFETY: the waiter is ours and not queued (the `Alt` enables each guard once
            // per round, after disabling them all); it sits in an `Aliased` allocation
            // that the `Alt` frees only after disabling; `selector` per our contract.
            unsafe { st.enable_recv(&self.waiter, selector, index, register, resume) }
        };
        wake(waker);
        enable
    }
}

impl<T: Send> Guard for InputGuard<'_, T> {
    unsafe fn enable(&self, selector: &Selector, index: usize, register: bool) -> Enable {
        // SAFETY: our contract.
        unsafe { self.enable_in(selector, index, register, false) }
    }

    unsafe fn look_rotating(&self, selector: &Selector, index: usize) -> Enable {
        // SAFETY: our contract.
        unsafe { self.enable_in(selector, index, false, true) }
    }

    fn is_resuming(&self) -> bool {
        self.chan.is_resuming()
    }

    fn stop_resuming(&self) {
        if self.chan.is_resuming() {
            self.chan.stop_resuming();
        }
    }

    fn disable(&self) {
        self.chan.lock().cancel_recv(self.waiter.node());
    }

    fn give_back(&self) {
        let mut st = self.chan.lock();
        st.cancel_recv(self.waiter.node());
        // SAFETY: not queued (just removed, or popped by a counterpart that decided under
        // this lock before we took it): the slot is ours.
        let Some(value) = (unsafe { self.waiter.take_slot() }) else {
            return;
        };
        let r = st.give_back(value);
        drop(st);
        match r {
            Ok(waker) => wake(waker),
            Err(value) => drop(value),
        }
    }

    fn note_wait(&self) {
        deadlock::note_from(Wait::AltRecv, &self.chan.home, self.chan.sole_sender());
    }

    fn withdraw_wait(&self) {
        deadlock::withdrawn(&self.chan.home);
    }

    fn id(&self) -> *const () {
        self.chan.id()
    }

    fn direction(&self) -> Direction {
        Direction::Receive
    }

    unsafe fn take_value(&self, out: *mut ()) {
        // SAFETY: `out` is an `Option<T>` and the waiter is unqueued (caller's contract).
        unsafe { *out.cast::<Option<T>>() = self.waiter.take_slot() };
    }

    unsafe fn swap_value(&self, _input: *mut ()) {
        unreachable!("tutti: a receive guard offers no value");
    }
}
