//! Layer 2: the message core — message types, handlers, envelopes and reply slots.
//!
//! Everything in tutti that receives messages dispatches through this module: actors
//! today ([`crate::actor`]), distributed objects (`async_rmi`/`sync_rmi`) and RPC-published
//! objects later. It knows nothing about mailboxes, tasks or addresses.
//!
//! # The handler model
//!
//! * A **message** is a Rust type implementing [`Message`], whose associated
//!   [`Reply`](Message::Reply) type is what answering it produces (`()` for a statement).
//! * An **object** ([`Object`]) is state that messages are applied to, together with the
//!   type of context its handlers get (for an actor, [`actor::Context`](crate::actor::Context)).
//! * The object accepts message `M` by implementing [`Handler<M>`]: one `async fn` per
//!   message type, taking `&mut self`, the message by value and `&mut` context, returning
//!   `M::Reply`. One object implements as many handlers as it accepts message types; the
//!   type system checks at the sender that the receiver handles what is sent.
//!
//! Handlers are `async` so that they can wait — ask another actor, receive from a channel,
//! sleep — without blocking a worker. A handler that never awaits costs nothing for it:
//! its future is polled once and is ready. While a handler waits it keeps `&mut self`,
//! so the object still handles **one message at a time with exclusive access**; whoever
//! drives it (the actor loop) lets new messages queue meanwhile.
//!
//! The future is `Send` (checked at the `impl`), since the task running it may move
//! between workers whenever it is woken.
//!
//! ```
//! use tutti::msg::{Envelope, Handler, Message, Object};
//!
//! struct Get(&'static str);
//! impl Message for Get { type Reply = Option<u64>; }
//! struct Put(&'static str, u64);
//! impl Message for Put { type Reply = (); }
//!
//! #[derive(Default)]
//! struct Store(std::collections::HashMap<&'static str, u64>);
//! impl Object for Store { type Context = (); }
//! impl Handler<Get> for Store {
//!     async fn handle(&mut self, m: Get, _: &mut ()) -> Option<u64> { self.0.get(m.0).copied() }
//! }
//! impl Handler<Put> for Store {
//!     async fn handle(&mut self, m: Put, _: &mut ()) { self.0.insert(m.0, m.1); }
//! }
//!
//! let mut store = Store::default();
//! let (get, reply) = Envelope::<Store>::with_reply(Get("x"));
//! tutti::block_on(async {
//!     Envelope::new(Put("x", 7)).handle(&mut store, &mut ()).await;
//!     get.handle(&mut store, &mut ()).await;
//! });
//! assert_eq!(tutti::block_on(reply), Ok(Some(7)));
//! ```
//!
//! # Envelopes and reply slots
//!
//! An [`Envelope<O>`] is one message for an `O` with its type erased, so one queue can
//! hold every message type `O` accepts. It is a single allocation holding an intrusive
//! queue link, a pointer to a static table of functions monomorphised for the message
//! type, the message, and — for a question — the reply slot whose other half, a
//! [`Reply`] future, the asker awaits. Applying an envelope ([`Envelope::handle`]) moves
//! the message out, runs the handler and routes its result into the slot. Dropping an
//! unhandled envelope closes the slot: the asker gets [`NoReply`], never a hang.
//!
//! The handler's future is not boxed: it is moved into a reusable block (per thread, or
//! kept by the actor loop across a turn) and polled there (see `running.rs`), so
//! handling a message allocates nothing in steady
//! state. A `tell` is one allocation (the envelope, freed before the handler runs) and
//! an `ask` is one allocation (envelope and reply slot together); small envelopes are
//! bump-allocated from per-thread chunks (see `arena.rs`) because a message is typically
//! freed on another thread than the one that allocated it, which general-purpose
//! allocators handle poorly.
//!
//! # Why not a synchronous `handle`
//!
//! A second, synchronous handler trait would let the common case skip the future. It
//! would save little: measured on one thread (release build, 10^7 messages), an
//! `async fn` handler that does not await, polled once, costs the same as calling its
//! body directly (about 1 ns), and the whole envelope path — allocate the envelope,
//! erase its type, place the handler's future, poll it, free everything — costs about
//! 15 ns per message, of which the placement is a few. Across threads the cost of a
//! message is dominated by cache traffic, not by the handler model. One trait keeps one
//! dispatch path for actors, RMI and RPC.
//!
//! # Across processes
//!
//! In-process, messages move as typed values. A message type that may cross a process
//! boundary also implements [`Remote`]: it is serializable (and so is its reply) and has
//! a stable name, whose hash is its [`MsgId`] — the same on every rank. Then:
//!
//! * [`codec`] is its wire form: one serde format (postcard), a zero-copy path for
//!   plain-old-data, and frames with a checked header. Decoding hostile bytes is an
//!   error, never a panic, an overflow or an unbounded allocation.
//! * A [`Registry`] lists the types a job sends between ranks; the ranks compare
//!   [`Digest`]s at start-up ([`check_digests`]), so a type one rank lacks is a clear
//!   error naming it.
//! * A [`Dispatch<O>`] table decodes a frame for an object type `O` into the same
//!   [`Envelope`] a local send makes, so **the same `Handler` runs at the destination**,
//!   and encodes its reply ([`RemoteReply`]). Nothing in this module assumes the sender
//!   shares memory with the receiver.

mod arena;
pub mod codec;
mod dispatch;
mod envelope;
mod registry;
mod remote;
mod reply;
mod running;
mod tagged;

use std::future::Future;

