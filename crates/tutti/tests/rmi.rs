//! The RMI test suite: the same bodies run on the in-process transport (plain
//! `cargo test`, several shapes) and on MPI (`.ci/run` runs this binary under
//! `mpirun -n 2`, `-n 4`, and `-n 2` with two locations per rank: one location
//! per rank, and ranks × threads). Across ranks requests are serialized; within
//! a rank they move as typed values; the bodies are the same.
//!
//! Every body checks its own results on every location and panics on a
//! mismatch; under MPI a panic takes the whole job down with a non-zero exit
//! status. (The error paths that end a run — the nesting limit, a deadlocking
//! chain, malformed bytes — are in `rmi_abort.rs`.)

mod common;
mod watchdog;

use serde::{Deserialize, Serialize};
use tutti::msg::{Dispatch, Handler, Message, Object, RegistryError, Remote};
use tutti::rmi::{self, Handle, Rmi, RmiError};
use tutti::world::World;

type Body = fn(&World);

const BODIES: &[(&str, Body)] = &[
    ("atomic_counters_from_every_location", counters),
    ("issue_order_between_every_pair", issue_order),
    ("nested_sync_rmi_chains", nested_chains),
    ("busy_representative_defers", busy_representative),
    (
        "broadcast_and_reduce_with_user_operations",
        broadcast_reduce,
    ),
    ("fence_with_multi_hop_chains", fence_chains),
    ("master_worker_with_only_a_fence", master_worker),
    ("fence_separates_phases", fence_phases),
    ("registration_mismatch", registration_mismatch),
    ("update_and_unregister", update_unregister),
    ("large_arguments_and_replies", large_values),
    ("ping_pong_with_wait", ping_pong_with_wait),
    ("wait_counts_requests_that_already_ran", wait_after_poll),
    (
        "plain_messages_beside_rmi_stay_for_the_program",
        plain_beside_rmi,
    ),
];

fn main() {
    common::run_suite(
        "rmi suite",
        &[(1, 1, 1), (4, 2, 1), (3, 2, 8), (5, 1, 64)],
        run_all,
    );
}

fn run_all(world: &World) {
    for (name, body) in BODIES {
        body(world);
        if world.rank() == 0 {
            println!("  ok {name}");
        }
    }
}

/// `Remote` for a test message, named after it.
macro_rules! remote {
    ($($t:ident),*) => {$(
        impl Remote for $t {
            const NAME: &'static str = concat!("tests.rmi.", stringify!($t));
        }
    )*};
}

/// `Object` with `Context = $ctx`, accepting `$m…` from other locations.
macro_rules! object {
    ($o:ty, $ctx:ty, [$($m:ty),*]) => {
        impl Object for $o {
            type Context = $ctx;
            fn remote(table: &mut Dispatch<Self>) -> Result<(), RegistryError> {
                table$(.register::<$m>()?)*;
                Ok(())
            }
        }
    };
}

// ---- a counter ----

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
/// Adds and returns the new value (atomic only if methods are).
#[derive(Serialize, Deserialize)]
struct FetchAdd(u64);
impl Message for FetchAdd {
    type Reply = u64;
}
/// "location:value", for a non-commutative reduction.
#[derive(Serialize, Deserialize)]
struct Name;
impl Message for Name {
    type Reply = String;
}
remote!(Add, Get, FetchAdd, Name);

#[derive(Default)]
struct Counter(u64);
object!(Counter, Rmi, [Add, Get, FetchAdd, AskBack, Hop]);

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
impl Handler<FetchAdd> for Counter {
    async fn handle(&mut self, m: FetchAdd, _: &mut Rmi) -> u64 {
        // Read, yield to the location's other work (none may interleave), write.
        let v = self.0;
        tutti::runtime::yield_now().await;
        self.0 = v + m.0;
        self.0
    }
}
impl Handler<Name> for Counter {
    async fn handle(&mut self, _: Name, ctx: &mut Rmi) -> String {
        format!("{}:{}", ctx.id(), self.0)
    }
}

