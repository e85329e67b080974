//! # tutti
//!
//! One runtime for parallel and distributed programs. Fork-join closures,
//! async tasks and (in later layers) CSP processes, actors and remote method
//! invocations all run on **one work-stealing scheduler**.
//!
//! Layer 0, [`runtime`], owns the workers: `join`/`scope` for recursive work
//! (depth-first on the own deque, thieves take the oldest pieces), `spawn` for
//! independent async tasks (served FIFO, with a bounded "run next" slot so a
//! message ping-pong stays on one core), `block_on`, timers, parallel loops and
//! sequential groups. Layer 1, [`sync`], adds dataflow variables.
//!
//! ```
//! fn fib(n: u64) -> u64 {
//!     if n < 2 { return n; }
//!     let (a, b) = tutti::join(|| fib(n - 1), || fib(n - 2));
//!     a + b
//! }
//! assert_eq!(fib(20), 6765);
//! ```
#![deny(missing_docs)]
#![warn(clippy::undocumented_unsafe_blocks)]

pub mod actor;
pub(crate) mod call;
pub mod csp;
pub mod diag;
pub mod graph;
pub(crate) mod loom;
pub mod msg;
pub mod remote;
pub mod rmi;
pub mod rpc;
pub mod runtime;
pub mod sync;
#[cfg(test)]
pub(crate) mod test_util;
pub mod world;

pub use rmi::spmd;
pub use runtime::{
    block_on, join, par_chunks_mut, par_for, scope, sleep, sleep_until, spawn, timeout, timeout_at,
    yield_now, BuildError, Builder, Elapsed, IdleStrategy, JoinError, JoinHandle, Outcome, Runtime,
    Scope, SequentialGroup,
};
pub use sync::{DataflowError, DataflowVar};

/// The README's code runs as a doctest so that the tour stays true.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
pub struct ReadmeDoctests;
