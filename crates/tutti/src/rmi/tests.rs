//! RMI on the in-process transport: ordering, atomicity, nesting, collectives,
//! fences, registration errors.

use std::panic::{catch_unwind, AssertUnwindSafe};

use serde::{Deserialize, Serialize};

use super::*;
use crate::msg::{Dispatch, Handler, Message, Object, RegistryError};

/// `Remote` for a test message, named after it.
macro_rules! remote {
    ($($t:ident),*) => {$(
        impl crate::msg::Remote for $t {
            const NAME: &'static str = concat!("rmi.tests.", stringify!($t));
        }
    )*};
}
use crate::world::{TransportKind, World};

fn world(locations: usize, aggregation: usize) -> World {
    World::builder()
        .ignore_env()
        .transport(TransportKind::InProcess)
        .locations(locations)
        .workers(2)
        .aggregation(aggregation)
        .build()
        .unwrap()
}

/// The panic message of `f`.
fn panic_text(f: impl FnOnce()) -> String {
    let p = catch_unwind(AssertUnwindSafe(f)).expect_err("it panics");
    crate::world::payload_text(&*p).to_string()
}

// ---- a counter ----

#[derive(Clone, Serialize, Deserialize)]
struct Add(u64);
impl Message for Add {
    type Reply = ();
}
remote!(Add);
#[derive(Serialize, Deserialize)]
struct Get;
impl Message for Get {
    type Reply = u64;
}
remote!(Get);
/// Adds and returns the new value.
#[derive(Serialize, Deserialize)]
struct FetchAdd(u64);
impl Message for FetchAdd {
    type Reply = u64;
}
remote!(FetchAdd);

#[derive(Default)]
struct Counter(u64);
impl Object for Counter {
    type Context = Location;
    fn remote(t: &mut Dispatch<Self>) -> std::result::Result<(), RegistryError> {
        t.register::<Add>()?
            .register::<Get>()?
            .register::<FetchAdd>()?
            .register::<AskBack>()?
            .register::<Hop>()?;
        Ok(())
    }
}
impl Handler<Add> for Counter {
    async fn handle(&mut self, m: Add, _: &mut Location) {
        self.0 += m.0;
    }
}
impl Handler<Get> for Counter {
    async fn handle(&mut self, _: Get, _: &mut Location) -> u64 {
        self.0
    }
}
impl Handler<FetchAdd> for Counter {
    async fn handle(&mut self, m: FetchAdd, _: &mut Location) -> u64 {
        // Not atomic unless the method is: read, yield to the location's
        // other work (none may interleave), write.
        let v = self.0;
        crate::runtime::yield_now().await;
        self.0 = v + m.0;
        self.0
    }
}

