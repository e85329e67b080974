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
//! | 4 | [`rpc`] | URL-addressed objects over TCP: vendors publish, proxies call (also one-way), failure callbacks | [`rpc::Rpc`], [`rpc::Vendor`], [`rpc::Proxy`], [`rpc::Url`] |
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

/// The README's code runs as a doctest so that the tour stays true.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
pub struct ReadmeDoctests;
