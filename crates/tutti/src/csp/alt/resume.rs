//! Fair selection under load: waiting for a sender that was served but has not run again.
//!
//! Rotation (`fair_select`, and `select` after an `Alt`'s first selection) serves every
//! guard that *stays ready* within `n` selections. A plain sender cannot stay ready: once
//! the `Alt` takes its value, the sender must run again before it can offer the next one.
//! If its thread waits for a core (more running threads than cores) or its task waits in
//! a run queue, the next look finds only the guard that fired last ready — its sender
//! never stopped running — and serves it again, for as long as the other sender is kept
//! off the processor. `tutti bench csp fair` measured a sender served at 0.81 of its share
//! and waiting 3,900 selections that way.
//!
//! The fix makes the `Alt` wait for the sender it knows is coming, bounded by that sender
//! running — not by a timeout, a yield or a spin.
//!
//! # Protocol
//!
//! * **Mark.** The look of a rotating `Alt` that takes a value from a queued *plain*
//!   sender (a `send` future, not another `Alt`) sets, under the channel lock, that
//!   waiter's `RESUME` bit (with `DECIDED`, in the same `Release` store) and the channel's
//!   `RESUMING` mark (a bit of the hints byte, written only under the lock, kept across
//!   the rewrites of the readiness hints).
//! * **Resume.** The sender, on observing its decision (`Acquire`) — in the poll that
//!   completes its send, or in the drop or `cancel` of a future that was decided but not
//!   polled again — takes its `RESUME` bit and, if it was set, locks the channel, clears
//!   `RESUMING` and wakes every undecided `Alt` queued to receive there (without deciding
//!   it). So a mark never outlives the sender's send future.
//! * **Leave out.** A rotating look visits the guard `k` that fired last as its last
//!   guard. If every guard before `k` was not ready, at least one of them showed its
//!   channel `RESUMING`, and no `fallback` is enabled, the look does not fire `k`: it
//!   ends empty with `resume_wait` set, and the round registers every enabled guard but
//!   `k`.
//! * **Check.** Registered, the `Alt` reads the `RESUMING` marks of the guards it waits on
//!   again. If none is set, the sender resumed before we queued, so nobody will wake us
//!   for it: the round is withdrawn and looks again with `k` included (and no leaving out).
//! * **Restart.** A round with `resume_wait` that is woken and finds itself undecided
//!   withdraws and starts a new round (a fresh look). A round left waiting is decided as
//!   any other: by a counterpart of a registered guard, a timeout, or a close.
//!
//! # Invariants
//!
//! * **R1, a mark has an owner.** `RESUMING` is set only with the `RESUME` bit of a sender
//!   waiter decided in the same critical section; that sender clears the mark after it
//!   observes the decision, in every path that ends its future (poll, drop, cancel).
//!   Clearing more than one sender's mark at once (two marked senders on one channel) is
//!   allowed: a mark cleared early only makes the `Alt` wait less.
//! * **R2, the check is exact.** The `Alt` reads a mark after it queued its waiter on that
//!   channel under the lock. Either the sender's clearing critical section came first —
//!   its store to the hints byte happens-before our lock, so our later relaxed load sees
//!   the cleared mark (or a newer value) and we withdraw — or it came after ours, and the
//!   sender finds our waiter queued and wakes us.
//! * **R3, nothing else changes.** A left-out look consumes nothing and queues nothing of
//!   guard `k`; the registration and the commit protocol are the same as for any round
//!   (module docs of `alt`), so A1–A6 hold unchanged.
//!
//! # Proof sketch
//!
//! *No lost wake-up.* A round waits with `k` left out only if the check saw a mark on a
//! channel `j` it is queued on. By R1 a sender will clear it; by R2 that sender finds our
//! waiter and wakes us, and the restarted round looks at `k` again. If `k` is the only
//! ready guard by then and no mark is left, `k` fires; so the `Alt` waits no longer than
//! it takes the marked sender to run.
//!
//! *No deadlock when the sender dies.* A sender's future that is dropped after its value
//! was taken clears the mark in its drop (R1). A sender thread that stops forever
//! between its decision and its next poll (blocked in user code it cannot reach: there is
//! none, the decision is observed inside `send`) is the only way to keep a mark; a thread
//! that panics unwinds through the future's drop.
//!
//! *Fairness.* The sender of guard `j` served in one selection is either ready again by the
//! next look at `j` (rotation serves it in turn) or marked; while it is marked the `Alt`
//! does not serve the guard it served last twice in a row in its place. Guards of other
//! parties (buffers, `Alt` senders, closed channels) never mark, and behave as before.
//!
//! *Cost.* The look reads one more relaxed byte per not-ready guard; a marked sender takes
//! its channel's lock once more when it resumes. Plain receives and priority selections
//! mark nothing.
//!
//! The `loom_tests` module of `csp` model-checks fair selections that may leave out the
//! last-served guard while the other guard's sender resumes and sends again, closes its
//! channel, or drops a send future whose value was taken; and a selector that stops
//! selecting and drops its ends while its senders are still marked.

use super::{Alt, Kind, Mode};

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
}
