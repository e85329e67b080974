//! `tutti actor-world`: distributed actors — a registered service actor on
//! location 0 asked by actors on every location (the actor-world example), then the
//! cost of a remote `ask` round trip and the rate of remote `tell`s.
//!
//! Every location runs an actor node (`tutti::remote::Node`). Under
//! `mpirun -n P` (built with `--features mpi`) there is one location per rank,
//! so every question but location 0's own crosses a process boundary; without
//! mpirun the same program runs `--locations` locations as threads of one
//! process, and their messages take the same encoded path.
//!
//! * **Service.** Location 0 spawns a `Service` actor, exports it and registers
//!   it world-wide as `service`. Every location looks it up and spawns
//!   `--clients` client actors; each client, in its handler, asks the service
//!   `--asks` times to square a number (checking every answer) and tells it to
//!   add the number to its total. Each location then asks the service once
//!   more (its statements are handled before that question), and after a
//!   barrier location 0 checks that the service's count and sum equal the
//!   world's, summed by an all-reduce.
//! * **Measurements** (with two locations or more): location 0 asks an actor
//!   on the last location (another rank under MPI) `--round-trips` times in turn —
//!   the round-trip time — and tells it `--messages` statements followed by
//!   one question — the tell rate; beside the same actor asked and told
//!   through a local `Addr` on location 0. Medians of `--runs` runs.

use std::time::Instant;

use clap::Args;
use serde::{Deserialize, Serialize};
use tutti::actor::{self, Actor, Addr, Context};
use tutti::msg::{Dispatch, Handler, Message, Remote};
use tutti::remote::{Node, RemoteAddr};
use tutti::world::World;

use crate::measure::RunOpts;
use crate::report::{Report, Stats};

/// Measured runs when `--runs` is not given (shown in `--help`).
pub const RUNS: usize = 3;

/// Arguments of `tutti actor-world`.
#[derive(Args, Debug)]
pub struct ActorWorldArgs {
    /// Client actors per location.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u64).range(1..=10_000))]
    clients: u64,
    /// Questions each client asks the service.
    #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u64).range(1..=10_000_000))]
    asks: u64,
    /// Round trips of the latency measurement.
    #[arg(long = "round-trips", default_value_t = 5_000, value_parser = clap::value_parser!(u64).range(1..=100_000_000))]
    iters: u64,
    /// Statements of the tell-rate measurement.
    #[arg(long, default_value_t = 100_000, value_parser = clap::value_parser!(u64).range(1..=1_000_000_000))]
    messages: u64,
    /// Locations per rank [default: 1 under mpirun, 4 otherwise].
    #[arg(long, env = "TUTTI_LOCATIONS", value_parser = clap::value_parser!(u64).range(1..=1024))]
    locations: Option<u64>,
    /// Worker threads per rank [default: one per core].
    #[arg(long, env = "TUTTI_WORKERS", value_parser = crate::parse_workers)]
    workers: Option<usize>,
    #[command(flatten)]
    run: RunOpts,
    /// Print the world's configuration on stderr.
    #[arg(long)]
    verbose: bool,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    pub json: bool,
}

// ----- messages -----

/// Squares a number.
#[derive(Serialize, Deserialize)]
struct Square(u64);
impl Message for Square {
    type Reply = u64;
}
impl Remote for Square {
    const NAME: &'static str = "actor-world.Square";
}

/// Adds a number to the service's total.
#[derive(Serialize, Deserialize)]
struct Add(u64);
impl Message for Add {
    type Reply = ();
}
impl Remote for Add {
    const NAME: &'static str = "actor-world.Add";
}

/// The service's (count, sum) of added numbers.
#[derive(Serialize, Deserialize)]
struct Total;
impl Message for Total {
    type Reply = (u64, u64);
}
impl Remote for Total {
    const NAME: &'static str = "actor-world.Total";
}

