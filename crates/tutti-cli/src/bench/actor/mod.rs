//! `tutti bench actor <tell|ask|spawn|memory|all>`: tutti's actors beside
//! actix and kameo, with the same actors, messages and driver in each.
//!
//! * **tell**: one driver task tells `--tells` messages round-robin to
//!   `--actors` counting actors, then asks each for its count (the asks queue
//!   behind the tells, so their replies mean every message was handled; the
//!   counts are checked). Reported per message.
//! * **ask**: a driver task asks one actor `--round-trips` times, awaiting
//!   each reply (ping-pong; each reply is checked). Reported per round trip.
//!   `ask_thread` is the same from a plain thread that blocks for each reply
//!   (tutti `ask_blocking`; actix `send` under a thread-parking `block_on`;
//!   kameo `blocking_send`).
//! * **spawn**: a driver task spawns `--spawns` actors, then stops them all
//!   and waits until every one has run its stop hook. Reported per actor.
//! * **memory**: `--idle` idle actors are spawned (in batches of
//!   [`BATCH`], each waited for until its actors have started, so that no
//!   run queue grows with the whole burst) in a fresh runtime, and the growth
//!   of live heap bytes over the spawning is counted by the CLI's counting
//!   allocator ([`crate::alloc`]). Reported per actor: requested bytes and
//!   heap blocks. Each actor's own state is one `Arc` (8 bytes), included.
//!
//! Runtimes: tutti with `--workers` workers; kameo on a tokio multi-thread
//! runtime with as many; actix on its `System` thread plus `--workers - 1`
//! arbiters (actix runs each arbiter on one thread: the tell benchmark
//! spreads its actors over all of them; ask and spawn use the driver's
//! arbiter, as `Actor::start` does). Drivers run as tasks of their runtime.
//!
//! Times are medians over `--runs` after `--warmup`, taken in rounds (each library
//! once per round, in turn, so that the machine's load changing over time favours none
//! of them); ratios are tutti ÷ peer. Beside
//! each wall time the report gives the process's CPU time per unit (`*_cpu`: all its
//! threads, spinning included, setup of the run's actors included), with its own
//! ratios: on a machine shared with other work the wall time also measures how long
//! the benchmark waited for a core, the CPU time only the work it did.

mod actix_impl;
mod kameo_impl;
pub(crate) mod tutti_impl;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use clap::{Args, ValueEnum};

use crate::measure::{process_cpu_time, Progress, Run, RunOpts};
use crate::report::{Report, Stats};

/// Which measurement to run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Which {
    /// Tell throughput, round-robin over many actors.
    Tell,
    /// Ask round trip (ping-pong), from a task and from a plain thread.
    Ask,
    /// Spawn and stop many actors.
    Spawn,
    /// Heap bytes per idle actor.
    Memory,
    /// All of the above.
    All,
}

/// Arguments of `tutti bench actor`.
#[derive(Args, Debug)]
pub struct ActorArgs {
    /// What to measure.
    #[arg(value_enum)]
    which: Which,
    /// Messages told in the tell benchmark.
    #[arg(long = "tells", default_value_t = 1_000_000, value_parser = clap::value_parser!(u64).range(1..=1_000_000_000))]
    messages: u64,
    /// Actors the tell benchmark sends to, round-robin.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    actors: u64,
    /// Round trips of the ask benchmark.
    #[arg(long, default_value_t = 100_000, value_parser = clap::value_parser!(u64).range(1..=1_000_000_000))]
    round_trips: u64,
    /// Actors spawned and stopped in the spawn benchmark.
    #[arg(long, default_value_t = 100_000, value_parser = clap::value_parser!(u64).range(1..=100_000_000))]
    spawns: u64,
    /// Idle actors of the memory benchmark.
    #[arg(long, default_value_t = 100_000, value_parser = clap::value_parser!(u64).range(1..=10_000_000))]
    idle: u64,
    /// Peers to run beside tutti (comma-separated; `none` for tutti alone).
    #[arg(long, value_enum, value_delimiter = ',', default_value = "actix,kameo")]
    peers: Vec<PeerName>,
    /// Worker threads of each runtime.
    #[arg(long, env = "TUTTI_WORKERS", default_value_t = 2, value_parser = crate::parse_workers)]
    workers: usize,
    #[command(flatten)]
    run: RunOpts,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// A peer actor library.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum PeerName {
    /// actix 0.13 (actix-rt arbiters).
    Actix,
    /// kameo 0.17 (tokio tasks).
    Kameo,
    /// No peer (profiling tutti alone).
    None,
}

/// Actors spawned at a time by the memory benchmark.
pub const BATCH: usize = 1000;

