//! Fair selection under load: waiting for a sender that was served but has not offered
//! again.
//!
//! Rotation (`fair_select`, and `select` after an `Alt`'s first selection) serves every
//! guard that *stays ready* within `n` selections. A plain sender cannot stay ready: once
//! the `Alt` takes its value, the sender must run again — observe that its send completed,
//! return to its loop, and call `send` — before it can offer the next one. If its thread
//! waits for a core (more running threads than cores) or its task waits in a run queue
//! anywhere in that stretch, the next look finds only the guard that fired last ready —
//! its sender never stopped running — and serves it again, for as long as the other
//! sender is kept off the processor. `tutti bench csp fair` measured a sender served at
//! 0.81 of its share and waiting 3,900 selections that way when the mark below was
//! cleared as soon as the send returned, and 0.83 and 8,700 selections with two senders:
//! the sender had returned from `send` but lost its core before it offered again.
//!
//! The fix makes the `Alt` wait for the sender it knows is coming: until that sender
//! offers again, drops its end, or — the bound that keeps a sender that never sends again
//! from holding the selection — [`PATIENCE`] has passed since the selection started
//! waiting for it. Not a yield or a spin: the `Alt` parks, and is woken by the event.
//!
//! # Protocol
//!
//! * **Mark.** The look of a rotating `Alt` that takes a value from a queued *plain*
//!   sender (a `send` future, not another `Alt`) sets, under the channel lock, the
//!   channel's `RESUMING` mark (a bit of the hints byte, written only under the lock,
//!   kept across the rewrites of the readiness hints) — before the sender's decision is
//!   stored with `Release`, so that the sender sees the mark once it sees its send done.
//! * **Offer.** Every offer on the channel (`send`, `try_send`, an `Alt`'s send guard)
//!   clears the mark under the lock, before it delivers or queues its value. If a
//!   waiting `Alt` is queued to receive there, the value goes to it (the offer decides
//!   and wakes it); otherwise the value waits where the `Alt`'s next look finds it.
//! * **Drop.** A `Tx` dropped while the channel shows the mark clears it under the lock
//!   and wakes every undecided `Alt` queued to receive there (without deciding it). The
//!   last `Tx` closes the channel instead, which decides them all.
//! * **Leave out.** A rotating look visits the guard `k` that fired last as its last
//!   guard. If every guard before `k` was not ready, at least one of them showed its
//!   channel `RESUMING`, and no `fallback` is enabled, the look does not fire `k`: it
//!   ends empty with `resume_wait` set, and the round registers every enabled guard but
//!   `k`.
//! * **Check.** Registered, the `Alt` reads the `RESUMING` marks of the guards it waits on
//!   again. If none is set, the sender offered (or dropped its end) before we queued, so
//!   nobody will wake us for it: the round is withdrawn and looks again with `k` included
//!   (and no leaving out).
//! * **Patience.** Otherwise, the selection's deadline — armed when it first waits for a
//!   resuming sender, [`PATIENCE`] from then, and kept across its rounds — is polled with
//!   the `Alt`'s waker. If it has passed, the round is withdrawn, the `Alt` clears the
//!   marks of its guards' channels (waking any other `Alt` waiting there, as a drop does)
//!   and looks again with `k` included. A selection that starts after the deadline
//!   passed (a restarted round) does the same before its look.
//! * **Restart.** A round with `resume_wait` that is woken and finds itself undecided
//!   withdraws and starts a new round (a fresh look). A round left waiting is decided as
//!   any other: by a counterpart of a registered guard, a timeout, or a close.
//!
//! # Invariants
//!
//! * **R1, a mark ends.** `RESUMING` is set only when a rotating `Alt` takes a plain
//!   sender's value. It is cleared by the next offer on the channel, by a `Tx` drop that
//!   sees it, or by a selection whose patience ran out; a channel whose senders are all
//!   gone is closed, which ends every wait on it. Clearing a mark early (another sender
//!   offered, or another `Alt` gave up) only makes an `Alt` wait less.
//! * **R2, the check is exact.** The `Alt` reads a mark after it queued its waiter on that
//!   channel under the lock. Either the clearing critical section came first — its store
//!   to the hints byte happens-before our lock, so our later relaxed load sees the
//!   cleared mark (or a newer value) and we withdraw — or it came after ours, and finds
//!   our waiter queued: an offer delivers to it (deciding us), a drop or another `Alt`'s
//!   give-up wakes us.
//! * **R3, the wait is bounded.** A selection waits for resuming senders at most
//!   [`PATIENCE`] in all (plus the timer's lateness): the deadline is armed with the
//!   waker before the `Alt` returns `Pending`, is not re-armed by later rounds of the
//!   same selection, and once it passed no look of the selection leaves a guard out.
//! * **R4, nothing else changes.** A left-out look consumes nothing and queues nothing of
//!   guard `k`; the registration and the commit protocol are the same as for any round
//!   (module docs of `alt`), so A1–A6 hold unchanged.
//!
//! # Proof sketch
//!
//! *No lost wake-up.* A round waits with `k` left out only if the check saw a mark on a
//! channel `j` it is queued on and the deadline had not passed (so the timer holds our
//! waker). By R1 the mark ends by an offer, a drop, a close or a give-up; by R2 each of
//! those that comes after our check wakes us; the timer wakes us at the deadline. The
//! restarted round looks at `k` again; if `k` is the only ready guard by then and no
//! mark is left (or the deadline passed), `k` fires.
//!
//! *No unbounded hold.* A sender that keeps its end and never sends again holds a ready
//! guard back for at most [`PATIENCE`] once (R3): the selection that gives up clears the
//! mark, so later selections do not wait for that sender again until it is served again.
//!
//! *Fairness.* The sender of guard `j` served in one selection is either ready again by
//! the next look at `j` (rotation serves it in turn) or marked; while it is marked, and
//! for up to [`PATIENCE`], the `Alt` does not serve the guard it served last twice in a
//! row in its place. Guards of other parties (buffers, `Alt` senders, closed channels)
//! never mark, and behave as before.
//!
//! *Cost.* The look reads one more relaxed byte per not-ready guard; an offer reads the
//! hints byte it already holds the lock for; a selection that waits for a resuming sender
//! arms a timer entry (removed when the selection ends). Plain receives and priority
//! selections mark nothing.
//!
//! The `loom_tests` module of `csp` model-checks fair selections that leave out the
//! last-served guard while the other guard's sender sends again, drops its end while
//! another end stays open, or cancels a send whose value was taken; a selection that
//! gives up at once on a sender that stays quiet; and a selector that stops selecting
//! and drops its ends while its senders are still marked.

