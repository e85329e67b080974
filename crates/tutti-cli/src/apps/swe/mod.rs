//! `tutti swe`: the shallow-water tsunami proxy of Miguel 2019, ch. 7 (Pond).
//!
//! A finite-volume solver of the shallow water equations on a Cartesian grid
//! (f-wave Riemann solver with the bathymetry source term, unsplit wave
//! propagation, walls all round; `solver.rs`), split into square patches.
//! `--impl graph` makes each patch an actor of a `tutti::graph` whose ports
//! carry ghost layers (`actors.rs`); `--impl bsp` runs the same patches on the
//! same locations in bulk-synchronous steps ending in a global all-reduce
//! (`bsp.rs`). Both run on one world, side by side (`--impl both`, the
//! default), in alternating rounds.
//!
//! **Verification**, printed by every run:
//! - mass (Σh) at the end equals the start to rounding (walls conserve it);
//! - for `sea-at-rest`, nothing moves: every momentum is exactly 0 and the
//!   surface `h + b` stays exactly where it was;
//! - with the fixed time step, the distributed result equals the sequential
//!   one-patch run bit for bit (and so the two implementations agree);
//! - no cell runs dry and the CFL number stays ≤ 0.5 every step.
//!
//! **Figures** as Pond counts them: cell updates per second (cells × steps ÷
//! time) and FLOP/s (per cell update: two edge solves of
//! [`solver::FLOPS_PER_EDGE`] plus [`solver::FLOPS_PER_CELL`]).

mod actors;
mod bsp;
mod checks;
mod config;
mod exact;
mod execute;
mod input;
mod netcdf;
mod output;
mod radial;
mod scaling;
mod scenario;
mod snapshot;
pub mod solver;
mod validation;

use std::sync::Arc;

use clap::{Args, ValueEnum};
use tutti::graph::Scheme;
use tutti::world::LocationId;

use crate::measure::{Progress, RunOpts};
use crate::report::{Report, Stats};
use checks::check;
pub use config::{Capture, Config};
use execute::{run_once, sequential, Field, Outcome};
pub use scenario::Scenario;

/// Which implementation(s) to run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Impl {
    /// Patches as actors of an actor graph, ghost layers through ports.
    Graph,
    /// Bulk-synchronous supersteps with a global all-reduce.
    Bsp,
    /// Both, side by side.
    Both,
}

/// The scheme of the graph's channels between ranks (`--remote`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Remote {
    /// Each halo is a message; credits hold a producer back.
    TwoSided,
    /// Each halo is put into a slot of a window on the receiving rank
    /// (`MPI_Put` + flush) and announced by a small signal message.
    OneSided,
    /// The graph once with each scheme, side by side.
    Both,
}

/// How patches are placed on locations.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Placing {
    /// Rectangular blocks of patches.
    Blocks,
    /// Pieces of the Hilbert curve through the patches.
    Hilbert,
    /// METIS k-way partitioning of the patch graph (feature `metis`).
    #[cfg(feature = "metis")]
    Metis,
}