pub use dispatch::{Dispatch, DispatchError, Dispatched, Incoming, RemoteReply, ReplyError};
pub(crate) use dispatch::{RunBatch, UNHANDLED_MARK};
pub(crate) use envelope::{AtomicLinkPtr, Link};
pub use envelope::{Envelope, Parts};
pub use registry::{
    check_digests, register, registered, DecodeByIdError, Digest, Entry, Mismatch, Platform,
    RankMismatch, Registry, RegistryError,
};
pub use remote::{MsgId, Remote};
pub use reply::{NoReply, Reply, Responder};
pub use running::Handle;
pub(crate) use running::{Running, Spare, Started};
pub(crate) use tagged::Tagged;

/// What a caller that handles many messages in a row (the actor loop's turn) keeps
/// between them: the block of a handler that completed, for the next one, and envelope
/// frees not yet counted in their chunk. Dropping it settles both.
#[derive(Default)]
pub(crate) struct Batch {
    pub(crate) spare: Spare,
    pub(crate) frees: arena::FreeBatch,
}

/// A message: a type that can be sent to an object implementing [`Handler`] for it.
///
/// `Reply` is the type of the answer; use `()` for messages that are only told.
///
/// ```
/// use tutti::msg::Message;
///
/// /// Ask a counter for its value.
/// struct Value;
/// impl Message for Value { type Reply = u64; }
/// ```
///
/// Messages cross threads, so they must be `Send`:
///
/// ```compile_fail
/// use tutti::msg::Message;
/// struct Shared(std::rc::Rc<u8>);
/// impl Message for Shared { type Reply = (); }
/// ```
pub trait Message: Send + 'static {
    /// What handling the message produces for the sender.
    type Reply: Send + 'static;
}

/// An object that messages are applied to: its state, and the context its handlers get.
///
/// Every [`Actor`](crate::actor::Actor) is an `Object` with
/// `Context = actor::Context<Self>` (a blanket implementation). Implement it directly
/// for objects driven by something else, e.g. in tests.
///
/// ```
/// use tutti::msg::Object;
/// struct Plain;
/// impl Object for Plain { type Context = (); }
/// ```
pub trait Object: Send + 'static {
    /// What a handler gets besides the message (`&mut`), for the duration of its call.
    type Context: Send + 'static;

    /// The message types this object accepts from other locations, which may be in
    /// other processes: adds each to `table` (`table.register::<M>()?`). Read by
    /// [`rmi`](crate::rmi) when the object is registered; an RMI of a message type
    /// not listed here is refused (naming it) unless it goes to the sender's own
    /// location. The default accepts none.
    ///
    /// ```
    /// use serde::{Deserialize, Serialize};
    /// use tutti::msg::{Dispatch, Handler, Message, Object, RegistryError, Remote};
    ///
    /// #[derive(Serialize, Deserialize)]
    /// struct Add(u64);
    /// impl Message for Add { type Reply = (); }
    /// impl Remote for Add { const NAME: &'static str = "counter.Add"; }
    ///
    /// struct Counter(u64);
    /// impl Object for Counter {
    ///     type Context = ();
    ///     fn remote(table: &mut Dispatch<Self>) -> Result<(), RegistryError> {
    ///         table.register::<Add>()?;
    ///         Ok(())
    ///     }
    /// }
    /// impl Handler<Add> for Counter {
    ///     async fn handle(&mut self, m: Add, _: &mut ()) { self.0 += m.0; }
    /// }
    ///
    /// let mut table = Dispatch::new();
    /// Counter::remote(&mut table).unwrap();
    /// assert!(table.accepts(Add::ID));
    /// ```
    fn remote(table: &mut Dispatch<Self>) -> Result<(), RegistryError>
    where
        Self: Sized,
    {
        let _ = table;
        Ok(())
    }
}

/// Handling of message type `M` by an object: `async fn handle`.
///
/// The returned future must be `Send` (checked at the `impl`); it may hold `&mut self`
/// and the context across `.await`s, during which no other message of this object is
/// handled.
///
/// ```
/// use tutti::msg::{Envelope, Handler, Message, Object};
///
/// struct Ping(u32);
/// impl Message for Ping { type Reply = u32; }
/// struct Ponger;
/// impl Object for Ponger { type Context = (); }
/// impl Handler<Ping> for Ponger {
///     async fn handle(&mut self, m: Ping, _: &mut ()) -> u32 {
///         tutti::runtime::yield_now().await; // a handler may await
///         m.0 + 1
///     }
/// }
///
/// let (e, r) = Envelope::<Ponger>::with_reply(Ping(1));
/// tutti::block_on(e.handle(&mut Ponger, &mut ()));
/// assert_eq!(tutti::block_on(r), Ok(2));
/// ```
///
/// A handler whose future is not `Send` is rejected:
///
/// ```compile_fail
/// use tutti::msg::{Handler, Message, Object};
/// struct Ping;
/// impl Message for Ping { type Reply = (); }
/// struct O;
/// impl Object for O { type Context = (); }
/// impl Handler<Ping> for O {
///     async fn handle(&mut self, _: Ping, _: &mut ()) {
///         let rc = std::rc::Rc::new(1);
///         tutti::runtime::yield_now().await;
///         drop(rc);
///     }
/// }
/// ```
pub trait Handler<M: Message>: Object {
    /// Handles one message; the output is the reply.
    fn handle(&mut self, msg: M, ctx: &mut Self::Context) -> impl Future<Output = M::Reply> + Send;
}
