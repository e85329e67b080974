//! `tutti sort`: sort 64-bit keys with tutti's parallel sample sort, rayon's
//! `par_sort_unstable` and std's `sort_unstable`, side by side on the same
//! input.
//!
//! The input is generated once (untimed); every run sorts a fresh copy of
//! it and checks that the output is sorted and a permutation of the input.
//!
//! The sample sort is the library's (`tutti::par`): it is out of place and
//! needs a scratch copy of the keys and a bucket id per key. `tutti` keeps
//! that workspace in a `tutti::par::Sorter` across runs (it is allocated
//! during the warm-up), as a program sorting repeatedly would; `tutti_fresh`
//! is `par_sort_unstable`, which allocates it in every call, so its time
//! includes faulting in about 9 bytes of fresh memory per key.
//! tutti runs on a `tutti::Runtime` and rayon on a `rayon::ThreadPool`, both
//! with `--workers` threads; each is built before and dropped after its own
//! measurements so an idle pool never competes with the one being measured.
//!
//! `rmi` and `alltoall` are the SPMD sample sorts of Saunders 2003 §II.D on a
//! `tutti::world::World` (see [`spmd`]): one location per worker in one
//! process, or under `mpirun` one world over the ranks (then only these two
//! run, since the others are single-process).

pub mod data;
pub mod spmd;

use std::sync::Arc;
use std::time::Duration;

use clap::{Args, ValueEnum};
use rayon::slice::ParallelSliceMut;

use crate::measure::{check_memory, repeat, timed, Measurement, Progress, Run, RunOpts};
use crate::report::{Report, Stats};
use data::{Dist, Fingerprint};

/// Arguments of `tutti sort`.
#[derive(Args, Debug)]
pub struct SortArgs {
    /// Number of keys to sort.
    #[arg(long, default_value_t = 10_000_000, value_parser = clap::value_parser!(u64).range(1..=4_000_000_000))]
    n: u64,
    /// Which implementation(s) to run.
    #[arg(long = "impl", value_enum, default_value_t = Impl::All)]
    implementation: Impl,
    /// Key distribution.
    #[arg(long, value_enum, default_value_t = Dist::Uniform)]
    dist: Dist,
    /// Worker threads for tutti and rayon.
    #[arg(long, env = "TUTTI_WORKERS", default_value_t = crate::default_workers(), value_parser = crate::parse_workers)]
    workers: usize,
    /// Seed of the input data.
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// Key ranges of the sample sort, 2..=128 (rounded up to a power of two).
    #[arg(long, value_parser = clap::value_parser!(u64).range(2..=128))]
    buckets: Option<u64>,
    /// Aggregation factor of the rmi sort's world: requests kept per
    /// destination before they are sent together [default: the transport's].
    #[arg(long, env = "TUTTI_AGGREGATION", value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    aggregation: Option<u64>,
    /// Locations per process of the rmi and alltoall sorts [default: one per
    /// worker].
    #[arg(long, env = "TUTTI_LOCATIONS", value_parser = clap::value_parser!(u64).range(1..=1024))]
    locations: Option<u64>,
    #[command(flatten)]
    run: RunOpts,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// The sort implementations.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Impl {
    /// tutti's parallel sample sort, reusing its workspace across runs.
    Tasks,
    /// tutti's parallel sample sort, allocating its workspace per call.
    TasksFresh,
    /// rayon's `par_sort_unstable`.
    Rayon,
    /// std's sequential `sort_unstable`.
    Std,
    /// The distributed-objects sample sort: one `async_rmi` per key, a fence, a local sort.
    Rmi,
    /// The hand-coded version: one message per pair of locations.
    Alltoall,
    /// All of them, side by side.
    All,
}

