//! `tutti bench backpressure`: a flood across ranks into a slow actor, with
//! and without backpressure, side by side in one run.
//!
//! Two ranks (`tutti launch -n 2` or `mpirun -n 2`), one location each, each
//! running an actor node. Rank 1 exports a consumer actor whose handler
//! busy-waits `--work-ns` per message (one per microsecond by default), so it
//! takes at most 10^6 messages a second. Rank 0 sends it `--messages` small
//! statements (a `u64`) as fast as it can, then asks it for its count (the
//! question is handled after every statement), which ends the run.
//!
//! * **bounded**: the consumer's mailbox holds `--capacity` messages (policy
//!   `Block`) and rank 0 sends with `RemoteAddr::send(..).await`: the credit
//!   protocol holds it back, so at most the capacity is queued and at most as
//!   many are on the way or held at rank 1's node, whatever `--messages` is.
//! * **unbounded**: the consumer's mailbox is unbounded and rank 0 uses
//!   `tell`: nothing holds it back, and what the consumer has not handled yet
//!   piles up in its mailbox.
//! * **graph**: the same flood between two port actors of an actor graph, the
//!   producer on rank 0 and the consumer on rank 1, joined by a channel of
//!   `--capacity` (the graph's own credits between locations); the run ends
//!   when the graph has ended.
//!
//! * **consumer** (measured in every round, not a flood across ranks): the
//!   same consumer, with the same bounded mailbox, fed on rank 1 by a task of
//!   its own location (`Addr::send(..).await`) — the rate at which the consumer
//!   handles messages when nothing but itself holds it back. It is the
//!   denominator of the `…_over_consumer_rate` ratios: the nominal rate
//!   (10^9 / `--work-ns`) overstates it, since each message also costs the
//!   mailbox, the handler call and the clock reads of the busy-wait.
//!
//! Reported per mode: the peak resident memory of each rank during the run
//! (MB, `VmHWM` reset at the start of each run), and the throughput (messages
//! handled per second, from the first send to the answer). With
//! backpressure, peak memory stays flat as `--messages` grows and throughput
//! is the consumer's rate; without, memory grows with `--messages`. Ratios:
//! `peak_rss_consumer_bounded_over_unbounded` (the memory saved),
//! `throughput_bounded_over_unbounded` (the price of being held back: ≈ 1),
//! and `throughput_bounded_over_consumer_rate` and
//! `throughput_graph_over_consumer_rate` (≈ 1 when the consumer is the
//! bottleneck). Verified: each mode's consumer saw every message, in order.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::{Args, ValueEnum};
use serde::{Deserialize, Serialize};
use tutti::actor::{self, Actor, Context, Overflow};
use tutti::graph::{ActorGraph, Partition, PortActor, Ports, Status};
use tutti::msg::{Dispatch, Handler, Message, Remote};
use tutti::remote::Node;
use tutti::world::World;

use crate::measure::{Progress, RunOpts};
use crate::report::{Report, Stats};

/// Measured runs when `--runs` is not given (shown in `--help`).
pub const RUNS: usize = 3;

/// Arguments of `tutti bench backpressure`.
#[derive(Args, Debug)]
pub struct BackpressureArgs {
    /// Statements rank 0 sends per run and mode.
    #[arg(long, default_value_t = 1_000_000, value_parser = clap::value_parser!(u64).range(1..=10_000_000_000))]
    messages: u64,
    /// Capacity of the bounded mailbox (also the sender's credit window).
    #[arg(long, default_value_t = 1024, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    capacity: u64,
    /// Busy-wait of the consumer per message, in nanoseconds.
    #[arg(long = "work-ns", default_value_t = 1000, value_parser = clap::value_parser!(u64).range(0..=1_000_000_000))]
    work_ns: u64,
    /// Worker threads per rank.
    #[arg(long, env = "TUTTI_WORKERS", default_value_t = 2, value_parser = crate::parse_workers)]
    workers: usize,
    /// The floods to run, comma-separated [default: all] (the unbounded one
    /// needs memory in proportion to `--messages`).
    #[arg(long, value_delimiter = ',', value_enum)]
    modes: Vec<Mode>,
    #[command(flatten)]
    run: RunOpts,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// One flood of the benchmark (see the module documentation).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Mode {
    /// Into a bounded mailbox, with `send(..).await` (credits).
    Bounded,
    /// Into an unbounded mailbox, with `tell`.
    Unbounded,
    /// Between two port actors of an actor graph.
    Graph,
}

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Mode::Bounded => "bounded",
            Mode::Unbounded => "unbounded",
            Mode::Graph => "graph",
        }
    }
}

