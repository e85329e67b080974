//! [`RemoteAddr`]: the address of an actor exported by a node, usable from every
//! location; [`RemoteAsk`]: the future of a remote question.

use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::{Arc, Weak};
use std::task::{Context, Poll};

use super::credit::Flow;
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
    /// The node's credits toward the actor, if its mailbox has a window
    /// (`credit.rs`).
    flow: Option<Arc<Flow>>,
    _actor: PhantomData<fn() -> A>,
}

impl<A: Actor> RemoteAddr<A> {
    pub(super) fn new(node: &Arc<Inner>, at: LocationId, actor: u64, window: u32) -> Self {
        RemoteAddr {
            node: Arc::downgrade(node),
            from: node.id,
            at,
            actor,
            flow: (window > 0).then(|| node.flow(at, actor, window)),
            _actor: PhantomData,
        }
    }

    /// How many statements this node may have on the way to the actor before
    /// it is held back: the capacity of its bounded mailbox (`Block` or `Fail`
    /// policy); `None` if the actor's mailbox is unbounded or drops its oldest
    /// messages (nothing to hold back). See [`send`](Self::send).
    ///
    /// ```
    /// use tutti::actor::{self, Actor, Overflow};
    /// use tutti::msg::Dispatch;
    /// use tutti::remote::Node;
    /// use tutti::world::World;
    /// struct Sink;
    /// impl Actor for Sink {}
    /// let world = World::builder().locations(1).workers(1).build().unwrap();
    /// let windows = world.run(|loc| async move {
    ///     let node = Node::join(loc);
    ///     let bounded = actor::Builder::new().bounded(64, Overflow::Block).spawn(Sink);
    ///     let w = node.export(&bounded, Dispatch::new()).window();
    ///     let open = node.export(&actor::spawn(Sink), Dispatch::new()).window();
    ///     node.leave().await;
    ///     (w, open)
    /// });
    /// assert_eq!(windows[0], (Some(64), None));
    /// ```
    pub fn window(&self) -> Option<usize> {
        self.flow.as_ref().map(|f| f.window() as usize)
    }

