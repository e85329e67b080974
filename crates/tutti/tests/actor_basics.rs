//! Actors: ordering, exclusive access, awaiting handlers, dead actors, panics, fairness.
// This file uses tutti as a program would, with `std`'s atomics and locks: the
// loom-shim rule of `clippy.toml` is for the library's own code.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

mod watchdog;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tutti::actor::{self, Actor, AskError, AskTimeoutError, Context, StopReason, TellError};
use tutti::msg::{Handler, Message};
use tutti::Runtime;

fn rt(workers: usize) -> Runtime {
    Runtime::builder().workers(workers).build().unwrap()
}

// ----- ordering per sender -----

struct Seq {
    from: usize,
    n: usize,
}
impl Message for Seq {
    type Reply = ();
}
struct Done;
impl Message for Done {
    type Reply = Vec<usize>;
}

#[derive(Default)]
struct OrderChecker {
    next: Vec<usize>,
}
impl Actor for OrderChecker {}
impl Handler<Seq> for OrderChecker {
    async fn handle(&mut self, m: Seq, _: &mut Context<Self>) {
        if self.next.len() <= m.from {
            self.next.resize(m.from + 1, 0);
        }
        assert_eq!(m.n, self.next[m.from], "sender {} out of order", m.from);
        self.next[m.from] += 1;
    }
}
impl Handler<Done> for OrderChecker {
    async fn handle(&mut self, _: Done, _: &mut Context<Self>) -> Vec<usize> {
        self.next.clone()
    }
}

#[test]
fn messages_from_one_sender_arrive_in_send_order() {
    const SENDERS: usize = 4;
    const PER: usize = 5_000;
    let rt = rt(2);
    let _g = rt.enter();
    let a = actor::spawn(OrderChecker::default());
    // Plain threads and tasks sending at the same time.
    std::thread::scope(|s| {
        for from in 0..SENDERS / 2 {
            let a = a.clone();
            s.spawn(move || {
                for n in 0..PER {
                    a.tell(Seq { from, n }).unwrap();
                }
            });
        }
        let tasks: Vec<_> = (SENDERS / 2..SENDERS)
            .map(|from| {
                let a = a.clone();
                rt.spawn(async move {
                    for n in 0..PER {
                        if n % 3 == 0 {
                            // asks interleaved with tells keep the order too
                            a.ask(Seq { from, n }).await.unwrap();
                        } else {
                            a.tell(Seq { from, n }).unwrap();
                        }
                    }
                })
            })
            .collect();
        for t in tasks {
            t.join();
        }
    });
    let next = a.ask_blocking(Done).unwrap();
    assert_eq!(next, vec![PER; SENDERS]);
}

// ----- exclusive access, also across awaits -----

struct Slow(u64);
impl Message for Slow {
    type Reply = u64;
}

struct Exclusive {
    inside: Arc<AtomicBool>,
    sum: u64,
}
impl Actor for Exclusive {}
impl Handler<Slow> for Exclusive {
    async fn handle(&mut self, m: Slow, _: &mut Context<Self>) -> u64 {
        assert!(
            !self.inside.swap(true, Ordering::SeqCst),
            "two handlers of one actor overlap"
        );
        // Give the worker away in the middle of the handler.
        for _ in 0..(m.0 % 3) {
            tutti::runtime::yield_now().await;
        }
        if m.0 % 7 == 0 {
            tutti::sleep(Duration::from_micros(50)).await;
        }
        self.sum += m.0;
        self.inside.store(false, Ordering::SeqCst);
        self.sum
    }
}

#[test]
fn handlers_never_overlap_even_when_they_await() {
    let rt = rt(2);
    let _g = rt.enter();
    let a = actor::spawn(Exclusive {
        inside: Arc::new(AtomicBool::new(false)),
        sum: 0,
    });
    let tasks: Vec<_> = (0..4u64)
        .map(|t| {
            let a = a.clone();
            rt.spawn(async move {
                let mut asks = Vec::new();
                for i in 0..200u64 {
                    if i % 2 == 0 {
                        a.tell(Slow(t * 1000 + i)).unwrap();
                    } else {
                        asks.push(a.ask(Slow(t * 1000 + i)));
                    }
                }
                for q in asks {
                    q.await.unwrap();
                }
            })
        })
        .collect();
    for t in tasks {
        t.join();
    }
    let expected: u64 = (0..4u64)
        .flat_map(|t| (0..200).map(move |i| t * 1000 + i))
        .sum();
    assert_eq!(a.ask_blocking(Slow(0)).unwrap(), expected);
}

