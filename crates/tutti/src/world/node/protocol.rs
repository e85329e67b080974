//! What nodes say to each other: every world message of a node is one `msg` codec
//! frame (see the module documentation of `node` for the conversation rules).
//!
//! | frame | header | payload |
//! |---|---|---|
//! | `Tell` | `msg` = message id, `target` = actor id | the message |
//! | `Ask` | as `Tell`, plus `corr` (the asker's question id) | the message |
//! | `Reply` | `corr` | the reply value, or a registry [`Answer`] |
//! | `Fault` | `corr` | a [`Refusal`]: why the question gets no reply |
//! | `Control` | `corr` for registry requests | a [`Control`] |

use serde::{Deserialize, Serialize};

use super::RemoteError;
use crate::msg::codec::{self, FrameKind, Header};
use crate::msg::MsgId;

/// Node-to-node control messages.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) enum Control {
    /// To a name's home: record `name` → (sender location, `actor`). Answered
    /// with an [`Answer`] in a `Reply` frame.
    Register {
        name: String,
        type_name: String,
        actor: u64,
    },
    /// To a name's home: remove `name` if it maps to (sender location, `actor`).
    Unregister { name: String, actor: u64 },
    /// To a name's home: where is `name`? Answered with an [`Answer`].
    Lookup { name: String },
    /// To the sender of a `Tell` that could not be delivered.
    DeadLetter { actor: u64, msg: u64, why: String },
    /// To the sender of bytes that were not a node frame.
    Rejected { why: String },
    /// The sender leaves: it handles nothing more. Acknowledged with `LeftAck`.
    Leaving,
    /// The sender knows that the receiver has left and sends it nothing more.
    LeftAck,
    /// From a node to itself: look at the leave state again.
    Wake,
}

/// A name's home answers a registry request.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) enum Answer {
    Registered,
    Taken {
        location: u32,
        actor: u64,
    },
    Found {
        type_name: String,
        location: u32,
        actor: u64,
    },
    NotFound,
    Unregistered(bool),
}

/// Why a question gets no reply (the payload of a `Fault` frame).
#[derive(Debug, Serialize, Deserialize)]
pub(crate) enum Refusal {
    Stopped,
    Full,
    Fault(String),
}

impl From<Refusal> for RemoteError {
    fn from(r: Refusal) -> RemoteError {
        match r {
            Refusal::Stopped => RemoteError::Stopped,
            Refusal::Full => RemoteError::Full,
            Refusal::Fault(why) => RemoteError::Fault(why),
        }
    }
}

/// A control frame.
pub(crate) fn control(src: u32, dst: u32, corr: u64, c: &Control, out: &mut Vec<u8>) {
    let h = Header {
        src,
        dst,
        corr,
        ..Header::new(FrameKind::Control)
    };
    // A control value always encodes (strings and integers).
    if let Err(e) = codec::encode_frame(&h, c, out) {
        unreachable!("tutti: a node control message did not encode: {e}")
    }
}

/// A `Reply` frame around an encoded value.
pub(crate) fn reply(src: u32, dst: u32, corr: u64, payload: &[u8], out: &mut Vec<u8>) -> bool {
    let h = Header {
        src,
        dst,
        corr,
        ..Header::new(FrameKind::Reply)
    };
    codec::encode_raw_frame(&h, payload, out).is_ok()
}

/// A `Reply` frame around a registry answer.
pub(crate) fn answer(src: u32, dst: u32, corr: u64, a: &Answer, out: &mut Vec<u8>) {
    let h = Header {
        src,
        dst,
        corr,
        ..Header::new(FrameKind::Reply)
    };
    if let Err(e) = codec::encode_frame(&h, a, out) {
        unreachable!("tutti: a registry answer did not encode: {e}")
    }
}

/// A `Fault` frame.
pub(crate) fn fault(src: u32, dst: u32, corr: u64, r: &Refusal, out: &mut Vec<u8>) {
    let h = Header {
        src,
        dst,
        corr,
        ..Header::new(FrameKind::Fault)
    };
    if let Err(e) = codec::encode_frame(&h, r, out) {
        unreachable!("tutti: a fault did not encode: {e}")
    }
}

/// The id a frame carries for a message of type id `msg` (for dead letters).
pub(crate) fn msg_id(raw: u64) -> MsgId {
    MsgId::new(raw)
}
