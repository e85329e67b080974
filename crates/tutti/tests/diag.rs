//! Hang diagnosis across paradigms (`tutti::diag`): deadlocks among actors (a cycle of
//! asks, a cycle of full `Block` mailboxes) and a fence that cannot end because a
//! location waits on a channel are reported naming the participants, and the waiting
//! operations fail; busy programs are not reported; the dump lists actors, locations
//! and CSP processes with their waits; the dump signal prints it from a child process.
//!
//! The deadlock mode is process-wide: every test here runs in the default `Fail`
//! mode except `report_only_mode_leaves_the_waits`, which runs in a child process.
// This file uses tutti as a program would, with `std`'s atomics and locks: the
// loom-shim rule of `clippy.toml` is for the library's own code.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

#[path = "common/in_process.rs"]
mod in_process;
mod watchdog;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::Arc;

use in_process::in_process_world;
use tutti::actor::{self, ask_cycle, Actor, Addr, AskError, Context, Overflow, StopReason};
use tutti::msg::{Dispatch, Handler, Message};
use tutti::remote::{Node, RemoteAddr, RemoteError};
use tutti::world::LocationId;
use tutti::DataflowVar;

// ---- a cycle of asks ----

/// Three actors each ask the next inside a handler: a cycle (`tutti::actor::ask_cycle`,
/// the one `tutti hang-demo` shows). Each inner ask fails with the report (or gets its
/// reply once the ask it waited for failed and that handler returned); the report
/// names all three and the cycle.
#[test]
fn an_ask_cycle_is_reported_and_fails() {
    let ring = ask_cycle::ring(3);
    let results: Vec<Result<u32, AskError>> = ring
        .close_and_wait()
        .into_iter()
        .map(|r| r.expect("the outer ask is answered"))
        .collect();
    let reports: Vec<Arc<tutti::diag::Deadlock>> = results
        .iter()
        .filter_map(|r| match r {
            Err(AskError::Deadlock(d)) => Some(Arc::clone(d)),
            Ok(ask_cycle::ANSWER) => None,
            other => panic!("unexpected {other:?}"),
        })
        .collect();
    assert!(!reports.is_empty(), "no ask failed: {results:?}");
    let d = &reports[0];
    assert_eq!(d.waiters().len(), 3, "{d}");
    for a in &ring.peers {
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
    assert_eq!(
        ring.peers[0].ask_blocking(ask_cycle::Inner),
        Ok(ask_cycle::ANSWER)
    );
}

/// Runs `deadlock` (which must end by a deadlock being reported) on a runtime of its
/// own while another runtime of the process stays busy: it keeps a timer armed all the
/// time (a long timeout) and ticks a short one, spinning on the CPU between ticks.
/// Timers are process-wide, and a runtime with its workers idle is not quiet while one
/// that could wake its tasks is armed; the other runtime's timers must not count, or
/// the deadlock would never be judged (before: the hook found the deadlocked runtime
/// not quiet when its last worker parked, and nothing called it again).
fn beside_a_busy_runtime<R>(deadlock: impl FnOnce() -> R) -> R {
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    let busy = tutti::Runtime::builder().workers(1).build().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let ticks = Arc::new(AtomicU64::new(0));
    let (s, t) = (Arc::clone(&stop), Arc::clone(&ticks));
    let ticker = busy.spawn(async move {
        while !s.load(Ordering::Relaxed) {
            tutti::sleep(std::time::Duration::from_micros(500)).await;
            let mut x = t.load(Ordering::Relaxed);
            for i in 0..20_000u64 {
                x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(i));
            }
            t.fetch_add(1 + (x & 1), Ordering::Relaxed);
        }
    });
    let done = Arc::new(DataflowVar::<()>::new());
    let d = Arc::clone(&done);
    let armed = busy.spawn(async move {
        tutti::timeout(std::time::Duration::from_secs(3600), d.read())
            .await
            .is_ok()
    });
    // The other runtime is busy before the deadlock forms.
    while ticks.load(Ordering::Relaxed) < 2 {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    let deadlocked = tutti::Runtime::builder().workers(2).build().unwrap();
    let out = {
        let _in = deadlocked.enter();
        deadlock()
    };
    stop.store(true, Ordering::Relaxed);
    done.set(()).unwrap();
    busy.block_on(ticker);
    assert!(
        busy.block_on(armed),
        "the long timeout stayed armed until the end"
    );
    out
}

/// An ask cycle in one runtime is reported while another runtime is busy.
#[test]
fn an_ask_cycle_is_reported_beside_a_busy_runtime() {
    let results = beside_a_busy_runtime(|| ask_cycle::ring(2).close_and_wait());
    assert!(
        results
            .iter()
            .any(|r| matches!(r, Ok(Err(AskError::Deadlock(_))))),
        "{results:?}"
    );
}

/// A deadlocked CSP network in one runtime is reported while another runtime is busy.
#[test]
fn a_csp_deadlock_is_reported_beside_a_busy_runtime() {
    let err = beside_a_busy_runtime(|| {
        tutti::csp::run(async {
            let (tx, rx) = tutti::csp::channel_named::<u32>("never read");
            tutti::csp::Par::new()
                .process("sender", async move {
                    let _keep = &rx;
                    tx.send(1).await.unwrap();
                })
                .run()
                .await
                .unwrap();
        })
        .wait_blocking()
        .unwrap_err()
    });
    assert!(err.to_string().contains("channel `never read`"), "{err}");
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
    gate: Arc<DataflowVar<()>>,
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
        // Both floods start only once both actors have their `Flood`: neither then takes
        // an `Item` until its own flood ends, so both mailboxes fill (without the gate
        // one flood could end before the other begins, and nothing would deadlock).
        self.gate.read().await;
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
#[test]
fn a_full_mailbox_cycle_is_reported() {
    let gate = Arc::new(DataflowVar::new());
    let spawn = || {
        actor::Builder::new()
            .bounded(2, Overflow::Block)
            .spawn(Flooder {
                peer: None,
                gate: Arc::clone(&gate),
            })
    };
    let (a, b) = (spawn(), spawn());
    a.ask_blocking(SetFloodPeer(b.clone())).unwrap();
    b.ask_blocking(SetFloodPeer(a.clone())).unwrap();
    a.tell(Flood(10)).unwrap();
    b.tell(Flood(10)).unwrap();
    gate.set(()).unwrap();
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
    let world = in_process_world(2, 2);
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

/// The same with a channel between locations (`RemoteRx`): location 1 waits to
/// receive what location 0 would send only after its fence; the report names
/// the channel, both ends and the operation.
#[test]
fn a_fence_waiting_for_a_location_blocked_on_a_remote_channel_is_reported() {
    let world = in_process_world(2, 2);
    let panic = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        world.run(|loc| async move {
            let (zero, one) = (LocationId::new(0), LocationId::new(1));
            if loc.id() == zero {
                let tx = loc.channel_to::<u32>(one, 1).unwrap();
                while loc.recv_until_quiet().await.is_some() {}
                tx.send(1).await.unwrap();
            } else {
                let rx = loc.channel_from::<u32>(zero, 1).unwrap();
                let _ = rx.recv().await;
                while loc.recv_until_quiet().await.is_some() {}
            }
        })
    }))
    .expect_err("the fence fails");
    let m = panic.downcast_ref::<String>().cloned().unwrap_or_default();
    assert!(m.contains("location 0 cannot finish"), "{m}");
    assert!(
        m.contains(
            "`location 1` waits to receive on the channel #0 from location 0 to location 1 \
             (capacity 1, `RemoteRx::recv`)"
        ),
        "{m}"
    );
}

