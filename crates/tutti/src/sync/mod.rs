//! Layer 1 synchronisation: primitives that tasks wait on by suspending, not blocking.
//!
//! Every waiting operation here is a future (the awaiting task gives its worker back) and
//! also has a blocking form for plain threads, which on a worker keeps executing other
//! work. So far this is the [`DataflowVar`], Blip's single-assignment variable.
//!
//! ```
//! use tutti::sync::DataflowVar;
//!
//! let v = DataflowVar::new();
//! std::thread::scope(|s| {
//!     s.spawn(|| v.set(7).unwrap());
//!     assert_eq!(*v.get(), 7);
//! });
//! ```

mod dataflow;
mod signal;

pub use dataflow::{DataflowError, DataflowVar, Read};
pub(crate) use signal::{Signal, Wait};
