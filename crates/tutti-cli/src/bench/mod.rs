//! Micro-benchmarks of one runtime mechanism each, tutti beside its peers.

pub mod actor;
pub mod backpressure;
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

/// A tutti runtime and a tokio multi-thread runtime (I/O and timers on) of
/// `workers` workers each: the two sides of a network benchmark.
pub(crate) fn net_runtimes(
    workers: usize,
) -> Result<(tutti::Runtime, tokio::runtime::Runtime), String> {
    let w = workers;
    let rt = tutti::Runtime::builder()
        .workers(w)
        .build()
        .map_err(|e| format!("cannot build a tutti runtime with {w} workers: {e}"))?;
    let tokio_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(w)
        .enable_all()
        .build()
        .map_err(|e| format!("cannot build a tokio runtime with {w} workers: {e}"))?;
    Ok((rt, tokio_rt))
}