/// Arguments of `tutti swe`.
#[derive(Args, Debug)]
pub struct SweArgs {
    /// Cells along x.
    #[arg(long, default_value_t = 512, value_parser = clap::value_parser!(u64).range(2..=65_536))]
    nx: u64,
    /// Cells along y [default: as many as along x].
    #[arg(long, value_parser = clap::value_parser!(u64).range(2..=65_536))]
    ny: Option<u64>,
    /// Cells along each side of a (square) patch; must divide the grid.
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u64).range(1..=65_536))]
    patch: u64,
    /// Time steps.
    #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u64).range(1..=10_000_000))]
    steps: u64,
    /// Simulate until this time (s) instead of a number of steps: the time
    /// step is shortened so that a whole number of steps ends there.
    #[arg(long, conflicts_with = "steps")]
    end_time: Option<f64>,
    /// Fixed time step (s) [default: 0.4 × cell size ÷ the initial largest wave speed].
    #[arg(long)]
    dt: Option<f64>,
    /// The initial condition.
    #[arg(long, value_enum, default_value_t = Scenario::RadialDamBreak)]
    scenario: Scenario,
    /// Which implementation to run.
    #[arg(long = "impl", value_enum, default_value_t = Impl::Both)]
    implementation: Impl,
    /// The graph's channels between ranks: two-sided messages, one-sided
    /// puts (needs MPI), or both side by side. Within a rank every channel
    /// hands halos over in memory, so in a world of one process the scheme
    /// changes nothing (a note says so).
    #[arg(long, value_enum, default_value_t = Remote::TwoSided)]
    remote: Remote,
    /// How patches are placed on locations.
    #[arg(long, value_enum, default_value_t = Placing::Blocks)]
    placing: Placing,
    /// Simulated times (s) at which to write a PNG of the water surface.
    #[arg(long, value_delimiter = ',')]
    snapshots: Vec<f64>,
    /// Folder for the snapshots.
    #[arg(long, default_value = "swe-snapshots")]
    out_dir: String,
    /// Write an animated GIF of the run to this file (`--frames` pictures
    /// from the start to the end, in one colour range).
    #[arg(long)]
    animation: Option<String>,
    /// Pictures in the `--animation`, evenly spaced in time after the start.
    #[arg(long, default_value_t = 40, value_parser = clap::value_parser!(u64).range(1..=1000))]
    frames: u64,
    /// With `--scenario dam-break-1d`: a refinement series, the cells along x
    /// of each grid (e.g. 128,256,512,1024), each run to the same end time;
    /// reports the error against the exact solution at each and the observed
    /// convergence order.
    #[arg(long, value_delimiter = ',', value_parser = clap::value_parser!(u64).range(2..=65_536))]
    convergence: Vec<u64>,
    /// A strong- and weak-scaling table over 1, 2, 4 … locations (in-process
    /// only), up to this many.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=64))]
    scaling: Option<u64>,
    /// Write the height, momenta and surface at the start, at each
    /// `--snapshots` time and at the end into this NetCDF file (CF
    /// conventions; needs the `netcdf` feature).
    #[arg(long)]
    netcdf: Option<String>,
    /// Start from this NetCDF file's bathymetry `z(y, x)` (coordinates `x`,
    /// `y` in metres; the domain is its extent), the water at rest with its
    /// surface at 0 (needs the `netcdf` feature).
    #[arg(long, conflicts_with = "scenario")]
    bathymetry: Option<String>,
    /// With `--bathymetry`: lift the sea floor and the water on it at t = 0 by
    /// this NetCDF file's `z(y, x)` (zero outside its grid).
    #[arg(long, requires = "bathymetry")]
    displacement: Option<String>,
    /// Write the project's synthetic input (a Gaussian seamount and a
    /// displacement beside it) as two NetCDF files into this folder, read
    /// them back to check, and stop.
    #[arg(long)]
    write_seamount: Option<String>,
    /// With `--scaling`: draw the speedup curves into this PNG file.
    #[arg(long, requires = "scaling", value_name = "FILE.png", value_parser = crate::plot::parse_png)]
    plot: Option<std::path::PathBuf>,
    #[command(flatten)]
    world: crate::apps::WorldOpts,
    #[command(flatten)]
    run: RunOpts,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// Runs `tutti swe`.
