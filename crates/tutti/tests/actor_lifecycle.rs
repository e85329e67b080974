//! Lifecycle: hooks, the stop rules, system shutdown, runtime drop.
// This file uses tutti as a program would, with `std`'s atomics and locks: the
// loom-shim rule of `clippy.toml` is for the library's own code.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

mod watchdog;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use tutti::actor::{self, Actor, ActorSystem, AskError, Context, StopReason};
use tutti::msg::{Handler, Message};
use tutti::Runtime;

fn rt(workers: usize) -> Runtime {
    Runtime::builder().workers(workers).build().unwrap()
}

type Journal = Arc<Mutex<Vec<String>>>;

struct Traced {
    name: &'static str,
    journal: Journal,
}
impl Actor for Traced {
    fn started(&mut self, _: &mut Context<Self>) {
        self.journal
            .lock()
            .unwrap()
            .push(format!("{} started", self.name));
    }
    fn stopped(&mut self, reason: &StopReason) {
        self.journal
            .lock()
            .unwrap()
            .push(format!("{} stopped: {reason}", self.name));
    }
}

struct Ping;
impl Message for Ping {
    type Reply = ();
}
impl Handler<Ping> for Traced {
    async fn handle(&mut self, _: Ping, _: &mut Context<Self>) {
        self.journal
            .lock()
            .unwrap()
            .push(format!("{} ping", self.name));
    }
}

struct StopMe;
impl Message for StopMe {
    type Reply = &'static str;
}
impl Handler<StopMe> for Traced {
    async fn handle(&mut self, _: StopMe, ctx: &mut Context<Self>) -> &'static str {
        ctx.stop();
        "bye" // the reply of the stopping handler still arrives
    }
}

fn traced(name: &'static str) -> (Traced, Journal) {
    let journal = Journal::default();
    (
        Traced {
            name,
            journal: journal.clone(),
        },
        journal,
    )
}

#[test]
fn explicit_stop_runs_hooks_once_and_overtakes_queued_messages() {
    let rt = rt(1);
    let _g = rt.enter();
    let (t, journal) = traced("a");
    let a = actor::spawn(t);
    a.ask_blocking(Ping).unwrap();
    // From a task on the single worker: queue pings, then stop, before the actor runs.
    let results = rt.block_on(rt.spawn({
        let a = a.clone();
        async move {
            let asks: Vec<_> = (0..3).map(|_| a.ask(Ping)).collect();
            a.stop();
            let mut out = Vec::new();
            for q in asks {
                out.push(q.await);
            }
            out
        }
    }));
    assert_eq!(results, vec![Err(AskError::Stopped); 3]);
    assert_eq!(a.wait_blocking(), StopReason::Requested);
    a.stop(); // a second stop is harmless
    assert_eq!(
        *journal.lock().unwrap(),
        vec!["a started", "a ping", "a stopped: stop requested"]
    );
}

#[test]
fn ctx_stop_ends_the_actor_after_the_current_handler() {
    let rt = rt(2);
    let _g = rt.enter();
    let (t, journal) = traced("b");
    let b = actor::spawn(t);
    let bye = b.ask(StopMe);
    let after = b.ask(Ping);
    assert_eq!(tutti::block_on(bye), Ok("bye"));
    assert_eq!(tutti::block_on(after), Err(AskError::Stopped));
    assert_eq!(b.wait_blocking(), StopReason::Normal);
    assert_eq!(
        journal.lock().unwrap().last().unwrap(),
        "b stopped: stopped itself"
    );
}

