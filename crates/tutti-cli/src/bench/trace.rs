//! `tutti bench trace`: what recording a timeline trace costs. The same
//! workloads as `bench actor tell`, `bench csp pingpong` and `bench rmi` (a
//! local `async_rmi` per empty method, and a `sync_rmi` ping-pong between two
//! locations) run with tracing off and on in every round (which goes first
//! alternates), on the same runtime; the ratio is on ÷ off per message. The "on" runs record
//! into a scratch file, deleted after each run. A run's time is its work (for
//! the RMI workloads: until the last location's body returned); writing the
//! events out (formatting JSON, at the end of `World::run` and in
//! `trace::stop`) is timed apart, shown as "trace write-out" per message and
//! left out of the ratio. "per event" rows divide what tracing adds to a
//! message (on − off, per round) by the events a message records (counted in
//! the checked run below): the cost of recording one event.
//!
//! Verification: every run checks its own result, and one small traced run of
//! each workload leaves a file that `tutti::diag::trace::check` accepts (slices
//! nest, flows end after they start, names are present).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use clap::Args;

use super::actor::tutti_impl::Tutti;
use super::actor::Library;
use crate::measure::{timed, Progress, Run, RunOpts};
use crate::report::{Report, Stats};
use tutti::diag::trace;

/// Arguments of `tutti bench trace`.
#[derive(Args, Debug)]
pub struct TraceArgs {
    /// Messages told per actor-tell run (round-robin over `--actors`).
    #[arg(long, default_value_t = 200_000, value_parser = clap::value_parser!(u64).range(1..=100_000_000))]
    tells: u64,
    /// Actors the tells go to.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u64).range(1..=100_000))]
    actors: u64,
    /// Messages per CSP ping-pong run.
    #[arg(long, default_value_t = 100_000, value_parser = clap::value_parser!(u64).range(2..=100_000_000))]
    pingpong: u64,
    /// Local `async_rmi` calls per run.
    #[arg(long, default_value_t = 200_000, value_parser = clap::value_parser!(u64).range(1..=100_000_000))]
    rmi_calls: u64,
    /// `sync_rmi` round trips per run.
    #[arg(long, default_value_t = 20_000, value_parser = clap::value_parser!(u64).range(1..=100_000_000))]
    rmi_round_trips: u64,
    /// Worker threads.
    #[arg(long, env = "TUTTI_WORKERS", default_value_t = 2, value_parser = crate::parse_workers)]
    workers: usize,
    /// Where the "on" runs record (a scratch file, deleted after each run).
    #[arg(long)]
    scratch: Option<PathBuf>,
    #[command(flatten)]
    run: RunOpts,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// One workload: a run of `n` messages.
struct Workload<'a> {
    name: &'static str,
    n: u64,
    run: Box<dyn FnMut(u64) -> Run + 'a>,
}

/// Runs `f` with a trace recorded into `scratch`; returns its run and the time
/// spent around it (starting the trace, and writing it out: at the end of
/// `World::run` and in `stop`), and deletes the file unless `keep`.
fn traced(scratch: &Path, keep: bool, f: impl FnOnce() -> Run) -> Result<(Run, Duration), String> {
    let start = Instant::now();
    trace::start(scratch).map_err(|e| format!("cannot start the trace: {e}"))?;
    let run = f();
    trace::stop().map_err(|e| format!("cannot write the trace: {e}"))?;
    let around = start.elapsed().saturating_sub(run.elapsed);
    if !keep {
        std::fs::remove_file(scratch).map_err(|e| format!("{}: {e}", scratch.display()))?;
    }
    Ok((run, around))
}

