//! The in-process world of the suites that build one themselves: `locations` locations
//! on `workers` workers, whatever the environment says (the one way the suites set it
//! up; included by path where the rest of `common` is not used).

use tutti::world::{TransportKind, World};

/// A world of `locations` locations on `workers` workers in this process, built.
// The suites that include all of `common` build their worlds with `run_suite`.
#[allow(dead_code)]
pub fn in_process_world(locations: usize, workers: usize) -> World {
    in_process(locations, workers)
        .build()
        .expect("an in-process world")
}

/// The builder of that world, for suites that set more.
pub fn in_process(locations: usize, workers: usize) -> tutti::world::WorldBuilder {
    World::builder()
        .ignore_env()
        .transport(TransportKind::InProcess)
        .locations(locations)
        .workers(workers)
}
