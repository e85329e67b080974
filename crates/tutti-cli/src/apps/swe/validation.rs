//! The physics checks of a run, as rows of its report: the planar dam break
//! against its exact solution (with a refinement series and its convergence
//! order, and the lake at rest at every resolution), and the radial dam
//! break's symmetry against a 1-D radial reference.

use std::sync::Arc;

use tutti::graph::Scheme;
use tutti::world::World;

use super::exact::{self, Errors};
use super::execute::run_once;
use super::radial::Symmetry;
use super::scenario::{Grid, Scenario};
use super::{Config, Field, Impl, Placing};
use crate::report::{Report, Stats};

/// The largest L1 error of the planar dam break a run may have, as a share
/// of the error of water left where it started: a scheme whose waves do not
/// move, or move at the wrong speed, fails.
const DAM_BREAK_L1_SHARE: f64 = 0.5;

/// The lowest convergence order (L1, fitted over the series) that passes.
const MIN_ORDER: f64 = 0.5;

/// What the dam-break checks need besides the main run's field.
pub struct Series<'a> {
    pub world: &'a World,
    pub placing: Placing,
    pub patch: usize,
    /// `--ny`, if given: the series keeps it; otherwise each grid is square.
    pub ny: Option<usize>,
    /// `--convergence`: cells along x of each grid of the series.
    pub levels: &'a [usize],
}

/// The planar dam break's error against the exact solution at the main
/// run's resolution, the lake at rest there, and over a refinement series
/// the same pair at each resolution and the observed orders. Returns whether
/// every check passed.
pub fn dam_break(
    report: &mut Report,
    cfg: &Config,
    field: Option<&Field>,
    series: &Series<'_>,
) -> Result<bool, String> {
    let t = cfg.end_time();
    let d = exact::dam_break();
    let reach = d.wall_time();
    if t >= reach {
        return Err(format!(
            "the dam break's waves reach the walls at t = {reach:.1} s; the exact solution holds only before (this run ends at {t:.1} s)"
        ));
    }
    report
        .param("exact_time", t)
        .param("exact_plateau_depth", d.hm)
        .param("exact_shock_speed", d.shock);
    let still = still_error(cfg, t);
    report.param("exact_l1_error_if_nothing_moved", still);
    let mut ok = true;
    // The main run's grid is reported with the series if the series has it.
    let in_series = series.levels.iter().any(|&n| {
        n == cfg.grid.nx && series.ny.unwrap_or(n) == cfg.grid.ny && series.patch == cfg.pw
    });
    // Only rank 0 has the field; every rank runs the lake (a collective run).
    if let Some(f) = field {
        let e = exact::errors(&f.h, &cfg.grid, t);
        ok &= e.l1 <= DAM_BREAK_L1_SHARE * still;
        if !in_series {
            error_rows(report, cfg.grid.nx, &e);
        }
    }
    if !in_series {
        ok &= lake(report, cfg, series)?;
    }
    if series.levels.is_empty() {
        return Ok(ok);
    }
    let mut done: Vec<(usize, Errors)> = Vec::new();
    for &n in series.levels {
        let ny = series.ny.unwrap_or(n);
        let mut c = Config::new(n, ny, series.patch, 1, None, Scenario::DamBreak1d)?;
        c.until(t)?;
        if let Some(out) = run(series, &c)? {
            ok &= out.cfl_ok && out.errors.is_empty();
            if let Some(f) = &out.field {
                let e = exact::errors(&f.h, &c.grid, t);
                ok &= e.l1 <= DAM_BREAK_L1_SHARE * still_error(&c, t);
                error_rows(report, n, &e);
                done.push((n, e));
            }
        }
        ok &= lake(report, &c, series)?;
    }
    for w in done.windows(2) {
        let ((n0, e0), (n1, e1)) = (w[0], w[1]);
        let name = format!("dam-break order nx={n0}→{n1}");
        for (metric, a, b) in [
            ("order_l1", e0.l1, e1.l1),
            ("order_l1_near_shock", e0.l1_near_shock, e1.l1_near_shock),
            ("order_l1_away_from_shock", e0.l1_away, e1.l1_away),
            ("order_l1_rarefaction", e0.l1_rarefaction, e1.l1_rarefaction),
            ("order_linf", e0.linf, e1.linf),
        ] {
            report.result(&name, metric, Stats::single(exact::order(n0, a, n1, b)), "");
        }
        // Every refinement must lower the L1 error.
        ok &= e1.l1 < e0.l1;
    }
    if done.len() >= 2 {
        let fit = |f: fn(&Errors) -> f64| {
            exact::fitted_order(&done.iter().map(|(n, e)| (*n, f(e))).collect::<Vec<_>>())
        };
        let l1 = fit(|e| e.l1);
        for (metric, order) in [
            ("order_l1", l1),
            ("order_l1_near_shock", fit(|e| e.l1_near_shock)),
            ("order_l1_away_from_shock", fit(|e| e.l1_away)),
            ("order_l1_rarefaction", fit(|e| e.l1_rarefaction)),
        ] {
            report.result("dam-break order fitted", metric, Stats::single(order), "");
        }
        report.param("convergence_order_l1", l1);
        ok &= l1 >= MIN_ORDER;
    }
    Ok(ok)
}

