//! The seam for remote handling: [`Dispatch<O>`] turns a frame's bytes into the same
//! `Handler` call a local `tell`/`ask` makes, and the reply back into bytes. The design
//! and an example are on [`Dispatch`].

use std::any::Any;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use serde::Serialize;

use super::codec::{self, CodecError, Format, Frame, FrameKind};
use super::registry::{Entry, Registry, RegistryError};
use super::{Envelope, Handle, Handler, MsgId, NoReply, Object, Remote, Reply};

/// Decodes a `Tell` frame's payload (in a format) into an envelope.
type TellFn<O> = fn(&Frame<'_>, Format) -> Result<Envelope<O>, CodecError>;
/// Decodes an `Ask` frame's payload into an envelope with a reply slot (the reply
/// to be encoded in the same format).
type AskFn<O> = fn(&Frame<'_>, Format) -> Result<(Envelope<O>, RemoteReply), CodecError>;
type BatchFn =
    for<'b> fn(&'b [u8], u64, u32) -> (Box<dyn Any + Send>, usize, &'b [u8], Option<CodecError>);
/// Runs a decoded batch (a `Vec<M>`, type-erased) on an object: each message's
/// handler in turn, as one future.
pub(crate) type BatchRunFn<O> = for<'a> fn(
    Box<dyn Any + Send>,
    &'a mut O,
    &'a mut <O as Object>::Context,
) -> Pin<Box<dyn Future<Output = ()> + Send + 'a>>;

/// A run of messages of one type decoded for `O` in one go: the messages,
/// held by value (type-erased), and how to run them.
pub(crate) struct RunBatch<O: Object> {
    /// A `Vec<M>`.
    pub(crate) msgs: Box<dyn Any + Send>,
    /// How many messages it holds.
    pub(crate) len: usize,
    pub(crate) run: BatchRunFn<O>,
}

/// The message of `frame`, its payload in `format`.
fn decode<M: Remote>(frame: &Frame<'_>, format: Format) -> Result<M, CodecError> {
    match format {
        // The frame's own decoder keeps the frame's depth limit.
        Format::Binary => frame.decode::<M>(),
        Format::Json => format.decode::<M>(frame.payload()),
    }
}

fn tell<O: Handler<M>, M: Remote>(
    frame: &Frame<'_>,
    format: Format,
) -> Result<Envelope<O>, CodecError> {
    Ok(Envelope::new(decode::<M>(frame, format)?))
}

fn batch<M: Remote>(
    mut bytes: &[u8],
    count: u64,
    max_depth: u32,
) -> (Box<dyn Any + Send>, usize, &[u8], Option<CodecError>) {
    let mut msgs: Vec<M> = Vec::with_capacity(count.min(4096) as usize);
    let mut bad = None;
    for _ in 0..count {
        match codec::decode_prefix::<M>(bytes, max_depth) {
            Ok((m, rest)) => {
                msgs.push(m);
                bytes = rest;
            }
            Err(e) => {
                bad = Some(e);
                break;
            }
        }
    }
    let n = msgs.len();
    (Box::new(msgs), n, bytes, bad)
}

fn run_batch<'a, O: Handler<M>, M: Remote>(
    msgs: Box<dyn Any + Send>,
    obj: &'a mut O,
    ctx: &'a mut O::Context,
) -> Pin<Box<dyn Future<Output = ()> + Send + 'a>> {
    let msgs: Vec<M> = match msgs.downcast::<Vec<M>>() {
        Ok(v) => *v,
        Err(_) => unreachable!("a batch is run by the route that decoded it"),
    };
    Box::pin(async move {
        for m in msgs {
            obj.handle(m, ctx).await;
        }
    })
}

fn ask<O: Handler<M>, M: Remote>(
    frame: &Frame<'_>,
    format: Format,
) -> Result<(Envelope<O>, RemoteReply), CodecError> {
    let (envelope, reply) = Envelope::with_reply(decode::<M>(frame, format)?);
    Ok((envelope, RemoteReply::new(reply, format)))
}

/// One message type an object handles.
struct Route<O: Object> {
    entry: Entry,
    tell: TellFn<O>,
    ask: AskFn<O>,
    batch: BatchFn,
    run_batch: BatchRunFn<O>,
}

impl<O: Object> Clone for Route<O> {
    fn clone(&self) -> Self {
        Route {
            entry: self.entry,
            tell: self.tell,
            ask: self.ask,
            batch: self.batch,
            run_batch: self.run_batch,
        }
    }
}

