//! Mailboxes: bounded policies, drop reporting, the priority lane, message strategies.
// This file uses tutti as a program would, with `std`'s atomics and locks: the
// loom-shim rule of `clippy.toml` is for the library's own code.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

mod watchdog;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tutti::actor::{self, Actor, AskError, Context, Overflow, SendTimeoutError, TellError};
use tutti::msg::{Envelope, Handler, Message};
use tutti::{DataflowVar, Runtime};

fn rt(workers: usize) -> Runtime {
    Runtime::builder().workers(workers).build().unwrap()
}

/// Blocks its handler until `gate` is bound, so the mailbox fills deterministically.
struct Gate(Arc<DataflowVar<()>>);
impl Message for Gate {
    type Reply = ();
}
struct Item(u32);
impl Message for Item {
    type Reply = u32;
}
struct Log;
impl Message for Log {
    type Reply = Vec<u32>;
}

#[derive(Default)]
struct Recorder {
    log: Vec<u32>,
    dropped: Arc<AtomicU64>,
}
impl Actor for Recorder {
    fn messages_dropped(&mut self, count: u64, _: &mut Context<Self>) {
        self.dropped.fetch_add(count, Ordering::SeqCst);
    }
}
impl Handler<Gate> for Recorder {
    async fn handle(&mut self, g: Gate, _: &mut Context<Self>) {
        g.0.read().await;
    }
}
impl Handler<Item> for Recorder {
    async fn handle(&mut self, m: Item, _: &mut Context<Self>) -> u32 {
        self.log.push(m.0);
        m.0
    }
}
impl Handler<Log> for Recorder {
    async fn handle(&mut self, _: Log, _: &mut Context<Self>) -> Vec<u32> {
        std::mem::take(&mut self.log)
    }
}

/// Spawns a recorder with a bounded mailbox and parks it in a gated handler, with the
/// mailbox empty. Returns the address and the gate.
fn parked(
    cap: usize,
    policy: Overflow,
) -> (actor::Addr<Recorder>, Arc<DataflowVar<()>>, Arc<AtomicU64>) {
    let dropped = Arc::new(AtomicU64::new(0));
    let a = actor::Builder::new().bounded(cap, policy).spawn(Recorder {
        log: Vec::new(),
        dropped: dropped.clone(),
    });
    let gate = Arc::new(DataflowVar::new());
    a.tell(Gate(gate.clone())).unwrap();
    // The gate message has been taken out of the mailbox once it is empty.
    drained(&a);
    (a, gate, dropped)
}

/// Waits until the mailbox is empty (so that the next message finds room).
fn drained(a: &actor::Addr<Recorder>) {
    while a.mailbox_len() > 0 {
        std::thread::yield_now();
    }
}

#[test]
fn fail_policy_refuses_with_the_message_and_asks_fail_fast() {
    let rt = rt(2);
    let _g = rt.enter();
    let (a, gate, _) = parked(3, Overflow::Fail);
    for i in 0..3 {
        a.tell(Item(i)).unwrap();
    }
    assert!(matches!(a.tell(Item(3)), Err(TellError::Full(Item(3)))));
    assert_eq!(tutti::block_on(a.ask(Item(4))), Err(AskError::Full));
    gate.set(()).unwrap();
    drained(&a);
    assert_eq!(a.ask_blocking(Log).unwrap(), vec![0, 1, 2]);
}

#[test]
fn drop_oldest_discards_counts_and_reports() {
    let rt = rt(2);
    let _g = rt.enter();
    let (a, gate, reported) = parked(2, Overflow::DropOldest);
    let first = a.ask(Item(0)); // will be discarded
    for i in 1..6 {
        a.tell(Item(i)).unwrap();
    }
    assert_eq!(a.dropped(), 4);
    assert_eq!(tutti::block_on(first), Err(AskError::Dropped));
    gate.set(()).unwrap();
    drained(&a);
    assert_eq!(a.ask_blocking(Log).unwrap(), vec![4, 5]);
    // Reported to the actor before it handled the next message.
    assert_eq!(reported.load(Ordering::SeqCst), 4);
}