    /// The window as it travels (0: none).
    pub(super) fn window_raw(&self) -> u32 {
        self.flow.as_ref().map_or(0, |f| f.window())
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
            window: self.window_raw(),
        }
    }

    /// Sends a statement: encoded now, sent through the world (aggregated with
    /// the node's other messages to that location). Fails at once if either
    /// node has left or the message does not encode, and with
    /// [`RemoteError::Full`] if the actor's mailbox is bounded and this node
    /// has [`window`](Self::window) statements on the way to it already (the
    /// waiting form is [`send`](Self::send)). A statement that arrives
    /// and cannot be delivered (the actor stopped, …) is reported back as a dead
    /// letter ([`NodeStats`](super::NodeStats)). Statements from one node to one
    /// actor are handled in the order they were sent.
    pub fn tell<M: Remote>(&self, msg: M) -> Result<(), RemoteError>
    where
        A: Handler<M>,
    {
        let node = self.node()?;
        let Some(flow) = &self.flow else {
            return node.tell(self.at, self.actor, M::ID, &msg);
        };
        if !flow.try_take() {
            // What this node sent may wait in a buffer: send it, so that its
            // credits can come back.
            node.flush();
            return Err(RemoteError::Full);
        }
        send_credited(&node, flow, self.at, self.actor, &msg)
    }

    /// Sends a statement, waiting while the actor's bounded mailbox holds this
    /// node back (backpressure across locations and ranks): this node may have
    /// at most [`window`](Self::window) statements on the way to the actor, in
    /// its node's held queue, or in its mailbox and not yet accounted for; each
    /// returns its credit once it is in the mailbox. For an actor without a
    /// window it is [`tell`](Self::tell). Fails as `tell` does, never with
    /// `Full`; a node that leaves (either one) or a rank that dies ends the
    /// wait with its error. Dropping the future sends nothing.
    ///
    /// ```
    /// use serde::{Deserialize, Serialize};
    /// use tutti::actor::{self, Actor, Context, Overflow};
    /// use tutti::msg::{Dispatch, Handler, Message, Remote};
    /// use tutti::remote::Node;
    /// use tutti::world::World;
    ///
    /// #[derive(Serialize, Deserialize)]
    /// struct Item(u64);
    /// impl Message for Item { type Reply = (); }
    /// impl Remote for Item { const NAME: &'static str = "doc.send.Item"; }
    /// #[derive(Serialize, Deserialize)]
    /// struct Total;
    /// impl Message for Total { type Reply = u64; }
    /// impl Remote for Total { const NAME: &'static str = "doc.send.Total"; }
    ///
    /// #[derive(Default)]
    /// struct Sum(u64);
    /// impl Actor for Sum {}
    /// impl Handler<Item> for Sum {
    ///     async fn handle(&mut self, m: Item, _: &mut Context<Self>) { self.0 += m.0; }
    /// }
    /// impl Handler<Total> for Sum {
    ///     async fn handle(&mut self, _: Total, _: &mut Context<Self>) -> u64 { self.0 }
    /// }
    ///
    /// let world = World::builder().locations(2).workers(2).build().unwrap();
    /// let totals = world.run(|loc| async move {
    ///     let node = Node::join(loc);
    ///     if node.id().index() == 1 {
    ///         let mut table = Dispatch::new();
    ///         table.register::<Item>().unwrap();
    ///         table.register::<Total>().unwrap();
    ///         let sum = actor::Builder::new().bounded(8, Overflow::Block).spawn(Sum::default());
    ///         let sum = node.export(&sum, table);
    ///         node.register("sum", &sum).await.unwrap();
    ///     }
    ///     node.barrier().await;
    ///     let mut total = 0;
    ///     if node.id().index() == 0 {
    ///         let sum = node.lookup::<Sum>("sum").await.unwrap();
    ///         assert_eq!(sum.window(), Some(8));
    ///         // Never more than 8 on the way, however fast this loop runs.
    ///         for i in 1..=1000 {
    ///             sum.send(Item(i)).await.unwrap();
    ///         }
    ///         total = sum.ask(Total).await.unwrap();
    ///     }
    ///     node.barrier().await;
    ///     node.leave().await;
    ///     total
    /// });
    /// assert_eq!(totals[0], 500_500);
    /// ```
    pub fn send<M: Remote>(&self, msg: M) -> RemoteSend<'_, A, M>
    where
        A: Handler<M>,
    {
        RemoteSend {
            addr: self,
            msg: Some(msg),
        }
    }

    /// [`send`](Self::send) for plain threads.
    ///
    /// # Panics
    /// Inside an async task (use `send(msg).await`).
    pub fn send_blocking<M: Remote>(&self, msg: M) -> Result<(), RemoteError>
    where
        A: Handler<M>,
    {
        crate::runtime::block_on(self.send(msg))
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
                    target: None,
                    message: "",
                    _reply: PhantomData,
                }
            }
        };
        RemoteAsk {
            state: match node.ask(self.at, self.actor, M::ID, &msg) {
                Ok(q) => AskState::Waiting(q),
                Err(e) => AskState::Failed(Some(e)),
            },
            target: Some((node.world.diag_id(), self.at, self.actor)),
            message: crate::actor::short_type_name(std::any::type_name::<M>()),
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
            flow: self.flow.clone(),
            _actor: PhantomData,
        }
    }
}

impl<A: Actor> Drop for RemoteAddr<A> {
    fn drop(&mut self) {
        if self.flow.is_none() {
            return;
        }
        // The node forgets the flow if this was its last address and nothing
        // of it is out (`credit.rs`, step 4).
        if let Some(node) = self.node.upgrade() {
            node.forget_flow(self.at, self.actor, 1);
        }
    }
}

/// Sends a statement whose credit was taken from `flow`; the credit goes back
/// if the statement cannot be sent.
fn send_credited<M: Remote>(
    node: &Inner,
    flow: &Flow,
    at: LocationId,
    actor: u64,
    msg: &M,
) -> Result<(), RemoteError> {
    let sent = node.tell(at, actor, M::ID, msg);
    if sent.is_err() {
        flow.credit(1);
    }
    sent
}

/// Future of [`RemoteAddr::send`].
#[must_use = "the message is only sent if this is awaited"]
pub struct RemoteSend<'a, A: Actor, M> {
    addr: &'a RemoteAddr<A>,
    msg: Option<M>,
}

// The message is moved, never pinned.
impl<A: Actor, M> Unpin for RemoteSend<'_, A, M> {}