#[test]
fn counters_updated_from_every_location_see_every_update() {
    for aggregation in [1, 16] {
        let w = world(4, aggregation);
        let got = run(&w, |loc| async move {
            let h = loc.register(Counter::default()).await.unwrap();
            for i in 0..500u64 {
                for dest in 0..loc.count() {
                    loc.async_rmi(dest, &h, Add(1)).await;
                }
                if i % 7 == 0 {
                    loc.sync_rmi(i as usize % loc.count(), &h, FetchAdd(1))
                        .await;
                }
            }
            loc.fence().await;
            loc.reduce_rmi(&h, Get, |a, b| a + b).await
        });
        let n = 4u64;
        let per_loc_sync = (0..500u64).filter(|i| i % 7 == 0).count() as u64;
        assert_eq!(
            got,
            vec![500 * n * n + per_loc_sync * n; 4],
            "aggregation {aggregation}"
        );
    }
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
impl Object for Log {
    type Context = ();
    fn remote(t: &mut Dispatch<Self>) -> std::result::Result<(), RegistryError> {
        t.register::<Record>()?;
        Ok(())
    }
}
impl Handler<Record> for Log {
    async fn handle(&mut self, m: Record, _: &mut ()) {
        self.0.push((m.0, m.1));
    }
}

#[test]
fn requests_from_one_location_to_another_execute_in_issue_order() {
    let w = world(3, 8);
    let ok = run(&w, |mut loc| async move {
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
        let log = loc.local(&h);
        let mut last = [None; 3];
        for &(src, seq) in &log.0 {
            assert!(last[src] < Some(seq), "{src}: {:?} then {seq}", last[src]);
            last[src] = Some(seq);
        }
        log.0.len()
    });
    assert_eq!(ok.iter().sum::<usize>(), 900);
}

// ---- nesting ----

/// Passes a question on along the ring of locations, and along a ring of
/// `levels` objects, until `hops` is 0; answers the number of methods it went
/// through.
#[derive(Serialize, Deserialize)]
struct Relay {
    hops: u32,
}
impl Message for Relay {
    type Reply = u32;
}
remote!(Relay);
/// Level `level` of a ring of objects (all levels' handles in `all`).
struct Ring {
    level: usize,
    all: Vec<Handle<Ring>>,
}
impl Object for Ring {
    type Context = Location;
    fn remote(t: &mut Dispatch<Self>) -> std::result::Result<(), RegistryError> {
        t.register::<Relay>()?;
        Ok(())
    }
}
impl Handler<Relay> for Ring {
    async fn handle(&mut self, m: Relay, ctx: &mut Location) -> u32 {
        if m.hops == 0 {
            return 1;
        }
        let h = self.all[(self.level + 1) % self.all.len()];
        let next = (ctx.id() + 1) % ctx.count();
        1 + ctx.sync_rmi(next, &h, Relay { hops: m.hops - 1 }).await
    }
}

fn ring_run(w: &World, levels: usize, hops: u32, max_nesting: usize) -> Vec<u32> {
    run(w, move |mut loc| async move {
        loc.set_max_nesting(max_nesting);
        let mut all = Vec::new();
        for level in 0..levels {
            all.push(
                loc.register(Ring {
                    level,
                    all: Vec::new(),
                })
                .await
                .unwrap(),
            );
        }
        for h in &all {
            loc.local(h).all = all.clone();
        }
        loc.barrier().await;
        if loc.id() == 0 {
            loc.sync_rmi(1 % loc.count(), &all[0], Relay { hops }).await
        } else {
            0
        }
    })
}

#[test]
fn nested_sync_rmi_chains_return_through_every_location() {
    let w = world(3, 1);
    // 3 locations × 4 levels: 11 methods, no (location, object) twice; each
    // location is nested up to 4 methods deep.
    assert_eq!(ring_run(&w, 4, 10, 8)[0], 11);
}

#[test]
fn exceeding_the_nesting_limit_is_a_clear_error() {
    let w = world(2, 1);
    let text = panic_text(|| {
        ring_run(&w, 7, 12, 3);
    });
    assert!(
        text.contains("nest") && text.contains("maximum of 3"),
        "{text}"
    );
    assert!(text.contains("Relay"), "{text}");
}

#[test]
fn a_sync_rmi_cycle_back_to_a_held_representative_is_a_clear_error() {
    // One level: the chain comes back to location 1's only object, held by
    // the method that waits for it.
    let w = world(2, 1);
    let text = panic_text(|| {
        ring_run(&w, 1, 5, 16);
    });
    assert!(
        text.contains("deadlock") && text.contains("Relay"),
        "{text}"
    );
}

// ---- deferral: a busy representative ----

/// On location 0: asks location 1 to add to this very counter, and reads it.
#[derive(Serialize, Deserialize)]
struct AskBack(Handle<Counter>, Handle<Pinger>);
impl Message for AskBack {
    type Reply = u64;
}
remote!(AskBack);
impl Handler<AskBack> for Counter {
    async fn handle(&mut self, m: AskBack, ctx: &mut Location) -> u64 {
        let before = self.0;
        ctx.sync_rmi(1, &m.1, Poke(m.0)).await;
        // The Add the poke sent is deferred until this method returns.
        assert_eq!(self.0, before);
        self.0
    }
}
#[derive(Serialize, Deserialize)]
struct Poke(Handle<Counter>);
impl Message for Poke {
    type Reply = ();
}
remote!(Poke);
struct Pinger;
impl Object for Pinger {
    type Context = Location;
    fn remote(t: &mut Dispatch<Self>) -> std::result::Result<(), RegistryError> {
        t.register::<Poke>()?;
        Ok(())
    }
}
impl Handler<Poke> for Pinger {
    async fn handle(&mut self, m: Poke, ctx: &mut Location) {
        ctx.async_rmi(0, &m.0, Add(5)).await;
        ctx.world().flush();
    }
}

#[test]
fn a_request_for_a_busy_representative_waits_until_its_method_returns() {
    let w = world(2, 1);
    let got = run(&w, |loc| async move {
        let c = loc.register(Counter::default()).await.unwrap();
        let p = loc.register(Pinger).await.unwrap();
        let during = if loc.id() == 0 {
            loc.sync_rmi(0, &c, AskBack(c, p)).await
        } else {
            0
        };
        loc.fence().await;
        (during, loc.sync_rmi(0, &c, Get).await)
    });
    assert_eq!(got[0], (0, 5));
}

#[test]
fn local_on_a_representative_whose_method_runs_is_a_clear_error() {
    #[derive(Serialize, Deserialize)]
    struct Peek(Handle<Counter>);
    impl Message for Peek {
        type Reply = ();
    }
    remote!(Peek);
    impl Handler<Peek> for Counter {
        async fn handle(&mut self, m: Peek, ctx: &mut Location) {
            let _ = ctx.local(&m.0).0;
        }
    }
    let w = world(1, 1);
    let text = panic_text(|| {
        run(&w, |loc| async move {
            let c = loc.register(Counter::default()).await.unwrap();
            loc.sync_rmi(0, &c, Peek(c)).await;
        });
    });
    assert!(text.contains("in use by a method"), "{text}");
}

// ---- collectives ----

#[test]
fn broadcast_and_reduce_with_user_operations() {
    #[derive(Serialize, Deserialize)]
    struct Name;
    impl Message for Name {
        type Reply = String;
    }
    remote!(Name);
    impl Handler<Name> for Counter {
        async fn handle(&mut self, _: Name, ctx: &mut Location) -> String {
            format!("{}:{}", ctx.id(), self.0)
        }
    }
    let w = world(4, 4);
    let got = run(&w, |loc| async move {
        let h = loc.register(Counter::default()).await.unwrap();
        loc.broadcast_rmi(&h, Add(loc.id() as u64 + 1)).await;
        loc.fence().await;
        let max = loc.reduce_rmi(&h, Get, |a, b| a.max(b)).await;
        let names = loc.reduce_rmi(&h, Name, |a, b| a + "," + &b).await;
        (max, names)
    });
    for (max, names) in got {
        assert_eq!(max, 10);
        assert_eq!(names, "0:10,1:10,2:10,3:10");
    }
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
    async fn handle(&mut self, m: Hop, ctx: &mut Location) {
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

#[test]
fn fence_waits_for_multi_hop_chains_issued_by_methods() {
    for aggregation in [1, 64] {
        let w = world(3, aggregation);
        let got = run(&w, |loc| async move {
            let h = loc.register(Counter::default()).await.unwrap();
            // Every location starts a chain; buffered requests count too.
            loc.async_rmi(loc.id(), &h, Hop { left: 200, me: h }).await;
            loc.fence().await;
            let total = loc.reduce_rmi(&h, Get, |a, b| a + b).await;
            // A second round after the first fence.
            loc.async_rmi((loc.id() + 1) % 3, &h, Hop { left: 10, me: h })
                .await;
            loc.fence().await;
            (total, loc.reduce_rmi(&h, Get, |a, b| a + b).await)
        });
        assert!(got.iter().all(|&t| t == (603, 636)), "{got:?}");
    }
}

// master–worker (ARMI §III.D): the master hands out work with async_rmi and
// only fences; workers send results back from their methods.
#[derive(Serialize, Deserialize)]
struct Work(u64, Handle<Collector>);
impl Message for Work {
    type Reply = ();
}
remote!(Work);
struct Worker;
impl Object for Worker {
    type Context = Location;
    fn remote(t: &mut Dispatch<Self>) -> std::result::Result<(), RegistryError> {
        t.register::<Work>()?;
        Ok(())
    }
}
impl Handler<Work> for Worker {
    async fn handle(&mut self, m: Work, ctx: &mut Location) {
        ctx.async_rmi(0, &m.1, Result(m.0 * m.0)).await;
    }
}
#[derive(Serialize, Deserialize)]
struct Result(u64);
impl Message for Result {
    type Reply = ();
}
remote!(Result);
#[derive(Default)]
struct Collector(u64, u64);
impl Object for Collector {
    type Context = ();
    fn remote(t: &mut Dispatch<Self>) -> std::result::Result<(), RegistryError> {
        t.register::<Result>()?;
        Ok(())
    }
}
impl Handler<Result> for Collector {
    async fn handle(&mut self, m: Result, _: &mut ()) {
        self.0 += m.0;
        self.1 += 1;
    }
}

#[test]
fn master_worker_with_only_a_fence() {
    let w = world(4, 8);
    let got = run(&w, |mut loc| async move {
        let work = loc.register(Worker).await.unwrap();
        let col = loc.register(Collector::default()).await.unwrap();
        if loc.id() == 0 {
            for i in 0..1000u64 {
                let dest = 1 + (i as usize % (loc.count() - 1));
                loc.async_rmi(dest, &work, Work(i, col)).await;
            }
        }
        loc.fence().await;
        let c = loc.local(&col);
        (c.0, c.1)
    });
    let want: u64 = (0..1000u64).map(|i| i * i).sum();
    assert_eq!(got[0], (want, 1000));
}

// ---- registration ----

#[test]
fn registration_order_mismatch_is_an_error_on_every_location() {
    let w = world(3, 1);
    let got = run(&w, |loc| async move {
        let first = loc.register(Counter::default()).await.map(|h| h.id());
        let second = if loc.id() == 1 {
            loc.register(Log::default()).await.map(|h| h.id())
        } else {
            loc.register(Counter::default()).await.map(|h| h.id())
        };
        let third = loc.register(Counter::default()).await.map(|h| h.id());
        (first, second, third)
    });
    for (first, second, third) in got {
        assert_eq!(first, Ok(0));
        let e = second.unwrap_err();
        assert!(matches!(e, RmiError::RegistrationMismatch { index: 1, .. }));
        let text = e.to_string();
        assert!(text.contains("Counter") && text.contains("Log"), "{text}");
        assert_eq!(third, Ok(2), "registration goes on after a mismatch");
    }
}

#[test]
fn update_and_unregister() {
    let w = world(2, 1);
    let got = run(&w, |mut loc| async move {
        let h = loc.register(Counter(1)).await.unwrap();
        loc.async_rmi(1 - loc.id(), &h, Add(10)).await;
        loc.fence().await;
        let old = loc.update(&h, Counter(100));
        loc.barrier().await;
        let now = loc.sync_rmi(1 - loc.id(), &h, Get).await;
        loc.fence().await;
        let last = loc.unregister(h);
        (old.0, now, last.0)
    });
    assert_eq!(got, [(11, 100, 100); 2]);
}

#[test]
fn a_request_for_an_unregistered_object_is_a_clear_error() {
    let w = world(2, 1);
    let text = panic_text(|| {
        run(&w, |mut loc| async move {
            let h = loc.register(Counter(1)).await.unwrap();
            loc.unregister(h);
            loc.barrier().await;
            loc.async_rmi(1 - loc.id(), &h, Add(1)).await;
        });
    });
    assert!(
        text.contains("unregistered") && text.contains("Add"),
        "{text}"
    );
}

#[test]
fn collectives_inside_methods_are_refused() {
    #[derive(Serialize, Deserialize)]
    struct Fence;
    impl Message for Fence {
        type Reply = ();
    }
    remote!(Fence);
    impl Handler<Fence> for Counter {
        async fn handle(&mut self, _: Fence, ctx: &mut Location) {
            ctx.fence().await;
        }
    }
    let w = world(1, 1);
    let text = panic_text(|| {
        run(&w, |loc| async move {
            let h = loc.register(Counter(1)).await.unwrap();
            loc.sync_rmi(0, &h, Fence).await;
        });
    });
    assert!(text.contains("fence is collective"), "{text}");
}

#[test]
fn an_actor_and_an_rmi_object_share_handlers() {
    use crate::actor::{self, Actor, Context};
    // `Log` (Context = ()) serves RMI above; an actor owning one forwards to
    // the very same handler.
    struct LogActor(Log);
    impl Actor for LogActor {}
    impl Handler<Record> for LogActor {
        async fn handle(&mut self, m: Record, _: &mut Context<Self>) {
            self.0.handle(m, &mut ()).await
        }
    }
    struct Len;
    impl Message for Len {
        type Reply = usize;
    }
    impl Handler<Len> for LogActor {
        async fn handle(&mut self, _: Len, _: &mut Context<Self>) -> usize {
            self.0 .0.len()
        }
    }
    let a = actor::spawn(LogActor(Log::default()));
    a.tell(Record(0, 1)).unwrap();
    assert_eq!(a.ask_blocking(Len).unwrap(), 1);
    let w = world(2, 1);
    let got = run(&w, |mut loc| async move {
        let h = loc.register(Log::default()).await.unwrap();
        loc.async_rmi(0, &h, Record(loc.id(), 1)).await;
        loc.fence().await;
        let n = loc.local(&h).0.len();
        n
    });
    assert_eq!(got, [2, 0]);
}

#[test]
fn automatic_poll_executes_requests_during_a_long_send_loop() {
    let w = world(1, 1);
    let got = run(&w, |loc| async move {
        loc.set_poll_every(10);
        let h = loc.register(Counter::default()).await.unwrap();
        for _ in 0..25 {
            loc.async_rmi(0, &h, Add(1)).await;
        }
        // Polled at the 10th and 20th call: 20 executed so far. Only this
        // location's own requests exist, so looking through `local` is exact.
        let mut loc = loc;
        let seen = loc.local(&h).0;
        loc.fence().await;
        let now = loc.local(&h).0;
        (seen, now)
    });
    assert_eq!(got, [(20, 25)]);
}

#[test]
fn spmd_uses_the_environment_world() {
    let n = crate::spmd(|loc| async move { (loc.id(), loc.count()) });
    assert!(!n.is_empty());
    for (i, (id, count)) in n.iter().enumerate() {
        assert_eq!((*id, *count), (i, n.len()));
    }
}

#[test]
fn a_request_of_a_type_the_object_does_not_accept_from_others_is_a_clear_error() {
    #[derive(Serialize, Deserialize)]
    struct Secret;
    impl Message for Secret {
        type Reply = ();
    }
    remote!(Secret);
    impl Handler<Secret> for Counter {
        async fn handle(&mut self, _: Secret, _: &mut Location) {}
    }
    let w = world(2, 1);
    // To itself it needs no listing…
    let got = run(&w, |loc| async move {
        let h = loc.register(Counter(1)).await.unwrap();
        loc.sync_rmi(loc.id(), &h, Secret).await;
        loc.id()
    });
    assert_eq!(got, [0, 1]);
    // …to another location it does, even within one process.
    let text = panic_text(|| {
        run(&w, |loc| async move {
            let h = loc.register(Counter(1)).await.unwrap();
            loc.async_rmi(1 - loc.id(), &h, Secret).await;
        });
    });
    assert!(
        text.contains("rmi.tests.Secret") && text.contains("Object::remote"),
        "{text}"
    );
}
