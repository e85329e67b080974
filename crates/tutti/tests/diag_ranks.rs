//! Hangs across ranks (`tutti::diag`, the world's cross-rank stall check):
//!
//! * `fence`: every location fences except the first location of rank 1, which
//!   waits on a channel nobody sends on — reported, naming both ranks' locations
//!   and what each waits on; the fence fails and the job is taken down.
//! * `ask`: the same, the first location of rank 1 waiting for the reply of an
//!   actor stuck on a dataflow variable — the report names the actor.
//! * `lost`: rank 0's locations run a reduce to location 0 (then a barrier) where
//!   every other rank fences — reported (under MPI the fence's waves are summed by
//!   the engine and carry no kind: only the stall check sees it; with shared
//!   memory the waves are frames and the first one that meets the reduce names
//!   both kinds).
//! * `cycle`: location 0 and the first location of rank 1 each wait to receive
//!   on a channel only the other sends on (the other locations, if any, fence) —
//!   reported with the cycle; the receives fail and the job is taken down.
//! * `select`: the same, location 0 in a `select!` over two channels from the
//!   first location of rank 1.
//! * `slow`: location 0 waits on a channel while the first location of rank 1
//!   sleeps, waits on a timer and computes before it sends — never reported.
//! * `fences`: the first and the last location fence twice, the others once,
//!   then return — reported, naming the locations in the second fence
//!   (collective #1) and those that ended after one; the fences fail and the job
//!   is taken down. With 2 locations per rank every rank still waits; with one
//!   location per rank and more than 2 ranks, the ranks in the middle end their
//!   world (they sit in the transport's shutdown) and the waiting ranks report
//!   them from what they announced as they ended.
//! * `busy`: fences and collectives with uneven work (one rank computes, sleeps and
//!   sends while the others wait in the fence), messages in flight (a 96 MiB one
//!   while every rank waits) — never reported.
//!
//! Under `mpirun` (`.ci/run`) or `tutti launch` this binary runs the case
//! `TUTTI_XRANK_CASE` names; `.ci/run` checks the job's output. Under plain `cargo
//! test` it runs each case as a shared-memory system of 2 processes of itself (1
//! and 2 locations per rank) and checks their output.
// This file uses tutti as a program would, with `std`'s atomics and locks: the
// loom-shim rule of `clippy.toml` is for the library's own code.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

mod watchdog;

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use std::sync::Arc;

use tutti::actor::{self, Actor, Context};
use tutti::msg::{Handler, Message};
use tutti::world::{launched_by_mpi, LocationId, World};
use tutti::DataflowVar;

/// An actor whose one handler waits for a dataflow variable nobody binds.
struct Stuck(Arc<DataflowVar<u32>>);
impl Actor for Stuck {}
struct Wait;
impl Message for Wait {
    type Reply = u32;
}
impl Handler<Wait> for Stuck {
    async fn handle(&mut self, _: Wait, _: &mut Context<Self>) -> u32 {
        *self.0.read().await
    }
}

/// Every location fences but the first of rank 1, which asks an actor stuck on a
/// dataflow variable: its wait names the actor.
fn ask_case(world: &World) {
    let stuck = actor::spawn(Stuck(Arc::new(DataflowVar::new())));
    let waiter = world.locations_per_rank();
    world.run(move |loc| {
        let stuck = stuck.clone();
        async move {
            if loc.id().index() == waiter {
                let _ = stuck.ask(Wait).await;
            }
            while loc.recv_until_quiet().await.is_some() {}
        }
    });
}

fn fence_case(world: &World) {
    let (tx, rx) = tutti::csp::channel_named::<u32>("jobs");
    let waiter = world.locations_per_rank(); // the first location of rank 1
    world.run(move |loc| {
        let (tx, rx) = (tx.clone(), rx.clone());
        async move {
            if loc.id().index() == waiter {
                let _ = rx.recv().await; // nobody sends: tx is held, unused
                drop(tx);
            }
            while loc.recv_until_quiet().await.is_some() {}
        }
    });
}

