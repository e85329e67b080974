//! The timeline trace: a small program of tasks, actors (tells and asks) and RMI
//! between locations runs with tracing on; the file it leaves must be a
//! well-formed Chrome trace whose slices nest on every thread, whose flows all
//! end after they start, whose processes and threads are named, and which holds
//! every event of the run (more than a buffer's worth, so chunks were written
//! out while it ran).
//!
//! Plain `cargo test` runs it in-process and checks the file. `.ci/run` also
//! runs it under `mpirun -n 2` with `TUTTI_TRACE_TEST_DIR` set: each rank writes
//! its own file there, which the CI merges with `tutti trace merge` and checks
//! with `tutti trace check` (a rank's own file holds only one end of each flow
//! that crosses ranks, so it is checked after merging).

mod watchdog;

use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tutti::actor::{self, Actor, Context};
use tutti::diag::trace;
use tutti::msg::{Dispatch, Handler, Message, Object, RegistryError, Remote};
use tutti::rmi::{self, Rmi};
use tutti::world::{launched_by_mpi, TransportKind, World};

/// More tells than one thread buffer holds.
const TELLS: usize = trace::CHUNK * 2 + 123;
const ASKS: usize = 50;
const RMI_PER_DEST: u64 = 40;

struct Bump;
impl Message for Bump {
    type Reply = ();
}
struct Total;
impl Message for Total {
    type Reply = usize;
}
#[derive(Default)]
struct Tally(usize);
impl Actor for Tally {}
impl Handler<Bump> for Tally {
    async fn handle(&mut self, _: Bump, _: &mut Context<Self>) {
        self.0 += 1;
    }
}
impl Handler<Total> for Tally {
    async fn handle(&mut self, _: Total, _: &mut Context<Self>) -> usize {
        self.0
    }
}

#[derive(Clone, Serialize, Deserialize)]
struct Add(u64);
impl Message for Add {
    type Reply = ();
}
#[derive(Serialize, Deserialize)]
struct Get;
impl Message for Get {
    type Reply = u64;
}
impl Remote for Add {
    const NAME: &'static str = "tests.trace.Add";
}
impl Remote for Get {
    const NAME: &'static str = "tests.trace.Get";
}
#[derive(Default)]
struct Counter(u64);
impl Object for Counter {
    type Context = Rmi;
    fn remote(table: &mut Dispatch<Self>) -> Result<(), RegistryError> {
        table.register::<Add>()?.register::<Get>()?;
        Ok(())
    }
}
impl Handler<Add> for Counter {
    async fn handle(&mut self, m: Add, _: &mut Rmi) {
        self.0 += m.0;
    }
}
impl Handler<Get> for Counter {
    async fn handle(&mut self, _: Get, _: &mut Rmi) -> u64 {
        self.0
    }
}

/// The traced program: RMI between every pair of locations, then (on rank 0)
/// tasks and an actor told `TELLS` times and asked `ASKS` times.
fn program(world: &World) {
    rmi::run(world, |loc| async move {
        let h = loc.register(Counter::default()).await.unwrap();
        for _ in 0..RMI_PER_DEST {
            for dest in 0..loc.count() {
                loc.async_rmi(dest, &h, Add(1)).await;
            }
        }
        let right = (loc.id() + 1) % loc.count();
        let seen = loc.sync_rmi(right, &h, Get).await;
        assert!(seen <= RMI_PER_DEST * loc.count() as u64);
        loc.fence().await;
        let total = loc.reduce_rmi(&h, Get, |a, b| a + b).await;
        let n = loc.count() as u64;
        assert_eq!(total, RMI_PER_DEST * n * n);
    });
    if world.rank() != 0 {
        return;
    }
    world.runtime().block_on(async {
        let tasks: Vec<_> = (0..8u64)
            .map(|i| tutti::spawn(async move { i * i }))
            .collect();
        let mut sum = 0;
        for t in tasks {
            sum += t.await;
        }
        assert_eq!(sum, 140);
        let tally = actor::spawn(Tally::default());
        for _ in 0..TELLS {
            tally.tell(Bump).unwrap();
        }
        for _ in 0..ASKS {
            tally.ask(Total).await.unwrap();
        }
        assert_eq!(tally.ask(Total).await.unwrap(), TELLS);
    });
}

