//! `tutti bench csp`: tutti's CSP layer beside its peers, in one run.
//!
//! | benchmark | tutti | peer |
//! |---|---|---|
//! | `pingpong` | two processes bounce a value over two rendezvous channels | Go, unbuffered channels |
//! | `hello` | "say hello to everyone" v2 (1..W workers) and v1 (≈10^7 processes, memory) | Go, the same programs |
//! | `buffered` | one producer, one consumer, a channel of capacity 1024 | crossbeam-channel between two threads; Go |
//! | `barrier` | 1000 enrolled processes syncing repeatedly | Go, a reusable barrier of 1000 goroutines |
//! | `alt` | a process selecting over 2, 8, 64 rendezvous channels fed by another; and over ready buffered channels | crossbeam `Select`, between two threads / on one |
//! | `fair` | a thread fair-selecting over 2 and 4 rendezvous channels, each fed by its own thread: the split and the longest wait of a sender | crossbeam `Select`, the same threads |
//! | `select` | `select!` evaluated in a loop: over 3 ready channels (cost, and the split among the arms), and a send arm streaming over a rendezvous channel | crossbeam `select!`, on one thread / between two |
//! | `live` | 10^7 processes blocked in `recv` at once, then released: resident bytes per process, spawn rate | — (KRoC, occam-π's runtime, reports about 56 bytes per process) |
//! | `unbounded` | 1 and 4 producers into one unbounded channel, one consumer: processes, and threads | crossbeam-channel `unbounded` and std `mpsc::channel` between threads |
//!
//! Every figure is the median of `--runs` runs after `--warmup` unrecorded
//! ones; ratios are tutti ÷ peer for times (below 1: tutti is faster). tutti
//! runs on a `Runtime` with `--workers` workers, Go with `GOMAXPROCS` set to
//! the same number. The Go peers are built from `bench/go` with `go build`;
//! without Go the Go rows are skipped and the report says why.

mod alt;
mod barrier;
mod buffered;
mod fair;
mod go;
mod hello;
mod live;
pub(crate) mod pingpong;
mod select;
mod unbounded;

use std::path::PathBuf;

use clap::{Args, ValueEnum};

use crate::measure::{Plan, RunOpts};
use crate::report::{Report, Stats};
use go::{GoPeer, GoResult};

/// Which CSP benchmark to run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Which {
    /// Rendezvous ping-pong between two processes vs Go.
    Pingpong,
    /// "Say hello to everyone" v2 and v1 vs Go.
    Hello,
    /// Buffered channel throughput vs crossbeam-channel and Go.
    Buffered,
    /// Barrier sync of many processes vs Go.
    Barrier,
    /// `Alt` selection over many guards vs crossbeam `Select`.
    Alt,
    /// Fairness of a fair `Alt` served by a thread, senders on threads, vs crossbeam.
    Fair,
    /// `select!` in a loop (ready arms: cost and split; a send arm) vs crossbeam `select!`.
    Select,
    /// 10^7 processes blocked at once: resident bytes per process and spawn rate.
    Live,
    /// Unbounded channel throughput, 1 and 4 producers, vs crossbeam-channel and std mpsc.
    Unbounded,
    /// Every one of the above.
    All,
}

/// Arguments of `tutti bench csp`.
#[derive(Args, Debug)]
pub struct CspArgs {
    /// Which benchmark.
    #[arg(value_enum)]
    which: Which,
    /// Workers of the tutti runtime, and GOMAXPROCS of the Go peers.
    #[arg(long, env = "TUTTI_WORKERS", default_value_t = 2, value_parser = crate::parse_workers)]
    workers: usize,
    /// Ping-pong: messages (each direction of a round trip counts one).
    #[arg(long = "pingpong", default_value_t = 2_000_000, value_parser = clap::value_parser!(u64).range(2..=10_000_000_000))]
    messages: u64,
    /// hello v2: nodes.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..=100_000))]
    hello_n: u64,
    /// hello v2: messages from every node to every node.
    #[arg(long, default_value_t = 30, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    hello_m: u32,
    /// hello v1 (m = 1): nodes; 2237 makes about 10^7 processes. 0 skips v1.
    #[arg(long, default_value_t = 2237, value_parser = clap::value_parser!(u64).range(0..=100_000))]
    v1_n: u64,
    /// hello v1: nodes of the Go run (a goroutine takes several times the
    /// memory of a tutti process; 0 skips it).
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(0..=100_000))]
    go_v1_n: u64,
    /// Buffered: messages.
    #[arg(long, default_value_t = 10_000_000, value_parser = clap::value_parser!(u64).range(1..=10_000_000_000))]
    buffered_messages: u64,
    /// Buffered: channel capacity.
    #[arg(long, default_value_t = 1024, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    capacity: u64,
    /// Barrier: processes enrolled.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    barrier_processes: u64,
    /// Barrier: syncs per process.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    barrier_syncs: u64,
    /// Alt: guard counts to measure, comma-separated.
    #[arg(long, value_delimiter = ',', default_values_t = [2, 8, 64], value_parser = clap::value_parser!(u64).range(1..=4096))]
    alt_guards: Vec<u64>,
    /// Alt: selections per run.
    #[arg(long, default_value_t = 100_000, value_parser = clap::value_parser!(u64).range(1..=1_000_000_000))]
    alt_selections: u64,
    /// Fair: selections per run.
    #[arg(long, default_value_t = 100_000, value_parser = clap::value_parser!(u64).range(1..=1_000_000_000))]
    fair_selections: u64,
    /// Fair: sender thread counts to measure, comma-separated.
    #[arg(long, value_delimiter = ',', default_values_t = [2, 4], value_parser = clap::value_parser!(u64).range(1..=64))]
    fair_senders: Vec<u64>,
    /// Select: evaluations of `select!` per run.
    #[arg(long, default_value_t = 100_000, value_parser = clap::value_parser!(u64).range(1..=100_000_000))]
    select_evaluations: u64,
    /// Live: processes blocked at once.
    #[arg(long, default_value_t = 10_000_000, value_parser = clap::value_parser!(u64).range(1..=1_000_000_000))]
    live_n: u64,
    /// Live: processes receiving on one channel (1: a channel of its own for each).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=4_294_967_295))]
    live_per_channel: u64,
    /// Unbounded: messages in all (shared out among the producers).
    #[arg(long, default_value_t = 4_000_000, value_parser = clap::value_parser!(u64).range(1..=10_000_000_000))]
    unbounded_messages: u64,
    /// Unbounded: producer counts to measure, comma-separated.
    #[arg(long, value_delimiter = ',', default_values_t = [1, 4], value_parser = clap::value_parser!(u64).range(1..=256))]
    producers: Vec<u64>,
    /// Seed of the random channel choices of the Alt benchmark.
    #[arg(long, default_value_t = 7)]
    seed: u64,
    /// Where the Go peer sources are [default: bench/go].
    #[arg(long, env = "TUTTI_GO_DIR")]
    go_dir: Option<PathBuf>,
    /// Skip the Go peers.
    #[arg(long)]
    no_go: bool,
    #[command(flatten)]
    run: RunOpts,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// What every CSP benchmark gets.