/// One actor library under test: runs one measured run of each benchmark.
pub(crate) trait Library {
    /// Short name for the report.
    fn name(&self) -> &'static str;
    /// Tells `messages` round-robin to `actors` actors; checks the counts.
    fn tell(&mut self, actors: usize, messages: u64) -> Run;
    /// `round_trips` asks from a task.
    fn ask(&mut self, round_trips: u64) -> Run;
    /// `round_trips` blocking asks from a plain thread.
    fn ask_thread(&mut self, round_trips: u64) -> Run;
    /// Spawns and stops `n` actors.
    fn spawn_stop(&mut self, n: usize) -> Run;
    /// Heap growth of `n` idle actors in a fresh runtime, once they started.
    fn memory(&mut self, n: usize) -> Option<crate::alloc::Growth>;
}

/// Counts actors that reached a hook (start or stop) and wakes the driver
/// when the expected number has. Works under every executor (it only uses
/// wakers).
pub struct Countdown {
    left: AtomicUsize,
    done: tokio::sync::Notify,
}

impl Countdown {
    /// A countdown expecting nobody yet.
    pub fn new() -> Arc<Countdown> {
        Arc::new(Countdown {
            left: AtomicUsize::new(0),
            done: tokio::sync::Notify::new(),
        })
    }

    /// Expects `n` more arrivals.
    pub fn expect(&self, n: usize) {
        self.left.fetch_add(n, Ordering::AcqRel);
    }

    /// One arrival; the last one wakes the waiter.
    pub fn arrive(&self) {
        if self.left.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.done.notify_one();
        }
    }

    /// Waits until every expected arrival happened.
    pub async fn wait(&self) {
        while self.left.load(Ordering::Acquire) != 0 {
            self.done.notified().await;
        }
    }

    /// Nobody is expected now.
    pub fn is_zero(&self) -> bool {
        self.left.load(Ordering::Acquire) == 0
    }
}

/// A run that failed its own check.
fn failed() -> Run {
    Run {
        elapsed: std::time::Duration::ZERO,
        ok: false,
    }
}

/// Polls `fut` on this thread, parking between polls: the plain-thread way to
/// wait for a peer's future.
pub fn park_block_on<F: std::future::Future>(fut: F) -> F::Output {
    struct Unpark(std::thread::Thread);
    impl std::task::Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
        fn wake_by_ref(self: &Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = std::task::Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut cx = std::task::Context::from_waker(&waker);
    let mut fut = std::pin::pin!(fut);
    loop {
        if let std::task::Poll::Ready(v) = fut.as_mut().poll(&mut cx) {
            return v;
        }
        std::thread::park();
    }
}

/// What timing a benchmark over every library needs.
struct Timing<'a> {
    report: &'a mut Report,
    libs: &'a mut Vec<Box<dyn Library>>,
    plan: crate::measure::Plan,
    progress: &'a Progress,
}

impl Timing<'_> {
    /// Measures `f` for every library; reports per-`count` times and the
    /// ratios of tutti (the first library) to each peer.
    fn time(
        &mut self,
        metric: &str,
        count: u64,
        unit: &str,
        f: &mut dyn FnMut(&mut dyn Library) -> Run,
    ) {
        // Rounds: each library runs once per round, in turn, so that a change in the
        // machine's load over time does not favour whichever runs first.
        let libs = self.libs.len();
        let mut wall: Vec<Vec<f64>> = vec![Vec::new(); libs];
        // CPU time of the whole process per run (every thread, spinning included): on
        // a shared machine it shows the work done even when the wall time mostly
        // shows waiting for a core.
        let mut cpu: Vec<Vec<f64>> = vec![Vec::new(); libs];
        let mut ok = vec![true; libs];
        for round in 0..self.plan.total() {
            for (i, lib) in self.libs.iter_mut().enumerate() {
                self.progress.stage(&format!("{} {metric}", lib.name()));
                let before = process_cpu_time();
                let run = f(lib.as_mut());
                let after = process_cpu_time();
                ok[i] &= run.ok;
                if round >= self.plan.warmup {
                    wall[i].push(run.elapsed.as_secs_f64() * 1e9 / count as f64);
                    if let (Some(b), Some(a)) = (before, after) {
                        cpu[i].push((a - b).as_secs_f64() * 1e9 / count as f64);
                    }
                }
                self.progress.tick();
            }
        }
        let (mut ours, mut ours_cpu) = (f64::NAN, f64::NAN);
        for (i, lib) in self.libs.iter().enumerate() {
            let name = lib.name();
            self.report.verify(ok[i]);
            let (w, c) = (Stats::of(&wall[i]), Stats::of(&cpu[i]));
            if let Some(s) = w.clone() {
                self.report.result(name, metric, s, unit);
            }
            if let Some(s) = c.clone() {
                self.report
                    .result(name, &format!("{metric}_cpu"), s, &format!("cpu {unit}"));
            }
            let (w, c) = (
                w.map_or(f64::NAN, |s| s.median),
                c.map_or(f64::NAN, |s| s.median),
            );
            if name == "tutti" {
                (ours, ours_cpu) = (w, c);
            } else {
                self.report
                    .ratio(&format!("time_tutti_over_{name}_{metric}"), ours / w);
                self.report.ratio(
                    &format!("cpu_time_tutti_over_{name}_{metric}"),
                    ours_cpu / c,
                );
            }
        }
    }
}

