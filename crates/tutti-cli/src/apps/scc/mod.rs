//! `tutti scc`: strongly connected components with fine-grain RMI (Saunders 2003
//! §V.D; the algorithm is in [`rmi`]), verified against a sequential Tarjan.
//!
//! The graph is a generated mesh with a known component structure
//! ([`graph::mesh`]) or an edge-list file ([`graph`] documents the format).

pub mod graph;
pub mod rmi;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;

use crate::measure::{check_memory, repeat, timed, Progress, Run, RunOpts};
use crate::report::{Report, Stats};
use graph::Graph;

/// Measured runs when `--runs` is not given (shown in `--help`).
pub const RUNS: usize = 3;

/// Arguments of `tutti scc`.
#[derive(Args, Debug)]
#[command(
    after_help = "GRAPH FILES: plain text, one edge `u v` (from u to v) per line, \
two non-negative integer vertex ids below 2^28 separated by spaces or tabs; `#` starts a \
comment to the end of the line; blank lines are ignored. The graph has max id + 1 vertices; \
self-loops and repeated edges are allowed. A malformed line is an error naming its number."
)]
pub struct SccArgs {
    /// A k × k directed mesh whose square tiles (--tile) are its components.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=16_384), required_unless_present = "graph", conflicts_with = "graph")]
    mesh: Option<u64>,
    /// Side of the mesh's tiles (each tile is one component; the tiles form a DAG).
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u64).range(1..=16_384))]
    tile: u64,
    /// An edge-list file (see GRAPH FILES below).
    #[arg(long)]
    graph: Option<PathBuf>,
    /// Seed of the pivot choice.
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// Aggregation factor: requests kept per destination before they are sent
    /// together [default: the transport's].
    #[arg(long, env = "TUTTI_AGGREGATION", value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    aggregation: Option<u64>,
    #[command(flatten)]
    world: crate::apps::WorldOpts,
    #[command(flatten)]
    run: RunOpts,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// Reads and parses an edge-list file; errors name the file (and the line).
pub fn read_graph(path: &std::path::Path) -> Result<Graph, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    graph::parse(&text).map_err(|e| format!("{}: {e}", path.display()))
}

/// Runs `tutti scc`.
pub fn run(a: &SccArgs) -> Result<Report, String> {
    let mut report = Report::new("scc");
    let (g, expected) = match (&a.graph, a.mesh) {
        (Some(path), _) => {
            report.param("graph", path.display().to_string());
            (read_graph(path)?, None)
        }
        (None, Some(k)) => {
            let (k, tile) = (k as usize, a.tile as usize);
            // The graph both ways, Tarjan's arrays, the locations' state and
            // the gathered labels: about 200 bytes per vertex.
            check_memory(200 * (k * k) as u128, &format!("a {k} x {k} mesh"))?;
            report.param("mesh", k).param("tile", tile);
            (graph::mesh(k, tile), Some(graph::mesh_components(k, tile)))
        }
        (None, None) => return Err("give --mesh N or --graph FILE".into()),
    };
    let g = Arc::new(g);
    let world = a.world.world()?;
    let plan = a.run.plan();
    let progress = Progress::new(2 * plan.total(), a.json || world.rank() != 0);
    report
        .param("vertices", g.vertices())
        .param("edges", g.edges())
        .param("ranks", world.ranks())
        .param("locations", world.locations())
        .param("workers", world.config().workers())
        .param(
            "aggregation",
            a.aggregation
                .map_or(tutti::rmi::default_aggregation(world.config()), |f| {
                    f as usize
                }),
        )
        .param("seed", a.seed)
        .param("runs", plan.runs);

    progress.stage("sequential Tarjan");
    let mut tarjan = Vec::new();
    let seq_m = super::in_turns(&world, || {
        repeat(plan, &progress, || {
            let (labels, elapsed) = timed(|| graph::tarjan(&g));
            tarjan = labels;
            Run { elapsed, ok: true }
        })
    });
    let components = graph::count_components(&tarjan);
    let mut verdict = Ok(());
    if let Some(want) = expected {
        if components != want {
            verdict = Err(format!(
                "Tarjan finds {components} components in the mesh, which has {want}"
            ));
        }
    }

    progress.stage("rmi trim / pivot / mark");
    let mut last = None;
    let agg = a.aggregation.map(|f| f as usize);
    let rmi_m = repeat(plan, &progress, || {
        let out = rmi::scc(&world, &g, a.seed, agg);
        let mut ok = !out.is_empty();
        for o in &out {
            if let Err(e) = graph::compare(&o.labels, &tarjan) {
                if verdict.is_ok() {
                    verdict = Err(format!("rmi components differ from Tarjan's: {e}"));
                }
                ok = false;
            }
        }
        let elapsed = Duration::from_secs_f64(out.first().map_or(0.0, |o| o.secs));
        last = out.into_iter().next();
        Run { elapsed, ok }
    });
    progress.finish();
    if let Err(e) = &verdict {
        eprintln!("tutti scc: {e}");
    }
    report.verify(verdict.is_ok() && seq_m.ok && rmi_m.ok);
    report.param("components", components);
    if let Some(o) = &last {
        report.param("rounds", o.rounds).param("trimmed", o.trimmed);
    }
    if let Some(t) = Stats::of(&seq_m.map(|s| s * 1e3)) {
        report.result("tarjan", "time", t, "ms");
    }
    if let Some(t) = Stats::of(&rmi_m.map(|s| s * 1e3)) {
        report.result("tutti_rmi", "time", t, "ms");
    }
    report.ratio(
        "time_rmi_over_tarjan",
        rmi_m.median_secs() / seq_m.median_secs(),
    );
    Ok(report)
}
