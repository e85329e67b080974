//! The serving side of the core, once for every owner: the [`Target`] trait a
//! request is served to, an object served through its message table
//! ([`ServedObject`]) and where its requests go ([`Deliver`]: the one actor
//! adapter is its implementation for an actor's [`Addr`]), the counters
//! every serving owner keeps ([`ServeCounters`]), the one mapping from a reply
//! that never came to a refusal ([`refusal`]), and the functions that take an
//! arrival ([`receive`]) and serve a request frame ([`serve`]). An owner
//! ([`Server`]) supplies only what is its own: its targets, its control
//! messages, whether it serves a peer now, and how it tells a sender that a
//! statement was not delivered. The rules are in the [module
//! documentation](super), under "The serving side".

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

use super::{Conversation, Link, Received, Refusal};
use crate::actor::{Actor, Addr, AskError};
use crate::loom::{lock, AtomicU64, Mutex, Ordering};
use crate::msg::codec::{Format, Frame, FrameKind, Header};
use crate::msg::{Dispatch, Envelope, NoReply, Object, RemoteReply, ReplyError};

/// What a request is served to, its type erased: an exported actor, a
/// published object.
pub(crate) trait Target: Send + Sync {
    /// Decodes the `Tell` or `Ask` frame (its payload in `format`) and hands
    /// the request to the target; for an `Ask`, the reply to wait for. A
    /// message type the target does not take, or a payload that does not
    /// decode, is [`Refusal::Failed`] with the cause (bad bytes); a target
    /// that cannot take it now is [`Refusal::NoTarget`] or [`Refusal::Full`].
    fn take(&self, frame: &Frame<'_>, format: Format) -> Result<Option<RemoteReply>, Refusal>;

    /// Whether a question this target drops unanswered means that it has
    /// stopped: true for an actor, which drops its questions only as it stops
    /// (a stop request, a handler that panicked); false for an object that
    /// goes on after one call failed. See [`refusal`].
    fn dropped_means_stopped(&self) -> bool;

    /// The target's type (for errors and type checks).
    fn type_name(&self) -> &'static str;
}

/// Where a typed request for an object of type `O` goes: an actor's mailbox
/// (the one actor adapter, [`Addr`]), an RPC object's sequential group. It
/// takes the requests decoded from frames ([`ServedObject`]) and those of
/// callers in this process (an RPC local proxy: no bytes), and never waits
/// for room.
pub(crate) trait Deliver<O: Object>: Send + Sync {
    /// Hands `e` on; a full mailbox is [`Refusal::Full`], a target that has
    /// stopped [`Refusal::NoTarget`] (dropping `e` closes its reply slot).
    fn deliver(&self, e: Envelope<O>) -> Result<(), Refusal>;

    /// [`Target::dropped_means_stopped`] for what is delivered here.
    fn dropped_means_stopped(&self) -> bool;
}

/// The one actor adapter: an actor is served as it is — its requests queue in
/// its mailbox, in order with its local messages, and its own task handles
/// them.
impl<A: Actor> Deliver<A> for Addr<A> {
    fn deliver(&self, e: Envelope<A>) -> Result<(), Refusal> {
        self.enqueue(e).map_err(|(_, why)| match why {
            AskError::Full => Refusal::Full,
            _ => Refusal::NoTarget,
        })
    }

    /// An actor drops its questions only as it stops.
    fn dropped_means_stopped(&self) -> bool {
        true
    }
}

/// An object served from frames: its requests decoded by its message table
/// ([`Dispatch`]) and delivered by `D`.
pub(crate) struct ServedObject<O: Object, D> {
    dispatch: Dispatch<O>,
    deliver: D,
}

impl<O: Object, D: Deliver<O>> ServedObject<O, D> {
    pub(crate) fn new(dispatch: Dispatch<O>, deliver: D) -> Self {
        ServedObject { dispatch, deliver }
    }
}

impl<O: Object, D: Deliver<O>> Target for ServedObject<O, D> {
    fn take(&self, frame: &Frame<'_>, format: Format) -> Result<Option<RemoteReply>, Refusal> {
        let incoming = self
            .dispatch
            .incoming_in(frame, format)
            .map_err(|e| Refusal::Failed(e.to_string()))?;
        self.deliver.deliver(incoming.envelope)?;
        Ok(incoming.reply)
    }

    fn dropped_means_stopped(&self) -> bool {
        self.deliver.dropped_means_stopped()
    }

    fn type_name(&self) -> &'static str {
        std::any::type_name::<O>()
    }
}

