//! `tutti bench par-iter`: tutti's parallel iterators and parallel sort beside rayon's,
//! the same pipelines on the same data in one run.
//!
//! | case | pipeline | items |
//! |---|---|---|
//! | `sum_squares` | `v.par_iter().map(\|&x\| x * x).sum::<u64>()` | `--large` (10^8) |
//! | `map_collect` | `v.par_iter().map(\|&x\| 3 * x + 1).collect::<Vec<u64>>()` | `--n` (10^7) |
//! | `filter_count` | `v.par_iter().filter(\|&&x\| x % 3 == 0).count()` | `--large` (10^8) |
//! | `zip_sum` | `a.par_iter().zip(&b).map(\|(x, y)\| x * y).sum::<u64>()` | two slices of `--n` |
//! | `sort` | `v.par_sort_unstable()` of uniform random `u64` | `--n` (10^7) |
//!
//! For every worker count of `--workers` a tutti runtime and a rayon pool of as
//! many threads run every case, their runs interleaved (one of each per round, the order
//! alternating) so that the machine's drifts in speed hit both alike; before each run
//! both pools' threads are given 2 ms to park, so every run starts from parked threads. The inputs are generated once, untimed; the sort sorts
//! a fresh copy in every run (the copy is not timed). Every run checks its result against
//! the sequential computation. Ratios: `time_tutti_over_rayon_<case>_w<workers>` (below
//! 1: tutti is faster).

use clap::{Args, ValueEnum};

use crate::apps::sort::data::{self, Dist, Fingerprint};
use crate::measure::{check_memory, timed, Measurement, Plan, Progress, Run, RunOpts};
use crate::report::{Report, Stats};
use crate::rng::Rng;

/// The cases of the benchmark.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Case {
    /// Sum of squares over `--large` values.
    SumSquares,
    /// Map then collect `--n` values into a vector, in order.
    MapCollect,
    /// Filter then count over `--large` values.
    FilterCount,
    /// Zip two slices of `--n`, multiply, sum.
    ZipSum,
    /// Parallel unstable sort of `--n` random values.
    Sort,
}

impl Case {
    const ALL: [Case; 5] = [
        Case::SumSquares,
        Case::MapCollect,
        Case::FilterCount,
        Case::ZipSum,
        Case::Sort,
    ];

    fn name(self) -> &'static str {
        match self {
            Case::SumSquares => "sum_squares",
            Case::MapCollect => "map_collect",
            Case::FilterCount => "filter_count",
            Case::ZipSum => "zip_sum",
            Case::Sort => "sort",
        }
    }
}