fn counters(w: &World) {
    rmi::run(w, |loc| async move {
        let h = loc.register(Counter::default()).await.unwrap();
        let n = loc.count() as u64;
        let mut asked = 0;
        for i in 0..300u64 {
            for dest in 0..loc.count() {
                loc.async_rmi(dest, &h, Add(1)).await;
            }
            if i % 7 == 0 {
                let dest = (i as usize + loc.id()) % loc.count();
                let after = loc.sync_rmi(dest, &h, FetchAdd(1)).await;
                assert!(after >= 1);
                asked += 1;
            }
        }
        loc.fence().await;
        let total = loc.reduce_rmi(&h, Get, |a, b| a + b).await;
        assert_eq!(total, 300 * n * n + asked * n, "location {}", loc.id());
    });
}

// ---- ordering ----

#[derive(Serialize, Deserialize)]
struct Record(usize, u64);
impl Message for Record {
    type Reply = ();
}
remote!(Record);
#[derive(Default)]
struct Log(Vec<(usize, u64)>);
object!(Log, (), [Record]);
impl Handler<Record> for Log {
    async fn handle(&mut self, m: Record, _: &mut ()) {
        self.0.push((m.0, m.1));
    }
}

fn issue_order(w: &World) {
    rmi::run(w, |mut loc| async move {
        let h = loc.register(Log::default()).await.unwrap();
        let me = loc.id();
        for seq in 0..300u64 {
            let dest = (seq as usize * 7 + me) % loc.count();
            loc.async_rmi(dest, &h, Record(me, seq)).await;
            if seq % 50 == 0 {
                loc.poll().await;
            }
        }
        loc.fence().await;
        let len = {
            let log = loc.local(&h);
            let mut last = vec![None; loc_count(&log)];
            for &(src, seq) in &log.0 {
                assert!(last[src] < Some(seq), "{src}: {:?} then {seq}", last[src]);
                last[src] = Some(seq);
            }
            log.0.len() as u64
        };
        let total = loc.world().all_reduce(len, |a, b| a + b).await;
        assert_eq!(total, 300 * loc.count() as u64);
    });
}

/// How many senders a log can name (its largest sender + 1).
fn loc_count(log: &Log) -> usize {
    log.0.iter().map(|&(s, _)| s + 1).max().unwrap_or(0)
}

// ---- nested sync_rmi chains ----

/// Passes a question on to the next location and the next object, until
/// `hops` is 0; answers the number of methods it went through.
#[derive(Serialize, Deserialize)]
struct Relay {
    hops: u32,
}
impl Message for Relay {
    type Reply = u32;
}
remote!(Relay);
struct Ring {
    level: usize,
    all: Vec<Handle<Ring>>,
}
object!(Ring, Rmi, [Relay]);
impl Handler<Relay> for Ring {
    async fn handle(&mut self, m: Relay, ctx: &mut Rmi) -> u32 {
        if m.hops == 0 {
            return 1;
        }
        let h = self.all[(self.level + 1) % self.all.len()];
        let next = (ctx.id() + 1) % ctx.count();
        1 + ctx.sync_rmi(next, &h, Relay { hops: m.hops - 1 }).await
    }
}

fn nested_chains(w: &World) {
    // One object per hop: no (location, object) twice in the chain, which
    // passes through every location several times (nested there).
    const HOPS: u32 = 10;
    rmi::run(w, |mut loc| async move {
        let mut all = Vec::new();
        for level in 0..=HOPS as usize {
            let ring = Ring {
                level,
                all: Vec::new(),
            };
            all.push(loc.register(ring).await.unwrap());
        }
        for h in &all {
            loc.local(h).all = all.clone();
        }
        loc.barrier().await;
        // Location 0 starts the chain; the others serve it inside the fence
        // (chains started at once by several locations could cross: a method
        // nested above another on one location's stack must return first).
        if loc.id() == 0 {
            let start = 1 % loc.count();
            let through = loc.sync_rmi(start, &all[0], Relay { hops: HOPS }).await;
            assert_eq!(through, HOPS + 1);
        }
        loc.fence().await;
    });
}