/// The remote handler table of object type `O`: from a frame's bytes to the same
/// `Handler` that a local `tell`/`ask` runs, and from its reply back to bytes.
///
/// A `Dispatch<O>` is a table, built once per object type `O`, from [`MsgId`] to two
/// functions monomorphised for the message type: one that decodes a `Tell` payload into
/// an [`Envelope<O>`], one that decodes an `Ask` payload into an envelope with a reply
/// slot plus a [`RemoteReply`] — a future that waits for the handler's answer and
/// encodes it. A transport then either
///
/// * queues the envelope where the object lives — an actor's mailbox — so remote
///   messages are handled in order with local ones, one at a time, by the actor's own
///   loop ([`Dispatch::incoming`]); or
/// * applies it at once to an object it holds (`&mut O`), e.g. a registered object of a
///   location, getting a future of the encoded reply ([`Dispatch::handle`]).
///
/// Either way the message is decoded once, handled by `O`'s `Handler<M>` exactly as a
/// local message (async handlers may await), and the reply is encoded once. Errors are
/// values: an id the object does not handle, a payload that does not decode, a handler
/// that never replied ([`NoReply`]) or a reply that does not encode ([`ReplyError`]) —
/// for an `Ask`, the transport answers each of them with a `Fault` frame, so the asker
/// gets an error instead of waiting forever. A handler that panics unwinds out of the
/// future returned by [`Dispatch::handle`]; the transport catches it and sends a
/// `Fault` too (an actor's loop turns it into [`NoReply::Dropped`] itself).
///
/// ```
/// use serde::{Deserialize, Serialize};
/// use tutti::msg::codec::{decode_frame, encode_frame, encode_raw_frame, FrameKind, Header};
/// use tutti::msg::{Dispatch, Handler, Message, Object, Remote};
///
/// #[derive(Serialize, Deserialize)]
/// struct Deposit(u64);
/// impl Message for Deposit { type Reply = (); }
/// impl Remote for Deposit { const NAME: &'static str = "bank.Deposit"; }
///
/// #[derive(Serialize, Deserialize)]
/// struct Balance;
/// impl Message for Balance { type Reply = u64; }
/// impl Remote for Balance { const NAME: &'static str = "bank.Balance"; }
///
/// #[derive(Default)]
/// struct Account(u64);
/// impl Object for Account { type Context = (); }
/// impl Handler<Deposit> for Account {
///     async fn handle(&mut self, m: Deposit, _: &mut ()) { self.0 += m.0; }
/// }
/// impl Handler<Balance> for Account {
///     async fn handle(&mut self, _: Balance, _: &mut ()) -> u64 {
///         tutti::runtime::yield_now().await; // handlers may await
///         self.0
///     }
/// }
///
/// // Once per object type, on every rank:
/// let mut table = Dispatch::<Account>::new();
/// table.register::<Deposit>()?.register::<Balance>()?;
///
/// // The asking rank: a tell and an ask in one batch.
/// let mut batch = Vec::new();
/// encode_frame(&Header { msg: Deposit::ID, ..Header::new(FrameKind::Tell) }, &Deposit(70), &mut batch)?;
/// encode_frame(&Header { msg: Balance::ID, corr: 1, ..Header::new(FrameKind::Ask) }, &Balance, &mut batch)?;
///
/// // The receiving rank: decode each frame, run the handler, frame the reply.
/// let mut account = Account::default();
/// let mut replies = Vec::new();
/// for frame in tutti::msg::codec::frames(&batch) {
///     let frame = frame?;
///     let reply = tutti::block_on(table.handle(&mut account, &mut (), &frame)?)?;
///     if let Some(bytes) = reply {
///         let h = Header { corr: frame.header().corr, msg: frame.header().msg, ..Header::new(FrameKind::Reply) };
///         encode_raw_frame(&h, &bytes, &mut replies)?;
///     }
/// }
///
/// // Back at the asker: the reply to question 1.
/// let reply = decode_frame(&replies)?;
/// assert_eq!(reply.header().corr, 1);
/// assert_eq!(reply.decode::<<Balance as Message>::Reply>()?, 70);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Dispatch<O: Object> {
    /// Sorted by id.
    routes: Vec<Route<O>>,
}

impl<O: Object> Clone for Dispatch<O> {
    fn clone(&self) -> Self {
        Dispatch {
            routes: self.routes.clone(),
        }
    }
}

