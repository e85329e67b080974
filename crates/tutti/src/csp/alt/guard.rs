//! The seam between an [`Alt`](super::Alt) and the events it can wait for.
//!
//! An `Alt` knows three kinds of guard: built-in `skip` and timeouts, and *events* — any
//! type implementing [`Guard`]. A channel input ([`InputGuard`](super::input::InputGuard))
//! is an event; a barrier (JCSP's alting barrier, `csp::barrier`) plugs in the same way:
//! its `enable` decides the `Alt`'s selector only when the barrier can complete with this
//! party, and otherwise leaves a waiter that whoever completes the barrier decides —
//! losing the compare-and-swap meaning "this party chose something else; do not count it".
//!
//! # Contract (JCSP's enable/disable, with the commit protocol of the module docs)
//!
//! * `enable(selector, i, register)` runs under the event's own lock. If the event can
//!   fire now it must first win `selector.try_select(i)` and only then consume the event
//!   (take the value); if it loses it must change nothing and report [`Enable::Lost`].
//!   Otherwise, if `register`, it leaves a waiter that a counterpart decides (also by
//!   winning `try_select(i)` first), and reports [`Enable::Waiting`].
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
    /// The selector had been decided for another guard first; nothing changed here.
    Lost,
    /// Not ready; a waiter is queued.
    Waiting,
    /// Not ready; nothing queued (`register == false`).
    NotReady,
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

    /// Removes the waiter left by `enable`, if it is still queued.
    fn disable(&self);

    /// Returns a fired but unclaimed event (the value goes back to the front of its
    /// channel), so that nothing is lost when the user does not take it.
    fn give_back(&self);

    /// The identity of the underlying object (a channel's address), to match it against
    /// the end the user names when taking the value.
    fn id(&self) -> *const ();

    /// Tells the deadlock detector that the polling process waits on this event.
    fn note_wait(&self);

    /// Moves the fired value out into `*out`.
    ///
    /// # Safety
    /// `out` points to an `Option<V>` where `V` is this guard's value type, and the
    /// selection is finished (the guard's waiter is not queued).
    unsafe fn take_value(&self, out: *mut ());
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
