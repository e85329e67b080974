//! Leaving: a node tells every other node it leaves and waits for each to
//! acknowledge; a node that hears `Leaving` fails every question waiting for
//! the leaver (through the core) and sends it nothing more. The rules are in
//! the [module documentation](super).
//!
//! # The last message, and the location's next node
//!
//! A location runs one node per run of its world, and the ranks do not start
//! their runs together: a rank whose node has left may start its next run,
//! and its next node may send to a location whose node of the previous run
//! still receives. That node must leave such messages in its location's inbox
//! for the location's next node ([`Node::join`](super::Node::join) promises
//! that messages sent before a node joins wait for it); taken, they would be
//! lost — a registry request answered by nobody, its asker waiting for ever.
//! So each node knows when another node has sent it its **last message**:
//!
//! * L1. A node's messages to another end with a `LeftAck` (it heard the
//!   other's `Leaving`: from then on it sends it nothing) or, if it never
//!   heard one, with a `Closed`, which its receiving task sends as it ends.
//!   Messages between two locations arrive in order, so whatever the other
//!   location sends after that last message comes from a later node.
//! * L2. The receiving task takes only messages from itself and from
//!   locations whose last message it has not had yet (`heard_last`); the
//!   others stay queued, in arrival order, for the location's next receiver.
//! * L3. A node has finished leaving (its task ends, and [`leave`] returns)
//!   once it has left and holds the last message of every other node (or
//!   that node's rank died). Its task then sends its own `Closed`s, and the
//!   location's next node can start only after that.
//!
//! L3 waits only for messages that come without any program's help: a node
//! that hears `Leaving` answers `LeftAck` at once, and a node that left
//! before this one (so its `Closed` is awaited) finishes on the `LeftAck`s
//! of the others, which never wait — no node waits on a later leaver.
//!
//! [`leave`]: super::Node::leave

use crate::loom::Ordering;
use std::sync::Arc;

use super::node::{lock, Export, Inner, State};
use super::protocol::{Control, CONTROL};
use crate::call::CallError;
use crate::world::{Location, LocationId};

impl Inner {
    /// The first step of leaving (idempotent).
    pub(super) fn begin_leave(&self) {
        // Marked left before the exports go, so that a question arriving in
        // between is not answered `Stopped`: from now on requests are dead
        // letters, and their askers learn of the leave from `Leaving`.
        let exports: Vec<(u64, Export)> = {
            let mut ex = lock(&self.exports);
            let mut st = lock(&self.state);
            if st.left {
                return;
            }
            st.left = true;
            drop(st);
            ex.drain().collect()
        };
        for (actor, e) in &exports {
            super::wait::withdrawn(self.world.diag_id(), self.id, *actor);
            e.monitor.clone().cancel();
            self.unregister_names(*actor, &e.names);
        }
        drop(exports);
        let mut st = lock(&self.state);
        for i in 0..self.locations {
            let to = LocationId::new(i as u32);
            if to == self.id || st.gone[i] {
                continue;
            }
            // A send fails only to a rank that died: its death notice, not
            // a `LeftAck`, then counts for it (L3).
            let _ = self.conv.control(to, CONTROL, 0, &Control::Leaving);
        }
        if self.may_finish(&mut st) {
            // Wake the receiving task so that it sees the end.
            let _ = self.conv.control(self.id, CONTROL, 0, &Control::Wake);
        }
        drop(st);
        self.flush();
        // Senders waiting for credits now find that this node may not send.
        self.wake_flows(None);
    }

    /// `from`'s node leaves: it is gone for this node, and every question
    /// waiting for it fails.
    pub(super) fn on_leaving(&self, from: LocationId) {
        {
            let mut st = lock(&self.state);
            if let Some(g) = st.gone.get_mut(from.index()) {
                *g = true;
            }
            // The acknowledgement goes under the same lock as every send:
            // nothing follows it to `from`.
            let _ = self.conv.control(from, CONTROL, 0, &Control::LeftAck);
        }
        self.flush();
        // Marked gone first, under the lock every question is opened under: a
        // question to `from` is either refused or failed here.
        self.conv.peer_gone(from, "its actor node left");
        self.fire_location(
            from,
            super::RemoteError::NodeLeft(from),
            "its actor node left",
        );
        lock(&self.home).retain(|_, e| e.location != from.raw());
        self.wake_flows(Some(from));
    }

    /// `from`'s node sent its last message to this one, a `LeftAck` or a
    /// `Closed` (L1): what comes from `from` now is for this location's next
    /// node (L2). The receiving task looks at `finished` after each message.
    pub(super) fn on_last_message(&self, from: LocationId) {
        let mut st = lock(&self.state);
        if let Some(heard) = self.heard_last.get(from.index()) {
            // Relaxed: only the receiving task, which runs this, reads it
            // without the lock.
            heard.store(true, Ordering::Relaxed);
        }
        self.may_finish(&mut st);
    }

    /// Whether the receiving task takes messages from `from` (L2): from
    /// itself, and from a node whose last message it has not had yet.
    pub(super) fn takes_from(&self, from: LocationId) -> bool {
        self.heard_last
            .get(from.index())
            .is_none_or(|heard| !heard.load(Ordering::Relaxed))
    }

