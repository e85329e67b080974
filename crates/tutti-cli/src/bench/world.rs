//! `tutti bench world`: the in-process transport between two locations of one
//! world, beside a crossbeam channel between two threads.
//!
//! * **latency**: a value bounces between location 0 and location 1
//!   `--messages` times (tutti: `Location::send` of a `u64` and `recv`, each
//!   location a task on a runtime of `--workers` workers; crossbeam: two threads
//!   and two unbounded channels, blocking `recv`). Reported per one-way message.
//! * **rate**: location 0 sends `--messages` `u64`s to location 1, which receives
//!   them all (tutti unaggregated, aggregation factor 1, and aggregated, factor
//!   `--aggregation`; crossbeam: one producer thread, one consumer thread, unbounded
//!   channel). Reported in messages per second.

use clap::Args;

use crate::measure::{checked, repeat, timed, Measurement, Progress, Run, RunOpts};
use crate::report::{Report, Stats};
use tutti::world::{LocationId, TransportKind, World};

/// Arguments of `tutti bench world`.
#[derive(Args, Debug)]
pub struct WorldArgs {
    /// Messages per measurement.
    #[arg(long, default_value_t = 200_000, value_parser = clap::value_parser!(u64).range(1..=1_000_000_000))]
    messages: u64,
    /// Worker threads of the world's runtime.
    #[arg(long, env = "TUTTI_WORKERS", default_value_t = 2, value_parser = crate::parse_workers)]
    workers: usize,
    /// Aggregation factor of the aggregated rate measurement: messages kept
    /// per destination before they are sent together.
    #[arg(long = "aggregation", default_value_t = 64, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    factor: u64,
    #[command(flatten)]
    run: RunOpts,
    /// Print the world's configuration on stderr.
    #[arg(long)]
    verbose: bool,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// An in-process world of two locations on `workers` workers, unaggregated
/// (also the thread-to-thread side of `tutti mpi-bench`).
pub(crate) fn world(workers: usize) -> Result<World, String> {
    World::builder()
        .ignore_env()
        .transport(TransportKind::InProcess)
        .locations(2)
        .workers(workers)
        .aggregation(1)
        .build()
        .map_err(|e| e.to_string())
}

/// One ping-pong of `n` round trips of a typed `u64` between locations 0 and 1;
/// `Run::ok` if the counter came back right (also `tutti mpi-bench`'s thread to
/// thread latency).
pub(crate) fn tutti_pingpong(w: &World, n: u64) -> Run {
    let (out, elapsed) = timed(|| {
        w.run(move |loc| async move {
            let other = LocationId::new(1 - loc.id().index() as u32);
            let first = loc.id().index() == 0;
            let mut last = 0u64;
            if first {
                let _ = loc.send(other, 0u64);
            }
            for i in 0..n {
                let mut d = loc.recv().await;
                let v = d.take::<u64>().unwrap_or(u64::MAX);
                drop(d);
                last = v;
                if !(first && i + 1 == n) {
                    let _ = loc.send(other, v + 1);
                }
            }
            last
        })
    });
    // Location 0 sees 1, 3, …, 2n−1; location 1 sees 0, 2, …, 2n−2.
    Run {
        elapsed,
        ok: out == [2 * n - 1, 2 * n - 2],
    }
}

fn crossbeam_pingpong(n: u64) -> Run {
    let (to_b, b_rx) = crossbeam_channel::unbounded::<u64>();
    let (to_a, a_rx) = crossbeam_channel::unbounded::<u64>();
    checked(|| {
        let b = std::thread::spawn(move || {
            for _ in 0..n {
                let Ok(v) = b_rx.recv() else { return false };
                if to_a.send(v + 1).is_err() {
                    return false;
                }
            }
            true
        });
        let mut v = 0;
        let mut ok = true;
        for _ in 0..n {
            ok &= to_b.send(v).is_ok();
            match a_rx.recv() {
                Ok(x) => v = x + 1,
                Err(_) => ok = false,
            }
        }
        ok && b.join().unwrap_or(false) && v == 2 * n
    })
}

fn tutti_stream(w: &World, n: u64, factor: usize) -> Run {
    let (out, elapsed) = timed(|| {
        w.run(move |loc| async move {
            loc.set_aggregation(factor);
            if loc.id().index() == 0 {
                for i in 0..n {
                    let _ = loc.send(LocationId::new(1), i);
                }
                loc.flush();
                n
            } else {
                let mut sum = 0u64;
                for _ in 0..n {
                    let mut d = loc.recv().await;
                    sum = sum.wrapping_add(d.take::<u64>().unwrap_or(0));
                }
                sum
            }
        })
    });
    Run {
        elapsed,
        ok: out[1] == n * (n - 1) / 2,
    }
}

fn crossbeam_stream(n: u64) -> Run {
    let (tx, rx) = crossbeam_channel::unbounded::<u64>();
    let (sum, elapsed) = timed(|| {
        let c =
            std::thread::spawn(move || rx.iter().take(n as usize).fold(0u64, u64::wrapping_add));
        for i in 0..n {
            let _ = tx.send(i);
        }
        c.join().unwrap_or(0)
    });
    Run {
        elapsed,
        ok: sum == n * (n - 1) / 2,
    }
}

/// Runs the benchmark.
pub fn run(a: &WorldArgs) -> Result<Report, String> {
    let plan = a.run.plan();
    let n = a.messages;
    let w = world(a.workers)?;
    if a.verbose {
        eprintln!("{}", w.config());
    }
    let progress = Progress::new(plan.total() * 5, a.json);
    let mut report = Report::new("bench world");
    report
        .param("messages", n)
        .param("workers", a.workers)
        .param("aggregation", a.factor)
        .param("runs", plan.runs);

    progress.stage("latency: tutti");
    let lat_tutti = repeat(plan, &progress, || tutti_pingpong(&w, n));
    progress.stage("latency: crossbeam");
    let lat_cb = repeat(plan, &progress, || crossbeam_pingpong(n));
    progress.stage("rate: tutti unaggregated");
    let rate_1 = repeat(plan, &progress, || tutti_stream(&w, n, 1));
    progress.stage("rate: tutti aggregated");
    let rate_f = repeat(plan, &progress, || tutti_stream(&w, n, a.factor as usize));
    progress.stage("rate: crossbeam");
    let rate_cb = repeat(plan, &progress, || crossbeam_stream(n));
    progress.finish();

    let one_way_ns = |m: &Measurement| m.map(|s| s * 1e9 / (2 * n) as f64);
    let per_sec = |m: &Measurement| m.map(|s| n as f64 / s);
    let stat = |v: Vec<f64>| Stats::of(&v).unwrap_or(Stats::single(f64::NAN));
    let l_t = stat(one_way_ns(&lat_tutti));
    let l_c = stat(one_way_ns(&lat_cb));
    let r_1 = stat(per_sec(&rate_1));
    let r_f = stat(per_sec(&rate_f));
    let r_c = stat(per_sec(&rate_cb));
    report.result("tutti", "latency one-way", l_t.clone(), "ns");
    report.result("crossbeam", "latency one-way", l_c.clone(), "ns");
    report.result("tutti factor 1", "rate", r_1.clone(), "messages/s");
    report.result(
        &format!("tutti factor {}", a.factor),
        "rate",
        r_f.clone(),
        "messages/s",
    );
    report.result("crossbeam", "rate", r_c.clone(), "messages/s");
    report.ratio("latency_tutti_over_crossbeam", l_t.median / l_c.median);
    report.ratio(
        "throughput_tutti_unaggregated_over_crossbeam",
        r_1.median / r_c.median,
    );
    report.ratio(
        "throughput_tutti_aggregated_over_crossbeam",
        r_f.median / r_c.median,
    );
    report.ratio(
        "throughput_aggregated_over_unaggregated",
        r_f.median / r_1.median,
    );
    for m in [&lat_tutti, &lat_cb, &rate_1, &rate_f, &rate_cb] {
        report.verify(m.ok);
    }
    Ok(report)
}
