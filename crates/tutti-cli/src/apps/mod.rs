//! The seed applications: real computations that verify their own results.

pub mod csp_demo;
pub mod db;
pub mod gauss;
pub mod hello;
pub mod jacobi;
pub mod mad;
pub mod scc;
pub mod sort;
pub mod weather;

/// The world of an SPMD application: the environment (`TUTTI_*`) and the
/// launcher decide what `workers` and `locations` (per process) leave open.
pub fn spmd_world(
    workers: Option<usize>,
    locations: Option<usize>,
) -> Result<tutti::world::World, String> {
    let mut b = tutti::world::World::builder();
    if let Some(w) = workers {
        b = b.workers(w);
    }
    if let Some(l) = locations {
        b = b.locations(l);
    }
    b.build()
        .map_err(|e| format!("cannot start the world: {e}"))
}
