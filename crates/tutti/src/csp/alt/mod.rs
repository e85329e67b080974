//! `Alt`: waiting for the first of several events (occam `ALT` / `PRI ALT`, JCSP
//! `Alternative`).
//!
//! An [`Alt`] holds a set of guards built at run time: channel inputs
//! ([`recv`](Alt::recv)), timeouts ([`timeout`](Alt::timeout),
//! [`deadline`](Alt::deadline)) and [`skip`](Alt::skip) (always ready), each with an
//! optional boolean pre-condition ([`when`](Alt::when)). A selection fires **exactly one**
//! enabled guard and reports its index in a [`Selected`]; for an input guard the value
//! has already been received and is taken with [`Selected::recv`].
//!
//! * [`pri_select`](Alt::pri_select) — `PRI ALT`: among guards ready when the selection
//!   starts, the first in order fires.
//! * [`fair_select`](Alt::fair_select) — priority rotates to just after the guard that
//!   fired last, so a guard that stays ready fires within `n` selections.
//! * [`select`](Alt::select) — any ready guard; currently the same as `fair_select`.
//!
//! Each has a blocking form (`…_blocking`). Build an `Alt` once and reuse it (changing
//! pre-conditions with [`set_when`](Alt::set_when)): a selection then allocates nothing.
//!
//! # The commit protocol
//!
//! The `Alt` owns one *selector* — a one-shot state word, `WAITING`, `SELECTED(i)` or
//! `ABORTED` (encoding in `csp/waiter.rs`), plus its waker — and one *waiter* per input
//! guard, which it may queue in that guard's channel. Selector and waiters live in heap
//! allocations of their own, so neither moving the `Alt` nor its future moves them.
//!
//! A **round** (one selection) goes:
//!
//! 1. *Reset.* No waiter is queued. The owner sets `WAITING` and stores its waker.
//! 2. *Enable*, guard by guard in priority order (`pri`: 0, 1, …; `fair`: from the guard
//!    after the last one fired). For an input guard, under its channel's lock: if a
//!    receive would complete now (a value, a waiting sender, or an end state), the owner
//!    CASes `WAITING → SELECTED(i)`, and only if that succeeds takes the value into guard
//!    `i`'s slot; if the CAS fails a counterpart decided first, and the pass stops.
//!    Otherwise the waiter is queued. `skip`, and a timeout already past, fire by the same
//!    CAS; a pending timeout arms the timer with the owner's waker. If an enabled `skip`
//!    (or elapsed timeout) guarantees that the round fires without waiting, guards are
//!    only checked, never queued.
//! 3. *Wait.* The owner returns `Pending`; each later poll reads the state (`Acquire`),
//!    and a timer that has passed fires its guard by the CAS.
//! 4. *Counterpart.* A sender on a guarded channel, under that channel's lock, pops the
//!    waiter, clones the owner's waker, writes its value into the slot and CASes
//!    `WAITING → SELECTED(i)`. If it wins it unlocks and wakes the owner; if it loses it
//!    moves its value back out of the slot before unlocking and goes on as if the waiter
//!    had not been there (next receiver, buffer, or wait). It never touches the waiter
//!    after its CAS. Closing or poisoning a channel decides the waiter the same way, with
//!    no value.
//! 5. *Finish* on `SELECTED(k)`: disable every other guard (remove its waiter under its
//!    channel's lock if still queued; disarm its timer) and report `k`. Guard `k`'s waiter
//!    is not queued: whoever decided `k` popped it, or never queued it.
//! 6. *Abandon* (the future is dropped, or the `Alt` with it): CAS `WAITING → ABORTED`. If
//!    that succeeds nothing was consumed; disable all. If it fails the state is
//!    `SELECTED(k)`: disable the others and give guard `k`'s value back to the front of
//!    its channel. A waker change between polls abandons and restarts the round.
//!
//! ## Invariants
//!
//! * **A1, one decision.** Within a round every transition leaves `WAITING` by a CAS, so
//!   exactly one party decides.
//! * **A2, consume after winning.** Every party consumes an event only after winning the
//!   CAS for its guard, while holding the lock that keeps the event ready; a loser leaves
//!   the event as it found it.
//! * **A3, slot ownership.** The owner reads slot `i` only after observing `SELECTED(i)`
//!   with `Acquire` (the winner wrote the slot before its `Release` CAS), or after
//!   removing the waiter under channel `i`'s lock.
//! * **A4, no dangling waiter.** A waiter is queued only between its enabling and its
//!   disabling or popping; finish and abandon disable all, and `Alt`'s `Drop` abandons a
//!   round whose future was leaked.
//! * **A5, no lost wake-up.** A waiter and the waker it will be woken with are stored under
//!   the channel lock before the owner returns `Pending`; whoever later makes the guard
//!   ready does so under that lock, finds the waiter, and either decides it (and wakes the
//!   owner) or finds it dead because the round was decided already (whoever decided it
//!   woke the owner).
//!
//! ## Proof sketch
//!
//! *Exactly one guard fires.* By A1 a round decides one guard `k`. By A2 the only event
//! consumed in the round is guard `k`'s, consumed once, by the winner, into slot `k`; every
//! other counterpart or enabling step that met the selector left its event untouched. By
//! A3 the owner reads exactly that value.
//!
//! *Nothing is lost or duplicated on cancellation.* Abandoning either wins `ABORTED` (by
//! A1 nobody decided, so by A2 nothing was consumed) or finds `SELECTED(k)` and gives slot
//! `k`'s value back to its channel, where the next receiver gets it (see the cancellation
//! argument in `chan.rs`). A value the user does not take from a [`Selected`] is given back
//! the same way.
//!
//! *No selection sleeps through a ready guard.* A guard ready at the start is found by the
//! enabling pass (or the pass stops at an earlier decision); a guard that becomes ready
//! later decides the round by A5; a timer wakes the owner, whose next poll fires the guard.
//!
//! *Priority and fairness.* The pass visits guards in priority order and stops at the
//! first ready one, so among guards ready when the round starts the first in order fires —
//! unless a counterpart decided a guard it had already queued on during the pass, which is
//! equally a guard ready at the decision point. With rotation, if guard `j` stays ready,
//! each round fires a guard between the start and `j` and the next start moves past it,
//! so `j` fires within `n` rounds.
//!
//! The `loom_tests` module model-checks a selection racing two senders and a selection
//! abandoned while a sender commits.
//!
//! # Barriers
//!
//! The guard set is open: any [`Guard`](guard::Guard) implementation is an event guard.
//! A barrier guard (JCSP's alting barrier) plugs in the same way as a channel input; see
//! `guard.rs`.