/// Location 0 and the first location of rank 1 (`peer`) wait on channels from
/// each other: each receive (`select` on location 0: either of two) never ends.
fn cycle_case(world: &World, select: bool) {
    let peer = world.locations_per_rank() as u32;
    world.run(move |loc| async move {
        let me = loc.id().index() as u32;
        let other = match me {
            0 => peer,
            m if m == peer => 0,
            _ => {
                while loc.recv_until_quiet().await.is_some() {}
                return;
            }
        };
        let other = LocationId::new(other);
        let tx = loc.channel_to::<u32>(other, 1).unwrap();
        let tx2 = loc.channel_to::<u64>(other, 3).unwrap();
        let rx = loc.channel_from::<u32>(other, 1).unwrap();
        let rx2 = loc.channel_from::<u64>(other, 3).unwrap();
        if select && me == 0 {
            tutti::select! {
                future(rx.recv()) -> _v => {},
                future(rx2.recv()) -> _v => {},
            }
        } else {
            let _ = rx.recv().await;
        }
        drop((tx, tx2));
    });
}

/// Location 0 waits on a channel from the first location of rank 1, which
/// sleeps, waits on a timer and computes well beyond the stall check's age
/// before it sends; then the answer goes back.
fn slow_case(world: &World) {
    let peer = world.locations_per_rank() as u32;
    let got = world.run(move |loc| async move {
        let me = loc.id().index() as u32;
        let other = match me {
            0 => peer,
            m if m == peer => 0,
            _ => return 0,
        };
        let tx = loc.channel_to::<u32>(LocationId::new(other), 0).unwrap();
        let rx = loc.channel_from::<u32>(LocationId::new(other), 0).unwrap();
        if me == 0 {
            let v = rx.recv().await.unwrap();
            tx.send(v + 1).await.unwrap();
            v
        } else {
            std::thread::sleep(Duration::from_millis(150));
            tutti::sleep(Duration::from_millis(150)).await;
            let t = Instant::now();
            while t.elapsed() < Duration::from_millis(150) {
                std::hint::spin_loop();
            }
            tx.send(41).await.unwrap();
            rx.recv().await.unwrap()
        }
    });
    assert!(got.iter().all(|&v| v == 0 || v == 41 || v == 42), "{got:?}");
}

fn fences_case(world: &World) {
    let last = world.locations() - 1;
    world.run(move |loc| async move {
        let i = loc.id().index();
        let n = if i == 0 || i == last { 2 } else { 1 };
        for _ in 0..n {
            while loc.recv_until_quiet().await.is_some() {}
        }
    });
}

fn lost_case(world: &World) {
    world.run(|loc| async move {
        if loc.rank() == 0 {
            let sum = loc.reduce(LocationId::new(0), 1u64, |a, b| a + b).await;
            loc.barrier().await;
            sum.unwrap_or(0)
        } else {
            while loc.recv_until_quiet().await.is_some() {}
            0
        }
    });
}

fn busy_case(world: &World) {
    const BIG: usize = 96 << 20;
    let n = world.locations();
    let per_rank = world.locations_per_rank();
    let sums = world.run(move |loc| async move {
        let me = loc.id().index();
        let mut total = 0u64;
        let mut got = 0;
        for round in 0..40u64 {
            // A large message in flight while both ranks wait: the first
            // location of rank 1 in a plain receive, location 0 in the fence
            // (the marks of the stall check travel behind the message).
            if round == 7 {
                if me == 0 {
                    loc.send_bytes(LocationId::new(per_rank as u32), vec![7; BIG])
                        .unwrap();
                } else if me == per_rank {
                    loop {
                        let d = loc.recv().await;
                        match d.bytes().map_or(0, <[u8]>::len) {
                            BIG => break,
                            small => got += small,
                        }
                    }
                }
            }
            // Messages in flight into the fence.
            for k in 1..=3 {
                let to = LocationId::new(((me + k) % n) as u32);
                loc.send_bytes(to, vec![round as u8; 16]).unwrap();
            }
            // Uneven work: the last rank computes, sleeps or waits on a timer
            // well beyond the stall check's age while the others sit in the fence.
            if loc.rank() == loc.world().ranks() - 1 && round % 8 == 3 {
                match round % 3 {
                    0 => std::thread::sleep(Duration::from_millis(60)),
                    1 => tutti::sleep(Duration::from_millis(60)).await,
                    _ => {
                        let t = Instant::now();
                        while t.elapsed() < Duration::from_millis(60) {
                            std::hint::spin_loop();
                        }
                    }
                }
            }
            while let Some(d) = loc.recv_until_quiet().await {
                got += d.bytes().map_or(0, <[u8]>::len);
            }
            assert_eq!(got, 48);
            got = 0;
            total += loc.all_reduce(round, |a, b| a + b).await;
            if round % 5 == 0 {
                loc.barrier().await;
            }
        }
        total
    });
    let want: u64 = (0..40u64).map(|r| n as u64 * r).sum();
    assert!(sums.iter().all(|&s| s == want), "{sums:?}");
}

