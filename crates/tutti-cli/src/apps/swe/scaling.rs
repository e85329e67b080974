//! `--scaling`: strong and weak scaling of both implementations over 1, 2, 4
//! … in-process locations.

use std::sync::Arc;

use tutti::graph::Scheme;
use tutti::world::World;

use super::execute::run_once;
use super::{Config, Impl, SweArgs};
use crate::plot;
use crate::report::{Report, Stats};

/// A scaling curve's implementation and kind (strong or weak); its points are
/// (locations, median rate).
type Curve = (&'static str, &'static str);

/// Strong (same grid) and weak (grid grows with the locations) scaling of both
/// implementations over 1, 2, 4 … in-process locations (medians of `--runs`
/// alternating rounds after `--warmup` ones; only the correctness of each run
/// is checked, not its bits). With `--plot`, draws the speedups.
pub fn scaling(
    report: &mut Report,
    a: &SweArgs,
    max: usize,
    base: &Config,
    verified: &mut bool,
) -> Result<(), String> {
    let plan = a.run.plan();
    let mut curves: Vec<(Curve, Vec<(f64, f64)>)> = Vec::new();
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
            // The two implementations alternating; medians.
            for round in 0..plan.total() {
                for (k, which) in [Impl::Graph, Impl::Bsp].into_iter().enumerate() {
                    if let Some(o) = run_once(&world, &cfg, &placement, which, Scheme::TwoSided)? {
                        *verified &= o.cfl_ok && o.errors.is_empty();
                        if round >= plan.warmup {
                            rates[k].push(updates / o.secs / 1e6);
                        }
                    }
                }
            }
            for (k, name) in ["graph", "bsp"].into_iter().enumerate() {
                if let Some(st) = Stats::of(&rates[k]) {
                    let median = st.median;
                    report.result(&format!("{name} {kind} L={l}"), "cell_updates", st, "M/s");
                    match curves.iter_mut().find(|c| c.0 == (name, kind)) {
                        Some(c) => c.1.push((l as f64, median)),
                        None => curves.push(((name, kind), vec![(l as f64, median)])),
                    }
                }
            }
        }
        l *= 2;
    }
    // Speedup over one location: strong = rate(L) ÷ rate(1) on the same grid;
    // weak (scaled speedup) = rate(L) ÷ rate(1) with the grid grown L times.
    let lines: Vec<plot::Curve> = curves
        .iter()
        .filter_map(|((name, kind), pts)| {
            let one = pts.first().filter(|p| p.0 == 1.0)?.1;
            let pts = pts.iter().map(|&(l, r)| (l, r / one)).collect();
            Some((format!("tutti {name}, {kind}"), pts))
        })
        .collect();
    for ((name, kind), line) in curves.iter().map(|c| c.0).zip(&lines) {
        if let Some(&(l, s)) = line.1.last() {
            report.param(&format!("speedup_{name}_{kind}_L{l}"), s);
        }
    }
    if let Some(path) = &a.plot {
        let workers = a.world.workers.unwrap_or_else(crate::default_workers);
        let title = format!(
            "tutti swe: {} × {} cells, {} steps, {workers} workers",
            base.grid.nx, base.grid.ny, base.steps
        );
        plot::speedup_on(path, &title, "locations", Some(workers), &lines)?;
        report.param("plot_file", path.display().to_string());
    }
    Ok(())
}