pub(crate) mod guard;
mod input;
mod selected;

use std::fmt;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use crate::runtime::Deadline;

use super::rx::Rx;
use super::waiter::{Selector, Status};
use guard::{Aliased, Enable, Guard};
use input::InputGuard;

pub use selected::{SelectFuture, Selected};

/// A set of guards to select from, built at run time; see the [module docs](self).
///
/// Guards are numbered 0, 1, … in the order they are added.
///
/// ```
/// use std::time::Duration;
/// use tutti::csp::{channel, Alt};
///
/// let (cmd_tx, cmd) = channel::<u32>();
/// let (_data_tx, data) = channel::<u32>();
/// std::thread::spawn(move || cmd_tx.send_blocking(7));
///
/// let mut alt = Alt::new()
///     .recv(&cmd)                           // 0
///     .recv(&data)                          // 1
///     .timeout(Duration::from_secs(10));    // 2
/// let sel = alt.pri_select_blocking();
/// assert_eq!(sel.index(), 0);
/// assert_eq!(sel.recv(&cmd), Ok(7));
/// ```
///
/// An `Alt` borrows the ends it guards, so it cannot outlive them:
///
/// ```compile_fail
/// use tutti::csp::{channel, Alt};
///
/// let mut alt = Alt::new();
/// {
///     let (_tx, rx) = channel::<u8>();
///     alt = alt.recv(&rx);
/// }
/// let _ = alt.pri_select_blocking();
/// ```
///
/// and a [`Selected`] borrows its `Alt`, so a selection's value must be dealt with before
/// the next selection starts:
///
/// ```compile_fail
/// use tutti::csp::Alt;
///
/// let mut alt = Alt::new().skip();
/// let first = alt.pri_select_blocking();
/// let second = alt.pri_select_blocking();
/// drop(first);
/// ```
pub struct Alt<'a> {
    guards: Vec<Entry<'a>>,
    /// The one-shot decision of the current round; stable address (commit protocol).
    selector: Aliased<Selector>,
    /// Where a fair selection starts: just after the guard that fired last.
    next: usize,
    /// A round is under way: waiters may be queued, timers armed.
    in_round: bool,
}

