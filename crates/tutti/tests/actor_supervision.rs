//! Supervision: monitors, links, trapped exits, supervisors with injected panics.
// This file uses tutti as a program would, with `std`'s atomics and locks: the
// loom-shim rule of `clippy.toml` is for the library's own code.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

mod watchdog;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

use tutti::actor::{
    self, Actor, ActorId, Child, ChildSpec, Context, Down, Restart, Stats, StopReason, Strategy,
    Supervisor,
};
use tutti::msg::{Handler, Message};
use tutti::Runtime;

fn rt() -> Runtime {
    Runtime::builder().workers(2).build().unwrap()
}

struct Crash;
impl Message for Crash {
    type Reply = ();
}
struct Quit;
impl Message for Quit {
    type Reply = ();
}

/// A worker that counts its starts and crashes on demand.
#[derive(Clone)]
struct Worker {
    starts: Arc<AtomicUsize>,
}
impl Actor for Worker {
    fn started(&mut self, _: &mut Context<Self>) {
        self.starts.fetch_add(1, Ordering::SeqCst);
    }
}
impl Handler<Crash> for Worker {
    async fn handle(&mut self, _: Crash, _: &mut Context<Self>) {
        panic!("injected crash")
    }
}
impl Handler<Quit> for Worker {
    async fn handle(&mut self, _: Quit, ctx: &mut Context<Self>) {
        ctx.stop();
    }
}

/// Forwards every `Down` to a channel.
struct Watcher(mpsc::Sender<Down>);
impl Actor for Watcher {}
impl Handler<Down> for Watcher {
    async fn handle(&mut self, d: Down, _: &mut Context<Self>) {
        let _ = self.0.send(d);
    }
}
struct Watch<A: Actor>(actor::Addr<A>);
impl<A: Actor> Message for Watch<A> {
    type Reply = ();
}
impl<A: Actor> Handler<Watch<A>> for Watcher {
    async fn handle(&mut self, w: Watch<A>, ctx: &mut Context<Self>) {
        ctx.monitor(&w.0);
    }
}

fn worker() -> (Worker, Arc<AtomicUsize>) {
    let starts = Arc::new(AtomicUsize::new(0));
    (
        Worker {
            starts: starts.clone(),
        },
        starts,
    )
}

#[test]
fn monitors_get_down_for_panics_stops_and_already_dead_actors() {
    let rt = rt();
    let _g = rt.enter();
    let (tx, rx) = mpsc::channel();
    let watcher = actor::spawn(Watcher(tx));
    let (w, _) = worker();
    let a = actor::spawn(w.clone());
    let b = actor::spawn(w.clone());
    watcher.ask_blocking(Watch(a.clone())).unwrap();
    b.monitor(&watcher); // the same, from outside
    a.tell(Crash).unwrap();
    let d = rx.recv().unwrap();
    assert_eq!(
        d,
        Down {
            id: a.id(),
            reason: StopReason::Panicked("injected crash".into()),
            link: false
        }
    );
    b.tell(Quit).unwrap();
    assert_eq!(rx.recv().unwrap().reason, StopReason::Normal);
    // Monitoring an actor that has already stopped reports at once.
    watcher.ask_blocking(Watch(a.clone())).unwrap();
    assert_eq!(rx.recv().unwrap().id, a.id());
    assert!(rx.try_recv().is_err());
}

#[test]
fn down_notices_overtake_queued_messages() {
    struct Gate(Arc<tutti::DataflowVar<()>>);
    impl Message for Gate {
        type Reply = ();
    }
    struct Note(u32);
    impl Message for Note {
        type Reply = ();
    }
    struct Log(mpsc::Sender<String>);
    impl Actor for Log {}
    impl Handler<Gate> for Log {
        async fn handle(&mut self, g: Gate, _: &mut Context<Self>) {
            g.0.read().await;
        }
    }
    impl Handler<Note> for Log {
        async fn handle(&mut self, n: Note, _: &mut Context<Self>) {
            self.0.send(format!("note {}", n.0)).unwrap();
        }
    }
    impl Handler<Down> for Log {
        async fn handle(&mut self, _: Down, _: &mut Context<Self>) {
            self.0.send("down".into()).unwrap();
        }
    }
    let rt = rt();
    let _g = rt.enter();
    let (tx, rx) = mpsc::channel();
    let log = actor::spawn(Log(tx));
    let (w, _) = worker();
    let target = actor::spawn(w);
    target.monitor(&log);
    let gate = Arc::new(tutti::DataflowVar::new());
    log.tell(Gate(gate.clone())).unwrap();
    for i in 0..3 {
        log.tell(Note(i)).unwrap();
    }
    target.stop();
    target.wait_blocking();
    gate.set(()).unwrap();
    let got: Vec<String> = (0..4).map(|_| rx.recv().unwrap()).collect();
    assert_eq!(got, vec!["down", "note 0", "note 1", "note 2"]);
}

