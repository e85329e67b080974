//! Barriers (occam-π `BARRIER`, JCSP `Barrier`): a multiway synchronisation among the
//! processes enrolled on it, blocking or non-blocking.
//!
//! * [`Barrier::new`] makes a barrier with nobody enrolled; [`Barrier::enroll`] makes a
//!   party and returns its [`Enrollment`]. Only an `Enrollment` can synchronise, so a
//!   process that is not enrolled cannot sync — it does not compile. Dropping the
//!   `Enrollment` resigns. An `Enrollment` is `Send`: enroll in the parent, move it into
//!   the process (occam `PAR i = 0 FOR n ENROLL b`).
//! * [`Enrollment::sync`] (async) and [`Enrollment::sync_blocking`] (plain threads)
//!   arrive and wait until every enrolled party has arrived: the **phase** completes and
//!   all of them go on.
//! * [`Enrollment::arrive`] is the **non-blocking** barrier (`MPI_Ibarrier`; the seed's
//!   `PAR (SYNC b, preparatory work)`): it registers the arrival at once — the last
//!   arriver releases everyone right then — and returns an [`Arrival`] to await when the
//!   others are needed. The `Arrival` borrows the `Enrollment` mutably, so a party cannot
//!   arrive twice in one phase.
//!
//! # Enrolling and resigning during a phase (occam-π / JCSP semantics)
//!
//! * A party **enrolled during a phase is counted in that phase**: the phase does not
//!   complete until it, too, has synchronised (or resigned). This is occam-π's
//!   `PAR … ENROLL` — the enrolling parent is itself in the phase, so its children join
//!   it — and JCSP's `enroll()`. A party enrolled on a barrier whose other parties all
//!   wait already thus holds them up until it syncs.
//! * A party **resigning** (dropping its `Enrollment`) that has not arrived in the current
//!   phase is no longer waited for: if it was the last one missing, its resignation
//!   completes the phase and releases the others. A party that had arrived (its `Arrival`
//!   dropped unfinished) stays counted in that phase and is not counted afterwards.
//! * A party whose `Arrival` was dropped before its phase completed stays arrived; its
//!   next `sync`/`arrive` waits for that phase to complete and then arrives in the next.
//!
//! # The phase protocol
//!
//! One atomic word holds `phase | enrolled | remaining` (encoding in `barrier/word.rs`),
//! and two waiter lists hold the wakers of waiting parties, alternate phases using
//! alternate lists (`barrier/waiters.rs`).
//!
//! 1. *Arrive*: one compare-and-swap on the word (`AcqRel`). If `remaining > 1` it
//!    decrements `remaining` and the party waits for phase `p` (the phase it read). If
//!    `remaining == 1` it is the last: the same CAS sets `phase := p + 1`,
//!    `remaining := enrolled`, and the party then drains list `p mod 2`, waking everyone.
//! 2. *Wait*: while the word's phase is still `p`, the party registers its waker in list
//!    `p mod 2` — under that list's lock, and only after re-reading the phase under it —
//!    and returns `Pending`. When woken (or polled) it finishes once the phase differs
//!    from `p`.
//! 3. *Enroll*: CAS `enrolled += 1, remaining += 1`.
//! 4. *Resign*: CAS `enrolled -= 1`, and, unless the party arrived in the current phase,
//!    `remaining -= 1`; reaching `remaining == 0` completes the phase as in step 1 (with
//!    the new `enrolled`).
//!
//! ## Invariants
//!
//! * **B1.** `remaining ≤ enrolled`, and `remaining == 0` only if `enrolled == 0`: every
//!   transition that would leave `remaining == 0` with parties enrolled advances the phase
//!   and resets `remaining := enrolled` in the same CAS.
//! * **B2.** `remaining` = enrolled parties that have not arrived in the current phase —
//!   each party contributes exactly once per phase: arrival and resignation subtract it,
//!   enrollment and completion add it, and a party with an unfinished arrival cannot
//!   arrive again (borrow) until its phase completed (`Deferred`).
//! * **B3.** The phase advances exactly when the last counted party arrives or resigns,
//!   by exactly one CAS, so exactly one party drains the phase's waiter list.
//! * **B4.** A pending arrival in phase `p` sees the phase move at most to `p + 1` (the
//!   next completion needs its own next arrival), so the wrapping phase bits are enough.
//!
//! ## Proof sketch
//!
//! *Safety — nobody passes early.* By B2/B3 phase `p` advances only after every party
//! counted in `p` has arrived or resigned; a waiter returns only after reading a phase
//! different from `p`, which by B4 means `p` completed. *Visibility:* every arrival is a
//! `Release` RMW on the word, and the completing CAS is later in its modification order,
//! so a waiter's `Acquire` read of the new phase makes every party's pre-barrier writes
//! visible.
//!
//! *Liveness — no lost wake-up.* The completer advances the word, then locks list
//! `p mod 2`. A waiter of `p` registers under the same lock after re-reading the phase. If
//! its critical section comes first, the drain finds its waker; if the drain's comes
//! first, the waiter's lock acquisition synchronises with the drain's unlock, which
//! follows the CAS, so it reads `p + 1` and finishes instead of registering. A late drain
//! of an old phase that finds wakers of a later phase on the reused list wakes them
//! spuriously and bumps the list's generation, so they re-register on their next poll.
//!
//! The `loom_tests` module checks these interleavings (arrivals racing, resignation
//! completing a phase, enrollment during a phase, dropped arrivals) with a 2-bit phase.
//!
//! # Barrier guards in `Alt`
//!
//! [`Enrollment::complete`] is the barrier's guard: a future, used as a `future` arm of
//! [`Alt`](super::Alt) or [`select!`](crate::select), that completes when this party's
//! arrival completes the phase. It arrives only then — by one CAS that succeeds only if
//! `remaining == 1` (by B2 the missing party is the caller) — so a losing arm has not
//! arrived. While more parties are missing it registers in a third waiter list, woken by
//! the arrival or resignation that leaves exactly one party missing (`Step::OneLeft`);
//! the `Last` protocol in `barrier/waiters.rs` (two SeqCst fences) keeps that wake-up
//! from being lost, and costs the arrival path one fence per phase.
//!
//! What it is not: JCSP's `AltingBarrier`, where *every* party may offer the barrier
//! tentatively and firing decides the `Alt` of every offering party at once, all or none.
//! The `Alt` commit protocol decides one selector per counterpart by a single CAS, under
//! one channel's lock; all-or-none over `n` selectors needs a global lock around every
//! offer and withdrawal (JCSP's design), which would put a lock on the arrival path that
//! this barrier keeps to one CAS. So one party — the last — chooses; the others arrive.
//!
//! ```
//! use tutti::csp::Barrier;
//!
//! // occam: BARRIER b: PAR i = 0 FOR 4 ENROLL b — each worker runs 3 phases.
//! let b = Barrier::new();
//! // Enroll every party before any runs (a later enrollment joins the phase under way).
//! let parties: Vec<_> = (0..4).map(|_| b.enroll()).collect();
//! let workers: Vec<_> = parties
//!     .into_iter()
//!     .enumerate()
//!     .map(|(i, mut me)| {
//!         tutti::spawn(async move {
//!             for _phase in 0..3 {
//!                 // ... compute phase for worker i ...
//!                 me.sync().await;
//!             }
//!             i
//!         })
//!     })
//!     .collect();
//! for w in workers {
//!     w.join();
//! }
//! assert_eq!(b.enrolled(), 0); // each Enrollment was dropped: resigned
//! ```
//!
//! Syncing requires an enrollment; a barrier alone cannot sync:
//!
//! ```compile_fail
//! let b = tutti::csp::Barrier::new();
//! b.sync_blocking();
//! ```
//!
//! An enrollment is one party; it cannot be copied into two:
//!
//! ```compile_fail
//! let b = tutti::csp::Barrier::new();
//! let e = b.enroll();
//! let twin = e.clone();
//! ```