// ----- a handler that awaits another actor and a channel-like value -----

struct Double(u64);
impl Message for Double {
    type Reply = u64;
}
struct Doubler;
impl Actor for Doubler {}
impl Handler<Double> for Doubler {
    async fn handle(&mut self, m: Double, _: &mut Context<Self>) -> u64 {
        2 * m.0
    }
}

struct Quadruple(u64);
impl Message for Quadruple {
    type Reply = u64;
}
struct Front {
    back: actor::Addr<Doubler>,
    var: Arc<tutti::DataflowVar<u64>>,
}
impl Actor for Front {}
impl Handler<Quadruple> for Front {
    async fn handle(&mut self, m: Quadruple, _: &mut Context<Self>) -> u64 {
        let once = self.back.ask(Double(m.0)).await.unwrap();
        let twice = self.back.ask(Double(once)).await.unwrap();
        let bonus = *self.var.read().await;
        twice + bonus
    }
}

#[test]
fn a_handler_can_await_asks_and_dataflow_variables() {
    let rt = rt(2);
    let _g = rt.enter();
    let var = Arc::new(tutti::DataflowVar::new());
    let front = actor::spawn(Front {
        back: actor::spawn(Doubler),
        var: var.clone(),
    });
    let pending = front.ask(Quadruple(5));
    // The bonus is bound only later: the handler waits without blocking a worker,
    // and other actors keep running meanwhile.
    let d = actor::spawn(Doubler);
    assert_eq!(d.ask_blocking(Double(4)).unwrap(), 8);
    var.set(1).unwrap();
    assert_eq!(tutti::block_on(pending).unwrap(), 21);
}

#[test]
fn one_worker_runtime_handles_nested_asks() {
    let rt = rt(1);
    let _g = rt.enter();
    let var = Arc::new(tutti::DataflowVar::new());
    var.set(0).unwrap();
    let front = actor::spawn(Front {
        back: actor::spawn(Doubler),
        var,
    });
    let sum: u64 = rt.block_on(rt.spawn(async move {
        let mut s = 0;
        for i in 0..100 {
            s += front.ask(Quadruple(i)).await.unwrap();
        }
        s
    }));
    assert_eq!(sum, 4 * (0..100).sum::<u64>());
}

// ----- dead actors -----

struct Hang;
impl Message for Hang {
    type Reply = ();
}
struct Sleeper;
impl Actor for Sleeper {}
impl Handler<Hang> for Sleeper {
    async fn handle(&mut self, _: Hang, _: &mut Context<Self>) {
        std::future::pending::<()>().await;
    }
}
impl Handler<Double> for Sleeper {
    async fn handle(&mut self, m: Double, _: &mut Context<Self>) -> u64 {
        m.0
    }
}

#[test]
fn asks_on_a_stopped_actor_error_instead_of_hanging() {
    let rt = rt(2);
    let _g = rt.enter();
    let a = actor::spawn(Sleeper);
    // One ask being handled (suspended for ever), several queued behind it.
    let first = a.ask(Hang);
    let queued: Vec<_> = (0..10).map(|i| a.ask(Double(i))).collect();
    a.stop();
    assert_eq!(tutti::block_on(first), Err(AskError::Stopped));
    for q in queued {
        assert_eq!(tutti::block_on(q), Err(AskError::Stopped));
    }
    assert_eq!(a.wait_blocking(), StopReason::Requested);
    // After the stop: immediate errors, messages given back.
    assert_eq!(a.ask_blocking(Double(1)), Err(AskError::Stopped));
    assert!(matches!(
        a.tell(Double(7)),
        Err(TellError::Stopped(Double(7)))
    ));
    assert_eq!(
        a.ask_timeout(Double(1), Duration::from_secs(60)),
        Err(AskTimeoutError::Stopped)
    );
}

#[test]
fn ask_timeout_gives_up_and_the_actor_lives_on() {
    let rt = rt(2);
    let _g = rt.enter();
    let a = actor::spawn(Sleeper);
    assert_eq!(
        a.ask_timeout(Hang, Duration::from_millis(5)),
        Err(AskTimeoutError::Timeout)
    );
    assert!(!a.is_stopped());
    a.stop();
    a.wait_blocking();
}

