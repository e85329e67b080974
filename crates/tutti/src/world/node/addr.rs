//! [`RemoteAddr`]: the address of an actor exported by a node, usable from every
//! location; [`RemoteAsk`]: the future of a remote question.

use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::{Arc, Mutex, Weak};
use std::task::{Context, Poll, Waker};

use super::{lock, Inner, RemoteError};
use crate::actor::Actor;
use crate::msg::codec::{self, FrameKind, Header};
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
/// use tutti::world::RemoteAddr;
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
        let node = self.node()?;
        let h = Header {
            src: node.id.raw(),
            dst: self.at.raw(),
            msg: M::ID,
            target: self.actor,
            ..Header::new(FrameKind::Tell)
        };
        super::with_scratch(|buf| {
            codec::encode_frame(&h, &msg, buf).map_err(|e| RemoteError::Encode(e.to_string()))?;
            let st = lock(&node.state);
            node.send(&st, self.at, buf, false)
        })
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
        let (src, dst, target) = (node.id.raw(), self.at.raw(), self.actor);
        let sent = node.ask_frame(self.at, |corr, buf| {
            let h = Header {
                src,
                dst,
                msg: M::ID,
                target,
                corr,
                ..Header::new(FrameKind::Ask)
            };
            codec::encode_frame(&h, &msg, buf)
                .map(|_| ())
                .map_err(|e| RemoteError::Encode(e.to_string()))
        });
        RemoteAsk {
            state: match sent {
                Ok((corr, slot)) => AskState::Waiting(Answered::new(Arc::clone(&node), corr, slot)),
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
        crate::block_on(self.ask(msg))
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

/// An answer's encoded reply, or why there is none.
type RawAnswer = Result<Vec<u8>, RemoteError>;

/// Where the answer to one question lands: the answer, and the asker's waker.
#[derive(Default)]
pub(super) struct AnswerSlot {
    inner: Mutex<(Option<RawAnswer>, Option<Waker>)>,
}

impl AnswerSlot {
    pub(super) fn fill(&self, answer: RawAnswer) {
        let waker = {
            let mut g = lock(&self.inner);
            g.0 = Some(answer);
            g.1.take()
        };
        if let Some(w) = waker {
            w.wake();
        }
    }
}

/// The raw answer to question `corr`; giving it up (drop) forgets the question.
pub(super) struct Answered {
    node: Arc<Inner>,
    corr: u64,
    slot: Arc<AnswerSlot>,
    done: bool,
}

impl Answered {
    pub(super) fn new(node: Arc<Inner>, corr: u64, slot: Arc<AnswerSlot>) -> Self {
        Answered {
            node,
            corr,
            slot,
            done: false,
        }
    }
}

impl Future for Answered {
    type Output = Result<Vec<u8>, RemoteError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let taken = {
            let mut g = lock(&self.slot.inner);
            match g.0.take() {
                Some(a) => Some(a),
                None => {
                    g.1 = Some(cx.waker().clone());
                    None
                }
            }
        };
        match taken {
            Some(a) => {
                self.done = true;
                Poll::Ready(a)
            }
            None => Poll::Pending,
        }
    }
}

impl Drop for Answered {
    fn drop(&mut self) {
        if !self.done {
            self.node.forget(self.corr);
        }
    }
}

enum AskState {
    Waiting(Answered),
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
                Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
                Poll::Ready(Ok(bytes)) => Poll::Ready(
                    codec::decode::<R>(&bytes).map_err(|e| RemoteError::BadReply(e.to_string())),
                ),
            },
        }
    }
}
