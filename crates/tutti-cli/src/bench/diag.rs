//! `tutti bench diag`: the cost of deadlock detection (`tutti::diag`), on (the default,
//! `DeadlockMode::Fail`) beside off, in the same run: actor `tell` (the bench actor
//! tell workload), CSP rendezvous ping-pong (`bench csp pingpong`'s) and RMI (`bench
//! rmi`'s local `async_rmi`, `sync_rmi` ping-pong and fence rows). On and off runs
//! alternate, so load drifts hit both; each ratio is `time_detection_on_over_off`.

use std::time::Instant;

use clap::Args;
use tutti::actor::{self, Actor, Context};
use tutti::diag::{set_deadlock_mode, DeadlockMode};
use tutti::msg::{Handler, Message};

use crate::measure::{Progress, Run, RunOpts};
use crate::report::{Report, Stats};

/// Arguments of `tutti bench diag`.
#[derive(Args, Debug)]
pub struct DiagArgs {
    /// Messages told to the actors per run.
    #[arg(long, default_value_t = 1_000_000)]
    tell: u64,
    /// Actors the tells go to (round robin).
    #[arg(long, default_value_t = 4)]
    actors: usize,
    /// Messages of the CSP ping-pong per run.
    #[arg(long, default_value_t = 200_000)]
    pingpong: u64,
    /// Local `async_rmi` calls per run.
    #[arg(long, default_value_t = 5_000_000)]
    rmi_calls: u64,
    /// `sync_rmi` round trips between two locations per run.
    #[arg(long, default_value_t = 20_000)]
    rmi_pings: u64,
    /// Fences of two locations per run.
    #[arg(long, default_value_t = 20_000)]
    fences: u64,
    /// Worker threads.
    #[arg(long, default_value_t = 2, value_parser = crate::parse_workers)]
    workers: usize,
    #[command(flatten)]
    run: RunOpts,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    pub json: bool,
}

struct Hit;
impl Message for Hit {
    type Reply = ();
}
struct Total;
impl Message for Total {
    type Reply = u64;
}
struct Counter(u64);
impl Actor for Counter {}
impl Handler<Hit> for Counter {
    async fn handle(&mut self, _: Hit, _: &mut Context<Self>) {
        self.0 += 1;
    }
}
impl Handler<Total> for Counter {
    async fn handle(&mut self, _: Total, _: &mut Context<Self>) -> u64 {
        self.0
    }
}

fn tell(rt: &tutti::Runtime, actors: usize, messages: u64) -> Run {
    rt.block_on(rt.spawn(async move {
        let counters: Vec<_> = (0..actors).map(|_| actor::spawn(Counter(0))).collect();
        let start = Instant::now();
        let mut ok = true;
        for i in 0..messages {
            ok &= counters[(i % actors as u64) as usize].tell(Hit).is_ok();
        }
        for (k, c) in counters.iter().enumerate() {
            let share = messages / actors as u64 + u64::from((k as u64) < messages % actors as u64);
            ok &= c.ask(Total).await == Ok(share);
        }
        Run {
            elapsed: start.elapsed(),
            ok,
        }
    }))
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

/// Runs the benchmark.
pub fn run(a: &DiagArgs) -> Result<Report, String> {
    let plan = a.run.plan(7);
    let mut report = Report::new("diag");
    report
        .param("tell_messages", a.tell)
        .param("actors", a.actors)
        .param("pingpong_messages", a.pingpong)
        .param("rmi_calls", a.rmi_calls)
        .param("rmi_pings", a.rmi_pings)
        .param("fences", a.fences)
        .param("workers", a.workers)
        .param("runs", plan.runs);
    if a.actors == 0 {
        return Err("--actors must be at least 1".into());
    }
    let rt = tutti::Runtime::builder()
        .workers(a.workers)
        .build()
        .map_err(|e| format!("cannot build a runtime: {e}"))?;
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
            pairs(plan, &progress, &mut ok, || tell(&rt, a.actors, a.tell)),
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
    for (metric, unit, n, (on, off)) in rows {
        let per = |v: &Vec<f64>| v.iter().map(|s| s * 1e9 / n as f64).collect::<Vec<f64>>();
        let (Some(s_on), Some(s_off)) = (Stats::of(&per(&on)), Stats::of(&per(&off))) else {
            continue;
        };
        report.result("detection_on", metric, s_on, unit);
        report.result("detection_off", metric, s_off, unit);
        report.ratio(
            &format!("time_detection_on_over_off_{metric}"),
            s_on.median / s_off.median,
        );
    }
    Ok(report)
}
