//! RMI scopes across ranks (`Rmi::scope`): the same bodies run on the
//! in-process transport (plain `cargo test`, several shapes, then as a
//! shared-memory system of 2 processes) and under `mpirun` (`.ci/run` runs
//! this binary with 2 and 4 ranks, and with two locations per rank) and
//! `tutti launch`. Every body checks its own results on every location and
//! panics on a mismatch (under MPI that takes the job down).
//!
//! In-process only, before the suite: the diagnosis of a scope that waits —
//! the dump names the locations that owe it work, and a world stalled with
//! a scope waiting is reported and fails the scope's owner.
// This file uses tutti as a program would, with `std`'s atomics and locks: the
// loom-shim rule of `clippy.toml` is for the library's own code.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

mod common;
mod watchdog;

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tutti::msg::{Dispatch, Handler, Message, Object, RegistryError, Remote};
use tutti::rmi::scope::WorkError;
use tutti::rmi::{self, Handle, Rmi};
use tutti::world::{launched_by_mpi, LocationId, Match, World};

type Body = fn(&World);

const BODIES: &[(&str, Body)] = &[
    ("work_finishes_before_the_scope_returns", finishes),
    ("panics_and_errors_name_the_location_and_rank", failures),
    ("cancel_skips_work_that_has_not_started", cancel),
    ("dropping_a_scope_cancels_its_work", dropped),
    ("nested_scopes_and_scopes_inside_methods", nested),
];

