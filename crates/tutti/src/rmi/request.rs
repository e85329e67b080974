//! What travels between locations: a [`Request`] (a method call on a registered
//! object, its message type erased) and, for a `sync_rmi`, a [`Response`]; and
//! what a method returns when it runs ([`Returned`]: its representative back,
//! and its [`MethodReply`]).
//! Between locations of one rank they move as typed values; across ranks as
//! frames of the request/reply core (see `wire.rs`), decoded into calls on
//! arrival ([`decoded`], [`decoded_run`]).

use std::any::{Any, TypeId};
use std::future::Future;
use std::marker::PhantomData;
use std::sync::Arc;
use std::task::Context;

use super::scope::ScopeTag;
use super::{HandlerContext, Rmi};
use crate::msg::{Handler, Incoming, Message, ReplyError, RunBatch};
use crate::msg::{Running, Spare, Started};

/// A representative, type-erased while it sits in its location's table.
pub(crate) type Rep = Box<dyn Any + Send>;

/// A method's reply, as its location answers with it.
pub(crate) enum MethodReply {
    /// The reply itself, its type erased (a question from this rank, and the
    /// method `reduce_rmi` runs here).
    Value(Box<dyn Any + Send>),
    /// The reply encoded for an asker in another rank, or why there is none.
    Encoded(Result<Vec<u8>, ReplyError>),
    /// None: a statement, or a run of them.
    Nothing,
}

/// What a method returns when it completes: the representative it ran on
/// (to go back into its slot) and its reply.
pub(crate) struct Returned {
    pub(crate) rep: Rep,
    pub(crate) reply: MethodReply,
}

/// One method call with its message, for an object type it names.
pub(crate) trait Call: Send + 'static {
    /// The object type the method belongs to.
    fn object(&self) -> TypeId;
    /// The message type's name (for errors).
    fn message(&self) -> &'static str;
    /// How many requests it carries (a run of statements carries several,
    /// executed one after the other in one admission).
    fn count(&self) -> usize {
        1
    }

    /// Starts the method on `rep` (whose type is `object()`) with a context
    /// made from `ctx`, in a reusable block (`spare`'s, else one of the
    /// thread's), and polls it once, in place: what it returned, or the method
    /// still running, whose output that will be.
    fn start(
        self: Box<Self>,
        rep: Rep,
        ctx: &Rmi,
        spare: &mut Spare,
        cx: &mut Context<'_>,
    ) -> Started<Returned>;

    /// The scope that spawned this call, if it is scoped work (see
    /// `scope/`): a scoped call may be cancelled before it starts.
    fn scope(&self) -> Option<ScopeTag> {
        None
    }

    /// The reply of a scoped call cancelled before it started (never called
    /// on a call that is not scoped).
    fn cancelled(self: Box<Self>) -> MethodReply {
        unreachable!("tutti::rmi: only scoped work is cancelled")
    }
}

/// A call whose method is a closure over the representative and its context,
/// named by its message type: the requests decoded from another rank
/// ([`decoded`], [`decoded_run`]).
struct Method<T, F> {
    message: &'static str,
    count: usize,
    method: F,
    _object: PhantomData<fn() -> T>,
}

impl<T, F, Fut> Method<T, F>
where
    T: crate::msg::Object,
    T::Context: HandlerContext,
    F: FnOnce(Box<T>, T::Context) -> Fut + Send + 'static,
    Fut: Future<Output = Returned> + Send + 'static,
{
    fn boxed(message: &'static str, count: usize, method: F) -> Box<dyn Call> {
        Box::new(Method {
            message,
            count,
            method,
            _object: PhantomData,
        })
    }
}

impl<T, F, Fut> Call for Method<T, F>
where
    T: crate::msg::Object,
    T::Context: HandlerContext,
    F: FnOnce(Box<T>, T::Context) -> Fut + Send + 'static,
    Fut: Future<Output = Returned> + Send + 'static,
{
    fn object(&self) -> TypeId {
        TypeId::of::<T>()
    }

    fn message(&self) -> &'static str {
        self.message
    }

    fn count(&self) -> usize {
        self.count
    }

    fn start(
        self: Box<Self>,
        rep: Rep,
        ctx: &Rmi,
        spare: &mut Spare,
        cx: &mut Context<'_>,
    ) -> Started<Returned> {
        run_method(rep, ctx, spare, cx, self.method)
    }
}