/// Arguments of `tutti bench par-iter`.
#[derive(Args, Debug)]
pub struct ParIterArgs {
    /// Items of the sum-of-squares and filter-count cases.
    #[arg(long, default_value_t = 100_000_000, value_parser = clap::value_parser!(u64).range(1..=2_000_000_000))]
    large: u64,
    /// Items of the map-collect, zip-sum and sort cases.
    #[arg(long, default_value_t = 10_000_000, value_parser = clap::value_parser!(u64).range(1..=1_000_000_000))]
    n: u64,
    /// Worker counts to measure (tutti workers, rayon threads): one (`2`), a list
    /// (`1,2,4`) or a range (`1..4`).
    #[arg(long, default_value = "1,2", value_parser = crate::args::parse_worker_counts)]
    workers: crate::args::Counts,
    /// The cases to run, comma-separated [default: all].
    #[arg(long, value_delimiter = ',', value_enum)]
    cases: Vec<Case>,
    /// Seed of the inputs.
    #[arg(long, default_value_t = 42)]
    seed: u64,
    #[command(flatten)]
    run: RunOpts,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// The inputs, generated once, and the expected results.
struct Inputs {
    /// `--large` values below 2^16 (so that no sum of squares overflows).
    large: Vec<u64>,
    /// Two slices of `--n` values below 2^16.
    a: Vec<u64>,
    b: Vec<u64>,
    /// `--n` uniform random keys for the sort, and their fingerprint.
    keys: Vec<u64>,
    fingerprint: Fingerprint,
    sum_squares: u64,
    filter_count: usize,
    zip_sum: u64,
}

impl Inputs {
    fn generate(large: usize, n: usize, seed: u64, cases: &[Case]) -> Inputs {
        let wants = |c: Case| cases.contains(&c);
        let small = |len: usize, stream: u64| -> Vec<u64> {
            let mut r = Rng::stream(seed, stream);
            (0..len).map(|_| r.next_u64() >> 48).collect()
        };
        let large_v = if wants(Case::SumSquares) || wants(Case::FilterCount) {
            small(large, 1)
        } else {
            Vec::new()
        };
        let a = if wants(Case::MapCollect) || wants(Case::ZipSum) {
            small(n, 2)
        } else {
            Vec::new()
        };
        let b = if wants(Case::ZipSum) {
            small(n, 3)
        } else {
            Vec::new()
        };
        let keys = if wants(Case::Sort) {
            data::generate(Dist::Uniform, n, seed)
        } else {
            Vec::new()
        };
        Inputs {
            sum_squares: large_v.iter().map(|&x| x * x).sum(),
            filter_count: large_v.iter().filter(|&&x| x % 3 == 0).count(),
            zip_sum: a.iter().zip(&b).map(|(x, y)| x * y).sum(),
            fingerprint: Fingerprint::of(&keys),
            large: large_v,
            a,
            b,
            keys,
        }
    }
}

/// One implementation of the cases: tutti's or rayon's, each on its own pool.
trait Side {
    fn sum_squares(&self, v: &[u64]) -> u64;
    fn map_collect(&self, v: &[u64]) -> Vec<u64>;
    fn filter_count(&self, v: &[u64]) -> usize;
    fn zip_sum(&self, a: &[u64], b: &[u64]) -> u64;
    fn sort(&self, v: &mut [u64]);
}

/// The cases of one side, written once: each side's module takes only its own prelude,
/// whose methods have the same names, so both run the very same pipelines.
macro_rules! side {
    ($(#[$doc:meta])* $module:ident, $krate:ident, $side:ident($pool:ty)) => {
        $(#[$doc])*
        mod $module {
            use $krate::prelude::*;

            pub(super) struct $side(pub(super) $pool);

            impl super::Side for $side {
                fn sum_squares(&self, v: &[u64]) -> u64 {
                    self.0.install(|| v.par_iter().map(|&x| x * x).sum())
                }
                fn map_collect(&self, v: &[u64]) -> Vec<u64> {
                    self.0
                        .install(|| v.par_iter().map(|&x| 3 * x + 1).collect())
                }
                fn filter_count(&self, v: &[u64]) -> usize {
                    self.0
                        .install(|| v.par_iter().filter(|&&x| x % 3 == 0).count())
                }
                fn zip_sum(&self, a: &[u64], b: &[u64]) -> u64 {
                    self.0
                        .install(|| a.par_iter().zip(b).map(|(x, y)| x * y).sum())
                }
                fn sort(&self, v: &mut [u64]) {
                    self.0.install(|| v.par_sort_unstable());
                }
            }
        }
    };
}

side!(
    /// tutti's side: its prelude only (rayon's has methods of the same names).
    ours, tutti, Tutti(tutti::Runtime)
);
side!(
    /// rayon's side: the same pipelines.
    theirs, rayon, Rayon(rayon::ThreadPool)
);

use ours::Tutti;
use theirs::Rayon;

/// The pause before every run: long enough for the threads of both pools to park.
const PAUSE: std::time::Duration = std::time::Duration::from_millis(2);

/// One run of `case` on `side`, checked; `work` is the sort's working copy (filled from
/// the input first, untimed).
fn one_run(side: &dyn Side, case: Case, inputs: &Inputs, work: &mut [u64]) -> Run {
    let checked = |ok: bool, elapsed| Run { elapsed, ok };
    match case {
        Case::SumSquares => {
            let (s, t) = timed(|| side.sum_squares(&inputs.large));
            checked(s == inputs.sum_squares, t)
        }
        Case::MapCollect => {
            let (out, t) = timed(|| side.map_collect(&inputs.a));
            let ok = out.len() == inputs.a.len()
                && out.iter().zip(&inputs.a).all(|(&y, &x)| y == 3 * x + 1);
            checked(ok, t)
        }
        Case::FilterCount => {
            let (c, t) = timed(|| side.filter_count(&inputs.large));
            checked(c == inputs.filter_count, t)
        }
        Case::ZipSum => {
            let (s, t) = timed(|| side.zip_sum(&inputs.a, &inputs.b));
            checked(s == inputs.zip_sum, t)
        }
        Case::Sort => {
            work.copy_from_slice(&inputs.keys);
            let ((), t) = timed(|| side.sort(work));
            checked(data::verify(work, &inputs.fingerprint), t)
        }
    }
}

/// Measures `case` on both sides, their runs interleaved (tutti first in even rounds,
/// rayon first in odd ones) so that a drift of the machine's speed affects both alike.
fn measure_pair(
    sides: [&dyn Side; 2],
    case: Case,
    inputs: &Inputs,
    work: &mut [u64],
    plan: Plan,
    progress: &Progress,
) -> [Measurement; 2] {
    let mut out: [Measurement; 2] = std::array::from_fn(|_| Measurement {
        secs: Vec::with_capacity(plan.runs),
        ok: true,
    });
    for round in 0..plan.total() {
        for k in [round % 2, 1 - round % 2] {
            // Both pools start every run parked, whichever ran last.
            std::thread::sleep(PAUSE);
            let run = one_run(sides[k], case, inputs, work);
            out[k].ok &= run.ok;
            if round >= plan.warmup {
                out[k].secs.push(run.elapsed.as_secs_f64());
            }
            progress.tick();
        }
    }
    out
}

/// Runs `tutti bench par-iter`.
pub fn run(args: &ParIterArgs) -> Result<Report, String> {
    let large = usize::try_from(args.large).map_err(|_| "--large is too large")?;
    let n = usize::try_from(args.n).map_err(|_| "--n is too large")?;
    let plan = args.run.plan();
    let cases: Vec<Case> = if args.cases.is_empty() {
        Case::ALL.to_vec()
    } else {
        Case::ALL
            .into_iter()
            .filter(|c| args.cases.contains(c))
            .collect()
    };
    let workers = args.workers.0.clone();

    let wants = |c: Case| cases.contains(&c);
    let mut bytes = 0u128;
    if wants(Case::SumSquares) || wants(Case::FilterCount) {
        bytes += large as u128 * 8;
    }
    // The inputs, the collected output, the sort's copy and its scratch area.
    bytes += n as u128 * 8 * (2 + u128::from(wants(Case::MapCollect)));
    if wants(Case::Sort) {
        bytes += n as u128 * (8 + 8 + 9);
    }
    check_memory(bytes, "the parallel-iterator benchmark")?;

    let mut report = Report::new("par-iter");
    report
        .param("large", large)
        .param("n", n)
        .param("workers", &workers)
        .param("cases", cases.iter().map(|c| c.name()).collect::<Vec<_>>())
        .param("seed", args.seed)
        .param("runs", plan.runs)
        .param("warmup", plan.warmup);

    let progress = Progress::new(2 * workers.len() * cases.len() * plan.total(), args.json);
    progress.stage("generating inputs");
    let inputs = Inputs::generate(large, n, args.seed, &cases);
    let mut work = vec![0u64; if wants(Case::Sort) { n } else { 0 }];

    let mut rows: Vec<(String, Case, Measurement)> = Vec::new();
    for &w in &workers {
        let ours = Tutti(
            tutti::Runtime::builder()
                .workers(w)
                .build()
                .map_err(|e| format!("cannot build a tutti runtime with {w} workers: {e}"))?,
        );
        let theirs = Rayon(
            rayon::ThreadPoolBuilder::new()
                .num_threads(w)
                .build()
                .map_err(|e| format!("cannot build a rayon pool with {w} threads: {e}"))?,
        );
        for &case in &cases {
            progress.stage(&format!("{w} workers: {}", case.name()));
            let [t, r] = measure_pair([&ours, &theirs], case, &inputs, &mut work, plan, &progress);
            report.ratio(
                &format!("time_tutti_over_rayon_{}_w{w}", case.name()),
                t.median_secs() / r.median_secs(),
            );
            rows.push((format!("tutti_w{w}"), case, t));
            rows.push((format!("rayon_w{w}"), case, r));
        }
    }
    progress.finish();

    for (name, case, m) in &rows {
        report.verify(m.ok);
        if let Some(t) = Stats::of(&m.map(|s| s * 1e3)) {
            report.result(name, case.name(), t, "ms");
        }
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_sides_compute_the_expected_results() {
        let inputs = Inputs::generate(50_000, 40_000, 7, &Case::ALL);
        let plan = Plan { warmup: 0, runs: 1 };
        let progress = Progress::new(0, true);
        let mut work = vec![0u64; 40_000];
        let tutti_side = Tutti(tutti::Runtime::builder().workers(2).build().unwrap());
        let rayon_side = Rayon(
            rayon::ThreadPoolBuilder::new()
                .num_threads(2)
                .build()
                .unwrap(),
        );
        for case in Case::ALL {
            let [t, r] = measure_pair(
                [&tutti_side, &rayon_side],
                case,
                &inputs,
                &mut work,
                plan,
                &progress,
            );
            assert!(t.ok && r.ok, "{}", case.name());
        }
        // The checks can fail: a wrong sum is caught.
        let wrong = Inputs {
            sum_squares: inputs.sum_squares + 1,
            ..inputs
        };
        let m = one_run(&tutti_side, Case::SumSquares, &wrong, &mut work);
        assert!(!m.ok);
    }
}