/// One guard and its per-round bookkeeping.
struct Entry<'a> {
    kind: Kind<'a>,
    /// The pre-condition.
    enabled: bool,
    /// Enabled this round and left a waiter or armed timer behind (owner-side note).
    waiting: bool,
}

/// The kinds of guard.
enum Kind<'a> {
    /// An event, e.g. a channel input (see `guard.rs` for the seam).
    Event(Aliased<dyn Guard + 'a>),
    /// Ready once its deadline passes. `after` makes the deadline relative to the start
    /// of each selection.
    Timeout {
        after: Option<Duration>,
        deadline: Deadline,
    },
    /// Always ready.
    Skip,
}

/// The selection policies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    /// The first ready guard in index order.
    Pri,
    /// Rotating priority.
    Fair,
}

impl Default for Alt<'_> {
    /// An `Alt` without guards; see [`Alt::new`].
    ///
    /// ```
    /// let alt: tutti::csp::Alt<'_> = Default::default();
    /// assert!(alt.is_empty());
    /// ```
    fn default() -> Self {
        Self::new()
    }
}

impl<'a> Alt<'a> {
    /// An `Alt` without guards.
    ///
    /// ```
    /// let alt = tutti::csp::Alt::new().skip();
    /// assert_eq!(alt.len(), 1);
    /// ```
    pub fn new() -> Self {
        Alt {
            guards: Vec::new(),
            selector: Aliased::new(Box::new(Selector::new())),
            next: 0,
            in_round: false,
        }
    }

    fn push(mut self, kind: Kind<'a>) -> Self {
        self.guards.push(Entry {
            kind,
            enabled: true,
            waiting: false,
        });
        self
    }

    /// Adds an input guard on `rx`: ready when a value can be received, or when the
    /// channel is closed (all senders gone) or poisoned — then [`Selected::recv`] reports
    /// that.
    ///
    /// ```
    /// use tutti::csp::{buffered, Alt};
    ///
    /// let (tx, rx) = buffered::<&str>(1);
    /// tx.try_send("hi").unwrap();
    /// let mut alt = Alt::new().recv(&rx);
    /// let sel = alt.pri_select_blocking();
    /// assert_eq!(sel.recv(&rx), Ok("hi"));
    /// ```
    pub fn recv<T: Send>(self, rx: &'a Rx<T>) -> Self {
        let index = self.guards.len();
        let guard: Box<dyn Guard + 'a> =
            Box::new(InputGuard::new(rx.chan(), self.selector.get(), index));
        self.push(Kind::Event(Aliased::new(guard)))
    }

    /// Adds an input guard on `rx` with the pre-condition `cond` (occam `cond & rx ? x`).
    ///
    /// ```
    /// use tutti::csp::{buffered, Alt};
    ///
    /// let (tx, rx) = buffered::<u8>(1);
    /// tx.try_send(1).unwrap();
    /// let mut alt = Alt::new().recv_if(false, &rx).skip();
    /// assert_eq!(alt.pri_select_blocking().index(), 1); // the input is disabled
    /// ```
    pub fn recv_if<T: Send>(self, cond: bool, rx: &'a Rx<T>) -> Self {
        self.recv(rx).when(cond)
    }