/// Busy-waits `work` (a consumer's handling of one message).
fn busy(work: Duration) {
    let start = Instant::now();
    while start.elapsed() < work {
        std::hint::spin_loop();
    }
}

#[derive(Serialize, Deserialize)]
struct Tick(u64);
impl Message for Tick {
    type Reply = ();
}
impl Remote for Tick {
    const NAME: &'static str = "bench.backpressure.Tick";
}

/// How many ticks were handled, and were they in order?
#[derive(Serialize, Deserialize)]
struct Count;
impl Message for Count {
    type Reply = (u64, bool);
}
impl Remote for Count {
    const NAME: &'static str = "bench.backpressure.Count";
}

struct Consumer {
    work: Duration,
    next: u64,
    in_order: bool,
}
impl Actor for Consumer {}
impl Handler<Tick> for Consumer {
    async fn handle(&mut self, m: Tick, _: &mut Context<Self>) {
        busy(self.work);
        self.in_order &= m.0 == self.next;
        self.next += 1;
    }
}
impl Handler<Count> for Consumer {
    async fn handle(&mut self, _: Count, _: &mut Context<Self>) -> (u64, bool) {
        (self.next, self.in_order)
    }
}

/// One run of one mode, as rank 0 sees it: seconds, whether the consumer saw
/// every message in order, and the peak memory of each rank (bytes).
struct Outcome {
    secs: f64,
    ok: bool,
    peaks: Vec<f64>,
}

/// One run: `n` ticks from location 0 to the consumer on location 1,
/// `capacity` bounding its mailbox or not.
fn one_run(w: &World, n: u64, capacity: Option<usize>, work: Duration) -> Outcome {
    let out = w.run(move |loc| async move {
        crate::mem::release_free_memory();
        crate::mem::reset_peak();
        let node = Node::join(loc);
        let me = node.id().index();
        let mut consumer = None;
        if me == 1 {
            let c = Consumer {
                work,
                next: 0,
                in_order: true,
            };
            let c = match capacity {
                Some(cap) => actor::Builder::new().bounded(cap, Overflow::Block).spawn(c),
                None => actor::spawn(c),
            };
            let mut table = Dispatch::new();
            table
                .register::<Tick>()
                .and_then(|t| t.register::<Count>())
                .expect("the consumer's table");
            let remote = node.export(&c, table);
            node.register("consumer", &remote)
                .await
                .expect("register the consumer");
            consumer = Some(c);
        }
        node.barrier().await;
        let sink = node
            .lookup::<Consumer>("consumer")
            .await
            .expect("look up the consumer");
        node.barrier().await;
        let (mut secs, mut ok) = (0.0, true);
        if me == 0 {
            let start = Instant::now();
            for i in 0..n {
                let sent = match capacity {
                    Some(_) => sink.send(Tick(i)).await,
                    None => sink.tell(Tick(i)),
                };
                if sent.is_err() {
                    ok = false;
                    break;
                }
            }
            ok &= sink.ask(Count).await == Ok((n, true));
            secs = start.elapsed().as_secs_f64();
        }
        node.barrier().await;
        let peaks = peaks(node.location()).await;
        node.leave().await;
        drop(consumer);
        (secs, ok, peaks)
    });
    let (secs, ok, peaks) = out.into_iter().next().unwrap_or_default();
    Outcome { secs, ok, peaks }
}

