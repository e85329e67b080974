//! # tutti
//!
//! One runtime for parallel and distributed programs. Fork-join closures, async
//! tasks, CSP processes, mailbox actors, actor graphs, remote method
//! invocations and URL-addressed remote calls all run on **one work-stealing
//! scheduler**, talk through **one message core**, and live in **one world** of
//! ranks × locations: threads of one process by default, processes of one host
//! sharing memory under `tutti launch`, or an MPI job under `mpirun` (feature
//! `mpi`), with no change to the program.
//!
//! ```
//! fn fib(n: u64) -> u64 {
//!     if n < 2 { return n; }
//!     let (a, b) = tutti::join(|| fib(n - 1), || fib(n - 2));
//!     a + b
//! }
//! assert_eq!(fib(20), 6765);
//! ```
//!
//! # The map
//!
//! A module per layer; each uses only the layers above it in this table (the
//! diagnosis sits beside layer 0 and names none of the layers above it: they
//! report into it). `docs/architecture.md` in the repository tells how a
//! message travels through them.
//!
//! | layer | module | what it owns | key types |
//! |---|---|---|---|
//! | 0 | [`runtime`] | the workers, their deques and the idle path; `join`/`scope` for recursive work, `spawn` for independent tasks, `block_on`, timers, parallel loops, sequential groups | [`Runtime`], [`Builder`], [`JoinHandle`], [`Scope`], [`SequentialGroup`] |
//! | 0 | [`par`] | parallel iterators (`par_iter`, `into_par_iter`, `map`/`filter`/`sum`/`collect`, …) and parallel sorts on `join`, split only as finely as idle workers ask | [`prelude`], [`par::ParallelIterator`], [`par::Sorter`] |
//! | 0′ | [`diag`] | the wait-for graph every blocking operation reports into, deadlock verdicts and reports, dumps on demand or on a signal, the timeline trace | [`diag::Deadlock`], [`diag::DeadlockMode`], [`diag::trace`] |
//! | 1 | [`sync`] | dataflow variables | [`DataflowVar`] |
//! | 1 | [`csp`] | channels (rendezvous, buffered, unbounded), shared ends, `Alt`/`select!`, barriers, `par`, poison, deadlock detection among processes | [`csp::Tx`], [`csp::Rx`], [`csp::Alt`], [`csp::Barrier`], [`csp::par`] |
//! | 1 | [`net`] | async sockets on the runtime's I/O driver, polled by idle workers: TCP (with halves), UDP, Unix streams; `futures-io` traits (tokio's with `tokio-io`) | [`net::TcpListener`], [`net::TcpStream`], [`net::UdpSocket`], [`net::UnixStream`] |
//! | 2 | [`msg`] | the message core: message types, handlers, envelopes and replies, stable message ids, the codec for what crosses a process | [`msg::Message`], [`msg::Handler`], [`msg::Remote`], [`msg::Dispatch`] |
//! | 2 | [`actor`] | mailbox actors: addresses, `tell`/`ask`, the registry, monitors and links, supervision, actor systems | [`actor::Actor`], [`actor::Addr`], [`actor::Context`], [`actor::Supervisor`] |
//! | 3 | [`world`] | ranks × locations; transports (in-process, shared memory, MPI); aggregation, collectives, quiescence (fences) and the cross-rank stall check | [`world::World`], [`world::Location`], [`world::LocationId`], [`world::Delivery`] |
//! | 3½ | `call` (internal) | the one request/reply core: correlation ids, pending replies, framing, the bad-bytes policy, serving a frame; every layer-4 module asks and serves through it | — |
//! | 4 | [`rmi`] | SPMD programs over registered objects: `async_rmi`, `sync_rmi`, `broadcast_rmi`, `reduce_rmi`, fences | [`rmi::spmd`], [`rmi::Handle`], [`rmi::RmiError`] |
//! | 4 | [`remote`] | distributed actors: nodes, remote addresses, the world-wide registry, monitors across processes | [`remote::Node`], [`remote::RemoteAddr`], [`remote::RemoteError`] |
//! | 4 | [`graph`] | actor graphs: port actors joined by bounded channels, placed on locations by a partitioner, run until every actor ends | [`graph::ActorGraph`], [`graph::PortActor`], [`graph::Ports`], [`graph::Placement`] |
//! | 4 | [`rpc`] | URL-addressed objects over TCP: vendors publish, proxies call (also one-way), services declared as traits ([`service`]), failure callbacks | [`rpc::Rpc`], [`rpc::Vendor`], [`rpc::Proxy`], [`rpc::Url`], [`service`] |
//!
//! Internal beside them: `loom`, the one place the crate takes its atomics
//! and locks from, so that its protocols are model-checked with loom (a rule
//! clippy keeps, see `crates/tutti/clippy.toml`).
//!
//! The crate root re-exports the everyday operations of layer 0 and the
//! dataflow variable ([`join`], [`spawn`], [`block_on`], [`scope`],
//! [`par_for`], …); inside the crate, code names the layer
//! (`crate::runtime::spawn`) so that the edges between layers stay visible.
//!
//! # Where the ideas come from
//!
//! tutti implements five published designs, and its documentation names them
//! where it follows one: *Blip* (F. Mohamed, 2010: the task scheduler, parallel
//! loops and URL-addressed RPC), the C task framework of F. Gingras (2018:
//! mailbox actors, the name repository, shared-memory systems), the distributed
//! actor library of B. Miguel (2019) and its *Pond* shallow-water code (actor
//! graphs with ports, funneled MPI), occam-π as presented by Welch, Pedersen and
//! Barnes (CPA 2013: channels, `ALT`, barriers) and *ARMI*, the adaptive remote
//! method invocation library of S. Saunders (2003: RMI, aggregation, fences).
//! `docs/background.md` in the repository says what tutti takes from each.
#![deny(missing_docs)]
#![warn(clippy::undocumented_unsafe_blocks)]

