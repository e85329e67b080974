//! Hang diagnosis across paradigms (`tutti::diag`): deadlocks among actors (a cycle of
//! asks, a cycle of full `Block` mailboxes) and a fence that cannot end because a
//! location waits on a channel are reported naming the participants, and the waiting
//! operations fail; busy programs are not reported; the dump lists actors, locations
//! and CSP processes with their waits; the dump signal prints it from a child process.
//!
//! The deadlock mode is process-wide: every test here runs in the default `Fail`
//! mode except `report_only_mode_leaves_the_waits`, which runs in a child process.

mod watchdog;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::Arc;

use tutti::actor::{self, Actor, Addr, AskError, Context, Overflow, StopReason};
use tutti::msg::{Handler, Message};
use tutti::world::{TransportKind, World};
use tutti::DataflowVar;

// ---- a cycle of asks ----

struct Peer {
    peer: Option<Addr<Peer>>,
}
impl Actor for Peer {}

struct SetPeer(Addr<Peer>);
impl Message for SetPeer {
    type Reply = ();
}
/// Asks the peer `Inner` and returns what that ask gave.
struct Outer;
impl Message for Outer {
    type Reply = Result<u32, AskError>;
}
struct Inner;
impl Message for Inner {
    type Reply = u32;
}

impl Handler<SetPeer> for Peer {
    async fn handle(&mut self, m: SetPeer, _: &mut Context<Self>) {
        self.peer = Some(m.0);
    }
}
impl Handler<Outer> for Peer {
    async fn handle(&mut self, _: Outer, _: &mut Context<Self>) -> Result<u32, AskError> {
        self.peer.as_ref().expect("peer set").ask(Inner).await
    }
}
impl Handler<Inner> for Peer {
    async fn handle(&mut self, _: Inner, _: &mut Context<Self>) -> u32 {
        7
    }
}

fn ring(n: usize) -> Vec<Addr<Peer>> {
    let actors: Vec<Addr<Peer>> = (0..n).map(|_| actor::spawn(Peer { peer: None })).collect();
    for (i, a) in actors.iter().enumerate() {
        a.ask_blocking(SetPeer(actors[(i + 1) % n].clone()))
            .unwrap();
    }
    actors
}

/// Three actors each ask the next inside a handler: a cycle. Each inner ask fails
/// with the report (or gets its reply once the ask it waited for failed and that
/// handler returned); the report names all three and the cycle.
#[test]
fn an_ask_cycle_is_reported_and_fails() {
    let actors = ring(3);
    let outers: Vec<_> = actors.iter().map(|a| a.ask(Outer)).collect();
    let results: Vec<Result<u32, AskError>> = tutti::block_on(async {
        let mut out = Vec::new();
        for o in outers {
            out.push(o.await.expect("the outer ask is answered"));
        }
        out
    });
    let reports: Vec<Arc<tutti::diag::Deadlock>> = results
        .iter()
        .filter_map(|r| match r {
            Err(AskError::Deadlock(d)) => Some(Arc::clone(d)),
            Ok(7) => None,
            other => panic!("unexpected {other:?}"),
        })
        .collect();
    assert!(!reports.is_empty(), "no ask failed: {results:?}");
    let d = &reports[0];
    assert_eq!(d.waiters().len(), 3, "{d}");
    for a in &actors {
        let name = format!("{} (Peer)", a.id());
        assert!(
            d.waiters()
                .iter()
                .any(|w| w.name() == name && w.waits().contains("waits for the reply to `Inner`")),
            "{name} missing in\n{d}"
        );
    }
    assert_eq!(d.cycle().len(), 4, "{d}");
    assert_eq!(d.cycle()[0], d.cycle()[3]);
    // The actors live on and answer.
    assert_eq!(actors[0].ask_blocking(Inner), Ok(7));
}

/// A chain of asks that is not a cycle, many times over, under load: never reported.
#[test]
fn a_busy_ask_chain_is_not_reported() {
    struct Hop {
        next: Option<Addr<Hop>>,
    }
    impl Actor for Hop {}
    struct Go(u32);
    impl Message for Go {
        type Reply = Result<u32, AskError>;
    }
    impl Handler<Go> for Hop {
        async fn handle(&mut self, m: Go, _: &mut Context<Self>) -> Result<u32, AskError> {
            match &self.next {
                Some(n) => n.ask(Go(m.0 + 1)).await?,
                None => Ok(m.0),
            }
        }
    }
    let mut next = None;
    for _ in 0..6 {
        next = Some(actor::spawn(Hop { next }));
    }
    let head = next.unwrap();
    for round in 0..200 {
        let asks: Vec<_> = (0..8).map(|i| head.ask(Go(i))).collect();
        let got = tutti::block_on(async {
            let mut v = Vec::new();
            for a in asks {
                v.push(a.await);
            }
            v
        });
        for (i, r) in got.into_iter().enumerate() {
            assert_eq!(r, Ok(Ok(i as u32 + 5)), "round {round}");
        }
    }
}

