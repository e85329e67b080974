//! `tutti bench priority`: how late a periodic latency-sensitive task wakes up while a
//! flood of CPU-bound background tasks keeps every worker busy.
//!
//! A *control loop* task wakes every `--period-us` (1 ms: a 1 kHz loop) by sleeping
//! until its next tick on the runtime's own timer, and records its lateness — the
//! instant it runs minus the instant it was due — `--ticks` times. Beside it,
//! `--flood` tasks each compute for `--chunk-us` per poll and yield, for as long as
//! the loop runs, so that every worker always has queued work. Measured:
//!
//! * **tutti, priorities**: the loop spawned with `Priority::High`, the flood with
//!   `Priority::Low`;
//! * **tutti, no priorities**: everything `Priority::Normal`;
//! * **tokio**: the same program on tokio's multi-thread runtime (tokio has no task
//!   priorities: the loop is one task among the flood);
//! * **unloaded references**: each runtime's loop alone, no flood — what its timer
//!   achieves on an idle runtime (tokio's timer has a 1 ms resolution, so its
//!   unloaded lateness is up to a tick by design).
//!
//! Each run yields the p50, p99 and maximum lateness of its ticks (an HDR histogram);
//! the report gives the median of each over the runs. `verified`: every run's loop
//! ran exactly `--ticks` ticks and every flood made progress.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Args;
use hdrhistogram::Histogram;

use crate::measure::Progress;
use crate::report::{Report, Stats};

/// Arguments of `tutti bench priority`.
#[derive(Args, Debug)]
pub struct PriorityArgs {
    /// Ticks of the control loop per run.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..=10_000_000))]
    ticks: u64,
    /// Period of the control loop, in microseconds.
    #[arg(long = "period-us", default_value_t = 1000, value_parser = clap::value_parser!(u64).range(10..=10_000_000))]
    period_us: u64,
    /// Background tasks flooding the workers.
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    flood: u64,
    /// CPU time each background task spends per poll before it yields, in microseconds.
    #[arg(long = "chunk-us", default_value_t = 50, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    chunk_us: u64,
    /// Worker threads of both runtimes.
    #[arg(long, env = "TUTTI_WORKERS", default_value_t = 2, value_parser = crate::parse_workers)]
    workers: usize,
    #[command(flatten)]
    run: crate::measure::RunOpts,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// Measured runs when `--runs` is not given (each run takes `--ticks` periods, five
/// times over).
pub const RUNS: usize = 3;

/// Time between starting the flood and the loop's first tick, so that the flood
/// already occupies every worker when the loop starts.
const SETTLE: Duration = Duration::from_millis(20);

/// The shape of one run.
#[derive(Clone, Copy, Debug)]
struct Load {
    ticks: u64,
    period: Duration,
    /// Background tasks (0: the unloaded reference).
    flood: u64,
    chunk: Duration,
}

/// What one run observed.
struct Observed {
    /// Lateness of each tick, in nanoseconds.
    lateness_ns: Vec<u64>,
    /// Polls the flood made (0 without a flood).
    flood_polls: u64,
}

impl Observed {
    /// The loop ran every tick, and a flood (if any) ran beside it.
    fn verified(&self, load: &Load) -> bool {
        self.lateness_ns.len() as u64 == load.ticks && (load.flood == 0 || self.flood_polls > 0)
    }
}

/// Sets the flag when dropped: the flood stops even if the loop panics.
struct StopOnDrop(Arc<AtomicBool>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Release);
    }
}

/// Computes for `chunk` without giving the thread up.
fn compute_for(chunk: Duration) {
    let start = Instant::now();
    let mut x = 0u64;
    while start.elapsed() < chunk {
        for i in 0..64 {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(i));
        }
    }
}

/// The instant of tick `k` of a loop starting at `start`.
fn due(start: Instant, period: Duration, k: u64) -> Instant {
    start + period * u32::try_from(k).unwrap_or(u32::MAX)
}

fn nanos_since(due: Instant) -> u64 {
    u64::try_from(due.elapsed().as_nanos()).unwrap_or(u64::MAX)
}

async fn control_loop_tutti(load: Load, stop: Arc<AtomicBool>) -> Vec<u64> {
    let _stop = StopOnDrop(stop);
    let start = Instant::now() + SETTLE;
    let mut lateness = Vec::with_capacity(load.ticks as usize);
    for k in 0..load.ticks {
        let at = due(start, load.period, k);
        tutti::sleep_until(at).await;
        lateness.push(nanos_since(at));
    }
    lateness
}