/// To a client: ask the service `asks` times, starting from `seed`; the reply
/// is (answers that checked out, sum of the numbers added), or the first error.
struct Go {
    seed: u64,
    asks: u64,
}
impl Message for Go {
    type Reply = Result<(u64, u64), String>;
}

// ----- actors -----

#[derive(Default)]
struct Service {
    count: u64,
    sum: u64,
}
impl Actor for Service {}
impl Handler<Square> for Service {
    async fn handle(&mut self, m: Square, _: &mut Context<Self>) -> u64 {
        m.0.wrapping_mul(m.0)
    }
}
impl Handler<Add> for Service {
    async fn handle(&mut self, m: Add, _: &mut Context<Self>) {
        self.count += 1;
        self.sum = self.sum.wrapping_add(m.0);
    }
}
impl Handler<Total> for Service {
    async fn handle(&mut self, _: Total, _: &mut Context<Self>) -> (u64, u64) {
        (self.count, self.sum)
    }
}

fn service_table() -> Dispatch<Service> {
    let mut t = Dispatch::new();
    for r in [
        t.register::<Square>().map(|_| ()),
        t.register::<Add>().map(|_| ()),
        t.register::<Total>().map(|_| ()),
    ] {
        r.unwrap_or_else(|e| unreachable!("actor-world: distinct message names: {e}"));
    }
    t
}

struct Client {
    service: RemoteAddr<Service>,
}
impl Actor for Client {}
impl Handler<Go> for Client {
    async fn handle(&mut self, m: Go, _: &mut Context<Self>) -> Result<(u64, u64), String> {
        let (mut ok, mut sum) = (0, 0u64);
        for k in 0..m.asks {
            let x = m.seed.wrapping_mul(1_000_003).wrapping_add(k) & 0xffff_ffff;
            let got = self
                .service
                .ask(Square(x))
                .await
                .map_err(|e| e.to_string())?;
            ok += u64::from(got == x * x);
            self.service.tell(Add(x)).map_err(|e| e.to_string())?;
            sum = sum.wrapping_add(x);
        }
        Ok((ok, sum))
    }
}

/// What location 0 found.
#[derive(Default)]
struct Outcome {
    ok: bool,
    answers: u64,
    why: Option<String>,
    remote_ask: Vec<f64>,
    local_ask: Vec<f64>,
    remote_tell: Vec<f64>,
    local_tell: Vec<f64>,
}

/// The service and its clients on every location; location 0's outcome.
async fn service_example(node: &Node, a: &Plan) -> (bool, u64, Option<String>) {
    let me = node.id().index();
    if me == 0 {
        let service = node.export(&actor::spawn(Service::default()), service_table());
        if let Err(e) = node.register("service", &service).await {
            node.world().abort(&format!("actor-world: {e}"));
        }
    }
    node.barrier().await;
    let service = match node.lookup::<Service>("service").await {
        Ok(s) => s,
        Err(e) => node.world().abort(&format!("actor-world: {e}")),
    };
    let clients: Vec<Addr<Client>> = (0..a.clients)
        .map(|_| {
            actor::spawn(Client {
                service: service.clone(),
            })
        })
        .collect();
    let asks: Vec<_> = clients
        .iter()
        .enumerate()
        .map(|(i, c)| {
            c.ask(Go {
                seed: me as u64 * a.clients + i as u64,
                asks: a.asks,
            })
        })
        .collect();
    let (mut answers, mut sum, mut why) = (0u64, 0u64, None);
    for q in asks {
        match q.await {
            Ok(Ok((ok, s))) => {
                answers += ok;
                sum = sum.wrapping_add(s);
            }
            Ok(Err(e)) => why = Some(e),
            Err(e) => why = Some(format!("a client stopped: {e:?}")),
        }
    }
    // This location's statements are handled before this question's answer.
    if let Err(e) = service.ask(Total).await {
        why = Some(format!("asking the service's total: {e}"));
    }
    let world_answers = node.location().all_reduce(answers, |x, y| x + y).await;
    let world_sum = node.location().all_reduce(sum, u64::wrapping_add).await;
    let mut ok = why.is_none();
    if me == 0 {
        let want_count = a.clients * a.asks * node.world().locations() as u64;
        match service.ask(Total).await {
            Ok((count, s)) => {
                if (count, s) != (want_count, world_sum) || world_answers != want_count {
                    ok = false;
                    why = Some(format!(
                        "the service counted {count} additions summing to {s}; the world sent \
                         {want_count} summing to {world_sum} and {world_answers} answers checked out"
                    ));
                }
            }
            Err(e) => {
                ok = false;
                why = Some(format!("asking the service's total: {e}"));
            }
        }
    }
    let ok = node.location().all_reduce(ok, |x, y| x && y).await;
    (ok, world_answers, why)
}

