//! Layer 4: distributed objects — ARMI's remote method invocation on the world.
//!
//! A program runs SPMD: [`spmd`] (or [`run`] on a given [`World`]) runs one body
//! per location of the world, each as a task of the rank's runtime; the body
//! gets its location's RMI endpoint, an [`Rmi`] (`id()`, `count()`; named
//! apart from the world's [`Location`](crate::world::Location), which it
//! runs on). Locations **register** objects
//! collectively ([`Rmi::register`]): every location owns its own
//! *representative* and gets the same [`Handle`]. Methods are the message
//! core's handlers (one handler trait for actors, RMI and RPC): an object
//! accepts message `M` by implementing [`Handler<M>`](crate::msg::Handler), and
//!
//! * [`async_rmi`](Rmi::async_rmi)`(dest, &h, msg)` — a statement: the
//!   request goes into the world (aggregated per destination) and executes on
//!   `dest`'s representative;
//! * [`sync_rmi`](Rmi::sync_rmi)`(dest, &h, msg)` — a question: waits for
//!   the method's reply, executing incoming requests meanwhile (nested RMI);
//! * [`broadcast_rmi`](Rmi::broadcast_rmi) — to every representative;
//! * [`reduce_rmi`](Rmi::reduce_rmi)`(&h, msg, op)` — collective: every
//!   location runs the method on its own representative and the replies are
//!   combined along the world's tree;
//! * [`scope`](Rmi::scope)`(|s| …)` — structured: the methods spawned in
//!   it ([`Scope::spawn`]) on any location of any rank have all run when it
//!   returns; a panic or an `Err` reply of any of them comes back naming its
//!   location and rank, and cancels the work not yet started (see [`scope`]);
//! * [`fence`](Rmi::fence) — collective: returns when every RMI issued
//!   anywhere, including those issued by methods to any depth and those still
//!   in aggregation buffers, has executed (the world's quiescence detection);
//!   [`poll`](Rmi::poll) executes what has arrived, [`wait`](Rmi::wait)
//!   waits for the next request since the previous `wait` or `fence` (at once
//!   if one already ran meanwhile); every n-th communication call polls
//!   ([`Rmi::set_poll_every`]).
//!
//! RMI messages are [`Remote`](crate::msg::Remote) types (serde, with a stable
//! name), because the same program must run in every world shape, and a request
//! to a location of another rank is serialized. An object lists the message types
//! it accepts from other locations in [`Object::remote`](crate::msg::Object::remote).
//!
//! A body may also use its world location's own messages
//! ([`Rmi::world`]: `send`, `send_bytes`, `send_tagged`, `recv`). RMI serves only
//! its own traffic: a world message that arrives while the location serves RMI
//! (in a fence, a collective, a `sync_rmi`, a `poll`) stays for the body's own
//! receives, in arrival order; an RMI fence counts it as delivered and does not
//! wait for the body to receive it. (Untagged plain bytes that start with the
//! codec's frame magic, `TUTI`, would be taken for RMI's.)
//!
//! ```
//! use serde::{Deserialize, Serialize};
//! use tutti::msg::{Dispatch, Handler, Message, Object, RegistryError, Remote};
//! use tutti::rmi;
//!
//! #[derive(Serialize, Deserialize)]
//! struct Add(u64);
//! impl Message for Add { type Reply = (); }
//! impl Remote for Add { const NAME: &'static str = "counter.Add"; }
//! #[derive(Serialize, Deserialize)]
//! struct Get;
//! impl Message for Get { type Reply = u64; }
//! impl Remote for Get { const NAME: &'static str = "counter.Get"; }
//!
//! struct Counter(u64);
//! impl Object for Counter {
//!     type Context = rmi::Rmi;
//!     fn remote(table: &mut Dispatch<Self>) -> Result<(), RegistryError> {
//!         table.register::<Add>()?.register::<Get>()?;
//!         Ok(())
//!     }
//! }
//! impl Handler<Add> for Counter {
//!     async fn handle(&mut self, m: Add, _: &mut rmi::Rmi) { self.0 += m.0; }
//! }
//! impl Handler<Get> for Counter {
//!     async fn handle(&mut self, _: Get, _: &mut rmi::Rmi) -> u64 { self.0 }
//! }
//!
//! let world = tutti::world::World::builder().locations(4).workers(2).build().unwrap();
//! let got = rmi::run(&world, |loc| async move {
//!     let h = loc.register(Counter(0)).await.unwrap();
//!     // Everyone adds its id + 1 to location 0's counter…
//!     loc.async_rmi(0, &h, Add(loc.id() as u64 + 1)).await;
//!     loc.fence().await;
//!     // …and asks for it.
//!     loc.sync_rmi(0, &h, Get).await
//! });
//! assert_eq!(got, [10, 10, 10, 10]);
//! ```
//!
//! # Execution model and guarantees (ARMI §III.C–D)
//!
//! A location is one task; it executes incoming requests only **inside its own
//! RMI calls** — `poll`, `wait`, `fence`, `sync_rmi` while it waits, the
//! collectives, and every n-th communication call — never behind the back of
//! the body's code. Hence:
//!
//! * **Order.** Requests from one location to another execute in issue order
//!   (the world delivers them in order; a deferred request — below — holds back
//!   the later ones from the same sender). Requests a location sends itself
//!   skip the world: they wait in a queue of the location's own and run, in
//!   order, before it receives anything else (and before `fence` contributes
//!   to a quiescence wave, so what they send is counted). Work spawned in a
//!   [`scope`](Rmi::scope) is the exception: its pieces run concurrently, in
//!   no order among themselves or with other requests.
//! * **Atomicity.** A method runs with `&mut` access to its representative; no
//!   other method of that representative, and none of the location's own code,
//!   runs until it returns — except at its own `.await`s on RMI calls, where
//!   requests for *other* objects may execute (nested RMI, as in ARMI).
//! * **By value.** Arguments move between locations of one rank (nothing is
//!   copied or serialized) and are serialized across ranks.
//!
//! **Exclusive access between calls.** The body reaches its own representative
//! through [`Rmi::local`], a guard that borrows the `Rmi` mutably.
//! Every call that executes requests takes `&self`, so holding the guard across
//! one is a **compile-time error**, not a race (see the `compile_fail` example on
//! [`Rmi`]). A method reaches its representative as `&mut self`, and other
//! objects through its context (`&mut Rmi`), with the same rule.
//!
//! **Busy representatives.** While a method waits in a `sync_rmi`, its
//! representative is taken out of the table. A request for it that arrives
//! meanwhile is *deferred* — and so is every later request from the same
//! sender, to keep issue order — and executes as soon as the method returns
//! (before `fence` contributes to a quiescence wave, so fence still only ends
//! when it has run). Because a method keeps `&mut self` while it waits, a
//! chain of `sync_rmi`s may not come back to a representative a method in the
//! chain holds (ARMI allows such re-entry; Rust's exclusive borrows do not):
//! each `sync_rmi` issued by a method carries the representatives held by the
//! methods waiting for it, and a request that would have to wait for one of
//! them is reported as a deadlock (the location panics naming the method and
//! the chain) instead of hanging. Nested chains through *different* objects —
//! or different locations — are fine.
//! [`Rmi::local`] on a representative a method of which is executing is
//! a clear panic, never aliasing.
//!
//! **Nesting.** Each request a location executes while already inside a method
//! nests one level deeper (a sync_rmi chain that keeps returning to this
//! location). Beyond [`Rmi::set_max_nesting`] levels (default
//! [`DEFAULT_MAX_NESTING`]) the location panics with a message naming the
//! method, instead of overflowing its stack.
//!
//! **Contexts.** A method's context is what its object's
//! [`Object::Context`](crate::msg::Object) says, from [`HandlerContext`]: a
//! [`Rmi`] (to issue RMIs from methods), or `()` — an object with
//! `Context = ()` has handlers that need nothing from an RMI endpoint, and an
//! actor that owns such an object can forward its messages to the very same
//! handlers.
//!
//! # Where it runs
//!
//! Unchanged on every world shape: threads (one process, many locations), MPI
//! (one location per rank) and mixed (ranks × threads, one flat numbering).
//! A request to the sender's own location goes into its own queue; to another
//! location of the same rank it moves through the world as a typed value; to a
//! location of another rank it is encoded with the `msg` codec and its bytes
//! travel through the world (counted by the quiescence detection, so
//! [`Rmi::fence`] stays exact).
//!
//! **Aggregation** ([`Rmi::set_aggregation`], ARMI's aggregation factor):
//! consecutive statements (`async_rmi`, `broadcast_rmi`) from one location to
//! one destination, for one object and message type, are combined into a
//! *run* — held by value as a typed `Vec` of the messages within the rank
//! (and for the location itself), or the core's `Tell` run across ranks. A
//! run is one message and one admission at its destination: its methods run
//! one after the other in one future, with no lock, allocation or decode
//! header per statement. A run goes when it holds the factor's number of
//! statements, before a request of another kind to the same destination (issue
//! order), and whenever the location receives, waits, polls (explicitly: the
//! automatic poll leaves them to fill) or enters a collective — so nothing
//! waits in a buffer while its sender waits, and
//! `fence` counts every statement. A location's statements to itself run at
//! its next such call (the automatic poll included), before anything it
//! receives.
//!
//! Across ranks RMI speaks the request/reply core (`call`, crate-internal), as
//! distributed actors do: each location has a conversation over its world
//! location, with the core's correlation ids, pending table and framing.
//!
//! * a request is a `Tell` (`async_rmi`, `broadcast_rmi`: a run of one or more
//!   messages of one type for one object) or an `Ask` (`sync_rmi`), preceded,
//!   for a `sync_rmi` issued by a method, by a `Control` frame with the chain
//!   of representatives held by the waiting methods (for the deadlock check);
//! * the receiver decodes it with the object type's
//!   [`Dispatch`](crate::msg::Dispatch) table, built at registration from
//!   [`Object::remote`](crate::msg::Object::remote), and executes it exactly
//!   as a local request (same ordering, deferral and nesting rules);
//! * the answer to a `sync_rmi` is a `Reply` frame with the encoded reply,
//!   decoded by the asker, or a `Fault` frame with the reason there is none
//!   (the asker panics naming the location, its rank and the reason).
//!
//! **The bound.** Every RMI message is [`Remote`](crate::msg::Remote) (so its
//! reply is serializable too), and a request to any *other* location — even one
//! of the same rank, where it is not serialized — must be listed in the target
//! type's `Object::remote`; otherwise the sender panics naming the message and
//! object types. So a program that runs in threads mode runs unchanged under
//! MPI. Requests a location sends to itself never cross ranks and need no
//! listing. Registration also compares each object type's list between
//! locations ([`RmiError::MethodsMismatch`]).
//!
//! **Bad bytes** from another rank — a broken frame, a request for an object
//! never registered or a message type its object does not accept, a payload
//! that does not decode — follow the core's one policy (see the `call` module):
//! the receiving location rejects them, reports them on stderr naming the
//! sender, its rank and the cause, and goes on, losing nothing else (the other
//! requests of the same arrival still run). The sender is told: a rejected
//! `sync_rmi` is refused, anything else answered with a `Rejected` notice, and
//! the **sending** location panics when it arrives — naming the location and
//! rank that rejected its bytes and the cause (under MPI that takes the job
//! down). A reply that does not decode as the `sync_rmi`'s reply type panics
//! the asker, naming the location it came from. Nothing runs undefined
//! behaviour.