    /// Marks the leave finished if it is (L3), under the state lock `st`;
    /// true if it became so now.
    fn may_finish(&self, st: &mut State) -> bool {
        if !st.left || st.finished {
            return false;
        }
        let me = self.id.index();
        let all = (0..self.locations)
            .all(|i| i == me || st.died[i] || self.heard_last[i].load(Ordering::Relaxed));
        st.finished = all;
        all
    }

    /// Rank `rank` died: its nodes are gone without a `Leaving`; questions
    /// waiting for them fail with [`RemoteError::RankDied`], and a leave in
    /// progress expects no acknowledgement from them.
    ///
    /// [`RemoteError::RankDied`]: super::RemoteError::RankDied
    fn on_rank_died(&self, rank: usize) {
        let per_rank = self.world.locations_per_rank();
        let ended = {
            let mut st = lock(&self.state);
            for i in (rank * per_rank..(rank + 1) * per_rank).filter(|&i| i < self.locations) {
                st.gone[i] = true;
                st.died[i] = true;
            }
            self.may_finish(&mut st)
        };
        if ended {
            // Wake the receiving task so that it sees the end.
            let _ = self.conv.control(self.id, CONTROL, 0, &Control::Wake);
            self.flush();
        }
        self.conv.rank_died(rank, |p| p.rank(per_rank));
        for i in (rank * per_rank..(rank + 1) * per_rank).filter(|&i| i < self.locations) {
            let at = LocationId::new(i as u32);
            let why = format!("its process (rank {rank}) died");
            self.fire_location(at, super::RemoteError::RankDied(at), &why);
        }
        lock(&self.home).retain(|_, e| (e.location as usize) / per_rank != rank);
        self.wake_flows(None);
    }

    /// Whether the leave is complete (the receiving task then ends).
    pub(super) fn finished(&self) -> bool {
        lock(&self.state).finished
    }

    /// The receiving task ends: tell the nodes that have not left that this
    /// was its last message (L1), fail what still waits, let the location go
    /// and wake `leave`.
    pub(super) fn end(&self, loc: Arc<Location>) {
        {
            let st = lock(&self.state);
            for i in 0..self.locations {
                let to = LocationId::new(i as u32);
                if to != self.id && !st.gone[i] {
                    // Fails only to a rank that died, which hears nothing.
                    let _ = self.conv.control(to, CONTROL, 0, &Control::Closed);
                }
            }
        }
        self.conv.link().release();
        // What is still in the inbox from this node (to itself) is dead;
        // what other nodes sent after their last message is for the
        // location's next node (L2) and stays.
        loc.flush();
        while let Some(d) = loc.try_recv_from(&|from| self.takes_from(from)) {
            self.serving.dead_letter();
            drop(d);
        }
        drop(loc);
        self.drop_watches();
        let waiters = {
            let mut st = lock(&self.state);
            self.ended.store(true, Ordering::Release);
            std::mem::take(&mut st.waiters)
        };
        let me = self.id;
        self.conv.pending().fail_all(|_| CallError::Gone {
            peer: me,
            why: "this actor node left".into(),
        });
        for w in waiters {
            w.wake();
        }
    }
}

impl crate::world::RankDeath for Inner {
    fn rank_died(&self, rank: usize) {
        self.on_rank_died(rank);
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use std::future::Future;
    use std::pin::pin;
    use std::task::{Context, Waker};

    use crate::actor::{self, Actor};
    use crate::msg::Dispatch;
    use crate::remote::Node;
    use crate::runtime::block_on;
    use crate::world::World;

    struct Idle;
    impl Actor for Idle {}

    /// The node of location 1 leaves while location 0's runs on, and the
    /// next node of location 1 registers a name whose home is location 0:
    /// the request waits in location 0's inbox for its next node, which
    /// answers it. (It was taken by the node still running there, as a
    /// request from a node that had left, and never answered: a rank whose
    /// node left first could start its next run and hang in it.)
    #[test]
    fn a_request_of_a_later_node_waits_for_the_location_s_next_node() {
        let world = World::builder().locations(2).workers(2).build().unwrap();
        let home = Node::join(world.location(0).unwrap());
        let first = Node::join(world.location(1).unwrap());
        block_on(first.leave());
        drop(first);
        let next = Node::join(world.location(1).expect("location 1 is free again"));
        let name = (0..)
            .map(|i| format!("name {i}"))
            .find(|n| next.home_of(n) == home.id())
            .unwrap();
        let addr = next.export(&actor::spawn(Idle), Dispatch::new());
        let mut register = pin!(next.register(name.as_str(), &addr));
        // The first poll sends the request to location 0.
        let mut cx = Context::from_waker(Waker::noop());
        assert!(register.as_mut().poll(&mut cx).is_pending());
        block_on(home.leave());
        assert_eq!(home.stats().dead_letters, 0, "{:?}", home.stats());
        drop(home);
        let loc = world.location(0).expect("location 0 is free again");
        assert!(loc.poll(), "the request waits for location 0's next node");
        let home = Node::join(loc);
        assert_eq!(block_on(register), Ok(()), "answered by the next node");
        block_on(next.leave());
        block_on(home.leave());
    }
}