use std::task::Context;
use std::time::Duration;

use super::{Alt, Kind, Mode};
use crate::runtime::Deadline;

/// How long a selection waits for resuming senders before it serves the guard it served
/// last again: about one time slice of the operating system's scheduler, the time a
/// runnable thread may wait for a core. A sender kept off the processor longer than that
/// is served late; one that does not send again delays a selection once by this much.
/// Under loom (no clock) a selection waits until the sender offers or drops its end.
pub(super) const PATIENCE: Option<Duration> = if cfg!(loom) {
    None
} else {
    Some(Duration::from_millis(2))
};

impl Alt<'_> {
    /// Whether a selection in `mode` rotates, so that its look marks the plain senders it
    /// takes from and may leave out the guard that fired last: fair and random
    /// selections over more than one guard (the first has no guard fired last yet).
    pub(super) fn rotates(&self, mode: Mode) -> bool {
        mode != Mode::Pri && self.guards.len() > 1
    }

    /// Whether a guard this round waits on still waits for a resuming sender. Read after
    /// registering, when the relaxed mark is exact (invariant R2).
    pub(super) fn still_resuming(&self) -> bool {
        self.guards.iter().any(|e| match &e.kind {
            Kind::Event(g) => e.waiting && g.get().is_resuming(),
            _ => false,
        })
    }

    /// The registered round waits for a resuming sender: arms the selection's deadline
    /// with the waker of `cx` (the first time) and says whether it may wait (true) or
    /// its patience has run out (false: withdraw, then [`give_up_resuming`]).
    ///
    /// [`give_up_resuming`]: Self::give_up_resuming
    pub(super) fn wait_patiently(&mut self, cx: &mut Context<'_>) -> bool {
        let Some(patience) = self.patience else {
            return true;
        };
        let deadline = self
            .resume_deadline
            .get_or_insert_with(|| Deadline::after(patience));
        deadline.poll_elapsed(cx).is_pending()
    }

    /// At the start of a round: whether this selection's patience with resuming senders
    /// has run out (then it gives up on them, and the look leaves nothing out).
    pub(super) fn patience_spent(&mut self) -> bool {
        if !self
            .resume_deadline
            .as_ref()
            .is_some_and(Deadline::is_elapsed)
        {
            return false;
        }
        self.give_up_resuming();
        true
    }

    /// Stops waiting for resuming senders: clears the marks of the guards' channels (no
    /// waiter of ours is queued) and the deadline, so that later selections do not wait
    /// for those senders again until they are served again (invariant R3).
    pub(super) fn give_up_resuming(&mut self) {
        self.resume_deadline = None;
        for e in &self.guards {
            if let Kind::Event(g) = &e.kind {
                g.get().stop_resuming();
            }
        }
    }

    /// Sets how long selections wait for resuming senders (`None`: until they offer or
    /// drop their ends), for tests and loom models.
    #[cfg(test)]
    pub(crate) fn set_patience(&mut self, patience: Option<Duration>) {
        self.patience = patience;
    }
}
