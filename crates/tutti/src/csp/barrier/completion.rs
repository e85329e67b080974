//! [`Completion`]: the barrier as a guard that arrives only when its arrival completes
//! the phase ([`Enrollment::complete`]; the contract is in the module docs of
//! `barrier.rs`, the wake-up protocol at `Last` in `waiters.rs`).

use std::fmt;
use std::future::Future;
use std::pin::{pin, Pin};
use std::task::{Context, Poll};

use super::waiters::Slot;
use super::Enrollment;
use crate::csp::blocking::{self, Settle};
use crate::csp::deadlock::{self, Wait};

/// The future of [`Enrollment::complete`]: completes when this party's arrival completes
/// the phase, arriving only then. Dropped unfinished, the party has not arrived.
///
/// ```
/// use tutti::csp::Barrier;
///
/// let b = Barrier::new();
/// let mut me = b.enroll();
/// tutti::block_on(me.complete()); // alone: the last party at once
/// ```
#[must_use = "futures do nothing unless awaited: the party has not arrived"]
pub struct Completion<'a> {
    enrollment: &'a mut Enrollment,
    /// The registration of a wait for an earlier, pending arrival's phase.
    slot: Option<Slot>,
}

impl<'a> Completion<'a> {
    pub(super) fn new(enrollment: &'a mut Enrollment) -> Self {
        Completion {
            enrollment,
            slot: None,
        }
    }

    /// [`Enrollment::complete`] for plain threads: blocks until this party's arrival
    /// completes the phase (on a worker thread, outside an async task, it keeps executing
    /// other work meanwhile).
    ///
    /// # Panics
    /// When called inside an async task (use `.await`).
    ///
    /// ```
    /// use tutti::csp::Barrier;
    ///
    /// let b = Barrier::new();
    /// let mut last = b.enroll();
    /// let mut first = b.enroll();
    /// let t = std::thread::spawn(move || first.sync_blocking());
    /// last.complete().wait_blocking(); // waits until `first` arrived, then completes
    /// t.join().unwrap();
    /// ```
    pub fn wait_blocking(self) {
        blocking::wait(pin!(self))
    }

    fn poll_inner(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        let inner = self.enrollment.inner();
        inner.home.act(None);
        // An earlier arrival still pending in the current phase: this party has arrived
        // already, and completes with that phase.
        if let Some(p) = self.enrollment.pending {
            if inner.state.phase() == p {
                self.slot = inner
                    .waiters
                    .register(&inner.state, p, self.slot, cx.waker());
                if self.slot.is_some() {
                    deadlock::note(Wait::Barrier, &inner.home);
                    return Poll::Pending;
                }
            }
            self.slot = None;
            self.enrollment.pending = None;
            return Poll::Ready(());
        }
        loop {
            if let Some(p) = inner.state.complete_if_last() {
                inner.waiters.wake_all(p);
                return Poll::Ready(());
            }
            inner.last.register(cx.waker());
            // After the fence of `register`: an arrival that left one party missing is
            // seen here, or it sees our registration and wakes us.
            if !inner.state.one_left() {
                deadlock::note(Wait::Barrier, &inner.home);
                return Poll::Pending;
            }
        }
    }
}

impl Future for Completion<'_> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        self.get_mut().poll_inner(cx)
    }
}

impl Settle for Completion<'_> {
    fn is_settled(&self) -> bool {
        let inner = self.enrollment.inner();
        match self.enrollment.pending {
            Some(p) => inner.state.phase() != p,
            None => inner.state.one_left(),
        }
    }
}

impl fmt::Debug for Completion<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Completion")
            .field("enrollment", &*self.enrollment)
            .finish_non_exhaustive()
    }
}