// ---- deferral: a busy representative ----

/// On location 0: asks location 1 to add to this very counter, and reads it.
#[derive(Serialize, Deserialize)]
struct AskBack(Handle<Counter>, Handle<Pinger>);
impl Message for AskBack {
    type Reply = u64;
}
#[derive(Serialize, Deserialize)]
struct Poke(Handle<Counter>);
impl Message for Poke {
    type Reply = ();
}
remote!(AskBack, Poke);
impl Handler<AskBack> for Counter {
    async fn handle(&mut self, m: AskBack, ctx: &mut Rmi) -> u64 {
        let before = self.0;
        ctx.sync_rmi(1, &m.1, Poke(m.0)).await;
        // The Add the poke sent is deferred until this method returns.
        assert_eq!(self.0, before);
        self.0
    }
}
struct Pinger;
object!(Pinger, Rmi, [Poke]);
impl Handler<Poke> for Pinger {
    async fn handle(&mut self, m: Poke, ctx: &mut Rmi) {
        ctx.async_rmi(0, &m.0, Add(5)).await;
        ctx.world().flush();
    }
}

fn busy_representative(w: &World) {
    if w.locations() < 2 {
        return;
    }
    rmi::run(w, |loc| async move {
        let c = loc.register(Counter::default()).await.unwrap();
        let p = loc.register(Pinger).await.unwrap();
        if loc.id() == 0 {
            assert_eq!(loc.sync_rmi(0, &c, AskBack(c, p)).await, 0);
        }
        loc.fence().await;
        assert_eq!(loc.sync_rmi(0, &c, Get).await, 5);
    });
}

// ---- collectives ----

fn broadcast_reduce(w: &World) {
    rmi::run(w, |loc| async move {
        let h = loc.register(Counter::default()).await.unwrap();
        loc.broadcast_rmi(&h, Add(loc.id() as u64 + 1)).await;
        loc.fence().await;
        let n = loc.count() as u64;
        let sum = n * (n + 1) / 2;
        assert_eq!(loc.reduce_rmi(&h, Get, |a, b| a.max(b)).await, sum);
        // Not commutative: combined in location order.
        let names = loc.reduce_rmi(&h, Name, |a, b| a + "," + &b).await;
        let want: Vec<String> = (0..loc.count()).map(|i| format!("{i}:{sum}")).collect();
        assert_eq!(names, want.join(","));
    });
}

// ---- fence ----

/// Forwards itself around the ring `left` more times, counting visits.
#[derive(Serialize, Deserialize)]
struct Hop {
    left: u32,
    me: Handle<Counter>,
}
impl Message for Hop {
    type Reply = ();
}
remote!(Hop);
impl Handler<Hop> for Counter {
    async fn handle(&mut self, m: Hop, ctx: &mut Rmi) {
        self.0 += 1;
        if m.left > 0 {
            let next = (ctx.id() + 1) % ctx.count();
            let hop = Hop {
                left: m.left - 1,
                me: m.me,
            };
            ctx.async_rmi(next, &m.me, hop).await;
        }
    }
}

fn fence_chains(w: &World) {
    rmi::run(w, |loc| async move {
        let h = loc.register(Counter::default()).await.unwrap();
        let n = loc.count() as u64;
        // Every location starts a chain; buffered requests count too.
        loc.async_rmi(loc.id(), &h, Hop { left: 200, me: h }).await;
        loc.fence().await;
        assert_eq!(loc.reduce_rmi(&h, Get, |a, b| a + b).await, 201 * n);
        // A second round after the first fence, started elsewhere.
        let next = (loc.id() + 1) % loc.count();
        loc.async_rmi(next, &h, Hop { left: 10, me: h }).await;
        loc.fence().await;
        assert_eq!(loc.reduce_rmi(&h, Get, |a, b| a + b).await, 212 * n);
    });
}