/// A world busy with fences and collectives (every location takes part) is never
/// reported.
#[test]
fn busy_fences_and_collectives_are_not_reported() {
    let world = in_process_world(3, 2);
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
    let world = Arc::new(in_process_world(2, 1));
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
    // Wait until all of them are blocked, as the dump shows them (by their waits: other
    // tests' worlds have locations of the same names).
    let id = waiter.id();
    let want = [
        format!("actor `{id} (Waiter)`: blocked, waits for a dataflow variable to be bound"),
        "process `listener`: blocked, waits to receive from channel `later`".to_string(),
        "location `location 1`: blocked, waits to receive a message (`Location::recv`)".to_string(),
        "location `location 0`: blocked, waits for a dataflow variable to be bound".to_string(),
    ];
    let mut text = String::new();
    for _ in 0..2000 {
        text = tutti::diag::dump();
        if want.iter().all(|w| text.contains(w.as_str())) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    for w in &want {
        assert!(text.contains(w.as_str()), "{w} missing in\n{text}");
    }
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

/// Whether this process has a handler for `signal` (not the default action).
fn handles(signal: i32) -> bool {
    // SAFETY: a zeroed `sigaction` is a valid place for the kernel to write the
    // current action into; the new action is null, so nothing changes.
    unsafe {
        let mut old: libc::sigaction = std::mem::zeroed();
        assert_eq!(libc::sigaction(signal, std::ptr::null(), &mut old), 0);
        old.sa_sigaction != libc::SIG_DFL
    }
}

/// A runtime of plain tasks leaves the process's signals alone; the first actor
/// installs the dump signal's handler, unless `TUTTI_DUMP_SIGNAL=off`.
#[test]
fn only_the_diagnosis_installs_the_dump_signal() {
    if let Ok(mode) = std::env::var("TUTTI_DIAG_CHILD") {
        if mode != "plain" {
            return;
        }
        let rt = tutti::Runtime::builder().workers(2).build().unwrap();
        let sum = rt.block_on(async {
            let tasks: Vec<_> = (0..4u64).map(|i| tutti::spawn(async move { i })).collect();
            let mut sum = 0;
            for t in tasks {
                sum += t.await;
            }
            sum
        });
        assert_eq!(sum, 6);
        let (a, b) = tutti::join(|| 1, || 2);
        assert_eq!(a + b, 3);
        println!("tasks: {}", handles(libc::SIGUSR1));
        struct Idle;
        impl Actor for Idle {}
        let _idle = actor::spawn(Idle);
        println!("actor: {}", handles(libc::SIGUSR1));
        return;
    }
    for (env, want) in [
        (Vec::new(), "tasks: false\nactor: true\n"),
        (
            vec![("TUTTI_DUMP_SIGNAL", "off")],
            "tasks: false\nactor: false\n",
        ),
    ] {
        let c = child("only_the_diagnosis_installs_the_dump_signal", "plain", &env);
        let out = c.wait_with_output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        // The harness prints the test's name on the line the first answer joins.
        let seen: String = text
            .lines()
            .filter_map(|l| {
                l.find("tasks: ")
                    .or_else(|| l.find("actor: "))
                    .map(|at| &l[at..])
            })
            .map(|l| format!("{l}\n"))
            .collect();
        assert!(out.status.success(), "{text}");
        assert_eq!(seen, want, "with {env:?}");
    }
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
        let ring = ask_cycle::ring(2);
        let outers = ring.close();
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

// ---- a cycle through an ask and a channel ----

/// Receives two values from a channel in one handler.
struct TwoFromChannel {
    rx: tutti::csp::Rx<u32>,
}
impl Actor for TwoFromChannel {}
struct TakeTwo;
impl Message for TakeTwo {
    type Reply = Result<(u32, u32), tutti::csp::RecvError>;
}
impl Handler<TakeTwo> for TwoFromChannel {
    async fn handle(&mut self, _: TakeTwo, _: &mut Context<Self>) -> <TakeTwo as Message>::Reply {
        let first = self.rx.recv().await?;
        // Only the actor asking us sends on this channel, and it sends the second value
        // once we have answered: stuck.
        let second = self.rx.recv().await?;
        Ok((first, second))
    }
}

/// Sends on the channel, asks the receiver, and sends again after the answer.
struct SendAndAsk {
    tx: tutti::csp::Tx<u32>,
    peer: Addr<TwoFromChannel>,
}
impl Actor for SendAndAsk {}
struct Go;
impl Message for Go {
    type Reply = Result<Result<(u32, u32), tutti::csp::RecvError>, AskError>;
}
impl Handler<Go> for SendAndAsk {
    async fn handle(&mut self, _: Go, _: &mut Context<Self>) -> <Go as Message>::Reply {
        self.tx.send(1).await.unwrap();
        let answer = self.peer.ask(TakeTwo).await;
        // The ask failed with the report: the receiver may go on now.
        self.tx.send(2).await.unwrap();
        answer
    }
}

/// Actor A asks actor B while B waits to receive on a channel whose only sender is A:
/// a cycle through an ask and a CSP receive, reported like any other (A's ask fails
/// with the report naming both, and the receive names its sender).
#[test]
fn an_ask_and_a_channel_receive_in_a_cycle_are_reported() {
    let (tx, rx) = tutti::csp::buffered::<u32>(4);
    let b = actor::spawn(TwoFromChannel { rx });
    let a = actor::spawn(SendAndAsk {
        tx,
        peer: b.clone(),
    });
    let answer = a.ask_blocking(Go).expect("the outer ask is answered");
    let Err(AskError::Deadlock(d)) = answer else {
        panic!("the inner ask must fail with the report, got {answer:?}");
    };
    assert_eq!(d.waiters().len(), 2, "{d}");
    assert_eq!(d.cycle().len(), 3, "{d}");
    let a_name = format!("{} (SendAndAsk)", a.id());
    let b_name = format!("{} (TwoFromChannel)", b.id());
    assert!(
        d.waiters().iter().any(|w| w.name() == b_name
            && w.waits().contains("to receive from")
            && w.waits()
                .contains(&format!("which only `{a_name}` sends on"))),
        "{d}"
    );
    assert!(
        d.waiters()
            .iter()
            .any(|w| w.name() == a_name && w.waits().contains("waits for the reply to `TakeTwo`")),
        "{d}"
    );
}

/// As [`SendAndAsk`], but the ask is a `future` arm of a `select!`.
struct SendAndAskInSelect {
    tx: tutti::csp::Tx<u32>,
    peer: Addr<TwoFromChannel>,
}
impl Actor for SendAndAskInSelect {}
impl Handler<Go> for SendAndAskInSelect {
    async fn handle(&mut self, _: Go, _: &mut Context<Self>) -> <Go as Message>::Reply {
        self.tx.send(1).await.unwrap();
        let answer = tutti::select! {
            future(self.peer.ask(TakeTwo)) -> r => r,
        };
        self.tx.send(2).await.unwrap();
        answer
    }
}

/// A `select!` blocked on a `future` arm over an ask is a wait like the ask itself: the
/// same cycle is reported, and the arm fires with the failed ask.
#[test]
fn a_select_over_an_ask_in_a_cycle_is_reported() {
    let (tx, rx) = tutti::csp::buffered::<u32>(4);
    let b = actor::spawn(TwoFromChannel { rx });
    let a = actor::spawn(SendAndAskInSelect {
        tx,
        peer: b.clone(),
    });
    let answer = a.ask_blocking(Go).expect("the outer ask is answered");
    let Err(AskError::Deadlock(d)) = answer else {
        panic!("the inner ask must fail with the report, got {answer:?}");
    };
    assert_eq!(d.cycle().len(), 3, "{d}");
    let a_name = format!("{} (SendAndAskInSelect)", a.id());
    assert!(
        d.waiters()
            .iter()
            .any(|w| w.name() == a_name && w.waits().contains("waits for the reply to `TakeTwo`")),
        "{d}"
    );
}

// ---- a sender held back by credits, in a cycle ----

/// Fills a consumer's mailbox across locations; the first one makes it ask
/// the producer.
#[derive(serde::Serialize, serde::Deserialize)]
struct Fill(u32);
impl Message for Fill {
    type Reply = ();
}
impl tutti::msg::Remote for Fill {
    const NAME: &'static str = "diag.Fill";
}

#[derive(serde::Serialize, serde::Deserialize)]
struct Ping;
impl Message for Ping {
    type Reply = ();
}
impl tutti::msg::Remote for Ping {
    const NAME: &'static str = "diag.Ping";
}

/// Sends ten `Fill`s to the consumer, waiting for credits, then stops.
struct FloodConsumer(RemoteAddr<Consumer>);
impl Message for FloodConsumer {
    type Reply = ();
}

struct Producer;
impl Actor for Producer {}
impl Handler<Ping> for Producer {
    async fn handle(&mut self, _: Ping, _: &mut Context<Self>) {}
}
impl Handler<FloodConsumer> for Producer {
    async fn handle(&mut self, m: FloodConsumer, ctx: &mut Context<Self>) {
        for i in 0..10 {
            m.0.send(Fill(i)).await.unwrap();
        }
        ctx.stop();
    }
}

struct Consumer {
    producer: RemoteAddr<Producer>,
    /// What its question to the producer got.
    asked: Arc<std::sync::Mutex<Option<Result<(), RemoteError>>>>,
}
impl Actor for Consumer {}
impl Handler<Fill> for Consumer {
    async fn handle(&mut self, m: Fill, _: &mut Context<Self>) {
        if m.0 == 0 {
            let r = self.producer.ask(Ping).await;
            *self.asked.lock().unwrap() = Some(r);
        }
    }
}

/// A producer on location 0 sends, held back by credits, to a consumer on
/// location 1 (a bounded mailbox of 1) that asks the producer a question in
/// its first handler: the producer cannot answer until it has sent, and the
/// consumer takes nothing until it is answered. The cycle is reported (both
/// actors named, with their waits) and a wait in it fails, instead of a hang.
#[test]
fn a_sender_held_back_by_credits_in_a_cycle_is_reported() {
    let _ = tutti::msg::register::<Fill>();
    let _ = tutti::msg::register::<Ping>();
    let world = in_process_world(2, 2);
    let asked = Arc::new(std::sync::Mutex::new(None));
    let asked2 = Arc::clone(&asked);
    let stops = world.run(move |loc| {
        let asked = Arc::clone(&asked2);
        async move {
            let node = Node::join(loc);
            let mut stop = None;
            if node.id().index() == 0 {
                let mut table = Dispatch::new();
                table.register::<Ping>().unwrap();
                let p = actor::spawn(Producer);
                let remote = node.export(&p, table);
                node.register("producer", &remote).await.unwrap();
                node.barrier().await;
                node.barrier().await;
                let c = node.lookup::<Consumer>("consumer").await.unwrap();
                assert_eq!(c.window(), Some(1));
                p.tell(FloodConsumer(c)).unwrap();
                // The producer stops either way: its send fails (a panic), or
                // it finishes once the consumer's question failed.
                stop = Some(p.wait().await);
            } else {
                node.barrier().await;
                let producer = node.lookup::<Producer>("producer").await.unwrap();
                let c = actor::Builder::new()
                    .bounded(1, Overflow::Block)
                    .spawn(Consumer { producer, asked });
                let mut table = Dispatch::new();
                table.register::<Fill>().unwrap();
                let remote = node.export(&c, table);
                node.register("consumer", &remote).await.unwrap();
                node.barrier().await;
            }
            node.barrier().await;
            node.leave().await;
            stop
        }
    });
    // Either the producer's send failed (its handler panicked with the
    // report), or the consumer's question did (with the report).
    let text = match (&stops[0], asked.lock().unwrap().clone()) {
        (Some(StopReason::Panicked(t)), _) => {
            assert!(t.contains("the send deadlocked"), "{t}");
            t.clone()
        }
        (_, Some(Err(RemoteError::Deadlock(d)))) => d.to_string(),
        other => panic!("no wait of the cycle failed: {other:?}"),
    };
    assert!(text.contains("cycle: "), "{text}");
    assert!(
        text.contains("(Producer)` waits for room to send `Fill` in the full mailbox of `"),
        "{text}"
    );
    assert!(
        text.contains("(Consumer)` waits for the reply to `Ping`"),
        "{text}"
    );
}

// ---- a registry request that no node answers ----

struct Nobody;
impl Actor for Nobody {}

/// Location 1 looks up a name whose home is location 0, which runs no actor
/// node: it waits in a barrier for location 1. Nothing can answer the
/// request, and the world is reported stalled, naming the request, instead
/// of hanging (a registry wait was noted nowhere: location 1 looked idle).
#[test]
fn a_registry_request_nobody_answers_is_reported() {
    let world = in_process_world(2, 2);
    let err = world
        .try_run(|loc| async move {
            if loc.id().index() == 0 {
                loc.barrier().await;
                return;
            }
            let node = Node::join(loc);
            let name = (0..)
                .map(|i| format!("nobody {i}"))
                .find(|n| node.home_of(n).index() == 0)
                .unwrap();
            let _ = node.lookup::<Nobody>(name).await;
            unreachable!("the lookup was answered");
        })
        .unwrap_err();
    assert!(
        err.message
            .contains("waits for the answer to a registry lookup from the name's home"),
        "{}",
        err.message
    );
}
