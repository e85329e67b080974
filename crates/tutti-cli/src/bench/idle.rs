//! `tutti bench idle`: how much CPU an idle runtime burns.
//!
//! Each runtime is built with `--workers` workers and given a small job that
//! reaches every worker, so all of them have started and run; then the
//! process sits idle for `--seconds` while we compare process CPU time
//! (all threads, user + system) with wall time. The result is in percent of
//! one core. tutti, an idle tokio multi-thread runtime and an idle rayon
//! pool are measured one after another, each alone in the process: the
//! previous one is dropped and given a moment to wind down first.

use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use clap::Args;

use crate::measure::{process_cpu_time, Progress};
use crate::report::{Report, Stats};

/// Arguments of `tutti bench idle`.
#[derive(Args, Debug)]
pub struct IdleArgs {
    /// Length of the idle window, in seconds.
    #[arg(long, default_value_t = 2.0, value_parser = crate::parse_seconds)]
    seconds: f64,
    /// Workers of each runtime.
    #[arg(long, env = "TUTTI_WORKERS", default_value_t = crate::default_workers(), value_parser = crate::parse_workers)]
    workers: usize,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// Pause between dropping one runtime and measuring the next, so the
/// threads of the old one have exited or parked.
const SETTLE: Duration = Duration::from_millis(200);

/// How long the start-up job waits for every worker to join in.
const START_TIMEOUT: Duration = Duration::from_secs(5);

/// CPU use of the process over `window`, in percent of one core.
fn idle_cpu_percent(window: Duration) -> Option<f64> {
    let cpu0 = process_cpu_time()?;
    let wall0 = Instant::now();
    std::thread::sleep(window);
    let cpu1 = process_cpu_time()?;
    let wall = wall0.elapsed().as_secs_f64();
    (wall > 0.0).then(|| 100.0 * (cpu1 - cpu0).as_secs_f64() / wall)
}

/// A job every worker of a `w`-worker pool must take part in: `w` pieces
/// that each wait until all `w` have started, so no worker can run two and
/// each must be run by a different thread. The wait gives up after
/// [`START_TIMEOUT`] rather than hang; the answer is whether `w` distinct
/// threads ran a piece.
fn all_workers_job<S: Fn(&(dyn Fn() + Sync))>(w: usize, spawn_all: S) -> bool {
    let arrived = AtomicUsize::new(0);
    let threads = Mutex::new(HashSet::new());
    let deadline = Instant::now() + START_TIMEOUT;
    spawn_all(&|| {
        if let Ok(mut t) = threads.lock() {
            t.insert(std::thread::current().id());
        }
        arrived.fetch_add(1, Ordering::AcqRel);
        while arrived.load(Ordering::Acquire) < w && Instant::now() < deadline {
            std::thread::yield_now();
        }
    });
    threads.into_inner().map_or(0, |t| t.len()) == w
}

fn tutti_idle(w: usize, window: Duration) -> Result<Option<f64>, String> {
    let rt = tutti::Runtime::builder()
        .workers(w)
        .build()
        .map_err(|e| format!("cannot build a tutti runtime with {w} workers: {e}"))?;
    let started = all_workers_job(w, |piece| {
        rt.install(|| {
            tutti::scope(|s| {
                for _ in 0..w {
                    s.spawn(|_| piece());
                }
            })
        })
    });
    if !started {
        return Ok(None);
    }
    Ok(idle_cpu_percent(window))
}

fn tokio_idle(w: usize, window: Duration) -> Result<Option<f64>, String> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(w)
        .enable_all()
        .build()
        .map_err(|e| format!("cannot build a tokio runtime with {w} workers: {e}"))?;
    // tokio starts its workers when built; a round of tiny tasks makes sure
    // they have all been through their run loop.
    let ok = rt.block_on(async {
        let handles: Vec<_> = (0..4 * w).map(|i| tokio::spawn(async move { i })).collect();
        let mut sum = 0;
        for h in handles {
            sum += h.await.unwrap_or(0);
        }
        sum == (0..4 * w).sum::<usize>()
    });
    if !ok {
        return Ok(None);
    }
    let pct = idle_cpu_percent(window);
    rt.shutdown_timeout(Duration::from_secs(1));
    Ok(pct)
}

fn rayon_idle(w: usize, window: Duration) -> Result<Option<f64>, String> {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(w)
        .build()
        .map_err(|e| format!("cannot build a rayon pool with {w} threads: {e}"))?;
    let started = all_workers_job(w, |piece| {
        pool.broadcast(|_| piece());
    });
    if !started {
        return Ok(None);
    }
    Ok(idle_cpu_percent(window))
}

/// Runs `tutti bench idle`.
pub fn run(args: &IdleArgs) -> Result<Report, String> {
    let w = args.workers;
    let window = Duration::from_secs_f64(args.seconds);
    let mut report = Report::new("idle");
    report.param("seconds", args.seconds).param("workers", w);

    let progress = Progress::new(3, args.json);
    let mut measured = Vec::new();
    progress.stage("tutti idle");
    measured.push(("tutti", tutti_idle(w, window)?));
    progress.tick();
    std::thread::sleep(SETTLE);
    progress.stage("tokio idle");
    measured.push(("tokio", tokio_idle(w, window)?));
    progress.tick();
    std::thread::sleep(SETTLE);
    progress.stage("rayon idle");
    measured.push(("rayon", rayon_idle(w, window)?));
    progress.tick();
    progress.finish();

    for &(name, pct) in &measured {
        match pct {
            Some(p) => report.result(name, "idle_cpu", Stats::single(p), "% of one core"),
            None => report.verify(false),
        }
    }
    if let [(_, Some(t)), (_, Some(k)), (_, Some(r))] = measured[..] {
        // CPU time over the same wall window: ours ÷ peer. Infinite or NaN
        // when the peer used no measurable CPU at all.
        report.ratio("cpu_tutti_over_tokio", t / k);
        report.ratio("cpu_tutti_over_rayon", t / r);
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_are_validated() {
        assert!(crate::parse_seconds("2").is_ok());
        assert!(crate::parse_seconds("0").is_err());
        assert!(crate::parse_seconds("-1").is_err());
        assert!(crate::parse_seconds("nan").is_err());
        assert!(crate::parse_seconds("x").is_err());
    }

    #[test]
    fn the_startup_job_reaches_every_worker() {
        let rt = tutti::Runtime::builder().workers(2).build().unwrap();
        assert!(all_workers_job(2, |piece| {
            rt.install(|| {
                tutti::scope(|s| {
                    for _ in 0..2 {
                        s.spawn(|_| piece());
                    }
                })
            })
        }));
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap();
        assert!(all_workers_job(2, |piece| {
            pool.broadcast(|_| piece());
        }));
    }

    #[test]
    fn idle_measurement_is_sane() {
        let p = idle_cpu_percent(Duration::from_millis(20)).unwrap();
        assert!(p >= 0.0);
    }
}