// ---- a cycle of full mailboxes ----

struct Flooder {
    peer: Option<Addr<Flooder>>,
}
impl Actor for Flooder {}
struct SetFloodPeer(Addr<Flooder>);
impl Message for SetFloodPeer {
    type Reply = ();
}
struct Flood(u32);
impl Message for Flood {
    type Reply = ();
}
struct Item;
impl Message for Item {
    type Reply = ();
}
impl Handler<SetFloodPeer> for Flooder {
    async fn handle(&mut self, m: SetFloodPeer, _: &mut Context<Self>) {
        self.peer = Some(m.0);
    }
}
impl Handler<Flood> for Flooder {
    async fn handle(&mut self, m: Flood, _: &mut Context<Self>) {
        let peer = self.peer.clone().expect("peer set");
        for _ in 0..m.0 {
            if peer.send(Item).await.is_err() {
                return; // the peer stopped (its send failed with the report)
            }
        }
    }
}
impl Handler<Item> for Flooder {
    async fn handle(&mut self, _: Item, _: &mut Context<Self>) {}
}

/// Two actors with mailboxes of 2 (`Block`) each flood the other from a handler: both
/// wait for room the other will never make. Reported naming both; both sends fail
/// (the handlers panic with the report, stopping the actors).
// Run alone (`.ci/run`: `-- --ignored a_full_mailbox_cycle_is_reported`): beside the
// other tests of this binary the detector misses this cycle in about a third of runs (a
// known bug, under investigation), and the test would hang.
#[test]
#[ignore = "known bug: missed beside concurrent tests; .ci/run runs it alone"]
fn a_full_mailbox_cycle_is_reported() {
    let spawn = || {
        actor::Builder::new()
            .bounded(2, Overflow::Block)
            .spawn(Flooder { peer: None })
    };
    let (a, b) = (spawn(), spawn());
    a.ask_blocking(SetFloodPeer(b.clone())).unwrap();
    b.ask_blocking(SetFloodPeer(a.clone())).unwrap();
    a.tell(Flood(10)).unwrap();
    b.tell(Flood(10)).unwrap();
    // The first send to fail panics its handler with the report, which stops its actor
    // and so ends the other's wait too (its send then finds the actor stopped). The
    // report is read from that panic, not from `last_deadlock`: other tests of this
    // binary may declare theirs after it.
    while !a.is_stopped() && !b.is_stopped() {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    a.stop();
    b.stop();
    let reasons = [a.wait_blocking(), b.wait_blocking()];
    let failed: Vec<&String> = reasons
        .iter()
        .filter_map(|r| match r {
            StopReason::Panicked(t) => Some(t),
            _ => None,
        })
        .collect();
    assert!(!failed.is_empty(), "{reasons:?}");
    let text = failed[0];
    assert!(
        text.contains("the send deadlocked") && text.contains("cycle: "),
        "{text}"
    );
    for x in [&a, &b] {
        let name = format!(
            "`{} (Flooder)` waits for room to send `Item` in the full mailbox of `",
            x.id()
        );
        assert!(text.contains(&name), "{name} missing in\n{text}");
    }
    let cycle = text
        .lines()
        .find(|l| l.trim_start().starts_with("cycle: "))
        .unwrap();
    assert_eq!(cycle.matches(" → ").count(), 2, "{text}");
}

// ---- a fence that cannot end ----

/// Location 0 fences; location 1 waits on a channel that location 0 would only send
/// on after its fence. The world is stalled: location 0's fence fails with the report,
/// which names both locations and what each waits on.
#[test]
fn a_fence_waiting_for_a_location_blocked_on_a_channel_is_reported() {
    let world = World::builder()
        .ignore_env()
        .transport(TransportKind::InProcess)
        .locations(2)
        .workers(2)
        .build()
        .unwrap();
    let (tx, rx) = tutti::csp::channel_named::<u32>("jobs");
    let panic = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        tutti::rmi::run(&world, move |rmi| {
            let (tx, rx) = (tx.clone(), rx.clone());
            async move {
                if rmi.id() == 0 {
                    rmi.fence().await;
                    tx.send(1).await.unwrap();
                } else {
                    let _ = rx.recv().await;
                    rmi.fence().await;
                }
            }
        })
    }))
    .expect_err("the fence fails");
    let m = panic.downcast_ref::<String>().cloned().unwrap_or_default();
    assert!(m.contains("location 0 panicked"), "{m}");
    assert!(m.contains("location 0 cannot finish"), "{m}");
    assert!(
        m.contains("`location 0` waits in a fence (quiescence detection"),
        "{m}"
    );
    assert!(
        m.contains("`location 1` waits to receive from channel `jobs`"),
        "{m}"
    );
}

