//! Ownership of a location's endpoint by its task: the single-owner cell
//! that holds its state ([`Owned`]), and the scope its task runs in
//! ([`OwnerScope`]), which marks the thread that polls it.

use std::cell::{Cell, RefCell, RefMut};
use std::sync::Arc;

use super::location::{Inner, Location};

/// The location's state, owned by its task: a single-owner cell, no lock.
///
/// Every access goes through [`Location::state`], which first checks that
/// this thread is polling the location's own task right now — the task that
/// [`run`](super::run) made for the location marks itself in [`CURRENT`]
/// around each poll ([`OwnerScope`]). A task is polled by one thread at a time
/// and its polls are ordered by the scheduler, so the state is never touched
/// from two threads at once, whatever a program does with its `Location`s
/// (they stay `Send`, so that a location's body can be an ordinary task: a
/// handle taken elsewhere gets a clear panic instead of a lock). Within the
/// task the `RefCell` keeps borrows exclusive: none spans an `.await` or user
/// code.
pub(super) struct Owned<T>(RefCell<T>);

impl<T> Owned<T> {
    pub(super) fn new(value: T) -> Self {
        Owned(RefCell::new(value))
    }

    /// The value, borrowed: only after [`owns`] said this thread polls the
    /// owning task (see `Location::state`).
    #[inline]
    pub(super) fn borrow(&self) -> RefMut<'_, T> {
        self.0.borrow_mut()
    }
}

/// Whether this thread is polling the task that owns `inner` right now.
#[inline]
pub(super) fn owns(inner: &Arc<Inner>) -> bool {
    CURRENT.with(Cell::get) == Arc::as_ptr(inner)
}

// SAFETY: the `RefCell` is only borrowed by `Location::state`, on a thread
// that is polling the owning location's task (checked against `CURRENT`,
// which only that task's `OwnerScope` sets to this endpoint); so no two
// threads borrow it at once, and a thread hand-over between polls is ordered
// by the scheduler's synchronisation. `T: Send` because the task (and with it
// the value) moves between threads.
unsafe impl<T: Send> Sync for Owned<T> {}

thread_local! {
    /// The endpoint whose location task this thread is polling (null: none).
    static CURRENT: Cell<*const Inner> = const { Cell::new(std::ptr::null()) };
}

/// A location's task (body and closing fence, see [`run`](super::run)):
/// marks the endpoint as owned by this thread while it polls.
pub(super) struct OwnerScope<F> {
    owner: *const Inner,
    fut: std::pin::Pin<Box<F>>,
}

// SAFETY: `owner` is only compared, never dereferenced; the future is `Send`.
unsafe impl<F: Send> Send for OwnerScope<F> {}

impl OwnerScope<()> {
    /// The scope of `loc`'s location, for its task.
    pub(super) fn of(loc: &Location) -> OwnerScope<()> {
        OwnerScope {
            owner: Arc::as_ptr(&loc.inner),
            fut: Box::pin(()),
        }
    }

    /// `fut`, run as the location's task.
    pub(super) fn run<F: std::future::Future>(self, fut: F) -> OwnerScope<F> {
        OwnerScope {
            owner: self.owner,
            fut: Box::pin(fut),
        }
    }
}

impl<F: std::future::Future> std::future::Future for OwnerScope<F> {
    type Output = F::Output;

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<F::Output> {
        /// Restores the previous owner, also when the poll panics.
        struct Restore(*const Inner);
        impl Drop for Restore {
            fn drop(&mut self) {
                CURRENT.with(|c| c.set(self.0));
            }
        }
        let _restore = Restore(CURRENT.with(|c| c.replace(self.owner)));
        self.fut.as_mut().poll(cx)
    }
}
