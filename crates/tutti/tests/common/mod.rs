//! What the integration suites that run the same bodies in-process, under
//! `mpirun` and as a shared-memory system of processes share: choosing the
//! world, and reporting.

use std::time::Duration;

pub mod in_process;

use tutti::world::{launched_by_mpi, World};

/// Runs `run_all` on the world the environment configures when `mpirun` or
/// `tutti launch` (a named shared-memory system, `TUTTI_SYSTEM`) launched this
/// process; otherwise in-process, once per `(locations, workers,
/// aggregation)` shape, and then as a shared-memory system of 2 processes of
/// this same binary (`tutti::world::launch`; `TUTTI_SUITE_SHM=0` skips it).
/// `name` prefixes every line it prints.
pub fn run_suite(name: &str, shapes: &[(usize, usize, usize)], run_all: impl Fn(&World)) {
    if launched_by_mpi() || std::env::var_os("TUTTI_SYSTEM").is_some() {
        let world = World::from_env().expect("world");
        if !world.config().transport().uses_mpi() && world.ranks() == 1 {
            eprintln!("{name}: launched by mpirun without MPI support; running in-process");
        }
        run_all(&world);
        if world.rank() == 0 {
            println!(
                "{name}: all passed on {} rank(s) × {} location(s)",
                world.ranks(),
                world.locations_per_rank()
            );
        }
        return;
    }
    for &(locations, workers, aggregation) in shapes {
        let world = in_process::in_process(locations, workers)
            .aggregation(aggregation)
            .flush_after(Duration::from_micros(200))
            .build()
            .expect("world");
        println!("{name}: {locations} locations, {workers} workers, aggregation {aggregation}");
        run_all(&world);
    }
    println!("{name}: all passed in-process");
    if std::env::var("TUTTI_SUITE_SHM").as_deref() != Ok("0") {
        let mut cmd = std::process::Command::new(std::env::current_exe().expect("own path"));
        cmd.env("TUTTI_LOCATIONS", "2").env("TUTTI_WORKERS", "1");
        let statuses = tutti::world::launch(2, cmd).expect("launch");
        for (rank, s) in statuses.iter().enumerate() {
            assert!(
                s.success(),
                "{name}: rank {rank} of the shared-memory system: {s}"
            );
        }
        println!("{name}: all passed as a shared-memory system of 2 processes");
    }
}