/// A world busy with fences and collectives (every location takes part) is never
/// reported.
#[test]
fn busy_fences_and_collectives_are_not_reported() {
    let world = World::builder()
        .ignore_env()
        .transport(TransportKind::InProcess)
        .locations(3)
        .workers(2)
        .build()
        .unwrap();
    let sums = tutti::rmi::run(&world, |rmi| async move {
        let mut total = 0;
        for round in 0..200u64 {
            rmi.fence().await;
            total += rmi.world().all_reduce(round, |a, b| a + b).await;
        }
        total
    });
    let want: u64 = (0..200u64).map(|r| 3 * r).sum();
    assert_eq!(sums, [want; 3]);
}

// ---- dumps ----

struct Waiter {
    var: Arc<DataflowVar<u32>>,
}
impl Actor for Waiter {}
struct WaitVar;
impl Message for WaitVar {
    type Reply = u32;
}
impl Handler<WaitVar> for Waiter {
    async fn handle(&mut self, _: WaitVar, _: &mut Context<Self>) -> u32 {
        *self.var.read().await
    }
}

/// The dump names a blocked actor (on a dataflow variable), an actor waiting for its
/// reply, a CSP process blocked on a channel and a location waiting for a message —
/// and the program goes on afterwards.
#[test]
fn the_dump_lists_actors_processes_and_locations_with_their_waits() {
    let var = Arc::new(DataflowVar::new());
    let waiter = actor::spawn(Waiter { var: var.clone() });
    let reply = waiter.ask(WaitVar);
    // A process blocked on a channel whose sender is held outside its network.
    let (tx, rx) = tutti::csp::channel_named::<u32>("later");
    let network = tutti::csp::Par::new()
        .process("listener", async move {
            let _ = rx.recv().await;
        })
        .run();
    let process = tutti::spawn(network);
    // A location waiting for a message, which location 0 sends once `gate` is bound.
    let world = Arc::new(
        World::builder()
            .ignore_env()
            .transport(TransportKind::InProcess)
            .locations(2)
            .workers(1)
            .build()
            .unwrap(),
    );
    let gate = Arc::new(DataflowVar::<()>::new());
    let (w, g) = (Arc::clone(&world), Arc::clone(&gate));
    let locations = std::thread::spawn(move || {
        w.run(|loc| {
            let g = Arc::clone(&g);
            async move {
                if loc.id().index() == 1 {
                    let mut d = loc.recv().await;
                    d.take::<u32>().unwrap()
                } else {
                    g.read().await;
                    loc.send(tutti::world::LocationId::new(1), 7u32).unwrap();
                    loc.flush();
                    0
                }
            }
        })
    });
    // Wait until all three are blocked, as the dump shows them.
    let mut text = String::new();
    for _ in 0..2000 {
        text = tutti::diag::dump();
        if text.contains("blocked, waits for a dataflow variable")
            && text.contains("process `listener`: blocked")
            && text.contains("location `location 1`: blocked")
            && text.contains("location `location 0`: blocked")
        {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let id = waiter.id();
    assert!(
        text.contains(&format!(
            "actor `{id} (Waiter)`: blocked, waits for a dataflow variable to be bound"
        )),
        "{text}"
    );
    assert!(
        text.contains("process `listener`: blocked, waits to receive from channel `later`"),
        "{text}"
    );
    assert!(
        text.contains(
            "location `location 1`: blocked, waits to receive a message (`Location::recv`)"
        ),
        "{text}"
    );
    assert!(
        text.contains("location `location 0`: blocked, waits for a dataflow variable to be bound"),
        "{text}"
    );
    assert!(text.contains("live tasks"), "{text}");
    let json: serde_json::Value = serde_json::from_str(&tutti::diag::dump_json()).unwrap();
    let entries = json["entries"].as_array().unwrap();
    assert!(entries.iter().any(|e| e["kind"] == "actor"
        && e["name"] == format!("{id} (Waiter)")
        && e["state"] == "blocked"
        && e["waits"] == "waits for a dataflow variable to be bound"));
    assert!(entries
        .iter()
        .any(|e| e["kind"] == "process" && e["name"] == "listener"));
    // Nothing was stopped: everyone finishes.
    var.set(5).unwrap();
    assert_eq!(tutti::block_on(reply), Ok(5));
    tutti::block_on(tx.send(1)).unwrap();
    tutti::block_on(process).unwrap();
    gate.set(()).unwrap();
    assert_eq!(locations.join().unwrap(), [0, 7]);
}

// ---- child processes: the dump signal, report-only mode ----

/// A child process (this test binary, re-run on one test with `TUTTI_DIAG_CHILD`).
fn child(test: &str, mode: &str, env: &[(&str, &str)]) -> std::process::Child {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args([test, "--exact", "--nocapture", "--test-threads=1"])
        .env("TUTTI_DIAG_CHILD", mode)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.spawn().unwrap()
}

/// In the child: an actor blocked on a dataflow variable, then "ready" on stdout, then
/// waits (until the parent kills it). In the parent: sends the dump signal and reads
/// the dump from the child's stderr.
#[test]
fn the_dump_signal_prints_a_dump() {
    if std::env::var("TUTTI_DIAG_CHILD").as_deref() == Ok("signal") {
        let var = Arc::new(DataflowVar::<u32>::new());
        let waiter = actor::spawn(Waiter { var });
        let _reply = waiter.ask(WaitVar);
        while !tutti::diag::dump().contains("waits for a dataflow variable") {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        println!("ready {}", waiter.id());
        std::thread::sleep(std::time::Duration::from_secs(600));
        return;
    }
    for (signal, number) in [("", libc::SIGUSR1), ("USR2", libc::SIGUSR2)] {
        let env: Vec<(&str, &str)> = if signal.is_empty() {
            Vec::new()
        } else {
            vec![("TUTTI_DUMP_SIGNAL", signal)]
        };
        let mut c = child("the_dump_signal_prints_a_dump", "signal", &env);
        let mut out = BufReader::new(c.stdout.take().unwrap());
        let mut line = String::new();
        loop {
            line.clear();
            assert!(
                out.read_line(&mut line).unwrap() > 0,
                "the child ended early"
            );
            if let Some(at) = line.find("ready ") {
                line.drain(..at);
                break;
            }
        }
        let id = line.trim().strip_prefix("ready ").unwrap().to_string();
        // SAFETY: sending a signal to our own child process.
        assert_eq!(unsafe { libc::kill(c.id() as i32, number) }, 0);
        let mut err = BufReader::new(c.stderr.take().unwrap());
        let want =
            format!("actor `{id} (Waiter)`: blocked, waits for a dataflow variable to be bound");
        let mut seen = String::new();
        let mut dumped = false;
        while !dumped {
            line.clear();
            if err.read_line(&mut line).unwrap() == 0 {
                break;
            }
            seen.push_str(&line);
            dumped = seen.contains("tutti: dump") && seen.contains(&want);
        }
        let _ = c.kill();
        let _ = c.wait();
        assert!(dumped, "signal {number}: no dump with `{want}` in:\n{seen}");
    }
}

/// With `TUTTI_DEADLOCK=report` an ask cycle is reported on stderr and the asks keep
/// waiting (the child prints "still waiting" and exits).
#[test]
fn report_only_mode_leaves_the_waits() {
    if std::env::var("TUTTI_DIAG_CHILD").as_deref() == Ok("report") {
        let actors = ring(2);
        let outers: Vec<_> = actors.iter().map(|a| a.ask(Outer)).collect();
        while tutti::diag::last_deadlock().is_none() {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        // The asks were not failed: both are still waiting.
        let waiting = tutti::diag::entries()
            .iter()
            .filter(|e| e.kind == "actor" && e.state == "blocked")
            .count();
        println!("still waiting: {waiting}");
        drop(outers);
        std::process::exit(0);
    }
    let c = child(
        "report_only_mode_leaves_the_waits",
        "report",
        &[("TUTTI_DEADLOCK", "report")],
    );
    let out = c.wait_with_output().unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(stdout.contains("still waiting: 2"), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("tutti: deadlock: 2 participants can no longer progress"),
        "{stderr}"
    );
    assert!(stderr.contains("cycle: "), "{stderr}");
}