// master–worker (ARMI §III.D): the master hands out work with async_rmi and
// only fences; workers send results back from their methods.
#[derive(Serialize, Deserialize)]
struct Work(u64, Handle<Collector>);
impl Message for Work {
    type Reply = ();
}
#[derive(Serialize, Deserialize)]
struct Done(u64);
impl Message for Done {
    type Reply = ();
}
remote!(Work, Done);
struct Worker;
object!(Worker, Rmi, [Work]);
impl Handler<Work> for Worker {
    async fn handle(&mut self, m: Work, ctx: &mut Rmi) {
        ctx.async_rmi(0, &m.1, Done(m.0 * m.0)).await;
    }
}
#[derive(Default)]
struct Collector(u64, u64);
object!(Collector, (), [Done]);
impl Handler<Done> for Collector {
    async fn handle(&mut self, m: Done, _: &mut ()) {
        self.0 += m.0;
        self.1 += 1;
    }
}

fn master_worker(w: &World) {
    if w.locations() < 2 {
        return;
    }
    rmi::run(w, |mut loc| async move {
        let work = loc.register(Worker).await.unwrap();
        let col = loc.register(Collector::default()).await.unwrap();
        if loc.id() == 0 {
            for i in 0..1000u64 {
                let dest = 1 + (i as usize % (loc.count() - 1));
                loc.async_rmi(dest, &work, Work(i, col)).await;
            }
        }
        loc.fence().await;
        let me = loc.id();
        let c = loc.local(&col);
        if me == 0 {
            let want: u64 = (0..1000u64).map(|i| i * i).sum();
            assert_eq!((c.0, c.1), (want, 1000));
        } else {
            assert_eq!((c.0, c.1), (0, 0));
        }
    });
}

/// A representative that knows which phase its location is in.
#[derive(Default)]
struct Phased {
    phase: u64,
    seen: u64,
}

#[derive(Serialize, Deserialize)]
struct InPhase(u64);
impl Message for InPhase {
    type Reply = ();
}
impl Remote for InPhase {
    const NAME: &'static str = "test.InPhase";
}

impl Object for Phased {
    type Context = Rmi;
    fn remote(t: &mut Dispatch<Self>) -> Result<(), RegistryError> {
        t.register::<InPhase>()?;
        Ok(())
    }
}

impl Handler<InPhase> for Phased {
    async fn handle(&mut self, m: InPhase, ctx: &mut Rmi) {
        assert_eq!(
            m.0,
            self.phase,
            "location {}: a phase-{} request ran before its phase-{} fence returned",
            ctx.id(),
            m.0,
            self.phase
        );
        self.seen += 1;
    }
}

/// `fence` separates phases: a request issued after a location's fence
/// returned never executes on another location before that location's own
/// fence of the same phase has returned (the code between two fences sees
/// only its own phase's requests).
fn fence_phases(w: &World) {
    const PHASES: u64 = 100;
    rmi::run(w, |mut loc| async move {
        let h = loc.register(Phased::default()).await.unwrap();
        let n = loc.count();
        for phase in 0..PHASES {
            loc.local(&h).phase = phase;
            for k in 1..=2 {
                loc.async_rmi((loc.id() + k) % n, &h, InPhase(phase)).await;
            }
            loc.fence().await;
        }
        assert_eq!(loc.local(&h).seen, 2 * PHASES);
    });
}

// ---- registration ----

fn registration_mismatch(w: &World) {
    if w.locations() < 2 {
        return;
    }
    rmi::run(w, |loc| async move {
        let first = loc.register(Counter::default()).await.map(|h| h.id());
        assert_eq!(first, Ok(0));
        let second = if loc.id() == 1 {
            loc.register(Log::default()).await.map(|h| h.id())
        } else {
            loc.register(Counter::default()).await.map(|h| h.id())
        };
        let e = second.unwrap_err();
        assert!(matches!(e, RmiError::RegistrationMismatch { index: 1, .. }));
        let text = e.to_string();
        assert!(text.contains("Counter") && text.contains("Log"), "{text}");
        let third = loc.register(Counter::default()).await.map(|h| h.id());
        assert_eq!(third, Ok(2), "registration goes on after a mismatch");
    });
}

