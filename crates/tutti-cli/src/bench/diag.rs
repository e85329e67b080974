//! `tutti bench diag`: the cost of deadlock detection (`tutti::diag`), on (the default,
//! `DeadlockMode::Fail`) beside off, in the same run: actor `tell` (the bench actor
//! tell workload), CSP rendezvous ping-pong (`bench csp pingpong`'s) and RMI (`bench
//! rmi`'s local `async_rmi`, `sync_rmi` ping-pong and fence rows). On and off runs
//! alternate, so load drifts hit both; each ratio is `time_detection_on_over_off`.
//!
//! `--ranks` (under `mpirun -n 2` or `tutti launch -n 2`): the rows between ranks
//! instead, where the cross-rank stall check takes part — fences and all-reduces of
//! one location per rank, on and off alternating on every rank in step.

use std::time::Instant;

use clap::Args;
use tutti::diag::{set_deadlock_mode, DeadlockMode};

use super::actor::{tutti_impl::Tutti, Library};

use crate::measure::{Progress, Run, RunOpts};
use crate::report::{Report, Stats};

/// Measured runs when `--runs` is not given (shown in `--help`).
pub const RUNS: usize = 7;

/// Arguments of `tutti bench diag`.
#[derive(Args, Debug)]
pub struct DiagArgs {
    /// Messages told to the actors per run.
    #[arg(long = "tells", default_value_t = 1_000_000)]
    tell: u64,
    /// Actors the tells go to (round robin).
    #[arg(long, default_value_t = 4, value_parser = clap::builder::TypedValueParser::map(clap::value_parser!(u64).range(1..=1_000_000), |n| n as usize))]
    actors: usize,
    /// Messages of the CSP ping-pong per run.
    #[arg(long, default_value_t = 200_000)]
    pingpong: u64,
    /// Local `async_rmi` calls per run.
    #[arg(long, default_value_t = 5_000_000)]
    rmi_calls: u64,
    /// `sync_rmi` round trips between two locations per run.
    #[arg(long = "rmi-round-trips", default_value_t = 20_000)]
    rmi_pings: u64,
    /// Fences of two locations per run.
    #[arg(long, default_value_t = 20_000)]
    fences: u64,
    /// Worker threads.
    #[arg(long, env = "TUTTI_WORKERS", default_value_t = 2, value_parser = crate::parse_workers)]
    workers: usize,
    /// The rows between ranks (run under `mpirun -n 2` or `tutti launch -n 2`):
    /// `--fences` fences and all-reduces of one location per rank.
    #[arg(long)]
    ranks: bool,
    #[command(flatten)]
    run: RunOpts,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// Runs `one` alternately with detection on and off (`plan.warmup` unrecorded pairs,
/// then `plan.runs` recorded), returning the seconds of each.
fn pairs(
    plan: crate::measure::Plan,
    progress: &Progress,
    ok: &mut bool,
    mut one: impl FnMut() -> Run,
) -> (Vec<f64>, Vec<f64>) {
    let (mut on, mut off) = (Vec::new(), Vec::new());
    for i in 0..plan.total() {
        for (mode, out) in [(DeadlockMode::Fail, &mut on), (DeadlockMode::Off, &mut off)] {
            set_deadlock_mode(mode);
            let r = one();
            *ok &= r.ok;
            if i >= plan.warmup {
                out.push(r.elapsed.as_secs_f64());
            }
            progress.tick();
        }
    }
    set_deadlock_mode(DeadlockMode::Fail);
    (on, off)
}

/// One row: metric, unit, operations per run, and the seconds of the on and off runs.
type Row = (&'static str, &'static str, u64, (Vec<f64>, Vec<f64>));

/// This rank's first location's run of `body`, timed from a barrier.
fn ranks_row<F>(w: &tutti::world::World, n: u64, body: fn(tutti::world::Location, u64) -> F) -> Run
where
    F: std::future::Future<Output = bool> + Send + 'static,
{
    let out = w.run(move |loc| async move {
        loc.barrier().await;
        let start = Instant::now();
        let ok = body(loc, n).await;
        (start.elapsed(), ok)
    });
    let (elapsed, ok) = out.into_iter().next().unwrap_or_default();
    Run { elapsed, ok }
}

async fn rank_fences(loc: tutti::world::Location, n: u64) -> bool {
    for _ in 0..n {
        while loc.recv_until_quiet().await.is_some() {}
    }
    true
}

async fn rank_all_reduces(loc: tutti::world::Location, n: u64) -> bool {
    let ranks = loc.world().locations() as u64;
    let mut ok = true;
    for i in 0..n {
        ok &= loc.all_reduce(i, |a, b| a + b).await == i * ranks;
    }
    ok
}

/// `--ranks`: the rows between the ranks of the world the environment configures;
/// rank 0 reports (the others exit when done).
fn run_ranks(a: &DiagArgs) -> Result<Report, String> {
    let plan = a.run.plan();
    let w = tutti::world::World::builder()
        .locations(1)
        .workers(a.workers)
        .build()
        .map_err(|e| e.to_string())?;
    if w.ranks() < 2 {
        return Err("bench diag --ranks needs several ranks: run it under \
                    `mpirun -n 2` or `tutti launch -n 2`"
            .into());
    }
    let me = w.rank();
    let mut report = Report::new("diag --ranks");
    report
        .param("ranks", w.ranks())
        .param("transport", w.config().transport().to_string())
        .param("fences", a.fences)
        .param("workers", w.config().workers())
        .param("runs", plan.runs);
    let progress = Progress::new(if me == 0 { plan.total() * 2 * 2 } else { 0 }, a.json);
    let mut ok = true;
    let rows: Vec<Row> = vec![
        (
            "fence_ranks",
            "ns/fence",
            a.fences,
            pairs(plan, &progress, &mut ok, || {
                ranks_row(&w, a.fences, rank_fences)
            }),
        ),
        (
            "all_reduce_ranks",
            "ns/all_reduce",
            a.fences,
            pairs(plan, &progress, &mut ok, || {
                ranks_row(&w, a.fences, rank_all_reduces)
            }),
        ),
    ];
    progress.finish();
    let all_ok = w
        .run(move |loc| async move { loc.all_reduce(ok, |a, b| a && b).await })
        .into_iter()
        .all(|ok| ok);
    report.verify(all_ok);
    add_rows(&mut report, rows);
    if me != 0 {
        drop(w);
        std::process::exit(if all_ok { 0 } else { 1 });
    }
    Ok(report)
}

fn add_rows(report: &mut Report, rows: Vec<Row>) {
    for (metric, unit, n, (on, off)) in rows {
        let per = |v: &Vec<f64>| v.iter().map(|s| s * 1e9 / n as f64).collect::<Vec<f64>>();
        let (Some(s_on), Some(s_off)) = (Stats::of(&per(&on)), Stats::of(&per(&off))) else {
            continue;
        };
        report.result("detection_on", metric, s_on.clone(), unit);
        report.result("detection_off", metric, s_off.clone(), unit);
        report.ratio(
            &format!("time_detection_on_over_off_{metric}"),
            s_on.median / s_off.median,
        );
    }
}

/// Runs the benchmark.
pub fn run(a: &DiagArgs) -> Result<Report, String> {
    if a.ranks {
        return run_ranks(a);
    }
    let plan = a.run.plan();
    let mut report = Report::new("diag");
    report
        .param("tells", a.tell)
        .param("actors", a.actors)
        .param("pingpong", a.pingpong)
        .param("rmi_calls", a.rmi_calls)
        .param("rmi_round_trips", a.rmi_pings)
        .param("fences", a.fences)
        .param("workers", a.workers)
        .param("runs", plan.runs);
    let rt = tutti::Runtime::builder()
        .workers(a.workers)
        .build()
        .map_err(|e| format!("cannot build a runtime: {e}"))?;
    // `bench actor tell`'s workload, on a runtime of its own.
    let mut actors = Tutti::new(a.workers)?;
    let world1 = super::rmi::world(1, a.workers)?;
    let world2 = super::rmi::world(2, a.workers)?;
    let progress = Progress::new(plan.total() * 2 * 5, a.json);
    let mut ok = true;
    let pingpong = a.pingpong / 2 * 2;
    let rows: Vec<Row> = vec![
        (
            "actor_tell",
            "ns/message",
            a.tell,
            pairs(plan, &progress, &mut ok, || actors.tell(a.actors, a.tell)),
        ),
        (
            "csp_pingpong",
            "ns/message",
            pingpong,
            pairs(plan, &progress, &mut ok, || {
                let start = Instant::now();
                let good = rt.block_on(rt.spawn(super::csp::pingpong::pingpong(pingpong)));
                Run {
                    elapsed: start.elapsed(),
                    ok: good,
                }
            }),
        ),
        (
            "rmi_local_async",
            "ns/call",
            a.rmi_calls,
            pairs(plan, &progress, &mut ok, || {
                super::rmi::local_async_rmi(&world1, a.rmi_calls)
            }),
        ),
        (
            "rmi_sync_pingpong",
            "ns/round trip",
            a.rmi_pings,
            pairs(plan, &progress, &mut ok, || {
                super::rmi::pingpong_sync(&world2, a.rmi_pings)
            }),
        ),
        (
            "rmi_fence",
            "ns/fence",
            a.fences,
            pairs(plan, &progress, &mut ok, || {
                super::rmi::fences(&world2, a.fences)
            }),
        ),
    ];
    progress.finish();
    report.verify(ok);
    add_rows(&mut report, rows);
    Ok(report)
}
