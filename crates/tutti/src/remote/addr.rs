//! [`RemoteAddr`]: the address of an actor exported by a node, usable from every
//! location; [`RemoteAsk`]: the future of a remote question.

use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::{Arc, Weak};
use std::task::{Context, Poll};

use super::{Inner, RemoteError};
use crate::actor::Actor;
use crate::call::{Question, ReplyBody};
use crate::msg::codec;
use crate::msg::{Handler, Remote};
use crate::world::LocationId;

/// The address of an actor of type `A` exported by the node of some location
/// (this one or another, on this rank or another), obtained from
/// [`Node::export`](super::Node::export) or [`Node::lookup`](super::Node::lookup).
/// Send it any [`Remote`] message type that `A` handles and that its node's
/// [`Dispatch`](crate::msg::Dispatch) table holds. Cheap to clone. It keeps neither
/// the actor alive nor the node that made it: messages are sent through that node
/// while it runs, and fail with [`RemoteError::NodeLeft`] once it has left.
///
/// Sending a message type the actor does not handle does not compile:
///
/// ```compile_fail
/// use serde::{Deserialize, Serialize};
/// use tutti::actor::Actor;
/// use tutti::msg::{Message, Remote};
/// use tutti::remote::RemoteAddr;
/// #[derive(Serialize, Deserialize)]
/// struct Unknown;
/// impl Message for Unknown { type Reply = (); }
/// impl Remote for Unknown { const NAME: &'static str = "Unknown"; }
/// struct Deaf;
/// impl Actor for Deaf {}
/// fn send(a: &RemoteAddr<Deaf>) { let _ = a.tell(Unknown); }
/// ```
pub struct RemoteAddr<A: Actor> {
    /// Weak: an address kept after its node has left does not keep the node's
    /// location in use.
    node: Weak<Inner>,
    /// The location of the node that made this address.
    from: LocationId,
    at: LocationId,
    actor: u64,
    _actor: PhantomData<fn() -> A>,
}

impl<A: Actor> RemoteAddr<A> {
    pub(super) fn new(node: &Arc<Inner>, at: LocationId, actor: u64) -> Self {
        RemoteAddr {
            node: Arc::downgrade(node),
            from: node.id,
            at,
            actor,
            _actor: PhantomData,
        }
    }

    /// The location whose node holds the actor.
    pub fn location(&self) -> LocationId {
        self.at
    }

    /// The actor's id on its location ([`ActorId::as_u64`](crate::actor::ActorId::as_u64)).
    pub fn actor_id(&self) -> u64 {
        self.actor
    }

    /// This address as plain data, to be put in a message (a subscription
    /// carries its subscriber's address) and made an address again by the
    /// receiving node ([`Node::resolve`](super::Node::resolve)).
    pub fn to_ref(&self) -> RemoteRef {
        RemoteRef {
            location: self.at.raw(),
            actor: self.actor,
            type_name: std::any::type_name::<A>().to_string(),
        }
    }

    /// Sends a statement: encoded now, sent through the world (aggregated with
    /// the node's other messages to that location). Fails at once if either
    /// node has left or the message does not encode. A statement that arrives
    /// and cannot be delivered (the actor stopped, …) is reported back as a dead
    /// letter ([`NodeStats`](super::NodeStats)). Statements from one node to one
    /// actor are handled in the order they were sent.
    pub fn tell<M: Remote>(&self, msg: M) -> Result<(), RemoteError>
    where
        A: Handler<M>,
    {
        self.node()?.tell(self.at, self.actor, M::ID, &msg)
    }

    /// Asks a question: sent at once; the future resolves to the reply, or to an
    /// error — never a hang on an actor that stopped or a node that left (see the
    /// [module documentation](super)). Dropping the future gives the question up.
    pub fn ask<M: Remote>(&self, msg: M) -> RemoteAsk<M::Reply>
    where
        A: Handler<M>,
    {
        let node = match self.node() {
            Ok(n) => n,
            Err(e) => {
                return RemoteAsk {
                    state: AskState::Failed(Some(e)),
                    _reply: PhantomData,
                }
            }
        };
        RemoteAsk {
            state: match node.ask(self.at, self.actor, M::ID, &msg) {
                Ok(q) => AskState::Waiting(q),
                Err(e) => AskState::Failed(Some(e)),
            },
            _reply: PhantomData,
        }
    }

