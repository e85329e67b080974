//! Running a CSP process network to its end.
//!
//! Every command that runs a network of `tutti::csp` processes ends it
//! through [`finish`], the one place that turns the runtime's answer into an
//! outcome: the network ended, or it could no longer progress and the runtime
//! said which process waits on what (a deadlock report).

use tutti::csp::ParFuture;

/// How a network run ended badly: the runtime's deadlock report.
pub type DeadlockReport = String;

/// Awaits `network` (a `par` of processes) to its end.
pub async fn finish(network: ParFuture<'_>) -> Result<(), DeadlockReport> {
    network.await.map_err(|deadlock| deadlock.to_string())
}