impl<O: Object> Default for Dispatch<O> {
    fn default() -> Self {
        Dispatch::new()
    }
}

impl<O: Object> fmt::Debug for Dispatch<O> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Dispatch")
            .field("object", &std::any::type_name::<O>())
            .field(
                "messages",
                &self
                    .routes
                    .iter()
                    .map(|r| r.entry.name())
                    .collect::<Vec<_>>(),
            )
            .finish()
    }
}

/// A message decoded for an object, ready to be queued or handled.
pub struct Incoming<O: Object> {
    /// The message, typed for `O`'s handler.
    pub envelope: Envelope<O>,
    /// For an `Ask`: the encoded reply, once the envelope has been handled. `None`
    /// for a `Tell`.
    pub reply: Option<RemoteReply>,
}

impl<O: Object> fmt::Debug for Incoming<O> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Incoming")
            .field("envelope", &self.envelope)
            .field("reply", &self.reply)
            .finish()
    }
}

impl<O: Object> Dispatch<O> {
    /// An empty table.
    pub fn new() -> Dispatch<O> {
        Dispatch { routes: Vec::new() }
    }

    /// Adds message type `M`, which `O` handles; chains with `?`. Registering a type
    /// twice is harmless; two types with one id are an error naming both.
    ///
    /// ```compile_fail
    /// # use serde::{Deserialize, Serialize};
    /// # use tutti::msg::{Dispatch, Message, Object, Remote};
    /// #[derive(Serialize, Deserialize)] struct Ping;
    /// impl Message for Ping { type Reply = (); }
    /// impl Remote for Ping { const NAME: &'static str = "Ping"; }
    /// struct Deaf;
    /// impl Object for Deaf { type Context = (); }
    /// Dispatch::<Deaf>::new().register::<Ping>(); // Deaf does not handle Ping
    /// ```
    pub fn register<M: Remote>(&mut self) -> Result<&mut Dispatch<O>, RegistryError>
    where
        O: Handler<M>,
    {
        let route = Route {
            entry: Entry::of::<M>(),
            tell: tell::<O, M>,
            ask: ask::<O, M>,
            batch: batch::<M>,
            run_batch: run_batch::<O, M>,
        };
        // The same rules as the world-wide registry.
        let mut check = Registry::new();
        for r in &self.routes {
            check.insert(r.entry)?;
        }
        check.insert(route.entry)?;
        match self.routes.binary_search_by_key(&M::ID, |r| r.entry.id()) {
            Ok(_) => {}
            Err(i) => self.routes.insert(i, route),
        }
        Ok(self)
    }

    fn route(&self, id: MsgId) -> Option<&Route<O>> {
        self.routes
            .binary_search_by_key(&id, |r| r.entry.id())
            .ok()
            .map(|i| &self.routes[i])
    }

    /// Whether `O` handles the message type `id` (remotely).
    pub fn accepts(&self, id: MsgId) -> bool {
        self.route(id).is_some()
    }

