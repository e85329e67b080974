//! `tutti soak`: fault soaks, each bounded by `--seconds`. A soak runs a
//! system while faults are injected into it for the whole run, checks that
//! nothing was lost and that no survivor hung, and reports what it injected
//! and counted (`"verified": true` only when nothing was lost).
//!
//! One file per soak, one variant of [`SoakCommand`] each.

pub mod mpi;
pub mod rpc;
pub mod shm;

use clap::Subcommand;

/// The soaks.
#[derive(Subcommand, Debug)]
pub enum SoakCommand {
    /// A shared-memory system of processes exchanging checksummed messages
    /// while a supervisor kills a random one with SIGKILL every few seconds
    /// and starts a new one into the same named system.
    Shm(shm::ShmSoakArgs),
    /// An `mpirun` job, again and again, in which one rank dies in the middle
    /// of a fence: every other rank must end, the job naming the dead rank,
    /// within a bounded time.
    Mpi(mpi::MpiSoakArgs),
    /// An RPC server under churning clients (calls then vanishing, cut
    /// frames, garbage, no or half a handshake, half-closes, wrong cookies,
    /// answers never read) beside well-behaved clients whose every answer is
    /// checked.
    Rpc(rpc::RpcSoakArgs),
}

impl SoakCommand {
    /// Whether `--json` was asked for.
    pub fn json(&self) -> bool {
        match self {
            SoakCommand::Shm(a) => a.json,
            SoakCommand::Mpi(a) => a.json,
            SoakCommand::Rpc(a) => a.json,
        }
    }

    /// Runs the soak.
    pub fn run(&self) -> Result<crate::report::Report, String> {
        match self {
            SoakCommand::Shm(a) => shm::run(a),
            SoakCommand::Mpi(a) => mpi::run(a),
            SoakCommand::Rpc(a) => rpc::run(a),
        }
    }
}

/// Milliseconds since the Unix epoch (deadlines shared between processes).
pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}
