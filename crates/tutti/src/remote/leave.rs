//! Leaving: a node tells every other node it leaves and waits for each to
//! acknowledge; a node that hears `Leaving` fails every question waiting for
//! the leaver (through the core) and sends it nothing more. The rules are in
//! the [module documentation](super).

use crate::loom::Ordering;
use std::sync::Arc;

use super::node::{lock, Export, Inner};
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
        let mut acks = 0;
        for i in 0..self.locations {
            let to = LocationId::new(i as u32);
            if to == self.id || st.gone[i] {
                continue;
            }
            if self.conv.control(to, CONTROL, 0, &Control::Leaving).is_ok() {
                acks += 1;
                st.owes[i] = true;
            }
        }
        st.acks = acks;
        if acks == 0 {
            st.finished = true;
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

    pub(super) fn on_left_ack(&self, from: LocationId) {
        let mut st = lock(&self.state);
        let owed = st.owes.get_mut(from.index()).map(std::mem::take);
        if st.left && owed == Some(true) && st.acks > 0 {
            st.acks -= 1;
            if st.acks == 0 {
                st.finished = true;
            }
        }
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
                if std::mem::take(&mut st.owes[i]) && st.acks > 0 {
                    st.acks -= 1;
                }
            }
            let ended = st.left && st.acks == 0 && !st.finished;
            if ended {
                st.finished = true;
            }
            ended
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

    /// The receiving task ends: fail what still waits, let the location go and
    /// wake `leave`.
    pub(super) fn end(&self, loc: Arc<Location>) {
        self.conv.link().release();
        // What is still in the inbox (our own messages to ourselves) is dead.
        loc.flush();
        while let Some(d) = loc.try_recv() {
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
