//! Layer 2: actors — state plus handlers, one mailbox each, on the shared scheduler.
//!
//! An actor is a value of a type implementing [`Actor`] and
//! [`Handler<M>`](crate::msg::Handler) for each message type `M` it accepts (the message
//! core, [`crate::msg`]). [`spawn`] starts it and returns an [`Addr`]:
//! [`tell`](Addr::tell) is a statement (returns at once), [`ask`](Addr::ask) a question
//! whose reply is awaited — or waited for from a plain thread with
//! [`ask_blocking`](Addr::ask_blocking) / [`ask_timeout`](Addr::ask_timeout).
//!
//! ```
//! use tutti::actor::{self, Actor, Context};
//! use tutti::msg::{Handler, Message};
//!
//! struct Deposit(u64);
//! impl Message for Deposit { type Reply = (); }
//! struct Balance;
//! impl Message for Balance { type Reply = u64; }
//!
//! #[derive(Default)]
//! struct Account { balance: u64 }
//! impl Actor for Account {}
//! impl Handler<Deposit> for Account {
//!     async fn handle(&mut self, m: Deposit, _: &mut Context<Self>) { self.balance += m.0; }
//! }
//! impl Handler<Balance> for Account {
//!     async fn handle(&mut self, _: Balance, _: &mut Context<Self>) -> u64 { self.balance }
//! }
//!
//! let account = actor::spawn(Account::default());
//! account.tell(Deposit(70)).unwrap();
//! account.tell(Deposit(30)).unwrap();
//! assert_eq!(account.ask_blocking(Balance).unwrap(), 100);
//! ```
//!
//! # Execution model
//!
//! Each actor is **one async task** on the current [`Runtime`](crate::runtime::Runtime) — no
//! thread per actor. The task handles one message at a time with exclusive `&mut`
//! access to the state; messages from one sender are handled in the order they were
//! sent. When the mailbox is empty the task returns `Pending` and costs nothing; the
//! sender that finds it idle wakes it, and a task woken by a worker runs next on that
//! worker, so a request/reply ping-pong stays on one core.
//!
//! A turn handles up to 64 messages (priority lane first, then the mailbox), then the
//! task goes to the back of its worker's queue so that a flooded actor cannot starve
//! others.
//!
//! **Handlers are `async`.** A handler may `.await` — ask another actor, receive from a
//! channel, sleep — without blocking a worker. While it waits it keeps exclusive access
//! to the state: **messages arriving meanwhile queue** and are handled, in order, after
//! it returns (so two handlers of one actor never overlap). A stop request does not
//! wait: it cancels the suspended handler at its `.await` (its asker gets
//! [`AskError::Stopped`]). Beware of asking an actor that is, directly or through
//! others, waiting for you: that is a deadlock, as in any actor system.
//!
//! The handler's future is not boxed: the loop moves it into a reusable block and
//! polls it there, so a message costs one allocation (its envelope; an `ask` shares
//! that allocation with its reply slot) and nothing else in steady state. A turn keeps
//! that block from one message to the next and counts the envelopes it frees per
//! arena chunk, settling them once at the end (see `msg::Batch`).
//!
//! # Mailboxes
//!
//! *Unbounded* (the default): a lock-free intrusive MPSC queue (Vyukov) linking the
//! envelopes themselves, plus one state word per actor that counts reserved messages
//! and decides who wakes the actor (protocol and proof in `mailbox/state.rs`; loom
//! models in `mailbox/loom_tests.rs`). A `tell` is one atomic add, one swap and one store
//! when the actor is busy.
//!
//! *Bounded* ([`Builder::bounded`]): a capacity and an [`Overflow`] policy —
//! [`Block`](Overflow::Block) (the sender waits: [`send`](Addr::send)`.await`,
//! [`send_blocking`](Addr::send_blocking)), [`Fail`](Overflow::Fail) (an error), or
//! [`DropOldest`](Overflow::DropOldest) (the oldest is discarded, counted in
//! [`Addr::dropped`] and reported through [`Actor::messages_dropped`]). Never silent.
//!
//! **Priority.** System events — stop requests, [`Down`] notices, trapped exits — and
//! [`tell_priority`](Addr::tell_priority) messages go through a separate lane that the
//! actor looks at before its mailbox, so they overtake ordinary messages.
//!
//! # Message strategies (Gingras 2018)
//!
//! * `message_immediate` — inside a long handler, [`Context::has_messages`] tells whether
//!   anything is waiting and [`Context::try_next`] takes it as an [`Envelope`](crate::msg::Envelope)
//!   that the handler applies to itself ([`Envelope::handle`](crate::msg::Envelope::handle))
//!   or inspects ([`Envelope::downcast`](crate::msg::Envelope::downcast)).
//! * `message_wait` / `message_notify` — what idle workers do is the runtime's
//!   [`IdleStrategy`](crate::runtime::IdleStrategy): `Yield` or `Park`
//!   (`Runtime::builder().idle_strategy(..)`, or `TUTTI_IDLE`).
//!
//! # Lifecycle
//!
//! [`Actor::started`] runs in the actor's task before its first message;
//! [`Actor::stopped`] runs once when it stops, for any reason. An actor stops when:
//!
//! * it calls [`Context::stop`] (after the current handler returns): [`StopReason::Normal`];
//! * someone calls [`Addr::stop`] (overtakes queued messages, cancels a waiting handler):
//!   [`StopReason::Requested`];
//! * no [`Addr`] or [`Recipient`] to it remains and its mailbox is empty:
//!   [`StopReason::NoAddrs`] (a registered name holds an address);
//! * a handler (or `started`) panics: [`StopReason::Panicked`] — the panic never reaches
//!   the runtime;
//! * a linked actor stopped abnormally: [`StopReason::Linked`];
//! * its [`ActorSystem`] shuts down ([`shutdown_all`], [`ActorSystem::shutdown`]) or its
//!   runtime is dropped: [`StopReason::Shutdown`].
//!
//! Stopping closes the mailbox: later sends fail with `Stopped` (returning the
//! message), queued questions and the one being handled get [`AskError::Stopped`] — an
//! `ask` never hangs on a dead actor. Then the stop hook runs, the actor's names vanish,
//! monitors get [`Down`], links get exit signals, and [`Addr::wait`] completes. The
//! state machine is drawn in `run.rs`.
//!
//! # Registry
//!
//! [`register`], [`lookup`] (typed: a wrong type is [`LookupError::WrongType`]),
//! [`unregister`], [`whereis`]: the C task framework's repository and Erlang's `register`, for
//! this process. Across ranks, actors are reached through the world's actor nodes:
//! [`remote::Node`](crate::remote::Node) exports actors as
//! [`RemoteAddr`](crate::remote::RemoteAddr)s and keeps a world-wide registry of
//! [`Name`]s.
//!
//! # Supervision
//!
//! [`Context::monitor`] / [`Addr::monitor`] deliver a [`Down`] when the target stops;
//! [`Context::link`] ties two actors' abnormal ends together unless one
//! [traps exits](Context::trap_exits). A [`Supervisor`] starts children from factories,
//! monitors them and restarts them one-for-one or one-for-all, with a restart intensity
//! limit and exponential backoff (see `supervisor.rs`).
//!
//! # Cost per actor
//!
//! An idle actor costs about 230 bytes of heap plus its own state, in two allocations
//! (measured by `tutti bench actor memory`: 232 bytes per actor for 10^5 idle actors
//! whose state is 16 bytes). They are its cell (128 bytes + state, 144
//! with the `Arc` counts; see `cell.rs`), which holds everything addresses share with the
//! actor and the loop's own state, and its task (48 bytes: the runtime's 40-byte task
//! header, which also links it into the runtime's live list, and a future that is one
//! pointer to the cell); then a 16-byte slot in its system's member table (in fixed
//! pages, without reallocation slack). A handler that is suspended keeps
//! its future's block (at least 256 bytes) until it completes; an idle actor holds
//! none. `actor::tests::per_actor_bytes` prints the sizes.

mod addr;
#[doc(hidden)]
pub mod ask_cycle;
mod cell;
mod context;
mod error;
mod lifecycle;
pub(crate) mod mailbox;
mod monitor;
mod recipient;
mod registry;
mod run;
mod spawn;
mod supervisor;
mod system;

pub(crate) use addr::short_type_name;
pub use addr::{Addr, Ask, SendFuture, WaitStop, WeakAddr};
pub use context::Context;
pub use error::{
    AskError, AskTimeoutError, LookupError, RegisterError, SendError, SendTimeoutError, TellError,
};
pub use lifecycle::{Actor, ActorId, StopReason};
pub use mailbox::Overflow;
pub use monitor::{Down, MonitorRef};
pub use recipient::Recipient;
pub use registry::{lookup, register, registered, unregister, whereis, Name};
pub use spawn::{spawn, Builder};
pub use supervisor::{
    Child, ChildSpec, Restart, Stats, Strategy, Supervisor, SupervisorBuilder, SupervisorStats,
};
pub use system::{shutdown_all, ActorSystem, Shutdown};

impl<A: Actor> crate::msg::Object for A {
    type Context = Context<A>;
}

#[cfg(all(test, not(loom)))]
mod tests;