fn main() {
    if launched_by_mpi() {
        // One file per rank, merged and checked by the CI.
        let dir = PathBuf::from(
            std::env::var_os("TUTTI_TRACE_TEST_DIR").expect("TUTTI_TRACE_TEST_DIR under mpirun"),
        );
        let world = World::builder()
            .trace(dir.join("trace.json"))
            .build()
            .expect("world");
        program(&world);
        let rank = world.rank();
        let file = trace::path().expect("recording");
        // Joins the workers first: a turn's slice ends (and is recorded) just
        // after its answer is sent, so stopping while they run could miss it.
        drop(world);
        trace::stop().unwrap();
        assert!(
            file.ends_with(format!("trace.rank{rank}.json")),
            "{}",
            file.display()
        );
        println!("trace suite: rank {rank} wrote {}", file.display());
        return;
    }
    // Hold no full buffer back: each is formatted into the file by the
    // thread that filled it, while the program runs (the bounded-memory path).
    // No other thread exists yet to read the environment meanwhile.
    std::env::set_var("TUTTI_TRACE_HOLD_MB", "0");
    let path = std::env::temp_dir().join(format!("tutti-trace-test-{}.json", std::process::id()));
    let world = World::builder()
        .ignore_env()
        .transport(TransportKind::InProcess)
        .locations(3)
        .workers(2)
        .aggregation(4)
        .trace(&path)
        .build()
        .expect("world");
    assert!(trace::is_on());
    program(&world);
    drop(world);
    trace::stop().unwrap();
    assert!(!trace::is_on());

    let summary = trace::check(&path).unwrap_or_else(|e| panic!("{e}"));
    let text = std::fs::read_to_string(&path).unwrap();
    let v: Value = serde_json::from_str(&text).unwrap();
    std::fs::remove_file(&path).unwrap();
    let events = v["traceEvents"].as_array().unwrap();
    let count = |pred: &dyn Fn(&Value) -> bool| events.iter().filter(|e| pred(e)).count();
    let named = |e: &Value, n: &str| e["name"].as_str() == Some(n);

    // Every turn is there: none lost when chunks were written during the run
    // (a slice of turns that shared one clock reading counts its messages).
    let turns: u64 = events
        .iter()
        .filter(|e| named(e, "Tally: Bump"))
        .map(|e| e["args"]["messages"].as_u64().unwrap_or(1))
        .sum();
    assert_eq!(turns, TELLS as u64, "turns on Bump");
    assert_eq!(count(&|e| named(e, "Tally: Total")), ASKS + 1);
    // Each tell and ask is a flow from the sending slice to its turn.
    let actor_flows =
        count(&|e| e["ph"] == "f" && e["id"].as_str().is_some_and(|i| i.starts_with('p')));
    assert_eq!(actor_flows, TELLS + ASKS + 1);
    // RMI runs, named by method, with the number of requests they held.
    let rmi_requests: u64 = events
        .iter()
        .filter(|e| named(e, "rmi Add"))
        .map(|e| e["args"]["requests"].as_u64().unwrap())
        .sum();
    assert_eq!(rmi_requests, RMI_PER_DEST * 9, "RMI Add requests executed");
    assert!(count(&|e| named(e, "rmi Get")) >= 3);
    // World messages (RMI requests and answers between locations) are flows.
    let world_flows =
        count(&|e| e["ph"] == "s" && e["id"].as_str().is_some_and(|i| i.starts_with('w')));
    assert!(world_flows >= 6, "world flows: {world_flows}");
    assert!(summary.flows >= TELLS + ASKS + 1 + world_flows);
    assert!(summary.categories["task"] > 8, "{summary:?}");
    // Metadata: the process is rank 0, the world's workers are named.
    assert_eq!(summary.processes.len(), 1);
    let names: Vec<&str> = events
        .iter()
        .filter(|e| e["ph"] == "M")
        .filter_map(|e| e["args"]["name"].as_str())
        .collect();
    assert!(names.contains(&"rank 0"), "{names:?}");
    assert!(
        names.contains(&"worker 0") && names.contains(&"worker 1"),
        "{names:?}"
    );
    assert_eq!(v["otherData"]["rank"], 0);
    assert_eq!(v["otherData"]["lost_events"], 0);
    println!(
        "trace suite: {} events, {} slices, {} flows; all checks passed",
        summary.events, summary.slices, summary.flows
    );
    traces_in_turn();
}