#[test]
fn the_actor_stops_when_the_last_address_is_dropped_and_the_mailbox_is_empty() {
    let rt = rt(2);
    let _g = rt.enter();
    let (t, journal) = traced("c");
    let c = actor::spawn(t);
    let weak = c.downgrade();
    let c2 = c.clone();
    for _ in 0..100 {
        c.tell(Ping).unwrap();
    }
    drop(c);
    assert!(weak.upgrade().is_some(), "one address left");
    let r = c2.recipient::<Ping>();
    drop(c2);
    r.tell(Ping).unwrap();
    drop(r);
    // Every queued message is handled before the stop.
    let reason = loop {
        let j = journal.lock().unwrap();
        if let Some(last) = j.last() {
            if last.contains("stopped") {
                break last.clone();
            }
        }
        drop(j);
        std::thread::yield_now();
    };
    assert_eq!(reason, "c stopped: no address left");
    let pings = journal
        .lock()
        .unwrap()
        .iter()
        .filter(|l| l.ends_with("ping"))
        .count();
    assert_eq!(pings, 101);
    assert!(weak.upgrade().is_none());
}

#[test]
fn an_actor_holding_its_own_address_keeps_running() {
    struct LetGo;
    impl Message for LetGo {
        type Reply = ();
    }
    struct Selfish(Option<actor::Addr<Selfish>>, Arc<Mutex<Option<StopReason>>>);
    impl Actor for Selfish {
        fn started(&mut self, ctx: &mut Context<Self>) {
            self.0 = Some(ctx.addr());
        }
        fn stopped(&mut self, reason: &StopReason) {
            *self.1.lock().unwrap() = Some(reason.clone());
        }
    }
    impl Handler<LetGo> for Selfish {
        async fn handle(&mut self, _: LetGo, _: &mut Context<Self>) {
            self.0 = None;
        }
    }
    let rt = rt(2);
    let _g = rt.enter();
    let reason = Arc::new(Mutex::new(None));
    let s = actor::spawn(Selfish(None, reason.clone()));
    let weak = s.downgrade();
    s.ask_blocking(LetGo).unwrap();
    drop(s);
    while reason.lock().unwrap().is_none() {
        std::thread::yield_now();
    }
    assert_eq!(*reason.lock().unwrap(), Some(StopReason::NoAddrs));
    assert!(weak.upgrade().is_none());

    // Holding on: dropping every outside address does not stop it.
    let reason = Arc::new(Mutex::new(None));
    let s = actor::spawn(Selfish(None, reason.clone()));
    s.ask_blocking(Ping2).unwrap();
    let weak = s.downgrade();
    drop(s);
    std::thread::sleep(std::time::Duration::from_millis(2));
    let s = weak.upgrade().expect("it holds its own address");
    assert!(reason.lock().unwrap().is_none());
    s.tell(LetGo).unwrap();
    drop(s);
    while reason.lock().unwrap().is_none() {
        std::thread::yield_now();
    }
    assert_eq!(*reason.lock().unwrap(), Some(StopReason::NoAddrs));

    struct Ping2;
    impl Message for Ping2 {
        type Reply = ();
    }
    impl Handler<Ping2> for Selfish {
        async fn handle(&mut self, _: Ping2, _: &mut Context<Self>) {}
    }
}

// ----- system shutdown -----

struct Hold;
impl Message for Hold {
    type Reply = ();
}
struct Member {
    stops: Arc<AtomicUsize>,
}
impl Actor for Member {
    fn stopped(&mut self, reason: &StopReason) {
        assert_eq!(*reason, StopReason::Shutdown);
        self.stops.fetch_add(1, Ordering::SeqCst);
    }
}
impl Handler<Hold> for Member {
    async fn handle(&mut self, _: Hold, _: &mut Context<Self>) {
        std::future::pending::<()>().await;
    }
}
struct Spawn;
impl Message for Spawn {
    type Reply = actor::Addr<Member>;
}
impl Handler<Spawn> for Member {
    async fn handle(&mut self, _: Spawn, ctx: &mut Context<Self>) -> actor::Addr<Member> {
        // A child goes to the parent's system.
        ctx.spawn(Member {
            stops: self.stops.clone(),
        })
    }
}