fn update_unregister(w: &World) {
    rmi::run(w, |mut loc| async move {
        let next = (loc.id() + 1) % loc.count();
        let h = loc.register(Counter(1)).await.unwrap();
        loc.async_rmi(next, &h, Add(10)).await;
        loc.fence().await;
        let old = loc.update(&h, Counter(100 + loc.id() as u64));
        assert_eq!(old.0, 11);
        loc.barrier().await;
        assert_eq!(loc.sync_rmi(next, &h, Get).await, 100 + next as u64);
        loc.fence().await;
        assert_eq!(loc.unregister(h).0, 100 + loc.id() as u64);
    });
}

// ---- values larger than an aggregation buffer ----

/// Appends its values and answers the sum of everything appended.
#[derive(Serialize, Deserialize)]
struct Append(Vec<u64>, String);
impl Message for Append {
    type Reply = (u64, String);
}
remote!(Append);
#[derive(Default)]
struct Bag(Vec<u64>);
object!(Bag, (), [Append]);
impl Handler<Append> for Bag {
    async fn handle(&mut self, m: Append, _: &mut ()) -> (u64, String) {
        self.0.extend(m.0);
        (self.0.iter().sum(), m.1.to_uppercase())
    }
}

fn large_values(w: &World) {
    rmi::run(w, |loc| async move {
        let h = loc.register(Bag::default()).await.unwrap();
        let next = (loc.id() + 1) % loc.count();
        let values: Vec<u64> = (0..100_000).collect();
        let want: u64 = values.iter().sum();
        let (sum, text) = loc
            .sync_rmi(next, &h, Append(values, "x".repeat(70_000)))
            .await;
        assert!(sum >= want);
        assert_eq!(text, "X".repeat(70_000));
        loc.fence().await;
        let total = loc.reduce_rmi(&h, Get2, |a, b| a + b).await;
        assert_eq!(total, want * loc.count() as u64);
    });
}

#[derive(Serialize, Deserialize)]
struct Get2;
impl Message for Get2 {
    type Reply = u64;
}
remote!(Get2);
impl Handler<Get2> for Bag {
    async fn handle(&mut self, _: Get2, _: &mut ()) -> u64 {
        self.0.iter().sum()
    }
}

// ---- an async_rmi chain driven by `wait` ----

/// Hits the ball back to the other player until `left` is 0.
#[derive(Serialize, Deserialize)]
struct Ball {
    left: u32,
    me: Handle<Player>,
}
impl Message for Ball {
    type Reply = ();
}
remote!(Ball);
#[derive(Default)]
struct Player(u32);
object!(Player, Rmi, [Ball]);
impl Handler<Ball> for Player {
    async fn handle(&mut self, m: Ball, ctx: &mut Rmi) {
        self.0 += 1;
        if m.left > 0 {
            let other = 1 - ctx.id();
            let ball = Ball {
                left: m.left - 1,
                me: m.me,
            };
            ctx.async_rmi(other, &m.me, ball).await;
        }
    }
}

fn ping_pong_with_wait(w: &World) {
    if w.locations() < 2 {
        return;
    }
    const HITS: u32 = 200;
    rmi::run(w, |mut loc| async move {
        let h = loc.register(Player::default()).await.unwrap();
        loc.barrier().await;
        let me = loc.id();
        if me < 2 {
            if me == 0 {
                loc.async_rmi(1, &h, Ball { left: HITS, me: h }).await;
            }
            // Location 1 receives the hits with an even `left`, 0 the others;
            // the first may already have run inside the barrier.
            let mine = HITS / 2 + u32::from(me == 1);
            while loc.local(&h).0 < mine {
                loc.wait().await;
            }
            assert_eq!(loc.local(&h).0, mine, "location {me}");
        }
        loc.fence().await;
    });
}

