//! `tutti hang-demo`: small programs that hang, and what `tutti::diag` says about them
//! (the README's "Finding a hang" shows this command's output).
//!
//! 1. Two actors ask each other from their handlers: a cycle of asks. Detected, both
//!    asks fail with `AskError::Deadlock` carrying the report.
//! 2. Two locations of a world: location 0 fences (the world's quiescence detection)
//!    while location 1 waits on a channel that location 0 only sends on after its
//!    fence. The fence fails (its location panics) with the report.
//! 3. A dump while an actor waits on a dataflow variable and a CSP process on a
//!    channel, taken without stopping them; then they are released and finish.
//!
//! Verified: each deadlock was reported naming its participants, and the dump listed
//! the waits.

use std::sync::Arc;

use clap::Args;
use tutti::actor::{self, ask_cycle, Actor, AskError, Context};
use tutti::msg::{Handler, Message};
use tutti::world::{TransportKind, World};
use tutti::DataflowVar;

use crate::report::Report;

/// Arguments of `tutti hang-demo`.
#[derive(Args, Debug)]
pub struct HangDemoArgs {
    /// Print one JSON object (the reports and the dump as strings) instead of text.
    #[arg(long)]
    pub json: bool,
}

/// Two actors ask each other from their handlers (`tutti::actor::ask_cycle`, the cycle
/// the diagnosis tests check too); returns the report an ask failed with.
fn ask_cycle() -> Option<String> {
    let ring = ask_cycle::ring(2);
    let report = ring.close_and_wait().into_iter().find_map(|r| match r {
        Ok(Err(AskError::Deadlock(d))) => Some(d.to_string()),
        _ => None,
    });
    for p in &ring.peers {
        p.stop();
    }
    report
}

fn stalled_fence() -> Option<String> {
    let world = World::builder()
        .ignore_env()
        .transport(TransportKind::InProcess)
        .locations(2)
        .workers(2)
        .build()
        .ok()?;
    let (tx, rx) = tutti::csp::channel_named::<u32>("jobs");
    let keep = tx.clone();
    let quiet = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    // The world's fence (quiescence detection) on location 0; a channel on location 1.
    let outcome = world.try_run(move |loc| {
        let (tx, rx) = (tx.clone(), rx.clone());
        async move {
            if loc.id().index() == 0 {
                while loc.recv_until_quiet().await.is_some() {}
                let _ = tx.send(1).await;
            } else {
                let _ = rx.recv().await;
            }
        }
    });
    std::panic::set_hook(quiet);
    // Release location 1, so that the world can end.
    let _ = tutti::block_on(keep.send(0));
    drop(world);
    // Let location 1 finish before the dump of part 3.
    for _ in 0..100_000 {
        if !tutti::diag::entries().iter().any(|e| e.kind == "location") {
            break;
        }
        std::thread::yield_now();
    }
    let text = outcome.err()?.message;
    let at = text.find("tutti: deadlock")?;
    Some(text[at..].to_string())
}

struct Reader(Arc<DataflowVar<u64>>);
impl Actor for Reader {}
struct Read;
impl Message for Read {
    type Reply = u64;
}
impl Handler<Read> for Reader {
    async fn handle(&mut self, _: Read, _: &mut Context<Self>) -> u64 {
        *self.0.read().await
    }
}

fn dump_while_waiting() -> Option<String> {
    let var = Arc::new(DataflowVar::new());
    let reader = actor::spawn(Reader(Arc::clone(&var)));
    let reply = reader.ask(Read);
    let (tx, rx) = tutti::csp::channel_named::<u64>("results");
    let net = tutti::spawn(
        tutti::csp::Par::new()
            .process("collector", async move {
                let _ = rx.recv().await;
            })
            .run(),
    );
    let mut dump = String::new();
    for _ in 0..10_000 {
        dump = tutti::diag::dump();
        if dump.contains("waits for a dataflow variable") && dump.contains("`collector`: blocked") {
            break;
        }
        std::thread::yield_now();
    }
    var.set(42).ok()?;
    let ok = tutti::block_on(reply) == Ok(42);
    tutti::block_on(tx.send(1)).ok()?;
    tutti::block_on(net).ok()?;
    reader.stop();
    ok.then_some(dump)
}

/// Runs the demo.
pub fn run(a: &HangDemoArgs) -> Result<Report, String> {
    let mut report = Report::new("hang-demo");
    let cycle = ask_cycle();
    let fence = stalled_fence();
    let dump = dump_while_waiting();
    if !a.json {
        println!("1. Two actors ask each other (an ask cycle):\n");
        println!("{}\n", cycle.as_deref().unwrap_or("(not reported)"));
        println!("2. A fence while another location waits on a channel:\n");
        println!("{}\n", fence.as_deref().unwrap_or("(not reported)"));
        println!("3. tutti::diag::dump() while an actor and a process wait:\n");
        println!("{}", dump.as_deref().unwrap_or("(no dump)"));
    }
    let ok = cycle.as_deref().is_some_and(|c| {
        c.contains("(Peer)` waits for the reply to `Inner`") && c.contains("cycle: ")
    }) && fence.as_deref().is_some_and(|f| {
        f.contains("`location 0` waits in a fence")
            && f.contains("`location 1` waits to receive from channel `jobs`")
    }) && dump.as_deref().is_some_and(|d| {
        d.contains("(Reader)`: blocked, waits for a dataflow variable to be bound")
            && d.contains("process `collector`: blocked, waits to receive from channel `results`")
    });
    if a.json {
        report.param("ask_cycle", cycle.unwrap_or_default());
        report.param("stalled_fence", fence.unwrap_or_default());
        report.param("dump", dump.unwrap_or_default());
    }
    report.verify(ok);
    Ok(report)
}