fn member() {
    let world = World::from_env().expect("world");
    let case = std::env::var("TUTTI_XRANK_CASE").unwrap_or_else(|_| "busy".into());
    match case.as_str() {
        "fence" => fence_case(&world),
        "lost" => lost_case(&world),
        "ask" => ask_case(&world),
        "busy" => busy_case(&world),
        "cycle" => cycle_case(&world, false),
        "select" => cycle_case(&world, true),
        "slow" => slow_case(&world),
        "fences" => fences_case(&world),
        other => panic!(
            "TUTTI_XRANK_CASE={other:?}: expected fence, ask, lost, busy, cycle, select, slow or fences"
        ),
    }
    println!("rank {} finished its part", world.rank());
}

/// Runs `case` as a shared-memory system of 2 processes of this binary with
/// `locations` each; returns (every rank succeeded, their output). A system still
/// running after a minute is a hang: killed, and the test fails.
fn system(case: &str, locations: usize) -> (bool, String) {
    system_of(2, case, locations)
}

/// [`system`] with `ranks` processes.
fn system_of(ranks: usize, case: &str, locations: usize) -> (bool, String) {
    let name = format!("xrank-{case}-{ranks}x{locations}-{}", std::process::id());
    let children: Vec<_> = (0..ranks)
        .map(|rank| {
            Command::new(std::env::current_exe().unwrap())
                .env("TUTTI_SYSTEM", &name)
                .env("TUTTI_RANKS", ranks.to_string())
                .env("TUTTI_RANK", rank.to_string())
                .env("TUTTI_TRANSPORT", "shm")
                .env("TUTTI_LOCATIONS", locations.to_string())
                .env("TUTTI_WORKERS", "2")
                .env("TUTTI_XRANK_CASE", case)
                .env("TUTTI_SHM_TIMEOUT_S", "20")
                .env("RUST_BACKTRACE", "0")
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut ok = true;
    let mut text = String::new();
    for mut c in children {
        let status = loop {
            if let Some(s) = c.try_wait().unwrap() {
                break Some(s);
            }
            if Instant::now() > deadline {
                let _ = c.kill();
                let _ = c.wait();
                break None;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let mut out = String::new();
        c.stdout.take().unwrap().read_to_string(&mut out).unwrap();
        c.stderr.take().unwrap().read_to_string(&mut out).unwrap();
        text.push_str(&out);
        match status {
            Some(s) => ok &= s.success(),
            None => panic!(
                "diag_ranks {case} ({ranks} ranks, {locations} locations): the system hangs\n{text}"
            ),
        }
    }
    // A system that ended (its ranks failed or succeeded) leaves nothing.
    let left = remove_segments(&name);
    assert!(left.is_empty(), "{case}: left {left:?} in /dev/shm\n{text}");
    (ok, text)
}

/// Removes the segments of system `name` from /dev/shm (the system's own and
/// every rank's mailbox, whatever its incarnation: `tutti-{name}+{rank}.{n}`);
/// returns those that were there.
fn remove_segments(name: &str) -> Vec<String> {
    let system = format!("tutti-{name}");
    let mailbox = format!("{system}+");
    let Ok(dir) = std::fs::read_dir("/dev/shm") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|seg| *seg == system || seg.starts_with(&mailbox))
        .filter(|seg| std::fs::remove_file(format!("/dev/shm/{seg}")).is_ok())
        .collect()
}

/// The `fence` case in report-only mode (`TUTTI_DEADLOCK=report`) as a system of 2
/// processes: both ranks print the report and go on waiting (killed here once both
/// have printed it; a minute without it fails).
fn report_only() {
    let name = format!("xrank-report-{}", std::process::id());
    let dir = std::env::temp_dir();
    let mut children: Vec<(std::process::Child, std::path::PathBuf)> = (0..2)
        .map(|rank| {
            let path = dir.join(format!("{name}-{rank}.log"));
            let file = std::fs::File::create(&path).unwrap();
            let child = Command::new(std::env::current_exe().unwrap())
                .env("TUTTI_SYSTEM", &name)
                .env("TUTTI_RANKS", "2")
                .env("TUTTI_RANK", rank.to_string())
                .env("TUTTI_TRANSPORT", "shm")
                .env("TUTTI_LOCATIONS", "1")
                .env("TUTTI_WORKERS", "2")
                .env("TUTTI_XRANK_CASE", "fence")
                .env("TUTTI_DEADLOCK", "report")
                .stdout(Stdio::null())
                .stderr(file)
                .spawn()
                .unwrap();
            (child, path)
        })
        .collect();
    let want = "[rank 1] `location 1` waits to receive from channel `jobs`";
    let deadline = Instant::now() + Duration::from_secs(60);
    let printed = |p: &std::path::Path| std::fs::read_to_string(p).unwrap_or_default();
    while !children.iter().all(|(_, p)| printed(p).contains(want)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    // Still waiting, as report-only mode leaves them.
    std::thread::sleep(Duration::from_millis(300));
    let texts: Vec<String> = children.iter().map(|(_, p)| printed(p)).collect();
    let running: Vec<bool> = children
        .iter_mut()
        .map(|(c, _)| c.try_wait().unwrap().is_none())
        .collect();
    for (c, p) in &mut children {
        let _ = c.kill();
        let _ = c.wait();
        let _ = std::fs::remove_file(p);
    }
    // Killed here: what they leave is this harness's to remove.
    remove_segments(&name);
    for (rank, t) in texts.iter().enumerate() {
        assert!(
            t.contains(want),
            "report-only: rank {rank} did not print the report\n{t}"
        );
        assert_eq!(
            t.matches("tutti: deadlock").count(),
            1,
            "reported once\n{t}"
        );
    }
    assert_eq!(
        running,
        [true, true],
        "report-only mode fails nothing\n{texts:?}"
    );
    println!("diag_ranks: report-only mode prints the report on every rank and fails nothing");
}

fn main() {
    if launched_by_mpi() || std::env::var_os("TUTTI_SYSTEM").is_some() {
        member();
        return;
    }
    for locations in [1, 2] {
        let waiter = locations; // the first location of rank 1
        let (ok, t) = system("fence", locations);
        assert!(!ok, "the stalled fence must fail\n{t}");
        for want in [
            "[rank 0] `location 0` waits in a fence (quiescence detection".to_string(),
            format!("[rank 1] `location {waiter}` waits to receive from channel `jobs`"),
            "cannot finish: it waits in a fence".to_string(),
        ] {
            assert!(t.contains(&want), "fence: missing {want:?} in\n{t}");
        }
        println!("diag_ranks: a fence stalled by a channel on the other rank is reported ({locations} location(s) per rank)");

        let (ok, t) = system("ask", locations);
        assert!(!ok, "the fence stalled by an ask must fail\n{t}");
        let want =
            format!("[rank 1] `location {waiter}` waits for the reply to `Wait` from `actor#");
        assert!(t.contains(&want), "ask: missing {want:?} in\n{t}");
        println!("diag_ranks: a fence stalled by an ask on the other rank is reported ({locations} location(s) per rank)");

        let (ok, t) = system("lost", locations);
        assert!(!ok, "the lost diagnosis must fail\n{t}");
        // Shared memory: a wave's frame meets the reduce (either way round), and
        // the mismatch names both kinds; MPI: the stall check's report.
        let named = t.contains("reduce (root 0)") && t.contains("quiescence wave (root 0)");
        let stall = "[rank 0] `location 0` waits in collective #0 (a reduce to location 0)";
        assert!(named || t.contains(stall), "lost: not reported in\n{t}");
        println!("diag_ranks: a reduce on one rank against a fence on the other is reported ({locations} location(s) per rank)");

        let (ok, t) = system("busy", locations);
        assert!(
            ok && !t.contains("deadlock"),
            "busy: reported or failed\n{t}"
        );
        println!("diag_ranks: busy fences and collectives are not reported ({locations} location(s) per rank)");

        for case in ["cycle", "select"] {
            let (ok, t) = system(case, locations);
            assert!(!ok, "{case}: the cycle of channel waits must fail\n{t}");
            let first = if case == "select" {
                "[rank 0] `location 0` waits on whichever comes first (a selection): to receive on \
                 the channel #0 from location {w} to location 0 (capacity 1, `RemoteRx::recv`); or \
                 to receive on the channel #1 from location {w} to location 0 (capacity 3, \
                 `RemoteRx::recv`)"
            } else {
                "[rank 0] `location 0` waits to receive on the channel #0 from location {w} to \
                 location 0 (capacity 1, `RemoteRx::recv`)"
            };
            for want in [
                first.replace("{w}", &waiter.to_string()),
                format!(
                    "[rank 1] `location {waiter}` waits to receive on the channel #0 from \
                     location 0 to location {waiter} (capacity 1, `RemoteRx::recv`)"
                ),
                format!("cycle: `location 0` → `location {waiter}` → `location 0`"),
            ] {
                assert!(t.contains(&want), "{case}: missing {want:?} in\n{t}");
            }
            // Every wait of the stall fails at once (the cycle's receives, and
            // with 2 locations per rank the others' fences): whichever location
            // panics first takes the system down, perhaps before the others print.
            let failed = [
                "cannot finish: it waits to receive on the channel #",
                "cannot finish: it waits on whichever comes first",
                "cannot finish: it waits in a fence",
            ];
            assert!(
                failed.iter().any(|f| t.contains(f)),
                "{case}: no location failed with the report in\n{t}"
            );
            println!("diag_ranks: a {case} of channel waits across ranks is reported ({locations} location(s) per rank)");
        }

        if locations == 2 {
            let (ok, t) = system("fences", locations);
            assert!(!ok, "fences: the unmatched fence must fail\n{t}");
            for want in [
                "[rank 0] `location 0` waits in a fence (quiescence detection, collective #1)",
                "[rank 1] `location 3` waits in a fence (quiescence detection, collective #1)",
                "[rank 0] `location 1` has ended (its body returned) after starting 1 collective(s)",
                "[rank 1] `location 2` has ended (its body returned) after starting 1 collective(s)",
                "cannot finish: it waits in a fence",
            ] {
                assert!(t.contains(want), "fences: missing {want:?} in\n{t}");
            }
            println!(
                "diag_ranks: a fence the other locations never enter (they ended) is reported"
            );
        }

        let (ok, t) = system("slow", locations);
        assert!(
            ok && !t.contains("deadlock"),
            "slow: reported or failed\n{t}"
        );
        println!("diag_ranks: a slow but live peer across ranks is not reported ({locations} location(s) per rank)");
    }
    ended_ranks();
    report_only();
}

/// The `fences` case with 3 ranks of one location: rank 1 ends its world (it
/// sits in the transport's shutdown) while ranks 0 and 2 wait in the second
/// fence; both report it, naming how many collectives rank 1's location started.
fn ended_ranks() {
    let (ok, t) = system_of(3, "fences", 1);
    assert!(!ok, "fences (3 ranks): the unmatched fence must fail\n{t}");
    for want in [
        "[rank 0] `location 0` waits in a fence (quiescence detection, collective #1)",
        "[rank 1] `location 1` has ended (its body returned) after starting 1 collective(s)",
        "[rank 2] `location 2` waits in a fence (quiescence detection, collective #1)",
        "cannot finish: it waits in a fence",
    ] {
        assert!(
            t.contains(want),
            "fences (3 ranks): missing {want:?} in\n{t}"
        );
    }
    // Both waiting ranks print it before either fails.
    assert!(
        t.matches("tutti: deadlock").count() >= 2,
        "ranks 0 and 2 print the report\n{t}"
    );
    println!("diag_ranks: a fence a rank that ended its world never entered is reported");
}