mod arrival;
mod completion;
mod waiters;
mod word;

#[cfg(all(test, loom))]
mod loom_tests;
#[cfg(all(test, not(loom)))]
mod tests;

use std::fmt;
use std::pin::pin;

use super::blocking;
use super::Arc;
use std::borrow::Cow;

use super::deadlock::{Home, Object};
use waiters::{Last, Waiters};
use word::{Phase, State, Step};

pub use arrival::{Arrival, SyncFuture};
pub use completion::Completion;

/// The shared part of a barrier.
struct Inner {
    state: Padded<State>,
    waiters: Waiters,
    /// Parties whose [`Completion`] waits to be the last one missing.
    last: Last,
    /// What the deadlock detector knows of the barrier (`deadlock/home.rs`).
    home: Home,
}

/// Keeps the hot state word off the waiter lists' cache lines.
#[repr(align(128))]
struct Padded<T>(T);

impl std::ops::Deref for Padded<State> {
    type Target = State;

    #[inline]
    fn deref(&self) -> &State {
        &self.0
    }
}

/// A barrier that processes enroll on; see the [module docs](crate::csp).
///
/// A `Barrier` is a handle: clones refer to the same barrier. Holding one does not make a
/// party — [`enroll`](Barrier::enroll) does.
///
/// ```
/// use tutti::csp::Barrier;
///
/// let b = Barrier::new();
/// let mut a = b.enroll();
/// let mut c = b.clone().enroll();
/// let t = std::thread::spawn(move || c.sync_blocking());
/// a.sync_blocking();
/// t.join().unwrap();
/// ```
#[derive(Clone)]
pub struct Barrier {
    inner: Arc<Inner>,
}