    /// Adds a timeout guard: ready once `after` has passed since the start of the
    /// selection (each selection starts its own clock).
    ///
    /// ```
    /// use std::time::Duration;
    /// use tutti::csp::{channel, Alt};
    ///
    /// let (_tx, rx) = channel::<u8>();
    /// let mut alt = Alt::new().recv(&rx).timeout(Duration::from_millis(1));
    /// assert_eq!(alt.pri_select_blocking().index(), 1);
    /// ```
    pub fn timeout(self, after: Duration) -> Self {
        self.push(Kind::Timeout {
            after: Some(after),
            deadline: Deadline::after(after),
        })
    }

    /// Adds a timeout guard ready from the instant `at` (occam `tim ? AFTER t`).
    ///
    /// ```
    /// use std::time::Instant;
    /// use tutti::csp::Alt;
    ///
    /// let mut alt = Alt::new().deadline(Instant::now());
    /// assert_eq!(alt.pri_select_blocking().index(), 0);
    /// ```
    pub fn deadline(self, at: Instant) -> Self {
        self.push(Kind::Timeout {
            after: None,
            deadline: Deadline::new(at),
        })
    }

    /// Adds a `SKIP` guard: always ready. Last in a `PRI ALT` it makes the selection a
    /// poll that never waits.
    ///
    /// ```
    /// use tutti::csp::{channel, Alt};
    ///
    /// let (_tx, rx) = channel::<u8>();
    /// let mut alt = Alt::new().recv(&rx).skip();
    /// assert_eq!(alt.pri_select_blocking().index(), 1);
    /// ```
    pub fn skip(self) -> Self {
        self.push(Kind::Skip)
    }

    /// Sets the pre-condition of the guard added last; a guard whose pre-condition is
    /// false is ignored by selections.
    ///
    /// # Panics
    /// If the `Alt` has no guard yet.
    ///
    /// ```
    /// use tutti::csp::Alt;
    ///
    /// let mut alt = Alt::new().skip().when(false).skip();
    /// assert_eq!(alt.pri_select_blocking().index(), 1);
    /// ```
    pub fn when(mut self, cond: bool) -> Self {
        let last = self
            .guards
            .last_mut()
            .expect("tutti: Alt::when needs a guard to apply to; add one first");
        last.enabled = cond;
        self
    }

    /// Changes the pre-condition of guard `index`, for reusing an `Alt`.
    ///
    /// # Panics
    /// If there is no guard `index`.
    ///
    /// ```
    /// use tutti::csp::Alt;
    ///
    /// let mut alt = Alt::new().skip().skip();
    /// alt.set_when(0, false);
    /// assert_eq!(alt.pri_select_blocking().index(), 1);
    /// alt.set_when(0, true);
    /// assert_eq!(alt.pri_select_blocking().index(), 0);
    /// ```
    pub fn set_when(&mut self, index: usize, cond: bool) {
        self.guard_mut(index).enabled = cond;
    }

    /// Moves timeout guard `index` to the fixed instant `at`.
    ///
    /// # Panics
    /// If guard `index` is not a timeout guard.
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// use tutti::csp::Alt;
    ///
    /// let mut alt = Alt::new().timeout(Duration::from_secs(3600));
    /// alt.set_deadline(0, Instant::now());
    /// assert_eq!(alt.pri_select_blocking().index(), 0);
    /// ```
    pub fn set_deadline(&mut self, index: usize, at: Instant) {
        match &mut self.guard_mut(index).kind {
            Kind::Timeout { after, deadline } => {
                *after = None;
                *deadline = Deadline::new(at);
            }
            _ => panic!("tutti: Alt::set_deadline: guard {index} is not a timeout guard"),
        }
    }