/// The L1 error at `t` of the water left where it started on `cfg`'s grid.
fn still_error(cfg: &Config, t: f64) -> f64 {
    let g = &cfg.grid;
    let h: Vec<f64> = (0..g.ny)
        .flat_map(|j| (0..g.nx).map(move |i| (i, j)))
        .map(|(i, j)| g.initial(Scenario::DamBreak1d, i, j)[0])
        .collect();
    exact::errors(&h, g, t).l1
}

fn error_rows(report: &mut Report, nx: usize, e: &Errors) {
    let name = format!("dam-break nx={nx}");
    report.result(&name, "l1_error_h", Stats::single(e.l1), "m");
    for (metric, v) in [
        ("l1_error_h_near_shock", e.l1_near_shock),
        ("l1_error_h_away_from_shock", e.l1_away),
        ("l1_error_h_rarefaction", e.l1_rarefaction),
        ("linf_error_h", e.linf),
    ] {
        report.result(&name, metric, Stats::single(v), "m");
    }
}

/// Runs the graph implementation of `cfg` on the series' world.
fn run(series: &Series<'_>, cfg: &Config) -> Result<Option<super::Outcome>, String> {
    let cfg = Arc::new(cfg.clone());
    let placement = Arc::new(cfg.placement(series.world.locations(), series.placing)?);
    run_once(
        series.world,
        &cfg,
        &placement,
        Impl::Graph,
        Scheme::TwoSided,
    )
}

/// The lake at rest on the grid of `like` until its end time: the surface
/// must stay exactly flat and the water exactly still.
fn lake(report: &mut Report, like: &Config, series: &Series<'_>) -> Result<bool, String> {
    let (nx, ny) = (like.grid.nx, like.grid.ny);
    let mut c = Config::new(nx, ny, like.pw, 1, None, Scenario::SeaAtRest)?;
    c.until(like.end_time())?;
    let Some(out) = run(series, &c)? else {
        return Ok(true);
    };
    let Some(f) = &out.field else {
        return Ok(false);
    };
    let (surface, momentum) = exact::lake_errors(&c.grid, &f.h, &f.hu, &f.hv);
    let name = format!("lake-at-rest nx={nx}");
    report.result(&name, "linf_error_surface", Stats::single(surface), "m");
    report.result(&name, "linf_momentum", Stats::single(momentum), "m²/s");
    Ok(out.cfl_ok && out.errors.is_empty() && surface == 0.0 && momentum == 0.0)
}