impl<A: Actor + Handler<M>, M: Remote> Future for RemoteSend<'_, A, M> {
    type Output = Result<(), RemoteError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        let addr = this.addr;
        let node = match addr.node() {
            Ok(n) => n,
            Err(e) => return Poll::Ready(Err(e)),
        };
        let Some(msg) = this.msg.take() else {
            return Poll::Ready(Err(RemoteError::Fault("polled after completion".into())));
        };
        let Some(flow) = &addr.flow else {
            return Poll::Ready(node.tell(addr.at, addr.actor, M::ID, &msg));
        };
        // A node that left, or a dead rank, ends the wait (they wake the flow).
        if let Err(e) = node.may_send_now(addr.at) {
            return Poll::Ready(Err(e));
        }
        if flow.take_or_wait(cx.waker()) {
            return Poll::Ready(send_credited(&node, flow, addr.at, addr.actor, &msg));
        }
        this.msg = Some(msg);
        node.flush();
        if let Some(d) = crate::diag::node::take_failure() {
            // As for a local `send`: the waiting actor or location fails with
            // the report (a handler's panic stops its actor).
            panic!("tutti::remote: the send deadlocked\n{d}");
        }
        let message = crate::actor::short_type_name(std::any::type_name::<M>());
        let target = super::wait::node_of(node.world.diag_id(), addr.at, addr.actor);
        crate::diag::node::note(
            || {
                use crate::diag::node::{On, Wait, What};
                match target {
                    Some(t) => Wait {
                        on: On::Node(t),
                        what: What::Room {
                            message,
                            ask: false,
                        },
                    },
                    None => Wait {
                        on: On::Unknown,
                        what: What::Owned(format!(
                            "waits for credits to send `{message}` to actor {} at {} \
                             (another rank; its mailbox is full)",
                            addr.actor, addr.at
                        )),
                    },
                }
            },
            Some(cx.waker()),
        );
        Poll::Pending
    }
}

impl<A: Actor, M> fmt::Debug for RemoteSend<'_, A, M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RemoteSend")
            .field("sent", &self.msg.is_none())
            .finish()
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
///     tutti::msg::codec::encode(&(2u32, 7u64, "my::Actor", 0u32), &mut b).unwrap();
///     b
/// }).unwrap();
/// assert_eq!((r.location().index(), r.actor_id()), (2, 7));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct RemoteRef {
    location: u32,
    actor: u64,
    type_name: String,
    /// The actor's credit window (0: none), see [`RemoteAddr::window`].
    window: u32,
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

    /// The window (`None`: none), see [`RemoteAddr::window`].
    pub fn window(&self) -> Option<usize> {
        (self.window > 0).then_some(self.window as usize)
    }

    /// The window as it travels (0: none).
    pub(super) fn window_raw(&self) -> u32 {
        self.window
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
    /// (world, location, actor) asked, for the deadlock detector (`wait.rs`).
    target: Option<(u64, LocationId, u64)>,
    /// The question's type, for reports.
    message: &'static str,
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

impl<R> RemoteAsk<R> {
    /// The question is not answered yet: tells the deadlock detector whom it
    /// waits for (the actor's node if it runs in this process, `wait.rs`;
    /// else someone unknown, which the world's cross-rank stall check
    /// judges), and fails with the report if the detector found that this
    /// wait can never end.
    fn waiting<T>(&mut self, cx: &Context<'_>) -> Poll<Result<T, RemoteError>> {
        use crate::diag::node::{On, Wait, What};
        let Some((world, at, actor)) = self.target else {
            return Poll::Pending;
        };
        if let Some(d) = crate::diag::node::take_failure() {
            self.state = AskState::Failed(None);
            return Poll::Ready(Err(RemoteError::Deadlock(d)));
        }
        let message = self.message;
        let node = super::wait::node_of(world, at, actor);
        crate::diag::node::note(
            || match node {
                Some(node) => Wait {
                    on: On::Node(node),
                    what: What::Reply(message),
                },
                None => Wait {
                    on: On::Unknown,
                    what: What::Owned(format!(
                        "waits for the reply to `{message}` from actor {actor} at {at} \
                         (another rank)"
                    )),
                },
            },
            Some(cx.waker()),
        );
        Poll::Pending
    }
}

impl<R: serde::de::DeserializeOwned> Future for RemoteAsk<R> {
    type Output = Result<R, RemoteError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // Unpin: every field is.
        let this = self.get_mut();
        let polled = match &mut this.state {
            AskState::Failed(e) => {
                return Poll::Ready(Err(e
                    .take()
                    .unwrap_or_else(|| RemoteError::Fault("polled after completion".into()))))
            }
            AskState::Waiting(w) => Pin::new(w).poll(cx),
        };
        match polled {
            Poll::Pending => this.waiting(cx),
            Poll::Ready(Err(e)) => Poll::Ready(Err(e.into())),
            Poll::Ready(Ok(ReplyBody::Bytes(bytes))) => Poll::Ready(
                codec::decode::<R>(&bytes).map_err(|e| RemoteError::BadReply(e.to_string())),
            ),
            Poll::Ready(Ok(ReplyBody::Value(_))) => Poll::Ready(Err(RemoteError::BadReply(
                "a typed reply where an encoded one was expected".into(),
            ))),
        }
    }
}