/// Runs `tutti sort`.
pub fn run(args: &SortArgs) -> Result<Report, String> {
    let n = usize::try_from(args.n).map_err(|_| format!("--n {} is too large", args.n))?;
    let w = args.workers;
    let plan = args.run.plan();
    let wants = |i: Impl| args.implementation == Impl::All || args.implementation == i;
    let spmd = wants(Impl::Rmi) || wants(Impl::Alltoall);
    let locations = args.locations.map(|l| l as usize);
    // A world across processes now; one in this process is built after the
    // single-process sorts have run, so its idle workers never compete.
    let mut world = if spmd { mpi_world(locations)? } else { None };
    // Across ranks only the SPMD sorts run.
    let ranks = world.as_ref().map_or(1, |w| w.ranks());
    let chosen = |i: Impl| wants(i) && (ranks == 1 || matches!(i, Impl::Rmi | Impl::Alltoall));
    let impls = [
        Impl::Tasks,
        Impl::TasksFresh,
        Impl::Rayon,
        Impl::Std,
        Impl::Rmi,
        Impl::Alltoall,
    ]
    .into_iter()
    .filter(|&i| chosen(i))
    .count();

    let mut report = Report::new("sort");
    report
        .param("n", n)
        .param("dist", args.dist.name())
        .param("workers", w)
        .param("seed", args.seed)
        .param("runs", plan.runs)
        .param("warmup", plan.warmup);

    // Input and working copy, plus the sample sort's scratch keys and ids.
    let workspace = if chosen(Impl::Tasks) || chosen(Impl::TasksFresh) {
        9
    } else {
        0
    };
    check_memory(n as u128 * (16 + workspace), &format!("sorting {n} keys"))?;

    let first_rank = world.as_ref().is_none_or(|w| w.rank() == 0);
    let progress = Progress::new(impls * plan.total(), args.json || !first_rank);
    progress.stage("generating input");
    let input = Arc::new(data::generate(args.dist, n, args.seed));
    let fingerprint = Fingerprint::of(&input);
    let mut work = vec![0u64; n];

    // One run: copy the input (untimed), sort it (timed), check it.
    let mut measure = |sort: &mut dyn FnMut(&mut [u64])| -> Measurement {
        repeat(plan, &progress, || {
            work.copy_from_slice(&input);
            let ((), elapsed) = timed(|| sort(&mut work));
            Run {
                elapsed,
                ok: data::verify(&work, &fingerprint),
            }
        })
    };

    let mut tutti_m = None;
    let mut fresh_m = None;
    if chosen(Impl::Tasks) || chosen(Impl::TasksFresh) {
        let rt = tutti::Runtime::builder()
            .workers(w)
            .build()
            .map_err(|e| format!("cannot build a tutti runtime with {w} workers: {e}"))?;
        let make_sorter = || match args.buckets {
            Some(b) => tutti::par::Sorter::new().key_ranges(b as usize),
            None => tutti::par::Sorter::new(),
        };
        report.param("buckets", make_sorter().ranges());
        if chosen(Impl::Tasks) {
            report.param("tutti_workspace", "reused across runs");
        }
        if chosen(Impl::Tasks) {
            progress.stage("tutti sample sort");
            let mut sorter = make_sorter();
            tutti_m = Some(measure(&mut |v| rt.install(|| sorter.sort_unstable(v))));
        }
        if chosen(Impl::TasksFresh) {
            progress.stage("tutti sample sort, fresh workspace");
            fresh_m = Some(measure(&mut |v| {
                rt.install(|| make_sorter().sort_unstable(v))
            }));
        }
    }
    let mut rayon_m = None;
    if chosen(Impl::Rayon) {
        progress.stage("rayon par_sort_unstable");
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(w)
            .build()
            .map_err(|e| format!("cannot build a rayon pool with {w} threads: {e}"))?;
        rayon_m = Some(measure(&mut |v| pool.install(|| v.par_sort_unstable())));
    }
    let mut std_m = None;
    if chosen(Impl::Std) {
        progress.stage("std sort_unstable");
        std_m = Some(measure(&mut |v| v.sort_unstable()));
    }
    let mut rmi_m = None;
    let mut alltoall_m = None;
    if spmd {
        let world = match world.take() {
            Some(w) => w,
            None => inproc_world(w, locations)?,
        };
        let world = &world;
        report
            .param("ranks", world.ranks())
            .param("locations", world.locations());
        let outcome = |out: Vec<spmd::Outcome>| Run {
            elapsed: Duration::from_secs_f64(out.first().map_or(0.0, |o| o.secs)),
            ok: !out.is_empty() && out.iter().all(|o| o.ok),
        };
        if chosen(Impl::Rmi) {
            let agg = args.aggregation.map(|a| a as usize);
            report.param(
                "aggregation",
                agg.unwrap_or_else(|| tutti::rmi::default_aggregation(world.config())),
            );
            progress.stage("tutti rmi sample sort");
            rmi_m = Some(repeat(plan, &progress, || {
                outcome(spmd::rmi_sort(world, &input, fingerprint, args.seed, agg))
            }));
        }
        if chosen(Impl::Alltoall) {
            progress.stage("tutti all-to-all sample sort");
            alltoall_m = Some(repeat(plan, &progress, || {
                outcome(spmd::alltoall_sort(world, &input, fingerprint, args.seed))
            }));
        }
    }
    progress.finish();

    let all = [
        ("tutti", &tutti_m),
        ("tutti_fresh", &fresh_m),
        ("rayon", &rayon_m),
        ("std", &std_m),
        ("tutti_rmi", &rmi_m),
        ("tutti_alltoall", &alltoall_m),
    ];
    for (name, m) in all {
        let Some(m) = m else { continue };
        report.verify(m.ok);
        if let Some(t) = Stats::of(&m.map(|s| s * 1e3)) {
            report.result(name, "time", t, "ms");
        }
        if let Some(t) = Stats::of(&m.map(|s| n as f64 / s)) {
            report.result(name, "throughput", t, "elements/s");
        }
    }
    if let Some(t) = &tutti_m {
        if let Some(r) = &rayon_m {
            let ratio = t.median_secs() / r.median_secs();
            report.ratio("time_tutti_over_rayon", ratio);
            report.ratio("throughput_tutti_over_rayon", 1.0 / ratio);
        }
        if let Some(s) = &std_m {
            report.ratio("time_tutti_over_std", t.median_secs() / s.median_secs());
        }
    }
    if let (Some(f), Some(r)) = (&fresh_m, &rayon_m) {
        report.ratio(
            "time_tutti_fresh_over_rayon",
            f.median_secs() / r.median_secs(),
        );
    }
    if let Some(r) = &rmi_m {
        let peers = [
            ("time_rmi_over_tasks", &tutti_m),
            ("time_rmi_over_alltoall", &alltoall_m),
            ("time_rmi_over_rayon", &rayon_m),
        ];
        for (name, m) in peers {
            if let Some(m) = m {
                report.ratio(name, r.median_secs() / m.median_secs());
            }
        }
    }
    if let (Some(a), Some(t)) = (&alltoall_m, &tutti_m) {
        report.ratio(
            "time_alltoall_over_tasks",
            a.median_secs() / t.median_secs(),
        );
    }
    Ok(report)
}

/// The SPMD sorts' world if it spans processes (under mpirun: the
/// environment and the launcher decide the workers; one world per process),
/// else `None`.
fn mpi_world(locations: Option<usize>) -> Result<Option<tutti::world::World>, String> {
    let mut b = tutti::world::World::builder();
    if let Some(l) = locations {
        b = b.locations(l);
    }
    let world = b
        .build()
        .map_err(|e| format!("cannot start the world: {e}"))?;
    Ok((world.config().transport() != tutti::world::TransportKind::InProcess).then_some(world))
}

/// The SPMD sorts' world in this process: `workers` threads and one location
/// per worker unless `locations` says otherwise.
fn inproc_world(workers: usize, locations: Option<usize>) -> Result<tutti::world::World, String> {
    tutti::world::World::builder()
        .transport(tutti::world::TransportKind::InProcess)
        .workers(workers)
        .locations(locations.unwrap_or(workers))
        .build()
        .map_err(|e| format!("cannot start the world: {e}"))
}
