//! Micro-benchmarks of one runtime mechanism each, tutti beside its peers.

pub mod actor;
pub mod codec;
pub mod csp;
pub mod diag;
pub mod fib;
pub mod graph;
pub mod http;
pub mod idle;
pub mod net;
pub mod par_iter;
pub mod priority;
pub mod rmi;
pub mod rmi_sweep;
pub mod rpc;
pub mod rpc_peers;
pub mod shm;
pub mod spawn;
pub mod trace;
pub mod world;