/// Runs `tutti bench actor`.
pub fn run(args: &ActorArgs) -> Result<Report, String> {
    let plan = args.run.plan();
    let w = args.workers;
    let mut report = Report::new("actor");
    let which = |x: Which| args.which == x || args.which == Which::All;
    report
        .param("which", format!("{:?}", args.which).to_lowercase())
        .param("workers", w)
        .param("runs", plan.runs)
        .param("warmup", plan.warmup);
    if which(Which::Tell) {
        report
            .param("tells", args.messages)
            .param("actors", args.actors);
    }
    if which(Which::Ask) {
        report.param("round_trips", args.round_trips);
    }
    if which(Which::Spawn) {
        report.param("spawns", args.spawns);
    }
    if which(Which::Memory) {
        report.param("idle", args.idle);
    }

    let mut libs: Vec<Box<dyn Library>> = vec![Box::new(tutti_impl::Tutti::new(w)?)];
    for p in &args.peers {
        match p {
            PeerName::Actix => libs.push(Box::new(actix_impl::Actix::new(w)?)),
            PeerName::Kameo => libs.push(Box::new(kameo_impl::Kameo::new(w)?)),
            PeerName::None => {}
        }
    }
    // Measurements per library: tell, ask and ask_thread, spawn, memory.
    let metrics: usize = [
        (Which::Tell, 1),
        (Which::Ask, 2),
        (Which::Spawn, 1),
        (Which::Memory, 1),
    ]
    .into_iter()
    .filter(|&(b, _)| which(b))
    .map(|(_, k)| k)
    .sum();
    let progress = Progress::new(metrics * libs.len() * plan.total(), args.json);

    // (metric, unit, per lib: median seconds or value)
    let mut ctx = Timing {
        report: &mut report,
        libs: &mut libs,
        plan,
        progress: &progress,
    };
    if which(Which::Tell) {
        let (a, m) = (args.actors as usize, args.messages);
        ctx.time("tell", m, "ns/message", &mut |l| l.tell(a, m));
    }
    if which(Which::Ask) {
        let n = args.round_trips;
        ctx.time("ask", n, "ns/round trip", &mut |l| l.ask(n));
        ctx.time("ask_thread", n, "ns/round trip", &mut |l| l.ask_thread(n));
    }
    if which(Which::Spawn) {
        let n = args.spawns;
        ctx.time("spawn_stop", n, "ns/actor", &mut |l| {
            l.spawn_stop(n as usize)
        });
    }

    if which(Which::Memory) {
        let n = args.idle as usize;
        let mut ours = None;
        for lib in libs.iter_mut() {
            progress.stage(&format!("{} memory", lib.name()));
            let mut bytes = Vec::new();
            let mut blocks = Vec::new();
            let mut ok = true;
            for _ in 0..plan.total() {
                match lib.memory(n) {
                    Some(g) => {
                        bytes.push(g.bytes as f64 / n as f64);
                        blocks.push(g.blocks as f64 / n as f64);
                    }
                    None => ok = false,
                }
                progress.tick();
            }
            // Memory is deterministic enough that warm-up runs count too.
            report.verify(ok);
            if let (Some(b), Some(k)) = (Stats::of(&bytes), Stats::of(&blocks)) {
                report.result(lib.name(), "memory", b.clone(), "bytes/actor");
                report.result(lib.name(), "heap_blocks", k, "blocks/actor");
                match ours {
                    None => ours = Some(b.median),
                    Some(o) => report.ratio(
                        &format!("bytes_tutti_over_{}_memory", lib.name()),
                        o / b.median,
                    ),
                }
            }
        }
    }
    progress.finish();
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_library_runs_every_benchmark_and_verifies() {
        let libs: Vec<Box<dyn Library>> = vec![
            Box::new(tutti_impl::Tutti::new(2).unwrap()),
            Box::new(actix_impl::Actix::new(2).unwrap()),
            Box::new(kameo_impl::Kameo::new(2).unwrap()),
        ];
        for mut lib in libs {
            let name = lib.name();
            assert!(lib.tell(7, 1000).ok, "{name} tell");
            assert!(lib.ask(100).ok, "{name} ask");
            assert!(lib.ask_thread(100).ok, "{name} ask_thread");
            assert!(lib.spawn_stop(500).ok, "{name} spawn_stop");
            let g = lib.memory(2 * BATCH + 10).expect(name);
            assert!(g.bytes > 0 && g.blocks > 0, "{name}: {g:?}");
        }
    }

    #[test]
    fn countdown_wakes_its_waiter_once_all_arrived() {
        let c = Countdown::new();
        c.expect(3);
        let waiter = {
            let c = c.clone();
            std::thread::spawn(move || park_block_on(c.wait()))
        };
        for _ in 0..3 {
            assert!(!c.is_zero());
            c.arrive();
        }
        waiter.join().unwrap();
        assert!(c.is_zero());
    }
}
