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
//! does not decode as its message type).

mod watchdog;
use std::panic::{catch_unwind, AssertUnwindSafe};

use serde::{Deserialize, Serialize};
use tutti::msg::codec::{encode_raw_frame, FrameKind, Header};
use tutti::msg::{Dispatch, Handler, Message, Object, RegistryError, Remote};
use tutti::rmi::{self, Handle, Location};
use tutti::world::{LocationId, TransportKind, World};

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
    type Context = Location;
    fn remote(table: &mut Dispatch<Self>) -> Result<(), RegistryError> {
        table.register::<Relay>()?;
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
        "bytes" => {
            rmi::run(&world, |loc| async move {
                let first_of_rank_1 = loc.world().world().locations_per_rank();
                if loc.id() == 0 {
                    let to = LocationId::new(first_of_rank_1 as u32);
                    loc.world()
                        .send_bytes(to, b"TUTI but not an RMI message".to_vec())
                        .unwrap();
                }
                loc.barrier().await;
            });
        }
        "payload" => {
            rmi::run(&world, |loc| async move {
                let h = loc
                    .register(Ring {
                        level: 0,
                        all: Vec::new(),
                    })
                    .await
                    .unwrap();
                let first_of_rank_1 = loc.world().world().locations_per_rank();
                if loc.id() == 0 {
                    // A well-formed frame whose payload is not a `Relay`.
                    let head = Header {
                        src: 0,
                        dst: first_of_rank_1 as u32,
                        msg: Relay::ID,
                        target: h.id() as u64,
                        ..Header::new(FrameKind::Tell)
                    };
                    let mut bytes = Vec::new();
                    encode_raw_frame(&head, &[0xff, 0xff, 0xff], &mut bytes).unwrap();
                    let to = LocationId::new(first_of_rank_1 as u32);
                    loc.world().send_bytes(to, bytes).unwrap();
                }
                loc.barrier().await;
            });
        }
        other => {
            panic!("TUTTI_RMI_ABORT={other:?}: expected nesting, deadlock, bytes or payload")
        }
    }
    println!("rank {} finished its part", world.rank());
}

fn in_process() {
    // A world per case: a failed run leaves its other locations behind.
    let world = || {
        World::builder()
            .ignore_env()
            .transport(TransportKind::InProcess)
            .locations(2)
            .workers(2)
            .build()
            .expect("world")
    };
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
    println!("rmi_abort: the nesting limit and a deadlocking chain are clear errors");
}