fn main() {
    if !launched_by_mpi() && std::env::var_os("TUTTI_SYSTEM").is_none() {
        the_dump_names_the_locations_that_owe_work();
        println!("  ok the_dump_names_the_locations_that_owe_work");
        a_stalled_scope_is_reported();
        println!("  ok a_stalled_scope_is_reported");
    }
    common::run_suite(
        "rmi scope suite",
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

macro_rules! remote {
    ($($t:ident),*) => {$(
        impl Remote for $t {
            const NAME: &'static str = concat!("tests.rmi_scope.", stringify!($t));
        }
    )*};
}

// ---- a tally of what each location sent ----

/// Adds `n` to the tally of location `from`.
#[derive(Serialize, Deserialize)]
struct Add {
    from: u32,
    n: u64,
}
impl Message for Add {
    type Reply = ();
}

/// The tally of location `from`.
#[derive(Serialize, Deserialize)]
struct Get {
    from: u32,
}
impl Message for Get {
    type Reply = u64;
}

/// Adds 1 to the tally of `from`, then panics with `text`.
#[derive(Serialize, Deserialize)]
struct Boom {
    from: u32,
    text: String,
}
impl Message for Boom {
    type Reply = ();
}

/// Fails (an `Err` reply) for 13.
#[derive(Serialize, Deserialize)]
struct Check(u64);
impl Message for Check {
    type Reply = Result<(), String>;
}

remote!(Add, Get, Boom, Check);

#[derive(Default)]
struct Tally(Vec<u64>);

impl Tally {
    fn of(&mut self, from: u32) -> &mut u64 {
        let i = from as usize;
        if self.0.len() <= i {
            self.0.resize(i + 1, 0);
        }
        &mut self.0[i]
    }
}

impl Object for Tally {
    type Context = ();
    fn remote(t: &mut Dispatch<Self>) -> Result<(), RegistryError> {
        t.register::<Add>()?
            .register::<Get>()?
            .register::<Boom>()?
            .register::<Check>()?;
        Ok(())
    }
}

impl Handler<Add> for Tally {
    async fn handle(&mut self, m: Add, _: &mut ()) {
        *self.of(m.from) += m.n;
    }
}

impl Handler<Get> for Tally {
    async fn handle(&mut self, m: Get, _: &mut ()) -> u64 {
        *self.of(m.from)
    }
}

impl Handler<Boom> for Tally {
    async fn handle(&mut self, m: Boom, _: &mut ()) {
        *self.of(m.from) += 1;
        panic!("{}", m.text);
    }
}

impl Handler<Check> for Tally {
    async fn handle(&mut self, m: Check, _: &mut ()) -> Result<(), String> {
        if m.0 == 13 {
            Err(format!("unlucky {}", m.0))
        } else {
            Ok(())
        }
    }
}

/// Work finishes before its scope returns, wherever it ran: right after the
/// scope, each location's tallies hold everything it spawned.
fn finishes(w: &World) {
    rmi::run(w, |loc| async move {
        let h = loc.register(Tally::default()).await.unwrap();
        let (me, n) = (loc.id() as u32, loc.count());
        loc.scope(|s| async move {
            for _ in 0..3 {
                for dest in 0..n {
                    s.spawn(
                        dest,
                        &h,
                        Add {
                            from: me,
                            n: dest as u64 + 1,
                        },
                    )
                    .await;
                }
            }
        })
        .await
        .unwrap();
        for dest in 0..n {
            let got = loc.sync_rmi(dest, &h, Get { from: me }).await;
            assert_eq!(
                got,
                3 * (dest as u64 + 1),
                "location {me}'s tally on {dest}"
            );
        }
    });
}

/// A panic and an error reply come back to the scope's owner naming the
/// location, its rank and the message; the location that panicked goes on,
/// its representative as the panic left it.
fn failures(w: &World) {
    rmi::run(w, |loc| async move {
        let h = loc.register(Tally::default()).await.unwrap();
        let (me, n) = (loc.id(), loc.count());
        let per_rank = loc.world().world().locations_per_rank();
        let dest = (me + 1) % n;
        let text = format!("boom from location {me}");
        let t = text.clone();
        let err = loc
            .scope(|s| async move {
                s.spawn(
                    dest,
                    &h,
                    Boom {
                        from: me as u32,
                        text: t,
                    },
                )
                .await;
            })
            .await
            .unwrap_err();
        let [f] = err.failures() else {
            panic!("one failure expected: {err}")
        };
        assert_eq!(
            (f.location(), f.rank(), f.message()),
            (dest, dest / per_rank, "tests.rmi_scope.Boom")
        );
        assert_eq!(f.error(), &WorkError::Panicked(text.clone()));
        let want = format!(
            "`tests.rmi_scope.Boom` on location {dest} (rank {}) panicked: {text}",
            dest / per_rank
        );
        assert!(err.to_string().contains(&want), "{err}");
        // An error reply; the failure cancels what has not started.
        let err = loc
            .scope(|s| async move {
                s.spawn(dest, &h, Check(13)).await;
                for i in 0..4 {
                    s.spawn(dest, &h, Check(i)).await;
                }
            })
            .await
            .unwrap_err();
        let [f] = err.failures() else {
            panic!("one failure expected: {err}")
        };
        assert_eq!(f.error(), &WorkError::Failed("unlucky 13".into()));
        assert!(err.cancelled() <= 4, "{err}");
        // The location that panicked went on, with the tally the panic left.
        assert_eq!(loc.sync_rmi(dest, &h, Get { from: me as u32 }).await, 1);
        loc.fence().await;
    });
}

/// The tag that lets the last location go on once location 0 cancelled.
const GO: u64 = 0x60_5c09e;

/// Waits, without executing requests, until every location has left the
/// collective `register` before it. The destination then waits for `GO`
/// with a plain world receive; without this, location 0 could send `GO`
/// while the destination still executes requests in `register`'s
/// all-reduce, where RMI would take `GO` — not an RMI message — for bytes
/// that break its protocol (and reject them).
async fn settled(loc: &Rmi) {
    loc.world().barrier().await;
}

/// Work that has not started when its scope is cancelled never runs; the
/// scope still returns `Ok` (cancelling is not a failure).
fn cancel(w: &World) {
    rmi::run(w, |loc| async move {
        let h = loc.register(Tally::default()).await.unwrap();
        let (me, n) = (loc.id(), loc.count());
        let dest = n - 1;
        settled(&loc).await;
        if me == 0 {
            loc.scope(|s| async move {
                for _ in 0..5 {
                    s.spawn(dest, &h, Add { from: 0, n: 1 }).await;
                }
                s.cancel();
                assert!(s.is_cancelled());
                // Not sent: the scope is cancelled.
                s.spawn(dest, &h, Add { from: 0, n: 1 }).await;
                if dest != 0 {
                    let world = s.rmi().world();
                    world
                        .send_tagged(LocationId::new(dest as u32), GO, ())
                        .unwrap();
                    world.flush();
                }
            })
            .await
            .unwrap();
            assert_eq!(loc.sync_rmi(dest, &h, Get { from: 0 }).await, 0);
        } else if me == dest {
            // Executes no request until location 0 has cancelled: the work
            // waits in this location's inbox.
            let _ = loc.world().recv_matching(Match::any().tag(GO)).await;
        }
        loc.fence().await;
    });
}

/// A scope whose future is dropped before it returned (here after its first
/// poll, its body still running) cancels the work that has not started, on
/// every rank: it never runs, and the location that owed it goes on.
fn dropped(w: &World) {
    rmi::run(w, |loc| async move {
        let h = loc.register(Tally::default()).await.unwrap();
        let (me, n) = (loc.id(), loc.count());
        let dest = n - 1;
        settled(&loc).await;
        if me == 0 {
            let mut scope = Box::pin(loc.scope(|s| async move {
                for _ in 0..5 {
                    s.spawn(dest, &h, Add { from: 0, n: 1 }).await;
                }
                std::future::pending::<()>().await;
            }));
            std::future::poll_fn(|cx| {
                assert!(scope.as_mut().poll(cx).is_pending(), "the body never ends");
                Poll::Ready(())
            })
            .await;
            drop(scope);
            if dest != 0 {
                let world = loc.world();
                world
                    .send_tagged(LocationId::new(dest as u32), GO, ())
                    .unwrap();
                world.flush();
            }
            // Runs after the spawns, which were answered as cancelled (they
            // arrived first and their tally was never busy).
            assert_eq!(loc.sync_rmi(dest, &h, Get { from: 0 }).await, 0);
        } else if me == dest {
            // Executes no request until location 0 has dropped its scope.
            let _ = loc.world().recv_matching(Match::any().tag(GO)).await;
        }
        loc.fence().await;
        // Every piece of the dropped scope was answered before the fence
        // returned, so no process remembers its cancellation.
        assert_eq!(
            rmi::scope::cancelled_scopes_remembered(),
            0,
            "location {me} after the fence"
        );
    });
}

// ---- nesting: scopes in methods, in methods of their work, and in bodies ----

/// Spawns `Inner` for `root` on the next location, in a scope of the method.
#[derive(Serialize, Deserialize)]
struct Outer {
    root: u32,
}
impl Message for Outer {
    type Reply = Result<(), String>;
}

/// Spawns `Add` for `root` on this location and the next, in a scope of
/// the method.
#[derive(Serialize, Deserialize)]
struct Inner {
    root: u32,
}
impl Message for Inner {
    type Reply = Result<(), String>;
}

remote!(Outer, Inner);

struct Upper {
    /// One `Middle` per root location (see `nested`).
    middles: Vec<Handle<Middle>>,
}

struct Middle {
    tally: Handle<Tally>,
}

impl Object for Upper {
    type Context = Rmi;
    fn remote(t: &mut Dispatch<Self>) -> Result<(), RegistryError> {
        t.register::<Outer>()?;
        Ok(())
    }
}

impl Object for Middle {
    type Context = Rmi;
    fn remote(t: &mut Dispatch<Self>) -> Result<(), RegistryError> {
        t.register::<Inner>()?;
        Ok(())
    }
}

impl Handler<Outer> for Upper {
    async fn handle(&mut self, m: Outer, ctx: &mut Rmi) -> Result<(), String> {
        let (me, n, middle) = (ctx.id(), ctx.count(), self.middles[m.root as usize]);
        ctx.scope(|s| async move {
            s.spawn((me + 1) % n, &middle, Inner { root: m.root }).await;
        })
        .await
        .map_err(|e| e.to_string())
    }
}

impl Handler<Inner> for Middle {
    async fn handle(&mut self, m: Inner, ctx: &mut Rmi) -> Result<(), String> {
        let (me, n, tally) = (ctx.id(), ctx.count(), self.tally);
        ctx.scope(|s| async move {
            for dest in [me, (me + 1) % n] {
                s.spawn(dest, &tally, Add { from: m.root, n: 1 }).await;
            }
        })
        .await
        .map_err(|e| e.to_string())
    }
}

/// A scope whose work opens scopes in its methods, two levels deep, and a
/// scope nested in a scope's body: each returns when its own work — and so
/// all the work below it — has finished.
///
/// Every location runs one `Outer` per root, and each `Outer` needs one
/// `Inner`, on a `Middle` of its root's: so no `Inner` ever waits for a
/// `Middle` that another `Inner` holds. (A method that waits executes the
/// requests that arrive on top of it, on its location's stack; had `Outer`
/// needed the `Middle` that an `Inner` waiting below it holds, neither could
/// return — a deadlock RMI's check reports, as the module docs of
/// `rmi::scope` say.)
fn nested(w: &World) {
    rmi::run(w, |loc| async move {
        let tally = loc.register(Tally::default()).await.unwrap();
        let (me, n) = (loc.id(), loc.count());
        let mut middles = Vec::with_capacity(n);
        for _ in 0..n {
            middles.push(loc.register(Middle { tally }).await.unwrap());
        }
        let upper = loc.register(Upper { middles }).await.unwrap();
        let root = me as u32;
        loc.scope(|s| async move {
            for dest in 0..n {
                s.spawn(dest, &upper, Outer { root }).await;
            }
            s.rmi()
                .scope(|t| async move {
                    t.spawn(
                        me,
                        &tally,
                        Add {
                            from: root,
                            n: 1000,
                        },
                    )
                    .await;
                })
                .await
                .unwrap();
        })
        .await
        .unwrap();
        let mut total = 0;
        for dest in 0..n {
            total += loc.sync_rmi(dest, &tally, Get { from: root }).await;
        }
        // Each `Outer` makes one `Inner`, which makes two `Add`s of 1.
        assert_eq!(total, 1000 + 2 * n as u64, "location {me}'s tallies");
        loc.fence().await;
    });
}

// ---- diagnosis (in-process) ----

/// Location 1 sleeps until a flag is set before it executes anything;
/// location 0's scope waits for the work it spawned there, and the dump says
/// so. (Location 1 sleeps rather than waiting on something only this thread
/// can end: a world whose every location waits, one of them in a scope, with
/// nothing armed to wake them is stalled, and would be reported.)
fn the_dump_names_the_locations_that_owe_work() {
    let world = Arc::new(common::in_process::in_process_world(2, 2));
    let gate = Arc::new(AtomicBool::new(false));
    let (w, g) = (Arc::clone(&world), Arc::clone(&gate));
    let locations = std::thread::spawn(move || {
        rmi::run(&w, |loc| {
            let g = Arc::clone(&g);
            async move {
                let h = loc.register(Tally::default()).await.unwrap();
                if loc.id() == 0 {
                    loc.scope(|s| async move {
                        s.spawn(1, &h, Add { from: 0, n: 2 }).await;
                        s.spawn(1, &h, Add { from: 0, n: 3 }).await;
                    })
                    .await
                    .unwrap();
                    loc.sync_rmi(1, &h, Get { from: 0 }).await
                } else {
                    while !g.load(Ordering::Acquire) {
                        tutti::sleep(Duration::from_millis(1)).await;
                    }
                    0
                }
            }
        })
    });
    let want = "location `location 0`: blocked, waits in an rmi scope for work owed by 1 \
                location(s): `tests.rmi_scope.Add` and 1 more on location 1 (rank 0)";
    let mut text = String::new();
    for _ in 0..2000 {
        text = tutti::diag::dump();
        if text.contains(want) {
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(text.contains(want), "{want} missing in\n{text}");
    gate.store(true, Ordering::Release);
    assert_eq!(locations.join().unwrap(), [5, 0]);
}

/// Location 1 waits on a channel no one will send on; location 0's scope
/// waits for work spawned there. The world is stalled: the scope's owner
/// fails with the report, which names what each location waits for.
fn a_stalled_scope_is_reported() {
    let world = common::in_process::in_process_world(2, 2);
    let (tx, rx) = tutti::csp::channel_named::<u32>("never");
    let panic = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        rmi::run(&world, move |loc| {
            let (_tx, rx) = (tx.clone(), rx.clone());
            async move {
                let h = loc.register(Tally::default()).await.unwrap();
                if loc.id() == 0 {
                    let _ = loc
                        .scope(|s| async move {
                            s.spawn(1, &h, Add { from: 0, n: 1 }).await;
                        })
                        .await;
                } else {
                    let _ = rx.recv().await;
                }
            }
        })
    }))
    .expect_err("the scope fails");
    let m = panic.downcast_ref::<String>().cloned().unwrap_or_default();
    assert!(m.contains("location 0 cannot finish"), "{m}");
    assert!(
        m.contains(
            "`location 0` waits in an rmi scope for work owed by 1 location(s): \
             `tests.rmi_scope.Add` on location 1 (rank 0)"
        ),
        "{m}"
    );
    assert!(
        m.contains("`location 1` waits to receive from channel `never`"),
        "{m}"
    );
}
