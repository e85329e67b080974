//! RMI errors and in-process details: the nesting limit, deadlocking chains,
//! misuse, shared handlers with actors, the automatic poll. The behaviour that
//! must hold in every world shape (ordering, atomicity, nesting, collectives,
//! fences, registration) is in `tests/rmi.rs`, run in-process and under mpirun.

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
    crate::runtime::payload_text(&*p).to_string()
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

#[derive(Default)]
struct Counter(u64);
impl Object for Counter {
    type Context = Rmi;
    fn remote(t: &mut Dispatch<Self>) -> std::result::Result<(), RegistryError> {
        t.register::<Add>()?.register::<Get>()?;
        Ok(())
    }
}
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
// ---- a log (an object with no context) ----

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
    type Context = Rmi;
    fn remote(t: &mut Dispatch<Self>) -> std::result::Result<(), RegistryError> {
        t.register::<Relay>()?;
        Ok(())
    }
}
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

#[test]
fn local_on_a_representative_whose_method_runs_is_a_clear_error() {
    #[derive(Serialize, Deserialize)]
    struct Peek(Handle<Counter>);
    impl Message for Peek {
        type Reply = ();
    }
    remote!(Peek);
    impl Handler<Peek> for Counter {
        async fn handle(&mut self, m: Peek, ctx: &mut Rmi) {
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

// ---- registration ----

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
        async fn handle(&mut self, _: Fence, ctx: &mut Rmi) {
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
    let w = world(2, 1);
    let got = run(&w, |mut loc| async move {
        loc.set_poll_every(10);
        let h = loc.register(Counter::default()).await.unwrap();
        if loc.id() == 1 {
            for _ in 0..5 {
                loc.async_rmi(0, &h, Add(1)).await;
            }
            // Sends the run (and executes nothing: none is for location 1).
            loc.poll().await;
        }
        // A barrier of the world, which executes nothing: location 1's
        // requests have arrived at location 0, and have not run.
        loc.world().barrier().await;
        if loc.id() == 1 {
            return (0, 0);
        }
        for _ in 0..9 {
            loc.async_rmi(1, &h, Add(1)).await;
        }
        let before = loc.local(&h).0;
        // The 10th communication call polls: the five requests run.
        loc.async_rmi(1, &h, Add(1)).await;
        let after = loc.local(&h).0;
        (before, after)
    });
    assert_eq!(got, [(0, 5), (0, 0)]);
}

#[test]
fn spmd_uses_the_environment_world() {
    let n = crate::rmi::spmd(|loc| async move { (loc.id(), loc.count()) });
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
        async fn handle(&mut self, _: Secret, _: &mut Rmi) {}
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

#[test]
fn a_location_used_outside_its_task_is_a_clear_error() {
    let w = world(1, 1);
    let got = run(&w, |loc| async move {
        std::thread::scope(|s| {
            s.spawn(|| {
                let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    crate::runtime::block_on(loc.poll())
                }));
                r.err()
                    .and_then(|p| p.downcast_ref::<String>().cloned())
                    .unwrap_or_default()
            })
            .join()
            .unwrap()
        })
    });
    assert!(
        got[0].contains("location 0 was used outside its location's task"),
        "{}",
        got[0]
    );
}
