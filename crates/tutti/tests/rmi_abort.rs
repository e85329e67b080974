//! The RMI errors that end a run.
//!
//! In-process (plain `cargo test`): the nesting limit and a sync_rmi chain that
//! comes back to a held representative are clear panics naming the method.
//!
//! Under `mpirun -n 2` (`.ci/run`), this binary is expected to *fail*, the job
//! taken down with a message naming the rank and the cause, never a hang:
//! `TUTTI_RMI_ABORT=nesting` (a chain across the ranks nests deeper than the
//! limit), `deadlock` (a chain comes back to a representative held on the other
//! rank), `bytes` (location 0 sends the first location of rank 1 bytes that are
//! not an RMI message), `payload` (a well-formed request frame whose payload
//! does not decode as its message type). Bad bytes follow the request/reply
//! core's policy: the receiving location rejects them (and says so on stderr)
//! and goes on; the *sending* location panics when the rejection notice
//! reaches it, naming the location and rank that rejected them and the cause
//! — in-process too (tested here).

#[path = "common/in_process.rs"]
mod in_process;
mod watchdog;
use std::panic::{catch_unwind, AssertUnwindSafe};

use in_process::in_process_world;
use serde::{Deserialize, Serialize};
use tutti::msg::codec::{encode_raw_frame, FrameKind, Header};
use tutti::msg::{Dispatch, Handler, Message, Object, RegistryError, Remote};
use tutti::rmi::{self, Handle, Rmi};
use tutti::world::{LocationId, World};

#[derive(Serialize, Deserialize)]
struct Relay {
    hops: u32,
}
impl Message for Relay {
    type Reply = u32;
}
impl Remote for Relay {
    const NAME: &'static str = "tests.rmi_abort.Relay";
}

/// Level `level` of a ring of objects; passes the question on to the next
/// location and level.
struct Ring {
    level: usize,
    all: Vec<Handle<Ring>>,
}
impl Object for Ring {
    type Context = Rmi;
    fn remote(table: &mut Dispatch<Self>) -> Result<(), RegistryError> {
        table.register::<Relay>()?;
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

fn ring(w: &World, levels: usize, hops: u32, max_nesting: usize) {
    rmi::run(w, move |mut loc| async move {
        loc.set_max_nesting(max_nesting);
        let mut all = Vec::new();
        for level in 0..levels {
            let r = Ring {
                level,
                all: Vec::new(),
            };
            all.push(loc.register(r).await.unwrap());
        }
        for h in &all {
            loc.local(h).all = all.clone();
        }
        loc.barrier().await;
        if loc.id() == 0 {
            loc.sync_rmi(1, &all[0], Relay { hops }).await;
        }
    });
}

/// The location bad bytes go to: the first of rank 1 (under MPI), else the
/// last location of this process.
fn victim(loc: &Rmi) -> usize {
    let per_rank = loc.world().world().locations_per_rank();
    if per_rank < loc.count() {
        per_rank
    } else {
        loc.count() - 1
    }
}

/// Location 0 sends `victim` bytes that are not an RMI message at all.
fn bad_bytes(w: &World) {
    rmi::run(w, |loc| async move {
        if loc.id() == 0 {
            let to = LocationId::new(victim(&loc) as u32);
            loc.world()
                .send_bytes(to, b"TUTI but not an RMI message".to_vec())
                .unwrap();
        }
        loc.barrier().await;
    });
}

/// Location 0 sends `victim` a well-formed request frame whose payload is not
/// a `Relay`.
fn bad_payload(w: &World) {
    rmi::run(w, |loc| async move {
        let h = loc
            .register(Ring {
                level: 0,
                all: Vec::new(),
            })
            .await
            .unwrap();
        let victim = victim(&loc);
        if loc.id() == 0 {
            let head = Header {
                src: 0,
                dst: victim as u32,
                msg: Relay::ID,
                target: h.id() as u64,
                ..Header::new(FrameKind::Tell)
            };
            let mut bytes = Vec::new();
            encode_raw_frame(&head, &[0xff, 0xff, 0xff], &mut bytes).unwrap();
            loc.world()
                .send_bytes(LocationId::new(victim as u32), bytes)
                .unwrap();
        }
        loc.barrier().await;
    });
}

fn main() {
    let launched = tutti::world::launched_by_mpi();
    if !launched {
        in_process();
        return;
    }
    let world = World::from_env().expect("world");
    let mode = std::env::var("TUTTI_RMI_ABORT").unwrap_or_else(|_| "nesting".into());
    match mode.as_str() {
        // 2 locations, 13 levels: each location nests 6 methods deep, beyond 3.
        "nesting" => ring(&world, 13, 12, 3),
        // One level: the chain comes back to location 1's only object, held
        // by the method that waits for it.
        "deadlock" => ring(&world, 1, 5, 16),
        "bytes" => bad_bytes(&world),
        "payload" => bad_payload(&world),
        other => {
            panic!("TUTTI_RMI_ABORT={other:?}: expected nesting, deadlock, bytes or payload")
        }
    }
    println!("rank {} finished its part", world.rank());
}

fn in_process() {
    // A world per case: a failed run leaves its other locations behind.
    let world = || in_process_world(2, 2);
    let text = |f: &dyn Fn()| {
        let p = catch_unwind(AssertUnwindSafe(f)).expect_err("it panics");
        p.downcast_ref::<String>().cloned().unwrap_or_default()
    };
    let t = text(&|| ring(&world(), 13, 12, 3));
    assert!(
        t.contains("beyond the maximum of 3") && t.contains("Relay"),
        "{t}"
    );
    let t = text(&|| ring(&world(), 1, 5, 16));
    assert!(t.contains("deadlock") && t.contains("Relay"), "{t}");
    // The report (`tutti::diag`) names every participant of the cycle.
    for want in [
        "[rank 0] `location 0 (method of object #0)` waits in a sync_rmi for its call on location 1 to return",
        "[rank 0] `location 1 (method of object #0)` waits in a sync_rmi for its call on location 0 to return",
        "[rank 0] `location 1 (request `rmi_abort::Relay` from location 0 for object #0)` cannot run",
        "cycle: `location 1 (request",
    ] {
        assert!(t.contains(want), "missing {want:?} in {t}");
    }
    // Bad bytes: the receiving location rejects them and goes on; the
    // location that sent them panics when the notice reaches it.
    let t = text(&|| bad_bytes(&world()));
    assert!(
        t.contains(
            "location 0 (rank 0): location 1 (rank 0) rejected what this location sent it: "
        ) && t.contains("truncated"),
        "{t}"
    );
    let t = text(&|| bad_payload(&world()));
    assert!(
        t.contains(
            "location 0 (rank 0): location 1 (rank 0) rejected what this location sent it: "
        ) && t.contains("cannot decode a \"tests.rmi_abort.Relay\" message"),
        "{t}"
    );
    println!("rmi_abort: the nesting limit, a deadlocking chain and bad bytes are clear errors");
}