/// The sizes of one run.
#[derive(Clone, Copy)]
struct Plan {
    clients: u64,
    asks: u64,
    iters: u64,
    messages: u64,
    warmup: usize,
    runs: usize,
}

/// Rounds of: remote asks, local asks, remote tells, local tells (location 0
/// measures; the last location holds the remote actor).
async fn measure(node: &Node, a: &Plan, out: &mut Outcome) {
    let n = node.world().locations();
    let me = node.id().index();
    if me == n - 1 {
        let target = node.export(&actor::spawn(Service::default()), service_table());
        if let Err(e) = node.register("bench/target", &target).await {
            node.world().abort(&format!("actor-world: {e}"));
        }
    }
    node.barrier().await;
    if me == 0 {
        let remote = match node.lookup::<Service>("bench/target").await {
            Ok(r) => r,
            Err(e) => node.world().abort(&format!("actor-world: {e}")),
        };
        let local = actor::spawn(Service::default());
        let (mut told_remote, mut told_local) = (0u64, 0u64);
        for round in 0..a.warmup + a.runs {
            let keep = round >= a.warmup;
            // Round trips, one question at a time.
            let t = Instant::now();
            for i in 0..a.iters {
                out.ok &= remote.ask(Square(i)).await == Ok(i * i);
            }
            let remote_rt = t.elapsed().as_secs_f64() / a.iters as f64;
            let t = Instant::now();
            for i in 0..a.iters {
                out.ok &= local.ask(Square(i)).await == Ok(i * i);
            }
            let local_rt = t.elapsed().as_secs_f64() / a.iters as f64;
            // Statements, then one question that is handled after them all.
            let t = Instant::now();
            for i in 0..a.messages {
                out.ok &= remote.tell(Add(i)).is_ok();
            }
            told_remote += a.messages;
            out.ok &= remote.ask(Total).await.map(|t| t.0) == Ok(told_remote);
            let remote_rate = a.messages as f64 / t.elapsed().as_secs_f64();
            let t = Instant::now();
            for i in 0..a.messages {
                out.ok &= local.tell(Add(i)).is_ok();
            }
            told_local += a.messages;
            out.ok &= local.ask(Total).await.map(|t| t.0) == Ok(told_local);
            let local_rate = a.messages as f64 / t.elapsed().as_secs_f64();
            if keep {
                out.remote_ask.push(remote_rt * 1e6);
                out.local_ask.push(local_rt * 1e6);
                out.remote_tell.push(remote_rate);
                out.local_tell.push(local_rate);
            }
        }
        if !out.ok && out.why.is_none() {
            out.why = Some("a measured answer was wrong".into());
        }
        local.stop();
    }
    node.barrier().await;
}