/// The radial dam break's symmetry figures, as rows of the report. Returns
/// whether the front is round and where the 1-D reference has it, both to
/// within two cells (a first-order scheme's front is off by less than a cell
/// along any direction); without a check when the front has reached the
/// walls.
pub fn symmetry(report: &mut Report, s: &Symmetry, grid: &Grid) -> bool {
    report
        .param("radial_time", s.time)
        .param("radial_reference_cells", s.reference_cells)
        .param("radial_front_inside", s.front_inside);
    for (metric, value, unit) in [
        ("front_axes", s.front_axes, "m"),
        ("front_diagonals", s.front_diagonals, "m"),
        ("front_ratio_diagonal_over_axis", s.front_ratio, ""),
        ("front_reference", s.front_reference, "m"),
        ("centre_h", s.centre_h, "m"),
        ("centre_h_reference", s.centre_h_reference, "m"),
        ("axis_l1_vs_reference", s.axis_l1, "m"),
        ("axis_linf_vs_reference", s.axis_linf, "m"),
        ("diagonal_l1_vs_reference", s.diagonal_l1, "m"),
        ("diagonal_linf_vs_reference", s.diagonal_linf, "m"),
    ] {
        report.result("radial", metric, Stats::single(value), unit);
    }
    let cells = 2.0 * grid.dx.max(grid.dy);
    !s.front_inside
        || ((s.front_diagonals - s.front_axes).abs() <= cells
            && (s.front_axes - s.front_reference).abs() <= cells)
}

#[cfg(test)]
mod tests {
    use super::super::execute::sequential;
    use super::*;

    fn series<'a>(world: &'a World, levels: &'a [usize]) -> Series<'a> {
        Series {
            world,
            placing: Placing::Blocks,
            patch: 8,
            ny: Some(8),
            levels,
        }
    }

    fn dam(nx: usize) -> Config {
        let mut c = Config::new(nx, 8, 8, 1, None, Scenario::DamBreak1d).unwrap();
        c.until(20.0).unwrap();
        c
    }

    #[test]
    fn the_dam_break_converges_and_the_lake_stays_at_rest() {
        let world = crate::apps::test_world(2, 1);
        let c = dam(64);
        let f = sequential(&c).unwrap();
        let mut r = Report::new("swe");
        assert!(dam_break(&mut r, &c, Some(&f), &series(&world, &[64, 128, 256])).unwrap());
        let v = r.to_json();
        let l1 = |nx: usize| {
            v["results"]
                .as_array()
                .unwrap()
                .iter()
                .find(|row| {
                    row["impl"] == format!("dam-break nx={nx}") && row["metric"] == "l1_error_h"
                })
                .unwrap()["value"]
                .as_f64()
                .unwrap()
        };
        assert!(l1(256) < l1(128) && l1(128) < l1(64));
        assert!(v["params"]["convergence_order_l1"].as_f64().unwrap() >= MIN_ORDER);
        let lake = v["results"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|row| row["impl"].as_str().unwrap().starts_with("lake-at-rest"))
            .count();
        assert_eq!(lake, 6);
    }

    #[test]
    fn water_that_never_moved_fails_the_exact_check() {
        let world = crate::apps::test_world(1, 1);
        let c = dam(64);
        let mut still = Config::new(64, 8, 8, 0, Some(c.dt), Scenario::DamBreak1d).unwrap();
        still.steps = 0;
        let f = sequential(&still).unwrap();
        let mut r = Report::new("swe");
        assert!(!dam_break(&mut r, &c, Some(&f), &series(&world, &[])).unwrap());
    }

    #[test]
    fn a_run_past_the_walls_is_refused() {
        let world = crate::apps::test_world(1, 1);
        let mut c = dam(64);
        c.until(60.0).unwrap();
        let mut r = Report::new("swe");
        let e = dam_break(&mut r, &c, None, &series(&world, &[])).unwrap_err();
        assert!(e.contains("reach the walls"), "{e}");
    }
}
