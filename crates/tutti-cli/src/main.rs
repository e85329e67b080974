//! The `tutti` command: the seed applications and side-by-side benchmarks of
//! the tutti runtime against its peers (rayon, tokio, std).
//!
//! Every command prints a readable table, or with `--json` exactly one JSON
//! object (see [`report`]); it exits with status 1 when its own verification
//! fails and 2 on bad arguments.

mod alloc;
mod apps;
mod args;
mod bench;
mod launch;
mod measure;
mod mem;
mod mpi_bench;
mod mpi_collectives;
#[cfg(feature = "mpi")]
mod mpi_raw;
mod plot;
mod report;
mod rng;
mod trace;
/// Aborts the unit tests if they are still running after a time limit (a hung test).
#[cfg(test)]
#[path = "../../tutti/tests/watchdog/mod.rs"]
mod watchdog;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

/// Counts live heap bytes during `alloc::measure` windows (memory benchmarks).
#[global_allocator]
static ALLOC: alloc::Counting = alloc::Counting;

/// tutti: one runtime for parallel and distributed programs.
#[derive(Parser, Debug)]
#[command(name = "tutti", version, about, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Sort 64-bit keys: tutti's parallel sample sort vs rayon vs std.
    Sort(apps::sort::SortArgs),
    /// A parallel loop over 10^7 Gaussians: speedup over worker counts, beside rayon.
    Gauss(apps::gauss::GaussArgs),
    /// "Say hello to everyone": m·n² messages between n nodes of CSP processes.
    // `--version` selects the benchmark's version here (as in the issue), not
    // the program's.
    #[command(disable_version_flag = true, version = None)]
    Hello(apps::hello::HelloArgs),
    /// Mutually assured destruction: two CSP monitors racing to kill each other (deadlock and fix).
    Mad(apps::mad::MadArgs),
    /// CSP demos: shared channel ends (client-server), non-blocking barrier.
    #[command(subcommand)]
    CspDemo(apps::csp_demo::DemoCommand),
    /// Small programs that hang (an ask cycle, a stalled fence) and a dump of waits:
    /// what `tutti::diag` reports.
    HangDemo(apps::hang_demo::HangDemoArgs),
    /// A key-value database actor and its clients, beside Unix sockets and channels.
    Db(apps::db::DbArgs),
    /// A weather service on actors: names, subscriptions, a client crash, clean shutdown.
    Weather(apps::weather::WeatherArgs),
    /// Jacobi for Poisson's equation in 1D, one halo exchange per iteration by remote method calls.
    Jacobi(apps::jacobi::JacobiArgs),
    /// Shallow water: patches as actor-graph actors vs bulk-synchronous steps.
    Swe(apps::swe::SweArgs),
    /// Strongly connected components by trim / pivot / mark, with a remote method call per edge.
    Scc(apps::scc::SccArgs),
    /// Distributed actors: a registered service on location 0 asked by actors on
    /// every location (`mpirun -n 4 tutti actor-world`, or threads without mpirun).
    ActorWorld(apps::actor_world::ActorWorldArgs),
    /// URL-addressed RPC: a work server that clients join during the
    /// computation to fetch work, report results, and query or change its status.
    RpcDemo(apps::rpc_demo::RpcDemoArgs),
    /// Fault soaks bounded by `--seconds`: processes killed while a system runs,
    /// checking that nothing is lost and no survivor hangs.
    #[command(subcommand)]
    Soak(apps::soak::SoakCommand),
    /// Micro-benchmarks of the runtime against its peers.
    Bench(BenchArgs),
    /// Start P processes of one command as a named shared-memory system
    /// (`tutti launch -n 4 -- <command> [args]`; no MPI needed).
    Launch(launch::LaunchArgs),
    /// Timeline traces (`TUTTI_TRACE=file.json`): merge per-rank files, check a file.
    #[command(subcommand)]
    Trace(trace::TraceCommand),
    /// MPI latency, bandwidth, message rate and overlap, raw rsmpi beside
    /// tutti's transport (`mpirun -n 2 tutti mpi-bench`; needs `--features mpi`).
    MpiBench(mpi_bench::MpiBenchArgs),
}

/// `tutti bench`: the benchmark to run, and where to draw its results.
#[derive(clap::Args, Debug)]
struct BenchArgs {
    /// Also draw the results into this PNG file: tutti and its peers side by
    /// side, one panel per metric, error bars from min to max.
    #[arg(long, global = true, value_name = "FILE.png", value_parser = plot::parse_png)]
    plot: Option<std::path::PathBuf>,
    #[command(subcommand)]
    command: BenchCommand,
}

