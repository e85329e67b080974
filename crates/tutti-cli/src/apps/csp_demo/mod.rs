//! `tutti csp-demo`: small process networks showing the CSP layer's shared
//! channel ends and non-blocking barrier, each verifying its result.

pub mod client_server;
pub mod nbbarrier;

use clap::Subcommand;

/// The demos.
#[derive(Subcommand, Debug)]
pub enum DemoCommand {
    /// Clients sharing one channel to a server (any-to-one), then to a bank of
    /// servers sharing its receiving end (any-to-any).
    ClientServer(client_server::ClientServerArgs),
    /// Phases of a stencil computation with preparatory work overlapped with a
    /// non-blocking barrier (`arrive`, then await), beside a blocking `sync`.
    Nbbarrier(nbbarrier::NbBarrierArgs),
}

impl DemoCommand {
    /// Whether `--json` was asked for.
    pub fn json(&self) -> bool {
        match self {
            DemoCommand::ClientServer(a) => a.json,
            DemoCommand::Nbbarrier(a) => a.json,
        }
    }

    /// Runs the demo.
    pub fn run(&self) -> Result<crate::report::Report, String> {
        match self {
            DemoCommand::ClientServer(a) => client_server::run(a),
            DemoCommand::Nbbarrier(a) => nbbarrier::run(a),
        }
    }
}
