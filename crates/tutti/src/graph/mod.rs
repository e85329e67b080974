//! Layer 4: actor graphs with ports (Pond, after Miguel 2019).
//!
//! An actor is a finite-state machine with named, typed input and output
//! **ports**. Ports of two actors are joined by a **bounded FIFO channel** of
//! capacity `n`. An actor's [`act()`](PortActor::act) runs when one of its ports
//! changes — a token arrived, room freed up on an output, a neighbour
//! terminated — or, with [`Firing::AllReady`] (Pond's rule), only when every
//! connected input holds a token and every connected output has room. An actor
//! ends by returning [`Status::Done`]; the run ends when every actor has.
//!
//! An [`ActorGraph`] is built collectively: every location (on every rank)
//! runs the same construction code, so construction errors ([`BuildError`]:
//! ports of different types, a port connected twice, …) are the same
//! everywhere. It is then placed over the world's locations
//! ([`ActorGraph::partition`]: blocks, rectangular or Hilbert-curve pieces of a
//! grid, an explicit table, or METIS with the `metis` feature), which reports
//! the edge cut, and run with [`ActorGraph::run`] on every location.
//!
//! Channels within a location are lock-free rings; between locations they
//! ride the world's messages with credits (two-sided: each token costs a credit
//! that the consumer returns when it takes the token, so a full channel holds
//! its producer back across ranks). `act()` calls are tasks of the one
//! scheduler: no thread per actor. A graph that can no longer progress (every
//! actor waiting, nothing in flight) is reported as [`RunError::Stalled`] on
//! every location, naming the actors and what they wait on.
//!
//! ```
//! use std::sync::Arc;
//! use tutti::graph::{PortActor, ActorGraph, Partition, Ports, RunError, Status};
//! use tutti::world::World;
//!
//! // Two actors each waiting for the other: reported, not hung.
//! let world = World::builder().locations(1).workers(1).build().unwrap();
//! let errs = world.run(|loc| async move {
//!     let mut b = ActorGraph::builder();
//!     let a = b.actor("a").unwrap();
//!     let c = b.actor("c").unwrap();
//!     let (ao, ai) = (b.output::<u8>(a, "out").unwrap(), b.input::<u8>(a, "in").unwrap());
//!     let (co, ci) = (b.output::<u8>(c, "out").unwrap(), b.input::<u8>(c, "in").unwrap());
//!     b.connect(ao, ci, 1).unwrap();
//!     b.connect(co, ai, 1).unwrap();
//!     let g = b.build();
//!     let p = g.partition(1, &Partition::Block).unwrap();
//!     let loc = Arc::new(loc);
//!     g.run(&loc, &p, |_| -> Box<dyn PortActor> { Box::new(|_: &mut Ports| Status::Continue) })
//!         .await
//! });
//! assert!(matches!(&errs[0], Err(RunError::Stalled(w)) if w.len() == 2));
//! ```

mod actor;
mod build;
mod channel;
#[cfg(feature = "metis")]
mod metis;
mod onesided;
mod partition;
mod port;
mod run;
#[cfg(feature = "fuzzing")]
pub(crate) use run::parse_message;

pub use actor::{PortActor, Ports, Status};
pub use build::{ActorGraph, BuildError, Firing, GraphBuilder, Scheme};
pub use partition::{Curve, Partition, PartitionError, Placement};
pub use port::{ActorId, InPort, OutPort, SendError, Token};
pub use run::{RunError, RunReport};