pub fn run(a: &TraceArgs) -> Result<Report, String> {
    if trace::is_on() {
        return Err("bench trace starts and stops traces itself: unset TUTTI_TRACE".into());
    }
    let plan = a.run.plan();
    let scratch = a.scratch.clone().unwrap_or_else(|| {
        std::env::temp_dir().join(format!("tutti-bench-trace-{}.json", std::process::id()))
    });
    let mut report = Report::new("trace");
    report
        .param("tells", a.tells)
        .param("actors", a.actors)
        .param("pingpong", a.pingpong / 2 * 2)
        .param("rmi_calls", a.rmi_calls)
        .param("rmi_round_trips", a.rmi_round_trips)
        .param("workers", a.workers)
        .param("runs", plan.runs)
        .param("warmup", plan.warmup);

    let mut actors = Tutti::new(a.workers)?;
    let rt = tutti::Runtime::builder()
        .workers(a.workers)
        .build()
        .map_err(|e| e.to_string())?;
    let w1 = super::rmi::world(1, a.workers)?;
    let w2 = super::rmi::world(2, a.workers)?;
    let n_actors = a.actors as usize;
    let mut loads = [
        Workload {
            name: "actor tell",
            n: a.tells,
            run: Box::new(|n| actors.tell(n_actors, n)),
        },
        Workload {
            name: "csp pingpong",
            n: a.pingpong / 2 * 2,
            run: Box::new(|n| {
                let (ok, elapsed) =
                    timed(|| rt.block_on(rt.spawn(super::csp::pingpong::pingpong(n))));
                Run { elapsed, ok }
            }),
        },
        Workload {
            name: "rmi local async",
            n: a.rmi_calls,
            run: Box::new(|n| super::rmi::local_async_rmi(&w1, n)),
        },
        Workload {
            name: "rmi sync pingpong",
            n: a.rmi_round_trips,
            run: Box::new(|n| super::rmi::pingpong_sync(&w2, n)),
        },
    ];

    // A small traced run of each, checked; its events per message turn the time
    // tracing adds into a cost per recorded event.
    let mut events_per_message = vec![0.0; loads.len()];
    for (k, l) in loads.iter_mut().enumerate() {
        let n = (l.n / 20).max(2) / 2 * 2;
        let (run, _) = traced(&scratch, true, || (l.run)(n))?;
        let checked = trace::check(&scratch);
        std::fs::remove_file(&scratch).map_err(|e| format!("{}: {e}", scratch.display()))?;
        match checked {
            Ok(s) if s.slices > 0 => {
                events_per_message[k] = s.events as f64 / n as f64;
                report.verify(run.ok);
            }
            Ok(_) => {
                eprintln!("tutti bench trace: {}: the trace holds no slices", l.name);
                report.verify(false);
            }
            Err(e) => {
                eprintln!("tutti bench trace: {}: {e}", l.name);
                report.verify(false);
            }
        }
    }

    let progress = Progress::new(plan.total() * loads.len() * 2, a.json);
    let mut off: Vec<Vec<f64>> = vec![Vec::new(); loads.len()];
    let mut on: Vec<Vec<f64>> = vec![Vec::new(); loads.len()];
    let mut write_out: Vec<Vec<f64>> = vec![Vec::new(); loads.len()];
    for round in 0..plan.total() {
        for (k, l) in loads.iter_mut().enumerate() {
            progress.stage(&format!("{}: off / on", l.name));
            // Alternate which goes first, so neither always follows the other.
            let (r_off, r_on) = if round % 2 == 0 {
                let off = (l.run)(l.n);
                (off, traced(&scratch, false, || (l.run)(l.n))?)
            } else {
                let on = traced(&scratch, false, || (l.run)(l.n))?;
                ((l.run)(l.n), on)
            };
            progress.tick();
            progress.tick();
            report.verify(r_off.ok && r_on.0.ok);
            if round >= plan.warmup {
                let per = |d: Duration| d.as_secs_f64() * 1e9 / l.n as f64;
                off[k].push(per(r_off.elapsed));
                on[k].push(per(r_on.0.elapsed));
                write_out[k].push(per(r_on.1));
            }
        }
    }
    progress.finish();
    let mut worst: f64 = 0.0;
    for (k, l) in loads.iter().enumerate() {
        let (Some(s_off), Some(s_on)) = (Stats::of(&off[k]), Stats::of(&on[k])) else {
            continue;
        };
        let ratio = s_on.median / s_off.median;
        report.result("trace off", l.name, s_off, "ns/message");
        report.result("trace on", l.name, s_on, "ns/message");
        if let Some(w) = Stats::of(&write_out[k]) {
            report.result("trace write-out", l.name, w, "ns/message");
        }
        // What tracing adds to a message, over the events it records per message
        // (one sample per round: the on and off runs of that round).
        if events_per_message[k] > 0.0 {
            let per_event: Vec<f64> = on[k]
                .iter()
                .zip(&off[k])
                .map(|(on, off)| (on - off) / events_per_message[k])
                .collect();
            if let Some(e) = Stats::of(&per_event) {
                report.result("trace on", &format!("{} per event", l.name), e, "ns/event");
            }
        }
        report.ratio(
            &format!("time_trace_on_over_off_{}", l.name.replace(' ', "_")),
            ratio,
        );
        worst = worst.max(ratio);
    }
    report.ratio("time_trace_on_over_off", worst);
    Ok(report)
}