#[test]
fn block_policy_makes_senders_wait_for_room() {
    let rt = rt(2);
    let _g = rt.enter();
    let (a, gate, _) = parked(2, Overflow::Block);
    a.tell(Item(0)).unwrap();
    a.tell(Item(1)).unwrap();
    // `tell` never waits.
    assert!(matches!(a.tell(Item(9)), Err(TellError::Full(Item(9)))));
    // `send_timeout` gives the message back.
    match a.send_timeout(Item(9), Duration::from_millis(2)) {
        Err(SendTimeoutError::Timeout(Item(9))) => {}
        other => panic!("expected a timeout, got {other:?}"),
    }
    // Blocked senders: threads with send_blocking, a task with send().await and an ask,
    // all released as room appears.
    let mut threads = Vec::new();
    for t in 0..3u32 {
        let a = a.clone();
        threads.push(std::thread::spawn(move || {
            for i in 0..10 {
                a.send_blocking(Item(100 * (t + 1) + i)).unwrap();
            }
        }));
    }
    let task = {
        let a = a.clone();
        rt.spawn(async move {
            for i in 0..10 {
                a.send(Item(1000 + i)).await.unwrap();
            }
            a.ask(Item(5000)).await.unwrap()
        })
    };
    std::thread::sleep(Duration::from_millis(1));
    assert!(a.mailbox_len() <= 2, "the bound holds");
    gate.set(()).unwrap();
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(task.join(), 5000);
    let log = a.ask_blocking(Log).unwrap();
    assert_eq!(log.len(), 2 + 30 + 10 + 1);
    // Per sender, order kept.
    for base in [100u32, 200, 300, 1000] {
        let mine: Vec<u32> = log
            .iter()
            .copied()
            .filter(|&x| x >= base && x < base + 10)
            .collect();
        assert_eq!(mine, (base..base + 10).collect::<Vec<_>>());
    }
}

#[test]
fn blocked_senders_learn_that_the_actor_stopped() {
    let rt = rt(2);
    let _g = rt.enter();
    let (a, _gate, _) = parked(1, Overflow::Block);
    a.tell(Item(0)).unwrap();
    let waiter = {
        let a = a.clone();
        std::thread::spawn(move || a.send_blocking(Item(1)).map_err(|e| e.0 .0))
    };
    let asker = a.ask(Item(2));
    std::thread::sleep(Duration::from_millis(1));
    a.stop();
    assert_eq!(waiter.join().unwrap(), Err(1));
    assert_eq!(tutti::block_on(asker), Err(AskError::Stopped));
}

#[test]
fn a_cancelled_blocked_sender_passes_its_wake_up_on() {
    let rt = rt(2);
    let _g = rt.enter();
    let (a, gate, _) = parked(1, Overflow::Block);
    a.tell(Item(0)).unwrap();
    // One sender gives up (timeout), another keeps waiting: it must still get in.
    assert!(a.send_timeout(Item(1), Duration::from_millis(1)).is_err());
    let keeper = {
        let a = a.clone();
        std::thread::spawn(move || a.send_blocking(Item(2)).is_ok())
    };
    gate.set(()).unwrap();
    assert!(keeper.join().unwrap());
    assert_eq!(a.ask_blocking(Log).unwrap(), vec![0, 2]);
}

// ----- priority lane -----

#[test]
fn priority_messages_overtake_queued_ones() {
    let rt = rt(2);
    let _g = rt.enter();
    let (a, gate, _) = parked(100, Overflow::Fail);
    for i in 0..5 {
        a.tell(Item(i)).unwrap();
    }
    a.tell_priority(Item(99)).unwrap();
    gate.set(()).unwrap();
    assert_eq!(a.ask_blocking(Log).unwrap(), vec![99, 0, 1, 2, 3, 4]);
}

// ----- message strategies: has_messages / try_next -----

