//! What travels between locations: a [`Request`] (a method call on a registered
//! object, its message type erased) and, for a `sync_rmi`, a [`Response`].
//! Between locations of one rank they move as typed values; across ranks as
//! frames of the request/reply core (see `wire.rs`), decoded into a [`Decoded`]
//! call on arrival.

use std::any::{Any, TypeId};
use std::future::Future;
use std::marker::PhantomData;
use std::sync::Arc;
use std::task::Context;

use super::{HandlerContext, Location};
use crate::msg::RunBatch;
use crate::msg::{Envelope, Handler, Message, RemoteReply, ReplyError, Running, Spare};

/// A representative, type-erased while it sits in its location's table.
pub(crate) type Rep = Box<dyn Any + Send>;

/// Where a method leaves the representative and its reply when it returns.
pub(crate) type Outcome = Option<(Rep, Box<dyn Any + Send>)>;

/// The caller's [`Outcome`] slot, as the method's future holds it.
struct OutSlot(*mut Outcome);

// SAFETY: the slot belongs to the caller's (`Send`) future, which polls the method's
// future and does not touch the slot until that future has completed or been dropped
// (the contract of `Call::start`).
unsafe impl Send for OutSlot {}

impl OutSlot {
    /// Leaves the method's outcome (by value, so the future holds the whole slot).
    fn put(self, rep: Rep, reply: Box<dyn Any + Send>) {
        // SAFETY: the slot is valid and ours until the future completes (see above).
        unsafe { *self.0 = Some((rep, reply)) }
    }
}

/// One method call with its message; `T` is the object type.
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

    /// Starts the handler on `rep` (whose type is `object()`) in a reusable block
    /// (`spare`'s, else one of the thread's) and polls it once, in place. When the
    /// handler returns, the representative and the reply are left in `*out`.
    /// Returns the method if it is still running (its first poll was pending).
    ///
    /// # Safety
    /// `out` must stay valid, and not be used by anyone else, until the returned
    /// [`Running`] has completed or been dropped (or, for `None`, until `start`
    /// returns).
    unsafe fn start(
        self: Box<Self>,
        rep: Rep,
        ctx: &Location,
        out: *mut Outcome,
        spare: &mut Spare,
        cx: &mut Context<'_>,
    ) -> Option<Running>;
}

/// `Call` for object type `T` and message `M`.
pub(crate) struct Invoke<T, M> {
    pub(crate) msg: M,
    _object: PhantomData<fn() -> T>,
}

impl<T, M> Invoke<T, M> {
    pub(crate) fn new(msg: M) -> Self {
        Invoke {
            msg,
            _object: PhantomData,
        }
    }
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

    unsafe fn start(
        self: Box<Self>,
        rep: Rep,
        ctx: &Location,
        out: *mut Outcome,
        spare: &mut Spare,
        cx: &mut Context<'_>,
    ) -> Option<Running> {
        // SAFETY: passed on from the caller.
        unsafe { invoke::<T, M>(self.msg, rep, ctx, out, spare, cx) }
    }
}

/// [`Invoke::start`] without the box: the handler of `M` on `rep`, a `T`
/// (also the self-request fast path).
///
/// # Safety
/// As [`Call::start`] (`out`'s validity).
pub(crate) unsafe fn invoke<T, M>(
    msg: M,
    rep: Rep,
    ctx: &Location,
    out: *mut Outcome,
    spare: &mut Spare,
    cx: &mut Context<'_>,
) -> Option<Running>
where
    T: Handler<M>,
    T::Context: HandlerContext,
    M: Message,
{
    let method = move |mut obj: Box<T>, mut ctx: T::Context| async move {
        let reply = obj.handle(msg, &mut ctx).await;
        (obj, Box::new(reply) as Box<dyn Any + Send>)
    };
    // SAFETY: passed on from the caller.
    unsafe { run_method(rep, ctx, out, spare, cx, method) }
}