/// Runs `tutti actor-world`.
pub fn run(a: &ActorWorldArgs) -> Result<Report, String> {
    let launched = tutti::world::launched_by_mpi();
    let locations = a.locations.unwrap_or(if launched { 1 } else { 4 }) as usize;
    // The ranks compare these when the world starts.
    for r in [
        tutti::msg::register::<Square>(),
        tutti::msg::register::<Add>(),
        tutti::msg::register::<Total>(),
    ] {
        r.map_err(|e| e.to_string())?;
    }
    let mut builder = World::builder().locations(locations);
    if let Some(w) = a.workers {
        builder = builder.workers(w);
    }
    let world = builder.build().map_err(|e| e.to_string())?;
    if a.verbose && world.rank() == 0 {
        eprintln!("{}", world.config());
    }
    let plan = a.run.plan();
    let p = Plan {
        clients: a.clients,
        asks: a.asks,
        iters: a.iters,
        messages: a.messages,
        warmup: plan.warmup,
        runs: plan.runs,
    };
    let outcomes = world
        .try_run(move |loc| async move {
            let node = Node::join(loc);
            let (ok, answers, why) = service_example(&node, &p).await;
            let mut out = Outcome {
                ok,
                answers,
                why,
                ..Outcome::default()
            };
            if node.world().locations() > 1 {
                measure(&node, &p, &mut out).await;
                out.ok = node.location().all_reduce(out.ok, |x, y| x && y).await;
            }
            node.leave().await;
            out
        })
        .map_err(|e| e.to_string())?;
    let rank = world.rank();
    let transport = world.config().transport();
    let (ranks, total) = (world.ranks(), world.locations());
    let workers = world.config().workers();
    let mut outcomes = outcomes.into_iter();
    let first = outcomes.next().unwrap_or_default();
    let ok = first.ok && outcomes.all(|o| o.ok);
    if rank != 0 {
        // Only rank 0 reports; the others end quietly.
        drop(world);
        std::process::exit(if ok { 0 } else { 1 });
    }
    if let Some(why) = &first.why {
        eprintln!("tutti: actor-world: {why}");
    }
    let mut report = Report::new("actor-world");
    report
        .param("transport", transport.to_string())
        .param("ranks", ranks)
        .param("locations", total)
        .param("workers", workers)
        .param("clients_per_location", a.clients)
        .param("asks_per_client", a.asks)
        .param("round_trips", a.iters)
        .param("messages", a.messages)
        .param("runs", plan.runs);
    report.result(
        "tutti",
        "service answers checked",
        Stats::single(first.answers as f64),
        "answers",
    );
    let where_ = if transport.uses_mpi() {
        "rank 0 to rank P-1"
    } else {
        "location 0 to the last, one process"
    };
    if let (Some(r), Some(l)) = (Stats::of(&first.remote_ask), Stats::of(&first.local_ask)) {
        report.result(
            "tutti remote",
            &format!("ask round trip ({where_})"),
            r.clone(),
            "us",
        );
        report.result("tutti local", "ask round trip (Addr)", l.clone(), "us");
        report.ratio("ask_time_remote_over_local", r.median / l.median);
    }
    if let (Some(r), Some(l)) = (Stats::of(&first.remote_tell), Stats::of(&first.local_tell)) {
        report.result(
            "tutti remote",
            &format!("tell rate ({where_})"),
            r.clone(),
            "msg/s",
        );
        report.result("tutti local", "tell rate (Addr)", l.clone(), "msg/s");
        report.ratio("tell_throughput_remote_over_local", r.median / l.median);
    }
    report.verify(ok);
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: ActorWorldArgs,
    }

    #[test]
    fn a_small_run_verifies_in_one_process() {
        let cli = Cli::parse_from([
            "t",
            "--clients",
            "2",
            "--asks",
            "20",
            "--round-trips",
            "50",
            "--messages",
            "500",
            "--locations",
            "3",
            "--workers",
            "2",
            "--runs",
            "1",
            "--warmup",
            "0",
        ]);
        let report = run(&cli.args).unwrap();
        assert_eq!(report.verified(), Some(true), "{}", report.to_table());
    }
}