/// The consumer's own rate (messages per second): `n` ticks into a consumer
/// with a mailbox of `capacity`, sent by the task of its own location on rank 1
/// (rank 0 waits). The same handler, mailbox and credit wait as the bounded
/// flood, without the other rank.
fn consumer_rate(w: &World, n: u64, capacity: usize, work: Duration) -> f64 {
    let out = w.run(move |loc| async move {
        let mut rate = 0.0;
        if loc.id().index() == 1 {
            let c = actor::Builder::new()
                .bounded(capacity, Overflow::Block)
                .spawn(Consumer {
                    work,
                    next: 0,
                    in_order: true,
                });
            let start = Instant::now();
            let mut ok = true;
            for i in 0..n {
                ok &= c.send(Tick(i)).await.is_ok();
            }
            ok &= c.ask(Count).await == Ok((n, true));
            let secs = start.elapsed().as_secs_f64();
            rate = if ok { n as f64 / secs } else { 0.0 };
        }
        loc.all_reduce(rate, |a, b| a + b).await
    });
    out.into_iter().next().unwrap_or(0.0)
}

/// Each location's peak memory since the run began, gathered on every location.
async fn peaks(loc: &tutti::world::Location) -> Vec<f64> {
    let mut peaks = vec![0.0; loc.world().locations()];
    peaks[loc.id().index()] = crate::mem::peak_rss().unwrap_or(0) as f64;
    loc.all_reduce(peaks, |a, b| a.iter().zip(&b).map(|(x, y)| x + y).collect())
        .await
}

/// One run of the graph flood: `n` tokens from a port actor on location 0 to
/// one on location 1 through a channel of `capacity`.
fn graph_run(w: &World, n: u64, capacity: usize, work: Duration) -> Outcome {
    let out = w.run(move |loc| async move {
        crate::mem::release_free_memory();
        crate::mem::reset_peak();
        let loc = Arc::new(loc);
        let mut b = ActorGraph::builder();
        let built = (|| {
            let producer = b.actor("producer")?;
            let out = b.output::<u64>(producer, "out")?;
            let consumer = b.actor("consumer")?;
            let inp = b.input::<u64>(consumer, "in")?;
            b.connect(out, inp, capacity)?;
            Ok::<_, tutti::graph::BuildError>((producer, out, inp))
        })();
        let (producer, out, inp) = built.expect("the flood's graph");
        let g = b.build();
        let placement = g
            .partition(2, &Partition::Explicit(vec![0, 1]))
            .expect("the flood's placement");
        let in_order = Arc::new(AtomicBool::new(false));
        let seen = Arc::clone(&in_order);
        loc.barrier().await;
        let start = Instant::now();
        let ran = g
            .run(&loc, &placement, move |id| -> Box<dyn PortActor> {
                if id == producer {
                    super::graph::counting_producer(out, n)
                } else {
                    let (mut next, mut ok) = (0, true);
                    let seen = Arc::clone(&seen);
                    Box::new(move |p: &mut Ports| {
                        while let Some(v) = p.recv(inp) {
                            busy(work);
                            ok &= v == next;
                            next += 1;
                        }
                        if next == n {
                            seen.store(ok, Ordering::Relaxed);
                            return Status::Done;
                        }
                        Status::Continue
                    })
                }
            })
            .await;
        let secs = start.elapsed().as_secs_f64();
        let ok = ran.is_ok()
            && loc
                .all_reduce(in_order.load(Ordering::Relaxed), |a, b| a || b)
                .await;
        let peaks = peaks(&loc).await;
        (secs, ok, peaks)
    });
    let (secs, ok, peaks) = out.into_iter().next().unwrap_or_default();
    Outcome { secs, ok, peaks }
}

