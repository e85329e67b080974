//! The seam between an [`Alt`](super::Alt) and the events it can wait for.
//!
//! An `Alt` knows three kinds of guard: built-in `skip` and timeouts, and *events* — any
//! type implementing [`Guard`]. Channel inputs ([`InputGuard`](super::input::InputGuard))
//! and outputs ([`OutputGuard`](super::output::OutputGuard)) are events.
//!
//! # Contract (JCSP's enable/disable, with the commit protocol of the module docs)
//!
//! * `enable(selector, i, false)` — the *look*: the `Alt` has nothing queued anywhere, so
//!   nobody else can decide its round. If the event can complete now, complete it
//!   (committing any counterpart it meets), decide `selector` for `i` and report
//!   [`Enable::Fired`]; otherwise change nothing and report [`Enable::NotReady`].
//! * `enable(selector, i, true)` — the *registration*: if the event could complete now,
//!   change nothing and report [`Enable::Retry`] (the `Alt` withdraws and looks again: a
//!   registered party may not decide anybody); otherwise leave a waiter that a
//!   counterpart decides by winning `selector.try_select(i)` before it consumes anything,
//!   and report [`Enable::Waiting`] (or [`Enable::NotReady`] if the guard has nothing to
//!   offer, e.g. a send guard whose value was sent already).
//! * `disable()` removes a waiter left by `enable`, if no counterpart popped it; it may be
//!   called when none is left.
//! * After the selection fired guard `i`, the `Alt` either hands the consumed event to the
//!   user (`take_value`) or returns it (`give_back`).

use std::ptr::NonNull;

use crate::csp::waiter::Selector;

/// What an event's enabling step did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Enable {
    /// The event was ready: the selector is decided for this guard, the event consumed.
    Fired,
    /// Not ready; a waiter is queued.
    Waiting,
    /// Not ready; nothing queued.
    NotReady,
    /// Registering, the event was found ready: the `Alt` must withdraw and look again
    /// (it may not decide a counterpart while it has waiters queued; see `chan.rs`,
    /// invariant 5). Nothing was queued.
    Retry,
}

/// An event an `Alt` can select: see the module contract.
pub(crate) trait Guard: Send {
    /// Fires now if ready (see the contract), else queues a waiter if `register`.
    ///
    /// # Safety
    /// `selector` stays at its address until this guard's waiter is popped by a
    /// counterpart or removed by [`disable`](Self::disable), and the guard is not enabled
    /// already.
    unsafe fn enable(&self, selector: &Selector, index: usize, register: bool) -> Enable;

    /// The look of a rotating selection (`fair_select`, `select`): as
    /// `enable(selector, index, false)`, but a plain sender whose value the guard takes
    /// is marked to report when it resumes (`resume.rs`).
    ///
    /// # Safety
    /// As for [`enable`](Self::enable).
    unsafe fn look_rotating(&self, selector: &Selector, index: usize) -> Enable {
        // SAFETY: our contract.
        unsafe { self.enable(selector, index, false) }
    }

    /// Whether a party this guard took from has not offered again yet, so that the guard
    /// may soon be ready again (`resume.rs`; a relaxed hint).
    fn is_resuming(&self) -> bool {
        false
    }

    /// Clears the mark [`is_resuming`](Self::is_resuming) reads: the `Alt` stops waiting
    /// for that party (`resume.rs`). Called with no waiter of the `Alt` queued.
    fn stop_resuming(&self) {}

    /// Removes the waiter left by `enable`, if it is still queued.
    fn disable(&self);

    /// Makes later registrations two-phase (`true`, for selections that may be
    /// cancelled) or not: see `output.rs`. Called by the owner between rounds; events
    /// that consume nothing before they fire ignore it.
    fn set_two_phase(&self, _two_phase: bool) {}

    /// Whether the guard was decided by a counterpart that only woke the `Alt` (a poke
    /// of a two-phase offer): the event did not happen, and the `Alt` must look again.
    /// Asked by the owner once the round is decided for this guard.
    fn poked(&self) -> bool {
        false
    }

    /// Returns a fired but unclaimed event (the value goes back to the front of its
    /// channel), so that nothing is lost when the user does not take it.
    fn give_back(&self);

    /// The identity of the underlying object (a channel's address), to match it against
    /// the end the user names when taking the value.
    fn id(&self) -> *const ();

    /// Tells the deadlock detector that the polling process waits on this event.
    fn note_wait(&self);

    /// The `Alt` abandons its round: a wait this guard noted is withdrawn
    /// (`deadlock::withdrawn`).
    fn withdraw_wait(&self) {}

    /// Which way the event moves values.
    fn direction(&self) -> Direction;

    /// Moves the guard's value out into `*out`: a receive guard's fired value (`None`:
    /// it fired because its channel ended), a send guard's unsent value (`None`: it was
    /// sent).
    ///
    /// # Safety
    /// `out` points to an `Option<V>` where `V` is this guard's value type, and no round
    /// is under way (the guard's waiter is not queued).
    unsafe fn take_value(&self, out: *mut ());

    /// Gives a send guard a new value to offer, taken from `*input` (an `Option<V>`); the
    /// value it held, if any, is left there instead.
    ///
    /// # Safety
    /// As for [`take_value`](Self::take_value), and the guard is a send guard.
    unsafe fn swap_value(&self, input: *mut ());
}

/// Which way an event moves values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Direction {
    /// A channel input.
    Receive,
    /// A channel output.
    Send,
}

/// A heap allocation reached through a raw pointer: like `Box`, but without `Box`'s
/// uniqueness, so that counterparts may hold pointers into it (an `Alt`'s selector and
/// guards) while the owner moves the handle around.
pub(crate) struct Aliased<T: ?Sized>(NonNull<T>);

impl<T: ?Sized> Aliased<T> {
    pub(crate) fn new(value: Box<T>) -> Self {
        Aliased(NonNull::from(Box::leak(value)))
    }

    #[inline]
    pub(crate) fn get(&self) -> &T {
        // SAFETY: allocated by `new`, freed only by `drop`; only shared references are
        // ever created from the pointer.
        unsafe { self.0.as_ref() }
    }
}

impl<T: ?Sized> Drop for Aliased<T> {
    fn drop(&mut self) {
        // SAFETY: from `Box::leak` in `new`, freed exactly once, here. The owner (an
        // `Alt`) has removed every queued reference first.
        drop(unsafe { Box::from_raw(self.0.as_ptr()) });
    }
}

// SAFETY: `Aliased<T>` owns a `T` like a `Box` and hands out only `&T`.
unsafe impl<T: ?Sized + Send> Send for Aliased<T> {}
// SAFETY: as above.
unsafe impl<T: ?Sized + Sync> Sync for Aliased<T> {}
