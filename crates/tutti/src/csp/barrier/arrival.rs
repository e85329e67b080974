//! The futures of a barrier synchronisation: [`Arrival`] (arrived already; wait for the
//! others) and [`SyncFuture`] (arrive when first polled, then wait).

use std::fmt;
use std::future::Future;
use std::pin::{pin, Pin};
use std::task::{Context, Poll};

use super::waiters::Slot;
use super::word::{Phase, Step};
use super::Enrollment;
use crate::csp::blocking::{self, Settle};
use crate::csp::deadlock::{self, Wait};

/// Where a synchronisation stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Not arrived yet (a [`SyncFuture`] before its first poll).
    Start,
    /// An earlier arrival of this party, in `Phase`, was dropped before that phase
    /// completed: this arrival is made as soon as it does.
    Deferred(Phase),
    /// Arrived in `Phase`; waiting for it to complete.
    Waiting(Phase),
    /// The phase completed.
    Done,
}

/// The shared machinery of [`Arrival`] and [`SyncFuture`].
struct Sync<'a> {
    enrollment: &'a mut Enrollment,
    state: State,
    slot: Option<Slot>,
}

impl<'a> Sync<'a> {
    /// Arrives if nothing of this party is pending, else defers the arrival.
    fn arrive(enrollment: &'a mut Enrollment) -> Self {
        let mut s = Sync {
            enrollment,
            state: State::Start,
            slot: None,
        };
        s.start();
        s
    }

    #[inline]
    fn start(&mut self) {
        self.enrollment.inner().home.act(None);
        self.state = match self.enrollment.pending {
            Some(p) if self.enrollment.inner().state.phase() == p => State::Deferred(p),
            _ => self.arrive_now(),
        };
    }

    /// The one read-modify-write of an arrival; the last arriver wakes everyone.
    #[inline]
    fn arrive_now(&mut self) -> State {
        let inner = self.enrollment.inner();
        match inner.state.arrive() {
            Step::Counted(p) => {
                self.enrollment.pending = Some(p);
                State::Waiting(p)
            }
            Step::OneLeft(p) => {
                inner.last.wake();
                self.enrollment.pending = Some(p);
                State::Waiting(p)
            }
            Step::Completed(p) => {
                inner.waiters.wake_all(p);
                self.enrollment.pending = None;
                State::Done
            }
        }
    }

    fn poll(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        loop {
            match self.state {
                State::Start => self.start(),
                State::Done => return Poll::Ready(()),
                State::Waiting(p) | State::Deferred(p) => {
                    let inner = self.enrollment.inner();
                    if inner.state.phase() == p {
                        self.slot = inner
                            .waiters
                            .register(&inner.state, p, self.slot, cx.waker());
                        if self.slot.is_some() {
                            deadlock::note(Wait::Barrier, &inner.home);
                            return Poll::Pending;
                        }
                    }
                    // Phase `p` completed.
                    self.slot = None;
                    self.enrollment.pending = None;
                    self.state = match self.state {
                        State::Deferred(_) => self.arrive_now(),
                        _ => State::Done,
                    };
                }
            }
        }
    }

    fn is_settled(&self) -> bool {
        match self.state {
            State::Waiting(p) | State::Deferred(p) => self.enrollment.inner().state.phase() != p,
            State::Start | State::Done => true,
        }
    }
}

/// A registered arrival at a barrier ([`Enrollment::arrive`]): await it when the others
/// are needed (a non-blocking barrier, `MPI_Ibarrier`).
///
/// It completes once every party enrolled in the phase has arrived (or resigned). It
/// borrows the [`Enrollment`] mutably, so the party cannot synchronise again until this
/// arrival is finished with. Dropping it unfinished does not withdraw the arrival: the
/// party stays counted, and its next synchronisation is made once this phase completes.
///
/// ```
/// use tutti::csp::Barrier;
///
/// let barrier = Barrier::new();
/// let mut me = barrier.enroll();
/// let arrival = me.arrive(); // the only party: the phase completes at once
/// assert!(arrival.is_complete());
/// arrival.wait_blocking();
/// ```
#[must_use = "an arrival is registered already; await it (or call wait_blocking) to wait for the others"]
pub struct Arrival<'a> {
    sync: Sync<'a>,
}

impl<'a> Arrival<'a> {
    pub(super) fn new(enrollment: &'a mut Enrollment) -> Self {
        Arrival {
            sync: Sync::arrive(enrollment),
        }
    }

    /// Whether the phase has completed, so that awaiting this arrival returns at once.
    ///
    /// ```
    /// let barrier = tutti::csp::Barrier::new();
    /// let mut a = barrier.enroll();
    /// let _b = barrier.enroll();
    /// let arrival = a.arrive();
    /// assert!(!arrival.is_complete()); // `_b` has not arrived
    /// ```
    pub fn is_complete(&self) -> bool {
        self.sync.is_settled()
    }

    /// Waits for the phase to complete, blocking the calling thread; on a worker thread
    /// (outside an async task) it keeps executing other work meanwhile.
    ///
    /// # Panics
    /// When called inside an async task (use `.await`).
    ///
    /// ```
    /// use tutti::csp::Barrier;
    ///
    /// let barrier = Barrier::new();
    /// let mut me = barrier.enroll();
    /// let mut other = barrier.enroll();
    /// let t = std::thread::spawn(move || other.sync_blocking());
    /// let arrival = me.arrive();
    /// // ... preparatory work for the next phase ...
    /// arrival.wait_blocking();
    /// t.join().unwrap();
    /// ```
    pub fn wait_blocking(self) {
        blocking::wait(pin!(self))
    }
}

impl Future for Arrival<'_> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        self.get_mut().sync.poll(cx)
    }
}

impl Settle for Arrival<'_> {
    fn is_settled(&self) -> bool {
        self.sync.is_settled()
    }
}

impl fmt::Debug for Arrival<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Arrival")
            .field("state", &self.sync.state)
            .finish_non_exhaustive()
    }
}

/// The future of [`Enrollment::sync`]: arrives at the barrier when first polled, then
/// waits for every other enrolled party.
///
/// ```
/// let barrier = tutti::csp::Barrier::new();
/// let mut me = barrier.enroll();
/// tutti::block_on(me.sync()); // alone: completes at once
/// ```
#[must_use = "futures do nothing unless awaited: the party has not arrived yet"]
pub struct SyncFuture<'a> {
    sync: Sync<'a>,
}

impl<'a> SyncFuture<'a> {
    pub(super) fn new(enrollment: &'a mut Enrollment) -> Self {
        SyncFuture {
            sync: Sync {
                enrollment,
                state: State::Start,
                slot: None,
            },
        }
    }
}

impl Future for SyncFuture<'_> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        self.get_mut().sync.poll(cx)
    }
}

impl Settle for SyncFuture<'_> {
    fn is_settled(&self) -> bool {
        self.sync.is_settled()
    }
}

impl fmt::Debug for SyncFuture<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SyncFuture")
            .field("state", &self.sync.state)
            .finish_non_exhaustive()
    }
}
