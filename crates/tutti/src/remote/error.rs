//! The errors of distributed actors: [`RemoteError`] for `tell`/`ask` across
//! locations, [`NodeRegisterError`] and [`NodeLookupError`] for the world-wide
//! registry.

use std::fmt;
use std::sync::Arc;

use crate::actor::Name;
use crate::call::{CallError, Refusal};
use crate::diag::Deadlock;
use crate::world::LocationId;

/// Why a remote `tell` or `ask` failed. A question never hangs on a node that
/// left or an actor that stopped: it gets one of these.
///
/// ```
/// use tutti::remote::RemoteError;
/// use tutti::world::LocationId;
/// let e = RemoteError::NodeLeft(LocationId::new(3));
/// assert_eq!(e.to_string(), "the actor node of location 3 has left the world");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum RemoteError {
    /// The node at this location has left (for an address of this node: this
    /// node has left, so it sends nothing more).
    NodeLeft(LocationId),
    /// The actor has stopped (or was never exported at that node), or stopped
    /// before it replied.
    Stopped,
    /// The actor's bounded mailbox was full: a question to a full `Fail`
    /// mailbox, or a [`tell`](super::RemoteAddr::tell) when this node already
    /// has the actor's window of statements on the way (its waiting form is
    /// [`send`](super::RemoteAddr::send)).
    Full,
    /// The message could not be encoded.
    Encode(String),
    /// The receiving node could not use the message (an unknown message type for
    /// that actor, a payload that does not decode, a reply that did not encode):
    /// its explanation.
    Fault(String),
    /// The reply arrived but did not decode as the reply type.
    BadReply(String),
    /// The process (rank) of the node at this location died (a
    /// shared-memory system detects a member killed): questions pending on
    /// it fail with this, and so do new messages to it.
    RankDied(LocationId),
    /// A [`RemoteRef`](super::RemoteRef) could not be made an address here: it
    /// names another actor type, or a location outside this world.
    BadRef(String),
    /// The question was part of a deadlock the runtime detected (a cycle of
    /// actors of this process, each waiting for the next): the report.
    Deadlock(Arc<Deadlock>),
}

impl fmt::Display for RemoteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RemoteError::NodeLeft(at) => {
                write!(f, "the actor node of {at} has left the world")
            }
            RemoteError::Stopped => f.write_str("the remote actor has stopped"),
            RemoteError::Full => f.write_str("the remote actor's mailbox is full"),
            RemoteError::Encode(e) => write!(f, "the message could not be encoded: {e}"),
            RemoteError::Fault(e) => write!(f, "the remote node refused the message: {e}"),
            RemoteError::BadReply(e) => write!(f, "the reply did not decode: {e}"),
            RemoteError::RankDied(at) => {
                write!(f, "the process of the actor node of {at} died")
            }
            RemoteError::BadRef(e) => write!(f, "a bad actor reference: {e}"),
            RemoteError::Deadlock(d) => write!(f, "tutti::remote: the ask deadlocked\n{d}"),
        }
    }
}

impl std::error::Error for RemoteError {}

impl From<CallError<LocationId>> for RemoteError {
    fn from(e: CallError<LocationId>) -> RemoteError {
        match e {
            CallError::Gone { peer, .. } => RemoteError::NodeLeft(peer),
            CallError::RankDied { peer, .. } => RemoteError::RankDied(peer),
            CallError::Refused { refusal, .. } => match refusal {
                Refusal::NoTarget => RemoteError::Stopped,
                Refusal::Full => RemoteError::Full,
                Refusal::Failed(why) => RemoteError::Fault(why),
            },
            CallError::BadAnswer { peer, why } => {
                RemoteError::BadReply(format!("from {peer}: {why}"))
            }
            CallError::Encode(why) => RemoteError::Encode(why),
        }
    }
}

/// Why [`Node::register`](super::Node::register) failed.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum NodeRegisterError {
    /// The name is taken, world-wide, by this actor.
    Taken {
        /// The name.
        name: Name,
        /// The location of the actor holding it.
        location: LocationId,
        /// Its actor id on that location.
        actor: u64,
    },
    /// The address is not of an actor exported by this node (only a node's own
    /// actors can be registered through it), or the actor has stopped.
    NotExported {
        /// The name.
        name: Name,
    },
    /// The name's home node (or this node) has left: the name cannot be
    /// registered.
    HomeLeft {
        /// The name.
        name: Name,
        /// Its home location.
        home: LocationId,
    },
}

impl fmt::Display for NodeRegisterError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NodeRegisterError::Taken {
                name,
                location,
                actor,
            } => write!(
                f,
                "the name {name:?} is already registered (by actor {actor} on {location})"
            ),
            NodeRegisterError::NotExported { name } => write!(
                f,
                "cannot register {name:?}: the actor is not exported by this node or has stopped"
            ),
            NodeRegisterError::HomeLeft { name, home } => write!(
                f,
                "cannot register {name:?}: its home node ({home}) or this node has left"
            ),
        }
    }
}

impl std::error::Error for NodeRegisterError {}

/// Why [`Node::lookup`](super::Node::lookup) found no address.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum NodeLookupError {
    /// Nobody holds the name.
    NotFound {
        /// The name.
        name: Name,
    },
    /// The name is held by an actor of another type.
    WrongType {
        /// The name.
        name: Name,
        /// The type asked for.
        expected: String,
        /// The registered actor's type.
        found: String,
    },
    /// The name's home node (or this node) has left.
    HomeLeft {
        /// The name.
        name: Name,
        /// Its home location.
        home: LocationId,
    },
}

impl fmt::Display for NodeLookupError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NodeLookupError::NotFound { name } => write!(f, "no actor is registered as {name:?}"),
            NodeLookupError::WrongType {
                name,
                expected,
                found,
            } => write!(f, "{name:?} is a `{found}`, not a `{expected}`"),
            NodeLookupError::HomeLeft { name, home } => write!(
                f,
                "cannot look up {name:?}: its home node ({home}) or this node has left"
            ),
        }
    }
}

impl std::error::Error for NodeLookupError {}
