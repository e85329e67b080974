//! `--scaling`: strong and weak scaling of both implementations over 1, 2, 4
//! … in-process locations.

use std::sync::Arc;

use tutti::graph::Scheme;
use tutti::world::World;

use super::execute::run_once;
use super::{Config, Impl, SweArgs};
use crate::report::{Report, Stats};

/// Strong (same grid) and weak (grid grows with the locations) scaling of both
/// implementations over 1, 2, 4 … in-process locations (medians of three
/// alternating rounds; only the correctness of each run is checked, not its
/// bits).
pub fn scaling(
    report: &mut Report,
    a: &SweArgs,
    max: usize,
    base: &Config,
    verified: &mut bool,
) -> Result<(), String> {
    let mut l = 1;
    while l <= max {
        let world = World::builder()
            .ignore_env()
            .transport(tutti::world::TransportKind::InProcess)
            .locations(l)
            .workers(a.world.workers.unwrap_or_else(crate::default_workers))
            .build()
            .map_err(|e| format!("cannot start the world: {e}"))?;
        for (kind, cfg) in [
            ("strong", base.clone()),
            (
                "weak",
                // A taller domain of as many cells per location: its own
                // (CFL) time step, the same work per cell.
                Config::new(
                    base.grid.nx,
                    base.grid.ny * l,
                    base.pw,
                    base.steps,
                    None,
                    base.scenario,
                )?,
            ),
        ] {
            let cfg = Arc::new(cfg);
            let placement = Arc::new(cfg.placement(l, a.placing)?);
            let updates = (cfg.cells() * cfg.steps) as f64;
            let mut rates = [Vec::new(), Vec::new()];
            // Three rounds, the two implementations alternating; medians.
            for _ in 0..3 {
                for (k, which) in [Impl::Graph, Impl::Bsp].into_iter().enumerate() {
                    if let Some(o) = run_once(&world, &cfg, &placement, which, Scheme::TwoSided)? {
                        *verified &= o.cfl_ok && o.errors.is_empty();
                        rates[k].push(updates / o.secs / 1e6);
                    }
                }
            }
            for (k, name) in ["graph", "bsp"].into_iter().enumerate() {
                if let Some(st) = Stats::of(&rates[k]) {
                    report.result(&format!("{name} {kind} L={l}"), "cell_updates", st, "M/s");
                }
            }
        }
        l *= 2;
    }
    Ok(())
}
