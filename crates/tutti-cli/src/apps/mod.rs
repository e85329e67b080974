//! The seed applications: real computations that verify their own results.

pub mod actor_world;
pub mod csp_demo;
pub mod db;
pub mod gauss;
pub mod hang_demo;
pub mod hello;
pub mod jacobi;
pub mod mad;
pub mod rpc_demo;
pub mod scc;
pub mod soak;
pub mod sort;
pub mod swe;
pub mod weather;

/// Runs `f` on each rank of `world` in turn (the others wait at a barrier),
/// so that a sequential reference timed on every rank never competes with
/// its own copies on the other ranks.
pub fn in_turns<R>(world: &tutti::world::World, f: impl FnOnce() -> R) -> R {
    let mut f = Some(f);
    let mut out = None;
    for turn in 0..world.ranks() {
        if turn == world.rank() {
            out = f.take().map(|f| f());
        }
        if world.ranks() > 1 {
            world.run(|loc| async move { loc.barrier().await });
        }
    }
    match out {
        Some(r) => r,
        None => unreachable!("every rank has a turn"),
    }
}

/// The hidden options of a command that starts copies of itself in other
/// processes (`--processes`): what the child is and where its result goes.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct ChildOpts {
    /// Internal: the role of a child process (`tutti-member`, `uds-client`).
    #[arg(long, hide = true)]
    pub role: Option<String>,
    /// Internal: a child's result file or socket.
    #[arg(long, hide = true)]
    pub out: Option<String>,
    /// Internal: a Unix-socket client process's number.
    #[arg(long, hide = true)]
    pub member: Option<usize>,
}

/// This binary run as `tutti <command> --role <role>` (the caller adds the
/// command's own options).
pub fn child_command(command: &str, role: &str) -> Result<std::process::Command, String> {
    let exe = std::env::current_exe().map_err(|e| format!("own path: {e}"))?;
    let mut c = std::process::Command::new(exe);
    c.args([command, "--role", role]);
    Ok(c)
}

/// Launches `cmd` (a `tutti-member` child of `command`) as the `p` processes of
/// a shared-memory system; rank 0 writes its outcome to the file named by
/// `--out`, whose text is returned. A failed rank is an error naming it.
pub fn launch_members(
    mut cmd: std::process::Command,
    command: &str,
    p: usize,
) -> Result<String, String> {
    let out = std::env::temp_dir().join(format!("tutti-{command}-procs-{}", std::process::id()));
    let _ = std::fs::remove_file(&out);
    cmd.arg("--out")
        .arg(&out)
        .stdout(std::process::Stdio::null());
    let st = tutti::world::launch(p, cmd).map_err(|e| format!("cannot launch: {e}"))?;
    if let Some((rank, s)) = st.iter().enumerate().find(|(_, s)| !s.success()) {
        return Err(format!("tutti {command}: rank {rank} of {p} failed: {s}"));
    }
    let text = std::fs::read_to_string(&out).map_err(|e| format!("{}: {e}", out.display()));
    let _ = std::fs::remove_file(&out);
    text
}

/// The `--workers` and `--locations` options of the SPMD applications.
#[derive(clap::Args, Clone, Copy, Debug)]
pub struct WorldOpts {
    /// Worker threads per process [default: the cores ÷ the processes on this host].
    #[arg(long, env = "TUTTI_WORKERS", value_parser = crate::parse_workers)]
    pub workers: Option<usize>,
    /// Locations per process [default: one per worker].
    #[arg(long, env = "TUTTI_LOCATIONS", value_parser = clap::value_parser!(u64).range(1..=1024))]
    pub locations: Option<u64>,
}

impl WorldOpts {
    /// The world of an SPMD application: the environment (`TUTTI_*`) and the
    /// launcher decide what `--workers` and `--locations` leave open.
    pub fn world(&self) -> Result<tutti::world::World, String> {
        let mut b = tutti::world::World::builder();
        if let Some(w) = self.workers {
            b = b.workers(w);
        }
        if let Some(l) = self.locations {
            b = b.locations(l as usize);
        }
        b.build()
            .map_err(|e| format!("cannot start the world: {e}"))
    }
}

/// An in-process world of `locations` locations on 2 workers, whatever the
/// environment says (for the SPMD applications' unit tests).
#[cfg(test)]
pub(crate) fn test_world(locations: usize, aggregation: usize) -> tutti::world::World {
    tutti::world::World::builder()
        .ignore_env()
        .transport(tutti::world::TransportKind::InProcess)
        .locations(locations)
        .workers(2)
        .aggregation(aggregation)
        .build()
        .expect("an in-process world")
}
