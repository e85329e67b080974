//! Backpressure between nodes: the credit protocol that keeps a bounded
//! mailbox bounded when its senders are on other locations and ranks.
//!
//! # The protocol
//!
//! An exported actor whose mailbox is bounded with the [`Block`] or [`Fail`]
//! policy has a **window** `W`, its capacity (`DropOldest` makes room by
//! itself, an unbounded mailbox has no bound to keep: neither has a window).
//! Every address of the actor carries `W` (an export gives it, the registry
//! and a [`RemoteRef`](super::RemoteRef) pass it on). Then, for each pair of a
//! sending node `S` and such an actor `X`:
//!
//! 1. `S` holds one [`Flow`], with `W` credits at first, shared by all of its
//!    addresses of `X`. Every statement `S` sends to `X` costs one credit; with
//!    none left, [`tell`](super::RemoteAddr::tell) fails with
//!    [`RemoteError::Full`](super::RemoteError::Full) and
//!    [`send`](super::RemoteAddr::send) waits. Before either, `S` flushes its
//!    location, so that nothing it already sent waits in an aggregation buffer
//!    while it waits for the credits those statements will return.
//! 2. `X`'s node queues each statement in `X`'s mailbox; when the mailbox is
//!    full it keeps it in the export's **held** queue (`held.rs`), in arrival
//!    order, and moves it into the mailbox as the actor takes messages. While
//!    something is held, every later request for `X` (a question too) queues
//!    behind it, so the actor sees them in the order they arrived.
//! 3. A statement **returns its credit** once it has entered the mailbox, or
//!    once it is known that it never will: refused as bad bytes (credited at
//!    once), or undeliverable (its `DeadLetter` notice carries the credit back).
//!    The receiving node counts the credits it owes each flow ([`Due`]) and
//!    sends them in one `Credit` message per `W / 4` (at least one), and all
//!    it owes whenever its location's inbox is empty — the end of a burst.
//!    `Credit` messages are node control frames: they travel through the world
//!    like any frame, aggregated with the other frames to the same location
//!    (replies, statements going the other way), and are flushed when sent.
//! 4. Neither side keeps a record of a pair it has nothing out with: `S`
//!    forgets its `Flow` toward `X` once no address of `S` holds it and every
//!    credit is back (or `X`'s node is gone and none will come); a later
//!    address starts a new flow with the whole window, which is right since
//!    nothing of the old one is out. `X`'s node keeps a [`Due`] entry only
//!    while it owes credits. So a long-running program that makes and drops
//!    many bounded actors and addresses keeps tables the size of what is in
//!    flight ([`NodeStats`](super::NodeStats) counts both).
//!
//! # Invariants
//!
//! * **C1** (bound) For each flow, the credits `S` holds, plus its statements
//!   on the way (in a buffer, in the transport, in an inbox), held, or in the
//!   mailbox and not yet returned, is `W` — a statement returns its credit
//!   exactly once (step 3). So a flood from `S` keeps at most `W` statements
//!   outside the mailbox and at most `W` held: what `X`'s rank keeps for it is
//!   at most the capacity plus `W` per sending node, whatever the number of
//!   statements sent.
//! * **C2** (no deadlock of its own) If `S` waits for credits, all `W` of the
//!   flow are out: some statement is on the way (it arrives, and the inbox
//!   empties after it, which sends what is owed), held (the actor takes a
//!   message, which moves it), or owed, and then at least one batch is owed and
//!   was sent. So a sender waits only as long as the actor does not take
//!   messages: a genuine wait, which `send` notes for the deadlock detector as
//!   a wait for room in `X`'s mailbox.
//! * **C3** (no hang on departure) A flow's waiters are woken when `X`'s node
//!   leaves or its rank dies and when `S`'s node leaves; each then finds that it
//!   may not send and fails with the node's error.
//!
//! Credits and the world's termination: a credit is an ordinary message,
//! counted by quiescence detection like any other; a statement held at the
//! receiver is not a message in flight, it is work of the actor, which returns
//! the credit when it makes room. A fence therefore neither waits for credits
//! nor loses them.
//!
//! Questions take no credit (an asker has one question per `ask` in flight,
//! awaited): a question to a full `Block` mailbox is held like a statement; to
//! a full `Fail` mailbox it is refused with `Full`, as a local `ask` is.
//!
//! The sender's state is one small mutex-protected record per flow (no
//! hand-written atomic protocol); `loom_tests.rs` model-checks that a credit
//! arriving while a sender starts to wait always wakes it.
//!
//! [`Block`]: crate::actor::Overflow::Block
//! [`Fail`]: crate::actor::Overflow::Fail

use std::collections::HashMap;
use std::task::Waker;

use crate::actor::{Actor, Addr, Overflow};
use crate::loom::{lock, Mutex};
use crate::world::LocationId;

/// The window of the actor at `addr` (0: it needs none; see the module docs).
pub(super) fn window<A: Actor>(addr: &Addr<A>) -> u32 {
    match addr.cell().bounds() {
        Some((capacity, Overflow::Block | Overflow::Fail)) => {
            u32::try_from(capacity).unwrap_or(u32::MAX).max(1)
        }
        _ => 0,
    }
}

/// Credits returned in one `Credit` message for a window of `window`.
pub(super) fn batch(window: u32) -> u32 {
    (window / 4).max(1)
}