// ----- links -----

struct LinkTo<A: Actor>(actor::Addr<A>);
impl<A: Actor> Message for LinkTo<A> {
    type Reply = ();
}
impl<A: Actor> Handler<LinkTo<A>> for Worker {
    async fn handle(&mut self, l: LinkTo<A>, ctx: &mut Context<Self>) {
        ctx.link(&l.0);
    }
}

#[test]
fn links_propagate_abnormal_stops_both_ways_but_not_normal_ones() {
    let rt = rt();
    let _g = rt.enter();
    let (w, _) = worker();
    // Abnormal: a crash takes the linked actor down, whichever side linked.
    let a = actor::spawn(w.clone());
    let b = actor::spawn(w.clone());
    a.ask_blocking(LinkTo(b.clone())).unwrap();
    b.tell(Crash).unwrap();
    assert_eq!(
        a.wait_blocking(),
        StopReason::Linked {
            id: b.id(),
            reason: Box::new(StopReason::Panicked("injected crash".into()))
        }
    );
    let c = actor::spawn(w.clone());
    let d = actor::spawn(w.clone());
    c.ask_blocking(LinkTo(d.clone())).unwrap();
    c.tell(Crash).unwrap();
    assert!(matches!(d.wait_blocking(), StopReason::Linked { .. }));
    // Normal: the link just goes away.
    let e = actor::spawn(w.clone());
    let f = actor::spawn(w.clone());
    e.ask_blocking(LinkTo(f.clone())).unwrap();
    f.tell(Quit).unwrap();
    f.wait_blocking();
    e.tell(Crash).unwrap(); // now e's crash has no one to take down
    e.wait_blocking();
    // Linking to an actor that already crashed stops the linker.
    let g = actor::spawn(w.clone());
    g.ask_blocking(LinkTo(b.clone())).unwrap_or(());
    assert!(matches!(g.wait_blocking(), StopReason::Linked { .. }));
}

#[test]
fn trapping_exits_turns_them_into_down_messages() {
    struct Trapper(mpsc::Sender<Down>);
    impl Actor for Trapper {
        fn started(&mut self, ctx: &mut Context<Self>) {
            ctx.trap_exits(true);
        }
    }
    impl Handler<Down> for Trapper {
        async fn handle(&mut self, d: Down, _: &mut Context<Self>) {
            self.0.send(d).unwrap();
        }
    }
    impl Handler<LinkTo<Worker>> for Trapper {
        async fn handle(&mut self, l: LinkTo<Worker>, ctx: &mut Context<Self>) {
            ctx.link(&l.0);
        }
    }
    let rt = rt();
    let _g = rt.enter();
    let (tx, rx) = mpsc::channel();
    let t = actor::spawn(Trapper(tx));
    let (w, _) = worker();
    let w = actor::spawn(w);
    t.ask_blocking(LinkTo(w.clone())).unwrap();
    w.tell(Crash).unwrap();
    let d = rx.recv().unwrap();
    assert!(d.link && d.id == w.id() && d.reason.is_abnormal());
    assert!(!t.is_stopped());
}

// ----- supervisors -----

fn child_id(sup: &actor::Addr<Supervisor>, name: &str) -> Option<ActorId> {
    sup.ask_blocking(Child::<Worker>::named(name))
        .unwrap()
        .map(|a| a.id())
}