/// The one mapping from a question's reply that never came (or could not be
/// encoded) to the refusal its asker gets:
///
/// | the reply | refusal |
/// |---|---|
/// | dropped ([`NoReply::Dropped`]) by a target that drops questions only as it stops (an actor) | `NoTarget` |
/// | dropped by a target that goes on (a published object whose handler panicked) | `Failed`, naming it |
/// | discarded by a full mailbox ([`NoReply::Overflowed`], the drop-oldest policy) | `Full` |
/// | not encodable | `Failed`, with the codec's cause |
///
/// Why `NoTarget` for an actor: a question that reaches an actor just after
/// it stopped is refused `NoTarget` (its mailbox is closed), and one queued
/// just before is dropped by the stop; the asker learns the same thing
/// whichever came first — as a local `ask` does, which reports
/// [`AskError::Stopped`] for both. Why not for an object that goes on: its
/// target is there, and the next call is served; "no such target" would be
/// false.
pub(crate) fn refusal(e: ReplyError, dropped_means_stopped: bool) -> Refusal {
    match e {
        ReplyError::NoReply(NoReply::Dropped) if dropped_means_stopped => Refusal::NoTarget,
        ReplyError::NoReply(NoReply::Overflowed) => Refusal::Full,
        e => Refusal::Failed(e.to_string()),
    }
}

/// What a serving owner counts: requests served, statements it could not
/// deliver, bytes it rejected and its own bytes rejected by peers, and the
/// last error seen. Every counter only grows.
#[derive(Default)]
pub(crate) struct ServeCounters {
    served: AtomicU64,
    dead_letters: AtomicU64,
    malformed: AtomicU64,
    rejected: AtomicU64,
    last_error: Mutex<Option<String>>,
}

/// A snapshot of [`ServeCounters`], for an owner's public stats.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct ServeStats {
    /// Requests from peers handed to a target.
    pub(crate) served: u64,
    /// Statements that arrived and could not be delivered.
    pub(crate) dead_letters: u64,
    /// Bytes rejected here under the bad-bytes policy.
    pub(crate) malformed: u64,
    /// Bytes sent from here that a peer rejected.
    pub(crate) rejected: u64,
    /// The last error noted.
    pub(crate) last_error: Option<String>,
}

impl ServeCounters {
    // Relaxed everywhere: counters are statistics; no other memory is
    // published through them.

    /// Counts a statement that could not be delivered.
    pub(crate) fn dead_letter(&self) {
        self.dead_letters.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts bytes rejected here (outside a conversation's frames: a
    /// refused handshake).
    pub(crate) fn malformed(&self) {
        self.malformed.fetch_add(1, Ordering::Relaxed);
    }

    /// Keeps `why` as the last error.
    pub(crate) fn note(&self, why: String) {
        *lock(&self.last_error) = Some(why);
    }

    pub(crate) fn snapshot(&self) -> ServeStats {
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        ServeStats {
            served: get(&self.served),
            dead_letters: get(&self.dead_letters),
            malformed: get(&self.malformed),
            rejected: get(&self.rejected),
            last_error: lock(&self.last_error).clone(),
        }
    }
}

impl fmt::Debug for ServeCounters {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.snapshot().fmt(f)
    }
}

/// The peers of a server's conversation.
pub(crate) type PeerOf<S> = <<S as Server>::Link as Link>::Peer;

/// An owner that serves requests: a distributed actors' node, an RPC endpoint.
/// It supplies what is its own; [`receive`] and [`serve`] do the rest.
pub(crate) trait Server: Send + Sync + Sized + 'static {
    /// What the owner's frames travel on.
    type Link: Link;

    /// The owner's end of the request/reply core.
    fn conversation(&self) -> &Conversation<Self::Link>;

    /// The owner's counters.
    fn counters(&self) -> &ServeCounters;

    /// The target numbered `id` (a frame header's `target`), if there is one.
    fn target(&self, id: u64) -> Option<Arc<dyn Target>>;

    /// Whether requests from `from` are served now; those that are not are
    /// dead letters, answered by nobody (a node that began leaving: its
    /// `Leaving` tells the asker).
    fn serves(&self, from: PeerOf<Self>) -> bool {
        let _ = from;
        true
    }