#[derive(Subcommand, Debug)]
enum BenchCommand {
    /// Fork-join overhead: fib and a tree sum with tutti::join vs rayon::join vs chili vs recursion.
    Fib(bench::fib::FibArgs),
    /// Parallel iterators and the parallel sort: tutti vs rayon, the same pipelines.
    ParIter(bench::par_iter::ParIterArgs),
    /// Async tasks: spawn+await and ping-pong, tutti vs tokio.
    Spawn(bench::spawn::SpawnArgs),
    /// Task priorities: wake-up lateness of a 1 kHz high-priority loop beside a flood of low-priority tasks, tutti vs tokio.
    Priority(bench::priority::PriorityArgs),
    /// CPU use of an idle runtime: tutti vs tokio vs rayon.
    Idle(bench::idle::IdleArgs),
    /// CSP channels, barriers and Alt: tutti vs Go and crossbeam-channel.
    Csp(bench::csp::CspArgs),
    /// Wire formats: tutti's codec vs postcard, bincode, bitcode, rmp-serde.
    Codec(bench::codec::CodecArgs),
    /// The in-process world: cross-location latency and rate vs crossbeam-channel.
    World(bench::world::WorldArgs),
    /// Actors: tell, ask, spawn+stop, memory; tutti vs actix vs kameo.
    Actor(bench::actor::ActorArgs),
    /// Deadlock detection's cost: actor tell, CSP ping-pong and RMI with it on vs off.
    Diag(bench::diag::DiagArgs),
    /// A flood across two ranks into a slow actor: peak memory and throughput with backpressure (a bounded mailbox) vs without.
    Backpressure(bench::backpressure::BackpressureArgs),
    /// Distributed objects: empty method, ping-pong and fence vs direct calls, an atomic flag and std::sync::Barrier.
    Rmi(bench::rmi::RmiArgs),
    /// Actor graphs: local port hand-over vs a crossbeam bounded channel between threads.
    Graph(bench::graph::GraphArgs),
    /// Processes of one host: an 8-byte ping-pong over tutti's shared memory vs a Unix socket and a pipe.
    Shm(bench::shm::ShmArgs),
    /// TCP echo on loopback, 64 B and 16 KiB messages: tutti::net vs tokio.
    Net(bench::net::NetArgs),
    /// Hello-world HTTP/1.1 under wrk (or a built-in closed-loop generator): hyper on tutti vs hyper on tokio.
    Http(bench::http::HttpArgs),
    /// URL-addressed RPC: the cost of each way to call, from a local call to loopback TCP, vs tarpc and remoc.
    Rpc(bench::rpc::RpcArgs),
    /// Timeline tracing: actor tell, CSP ping-pong and RMI with tracing off vs on.
    Trace(bench::trace::TraceArgs),
}

/// One worker per available core.
pub fn default_workers() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

pub use args::{parse_seconds, parse_workers};

/// Measured runs when `--runs` is not given, for the commands whose default is
/// not 5 (each command's own constant; `swe`'s lives in its module's `run`).
fn runs_defaults() -> [(&'static [&'static str], usize); 12] {
    [
        (&["gauss"], apps::gauss::RUNS),
        (&["jacobi"], apps::jacobi::RUNS),
        (&["scc"], apps::scc::RUNS),
        (&["swe"], 3),
        (&["actor-world"], apps::actor_world::RUNS),
        (&["db"], apps::db::RUNS),
        (&["bench", "fib"], bench::fib::RUNS),
        (&["bench", "codec"], bench::codec::RUNS),
        (&["bench", "diag"], bench::diag::RUNS),
        (&["bench", "backpressure"], bench::backpressure::RUNS),
        (&["bench", "priority"], bench::priority::RUNS),
        (&["bench", "http"], bench::http::RUNS),
    ]
}

