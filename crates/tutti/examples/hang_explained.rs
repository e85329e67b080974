//! Hangs the runtime explains instead of waiting forever: two actors that ask
//! each other, a CSP network whose processes all wait, and a dump of what a
//! running program waits on.
//!
//! ```sh
//! cargo run -p tutti --example hang_explained
//! ```
//!
//! Every blocking operation of tutti (channel operations, actor asks, fences,
//! barriers, dataflow variables, …) records what it waits for in one wait-for
//! graph. When the runtime is quiet — every worker idle, no timer that could
//! wake anyone — and the graph holds a cycle, the waiting operations fail with
//! a report that names each participant, what it waits on, and the cycle
//! (`TUTTI_DEADLOCK=report` only prints it; `off` turns detection off). A dump
//! (`tutti::diag::dump()`, or `kill -USR1 <pid>`) lists every wait of a
//! program that is still running. The program checks each report and exits
//! with an error if one is missing or wrong.

use std::time::Duration;

use tutti::actor::{self, Actor, AskError, Context};
use tutti::csp::{self, Par};
use tutti::msg::{Handler, Message};

/// An actor that, when asked to `Ping`, asks its peer for a `Pong` and waits.
struct Peer(Option<actor::Addr<Peer>>);
impl Actor for Peer {}

struct Meet(actor::Addr<Peer>);
impl Message for Meet {
    type Reply = ();
}
struct Ping;
impl Message for Ping {
    type Reply = Result<(), AskError>;
}
struct Pong;
impl Message for Pong {
    type Reply = ();
}
impl Handler<Meet> for Peer {
    async fn handle(&mut self, m: Meet, _: &mut Context<Self>) {
        self.0 = Some(m.0);
    }
}
impl Handler<Ping> for Peer {
    async fn handle(&mut self, _: Ping, _: &mut Context<Self>) -> Result<(), AskError> {
        // The peer is inside its own Ping, waiting for us: neither answers.
        self.0.as_ref().expect("introduced").ask(Pong).await
    }
}
impl Handler<Pong> for Peer {
    async fn handle(&mut self, _: Pong, _: &mut Context<Self>) {}
}

/// Case 1: two actors ask each other, an ask cycle.
fn ask_cycle() -> Result<String, String> {
    let (a, b) = (actor::spawn(Peer(None)), actor::spawn(Peer(None)));
    a.ask_blocking(Meet(b.clone())).unwrap();
    b.ask_blocking(Meet(a.clone())).unwrap();
    let (ra, rb) = (a.ask(Ping), b.ask(Ping));
    let (ra, rb) = tutti::block_on(async { (ra.await, rb.await) });
    // Each holds the other's address: stop them, or they would live on.
    a.stop();
    b.stop();
    // The inner asks fail with the report (one of them may fail first, and its
    // handler's return then lets the other's reply through).
    let report = [ra, rb]
        .into_iter()
        .filter_map(|r| match r {
            Ok(Err(AskError::Deadlock(report))) => Some(report),
            _ => None,
        })
        .next()
        .ok_or("no ask failed with a deadlock report")?;
    let text = report.to_string();
    if report.cycle().len() != 3 || !text.contains("waits for the reply to `Pong`") {
        return Err(format!("unexpected report: {text}"));
    }
    Ok(format!(
        "the inner ask failed with AskError::Deadlock; its report names the cycle {}",
        report.cycle().join(" → ")
    ))
}

/// Case 2: a process network in which everybody waits: both processes send, on
/// synchronous channels, to the other, and neither receives.
fn csp_network() -> Result<String, String> {
    let outcome = csp::run(async {
        let (to_b, from_a) = csp::channel_named::<u32>("a to b");
        let (to_a, from_b) = csp::channel_named::<u32>("b to a");
        Par::new()
            .process("a", async move {
                to_b.send(1).await.unwrap();
                drop(from_b);
            })
            .process("b", async move {
                to_a.send(2).await.unwrap();
                drop(from_a);
            })
            .run()
            .await
            .unwrap();
    })
    .wait_blocking();
    let report = outcome.err().ok_or("the network ended, yet it cannot")?;
    let text = report.to_string();
    for want in [
        "`run/a` waits to send on channel `a to b`",
        "`run/b` waits to send on channel `b to a`",
    ] {
        if !text.contains(want) {
            return Err(format!("the report lacks {want:?}: {text}"));
        }
    }
    Ok(format!(
        "csp::run returned Err(Deadlock) naming {} blocked processes",
        report.processes().len()
    ))
}

/// Case 3: a dump while a process waits for a value that comes later: not a
/// deadlock (a timer will wake the sender), but visible.
fn dump_of_a_wait() -> Result<String, String> {
    let (tx, rx) = csp::channel_named::<&str>("results");
    let collector = Par::new()
        .process("collector", async move {
            let _ = rx.recv().await;
        })
        .run();
    let sender = tutti::spawn(async move {
        tutti::sleep(Duration::from_millis(200)).await;
        tx.send("done").await.unwrap();
    });
    let waiting = tutti::spawn(collector);
    std::thread::sleep(Duration::from_millis(50));
    let text = tutti::diag::dump();
    sender.join();
    waiting.join().map_err(|e| format!("the collector: {e}"))?;
    if !text.contains("process `collector`") || !text.contains("channel `results`") {
        return Err(format!(
            "the dump does not show the collector's wait: {text}"
        ));
    }
    Ok(text)
}

fn main() {
    let mut failed = false;
    for (title, case) in [
        (
            "1. Two actors ask each other (an ask cycle):",
            ask_cycle as fn() -> Result<String, String>,
        ),
        (
            "2. Two processes send to each other, and nobody receives:",
            csp_network,
        ),
        (
            "3. tutti::diag::dump() while a process waits for a result:",
            dump_of_a_wait,
        ),
    ] {
        // The runtime prints each deadlock report on stderr when it declares it.
        println!("{title}");
        match case() {
            Ok(text) => println!("  → {}\n", text.trim_end().replace('\n', "\n    ")),
            Err(e) => {
                eprintln!("hang_explained: {e}");
                failed = true;
            }
        }
    }
    if failed {
        std::process::exit(1);
    }
    println!("verified: each hang was reported, naming who waits on what");
}