    /// The message types in the table: (id, stable name), sorted by id.
    pub fn message_types(&self) -> impl Iterator<Item = (MsgId, &'static str)> + '_ {
        self.routes.iter().map(|r| (r.entry.id(), r.entry.name()))
    }

    /// Adds every message type of the table to `registry` (the one whose digest the
    /// ranks compare at start-up).
    pub fn register_into(&self, registry: &mut Registry) -> Result<(), RegistryError> {
        for r in &self.routes {
            registry.insert(r.entry)?;
        }
        Ok(())
    }

    /// Decodes a `Tell` or `Ask` frame into a message for `O`: its envelope, and for
    /// an `Ask` the [`RemoteReply`] that yields the encoded answer once the envelope
    /// has been handled (or [`NoReply`] if it is dropped unhandled).
    ///
    /// For transports that queue messages where the object lives (an actor's mailbox).
    pub fn incoming(&self, frame: &Frame<'_>) -> Result<Incoming<O>, DispatchError> {
        self.incoming_in(frame, Format::Binary)
    }

    /// [`incoming`](Self::incoming) for a payload in `format`; the reply is
    /// encoded in `format` too (an RPC connection's format).
    ///
    /// ```
    /// use serde::{Deserialize, Serialize};
    /// use tutti::msg::codec::{encode_raw_frame, decode_frame, Format, FrameKind, Header};
    /// use tutti::msg::{Dispatch, Handler, Message, Object, Remote};
    ///
    /// #[derive(Serialize, Deserialize)]
    /// struct Double(u32);
    /// impl Message for Double { type Reply = u32; }
    /// impl Remote for Double { const NAME: &'static str = "doc.Double"; }
    /// struct Doubler;
    /// impl Object for Doubler { type Context = (); }
    /// impl Handler<Double> for Doubler {
    ///     async fn handle(&mut self, m: Double, _: &mut ()) -> u32 { 2 * m.0 }
    /// }
    ///
    /// let mut table = Dispatch::<Doubler>::new();
    /// table.register::<Double>()?;
    /// let mut buf = Vec::new();
    /// let h = Header { msg: Double::ID, corr: 1, ..Header::new(FrameKind::Ask) };
    /// encode_raw_frame(&h, b"21", &mut buf)?;
    /// let incoming = table.incoming_in(&decode_frame(&buf)?, Format::Json)?;
    /// tutti::block_on(incoming.envelope.handle(&mut Doubler, &mut ()));
    /// assert_eq!(tutti::block_on(incoming.reply.unwrap())?, b"42");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn incoming_in(
        &self,
        frame: &Frame<'_>,
        format: Format,
    ) -> Result<Incoming<O>, DispatchError> {
        let header = frame.header();
        let route = self.route(header.msg).ok_or(DispatchError::Unhandled {
            id: header.msg,
            object: std::any::type_name::<O>(),
        })?;
        let decode_error = |error| DispatchError::Decode {
            name: route.entry.name(),
            error,
        };
        match header.kind {
            FrameKind::Tell => Ok(Incoming {
                envelope: (route.tell)(frame, format).map_err(decode_error)?,
                reply: None,
            }),
            FrameKind::Ask => {
                let (envelope, reply) = (route.ask)(frame, format).map_err(decode_error)?;
                Ok(Incoming {
                    envelope,
                    reply: Some(reply),
                })
            }
            kind => Err(DispatchError::NotAMessage(kind)),
        }
    }

    /// Decodes `count` messages of type `id`, each encoded after the other at
    /// the start of `bytes` (a run of statements), into one [`RunBatch`] held by
    /// value: no envelope per message. Returns the batch of the messages
    /// before the first that does not decode (with that error), and the bytes
    /// after the last decoded.
    #[allow(clippy::type_complexity)]
    pub(crate) fn batch<'b>(
        &self,
        id: MsgId,
        bytes: &'b [u8],
        count: u64,
        max_depth: u32,
    ) -> Result<(RunBatch<O>, &'b [u8], Option<DispatchError>), DispatchError> {
        let route = self.route(id).ok_or(DispatchError::Unhandled {
            id,
            object: std::any::type_name::<O>(),
        })?;
        let (msgs, len, rest, bad) = (route.batch)(bytes, count, max_depth);
        let bad = bad.map(|error| DispatchError::Decode {
            name: route.entry.name(),
            error,
        });
        Ok((
            RunBatch {
                msgs,
                len,
                run: route.run_batch,
            },
            rest,
            bad,
        ))
    }

    /// The stable name of message type `id`, if the table has it.
    pub(crate) fn name_of(&self, id: MsgId) -> Option<&'static str> {
        self.route(id).map(|r| r.entry.name())
    }

    /// Decodes a `Tell` or `Ask` frame and applies it to `obj` with `ctx`: a future
    /// that runs `O`'s handler and yields the encoded reply (`Some` for an `Ask`,
    /// `None` for a `Tell`).
    ///
    /// The frame is decoded before this returns, so a bad frame is an error at once
    /// and the future borrows only `obj` and `ctx`. The handler runs in place, without
    /// an allocation for its future (as [`Envelope::handle`]).
    pub fn handle<'a>(
        &self,
        obj: &'a mut O,
        ctx: &'a mut O::Context,
        frame: &Frame<'_>,
    ) -> Result<Dispatched<'a>, DispatchError> {
        let Incoming { envelope, reply } = self.incoming(frame)?;
        Ok(Dispatched {
            handle: Some(envelope.handle(obj, ctx)),
            reply,
        })
    }
}

/// Why a frame could not be dispatched to an object.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum DispatchError {
    /// Only `Tell` and `Ask` frames carry messages for objects.
    NotAMessage(FrameKind),
    /// The object type has no handler for this message id (in its [`Dispatch`]).
    Unhandled {
        /// The frame's message id.
        id: MsgId,
        /// The object type (diagnostic name).
        object: &'static str,
    },
    /// The payload is not a valid value of the message type.
    Decode {
        /// The message type's stable name.
        name: &'static str,
        /// What was wrong.
        error: CodecError,
    },
}