mod admission;
mod endpoint;
mod error;
mod execute;
mod handle;
mod local;
mod request;
pub mod scope;
mod wire;

#[cfg(all(test, not(loom)))]
mod tests;

use std::future::Future;

pub use endpoint::Rmi;
pub use error::RmiError;
pub use handle::Handle;
pub use local::Local;
pub use scope::{Completion, Scope, ScopeError};

use crate::world::World;

/// Default of [`Rmi::set_max_nesting`].
pub const DEFAULT_MAX_NESTING: usize = 64;

/// Default of [`Rmi::set_poll_every`]: every 64th communication call
/// executes what has arrived.
pub const DEFAULT_POLL_EVERY: usize = 64;

/// Default of [`Rmi::set_aggregation`] in-process (where the world's own
/// default is no aggregation): statements per destination combined into one
/// run.
pub const DEFAULT_AGGREGATION: usize = 256;

/// The aggregation factor RMI locations of a world with `config` start with
/// ([`Rmi::set_aggregation`]): the world's factor, except in-process with
/// the world's default (no aggregation, chosen for its plain messages), where
/// RMI's runs still pay — one admission per run instead of per request — and
/// it is [`DEFAULT_AGGREGATION`].
///
/// ```
/// let world = tutti::world::World::builder().ignore_env().locations(2).build().unwrap();
/// assert_eq!(tutti::rmi::default_aggregation(world.config()), tutti::rmi::DEFAULT_AGGREGATION);
/// ```
pub fn default_aggregation(config: &crate::world::WorldConfig) -> usize {
    use crate::world::{TransportKind, DEFAULT_AGGREGATION_INPROC};
    if config.transport() == TransportKind::InProcess
        && config.aggregation() == DEFAULT_AGGREGATION_INPROC
    {
        DEFAULT_AGGREGATION
    } else {
        config.aggregation()
    }
}

