//! What nodes say to each other beyond statements and questions: their control
//! messages and the registry's answers. Everything travels as frames of the
//! request/reply core ([`crate::call`]):
//!
//! | frame | header | payload |
//! |---|---|---|
//! | `Tell` | `msg` = message id, `target` = actor id (one message per frame) | the message |
//! | `Ask` | as `Tell`, plus `corr` (the asker's question id) | the message |
//! | `Reply` | `corr` | the reply value, or a [`RegistryReply`] |
//! | `Fault` | `corr` | a `call::Refusal`: why the question gets no reply |
//! | `Control` | `msg` = [`CONTROL`]; `corr` for registry requests | a [`Control`] |

use serde::{Deserialize, Serialize};

use crate::msg::MsgId;

/// The message id of node control frames.
pub(crate) const CONTROL: MsgId = MsgId::from_name("tutti.remote.Control");

/// Node-to-node control messages.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) enum Control {
    /// To a name's home: record `name` → (sender location, `actor`). Answered
    /// with a [`RegistryReply`] in a `Reply` frame.
    Register {
        name: String,
        type_name: String,
        actor: u64,
        /// The actor's credit window (`credit.rs`; 0: none).
        window: u32,
    },
    /// To a name's home: remove `name` if it maps to (sender location, `actor`).
    Unregister { name: String, actor: u64 },
    /// To a name's home: where is `name`? Answered with a [`RegistryReply`].
    Lookup { name: String },
    /// To the sender of a `Tell` that could not be delivered.
    DeadLetter { actor: u64, msg: u64, why: String },
    /// The sender leaves: it handles nothing more. Acknowledged with `LeftAck`.
    Leaving,
    /// The sender knows that the receiver has left and sends it nothing more.
    LeftAck,
    /// From a node to itself: look at the leave state again.
    Wake,
    /// To the node of exported actor `actor`: tell the sender (monitor `watch`
    /// there) when the actor stops; at once if it has already stopped.
    Monitor { actor: u64, watch: u64 },
    /// To the node of `actor`: forget the sender's monitor `watch`.
    Demonitor { actor: u64, watch: u64 },
    /// To a watching node: `actor` (of the sender) stopped, for monitor `watch`.
    Down { actor: u64, watch: u64, why: String },
    /// To a node sending statements to `actor` (of the sender): `n` of them
    /// entered its mailbox, so `n` credits come back (`credit.rs`).
    Credit { actor: u64, n: u32 },
    /// The sender's node has ended (its leave is complete) and sends the
    /// receiver nothing more: what comes from the sender's location after
    /// this is from its next node. Sent to every node that has not left as
    /// far as the sender knows (to the others, its `LeftAck` was the last).
    Closed,
}

/// A name's home replies to a registry request.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) enum RegistryReply {
    Registered,
    Taken {
        location: u32,
        actor: u64,
    },
    Found {
        type_name: String,
        location: u32,
        actor: u64,
        window: u32,
    },
    NotFound,
    Unregistered(bool),
}
