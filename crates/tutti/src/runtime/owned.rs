//! [`TaskCell`]: a value that one task owns and touches without a lock.
//!
//! Some state belongs to one task (an RMI location's queues and tables: its
//! task executes every request), yet is reached through handles that are
//! `Send` — so that the task's body is an ordinary task and a handle can sit
//! in a method's context. A mutex would cost every access a lock for a value
//! that is never contended; a `RefCell` alone is not `Sync`. A `TaskCell` is a
//! `RefCell` that may only be used while this thread polls the cell's one
//! owning task, and only inside a closure, so that no borrow outlives the
//! poll.
//!
//! # The protocol
//!
//! * **O1.** [`TaskCell::new`] returns the cell and its one [`CellOwner`]
//!   token (not `Clone`); the token becomes a future with
//!   [`CellOwner::run`]: the owning task, an [`Owning`] future, of which there
//!   is therefore at most one per cell.
//! * **O2.** Around each of its polls, the `Owning` future records its cell's
//!   address as this thread's current owner (and restores the previous one
//!   after, also when the poll panics).
//! * **O3.** [`TaskCell::with`] lends the value, to a closure, only if this
//!   thread's current owner is the cell; anyone else gets `None`. The borrow
//!   ends when the closure returns, inside the owner's poll.
//! * **O4.** The `Owning` future keeps its cell alive, so no other cell can
//!   take its address while it may be recorded (no reuse of a current owner).
//!
//! Hence two threads never borrow a cell at once: each would be inside a poll
//! of the cell's `Owning` future (O2, O3, O4), of which there is one (O1), and
//! a future is polled by one thread at a time, its successive polls ordered by
//! whoever moves it between threads (a `Send` hand-over synchronises); no
//! borrow survives the poll it was made in (O3), so the `RefCell`'s own count
//! is only ever touched by the thread polling the owner. Within that thread
//! the `RefCell` keeps borrows exclusive: a closure that reaches the cell
//! again panics, it does not alias.

use std::any::Any;
use std::cell::{Cell, RefCell};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

thread_local! {
    /// The cell whose owning task this thread polls now (its address; 0: none).
    static CURRENT: Cell<usize> = const { Cell::new(0) };
}

/// A value owned by one task (see the module documentation).
pub(crate) struct TaskCell<T> {
    value: RefCell<T>,
}

// SAFETY: the `RefCell` is only borrowed through `TaskCell::with`, which
// lends it only on a thread that is polling the cell's one `Owning` future,
// and only until its closure returns (O1–O4 of the module documentation); so
// no two threads touch it at once, and the hand-over of that future between
// threads orders their accesses.
// `T: Send` because the value is used from whichever thread polls the owner,
// and dropped wherever the last handle goes.
unsafe impl<T: Send> Sync for TaskCell<T> {}

impl<T: Send + 'static> TaskCell<T> {
    /// A cell holding `value`, and the one token whose task owns it.
    pub(crate) fn new(value: T) -> (Arc<TaskCell<T>>, CellOwner) {
        let cell = Arc::new(TaskCell {
            value: RefCell::new(value),
        });
        let owner = CellOwner {
            cell: Arc::clone(&cell) as Arc<dyn Any + Send + Sync>,
        };
        (cell, owner)
    }
}

impl<T> TaskCell<T> {
    /// `f` on the value, if this thread is polling the cell's owning task
    /// now; `None` (and `f` not called) otherwise.
    ///
    /// # Panics
    /// If `f` reaches the cell again (the value is borrowed).
    #[inline]
    pub(crate) fn with<R>(&self, f: impl FnOnce(&mut T) -> R) -> Option<R> {
        let here = self as *const TaskCell<T> as usize;
        if CURRENT.with(Cell::get) == here {
            Some(f(&mut self.value.borrow_mut()))
        } else {
            None
        }
    }
}

/// The one token of a [`TaskCell`]: [`run`](CellOwner::run) makes the task
/// that owns the cell.
pub(crate) struct CellOwner {
    /// The cell, kept alive so that its address stays its own (O4).
    cell: Arc<dyn Any + Send + Sync>,
}

impl CellOwner {
    /// The cell's address, as [`TaskCell::with`] compares it.
    fn at(&self) -> usize {
        Arc::as_ptr(&self.cell).cast::<()>() as usize
    }

    /// `fut`, as the task that owns the cell: while it is polled, the cell
    /// lends its value on the polling thread.
    pub(crate) fn run<F: Future>(self, fut: F) -> Owning<F> {
        Owning {
            owner: self,
            fut: Box::pin(fut),
        }
    }
}

/// The task that owns a [`TaskCell`] (from [`CellOwner::run`]).
pub(crate) struct Owning<F> {
    owner: CellOwner,
    fut: Pin<Box<F>>,
}

impl<F: Future> Future for Owning<F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        /// Restores the previous owner, also when the poll panics.
        struct Restore(usize);
        impl Drop for Restore {
            fn drop(&mut self) {
                CURRENT.with(|c| c.set(self.0));
            }
        }
        let _restore = Restore(CURRENT.with(|c| c.replace(self.owner.at())));
        self.fut.as_mut().poll(cx)
    }
}

impl std::fmt::Debug for CellOwner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CellOwner").finish_non_exhaustive()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn only_the_owning_task_borrows() {
        let (cell, owner) = TaskCell::new(1u32);
        assert!(cell.with(|_| ()).is_none(), "not inside the owner");
        let inside = Arc::clone(&cell);
        let got = crate::block_on(owner.run(async move {
            inside.with(|v| *v += 1).expect("the owner borrows");
            // Another task, even while the owner waits for it, is not the owner.
            let other = Arc::clone(&inside);
            let elsewhere = crate::runtime::spawn(async move { other.with(|_| ()).is_none() });
            let not_owner = elsewhere.await;
            (inside.with(|v| *v).expect("still the owner"), not_owner)
        }));
        assert_eq!(got, (2, true));
        assert!(cell.with(|_| ()).is_none(), "not after the owner's poll");
    }

    #[test]
    fn owners_nest_and_restore() {
        let (a, owner_a) = TaskCell::new('a');
        let (b, owner_b) = TaskCell::new('b');
        let (a2, b2) = (Arc::clone(&a), Arc::clone(&b));
        let seen = crate::block_on(owner_a.run(async move {
            let inner = owner_b.run(async move { (a2.with(|_| ()).is_none(), b2.with(|v| *v)) });
            let (a_hidden, b_seen) = inner.await;
            (a_hidden, b_seen, a.with(|v| *v))
        }));
        assert_eq!(seen, (true, Some('b'), Some('a')));
    }

    #[test]
    fn a_closure_that_reaches_the_cell_again_panics() {
        let (cell, owner) = TaskCell::new(0u8);
        let again = crate::block_on(owner.run(async move {
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                cell.with(|_| cell.with(|_| ()));
            }))
            .is_err()
        }));
        assert!(again, "a second borrow panics rather than aliases");
    }
}
