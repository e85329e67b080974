//! A node's receiving task and its part in serving: every arrival goes through
//! the core's serving side ([`crate::call::serve`]: answers filed, requests
//! served to the exported actors, rejections counted); what is the node's own
//! is here — when it serves a peer, how it tells a sender that a statement was
//! not delivered (a `DeadLetter`), and its control messages (the registry, the
//! leave protocol, monitors).

use std::sync::Arc;

use super::link::NodeLink;
use super::node::{lock, Inner};
use super::protocol::{Control, CONTROL};
use crate::call::serve::{self, PeerOf, ServeCounters, Server, Target};
use crate::call::{Conversation, Refusal};
use crate::loom::Ordering;
use crate::msg::codec::{Format, Frame, Header};
use crate::msg::MsgId;
use crate::world::{Location, LocationId};

/// The node's receiving task: ends once the node has finished leaving.
pub(super) async fn receive(inner: Arc<Inner>, loc: Arc<Location>) {
    // What other nodes send after their last message stays for the
    // location's next node (`leave.rs`, L2).
    let takes = |from| inner.takes_from(from);
    loop {
        {
            let d = loc.recv_from(&takes).await;
            let from = d.from();
            match d.bytes() {
                Some(bytes) => serve::receive(&inner, from, bytes, Format::Binary),
                None => serve::reject(&*inner, from, None, "a typed value, not a node frame"),
            }
        }
        if inner.finished() {
            break;
        }
        if !loc.has_arrived() {
            // The end of a burst: what is owed goes back now (`credit.rs`).
            inner.return_credits();
        }
    }
    inner.end(loc);
}

impl Server for Inner {
    type Link = NodeLink;

    fn conversation(&self) -> &Conversation<NodeLink> {
        &self.conv
    }

    fn counters(&self) -> &ServeCounters {
        &self.serving
    }

    fn target(&self, id: u64) -> Option<Arc<dyn Target>> {
        lock(&self.exports).get(&id).map(|e| Arc::clone(&e.target))
    }

    /// Not after this node began leaving, nor from a node that left: the
    /// asker learns of the leave from `Leaving`.
    fn serves(&self, from: LocationId) -> bool {
        !self.is_gone_or_left(from)
    }

    fn on_control(self: &Arc<Self>, from: LocationId, frame: &Frame<'_>) {
        if frame.header().msg != CONTROL {
            let why = "a control message of another protocol";
            return serve::reject(&**self, from, Some(frame.header()), why);
        }
        match frame.decode::<Control>() {
            Ok(c) => self.on_node_control(from, frame.header().corr, c),
            Err(e) => {
                let why = format!("an undecodable control message: {e}");
                serve::reject(&**self, from, Some(frame.header()), why)
            }
        }
    }

    /// The sender counts a `DeadLetter` in its `undelivered` and keeps the
    /// reason.
    fn undelivered(&self, from: LocationId, h: &Header, why: Refusal) {
        let why = match why {
            Refusal::Full => format!("the mailbox of actor {} at {} is full", h.target, self.id),
            _ => format!("no running actor {} at {}", h.target, self.id),
        };
        self.dead_letter_notice(from, h.target, h.msg, why);
    }

    /// Withheld if either node has left: the asker then fails the question on
    /// `Leaving`.
    fn answer(&self, to: PeerOf<Self>, corr: u64, answer: Result<&[u8], Refusal>) {
        self.send_answer(to, corr, answer);
    }
}

impl Inner {
    pub(super) fn is_gone_or_left(&self, from: LocationId) -> bool {
        let st = lock(&self.state);
        st.left || st.gone.get(from.index()).copied().unwrap_or(true)
    }

    fn on_node_control(self: &Arc<Self>, from: LocationId, corr: u64, c: Control) {
        match c {
            Control::Register { .. } | Control::Unregister { .. } | Control::Lookup { .. } => {
                if self.is_gone_or_left(from) {
                    self.serving.dead_letter();
                    return;
                }
                let a = self.at_home(from, &c);
                if corr != 0 {
                    let mut bytes = Vec::new();
                    // A registry reply is strings and integers: it always encodes.
                    if let Err(e) = crate::msg::codec::encode(&a, &mut bytes) {
                        unreachable!("tutti: a registry reply did not encode: {e}")
                    }
                    self.send_answer(from, corr, Ok(&bytes));
                }
            }
            Control::DeadLetter { actor, msg, why } => {
                self.undelivered.fetch_add(1, Ordering::Relaxed);
                self.note_error(format!(
                    "a tell of message {} to actor {actor} at {from} was not delivered: {why}",
                    MsgId::new(msg)
                ));
                // The notice returns the statement's credit (`credit.rs`).
                self.on_credit(from, actor, 1, true);
            }
            Control::Credit { actor, n } => self.on_credit(from, actor, n, false),
            Control::Leaving => self.on_leaving(from),
            Control::LeftAck | Control::Closed => self.on_last_message(from),
            Control::Wake => {}
            Control::Monitor { actor, watch } => {
                if self.is_gone_or_left(from) {
                    // The watcher learns of this node's leave from `Leaving`.
                    self.serving.dead_letter();
                    return;
                }
                self.on_monitor(from, actor, watch);
            }
            Control::Demonitor { actor, watch } => self.on_demonitor(from, actor, watch),
            Control::Down { actor, watch, why } => self.on_down(from, actor, watch, why),
        }
    }
}