/// ARMI's `rmi_wait`: `wait` waits for the next request *since the previous
/// wait or fence*. A request that already ran inside a `poll` counts, so the
/// `wait` after it returns at once (before, it waited for a new message that
/// never came: the timeout below fails the test); the next `wait` then waits
/// for the next request.
fn wait_after_poll(w: &World) {
    rmi::run(w, |mut loc| async move {
        let h = loc.register(Counter::default()).await.unwrap();
        let sender = loc.count() - 1;
        if loc.id() == sender {
            loc.async_rmi(0, &h, Add(1)).await;
            loc.world().flush();
        }
        if loc.id() == 0 {
            while loc.local(&h).0 == 0 {
                loc.poll().await;
            }
            let waited = tutti::timeout(std::time::Duration::from_secs(20), loc.wait()).await;
            assert!(
                waited.is_ok(),
                "wait did not count the request that ran in poll"
            );
        }
        loc.barrier().await;
        if loc.id() == sender {
            loc.async_rmi(0, &h, Add(1)).await;
            loc.world().flush();
        }
        if loc.id() == 0 {
            // Waits for the second request (or returns at once if the barrier
            // already ran it).
            loc.wait().await;
            assert_eq!(loc.local(&h).0, 2);
        }
        loc.fence().await;
    });
}

/// A program that mixes the world's own messages with RMI: every location but
/// 0 sends location 0 a typed message, plain bytes and a tagged message, then
/// takes part in a collective `register`, an RMI and a fence, inside which
/// location 0 serves RMI while they arrive. RMI serves only its own traffic:
/// every plain message is still there, intact, for location 0's own receives
/// after the fence (before, RMI took them for malformed RMI input and dropped
/// them).
fn plain_beside_rmi(w: &World) {
    use tutti::world::{LocationId, Match};
    rmi::run(w, |mut loc| async move {
        let me = loc.id();
        let zero = LocationId::new(0);
        if me != 0 {
            let world = loc.world();
            world.send(zero, format!("GO from {me}")).unwrap();
            world.send_bytes(zero, vec![me as u8; 12]).unwrap();
            world.send_tagged(zero, 7, me as u64).unwrap();
            world.flush();
        }
        let h = loc.register(Counter::default()).await.unwrap();
        loc.async_rmi(0, &h, Add(1)).await;
        loc.fence().await;
        let want = if me == 0 { loc.count() as u64 } else { 0 };
        assert_eq!(loc.local(&h).0, want);
        if me == 0 {
            let others = loc.count() - 1;
            let world = loc.world();
            let mut typed = Vec::new();
            let mut bytes = Vec::new();
            let mut tagged = Vec::new();
            for _ in 0..3 * others {
                let mut d = world.recv().await;
                let from = d.from().index();
                if d.tag() == Some(7) {
                    tagged.push((from, d.typed::<u64>().unwrap()));
                } else if let Ok(t) = d.typed::<String>() {
                    typed.push(t);
                } else {
                    let b = d.bytes().expect("plain bytes").to_vec();
                    assert_eq!(b, vec![from as u8; 12], "bytes from {from}");
                    bytes.push(from);
                }
            }
            assert!(world.try_recv_matching(Match::any()).is_none());
            typed.sort();
            bytes.sort();
            tagged.sort();
            let want: Vec<usize> = (1..=others).collect();
            let mut want_typed: Vec<String> = want.iter().map(|i| format!("GO from {i}")).collect();
            want_typed.sort();
            assert_eq!(typed, want_typed);
            assert_eq!(bytes, want);
            assert_eq!(
                tagged,
                want.iter().map(|&i| (i, i as u64)).collect::<Vec<_>>()
            );
        }
        loc.fence().await;
    });
}