// ----- panics -----

struct Boom;
impl Message for Boom {
    type Reply = u32;
}
struct Fragile {
    stopped: Arc<Mutex<Option<StopReason>>>,
}
impl Actor for Fragile {
    fn stopped(&mut self, reason: &StopReason) {
        *self.stopped.lock().unwrap() = Some(reason.clone());
    }
}
impl Handler<Boom> for Fragile {
    async fn handle(&mut self, _: Boom, _: &mut Context<Self>) -> u32 {
        tutti::runtime::yield_now().await;
        panic!("injected failure")
    }
}

#[test]
fn a_panicking_handler_stops_its_actor_not_the_runtime() {
    let rt = rt(2);
    let _g = rt.enter();
    let seen = Arc::new(Mutex::new(None));
    let a = actor::spawn(Fragile {
        stopped: seen.clone(),
    });
    assert_eq!(a.ask_blocking(Boom), Err(AskError::Stopped));
    let reason = a.wait_blocking();
    assert_eq!(reason, StopReason::Panicked("injected failure".into()));
    assert_eq!(*seen.lock().unwrap(), Some(reason));
    // The runtime and other actors are fine.
    let d = actor::spawn(Doubler);
    assert_eq!(d.ask_blocking(Double(21)).unwrap(), 42);
    assert_eq!(rt.block_on(rt.spawn(async { 1 })), 1);
}

struct BadStart;
impl Actor for BadStart {
    fn started(&mut self, _: &mut Context<Self>) {
        panic!("cannot start")
    }
}

#[test]
fn a_panicking_started_hook_stops_the_actor() {
    let rt = rt(1);
    let _g = rt.enter();
    let a = actor::spawn(BadStart);
    assert_eq!(
        a.wait_blocking(),
        StopReason::Panicked("cannot start".into())
    );
}

// ----- fairness -----

struct Tick;
impl Message for Tick {
    type Reply = ();
}

/// Counts ticks; at tick `poke_at` it wakes the recorder, which runs only once this
/// actor gives its worker back.
struct Flooded {
    count: Arc<AtomicUsize>,
    poke_at: usize,
    recorder: actor::Addr<Recorder>,
}
impl Actor for Flooded {}
impl Handler<Tick> for Flooded {
    async fn handle(&mut self, _: Tick, _: &mut Context<Self>) {
        let n = self.count.fetch_add(1, Ordering::Relaxed) + 1;
        if n == self.poke_at {
            self.recorder.tell(Tick).unwrap();
        }
    }
}

/// Records how many ticks the flooded actor had handled when it got to run.
struct Recorder {
    flooded: Arc<AtomicUsize>,
    seen: Arc<AtomicUsize>,
}
impl Actor for Recorder {}
impl Handler<Tick> for Recorder {
    async fn handle(&mut self, _: Tick, _: &mut Context<Self>) {
        let now = self.flooded.load(Ordering::Relaxed);
        // Only the first visit counts.
        let _ = self
            .seen
            .compare_exchange(usize::MAX, now, Ordering::Relaxed, Ordering::Relaxed);
    }
}

#[test]
fn a_flooded_actor_does_not_starve_others_on_one_worker() {
    const FLOOD: usize = 20_000;
    let rt = rt(1);
    let _g = rt.enter();
    let count = Arc::new(AtomicUsize::new(0));
    let seen = Arc::new(AtomicUsize::new(usize::MAX));
    let recorder = actor::spawn(Recorder {
        flooded: count.clone(),
        seen: seen.clone(),
    });
    let flooded = actor::spawn(Flooded {
        count: count.clone(),
        poke_at: 10,
        recorder: recorder.clone(),
    });
    // Queue the whole flood from a task: it runs on the only worker, so the flooded
    // actor cannot start before every message is queued.
    let f = flooded.clone();
    rt.block_on(rt.spawn(async move {
        for _ in 0..FLOOD {
            f.tell(Tick).unwrap();
        }
    }));
    flooded.ask_blocking(Tick).unwrap();
    recorder.ask_blocking(Tick).unwrap();
    let when = seen.load(Ordering::Relaxed);
    // Without batches the recorder would run after the whole flood.
    assert!(
        when < FLOOD / 10,
        "the recorder ran after {when} of {FLOOD} ticks"
    );
    assert_eq!(count.load(Ordering::Relaxed), FLOOD + 1);
}