/// Two traces one after the other on the same workers: the second holds its
/// own events (the workers' buffers from the first trace are replaced).
fn traces_in_turn() {
    let rt = tutti::Runtime::builder().workers(2).build().unwrap();
    let dir = std::env::temp_dir();
    for round in 0..2u64 {
        let path = dir.join(format!(
            "tutti-trace-turn-{round}-{}.json",
            std::process::id()
        ));
        trace::start(&path).unwrap();
        let n = rt.block_on(async move {
            let hs: Vec<_> = (0..100u64)
                .map(|i| tutti::spawn(async move { i + round }))
                .collect();
            let mut n = 0;
            for h in hs {
                n += h.await;
            }
            n
        });
        assert_eq!(n, 4950 + 100 * round);
        trace::stop().unwrap();
        let s = trace::check(&path).unwrap_or_else(|e| panic!("{e}"));
        std::fs::remove_file(&path).unwrap();
        // 100 task polls at least, on the workers (named), plus the block_on.
        assert!(s.categories["task"] > 100, "round {round}: {s:?}");
    }
    println!("trace suite: two traces in turn on one runtime: ok");
    block_on_on_a_worker();
}

/// `block_on` on a worker thread (inside `install`): while it waits, the
/// worker polls tasks, whose slices (each ended by the next reading on the
/// thread) must end before the next `block_on` poll starts.
fn block_on_on_a_worker() {
    let rt = tutti::Runtime::builder().workers(2).build().unwrap();
    let path =
        std::env::temp_dir().join(format!("tutti-trace-block-on-{}.json", std::process::id()));
    trace::start(&path).unwrap();
    let rounds = 300u64;
    let sum = rt.install(|| {
        tutti::block_on(async move {
            let mut sum = 0;
            for round in 0..rounds {
                let hs: Vec<_> = (0..4u64)
                    .map(|i| {
                        tutti::spawn(async move {
                            tutti::yield_now().await;
                            i + round
                        })
                    })
                    .collect();
                for h in hs {
                    sum += h.await;
                }
            }
            sum
        })
    });
    assert_eq!(sum, 6 * rounds + 4 * rounds * (rounds - 1) / 2);
    drop(rt);
    trace::stop().unwrap();
    let s = trace::check(&path).unwrap_or_else(|e| panic!("{e}"));
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    let v: Value = serde_json::from_str(&text).unwrap();
    // (tid, start, end) of the slices of category `cat`: the `block_on` polls
    // or the others.
    let slices = |cat: &str, block_on: bool| -> Vec<(u64, f64, f64)> {
        v["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["ph"] == "X" && e["cat"] == cat)
            .filter(|e| e["name"].as_str().unwrap().starts_with("block_on ") == block_on)
            .map(|e| {
                let ts = e["ts"].as_f64().unwrap();
                (
                    e["tid"].as_u64().unwrap(),
                    ts,
                    ts + e["dur"].as_f64().unwrap(),
                )
            })
            .collect()
    };
    let block_on_polls = slices("task", true);
    let task_polls = slices("task", false);
    assert!(
        block_on_polls.len() > 1,
        "block_on polls: {block_on_polls:?}"
    );
    // `block_on` cannot run inside a task: no task poll may hold one.
    for b in &block_on_polls {
        for t in &task_polls {
            assert!(
                !(t.0 == b.0 && t.1 <= b.1 && b.2 <= t.2),
                "a block_on poll {b:?} lies inside a task poll {t:?}"
            );
        }
    }
    let block_on_polls = block_on_polls.len();
    assert!(s.categories["task"] > 4 * rounds as usize, "{s:?}");
    println!("trace suite: block_on on a worker: {block_on_polls} block_on polls, ok");
    named_tasks();
}

/// A task given a name at spawn shows that name on its slices (as given, paths and
/// all); an unnamed one its future's type.
fn named_tasks() {
    let rt = tutti::Runtime::builder().workers(2).build().unwrap();
    let path = std::env::temp_dir().join(format!("tutti-trace-named-{}.json", std::process::id()));
    trace::start(&path).unwrap();
    let n = rt.block_on(async {
        let a = tutti::spawn_named("acceptor::main", async {
            tutti::yield_now().await;
            1u32
        });
        let b = tutti::spawn_named(format!("conn-{}", 7), async { 2u32 });
        let c = tutti::spawn(async { 3u32 });
        a.await + b.await + c.await
    });
    assert_eq!(n, 6);
    drop(rt);
    trace::stop().unwrap();
    trace::check(&path).unwrap_or_else(|e| panic!("{e}"));
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    let v: Value = serde_json::from_str(&text).unwrap();
    let names: Vec<&str> = v["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == "X" && e["cat"] == "task")
        .filter_map(|e| e["name"].as_str())
        .collect();
    let polls = |n: &str| names.iter().filter(|x| **x == n).count();
    assert_eq!(polls("acceptor::main"), 2, "{names:?}"); // it yielded once
    assert_eq!(polls("conn-7"), 1, "{names:?}");
    // The unnamed task's slice is named by its future's type.
    assert_eq!(
        names
            .iter()
            .filter(|x| !x.starts_with("block_on ") && **x != "acceptor::main" && **x != "conn-7")
            .count(),
        1,
        "{names:?}"
    );
    println!("trace suite: named tasks: ok");
    turns_share_readings();
}

/// Turns on messages that were queued before a turn read the clock share that
/// reading: one slice of several turns, with the flow of each ending in it.
/// With one worker, the teller's task queues every message before the actor
/// runs, so each poll of the actor (up to 64 turns) is one slice; a message
/// told later (after the actor's turns of the first batch) starts a slice of
/// its own.
fn turns_share_readings() {
    const N: u64 = 1000;
    let rt = tutti::Runtime::builder().workers(1).build().unwrap();
    let path = std::env::temp_dir().join(format!("tutti-trace-share-{}.json", std::process::id()));
    trace::start(&path).unwrap();
    let total = rt.block_on(rt.spawn(async {
        let tally = actor::spawn(Tally::default());
        for _ in 0..N {
            tally.tell(Bump).unwrap();
        }
        let first = tally.ask(Total).await.unwrap();
        tally.tell(Bump).unwrap();
        (first, tally.ask(Total).await.unwrap())
    }));
    assert_eq!(total, (N as usize, N as usize + 1));
    drop(rt);
    trace::stop().unwrap();
    let s = trace::check(&path).unwrap_or_else(|e| panic!("{e}"));
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    let v: Value = serde_json::from_str(&text).unwrap();
    let events = v["traceEvents"].as_array().unwrap();
    let slices: Vec<u64> = events
        .iter()
        .filter(|e| e["ph"] == "X" && e["name"] == "Tally: Bump")
        .map(|e| e["args"]["messages"].as_u64().unwrap_or(1))
        .collect();
    assert_eq!(slices.iter().sum::<u64>(), N + 1, "{slices:?}");
    // A poll handles at most 64 messages: at least N / 64 slices, and far
    // fewer than one a turn.
    assert!(slices.iter().all(|&k| k <= 64), "{slices:?}");
    assert!(slices.len() < (N / 8) as usize, "{} slices", slices.len());
    // Every tell's flow ends in a slice, after it starts (`check`).
    let ends = events
        .iter()
        .filter(|e| e["ph"] == "f" && e["id"].as_str().is_some_and(|i| i.starts_with('p')))
        .count();
    assert_eq!(ends as u64, N + 1 + 2, "flow ends of the tells and asks");
    assert!(s.flows as u64 >= N + 3, "{s:?}");
    println!(
        "trace suite: {} turns in {} slices sharing readings: ok",
        N + 1,
        slices.len()
    );
}