/// The environment variables the commands read, shown by `tutti --help`.
const ENVIRONMENT: &str = "\
Environment:
  TUTTI_WORKERS      worker threads (the commands' --workers)
  TUTTI_LOCATIONS    locations per process of a world (--locations)
  TUTTI_AGGREGATION  messages kept per destination before they are sent together (--aggregation)
  TUTTI_IDLE         what idle workers do: spin, yield or park [default: park]
  TUTTI_TRANSPORT    how the processes of a world talk: auto, inproc, mpi or shm [default: auto]
  TUTTI_DEADLOCK     when waits can no longer progress: fail, report or off [default: fail]
  TUTTI_TRACE        record a timeline trace of the run into this file
  TUTTI_GO_DIR       where `bench csp` finds its Go programs (--go-dir)
docs/environment.md in the repository lists every variable.";

/// Sets `allow_negative_numbers` on `cmd` and every subcommand, so that
/// `--n -5` reaches the value's own check (\"-5 is not in 1..\") instead of
/// being taken for an unknown option.
fn with_negative_numbers(cmd: clap::Command) -> clap::Command {
    let names: Vec<String> = cmd
        .get_subcommands()
        .map(|c| c.get_name().to_string())
        .collect();
    let mut cmd = cmd.allow_negative_numbers(true);
    for name in names {
        cmd = cmd.mut_subcommand(name, with_negative_numbers);
    }
    cmd
}

/// Sets the default of `--runs` of the command at `path`.
fn with_runs(cmd: clap::Command, path: &[&str], runs: usize) -> clap::Command {
    match path {
        [] => {
            let text: &'static str = Box::leak(runs.to_string().into_boxed_str());
            cmd.mut_arg("runs", |a| a.default_value(text))
        }
        [first, rest @ ..] => cmd.mut_subcommand(*first, |c| with_runs(c, rest, runs)),
    }
}

/// The command line: the derived parser, with negative numbers accepted as
/// values, each command's `--runs` default, and the environment in `--help`.
pub fn command() -> clap::Command {
    let mut cmd = with_negative_numbers(Cli::command());
    for (path, runs) in runs_defaults() {
        cmd = with_runs(cmd, path, runs);
    }
    cmd.after_help(ENVIRONMENT)
}

fn main() {
    let matches = command().get_matches();
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    // The picture of a benchmark's report (`tutti bench … --plot`); the
    // commands that draw their own (speedup curves) do it in their `run`.
    let mut plot_to = None;
    let (json, outcome) = match &cli.command {
        Command::Sort(a) => (a.json, apps::sort::run(a)),
        Command::Gauss(a) => (a.json, apps::gauss::run(a)),
        Command::Jacobi(a) => (a.json, apps::jacobi::run(a)),
        Command::Swe(a) => (a.json, apps::swe::run(a)),
        Command::Scc(a) => (a.json, apps::scc::run(a)),
        Command::Db(a) => (a.json, apps::db::run(a)),
        Command::Weather(a) => (a.json, apps::weather::run(a)),
        Command::ActorWorld(a) => (a.json, apps::actor_world::run(a)),
        Command::RpcDemo(a) => (a.json, apps::rpc_demo::run(a)),
        Command::Hello(a) => (a.json, apps::hello::run(a)),
        Command::Mad(a) => (a.json, apps::mad::run(a)),
        Command::CspDemo(d) => (d.json(), d.run()),
        Command::Soak(s) => (s.json(), s.run()),
        Command::HangDemo(a) => (a.json, apps::hang_demo::run(a)),
        Command::MpiBench(a) => {
            plot_to = a.plot.plot.clone();
            (a.json, mpi_bench::run(a))
        }
        Command::Launch(a) => launch::run(a),
        Command::Trace(t) => (t.json(), t.run()),
        Command::Bench(b) => {
            plot_to = b.plot.clone();
            match &b.command {
                BenchCommand::Fib(a) => (a.json, bench::fib::run(a)),
                BenchCommand::ParIter(a) => (a.json, bench::par_iter::run(a)),
                BenchCommand::Spawn(a) => (a.json, bench::spawn::run(a)),
                BenchCommand::Priority(a) => (a.json, bench::priority::run(a)),
                BenchCommand::Idle(a) => (a.json, bench::idle::run(a)),
                BenchCommand::Csp(a) => (a.json, bench::csp::run(a)),
                BenchCommand::Codec(a) => (a.json, bench::codec::run(a)),
                BenchCommand::World(a) => (a.json, bench::world::run(a)),
                BenchCommand::Shm(a) => (a.json, bench::shm::run(a)),
                BenchCommand::Actor(a) => (a.json, bench::actor::run(a)),
                BenchCommand::Diag(a) => (a.json, bench::diag::run(a)),
                BenchCommand::Backpressure(a) => (a.json, bench::backpressure::run(a)),
                BenchCommand::Rmi(a) => (a.json, bench::rmi::run(a)),
                BenchCommand::Graph(a) => (a.json, bench::graph::run(a)),
                BenchCommand::Rpc(a) => (a.json, bench::rpc::run(a)),
                BenchCommand::Net(a) => (a.json, bench::net::run(a)),
                BenchCommand::Http(a) => (a.json, bench::http::run(a)),
                BenchCommand::Trace(a) => (a.json, bench::trace::run(a)),
            }
        }
    };
    // Under a launcher every rank may report; rank 0 draws.
    let plot_to = plot_to.filter(|_| plot::first_rank());
    let outcome = match (outcome, plot_to) {
        (Ok(report), Some(path)) => match plot::bars(&report, &path) {
            Ok(()) => {
                eprintln!("tutti: drew {}", path.display());
                Ok(report)
            }
            Err(e) => Err(format!("cannot draw {}: {e}", path.display())),
        },
        (outcome, _) => outcome,
    };
    match outcome {
        Ok(report) => {
            report.print(json);
            match report.verified() {
                Some(true) => {}
                Some(false) => {
                    eprintln!("tutti: verification FAILED");
                    std::process::exit(1);
                }
                None => eprintln!("tutti: this run verified nothing (verified: unknown)"),
            }
        }
        Err(e) => {
            eprintln!("tutti: error: {e}");
            std::process::exit(1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cli_is_well_formed() {
        command().debug_assert();
    }

    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        command()
            .try_get_matches_from(args)
            .and_then(|m| Cli::from_arg_matches(&m))
    }

    #[test]
    fn a_negative_number_is_a_bad_value_not_an_unknown_option() {
        let e = parse(&["tutti", "sort", "--n", "-5"]).unwrap_err();
        assert_eq!(e.kind(), clap::error::ErrorKind::ValueValidation, "{e}");
        assert!(e.to_string().contains("-5"), "{e}");
        assert_eq!(e.exit_code(), 2);
    }

    #[test]
    fn runs_defaults_show_in_help_and_apply() {
        let mut cmd = command();
        let gauss = cmd.find_subcommand_mut("gauss").unwrap();
        let help = gauss.render_long_help().to_string();
        assert!(help.contains("[default: 11]"), "{help}");
        let Command::Gauss(_) = parse(&["tutti", "gauss"]).unwrap().command else {
            panic!("gauss")
        };
        let m = command().get_matches_from(["tutti", "bench", "fib"]);
        let (_, bench) = m.subcommand().unwrap();
        let (_, fib) = bench.subcommand().unwrap();
        assert_eq!(fib.get_one::<u64>("runs"), Some(&15));
    }

    #[test]
    fn bad_arguments_are_errors_not_panics() {
        for args in [
            &["tutti", "sort", "--n", "0"][..],
            &["tutti", "sort", "--n", "-3"],
            &["tutti", "sort", "--dist", "bogus"],
            &["tutti", "sort", "--impl", "quick"],
            &["tutti", "sort", "--workers", "0"],
            &["tutti", "sort", "--runs", "0"],
            &["tutti", "sort", "--impl", "rmi", "--aggregation", "0"],
            &["tutti", "sort", "--impl", "alltoall", "--locations", "0"],
            &["tutti", "jacobi", "--n", "0"],
            &["tutti", "swe", "--nx", "1"],
            &["tutti", "swe", "--patch", "0"],
            &["tutti", "swe", "--scenario", "tsunami"],
            &["tutti", "swe", "--impl", "mpi"],
            &["tutti", "swe", "--snapshots", "x"],
            &["tutti", "bench", "graph", "--capacities", "0"],
            &["tutti", "bench", "graph", "--messages", "0"],
            &["tutti", "jacobi", "--steps", "0"],
            &["tutti", "jacobi", "--workers", "0"],
            &["tutti", "scc"],
            &["tutti", "scc", "--mesh", "0"],
            &["tutti", "scc", "--mesh", "10", "--graph", "g.txt"],
            &["tutti", "scc", "--mesh", "10", "--tile", "0"],
            &["tutti", "bench", "rmi", "--aggregation", "0"],
            &["tutti", "bench", "rmi", "--pings", "10,x"],
            &["tutti", "bench", "rmi", "--sweep-messages", "0"],
            &["tutti", "gauss", "--blocks", "0"],
            &["tutti", "gauss", "--blocks", "16000,x"],
            &["tutti", "gauss", "--points", "0"],
            &["tutti", "gauss", "--workers", "0"],
            &["tutti", "bench", "fib", "--n", "100"],
            &["tutti", "trace"],
            &["tutti", "trace", "merge", "out.json"],
            &["tutti", "trace", "check"],
            &["tutti", "trace", "check", "t.json", "--ranks", "0"],
            &["tutti", "bench", "trace", "--tells", "0"],
            &["tutti", "bench", "trace", "--pingpong", "1"],
            &["tutti", "bench", "fib", "--workers", "1,0"],
            &["tutti", "bench", "spawn", "--tasks", "0"],
            &["tutti", "bench", "idle", "--seconds", "0"],
            &["tutti", "bench", "idle", "--seconds", "nan"],
            &["tutti", "hello", "--version", "3"],
            &["tutti", "hello", "--n", "0"],
            &["tutti", "hello", "--m", "0"],
            &["tutti", "mad", "--trials", "0"],
            &["tutti", "mad", "--workers", "0"],
            &["tutti", "mad", "--readings", "x"],
            &["tutti", "csp-demo"],
            &["tutti", "csp-demo", "client-server", "--clients", "0"],
            &["tutti", "csp-demo", "nbbarrier", "--processes", "0"],
            &["tutti", "bench", "csp"],
            &["tutti", "bench", "csp", "no-such-case"],
            &["tutti", "bench", "csp", "alt", "--alt-guards", "2,0"],
            &[
                "tutti",
                "bench",
                "csp",
                "barrier",
                "--barrier-processes",
                "0",
            ],
            &["tutti", "bench", "codec", "--elements", "0"],
            &["tutti", "bench", "codec", "--hostile", "-1"],
            &["tutti", "bench", "actor"],
            &["tutti", "weather", "--clients", "1"],
            &["tutti", "actor-world", "--clients", "0"],
            &["tutti", "actor-world", "--locations", "0"],
            &["tutti", "weather", "--stations", "0"],
            &["tutti", "weather", "--seconds", "-1"],
            &["tutti", "db", "--clients", "0"],
            &["tutti", "db", "--clients", "9..3"],
            &["tutti", "db", "--strategy", "sleep"],
            &["tutti", "db", "--requests", "0"],
            &["tutti", "db", "--processes", "1"],
            &["tutti", "db", "--processes", "65"],
            &["tutti", "weather", "--processes", "1"],
            &["tutti", "weather", "--processes", "65"],
            &["tutti", "bench", "actor", "pingpong"],
            &["tutti", "bench", "actor", "tell", "--actors", "0"],
            &["tutti", "bench", "actor", "all", "--peers", "akka"],
            &["tutti", "bench", "par-iter", "--cases", "sum"],
            &["tutti", "bench", "par-iter", "--large", "0"],
        ] {
            assert!(parse(args).is_err(), "{args:?} was accepted");
        }
    }

    #[test]
    fn good_arguments_parse() {
        for args in [
            &[
                "tutti",
                "sort",
                "--n",
                "1000",
                "--dist",
                "few-unique",
                "--json",
            ][..],
            &[
                "tutti",
                "sort",
                "--impl",
                "tasks",
                "--workers",
                "2",
                "--seed",
                "7",
            ],
            &["tutti", "gauss", "--blocks", "16000,4000", "--workers", "2"],
            &["tutti", "bench", "fib", "--n", "20", "--workers", "1,2"],
            &[
                "tutti",
                "bench",
                "spawn",
                "--tasks",
                "10",
                "--pingpong",
                "10",
            ],
            &[
                "tutti",
                "bench",
                "idle",
                "--seconds",
                "0.5",
                "--workers",
                "2",
            ],
            &["tutti", "hello", "--n", "10", "--m", "2", "--version", "1"],
            &[
                "tutti",
                "mad",
                "--revised",
                "--trials",
                "10",
                "--force-overlap",
            ],
            &["tutti", "csp-demo", "client-server", "--servers", "2"],
            &["tutti", "csp-demo", "nbbarrier", "--steps", "3", "--json"],
            &["tutti", "bench", "csp", "all", "--no-go", "--v1-n", "0"],
            &["tutti", "bench", "csp", "alt", "--alt-guards", "2,8"],
            &[
                "tutti",
                "bench",
                "codec",
                "--elements",
                "10",
                "--hostile",
                "0",
                "--runs",
                "3",
                "--json",
            ],
            &[
                "tutti", "bench", "actor", "all", "--peers", "actix", "--runs", "1",
            ],
            &[
                "tutti",
                "weather",
                "--stations",
                "2",
                "--clients",
                "4",
                "--seconds",
                "0.5",
            ],
            &[
                "tutti",
                "db",
                "--clients",
                "7",
                "--requests",
                "100",
                "--strategy",
                "wait",
            ],
            &["tutti", "db", "--clients", "1..16", "--peers", "uds"],
            &[
                "tutti",
                "bench",
                "par-iter",
                "--cases",
                "sum-squares,sort",
                "--workers",
                "1..2",
            ],
            &[
                "tutti", "bench", "actor", "memory", "--idle", "10", "--peers", "kameo",
            ],
        ] {
            if let Err(e) = parse(args) {
                panic!("{args:?}: {e}");
            }
        }
    }
}
