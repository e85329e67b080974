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

/// The `--workers` and `--locations` options of the SPMD applications.
#[derive(clap::Args, Clone, Copy, Debug)]
pub struct WorldOpts {
    /// Worker threads per process [default: `TUTTI_WORKERS` or the cores ÷ ranks].
    #[arg(long, value_parser = crate::parse_workers)]
    pub workers: Option<usize>,
    /// Locations per process [default: `TUTTI_LOCATIONS` or one per worker].
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=1024))]
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
