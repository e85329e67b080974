//! A node's receiving task: every arrival goes through the node's conversation
//! (answers are filed there); requests go to the exported actors, control
//! messages to the registry and the leave protocol, rejections into the stats.

use crate::loom::Ordering;
use std::sync::Arc;

use super::node::{lock, Inner};
use super::protocol::{Control, CONTROL};
use crate::call::{Received, Refusal};
use crate::msg::codec::{Frame, FrameKind};
use crate::msg::{MsgId, ReplyError};
use crate::world::{Location, LocationId};

/// The node's receiving task: ends once the node has finished leaving.
pub(super) async fn receive(inner: Arc<Inner>, loc: Arc<Location>) {
    loop {
        {
            let d = loc.recv().await;
            let from = d.from();
            inner.on_message(from, d.bytes());
        }
        if inner.finished() {
            break;
        }
    }
    inner.end(loc);
}

impl Inner {
    /// Handles one received message.
    fn on_message(self: &Arc<Self>, from: LocationId, bytes: Option<&[u8]>) {
        let Some(bytes) = bytes else {
            let bad = self
                .conv
                .reject(from, None, "a typed value, not a node frame");
            self.malformed.fetch_add(1, Ordering::Relaxed);
            self.note_error(bad.to_string());
            return;
        };
        for r in self.conv.receive(from, bytes) {
            match r {
                Received::Request(frame) => self.on_request(from, &frame),
                Received::Control(frame) => {
                    if frame.header().msg != CONTROL {
                        self.reject(from, &frame, "a control message of another protocol");
                        continue;
                    }
                    match frame.decode::<Control>() {
                        Ok(c) => self.on_control(from, frame.header().corr, c),
                        Err(e) => self.reject(
                            from,
                            &frame,
                            &format!("an undecodable control message: {e}"),
                        ),
                    }
                }
                Received::Rejected(cause) => {
                    self.rejected.fetch_add(1, Ordering::Relaxed);
                    self.note_error(format!(
                        "{} rejected a message from here: {cause}",
                        crate::call::Link::name(self.conv.link(), from)
                    ));
                }
                Received::Answered(_) => {}
                Received::Bad(bad) => {
                    self.malformed.fetch_add(1, Ordering::Relaxed);
                    self.note_error(bad.to_string());
                }
            }
        }
    }

    /// Rejects a frame from `from` under the core's policy, and counts it.
    fn reject(&self, from: LocationId, frame: &Frame<'_>, cause: &str) {
        let bad = self.conv.reject(from, Some(frame.header()), cause);
        self.malformed.fetch_add(1, Ordering::Relaxed);
        self.note_error(bad.to_string());
    }

    fn is_gone_or_left(&self, from: LocationId) -> bool {
        let st = lock(&self.state);
        st.left || st.gone.get(from.index()).copied().unwrap_or(true)
    }

    /// A `Tell` or `Ask` for one of the exported actors.
    fn on_request(self: &Arc<Self>, from: LocationId, frame: &Frame<'_>) {
        let h = *frame.header();
        if self.is_gone_or_left(from) {
            // After this node began leaving (its `Leaving` tells the asker).
            self.dead_letters.fetch_add(1, Ordering::Relaxed);
            return;
        }
        if h.kind == FrameKind::Tell && h.corr != 0 {
            self.reject(
                from,
                frame,
                &format!(
                    "a run of {} statements in one frame (a node takes one per frame)",
                    h.corr.saturating_add(1)
                ),
            );
            return;
        }
        let target = lock(&self.exports)
            .get(&h.target)
            .map(|e| Arc::clone(&e.target));
        let outcome = match target {
            Some(t) => t.incoming(frame),
            None => Err(Refusal::NoTarget),
        };
        match (h.kind, outcome) {
            (FrameKind::Tell, Ok(_)) => {}
            // Bytes that do not decode as what they claim: the policy for bad bytes.
            (_, Err(Refusal::Failed(why))) => self.reject(from, frame, &why),
            (FrameKind::Tell, Err(r)) => {
                self.dead_letters.fetch_add(1, Ordering::Relaxed);
                let why = match r {
                    Refusal::Full => {
                        format!("the mailbox of actor {} at {} is full", h.target, self.id)
                    }
                    _ => format!("no running actor {} at {}", h.target, self.id),
                };
                let c = Control::DeadLetter {
                    actor: h.target,
                    msg: h.msg.get(),
                    why,
                };
                let _ = self.control(from, &c, true);
                self.flush();
            }
            (_, Ok(Some(reply))) => {
                let inner = Arc::clone(self);
                drop(self.world.runtime().spawn(async move {
                    let r = reply.await;
                    let r = match &r {
                        Ok(bytes) => Ok(&bytes[..]),
                        Err(ReplyError::NoReply(_)) => Err(Refusal::NoTarget),
                        Err(e) => Err(Refusal::Failed(e.to_string())),
                    };
                    inner.send_answer(from, h.corr, r);
                }));
            }
            (_, Ok(None)) => self.send_answer(
                from,
                h.corr,
                Err(Refusal::Failed("a question without a reply slot".into())),
            ),
            (_, Err(r)) => self.send_answer(from, h.corr, Err(r)),
        }
    }

    fn on_control(self: &Arc<Self>, from: LocationId, corr: u64, c: Control) {
        match c {
            Control::Register { .. } | Control::Unregister { .. } | Control::Lookup { .. } => {
                if self.is_gone_or_left(from) {
                    self.dead_letters.fetch_add(1, Ordering::Relaxed);
                    return;
                }
                let a = self.at_home(from, &c);
                if corr != 0 {
                    let mut bytes = Vec::new();
                    // A registry answer is strings and integers: it always encodes.
                    if let Err(e) = crate::msg::codec::encode(&a, &mut bytes) {
                        unreachable!("tutti: a registry answer did not encode: {e}")
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
            }
            Control::Leaving => self.on_leaving(from),
            Control::LeftAck => self.on_left_ack(from),
            Control::Wake => {}
            Control::Monitor { actor, watch } => {
                if self.is_gone_or_left(from) {
                    // The watcher learns of this node's leave from `Leaving`.
                    self.dead_letters.fetch_add(1, Ordering::Relaxed);
                    return;
                }
                self.on_monitor(from, actor, watch);
            }
            Control::Demonitor { actor, watch } => self.on_demonitor(from, actor, watch),
            Control::Down { actor, watch, why } => self.on_down(from, actor, watch, why),
        }
    }
}