#[test]
fn shutdown_stops_every_actor_runs_every_hook_and_errors_pending_asks() {
    const N: usize = 200;
    let rt = rt(2);
    let _g = rt.enter();
    let system = ActorSystem::new();
    let stops = Arc::new(AtomicUsize::new(0));
    let members: Vec<_> = (0..N)
        .map(|_| {
            system.spawn(Member {
                stops: stops.clone(),
            })
        })
        .collect();
    // Some are suspended in a handler that never finishes, with questions queued.
    let mut pending = Vec::new();
    for m in members.iter().step_by(10) {
        pending.push(m.ask(Hold));
        pending.push(m.ask(Hold));
    }
    // Children spawned by members belong to the same system.
    let children: Vec<_> = members
        .iter()
        .skip(1)
        .take(5)
        .map(|m| m.ask_blocking(Spawn).unwrap())
        .collect();
    assert_eq!(system.live(), N + 5);
    // An actor outside the system is not touched.
    let outsider = ActorSystem::new().spawn(Member {
        stops: Arc::new(AtomicUsize::new(0)),
    });

    system.shutdown_blocking();

    assert_eq!(system.live(), 0);
    assert_eq!(stops.load(Ordering::SeqCst), N + 5, "every stop hook ran");
    for p in pending {
        assert_eq!(tutti::block_on(p), Err(AskError::Stopped));
    }
    assert!(members.iter().chain(&children).all(|m| m.is_stopped()));
    assert!(!outsider.is_stopped());
    // The system accepts new actors afterwards.
    let again = system.spawn(Member {
        stops: stops.clone(),
    });
    assert!(!again.is_stopped());
    system.shutdown_blocking();
    assert_eq!(stops.load(Ordering::SeqCst), N + 6);
}

#[test]
fn concurrent_spawns_during_shutdown_are_all_stopped() {
    let rt = rt(2);
    let _g = rt.enter();
    let system = ActorSystem::new();
    let stops = Arc::new(AtomicUsize::new(0));
    let spawned = Arc::new(AtomicUsize::new(0));
    let addrs = Arc::new(Mutex::new(Vec::new()));
    std::thread::scope(|s| {
        for _ in 0..2 {
            let (system, stops, spawned, addrs) = (
                system.clone(),
                stops.clone(),
                spawned.clone(),
                addrs.clone(),
            );
            let rt = &rt;
            s.spawn(move || {
                let _g = rt.enter();
                for _ in 0..300 {
                    let a = system.spawn(Member {
                        stops: stops.clone(),
                    });
                    spawned.fetch_add(1, Ordering::SeqCst);
                    addrs.lock().unwrap().push(a);
                }
            });
        }
        for _ in 0..3 {
            system.shutdown_blocking();
        }
    });
    system.shutdown_blocking();
    assert_eq!(system.live(), 0);
    let addrs = addrs.lock().unwrap();
    assert_eq!(addrs.len(), spawned.load(Ordering::SeqCst));
    assert!(addrs.iter().all(|a| a.is_stopped()));
    // Every actor ran its stop hook exactly once, even those stopped before they ran.
    assert_eq!(stops.load(Ordering::SeqCst), addrs.len());
}

#[test]
fn dropping_the_runtime_runs_every_stop_hook() {
    let stops = Arc::new(AtomicUsize::new(0));
    let (addrs, pending) = {
        let rt = rt(2);
        let _g = rt.enter();
        let system = ActorSystem::new();
        let addrs: Vec<_> = (0..50)
            .map(|_| {
                system.spawn(Member {
                    stops: stops.clone(),
                })
            })
            .collect();
        let pending = addrs[0].ask(Hold);
        for a in &addrs[1..] {
            a.tell(Hold).unwrap();
        }
        // Every actor has taken its Hold: it started and is suspended in the handler.
        while addrs.iter().any(|a| a.mailbox_len() > 0) {
            std::thread::yield_now();
        }
        drop(_g);
        drop(rt);
        (addrs, pending)
    };
    assert!(addrs.iter().all(|a| a.is_stopped()));
    assert_eq!(tutti::block_on(pending), Err(AskError::Stopped));
    // Every actor had started, so every stop hook ran.
    assert_eq!(stops.load(Ordering::SeqCst), 50);
    for a in &addrs {
        assert_eq!(a.wait_blocking(), StopReason::Shutdown);
    }
}