/// What a method gets as its context, made from the executing location.
///
/// Implemented for [`Rmi`] (methods that issue RMIs) and `()`.
pub trait HandlerContext: Send + 'static {
    /// The context for one method executing on `loc` (a `()` context costs
    /// nothing; an [`Rmi`] one is another handle on `loc`'s endpoint).
    fn from_location(loc: &Rmi) -> Self;
}

impl HandlerContext for Rmi {
    fn from_location(loc: &Rmi) -> Self {
        loc.share()
    }
}

impl HandlerContext for () {
    fn from_location(_: &Rmi) -> Self {}
}

/// Runs `body` once per location of `world` (ARMI's `execute_parallel_task`)
/// and returns the results in location order. A closing [`Rmi::fence`]
/// after the body makes sure every RMI it issued has executed.
///
/// With several ranks, each rank runs the body on its own locations and gets
/// their results (in location order).
///
/// # Panics
/// If a location panics (its message names it; with several ranks the job is
/// taken down).
///
/// ```
/// let world = tutti::world::World::builder().locations(3).workers(1).build().unwrap();
/// let ids = tutti::rmi::run(&world, |loc| async move { (loc.id(), loc.count()) });
/// assert_eq!(ids, [(0, 3), (1, 3), (2, 3)]);
/// ```
pub fn run<F, Fut>(world: &World, body: F) -> Vec<Fut::Output>
where
    F: Fn(Rmi) -> Fut,
    Fut: Future + Send + 'static,
    Fut::Output: Send + 'static,
{
    world.run(|wloc| {
        // The location's endpoint is owned by this task (its state is a
        // `TaskCell`, used only while the task is polled).
        let (loc, owner) = Rmi::new(wloc);
        let closing = loc.share();
        let fut = body(loc);
        owner.run(async move {
            let out = fut.await;
            closing.fence().await;
            out
        })
    })
}

/// [`run`] on a world configured by the environment (`TUTTI_LOCATIONS`,
/// `TUTTI_WORKERS`, …; see [`crate::world::WorldBuilder`]).
///
/// # Panics
/// If the world cannot be built (the error says which setting), and as [`run`].
///
/// ```
/// let n = tutti::spmd(|loc| async move { loc.count() });
/// assert!(n.iter().all(|&c| c == n.len()));
/// ```
pub fn spmd<F, Fut>(body: F) -> Vec<Fut::Output>
where
    F: Fn(Rmi) -> Fut,
    Fut: Future + Send + 'static,
    Fut::Output: Send + 'static,
{
    let world = match World::from_env() {
        Ok(w) => w,
        Err(e) => panic!("tutti::spmd: cannot start the world: {e}"),
    };
    run(&world, body)
}