    /// One of the owner's own control messages (a `Control` frame other than
    /// the core's notice); the owner rejects what it does not know
    /// ([`reject`]).
    fn on_control(self: &Arc<Self>, from: PeerOf<Self>, frame: &Frame<'_>);

    /// A statement from `from` (`header`) that could not be delivered, for
    /// `why` (already counted as a dead letter): the owner tells the sender in
    /// its own way.
    fn undelivered(&self, from: PeerOf<Self>, header: &Header, why: Refusal);

    /// Sends the answer to question `corr` of `to`; an owner may withhold it
    /// (a peer it no longer sends to).
    fn answer(&self, to: PeerOf<Self>, corr: u64, answer: Result<&[u8], Refusal>) {
        let _ = self.conversation().answer(to, corr, answer);
    }
}

/// One arrival from `from` (its requests' payloads in `format`): answers are
/// filed by the core, requests served, the owner's control messages handed to
/// it, a peer's rejection notice and bytes rejected here counted and noted.
pub(crate) fn receive<S: Server>(server: &Arc<S>, from: PeerOf<S>, bytes: &[u8], format: Format) {
    let conv = server.conversation();
    let counters = server.counters();
    for r in conv.receive(from, bytes) {
        match r {
            Received::Request(frame) => serve(server, from, &frame, format),
            Received::Control(frame) => server.on_control(from, &frame),
            Received::Rejected(cause) => {
                counters.rejected.fetch_add(1, Ordering::Relaxed);
                counters.note(format!(
                    "{} rejected a message from here: {cause}",
                    conv.link().name(from)
                ));
            }
            Received::Answered(_) => {}
            Received::Bad(bad) => {
                counters.malformed.fetch_add(1, Ordering::Relaxed);
                counters.note(bad.to_string());
            }
        }
    }
}

/// Rejects bytes from `from` under the core's policy (`header`: the frame's,
/// if it parsed), counts them and notes the error.
pub(crate) fn reject<S: Server>(
    server: &S,
    from: PeerOf<S>,
    header: Option<&Header>,
    cause: impl Into<String>,
) {
    // Counted before the sender is told, so that a sender that waits for the
    // notice sees the count.
    server.counters().malformed.fetch_add(1, Ordering::Relaxed);
    let bad = server.conversation().reject(from, header, cause);
    server.counters().note(bad.to_string());
}

/// Serves one request frame (`Tell` or `Ask`) from `from`, its payload in
/// `format`: hands it to its target, then answers a question once the
/// target's reply is there, or refuses it; a statement that cannot be
/// delivered is a dead letter.
pub(crate) fn serve<S: Server>(
    server: &Arc<S>,
    from: PeerOf<S>,
    frame: &Frame<'_>,
    format: Format,
) {
    let h = *frame.header();
    let counters = server.counters();
    if !server.serves(from) {
        counters.dead_letter();
        return;
    }
    if h.kind == FrameKind::Tell && h.corr != 0 {
        let why = format!(
            "a run of {} requests in one frame (requests are served one per frame)",
            h.corr.saturating_add(1)
        );
        return reject(&**server, from, Some(&h), why);
    }
    let target = server.target(h.target);
    let taken = match &target {
        Some(t) => t.take(frame, format),
        None => Err(Refusal::NoTarget),
    };
    match (h.kind, taken) {
        // Bytes that do not decode as what they claim, or a message type the
        // target does not take: the core's policy for bad bytes.
        (_, Err(Refusal::Failed(why))) => reject(&**server, from, Some(&h), why),
        (FrameKind::Tell, Ok(_)) => {
            counters.served.fetch_add(1, Ordering::Relaxed);
        }
        (FrameKind::Tell, Err(why)) => {
            counters.dead_letter();
            server.undelivered(from, &h, why);
        }
        (_, Ok(Some(reply))) => {
            counters.served.fetch_add(1, Ordering::Relaxed);
            let stops = target.is_some_and(|t| t.dropped_means_stopped());
            Answering::start(Arc::clone(server), from, h.corr, stops, reply);
        }
        (_, Ok(None)) => {
            let why = Refusal::Failed("a question without a reply slot".into());
            server.answer(from, h.corr, Err(why));
        }
        (_, Err(why)) => server.answer(from, h.corr, Err(why)),
    }
}

/// Answers a question once its target has replied: the reply's own waker
/// sends the answer, from the task that replied — no task of its own, no hop
/// through the runtime's queues between the handler and the link.
struct Answering<S: Server> {
    server: Arc<S>,
    to: PeerOf<S>,
    corr: u64,
    /// The target's [`Target::dropped_means_stopped`].
    stops: bool,
    /// `None` once answered.
    reply: Mutex<Option<RemoteReply>>,
}

impl<S: Server> Answering<S> {
    fn start(server: Arc<S>, to: PeerOf<S>, corr: u64, stops: bool, reply: RemoteReply) {
        let a = Arc::new(Answering {
            server,
            to,
            corr,
            stops,
            reply: Mutex::new(Some(reply)),
        });
        a.try_answer();
    }

    /// Polls the reply (registering this as its waker) and answers once it is
    /// there.
    fn try_answer(self: &Arc<Self>) {
        let mut slot = lock(&self.reply);
        let Some(reply) = slot.as_mut() else {
            return;
        };
        let waker = Waker::from(Arc::clone(self));
        let out = match Pin::new(reply).poll(&mut Context::from_waker(&waker)) {
            Poll::Pending => return,
            Poll::Ready(out) => out,
        };
        *slot = None;
        drop(slot);
        let bytes;
        let answer = match out {
            Ok(b) => {
                bytes = b;
                Ok(&bytes[..])
            }
            Err(e) => Err(refusal(e, self.stops)),
        };
        self.server.answer(self.to, self.corr, answer);
    }
}

impl<S: Server> Wake for Answering<S> {
    fn wake(self: Arc<Self>) {
        self.try_answer();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.try_answer();
    }
}