/// The words of [`DispatchError::Unhandled`]'s text that a client recognises in a
/// server's fault (`rpc::method_error`): the fault crosses the wire as text.
pub(crate) const UNHANDLED_MARK: &str = "handles no message type with id";

impl fmt::Display for DispatchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DispatchError::NotAMessage(kind) => {
                write!(f, "a {kind:?} frame carries no message for an object")
            }
            DispatchError::Unhandled { id, object } => {
                write!(f, "`{object}` {UNHANDLED_MARK} {id}")
            }
            DispatchError::Decode { name, error } => {
                write!(f, "cannot decode a \"{name}\" message: {error}")
            }
        }
    }
}

impl std::error::Error for DispatchError {}

/// Why a remote question got no encoded answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReplyError {
    /// The handler never replied: the message was dropped unhandled, or the handler
    /// panicked or was cancelled.
    NoReply(NoReply),
    /// The reply could not be encoded.
    Encode(CodecError),
}

impl fmt::Display for ReplyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReplyError::NoReply(n) => write!(f, "no reply: {n}"),
            ReplyError::Encode(e) => write!(f, "the reply could not be sent: {e}"),
        }
    }
}

impl std::error::Error for ReplyError {}

/// A reply slot with its type erased: polls for the reply and encodes it.
trait EncodeReply: Send {
    fn poll_encoded(
        &mut self,
        cx: &mut Context<'_>,
        format: Format,
    ) -> Poll<Result<Vec<u8>, ReplyError>>;
}

impl<R: Serialize + Send + 'static> EncodeReply for Reply<R> {
    fn poll_encoded(
        &mut self,
        cx: &mut Context<'_>,
        format: Format,
    ) -> Poll<Result<Vec<u8>, ReplyError>> {
        Poll::Ready(match ready!(Pin::new(self).poll(cx)) {
            Ok(value) => {
                let mut out = Vec::new();
                format
                    .encode(&value, &mut out)
                    .map(|()| out)
                    .map_err(ReplyError::Encode)
            }
            Err(no) => Err(ReplyError::NoReply(no)),
        })
    }
}

/// The answer to a remote question, encoded: a future that completes once the
/// question's envelope has been handled (or dropped unhandled).
///
/// Made by [`Dispatch::incoming`] for `Ask` frames; its bytes become the payload of the
/// `Reply` frame ([`encode_raw_frame`](super::codec::encode_raw_frame)), its error a `Fault`.
#[must_use = "a RemoteReply does nothing unless awaited"]
pub struct RemoteReply {
    inner: Box<dyn EncodeReply>,
    format: Format,
}

impl RemoteReply {
    fn new<R: Serialize + Send + 'static>(reply: Reply<R>, format: Format) -> RemoteReply {
        RemoteReply {
            inner: Box::new(reply),
            format,
        }
    }
}

impl Future for RemoteReply {
    type Output = Result<Vec<u8>, ReplyError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let format = self.format;
        self.inner.poll_encoded(cx, format)
    }
}

impl fmt::Debug for RemoteReply {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RemoteReply").finish_non_exhaustive()
    }
}

/// A remote message being handled by a borrowed object: runs the handler, then yields
/// the encoded reply (`Some` for an `Ask`, `None` for a `Tell`). Made by
/// [`Dispatch::handle`].
#[must_use = "a handler does nothing unless awaited"]
pub struct Dispatched<'a> {
    handle: Option<Handle<'a>>,
    reply: Option<RemoteReply>,
}

impl Future for Dispatched<'_> {
    type Output = Result<Option<Vec<u8>>, ReplyError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        if let Some(handle) = &mut this.handle {
            ready!(Pin::new(handle).poll(cx));
            this.handle = None;
        }
        match &mut this.reply {
            None => Poll::Ready(Ok(None)),
            Some(reply) => Pin::new(reply).poll(cx).map(|r| r.map(Some)),
        }
    }
}

impl fmt::Debug for Dispatched<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Dispatched")
            .field("handled", &self.handle.is_none())
            .field("asks", &self.reply.is_some())
            .finish()
    }
}

#[cfg(all(test, not(loom)))]
mod tests;