/// `msg` for `T`'s handler, as a call; its reply is a value.
pub(crate) fn invoke<T, M>(msg: M) -> Box<dyn Call>
where
    T: Handler<M>,
    T::Context: HandlerContext,
    M: Message,
{
    Box::new(Invoke::<T, M> {
        msg,
        _object: PhantomData,
    })
}

/// One request within the rank: the message alone (its name and count are
/// its type's), so that a call of a zero-sized message allocates nothing.
struct Invoke<T, M> {
    msg: M,
    _object: PhantomData<fn() -> T>,
}

impl<T, M> Call for Invoke<T, M>
where
    T: Handler<M>,
    T::Context: HandlerContext,
    M: Message,
{
    fn object(&self) -> TypeId {
        TypeId::of::<T>()
    }

    fn message(&self) -> &'static str {
        std::any::type_name::<M>()
    }

    fn start(
        self: Box<Self>,
        rep: Rep,
        ctx: &Rmi,
        spare: &mut Spare,
        cx: &mut Context<'_>,
    ) -> Started<Returned> {
        let msg = self.msg;
        run_method(
            rep,
            ctx,
            spare,
            cx,
            move |mut obj: Box<T>, mut ctx| async move {
                let reply = obj.handle(msg, &mut ctx).await;
                Returned {
                    rep: obj,
                    reply: MethodReply::Value(Box::new(reply)),
                }
            },
        )
    }
}

/// What every [`Call::start`] shares: takes the representative as a `T`,
/// makes the method's context, and starts `method` on both, in place. The
/// method owns all it uses (`'static`), so it runs safely wherever its
/// location's task goes, and hands back what it returns as its output.
#[inline]
pub(super) fn run_method<T, F, Fut>(
    rep: Rep,
    ctx: &Rmi,
    spare: &mut Spare,
    cx: &mut Context<'_>,
    method: F,
) -> Started<Returned>
where
    T: crate::msg::Object,
    T::Context: HandlerContext,
    F: FnOnce(Box<T>, T::Context) -> Fut,
    Fut: Future<Output = Returned> + Send + 'static,
{
    let Ok(obj) = rep.downcast::<T>() else {
        unreachable!("the caller checks the representative's type")
    };
    Running::start(method(obj, T::Context::from_location(ctx)), spare, cx)
}