/// The part every [`Call::start`] shares: takes the representative as a `T`,
/// makes the method's context, starts `method` on both in a reusable block and
/// leaves the representative and the reply it returns in `*out`.
///
/// # Safety
/// As [`Call::start`] (`out`'s validity).
unsafe fn run_method<T, F, Fut>(
    rep: Rep,
    ctx: &Location,
    out: *mut Outcome,
    spare: &mut Spare,
    cx: &mut Context<'_>,
    method: F,
) -> Option<Running>
where
    T: crate::msg::Object,
    T::Context: HandlerContext,
    F: FnOnce(Box<T>, T::Context) -> Fut,
    Fut: Future<Output = (Box<T>, Box<dyn Any + Send>)> + Send,
{
    let Ok(obj) = rep.downcast::<T>() else {
        unreachable!("the caller checks the representative's type")
    };
    let running = method(obj, T::Context::from_location(ctx));
    let out = OutSlot(out);
    let method = async move {
        let (obj, reply) = running.await;
        out.put(obj as Rep, reply);
    };
    // SAFETY: the future borrows nothing but `out`, valid as the caller promises.
    unsafe { Running::run_with(method, spare, cx) }
}

/// A request that came from another rank, decoded by the object type's
/// [`Dispatch`](crate::msg::Dispatch) (its [`Object::remote`](crate::msg::Object::remote)
/// table). Its reply is [`Answer`]: the encoded reply for an `Ask`.
pub(crate) struct Decoded<T: crate::msg::Object> {
    pub(crate) envelope: Envelope<T>,
    pub(crate) reply: Option<RemoteReply>,
    /// The message type's stable name.
    pub(crate) name: &'static str,
}

/// What a [`Decoded`] call yields: for an `Ask`, the encoded reply (or why there
/// is none); `None` for a `Tell`.
pub(crate) struct Answer(pub(crate) Option<Result<Vec<u8>, ReplyError>>);

impl<T> Call for Decoded<T>
where
    T: crate::msg::Object,
    T::Context: HandlerContext,
{
    fn object(&self) -> TypeId {
        TypeId::of::<T>()
    }

    fn message(&self) -> &'static str {
        self.name
    }

    unsafe fn start(
        self: Box<Self>,
        rep: Rep,
        ctx: &Location,
        out: *mut Outcome,
        spare: &mut Spare,
        cx: &mut Context<'_>,
    ) -> Option<Running> {
        let Decoded {
            envelope, reply, ..
        } = *self;
        let method = move |mut obj: Box<T>, mut ctx: T::Context| async move {
            envelope.handle(&mut obj, &mut ctx).await;
            let answer = match reply {
                Some(r) => Answer(Some(r.await)),
                None => Answer(None),
            };
            (obj, Box::new(answer) as Box<dyn Any + Send>)
        };
        // SAFETY: passed on from the caller.
        unsafe { run_method(rep, ctx, out, spare, cx, method) }
    }
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

    unsafe fn start(
        self: Box<Self>,
        rep: Rep,
        ctx: &Location,
        out: *mut Outcome,
        spare: &mut Spare,
        cx: &mut Context<'_>,
    ) -> Option<Running> {
        let msgs = self.msgs;
        let method = move |mut obj: Box<T>, mut ctx: T::Context| async move {
            for m in msgs {
                obj.handle(m, &mut ctx).await;
            }
            (obj, Box::new(()) as Box<dyn Any + Send>)
        };
        // SAFETY: passed on from the caller.
        unsafe { run_method(rep, ctx, out, spare, cx, method) }
    }
}

/// A run of statements from another rank (one `Tell` frame), decoded by the
/// object type's [`Dispatch`](crate::msg::Dispatch) into one batch held by
/// value (no envelope per statement): executed as a [`RunOf`] is.
pub(crate) struct DecodedRun<T: crate::msg::Object> {
    pub(crate) batch: RunBatch<T>,
    /// The message type's stable name.
    pub(crate) name: &'static str,
}

impl<T> Call for DecodedRun<T>
where
    T: crate::msg::Object,
    T::Context: HandlerContext,
{
    fn object(&self) -> TypeId {
        TypeId::of::<T>()
    }

    fn message(&self) -> &'static str {
        self.name
    }

    fn count(&self) -> usize {
        self.batch.len
    }

    unsafe fn start(
        self: Box<Self>,
        rep: Rep,
        ctx: &Location,
        out: *mut Outcome,
        spare: &mut Spare,
        cx: &mut Context<'_>,
    ) -> Option<Running> {
        let RunBatch { msgs, run, .. } = self.batch;
        let method = move |mut obj: Box<T>, mut ctx: T::Context| async move {
            run(msgs, &mut obj, &mut ctx).await;
            (obj, Box::new(()) as Box<dyn Any + Send>)
        };
        // SAFETY: passed on from the caller.
        unsafe { run_method(rep, ctx, out, spare, cx, method) }
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