pub(super) struct Ctx<'a> {
    args: &'a CspArgs,
    plan: Plan,
    rt: tutti::Runtime,
    go: Result<GoPeer, String>,
}

impl Ctx<'_> {
    /// Runs a Go peer `plan.total()` times and collects the recorded runs'
    /// values of each metric; `None` (having said why on stderr and in the
    /// report) if Go is unavailable or the run failed.
    fn go_runs(
        &self,
        report: &mut Report,
        procs: usize,
        args: &[String],
    ) -> Option<Vec<Vec<GoResult>>> {
        let go = self.go.as_ref().ok()?;
        let mut runs = Vec::with_capacity(self.plan.runs);
        for i in 0..self.plan.total() {
            match go.run(procs, args) {
                Ok(r) if i >= self.plan.warmup => runs.push(r),
                Ok(_) => {}
                Err(e) => {
                    eprintln!("tutti: {e}");
                    report.param(&format!("go_error_{}", args[0]), e);
                    return None;
                }
            }
        }
        Some(runs)
    }
}

/// The median of `metric` over Go runs.
fn go_stats(runs: &[Vec<GoResult>], metric: &str) -> Option<Stats> {
    let values: Vec<f64> = runs
        .iter()
        .filter_map(|r| go::value_of(r, metric))
        .collect();
    if values.len() < runs.len() {
        return None;
    }
    Stats::of(&values)
}

/// Runs `tutti bench csp`.
pub fn run(args: &CspArgs) -> Result<Report, String> {
    let plan = args.run.plan();
    let w = args.workers;
    let mut report = Report::new("csp");
    report
        .param("which", format!("{:?}", args.which).to_lowercase())
        .param("workers", w)
        .param("runs", plan.runs)
        .param("warmup", plan.warmup);

    let go = if args.no_go {
        Err("skipped (--no-go)".to_string())
    } else {
        let dir = args
            .go_dir
            .clone()
            .unwrap_or_else(|| PathBuf::from(go::DEFAULT_GO_DIR));
        GoPeer::build(&dir)
    };
    match &go {
        Ok(_) => report.param("go", "yes"),
        Err(why) => {
            if !args.no_go {
                eprintln!("tutti: the Go peers are skipped: {why}");
            }
            report.param("go", format!("no: {why}"))
        }
    };
    let rt = tutti::Runtime::builder()
        .workers(w)
        .build()
        .map_err(|e| format!("cannot build a tutti runtime with {w} workers: {e}"))?;
    let ctx = Ctx { args, plan, rt, go };
    let all = args.which == Which::All;
    if all || args.which == Which::Pingpong {
        pingpong::run(&ctx, &mut report)?;
    }
    if all || args.which == Which::Buffered {
        buffered::run(&ctx, &mut report)?;
    }
    if all || args.which == Which::Barrier {
        barrier::run(&ctx, &mut report)?;
    }
    if all || args.which == Which::Alt {
        alt::run(&ctx, &mut report)?;
    }
    if all || args.which == Which::Fair {
        fair::run(&ctx, &mut report)?;
    }
    if all || args.which == Which::Select {
        select::run(&ctx, &mut report)?;
    }
    if all || args.which == Which::Unbounded {
        unbounded::run(&ctx, &mut report)?;
    }
    if all || args.which == Which::Hello {
        hello::run(&ctx, &mut report)?;
    }
    if all || args.which == Which::Live {
        live::run(&ctx, &mut report)?;
    }
    Ok(report)
}