async fn control_loop_tokio(load: Load, stop: Arc<AtomicBool>) -> Vec<u64> {
    let _stop = StopOnDrop(stop);
    let start = Instant::now() + SETTLE;
    let mut lateness = Vec::with_capacity(load.ticks as usize);
    for k in 0..load.ticks {
        let at = due(start, load.period, k);
        tokio::time::sleep_until(tokio::time::Instant::from_std(at)).await;
        lateness.push(nanos_since(at));
    }
    lateness
}

/// One run on tutti: the flood at `flood_priority`, the loop at `loop_priority`.
fn run_tutti(
    rt: &tutti::Runtime,
    load: Load,
    loop_priority: tutti::Priority,
    flood_priority: tutti::Priority,
) -> Observed {
    let stop = Arc::new(AtomicBool::new(false));
    let polls = Arc::new(AtomicU64::new(0));
    let flood: Vec<_> = (0..load.flood)
        .map(|_| {
            let (stop, polls) = (stop.clone(), polls.clone());
            rt.spawn_with_priority(flood_priority, async move {
                while !stop.load(Ordering::Acquire) {
                    compute_for(load.chunk);
                    polls.fetch_add(1, Ordering::Relaxed);
                    tutti::yield_now().await;
                }
            })
        })
        .collect();
    let control = rt.spawn_with_priority(loop_priority, control_loop_tutti(load, stop));
    let lateness_ns = rt.block_on(control);
    for h in flood {
        rt.block_on(h);
    }
    Observed {
        lateness_ns,
        flood_polls: polls.load(Ordering::Relaxed),
    }
}

/// One run on tokio (no priorities: the loop is an ordinary task).
fn run_tokio(rt: &tokio::runtime::Runtime, load: Load) -> Observed {
    let stop = Arc::new(AtomicBool::new(false));
    let polls = Arc::new(AtomicU64::new(0));
    let flood: Vec<_> = (0..load.flood)
        .map(|_| {
            let (stop, polls) = (stop.clone(), polls.clone());
            rt.spawn(async move {
                while !stop.load(Ordering::Acquire) {
                    compute_for(load.chunk);
                    polls.fetch_add(1, Ordering::Relaxed);
                    tokio::task::yield_now().await;
                }
            })
        })
        .collect();
    let control = rt.spawn(control_loop_tokio(load, stop.clone()));
    let lateness_ns = rt.block_on(control).unwrap_or_default();
    stop.store(true, Ordering::Release);
    for h in flood {
        // A failed flood task shows as missing polls at worst.
        let _ = rt.block_on(h);
    }
    Observed {
        lateness_ns,
        flood_polls: polls.load(Ordering::Relaxed),
    }
}

/// p50, p99 and maximum of `lateness_ns`, in microseconds (`None` if empty).
fn percentiles_us(lateness_ns: &[u64]) -> Option<[f64; 3]> {
    let mut h = Histogram::<u64>::new(3).ok()?;
    for &ns in lateness_ns {
        h.record(ns).ok()?;
    }
    if h.is_empty() {
        return None;
    }
    let us = |ns: u64| ns as f64 / 1e3;
    Some([
        us(h.value_at_quantile(0.5)),
        us(h.value_at_quantile(0.99)),
        us(h.max()),
    ])
}

/// The runs of one implementation: per run, p50/p99/max in µs; and whether all
/// verified.
#[derive(Default)]
struct Series {
    runs: Vec<[f64; 3]>,
    ok: bool,
}

impl Series {
    fn stat(&self, i: usize) -> Option<Stats> {
        Stats::of(&self.runs.iter().map(|r| r[i]).collect::<Vec<_>>())
    }

    fn median(&self, i: usize) -> f64 {
        self.stat(i).map_or(f64::NAN, |s| s.median)
    }
}

/// Repeats `one` (warm-up runs discarded) and summarizes.
fn measure(
    plan: crate::measure::Plan,
    progress: &Progress,
    load: &Load,
    mut one: impl FnMut() -> Observed,
) -> Series {
    let mut s = Series {
        runs: Vec::with_capacity(plan.runs),
        ok: true,
    };
    for i in 0..plan.total() {
        let o = one();
        s.ok &= o.verified(load);
        if i >= plan.warmup {
            match percentiles_us(&o.lateness_ns) {
                Some(p) => s.runs.push(p),
                None => s.ok = false,
            }
        }
        progress.tick();
    }
    s
}

