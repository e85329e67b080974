//! `tutti launch -n P -- <command> [args]`: P processes of one command as a
//! named shared-memory system, no MPI needed (`tutti::world::launch`). Each
//! gets `TUTTI_SYSTEM`, `TUTTI_RANKS`, `TUTTI_RANK` and `TUTTI_TRANSPORT=shm`;
//! a world it builds from the environment is one rank of the system. The
//! launcher waits for all and exits with the first failing rank's status
//! (1 for one killed by a signal), naming every rank that failed.

use std::os::unix::process::ExitStatusExt;
use std::process::Command;

use clap::Args;

/// Arguments of `tutti launch`.
#[derive(Args, Debug)]
pub struct LaunchArgs {
    /// Processes to start (1 to 64).
    #[arg(short = 'n', long, value_parser = clap::value_parser!(u64).range(1..=64))]
    processes: u64,
    /// The command and its arguments (after `--`).
    #[arg(last = true, required = true)]
    command: Vec<String>,
}

/// Runs the processes and exits with their verdict.
pub fn run(a: &LaunchArgs) -> ! {
    let mut c = Command::new(&a.command[0]);
    c.args(&a.command[1..]);
    let statuses = match tutti::world::launch(a.processes as usize, c) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("tutti launch: cannot start {:?}: {e}", a.command[0]);
            std::process::exit(1);
        }
    };
    let mut code = 0;
    for (rank, s) in statuses.iter().enumerate() {
        if s.success() {
            continue;
        }
        match (s.code(), s.signal()) {
            (Some(c), _) => eprintln!("tutti launch: rank {rank} exited with status {c}"),
            (None, Some(sig)) => eprintln!("tutti launch: rank {rank} was killed by signal {sig}"),
            _ => eprintln!("tutti launch: rank {rank} failed: {s}"),
        }
        if code == 0 {
            code = s.code().unwrap_or(1).max(1);
        }
    }
    std::process::exit(code)
}