/// Waits until `count` reaches `n` (a restarted child runs `started` in its own task,
/// some time after the supervisor spawned it).
fn reaches(count: &AtomicUsize, n: usize) {
    while count.load(Ordering::SeqCst) < n {
        std::thread::yield_now();
    }
}

/// Waits until the supervisor reports `n` restarts.
fn restarts(sup: &actor::Addr<Supervisor>, n: usize) {
    while sup.ask_blocking(Stats).unwrap().restarts < n {
        std::thread::yield_now();
    }
}

#[test]
fn one_for_one_restarts_only_the_crashed_child() {
    let rt = rt();
    let _g = rt.enter();
    let (wa, starts_a) = worker();
    let (wb, starts_b) = worker();
    let sup = Supervisor::builder()
        .strategy(Strategy::OneForOne)
        .intensity(10, Duration::from_secs(60))
        .child("a", move || wa.clone())
        .child("b", move || wb.clone())
        .spawn();
    let a0 = child_id(&sup, "a").unwrap();
    let b0 = child_id(&sup, "b").unwrap();
    for round in 1..=3 {
        let a = sup
            .ask_blocking(Child::<Worker>::named("a"))
            .unwrap()
            .unwrap();
        a.tell(Crash).unwrap();
        restarts(&sup, round);
    }
    reaches(&starts_a, 4);
    assert_eq!(starts_a.load(Ordering::SeqCst), 4);
    assert_eq!(starts_b.load(Ordering::SeqCst), 1);
    assert_ne!(child_id(&sup, "a").unwrap(), a0);
    assert_eq!(child_id(&sup, "b").unwrap(), b0);
    let stats = sup.ask_blocking(Stats).unwrap();
    assert_eq!(stats.restarts, 3);
    assert_eq!(stats.children[0].2, 3);
    assert_eq!(stats.children[1].2, 0);
    // Stopping the supervisor stops its children.
    let b = sup
        .ask_blocking(Child::<Worker>::named("b"))
        .unwrap()
        .unwrap();
    sup.stop();
    sup.wait_blocking();
    b.wait_blocking();
}

#[test]
fn one_for_all_restarts_every_child() {
    let rt = rt();
    let _g = rt.enter();
    let (wa, starts_a) = worker();
    let (wb, starts_b) = worker();
    let sup = Supervisor::builder()
        .strategy(Strategy::OneForAll)
        .intensity(10, Duration::from_secs(60))
        .child("a", move || wa.clone())
        .child("b", move || wb.clone())
        .spawn();
    let b0 = sup
        .ask_blocking(Child::<Worker>::named("b"))
        .unwrap()
        .unwrap();
    let a0 = sup
        .ask_blocking(Child::<Worker>::named("a"))
        .unwrap()
        .unwrap();
    a0.tell(Crash).unwrap();
    restarts(&sup, 1);
    // The healthy sibling was stopped (and waited for) before the restart.
    assert_eq!(b0.wait_blocking(), StopReason::Requested);
    reaches(&starts_a, 2);
    reaches(&starts_b, 2);
    assert_eq!(starts_a.load(Ordering::SeqCst), 2);
    assert_eq!(starts_b.load(Ordering::SeqCst), 2);
    assert_ne!(child_id(&sup, "b").unwrap(), b0.id());
}

#[test]
fn transient_and_temporary_children() {
    let rt = rt();
    let _g = rt.enter();
    let (wt, starts_t) = worker();
    let (wp, starts_p) = worker();
    let sup = Supervisor::builder()
        .child_spec(ChildSpec::new("transient", move || wt.clone()).restart(Restart::Transient))
        .child_spec(ChildSpec::new("temporary", move || wp.clone()).restart(Restart::Temporary))
        .spawn();
    // A normal stop of a transient child: not restarted.
    let t = sup
        .ask_blocking(Child::<Worker>::named("transient"))
        .unwrap()
        .unwrap();
    t.tell(Quit).unwrap();
    t.wait_blocking();
    // A crash of a temporary child: not restarted either.
    let p = sup
        .ask_blocking(Child::<Worker>::named("temporary"))
        .unwrap()
        .unwrap();
    p.tell(Crash).unwrap();
    p.wait_blocking();
    // Let the supervisor see both downs (a question is answered after them).
    while child_id(&sup, "transient").is_some() || child_id(&sup, "temporary").is_some() {
        std::thread::yield_now();
    }
    assert_eq!(sup.ask_blocking(Stats).unwrap().restarts, 0);
    assert_eq!(starts_t.load(Ordering::SeqCst), 1);
    assert_eq!(starts_p.load(Ordering::SeqCst), 1);
}