/// A sending node's credits toward one actor (see the module docs, step 1).
pub(crate) struct Flow {
    window: u32,
    state: Mutex<FlowState>,
}

struct FlowState {
    credits: u32,
    /// Senders waiting for a credit, each once (`will_wake`).
    waiters: Vec<Waker>,
}

impl Flow {
    pub(crate) fn new(window: u32) -> Flow {
        Flow {
            window,
            state: Mutex::new(FlowState {
                credits: window,
                waiters: Vec::new(),
            }),
        }
    }

    /// The window: the credits of a flow with nothing out.
    pub(crate) fn window(&self) -> u32 {
        self.window
    }

    /// Takes one credit if there is one.
    pub(crate) fn try_take(&self) -> bool {
        let mut st = lock(&self.state);
        if st.credits == 0 {
            return false;
        }
        st.credits -= 1;
        true
    }

    /// Takes one credit, or queues `waker` to be woken when credits come. The
    /// check and the queueing are one step under the lock that [`credit`]
    /// takes, so a credit arriving meanwhile finds the waker.
    ///
    /// [`credit`]: Flow::credit
    pub(crate) fn take_or_wait(&self, waker: &Waker) -> bool {
        let mut st = lock(&self.state);
        if st.credits > 0 {
            st.credits -= 1;
            return true;
        }
        if !st.waiters.iter().any(|w| w.will_wake(waker)) {
            st.waiters.push(waker.clone());
        }
        false
    }

    /// `n` credits came back; every waiter is woken (after the lock is let go)
    /// to take one in turn.
    pub(crate) fn credit(&self, n: u32) {
        let waiters = {
            let mut st = lock(&self.state);
            st.credits = st.credits.saturating_add(n).min(self.window);
            std::mem::take(&mut st.waiters)
        };
        for w in waiters {
            w.wake();
        }
    }

    /// Wakes every waiter without credits (the flow's nodes may have left: the
    /// waiters look again).
    pub(crate) fn wake_all(&self) {
        let waiters = std::mem::take(&mut lock(&self.state).waiters);
        for w in waiters {
            w.wake();
        }
    }

    /// Whether every credit is back (nothing of this flow is out).
    pub(crate) fn is_full(&self) -> bool {
        lock(&self.state).credits >= self.window
    }

    /// Credits held now (a snapshot).
    #[cfg(test)]
    pub(crate) fn credits(&self) -> u32 {
        lock(&self.state).credits
    }
}

/// What a receiving node owes its senders (see the module docs, step 3):
/// credits per (sending location, actor), with the batch size of the actor's
/// window.
#[derive(Default)]
pub(super) struct Due {
    owed: Mutex<HashMap<(LocationId, u64), (u32, u32)>>,
}

impl Due {
    /// One credit more is owed to `from` for `actor` (window `window`); returns
    /// a batch to send now, if one is complete.
    pub(super) fn owe(&self, from: LocationId, actor: u64, window: u32) -> Option<u32> {
        let mut owed = lock(&self.owed);
        let e = owed.entry((from, actor)).or_insert((0, batch(window)));
        e.0 += 1;
        if e.0 < e.1 {
            return None;
        }
        // A pair owed nothing has no entry: the table holds only what is owed
        // now, however many actors and senders came and went.
        owed.remove(&(from, actor)).map(|(n, _)| n)
    }

    /// Everything owed, taken: (to, actor, credits).
    pub(super) fn take_all(&self) -> Vec<(LocationId, u64, u32)> {
        lock(&self.owed)
            .drain()
            .map(|((to, actor), (n, _))| (to, actor, n))
            .collect()
    }

    /// Pairs of (sender, actor) owed credits now.
    pub(super) fn len(&self) -> usize {
        lock(&self.owed).len()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn batches_are_a_quarter_of_the_window() {
        assert_eq!(batch(1), 1);
        assert_eq!(batch(7), 1);
        assert_eq!(batch(8), 2);
        assert_eq!(batch(1000), 250);
    }

    #[test]
    fn a_flow_spends_and_regains_its_window() {
        let f = Flow::new(2);
        assert!(f.try_take());
        assert!(f.try_take());
        assert!(!f.try_take());
        f.credit(1);
        assert_eq!(f.credits(), 1);
        // Never more than the window, even if a peer returns too many.
        f.credit(5);
        assert_eq!(f.credits(), 2);
    }

    #[test]
    fn owed_credits_go_in_batches_and_at_the_end() {
        let d = Due::default();
        let a = LocationId::new(1);
        for _ in 0..3 {
            assert_eq!(d.owe(a, 7, 16), None);
        }
        assert_eq!(d.owe(a, 7, 16), Some(4));
        assert_eq!(d.len(), 0, "a batch sent leaves nothing owed");
        assert_eq!(d.owe(a, 7, 16), None);
        assert_eq!(d.take_all(), vec![(a, 7, 1)]);
        assert!(d.take_all().is_empty());
    }

    #[test]
    fn the_owed_table_keeps_only_what_is_owed() {
        let d = Due::default();
        // Many actors, each sent a few statements, come and go.
        for actor in 0..1000 {
            for _ in 0..3 {
                let _ = d.owe(LocationId::new(actor as u32 % 4), actor, 8);
            }
            if actor % 10 == 9 {
                assert_eq!(d.take_all().len(), 10);
                assert_eq!(d.len(), 0);
            }
        }
    }
}
