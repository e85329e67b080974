//! The start-up check of the message registry (`tutti::msg::register`).
//!
//! Under `mpirun` (`.ci/run`, 2 ranks): every rank registers `test.Ping`; with
//! `TUTTI_REGISTRY_TEST=mismatch` rank 1 also registers `test.Pong`, and building
//! the world must then fail on *every* rank with an error that names rank 1 and
//! `test.Pong` (and the job exits cleanly, status 0). Without the variable the
//! world starts and runs a barrier.
//!
//! In-process (plain `cargo test`) there are no other ranks to disagree with: the
//! world starts whatever is registered.

mod watchdog;
use serde::{Deserialize, Serialize};
use tutti::msg::{self, Message, Remote};
use tutti::world::{World, WorldError};

#[derive(Serialize, Deserialize)]
struct Ping;
impl Message for Ping {
    type Reply = ();
}
impl Remote for Ping {
    const NAME: &'static str = "test.Ping";
}

#[derive(Serialize, Deserialize)]
struct Pong;
impl Message for Pong {
    type Reply = ();
}
impl Remote for Pong {
    const NAME: &'static str = "test.Pong";
}

fn main() {
    let launched = tutti::world::launched_by_mpi();
    let rank: usize = ["OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"]
        .iter()
        .find_map(|v| std::env::var(v).ok()?.parse().ok())
        .unwrap_or(0);
    let mismatch = std::env::var("TUTTI_REGISTRY_TEST").as_deref() == Ok("mismatch");
    msg::register::<Ping>().expect("register Ping");
    if mismatch && rank == 1 {
        msg::register::<Pong>().expect("register Pong");
    }
    assert_eq!(msg::registered().name(Ping::ID), Some("test.Ping"));
    if !launched {
        let world = World::builder()
            .ignore_env()
            .workers(1)
            .build()
            .expect("world");
        world.run(|loc| async move { loc.barrier().await });
        println!("world_registry: in-process world started");
        return;
    }
    match World::from_env() {
        Ok(world) if !mismatch => {
            world.run(|loc| async move { loc.barrier().await });
            if world.rank() == 0 {
                println!("world_registry: the ranks agree");
            }
        }
        Ok(world) => panic!(
            "rank {}: the world started although rank 1 registered an extra type",
            world.rank()
        ),
        Err(e) => {
            let text = e.to_string();
            assert!(matches!(e, WorldError::Registry(_)), "rank {rank}: {text}");
            assert!(
                text.contains("rank 1 vs rank 0: has \"test.Pong\""),
                "rank {rank}: {text}"
            );
            println!("rank {rank}: the world refused to start: {text}");
        }
    }
}