    fn guard_mut(&mut self, index: usize) -> &mut Entry<'a> {
        let n = self.guards.len();
        self.guards
            .get_mut(index)
            .unwrap_or_else(|| panic!("tutti: Alt has {n} guards, there is no guard {index}"))
    }

    /// Number of guards.
    ///
    /// ```
    /// assert_eq!(tutti::csp::Alt::new().skip().skip().len(), 2);
    /// ```
    pub fn len(&self) -> usize {
        self.guards.len()
    }

    /// Whether the `Alt` has no guards.
    ///
    /// ```
    /// assert!(tutti::csp::Alt::new().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.guards.is_empty()
    }

    /// Waits until a guard fires, favouring the first ready guard in index order (occam
    /// `PRI ALT`).
    ///
    /// With no enabled guard at all the selection waits forever (occam `STOP`).
    ///
    /// # Panics
    /// If the `Alt` has no guards.
    ///
    /// ```
    /// use tutti::csp::{buffered, Alt};
    ///
    /// let (tx_a, a) = buffered::<u8>(1);
    /// let (tx_b, b) = buffered::<u8>(1);
    /// tx_a.try_send(1).unwrap();
    /// tx_b.try_send(2).unwrap();
    /// let mut alt = Alt::new().recv(&a).recv(&b);
    /// let sel = tutti::block_on(alt.pri_select());
    /// assert_eq!(sel.index(), 0); // both ready: the first wins
    /// ```
    pub fn pri_select(&mut self) -> SelectFuture<'_, 'a> {
        SelectFuture::new(self, Mode::Pri)
    }

    /// Waits until a guard fires, with rotating priority: the search starts just after
    /// the guard that fired last, so no ready guard starves.
    ///
    /// # Panics
    /// If the `Alt` has no guards.
    ///
    /// ```
    /// use tutti::csp::Alt;
    ///
    /// let mut alt = Alt::new().skip().skip().skip();
    /// let order: Vec<usize> =
    ///     (0..4).map(|_| tutti::block_on(alt.fair_select()).index()).collect();
    /// assert_eq!(order, [0, 1, 2, 0]);
    /// ```
    pub fn fair_select(&mut self) -> SelectFuture<'_, 'a> {
        SelectFuture::new(self, Mode::Fair)
    }

    /// Waits until any guard fires (currently: [`fair_select`](Self::fair_select)).
    ///
    /// # Panics
    /// If the `Alt` has no guards.
    ///
    /// ```
    /// use tutti::csp::{buffered, Alt};
    ///
    /// let (tx, rx) = buffered::<u8>(1);
    /// tx.try_send(3).unwrap();
    /// let mut alt = Alt::new().recv(&rx);
    /// let sel = tutti::block_on(alt.select());
    /// assert_eq!(sel.recv(&rx), Ok(3));
    /// ```
    pub fn select(&mut self) -> SelectFuture<'_, 'a> {
        self.fair_select()
    }

    /// The blocking form of [`pri_select`](Self::pri_select).
    ///
    /// # Panics
    /// If the `Alt` has no guards, or when called inside an async task.
    ///
    /// ```
    /// let mut alt = tutti::csp::Alt::new().skip();
    /// assert_eq!(alt.pri_select_blocking().index(), 0);
    /// ```
    pub fn pri_select_blocking(&mut self) -> Selected<'_, 'a> {
        self.select_blocking_in(Mode::Pri)
    }

    /// The blocking form of [`fair_select`](Self::fair_select).
    ///
    /// # Panics
    /// If the `Alt` has no guards, or when called inside an async task.
    ///
    /// ```
    /// let mut alt = tutti::csp::Alt::new().skip().skip();
    /// assert_eq!(alt.fair_select_blocking().index(), 0);
    /// assert_eq!(alt.fair_select_blocking().index(), 1);
    /// ```
    pub fn fair_select_blocking(&mut self) -> Selected<'_, 'a> {
        self.select_blocking_in(Mode::Fair)
    }

    /// The blocking form of [`select`](Self::select).
    ///
    /// # Panics
    /// If the `Alt` has no guards, or when called inside an async task.
    ///
    /// ```
    /// let mut alt = tutti::csp::Alt::new().skip();
    /// assert_eq!(alt.select_blocking().index(), 0);
    /// ```
    pub fn select_blocking(&mut self) -> Selected<'_, 'a> {
        self.fair_select_blocking()
    }

    /// The blocking forms. On a plain thread, look-only rounds are retried with back-off
    /// first, so that a selector that is about to be served does not queue on (and then
    /// remove itself from) every guarded channel; see `csp/blocking.rs`.
    fn select_blocking_in(&mut self, mode: Mode) -> Selected<'_, 'a> {
        if let Ok(index) = super::blocking::retry((), |()| self.try_round(mode).ok_or(())) {
            return Selected::new(self, index);
        }
        super::blocking::wait(std::pin::pin!(SelectFuture::new(self, mode)))
    }

    // ---- the round (see the commit protocol) -------------------------------------------

    /// One poll of the current round; `Ready(k)` once guard `k` fired.
    fn poll_round(&mut self, mode: Mode, cx: &mut Context<'_>) -> Poll<usize> {
        if !self.in_round {
            return self.start_round(mode, cx);
        }
        if let Status::Selected(k) = self.selector.get().status() {
            return Poll::Ready(self.finish(k, mode));
        }
        if let Some(k) = self.poll_timeouts(cx) {
            return Poll::Ready(self.finish(k, mode));
        }
        if self.selector.get().will_wake(cx.waker()) {
            self.note_waits();
            return Poll::Pending;
        }
        self.restart_round(mode, cx)
    }

    /// Steps 1 and 2: reset, then enable the guards in priority order.
    fn start_round(&mut self, mode: Mode, cx: &mut Context<'_>) -> Poll<usize> {
        match self.enable_pass(mode, Some(cx)) {
            Some(k) => Poll::Ready(self.finish(k, mode)),
            None => {
                self.note_waits();
                Poll::Pending
            }
        }
    }

    /// The round waits: tell the deadlock detector on what (a timeout makes the wait
    /// one it cannot judge).
    fn note_waits(&self) {
        for e in self.guards.iter().filter(|e| e.waiting) {
            match &e.kind {
                Kind::Event(g) => g.get().note_wait(),
                Kind::Timeout { .. } => crate::csp::deadlock::note_open(),
                Kind::Skip => {}
            }
        }
    }

    /// A round that only looks: fires the first ready guard in priority order, queueing
    /// nothing (so nobody else can decide it); `None` if no guard is ready.
    fn try_round(&mut self, mode: Mode) -> Option<usize> {
        self.abandon();
        let fired = self.enable_pass(mode, None);
        self.in_round = false;
        fired.map(|k| self.finish(k, mode))
    }

    /// The enabling pass of a round. With a context, waiters are queued and timers armed
    /// with its waker unless some guard is sure to fire; without one, guards are only
    /// checked. Returns the guard that fired, if any (`in_round` is left set).
    fn enable_pass(&mut self, mode: Mode, mut cx: Option<&mut Context<'_>>) -> Option<usize> {
        assert!(
            !self.guards.is_empty(),
            "tutti: selecting on an Alt without guards; it could never fire"
        );
        let sel = self.selector.get();
        sel.reset();
        if let Some(cx) = cx.as_deref() {
            // SAFETY: no round is under way, so none of our waiters is queued.
            unsafe { sel.set_waker(cx.waker()) };
        }
        self.in_round = true;

        // Relative timeouts start now; a ready skip or timeout means nobody needs to queue.
        let mut sure_to_fire = false;
        for e in self.guards.iter_mut().filter(|e| e.enabled) {
            match &mut e.kind {
                Kind::Skip => sure_to_fire = true,
                Kind::Timeout { after, deadline } => {
                    if let Some(d) = after {
                        *deadline = Deadline::after(*d);
                    }
                    sure_to_fire |= deadline.is_elapsed();
                }
                Kind::Event(_) => {}
            }
        }
        let register = !sure_to_fire && cx.is_some();

        let n = self.guards.len();
        let first = match mode {
            Mode::Pri => 0,
            Mode::Fair => self.next % n,
        };
        for step in 0..n {
            let i = if first + step < n {
                first + step
            } else {
                first + step - n
            };
            let e = &mut self.guards[i];
            if !e.enabled {
                continue;
            }
            if let Status::Selected(k) = sel.status() {
                return Some(k); // a counterpart was quicker
            }
            let fired = match &mut e.kind {
                Kind::Skip => Some(self_select(sel, i)),
                Kind::Timeout { deadline, .. } => {
                    let due = match cx.as_deref_mut() {
                        Some(cx) if register => {
                            e.waiting = true;
                            deadline.poll_elapsed(cx).is_ready()
                        }
                        _ => deadline.is_elapsed(),
                    };
                    due.then(|| self_select(sel, i))
                }
                // SAFETY: the selector is `Aliased` and outlives the round (finish and
                // abandon disable every guard first); each guard is enabled once a round.
                Kind::Event(g) => match unsafe { g.get().enable(sel, i, register) } {
                    Enable::Fired => Some(i),
                    Enable::Lost => Some(decided(sel)),
                    Enable::Waiting => {
                        e.waiting = true;
                        None
                    }
                    Enable::NotReady => None,
                },
            };
            if fired.is_some() {
                return fired;
            }
        }
        match sel.status() {
            Status::Selected(k) => Some(k),
            _ => None,
        }
    }

    /// Fires the first armed timeout guard that has passed, if any.
    fn poll_timeouts(&mut self, cx: &mut Context<'_>) -> Option<usize> {
        let sel = self.selector.get();
        for (i, e) in self.guards.iter_mut().enumerate() {
            if let (true, Kind::Timeout { deadline, .. }) = (e.waiting, &mut e.kind) {
                if deadline.poll_elapsed(cx).is_ready() {
                    return Some(self_select(sel, i));
                }
            }
        }
        None
    }

    /// The owner's waker changed: withdraw, then run the round again with the new one.
    #[cold]
    fn restart_round(&mut self, mode: Mode, cx: &mut Context<'_>) -> Poll<usize> {
        match self.selector.get().abort() {
            Err(k) => Poll::Ready(self.finish(k, mode)),
            Ok(()) => {
                self.disable_all(None);
                self.in_round = false;
                self.start_round(mode, cx)
            }
        }
    }

    /// Step 5: guard `k` fired; disable the rest and end the round.
    fn finish(&mut self, k: usize, mode: Mode) -> usize {
        self.disable_all(Some(k));
        self.in_round = false;
        if mode == Mode::Fair {
            self.next = k + 1;
        }
        k
    }

    /// Removes every waiter and timer left this round, except guard `fired`'s (whoever
    /// decided it has popped it).
    fn disable_all(&mut self, fired: Option<usize>) {
        for (i, e) in self.guards.iter_mut().enumerate() {
            if !std::mem::take(&mut e.waiting) || Some(i) == fired {
                continue;
            }
            match &mut e.kind {
                Kind::Event(g) => g.get().disable(),
                Kind::Timeout { deadline, .. } => deadline.disarm(),
                Kind::Skip => {}
            }
        }
    }

    /// Step 6: the round's future went away before reporting.
    fn abandon(&mut self) {
        if !self.in_round {
            return;
        }
        match self.selector.get().abort() {
            Ok(()) => self.disable_all(None),
            Err(k) => {
                self.disable_all(Some(k));
                self.give_back(k);
            }
        }
        self.in_round = false;
    }

    /// Returns the value of fired guard `k`, if it holds one, to its channel.
    fn give_back(&self, k: usize) {
        if let Kind::Event(g) = &self.guards[k].kind {
            g.get().give_back();
        }
    }

    /// The event guard `k`, for taking its value.
    fn event(&self, k: usize) -> Option<&dyn Guard> {
        match &self.guards[k].kind {
            Kind::Event(g) => Some(g.get()),
            _ => None,
        }
    }
}

/// The owner fires guard `i` itself, unless a counterpart decided first.
fn self_select(sel: &Selector, i: usize) -> usize {
    if sel.try_select(i) {
        i
    } else {
        decided(sel)
    }
}

/// The guard a lost CAS lost to.
fn decided(sel: &Selector) -> usize {
    match sel.status() {
        Status::Selected(k) => k,
        s => unreachable!("tutti: Alt selector in state {s:?} after a lost CAS"),
    }
}

impl Drop for Alt<'_> {
    fn drop(&mut self) {
        // A round whose future was leaked may still have waiters queued.
        self.abandon();
    }
}

impl fmt::Debug for Alt<'_> {
    /// ```
    /// let alt = tutti::csp::Alt::new().skip();
    /// assert!(format!("{alt:?}").contains("guards: 1"));
    /// ```
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Alt")
            .field("guards", &self.guards.len())
            .field("in_round", &self.in_round)
            .finish_non_exhaustive()
    }
}
