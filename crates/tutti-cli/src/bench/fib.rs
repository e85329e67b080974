//! `tutti bench fib`: the cost of one fork-join, measured by a naive
//! recursive Fibonacci with no sequential cut-off, so almost all the time is
//! spent in `join` itself.
//!
//! `tutti::join` on a `tutti::Runtime` and `rayon::join` on a rayon pool run
//! for every worker count in `--workers` (a fresh runtime and pool per
//! count), beside plain sequential recursion. A "task" is one `join` call,
//! i.e. one internal node of the call tree: `fib(n + 1) − 1` of them.

use clap::Args;

use crate::measure::{repeat, timed, Measurement, Progress, Run, RunOpts};
use crate::report::{Report, Stats};

/// Measured runs when `--runs` is not given (shown in `--help`).
pub const RUNS: usize = 15;

/// Arguments of `tutti bench fib`.
#[derive(Args, Debug)]
pub struct FibArgs {
    /// Which Fibonacci number to compute.
    #[arg(long, default_value_t = 32, value_parser = clap::value_parser!(u32).range(1..=45))]
    n: u32,
    /// Worker counts to measure: one (`2`), a list (`1,2,4`) or a range (`1..4`).
    #[arg(long, default_value = "1,2", value_parser = crate::args::parse_worker_counts)]
    workers: crate::args::Counts,
    #[command(flatten)]
    run: RunOpts,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// `fib(n)` by iteration, the reference value.
fn fib_iter(n: u32) -> u64 {
    let (mut a, mut b) = (0u64, 1u64);
    for _ in 0..n {
        (a, b) = (b, a + b);
    }
    a
}

/// Number of `join` calls of the recursive computation of `fib(n)`.
fn joins(n: u32) -> u64 {
    if n < 2 {
        0
    } else {
        fib_iter(n + 1) - 1
    }
}

fn fib_seq(n: u32) -> u64 {
    if n < 2 {
        return u64::from(n);
    }
    fib_seq(n - 1) + fib_seq(n - 2)
}

fn fib_tutti(n: u32) -> u64 {
    if n < 2 {
        return u64::from(n);
    }
    let (a, b) = tutti::join(|| fib_tutti(n - 1), || fib_tutti(n - 2));
    a + b
}

fn fib_rayon(n: u32) -> u64 {
    if n < 2 {
        return u64::from(n);
    }
    let (a, b) = rayon::join(|| fib_rayon(n - 1), || fib_rayon(n - 2));
    a + b
}

/// Runs `tutti bench fib`.
pub fn run(args: &FibArgs) -> Result<Report, String> {
    let n = args.n;
    let plan = args.run.plan();
    let expected = fib_iter(n);
    let tasks = joins(n);
    let lists = args.workers.0.clone();

    let mut report = Report::new("fib");
    report
        .param("n", n)
        .param("workers", args.workers.to_string())
        .param("tasks", tasks)
        .param("runs", plan.runs)
        .param("warmup", plan.warmup);

    let progress = Progress::new((1 + 2 * lists.len()) * plan.total(), args.json);
    let measure = |f: &dyn Fn() -> u64| -> Measurement {
        repeat(plan, &progress, || {
            let (value, elapsed) = timed(f);
            Run {
                elapsed,
                ok: value == expected,
            }
        })
    };

    progress.stage("sequential");
    let seq = measure(&|| fib_seq(std::hint::black_box(n)));
    let mut rows = vec![("seq".to_string(), seq.clone())];
    for &w in &lists {
        progress.stage(&format!("tutti, {w} workers"));
        let rt = tutti::Runtime::builder()
            .workers(w)
            .build()
            .map_err(|e| format!("cannot build a tutti runtime with {w} workers: {e}"))?;
        let tutti_m = measure(&|| rt.install(|| fib_tutti(std::hint::black_box(n))));
        drop(rt);

        progress.stage(&format!("rayon, {w} threads"));
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(w)
            .build()
            .map_err(|e| format!("cannot build a rayon pool with {w} threads: {e}"))?;
        let rayon_m = measure(&|| pool.install(|| fib_rayon(std::hint::black_box(n))));
        drop(pool);

        report.ratio(
            &format!("time_tutti_over_rayon_w{w}"),
            tutti_m.median_secs() / rayon_m.median_secs(),
        );
        report.ratio(
            &format!("time_tutti_over_seq_w{w}"),
            tutti_m.median_secs() / seq.median_secs(),
        );
        rows.push((format!("tutti_w{w}"), tutti_m));
        rows.push((format!("rayon_w{w}"), rayon_m));
    }
    progress.finish();

    for (name, m) in &rows {
        report.verify(m.ok);
        if let Some(t) = Stats::of(&m.map(|s| s * 1e3)) {
            report.result(name, "time", t, "ms");
        }
        if let Some(t) = Stats::of(&m.map(|s| s * 1e9 / tasks.max(1) as f64)) {
            report.result(name, "time_per_task", t, "ns");
        }
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reference_values() {
        assert_eq!(fib_iter(0), 0);
        assert_eq!(fib_iter(1), 1);
        assert_eq!(fib_iter(10), 55);
        assert_eq!(fib_iter(32), 2_178_309);
        assert_eq!(fib_seq(15), fib_iter(15));
    }

    #[test]
    fn joins_count_internal_nodes() {
        fn count(n: u32) -> u64 {
            if n < 2 {
                0
            } else {
                1 + count(n - 1) + count(n - 2)
            }
        }
        for n in 0..20 {
            assert_eq!(joins(n), count(n), "n={n}");
        }
    }

    #[test]
    fn parallel_versions_agree() {
        let rt = tutti::Runtime::builder().workers(2).build().unwrap();
        assert_eq!(rt.install(|| fib_tutti(18)), fib_iter(18));
        assert_eq!(fib_rayon(18), fib_iter(18));
    }
}