struct Work {
    rounds: u32,
}
impl Message for Work {
    type Reply = Vec<String>;
}
struct Note(&'static str);
impl Message for Note {
    type Reply = ();
}

/// A long handler that serves notes between rounds (the C task framework's weather station).
#[derive(Default)]
struct Busy {
    journal: Vec<String>,
}
impl Actor for Busy {}
impl Handler<Note> for Busy {
    async fn handle(&mut self, n: Note, _: &mut Context<Self>) {
        self.journal.push(n.0.to_string());
    }
}
impl Handler<Work> for Busy {
    async fn handle(&mut self, w: Work, ctx: &mut Context<Self>) -> Vec<String> {
        for r in 0..w.rounds {
            self.journal.push(format!("round {r}"));
            while ctx.has_messages() {
                let Some(m) = ctx.try_next() else { break };
                // Typed inspection, or generic application to ourselves.
                match m.downcast::<Note>() {
                    Ok((note, _)) => self.journal.push(format!("note {}", note.0)),
                    Err(other) => other.handle(self, ctx).await,
                }
            }
            tutti::runtime::yield_now().await;
        }
        std::mem::take(&mut self.journal)
    }
}

#[test]
fn a_long_handler_serves_new_messages_with_try_next() {
    let rt = rt(1);
    let _g = rt.enter();
    let a = actor::spawn(Busy::default());
    let journal = rt.block_on(rt.spawn({
        let a = a.clone();
        async move {
            let work = a.ask(Work { rounds: 3 });
            a.tell(Note("early")).unwrap();
            work.await.unwrap()
        }
    }));
    // The note arrived while the work was running and was served in its first round.
    assert_eq!(journal, vec!["round 0", "note early", "round 1", "round 2"]);
}

#[test]
fn try_next_envelopes_carry_replies() {
    struct Drain;
    impl Message for Drain {
        type Reply = usize;
    }
    struct Q;
    impl Actor for Q {}
    impl Handler<Item> for Q {
        async fn handle(&mut self, m: Item, _: &mut Context<Self>) -> u32 {
            m.0 * 10
        }
    }
    impl Handler<Drain> for Q {
        async fn handle(&mut self, _: Drain, ctx: &mut Context<Self>) -> usize {
            let mut n = 0;
            while let Some(e) = ctx.try_next() {
                e.handle(self, ctx).await;
                n += 1;
            }
            n
        }
    }
    let rt = rt(1);
    let _g = rt.enter();
    let q = actor::spawn(Q);
    let (drained, a, b) = rt.block_on(rt.spawn({
        let q = q.clone();
        async move {
            let d = q.ask(Drain);
            let a = q.ask(Item(1));
            let b = q.ask(Item(2));
            (d.await.unwrap(), a.await.unwrap(), b.await.unwrap())
        }
    }));
    assert_eq!((drained, a, b), (2, 10, 20));
}

#[test]
fn dropping_a_taken_envelope_tells_the_asker() {
    struct Skip;
    impl Message for Skip {
        type Reply = ();
    }
    struct S(Arc<Mutex<Option<String>>>);
    impl Actor for S {}
    impl Handler<Item> for S {
        async fn handle(&mut self, m: Item, _: &mut Context<Self>) -> u32 {
            m.0
        }
    }
    impl Handler<Skip> for S {
        async fn handle(&mut self, _: Skip, ctx: &mut Context<Self>) {
            if let Some(e) = ctx.try_next() {
                *self.0.lock().unwrap() = Some(e.message_type().to_string());
                drop::<Envelope<S>>(e);
            }
        }
    }
    let rt = rt(1);
    let _g = rt.enter();
    let seen = Arc::new(Mutex::new(None));
    let s = actor::spawn(S(seen.clone()));
    let r = rt.block_on(rt.spawn({
        let s = s.clone();
        async move {
            let skip = s.ask(Skip);
            let item = s.ask(Item(3));
            skip.await.unwrap();
            item.await
        }
    }));
    assert_eq!(r, Err(AskError::Stopped));
    assert!(seen.lock().unwrap().as_deref().unwrap().ends_with("Item"));
}