/// Runs the benchmark (rank 0 reports; the other rank exits when done).
pub fn run(a: &BackpressureArgs) -> Result<Report, String> {
    tutti::msg::register::<Tick>().map_err(|e| e.to_string())?;
    tutti::msg::register::<Count>().map_err(|e| e.to_string())?;
    let w = World::builder()
        .locations(1)
        .workers(a.workers)
        .build()
        .map_err(|e| e.to_string())?;
    if w.ranks() != 2 {
        return Err(format!(
            "bench backpressure runs on two ranks (this world has {}): run it under \
             `tutti launch -n 2` or `mpirun -n 2`",
            w.ranks()
        ));
    }
    let plan = a.run.plan();
    let work = Duration::from_nanos(a.work_ns);
    let capacity = usize::try_from(a.capacity).map_err(|e| e.to_string())?;
    let mut modes = a.modes.clone();
    if modes.is_empty() {
        modes = vec![Mode::Bounded, Mode::Unbounded, Mode::Graph];
    }
    modes.dedup();
    let me = w.rank();
    let progress = Progress::new(
        if me == 0 {
            plan.total() * modes.len()
        } else {
            0
        },
        a.json,
    );
    let mut report = Report::new("backpressure");
    report
        .param("messages", a.messages)
        .param("capacity", a.capacity)
        .param("work_ns", a.work_ns)
        .param("ranks", w.ranks())
        .param("transport", w.config().transport().to_string())
        .param("workers", w.config().workers())
        .param("runs", plan.runs);
    let mut all_ok = true;
    // Per mode: seconds, and each rank's peaks, of the recorded runs.
    let mut got: Vec<(Vec<f64>, Vec<Vec<f64>>)> =
        vec![(Vec::new(), vec![Vec::new(); 2]); modes.len()];
    // The consumer's measured rate, per recorded round (messages per second):
    // as many messages as a flood, up to 10^6 (enough for a steady rate).
    let mut consumer_rates: Vec<f64> = Vec::new();
    let consumer_n = a.messages.min(1_000_000);
    for i in 0..plan.total() {
        progress.stage("consumer");
        let rate = consumer_rate(&w, consumer_n, capacity, work);
        all_ok &= rate > 0.0 || me != 0;
        if i >= plan.warmup {
            consumer_rates.push(rate);
        }
        // Modes alternate, so that a change of the machine's load hits both.
        for (m, mode) in modes.iter().enumerate() {
            progress.stage(mode.name());
            let o = match mode {
                Mode::Bounded => one_run(&w, a.messages, Some(capacity), work),
                Mode::Unbounded => one_run(&w, a.messages, None, work),
                Mode::Graph => graph_run(&w, a.messages, capacity, work),
            };
            all_ok &= o.ok || me != 0;
            if i >= plan.warmup {
                got[m].0.push(o.secs);
                for (r, p) in o.peaks.iter().enumerate().take(2) {
                    got[m].1[r].push(*p / 1e6);
                }
            }
            progress.tick();
        }
    }
    progress.finish();
    if me != 0 {
        drop(w);
        std::process::exit(0);
    }
    report.verify(all_ok);
    let mut medians = Vec::new();
    for (mode, (secs, peaks)) in modes.iter().zip(&got) {
        let name = mode.name();
        let rates: Vec<f64> = secs.iter().map(|s| a.messages as f64 / s).collect();
        let (Some(rate), Some(producer), Some(consumer)) = (
            Stats::of(&rates),
            Stats::of(&peaks[0]),
            Stats::of(&peaks[1]),
        ) else {
            continue;
        };
        medians.push((*mode, rate.median, consumer.median));
        report.result(name, "throughput", rate, "msg/s");
        report.result(name, "peak_rss_producer", producer, "MB");
        report.result(name, "peak_rss_consumer", consumer, "MB");
    }
    let of = |m: Mode| medians.iter().find(|x| x.0 == m).map(|x| (x.1, x.2));
    if let Some(consumer) = Stats::of(&consumer_rates) {
        // The denominator is the consumer's rate measured in this run, not the
        // nominal 10^9 / `work_ns`.
        let measured = consumer.median;
        report.result("consumer", "throughput", consumer, "msg/s");
        if a.work_ns > 0 {
            report.ratio(
                "consumer_rate_over_nominal",
                measured * a.work_ns as f64 / 1e9,
            );
        }
        for m in [Mode::Bounded, Mode::Graph] {
            if let Some((rate, _)) = of(m) {
                report.ratio(
                    &format!("throughput_{}_over_consumer_rate", m.name()),
                    rate / measured,
                );
            }
        }
    }
    if let (Some((b_rate, b_rss)), Some((u_rate, u_rss))) = (of(Mode::Bounded), of(Mode::Unbounded))
    {
        report.ratio("peak_rss_consumer_bounded_over_unbounded", b_rss / u_rss);
        report.ratio("throughput_bounded_over_unbounded", b_rate / u_rate);
    }
    Ok(report)
}