pub mod actor;
pub(crate) mod call;
pub mod csp;
pub mod diag;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
pub mod graph;
#[cfg(feature = "hyper")]
pub mod hyper;
pub(crate) mod loom;
pub mod msg;
pub mod net;
pub mod par;
pub mod remote;
pub mod rmi;
pub mod rpc;
pub mod runtime;
pub mod sync;
#[cfg(test)]
pub(crate) mod test_util;
pub mod world;

/// The traits of the parallel iterators and parallel sorts ([`par`]):
/// `use tutti::prelude::*` makes `par_iter()`, `into_par_iter()`, `par_sort()`, … available.
pub mod prelude {
    pub use crate::par::prelude::*;
}

pub use rmi::spmd;
pub use runtime::{
    block_on, join, par_chunks_mut, par_for, scope, sleep, sleep_until, spawn, spawn_blocking,
    spawn_named, spawn_with_priority, timeout, timeout_at, yield_now, BuildError, Builder, Elapsed,
    IdleStrategy, JoinError, JoinHandle, Outcome, Priority, Runtime, Scope, SequentialGroup,
};
pub use sync::{DataflowError, DataflowVar};

// The macro's output names this crate `::tutti`, also inside it (its tests).
extern crate self as tutti;

/// Declares an RPC service once, as a trait of `async fn`s: the server implements
/// the trait, clients call it through a generated client type, and neither side
/// names the other's types beyond the trait.
///
/// For a trait `Calculator` in a module, the attribute generates beside it:
///
/// * the trait itself, each `async fn` becoming
///   `fn …(…) -> impl Future<Output = …> + Send` (implement it with `async fn`), with
///   `Send + 'static` as supertraits;
/// * `CalculatorServer`, the object to publish: [`CalculatorServer::new(impl)`] wraps
///   any implementation, and [`Rpc::publish`](rpc::Rpc::publish) publishes it;
/// * `CalculatorClient`, made by [`Rpc::client`](rpc::Rpc::client) from the URL
///   `publish` returned (or its text): one `async` method per trait method
///   returning `Result<R, RpcError>`, plus a `…_blocking` twin for plain threads;
/// * one message type per method, named after the trait and the method
///   (`CalculatorAdd`, `CalculatorDivide`; the arguments as public fields), for
///   [`Proxy::oneway`](rpc::Proxy::oneway) or other uses of the message core.
///
/// Arguments and results cross the wire with serde: they must be owned,
/// `Serialize + Deserialize` types. A method takes `&self` or `&mut self`; calls to
/// one published server run one at a time either way.
///
/// **Wire names and versions.** The message of a method is named
/// `Service.method(T1,T2)->R` (the types as written): a client and a server built
/// from different versions of the trait, where a method was removed, renamed or
/// changed its types, do not silently mis-decode each other's bytes; the call fails
/// with [`RpcError::Fault`](rpc::RpcError::Fault) saying the server does not offer
/// that method and signature. `#[tutti::service(name = "calc.v1")]` sets the service
/// part of the names (the default is the trait's name), so two traits of the same
/// name in different crates stay apart.
///
/// Local and remote calls behave as with [`Proxy`](rpc::Proxy): a client of an
/// object published by the same endpoint moves typed values (the implementation's
/// future is boxed once per call); any other goes over TCP. A server that is gone
/// makes calls fail with [`RpcError::ConnectionLost`](rpc::RpcError::ConnectionLost),
/// [`Connect`](rpc::RpcError::Connect) or [`NoObject`](rpc::RpcError::NoObject), and
/// every call has the proxy's deadline ([`RpcError::Timeout`](rpc::RpcError::Timeout)).
///
/// ```
/// use tutti::rpc::{Rpc, RpcError, Vendor};
///
/// /// A calculator with a memory.
/// #[tutti::service]
/// pub trait Calculator {
///     /// Adds `x` to the memory and returns it.
///     async fn add(&mut self, x: i64) -> i64;
///     /// The memory divided by `by`, or why not.
///     async fn divide(&self, by: i64) -> Result<i64, String>;
/// }
///
/// #[derive(Default)]
/// struct Memory(i64);
///
/// impl Calculator for Memory {
///     async fn add(&mut self, x: i64) -> i64 {
///         self.0 += x;
///         self.0
///     }
///     async fn divide(&self, by: i64) -> Result<i64, String> {
///         self.0.checked_div(by).ok_or_else(|| format!("cannot divide {} by {by}", self.0))
///     }
/// }
///
/// let server = Rpc::builder().cookie("s3cret").build()?;
/// let url = server.publish("calc/main/1", CalculatorServer::new(Memory::default()), Vendor::Sequential)?;
///
/// // Another endpoint (as another program would be): the client knows the trait only.
/// let client = Rpc::builder().cookie("s3cret").client_only().build()?;
/// let calc: CalculatorClient = client.client(&url)?;
/// assert!(!calc.proxy().is_local());
/// assert_eq!(calc.add_blocking(40)?, 40);
/// assert_eq!(tutti::block_on(calc.add(2))?, 42);
/// assert_eq!(calc.divide_blocking(0)?, Err("cannot divide 42 by 0".to_string()));
///
/// // The server's own client is local: no bytes.
/// let here: CalculatorClient = server.client(url.clone())?;
/// assert!(here.proxy().is_local());
/// assert_eq!(here.divide_blocking(2)?, Ok(21));
///
/// // The server gone: a clear error, not a hang.
/// server.close();
/// assert!(matches!(calc.add_blocking(1), Err(RpcError::ConnectionLost { .. } | RpcError::Connect { .. })));
/// # Ok::<(), RpcError>(())
/// ```
///
/// Misuse is a compile error naming the rule: a method must be an `async fn`
///
/// ```compile_fail
/// #[tutti::service]
/// trait Clock {
///     fn now(&self) -> u64; // error: service method `now` must be an `async fn`
/// }
/// ```
///
/// and its arguments are sent as values, so they are owned:
///
/// ```compile_fail
/// #[tutti::service]
/// trait Greeter {
///     async fn greet(&self, name: &str) -> String; // error: take an owned type
/// }
/// ```
///
/// [`CalculatorServer::new(impl)`]: rpc::Rpc::publish
#[cfg(feature = "macros")]
pub use tutti_macros::service;

/// Items the code generated by [`service`] uses; not part of the API.
#[doc(hidden)]
pub mod __private {
    pub use crate::rpc::method_error;
    pub use serde;
}

/// The README's code runs as a doctest so that the tour stays true.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
pub struct ReadmeDoctests;

/// The examples of `docs/ranks.md` run as doctests too.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/ranks.md")]
pub struct RanksDoctests;