pub fn run(a: &SweArgs) -> Result<Report, String> {
    if a.netcdf.is_some() {
        // Before the run, not after it.
        netcdf::require()?;
    }
    if let Some(dir) = &a.write_seamount {
        let files = netcdf::write_seamount(dir)?;
        let mut report = Report::new("swe");
        report.param("seamount_files", files);
        report.verify(true);
        return Ok(report);
    }
    let mut cfg = match &a.bathymetry {
        Some(path) => {
            let bathymetry = netcdf::read_gridded(path)?;
            let displacement = a
                .displacement
                .as_deref()
                .map(netcdf::read_gridded)
                .transpose()?;
            let (grid, cells) = input::initial(
                &bathymetry,
                displacement.as_ref(),
                a.nx as usize,
                a.ny.map(|n| n as usize),
            )?;
            Config::from_cells(grid, cells, a.patch as usize, a.steps, a.dt)?
        }
        None => {
            let ny = a.ny.unwrap_or(a.nx) as usize;
            Config::new(
                a.nx as usize,
                ny,
                a.patch as usize,
                a.steps,
                a.dt,
                a.scenario,
            )?
        }
    };
    let (nx, ny) = (cfg.grid.nx, cfg.grid.ny);
    let scenario = cfg.scenario;
    if let Some(t) = a.end_time {
        cfg.until(t)?;
    }
    if a.scaling.is_some() && scenario == Scenario::FromFile {
        return Err("--scaling runs the built-in scenarios, not --bathymetry".into());
    }
    if scenario == Scenario::DamBreak1d && ny > nx {
        return Err(format!(
            "the planar dam break runs along x: --ny ({ny}) may not exceed --nx ({nx})"
        ));
    }
    if !a.convergence.is_empty() {
        if scenario != Scenario::DamBreak1d {
            return Err(
                "--convergence needs --scenario dam-break-1d (the one with an exact solution)"
                    .into(),
            );
        }
        if a.convergence.windows(2).any(|w| w[1] <= w[0]) {
            return Err(
                "--convergence lists grids from coarse to fine, each finer than the one before"
                    .into(),
            );
        }
        if let Some(&n) = a
            .convergence
            .iter()
            .find(|&&n| a.ny.is_some_and(|ny| ny > n))
        {
            return Err(format!(
                "--convergence: {n} cells along x is fewer than --ny"
            ));
        }
    }
    for &t in &a.snapshots {
        if !(t.is_finite() && t > 0.0) {
            return Err(format!("a snapshot time must be positive, got {t}"));
        }
        let step = ((t / cfg.dt).round() as u64).max(1);
        if step > cfg.steps {
            return Err(format!(
                "snapshot at {t} s is after the last step ({} steps of {:.4} s)",
                cfg.steps, cfg.dt
            ));
        }
        cfg.snapshots.push(Capture {
            step,
            all: a.netcdf.is_some(),
        });
    }
    if a.animation.is_some() {
        let frames = a.frames.min(cfg.steps);
        for k in 1..=frames {
            let step = (k * cfg.steps).div_ceil(frames);
            cfg.snapshots.push(Capture { step, all: false });
        }
    }
    let world = a.world.world()?;
    let cfg = Arc::new(cfg);
    let mut report = Report::new("swe");
    report
        .param("scenario", scenario.name())
        .param("bathymetry", &a.bathymetry)
        .param("displacement", &a.displacement)
        .param("nx", nx)
        .param("ny", ny)
        .param("patch", a.patch)
        .param("patches", cfg.px * cfg.py)
        .param("steps", cfg.steps)
        .param("dt", cfg.dt)
        .param("solver", "f-wave")
        .param("ranks", world.ranks())
        .param("locations_per_rank", world.locations_per_rank())
        .param("workers", world.runtime().workers());
    let placement = Arc::new(cfg.placement(world.locations(), a.placing)?);
    report.param("edge_cut", placement.edge_cut());
    let graphs: &[(&str, Scheme)] = match a.remote {
        Remote::TwoSided => &[("graph", Scheme::TwoSided)],
        Remote::OneSided => &[("graph-one-sided", Scheme::ONE_SIDED)],
        Remote::Both => &[
            ("graph", Scheme::TwoSided),
            ("graph-one-sided", Scheme::ONE_SIDED),
        ],
    };
    report.param(
        "remote",
        match a.remote {
            Remote::TwoSided => "two-sided",
            Remote::OneSided => "one-sided",
            Remote::Both => "both",
        },
    );
    if a.remote != Remote::TwoSided && world.ranks() == 1 && !a.json {
        eprintln!(
            "swe: --remote applies to channels between ranks; this world is one process, so every channel hands halos over in memory (run under mpirun to compare the schemes)"
        );
    }
    let mut impls: Vec<(&str, Impl, Scheme)> = Vec::new();
    if a.implementation != Impl::Bsp {
        impls.extend(graphs.iter().map(|&(n, s)| (n, Impl::Graph, s)));
    }
    if a.implementation != Impl::Graph {
        impls.push(("bsp", Impl::Bsp, Scheme::TwoSided));
    }
    let plan = a.run.plan();
    let leader = world.rank() == 0;
    let progress = Progress::new(impls.len() * plan.total(), a.json || !leader);
    let mut secs: Vec<Vec<f64>> = vec![Vec::new(); impls.len()];
    let mut last: Vec<Option<Outcome>> = (0..impls.len()).map(|_| None).collect();
    for round in 0..plan.total() {
        for (k, &(name, which, scheme)) in impls.iter().enumerate() {
            progress.stage(name);
            let out = run_once(&world, &cfg, &placement, which, scheme)?;
            if let Some(o) = out {
                if round >= plan.warmup {
                    secs[k].push(o.secs);
                }
                last[k] = Some(o);
            }
            progress.tick();
        }
    }
    progress.finish();
    // The sequential reference, on rank 0 only (not timed).
    let reference = if leader { sequential(&cfg) } else { None };
    let mut verified = true;
    let mut medians = Vec::new();
    for (k, &(name, which, _)) in impls.iter().enumerate() {
        let Some(out) = &last[k] else {
            continue;
        };
        let checks = check(&cfg, out, &reference);
        verified &= checks.ok();
        if which == Impl::Graph {
            // What waiting costs the graph: world collectives per step.
            report.param(
                &format!("waves_per_step_{name}"),
                out.waves as f64 / cfg.steps as f64,
            );
            // Pond's rule in the notifier: about one per patch and step.
            report.param(
                &format!("wakeups_per_patch_step_{name}"),
                out.wakeups as f64 / (cfg.steps * (cfg.px * cfg.py) as u64) as f64,
            );
        }
        report.param(&format!("checks_{name}"), &checks);
        let per_step: Vec<f64> = secs[k].iter().map(|s| s * 1e3 / cfg.steps as f64).collect();
        let updates = (cfg.cells() * cfg.steps) as f64;
        let flops = updates * (2 * solver::FLOPS_PER_EDGE + solver::FLOPS_PER_CELL) as f64;
        if let Some(s) = Stats::of(&per_step) {
            medians.push((name, s.median));
            report.result(name, "time_per_step", s, "ms");
        }
        if let Some(s) = Stats::of(
            &secs[k]
                .iter()
                .map(|t| updates / t / 1e6)
                .collect::<Vec<_>>(),
        ) {
            report.result(name, "cell_updates", s, "M/s");
        }
        // Per core: every worker of every rank counts (an unvectorized
        // f-wave solver updates about 20 M cells per second on one core).
        let cores = (world.ranks() * world.runtime().workers()) as f64;
        if let Some(s) = Stats::of(
            &secs[k]
                .iter()
                .map(|t| updates / t / 1e6 / cores)
                .collect::<Vec<_>>(),
        ) {
            report.result(name, "cell_updates_per_core", s, "M/s");
        }
        if let Some(s) = Stats::of(&secs[k].iter().map(|t| flops / t / 1e9).collect::<Vec<_>>()) {
            report.result(name, "flops", s, "GFLOP/s");
        }
        if k == 0 {
            output::write(a, &cfg, out, &mut report)?;
        }
    }
    let final_field = last.iter().flatten().find_map(|o| o.field.as_ref());
    match scenario {
        Scenario::RadialDamBreak => {
            if let Some(field) = final_field {
                let sym = radial::measure(&field.h, &cfg.grid, cfg.end_time())?;
                verified &= validation::symmetry(&mut report, &sym, &cfg.grid);
            }
        }
        Scenario::DamBreak1d => {
            let series = validation::Series {
                world: &world,
                placing: a.placing,
                patch: a.patch as usize,
                ny: a.ny.map(|n| n as usize),
                levels: &a
                    .convergence
                    .iter()
                    .map(|&n| n as usize)
                    .collect::<Vec<_>>(),
            };
            verified &= validation::dam_break(&mut report, &cfg, final_field, &series)?;
        }
        _ => {}
    }
    let median = |n: &str| medians.iter().find(|m| m.0 == n).map(|m| m.1);
    let graph_name = graphs[0].0;
    if let (Some(g), Some(b)) = (median(graph_name), median("bsp")) {
        // The first scheme asked for (two-sided unless --remote one-sided).
        report.ratio("time_graph_over_bsp", g / b);
    }
    if let (Some(one), Some(two)) = (median("graph-one-sided"), median("graph")) {
        report.ratio("time_one_sided_over_two_sided", one / two);
    }
    if a.remote == Remote::Both {
        if let (Some(one), Some(b)) = (median("graph-one-sided"), median("bsp")) {
            report.ratio("time_graph_one_sided_over_bsp", one / b);
        }
    }
    // Every implementation's field equals the first's, bit for bit.
    if let Some(Some(first)) = last.first() {
        let want = first.field.as_ref().map(Field::digest);
        let same = last
            .iter()
            .flatten()
            .all(|o| o.field.as_ref().map(Field::digest) == want);
        if impls.len() > 1 {
            report.param("impls_equal_bit_for_bit", same);
        }
        verified &= same;
    }
    if let Some(max) = a.scaling {
        if world.ranks() > 1 {
            return Err("--scaling runs in-process worlds; run it without mpirun".into());
        }
        scaling::scaling(&mut report, a, max as usize, &cfg, &mut verified)?;
    }
    // Rank 0 verified; every rank reports its verdict.
    let verdict = world.run(|loc| async move {
        let mine = (loc.id().index() == 0).then_some(verified);
        loc.broadcast(LocationId::new(0), mine).await
    });
    report.verify(verdict.iter().all(|&v| v));
    Ok(report)
}