impl Default for Barrier {
    /// The same as [`Barrier::new`].
    ///
    /// ```
    /// let b: tutti::csp::Barrier = Default::default();
    /// assert_eq!(b.enrolled(), 0);
    /// ```
    fn default() -> Self {
        Barrier::new()
    }
}

impl Barrier {
    /// A barrier with nobody enrolled.
    ///
    /// ```
    /// let b = tutti::csp::Barrier::new();
    /// assert_eq!(b.enrolled(), 0);
    /// ```
    pub fn new() -> Barrier {
        Barrier::make(None)
    }

    /// A barrier with nobody enrolled and a name, used in deadlock reports and `Debug`
    /// output.
    ///
    /// ```
    /// let b = tutti::csp::Barrier::named("phase");
    /// assert!(format!("{b:?}").contains("phase"));
    /// ```
    pub fn named(name: impl Into<Cow<'static, str>>) -> Barrier {
        Barrier::make(Some(name.into()))
    }

    fn make(name: Option<Cow<'static, str>>) -> Barrier {
        Barrier {
            inner: Arc::new(Inner {
                state: Padded(State::new()),
                waiters: Waiters::new(),
                last: Last::new(),
                home: Home::new(Object::Barrier, name),
            }),
        }
    }

    /// Enrolls a new party. If a phase is under way, the new party is counted in it: the
    /// phase completes only once this party has synchronised too (or resigned).
    ///
    /// # Panics
    /// If `2^28 - 1` parties are enrolled already.
    ///
    /// ```
    /// let b = tutti::csp::Barrier::new();
    /// let e = b.enroll();
    /// assert_eq!(b.enrolled(), 1);
    /// drop(e); // resigns
    /// assert_eq!(b.enrolled(), 0);
    /// ```
    pub fn enroll(&self) -> Enrollment {
        self.inner.home.act(None);
        self.inner.state.enroll();
        Enrollment {
            barrier: self.clone(),
            pending: None,
        }
    }

    /// The number of parties enrolled now (a snapshot).
    ///
    /// ```
    /// let b = tutti::csp::Barrier::new();
    /// let parties: Vec<_> = (0..3).map(|_| b.enroll()).collect();
    /// assert_eq!(b.enrolled(), 3);
    /// ```
    pub fn enrolled(&self) -> usize {
        self.inner.state.enrolled()
    }
}

impl fmt::Debug for Barrier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Barrier")
            .field("name", &self.inner.home.name())
            .field("state", &*self.inner.state)
            .finish_non_exhaustive()
    }
}

/// One party's enrollment on a [`Barrier`]: the right to synchronise on it. Dropping it
/// resigns.
///
/// It is `Send`, so it moves into the process it belongs to:
///
/// ```
/// use tutti::csp::Barrier;
///
/// let b = Barrier::new();
/// let mut parent = b.enroll();
/// let mut child = b.enroll();
/// let h = tutti::spawn(async move { child.sync().await });
/// parent.sync_blocking();
/// h.join();
/// ```
///
/// An [`Arrival`] borrows the enrollment mutably, so a party cannot synchronise again
/// before its arrival is finished with:
///
/// ```compile_fail
/// let b = tutti::csp::Barrier::new();
/// let mut e = b.enroll();
/// let arrival = e.arrive();
/// e.sync_blocking(); // the first arrival is still outstanding
/// arrival.wait_blocking();
/// ```
pub struct Enrollment {
    barrier: Barrier,
    /// The phase of this party's latest arrival, unless that phase is known to have
    /// completed (an `Arrival` dropped unfinished leaves it set).
    pending: Option<Phase>,
}

impl Enrollment {
    #[inline]
    fn inner(&self) -> &Inner {
        &self.barrier.inner
    }

    /// The barrier this party is enrolled on (to enroll further parties, occam's
    /// `PAR … ENROLL`).
    ///
    /// ```
    /// let b = tutti::csp::Barrier::new();
    /// let me = b.enroll();
    /// let _child = me.barrier().enroll();
    /// assert_eq!(b.enrolled(), 2);
    /// ```
    pub fn barrier(&self) -> &Barrier {
        &self.barrier
    }

