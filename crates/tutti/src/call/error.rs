//! What can go wrong in a conversation: a question without an answer
//! ([`CallError`]), why a peer refused one ([`Refusal`], the payload of a
//! `Fault` frame), and bytes that break the conversation's rules
//! ([`BadFrame`], the bad-bytes policy of the [module documentation](super)).

use std::fmt;

use serde::{Deserialize, Serialize};

/// Why a peer gives no answer to a question: the payload of a `Fault` frame.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum Refusal {
    /// The target does not exist there, or stopped before it answered.
    NoTarget,
    /// The target could not take the question now (a full mailbox).
    Full,
    /// The question could not be served: the peer's explanation (a message it
    /// could not decode, a handler that never replied, a reply that did not
    /// encode, bytes it rejected).
    Failed(String),
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::NoTarget => f.write_str("no such target, or it stopped"),
            Refusal::Full => f.write_str("the target is full"),
            Refusal::Failed(why) => f.write_str(why),
        }
    }
}

/// Why a question has no answer; `P` names the peer it was asked of.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum CallError<P> {
    /// The peer cannot be reached, or is gone (it left, it died, the
    /// connection failed): the owner's or the link's explanation.
    Gone {
        /// The peer.
        peer: P,
        /// What happened.
        why: String,
    },
    /// The process (rank) the peer lived in died with the question pending.
    RankDied {
        /// The peer.
        peer: P,
        /// Its rank.
        rank: usize,
    },
    /// The peer answered with a `Fault`.
    Refused {
        /// The peer.
        peer: P,
        /// Why.
        refusal: Refusal,
    },
    /// An answer arrived from the peer but breaks the rules (a `Fault` that does
    /// not decode, a reply that is not a value of the expected type).
    BadAnswer {
        /// The peer.
        peer: P,
        /// What is wrong.
        why: String,
    },
    /// The question could not be encoded (nothing was sent).
    Encode(String),
}

impl<P: fmt::Display> fmt::Display for CallError<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CallError::Gone { peer, why } => write!(f, "{peer} cannot be reached: {why}"),
            CallError::RankDied { peer, rank } => {
                write!(f, "{peer} cannot answer: its rank {rank} died")
            }
            CallError::Refused { peer, refusal } => write!(f, "{peer} refused: {refusal}"),
            CallError::BadAnswer { peer, why } => write!(f, "a bad answer from {peer}: {why}"),
            CallError::Encode(why) => write!(f, "the question could not be encoded: {why}"),
        }
    }
}

/// Bytes from a peer that break the conversation's rules, rejected under the
/// bad-bytes policy: names the peer and the cause. See the [module
/// documentation](super) for what happens to everything else.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct BadFrame<P> {
    /// The peer the bytes came from.
    pub(crate) peer: P,
    /// How the link names it (with its rank, or its address).
    pub(crate) from: String,
    /// What is wrong with the bytes.
    pub(crate) cause: String,
}

impl<P> fmt::Display for BadFrame<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "malformed bytes from {}: {}", self.from, self.cause)
    }
}