#[test]
fn exceeding_the_restart_intensity_stops_the_supervisor() {
    let rt = rt();
    let _g = rt.enter();
    let (w, starts) = worker();
    let (other, _) = worker();
    let (tx, rx) = mpsc::channel();
    let watcher = actor::spawn(Watcher(tx));
    let sup = Supervisor::builder()
        .intensity(2, Duration::from_secs(3600))
        .backoff(Duration::from_micros(10), Duration::from_micros(40))
        .child("w", move || w.clone())
        .child("other", move || other.clone())
        .spawn();
    watcher.ask_blocking(Watch(sup.clone())).unwrap();
    let other = sup
        .ask_blocking(Child::<Worker>::named("other"))
        .unwrap()
        .unwrap();
    for round in 1..=2 {
        let w = sup
            .ask_blocking(Child::<Worker>::named("w"))
            .unwrap()
            .unwrap();
        w.tell(Crash).unwrap();
        restarts(&sup, round);
    }
    let w = sup
        .ask_blocking(Child::<Worker>::named("w"))
        .unwrap()
        .unwrap();
    w.tell(Crash).unwrap(); // the third restart within the window is one too many
    let reason = sup.wait_blocking();
    assert_eq!(
        reason,
        StopReason::RestartLimit {
            child: "w".into(),
            max_restarts: 2,
            window: Duration::from_secs(3600)
        }
    );
    assert!(reason.is_abnormal());
    reaches(&starts, 3);
    assert_eq!(starts.load(Ordering::SeqCst), 3);
    // Its other child was stopped first, and its monitor heard about it.
    assert!(other.is_stopped());
    assert_eq!(rx.recv().unwrap().reason, reason);
}

/// Records when each incarnation started.
#[derive(Clone)]
struct Timed(Arc<std::sync::Mutex<Vec<std::time::Instant>>>);
impl Actor for Timed {
    fn started(&mut self, _: &mut Context<Self>) {
        self.0.lock().unwrap().push(std::time::Instant::now());
    }
}
impl Handler<Crash> for Timed {
    async fn handle(&mut self, _: Crash, _: &mut Context<Self>) {
        panic!("injected crash")
    }
}

#[test]
fn restarts_back_off_exponentially_up_to_the_cap() {
    const MIN: Duration = Duration::from_millis(20);
    let rt = rt();
    let _g = rt.enter();
    let starts = Arc::new(std::sync::Mutex::new(Vec::new()));
    let t = Timed(starts.clone());
    let sup = Supervisor::builder()
        .intensity(10, Duration::from_secs(3600))
        .backoff(MIN, 2 * MIN)
        .child("t", move || t.clone())
        .spawn();
    // Only lower bounds: a restart never comes before its backoff has passed
    // (min, then doubled, then capped at max).
    let mut crashed_at = Vec::new();
    for round in 1..=3 {
        let t = sup
            .ask_blocking(Child::<Timed>::named("t"))
            .unwrap()
            .unwrap();
        crashed_at.push(std::time::Instant::now());
        t.tell(Crash).unwrap();
        restarts(&sup, round);
        // The new incarnation runs `started` in its own task, a little later.
        while starts.lock().unwrap().len() < round + 1 {
            std::thread::yield_now();
        }
    }
    let starts = starts.lock().unwrap().clone();
    assert_eq!(starts.len(), 4);
    for (k, want) in [MIN, 2 * MIN, 2 * MIN].into_iter().enumerate() {
        let waited = starts[k + 1] - crashed_at[k];
        assert!(
            waited >= want,
            "restart {} after {waited:?} < {want:?}",
            k + 1
        );
    }
    sup.stop();
    sup.wait_blocking();
}