/// Runs `tutti bench priority`.
pub fn run(args: &PriorityArgs) -> Result<Report, String> {
    let w = args.workers;
    let load = Load {
        ticks: args.ticks,
        period: Duration::from_micros(args.period_us),
        flood: args.flood,
        chunk: Duration::from_micros(args.chunk_us),
    };
    let unloaded = Load { flood: 0, ..load };
    let plan = args.run.plan();
    let mut report = Report::new("priority");
    report
        .param("ticks", load.ticks)
        .param("period_us", args.period_us)
        .param("flood", load.flood)
        .param("chunk_us", args.chunk_us)
        .param("workers", w)
        .param("runs", plan.runs)
        .param("warmup", plan.warmup);

    let progress = Progress::new(5 * plan.total(), args.json);
    use tutti::Priority::{High, Low, Normal};
    let rt = tutti::Runtime::builder()
        .workers(w)
        .build()
        .map_err(|e| format!("cannot build a tutti runtime with {w} workers: {e}"))?;
    progress.stage("tutti, priorities");
    let prio = measure(plan, &progress, &load, || run_tutti(&rt, load, High, Low));
    progress.stage("tutti, no priorities");
    let normal = measure(plan, &progress, &load, || {
        run_tutti(&rt, load, Normal, Normal)
    });
    progress.stage("tutti, unloaded");
    let tutti_alone = measure(plan, &progress, &unloaded, || {
        run_tutti(&rt, unloaded, Normal, Normal)
    });
    drop(rt);

    let tokio_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(w)
        .enable_time()
        .build()
        .map_err(|e| format!("cannot build a tokio runtime with {w} workers: {e}"))?;
    progress.stage("tokio");
    let tokio = measure(plan, &progress, &load, || run_tokio(&tokio_rt, load));
    progress.stage("tokio, unloaded");
    let tokio_alone = measure(plan, &progress, &unloaded, || {
        run_tokio(&tokio_rt, unloaded)
    });
    drop(tokio_rt);
    progress.finish();

    let metrics = ["lateness_p50", "lateness_p99", "lateness_max"];
    for (name, series) in [
        ("tutti_priority", &prio),
        ("tutti_no_priority", &normal),
        ("tokio", &tokio),
        ("tutti_unloaded", &tutti_alone),
        ("tokio_unloaded", &tokio_alone),
    ] {
        report.verify(series.ok);
        for (i, metric) in metrics.iter().enumerate() {
            if let Some(s) = series.stat(i) {
                report.result(name, metric, s, "us");
            }
        }
    }
    for (i, q) in ["p50", "p99", "max"].iter().enumerate() {
        report.ratio(
            &format!("{q}_tutti_priority_over_tokio"),
            prio.median(i) / tokio.median(i),
        );
        report.ratio(
            &format!("{q}_tutti_priority_over_tutti_no_priority"),
            prio.median(i) / normal.median(i),
        );
        report.ratio(
            &format!("{q}_tutti_no_priority_over_tokio"),
            normal.median(i) / tokio.median(i),
        );
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_of_known_samples() {
        let samples: Vec<u64> = (1..=1000).map(|i| i * 1000).collect();
        let [p50, p99, max] = percentiles_us(&samples).unwrap();
        assert!((p50 - 500.0).abs() < 1.0, "{p50}");
        assert!((p99 - 990.0).abs() < 1.0, "{p99}");
        assert!((max - 1000.0).abs() < 1.0, "{max}");
        assert!(percentiles_us(&[]).is_none());
    }

    /// A short loaded run on each runtime ticks as often as asked.
    #[test]
    fn every_tick_is_recorded_under_load() {
        let load = Load {
            ticks: 20,
            period: Duration::from_micros(500),
            flood: 8,
            chunk: Duration::from_micros(20),
        };
        let rt = tutti::Runtime::builder().workers(2).build().unwrap();
        let o = run_tutti(&rt, load, tutti::Priority::High, tutti::Priority::Low);
        assert!(o.verified(&load), "{} ticks", o.lateness_ns.len());
        let tokio_rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_time()
            .build()
            .unwrap();
        let o = run_tokio(&tokio_rt, load);
        assert!(o.verified(&load), "{} ticks", o.lateness_ns.len());
        let wrong = Load { ticks: 21, ..load };
        assert!(!o.verified(&wrong));
    }
}
