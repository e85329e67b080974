//! What the integration suites that run the same bodies in-process and under
//! `mpirun` share: choosing the world, and reporting.

use std::time::Duration;

use tutti::world::{launched_by_mpi, TransportKind, World};

/// Runs `run_all` on the world the environment configures when `mpirun`
/// launched this process; otherwise in-process, once per `(locations,
/// workers, aggregation)` shape. `name` prefixes every line it prints.
pub fn run_suite(name: &str, shapes: &[(usize, usize, usize)], run_all: impl Fn(&World)) {
    if launched_by_mpi() {
        let world = World::from_env().expect("world");
        if world.config().transport() != TransportKind::Mpi && world.ranks() == 1 {
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
        let world = World::builder()
            .ignore_env()
            .transport(TransportKind::InProcess)
            .locations(locations)
            .workers(workers)
            .aggregation(aggregation)
            .flush_after(Duration::from_micros(200))
            .build()
            .expect("world");
        println!("{name}: {locations} locations, {workers} workers, aggregation {aggregation}");
        run_all(&world);
    }
    println!("{name}: all passed in-process");
}