    /// The node that made this address, unless it has left and is gone.
    fn node(&self) -> Result<Arc<Inner>, RemoteError> {
        self.node.upgrade().ok_or(RemoteError::NodeLeft(self.from))
    }

    /// [`ask`](Self::ask) for plain threads.
    ///
    /// # Panics
    /// Inside an async task (use `ask(msg).await`).
    pub fn ask_blocking<M: Remote>(&self, msg: M) -> Result<M::Reply, RemoteError>
    where
        A: Handler<M>,
    {
        crate::runtime::block_on(self.ask(msg))
    }
}

impl<A: Actor> Clone for RemoteAddr<A> {
    fn clone(&self) -> Self {
        RemoteAddr {
            node: Weak::clone(&self.node),
            from: self.from,
            at: self.at,
            actor: self.actor,
            _actor: PhantomData,
        }
    }
}

impl<A: Actor> PartialEq for RemoteAddr<A> {
    fn eq(&self, other: &Self) -> bool {
        (self.at, self.actor) == (other.at, other.actor)
    }
}

impl<A: Actor> Eq for RemoteAddr<A> {}

impl<A: Actor> fmt::Debug for RemoteAddr<A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RemoteAddr")
            .field("location", &self.at)
            .field("actor", &self.actor)
            .field("type", &std::any::type_name::<A>())
            .finish()
    }
}

/// An exported actor's address as data ([`RemoteAddr::to_ref`]): its
/// location, actor id and actor type. It can travel in any [`Remote`] message;
/// [`Node::resolve`](super::Node::resolve) makes it an address again on the
/// receiving side, checking the actor type.
///
/// ```
/// use tutti::remote::RemoteRef;
/// let r: RemoteRef = tutti::msg::codec::decode(&{
///     let mut b = Vec::new();
///     tutti::msg::codec::encode(&(2u32, 7u64, "my::Actor"), &mut b).unwrap();
///     b
/// }).unwrap();
/// assert_eq!((r.location().index(), r.actor_id()), (2, 7));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct RemoteRef {
    location: u32,
    actor: u64,
    type_name: String,
}

impl RemoteRef {
    /// The location whose node holds the actor.
    pub fn location(&self) -> LocationId {
        LocationId::new(self.location)
    }

    /// The actor's id on its location.
    pub fn actor_id(&self) -> u64 {
        self.actor
    }

    /// The actor's type, as [`std::any::type_name`] spells it.
    pub fn type_name(&self) -> &str {
        &self.type_name
    }
}

enum AskState {
    Waiting(Question<LocationId>),
    Failed(Option<RemoteError>),
}

/// Future of [`RemoteAddr::ask`]: the reply, decoded, or why there is none.
#[must_use = "futures do nothing unless polled"]
pub struct RemoteAsk<R> {
    state: AskState,
    _reply: PhantomData<fn() -> R>,
}

impl<R> fmt::Debug for RemoteAsk<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let waiting = matches!(self.state, AskState::Waiting(_));
        f.debug_struct("RemoteAsk")
            .field("waiting", &waiting)
            .finish()
    }
}

impl<R: serde::de::DeserializeOwned> Future for RemoteAsk<R> {
    type Output = Result<R, RemoteError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // Unpin: every field is.
        let this = self.get_mut();
        match &mut this.state {
            AskState::Failed(e) => Poll::Ready(Err(e
                .take()
                .unwrap_or_else(|| RemoteError::Fault("polled after completion".into())))),
            AskState::Waiting(w) => match Pin::new(w).poll(cx) {
                Poll::Pending => Poll::Pending,
                Poll::Ready(Err(e)) => Poll::Ready(Err(e.into())),
                Poll::Ready(Ok(ReplyBody::Bytes(bytes))) => Poll::Ready(
                    codec::decode::<R>(&bytes).map_err(|e| RemoteError::BadReply(e.to_string())),
                ),
                Poll::Ready(Ok(ReplyBody::Value(_))) => Poll::Ready(Err(RemoteError::BadReply(
                    "a typed reply where an encoded one was expected".into(),
                ))),
            },
        }
    }
}