    /// Synchronises: arrives when first polled, and completes when every party enrolled in
    /// this phase has arrived (or resigned).
    ///
    /// ```
    /// use tutti::csp::Barrier;
    ///
    /// let b = Barrier::new();
    /// let mut a = b.enroll();
    /// let mut c = b.enroll();
    /// let h = tutti::spawn(async move { c.sync().await });
    /// tutti::block_on(a.sync());
    /// h.join();
    /// ```
    pub fn sync(&mut self) -> SyncFuture<'_> {
        SyncFuture::new(self)
    }

    /// [`sync`](Self::sync) for plain threads: blocks until the phase completes. On a
    /// worker thread (outside an async task) it keeps executing other work meanwhile.
    ///
    /// # Panics
    /// When called inside an async task (use `.await`).
    ///
    /// ```
    /// let b = tutti::csp::Barrier::new();
    /// let mut me = b.enroll();
    /// me.sync_blocking(); // alone: completes at once
    /// ```
    pub fn sync_blocking(&mut self) {
        blocking::wait(pin!(self.sync()))
    }

    /// The non-blocking barrier: registers this party's arrival **now** (if it is the
    /// last, the phase completes and everyone is released at once) and returns an
    /// [`Arrival`] to await once the others are needed.
    ///
    /// ```
    /// use tutti::csp::Barrier;
    ///
    /// let b = Barrier::new();
    /// let mut a = b.enroll();
    /// let mut c = b.enroll();
    /// let h = tutti::spawn(async move {
    ///     let arrival = c.arrive();     // hey, I'm done ...
    ///     let prepared = 6 * 7;         // ... preparatory work for the next phase
    ///     arrival.await;                // I'm waiting now
    ///     prepared
    /// });
    /// a.sync_blocking();
    /// assert_eq!(h.join(), 42);
    /// ```
    pub fn arrive(&mut self) -> Arrival<'_> {
        Arrival::new(self)
    }

    /// The barrier as a guard of [`Alt`](super::Alt) / [`select!`](crate::select): a
    /// future that completes when **this party's arrival completes the phase** — it
    /// arrives only in the poll that completes, when every other party counted in the
    /// phase has arrived (or resigned). Until then it has not arrived: a `complete` arm
    /// that loses a selection (or a `Completion` dropped unfinished) leaves the party
    /// not arrived, as if it had never been offered. If the party has an earlier
    /// arrival still pending (an [`Arrival`] dropped unfinished), the future completes
    /// when that phase completes (that arrival has arrived already).
    ///
    /// Only the last party can choose this way: if every party waits in `complete`,
    /// nobody arrives and the phase never completes (the deadlock detector reports
    /// the parties' barrier waits). The others arrive with [`sync`](Self::sync) or
    /// [`arrive`](Self::arrive).
    ///
    /// ```
    /// use std::time::Duration;
    /// use tutti::csp::{channel, Barrier};
    ///
    /// let b = Barrier::new();
    /// let mut coordinator = b.enroll();
    /// let mut worker = b.enroll();
    /// let (_tx, commands) = channel::<u32>();
    /// // The worker has not arrived: the barrier arm is not ready, the timeout fires,
    /// // and the coordinator has not arrived either.
    /// let fired = tutti::block_on(async {
    ///     tutti::select! {
    ///         future(coordinator.complete()) -> () => "barrier",
    ///         recv(commands) -> _ => "command",
    ///         timeout(Duration::from_millis(5)) => "timeout",
    ///     }
    /// });
    /// assert_eq!(fired, "timeout");
    /// let arrival = worker.arrive(); // now only the coordinator is missing
    /// assert!(!arrival.is_complete());
    /// tutti::block_on(coordinator.complete()); // completes the phase by arriving
    /// assert!(arrival.is_complete());
    /// ```
    pub fn complete(&mut self) -> Completion<'_> {
        Completion::new(self)
    }

    /// Resigns from the barrier; the same as dropping the enrollment. If every other
    /// party has arrived in the current phase, this completes it.
    ///
    /// ```
    /// use tutti::csp::Barrier;
    ///
    /// let b = Barrier::new();
    /// let mut a = b.enroll();
    /// let quitter = b.enroll();
    /// let arrival = a.arrive();
    /// assert!(!arrival.is_complete());
    /// quitter.resign();
    /// assert!(arrival.is_complete());
    /// ```
    pub fn resign(self) {}
}

impl Drop for Enrollment {
    fn drop(&mut self) {
        self.inner().home.act(None);
        match self.inner().state.resign(self.pending) {
            Step::Completed(p) => self.inner().waiters.wake_all(p),
            Step::OneLeft(_) => self.inner().last.wake(),
            Step::Counted(_) => {}
        }
    }
}

impl fmt::Debug for Enrollment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Enrollment")
            .field("barrier", &self.barrier)
            .field("pending", &self.pending)
            .finish()
    }
}