/// A question that came from another rank, decoded by the object type's
/// [`Dispatch`](crate::msg::Dispatch) (its [`Object::remote`](crate::msg::Object::remote)
/// table) and named by its message type's stable name, as a call; its reply
/// is [`MethodReply::Encoded`].
pub(crate) fn decoded<T>(incoming: Incoming<T>, name: &'static str) -> Box<dyn Call>
where
    T: crate::msg::Object,
    T::Context: HandlerContext,
{
    let Incoming { envelope, reply } = incoming;
    let method = move |mut obj: Box<T>, mut ctx: T::Context| async move {
        envelope.handle(&mut obj, &mut ctx).await;
        let reply = match reply {
            Some(r) => MethodReply::Encoded(r.await),
            None => MethodReply::Nothing,
        };
        Returned { rep: obj, reply }
    };
    Method::boxed(name, 1, method)
}

/// A run of statements from another rank (one `Tell` frame), decoded by the
/// object type's [`Dispatch`](crate::msg::Dispatch) into one batch held by
/// value (no envelope per statement), as a call: executed as a [`RunOf`] is.
pub(crate) fn decoded_run<T>(batch: RunBatch<T>, name: &'static str) -> Box<dyn Call>
where
    T: crate::msg::Object,
    T::Context: HandlerContext,
{
    let RunBatch { msgs, run, len } = batch;
    let method = move |mut obj: Box<T>, mut ctx: T::Context| async move {
        run(msgs, &mut obj, &mut ctx).await;
        Returned {
            rep: obj,
            reply: MethodReply::Nothing,
        }
    };
    Method::boxed(name, len, method)
}

/// A run of statements of one message type for one object, held by value:
/// consecutive `async_rmi`s from one location to another of the same rank
/// (see `wire.rs`). Executed in one admission, one method after the other in
/// one future, with no lock or allocation per statement.
pub(crate) struct RunOf<T, M> {
    pub(crate) msgs: Vec<M>,
    _object: PhantomData<fn() -> T>,
}

impl<T, M> RunOf<T, M> {
    pub(crate) fn new(first: M, capacity: usize) -> Self {
        let mut msgs = Vec::with_capacity(capacity);
        msgs.push(first);
        RunOf {
            msgs,
            _object: PhantomData,
        }
    }
}

impl<T, M> Call for RunOf<T, M>
where
    T: Handler<M>,
    T::Context: HandlerContext,
    M: Message,
{
    fn object(&self) -> TypeId {
        TypeId::of::<T>()
    }

    fn message(&self) -> &'static str {
        std::any::type_name::<M>()
    }

    fn count(&self) -> usize {
        self.msgs.len()
    }

    fn start(
        self: Box<Self>,
        rep: Rep,
        ctx: &Rmi,
        spare: &mut Spare,
        cx: &mut Context<'_>,
    ) -> Started<Returned> {
        let msgs = self.msgs;
        run_method(
            rep,
            ctx,
            spare,
            cx,
            move |mut obj: Box<T>, mut ctx| async move {
                for m in msgs {
                    obj.handle(m, &mut ctx).await;
                }
                Returned {
                    rep: obj,
                    reply: MethodReply::Nothing,
                }
            },
        )
    }
}

/// A method call for the object registered as `object`; `corr` is 0 for an
/// `async_rmi`, else the number the caller's `sync_rmi` waits for.
pub(crate) struct Request {
    pub(crate) object: u32,
    pub(crate) corr: u64,
    pub(crate) call: Box<dyn Call>,
    /// For a `sync_rmi` issued by a method: the representatives held by the
    /// methods that wait, through `sync_rmi`s, for this request's reply.
    pub(crate) chain: Option<Arc<Chain>>,
}

/// One representative held by a method waiting in a `sync_rmi`, and the chain
/// that waits for that method's own request in turn.
pub(crate) struct Chain {
    pub(crate) location: usize,
    pub(crate) object: u32,
    pub(crate) parent: Option<Arc<Chain>>,
}

impl Chain {
    /// The chain as it travels across ranks: (location, object) links, innermost
    /// first.
    pub(crate) fn links(&self) -> Vec<(u32, u32)> {
        let mut out = Vec::new();
        let mut c = Some(self);
        while let Some(link) = c {
            out.push((link.location as u32, link.object));
            c = link.parent.as_deref();
        }
        out
    }

    /// Rebuilds a chain from its links (innermost first).
    pub(crate) fn from_links(links: &[(u32, u32)]) -> Option<Arc<Chain>> {
        links
            .iter()
            .rev()
            .fold(None, |parent, &(location, object)| {
                Some(Arc::new(Chain {
                    location: location as usize,
                    object,
                    parent,
                }))
            })
    }

    /// The objects held on `location` by methods waiting for this chain.
    pub(crate) fn held_on(&self, location: usize) -> impl Iterator<Item = u32> + '_ {
        let mut c = Some(self);
        std::iter::from_fn(move || {
            while let Some(link) = c {
                c = link.parent.as_deref();
                if link.location == location {
                    return Some(link.object);
                }
            }
            None
        })
    }
}

impl std::fmt::Display for Chain {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "object #{} on location {}", self.object, self.location)?;
        if let Some(p) = &self.parent {
            write!(f, " <- {p}")?;
        }
        Ok(())
    }
}

/// The reply to the `sync_rmi` numbered `corr`.
pub(crate) struct Response {
    pub(crate) corr: u64,
    pub(crate) reply: Box<dyn Any + Send>,
}
