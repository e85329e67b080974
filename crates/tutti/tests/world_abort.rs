//! The error path of a failing location.
//!
//! In-process (plain `cargo test`): a panicking location is reported by
//! `World::try_run` with its id and message while another location waits in a
//! barrier for it — no hang.
//!
//! Under `mpirun` (`.ci/run`), this binary is expected to *fail*: with
//! `TUTTI_ABORT_TEST=panic` a location of rank 1 panics while every other
//! location waits in a barrier, and with `TUTTI_ABORT_TEST=frame` rank 0 sends
//! rank 1 a malformed frame; with `root`, `length` and `kind` the ranks call
//! a collective with arguments that cannot agree (another root, one value too
//! many for all-to-all, another collective). Either way the job must end with a non-zero status
//! and a message naming rank 1 and the cause, instead of hanging. With
//! `kill`, rank 1 kills itself (`SIGKILL`, nothing of it runs any more) while
//! the others wait in a barrier: the launcher takes the job down naming it,
//! and the hybrid transport's shared-memory segments must be gone from
//! `/dev/shm` (`.ci/run` checks).

#[path = "common/in_process.rs"]
mod in_process;
mod watchdog;
use in_process::in_process_world;
use tutti::world::World;

fn main() {
    let launched = tutti::world::launched_by_mpi();
    if !launched {
        in_process();
        return;
    }
    let world = World::from_env().expect("world");
    let mode = std::env::var("TUTTI_ABORT_TEST").unwrap_or_else(|_| "panic".into());
    match mode.as_str() {
        "panic" => {
            world.run(|loc| async move {
                if loc.rank() == 1 && loc.id().index() == loc.world().locations_per_rank() {
                    panic!("boom on purpose");
                }
                loc.barrier().await;
            });
        }
        "frame" => {
            if world.rank() == 0 {
                world.send_raw_frame(1, b"this is not a frame".to_vec());
            }
            world.run(|loc| async move {
                loc.barrier().await;
            });
        }
        // A collective called with arguments that cannot agree across ranks.
        "root" => {
            world.run(|loc| async move {
                // Rank 1 gathers at another root than rank 0.
                let root = tutti::world::LocationId::new(loc.rank() as u32);
                let _ = loc.gather(root, 1u8).await;
            });
        }
        "length" => {
            world.run(|loc| async move {
                // Rank 1 passes one value too many to all_to_all.
                let n = loc.world().locations() + usize::from(loc.rank() == 1);
                let _ = loc.all_to_all(vec![0u32; n]).await;
            });
        }
        "kind" => {
            world.run(|loc| async move {
                // Rank 1 scans where rank 0 gathers everything.
                if loc.rank() == 1 {
                    let _ = loc.scan(1u64, |a, b| a + b).await;
                } else {
                    let _ = loc.all_gather(1u64).await;
                }
            });
        }
        "kill" => {
            world.run(|loc| async move {
                if loc.rank() == 1 {
                    let pid = std::process::id().to_string();
                    let _ = std::process::Command::new("kill")
                        .args(["-9", &pid])
                        .status();
                    // `kill` returns before the signal lands.
                    std::thread::sleep(std::time::Duration::from_secs(60));
                }
                loc.barrier().await;
            });
        }
        other => {
            panic!("TUTTI_ABORT_TEST={other:?}: expected panic, frame, root, length, kind or kill")
        }
    }
    // A rank may finish its part before the failing one aborts the job;
    // the job as a whole must still fail (checked by `.ci/run`).
    println!("rank {} finished its part", world.rank());
}

fn in_process() {
    let world = in_process_world(3, 2);
    let err = world
        .try_run(|loc| async move {
            if loc.id().index() == 2 {
                panic!("boom on purpose");
            }
            loc.barrier().await;
        })
        .unwrap_err();
    assert_eq!(err.location.index(), 2);
    assert_eq!(err.message, "boom on purpose");
    assert!(err
        .to_string()
        .contains("location 2 panicked: boom on purpose"));
    println!("world_abort: a panicking location is reported, not hung on");

    // A location passing a row of the wrong length is reported naming it.
    let world = in_process_world(3, 2);
    let err = world
        .try_run(|loc| async move {
            let n = loc.world().locations() - usize::from(loc.id().index() == 1);
            let _ = loc.all_to_all(vec![0u8; n]).await;
        })
        .unwrap_err();
    assert!(
        err.message
            .contains("all_to_all: location 1 (rank 0) passes 2 values for a world of 3 locations"),
        "{err}"
    );
    println!("world_abort: a collective with inconsistent arguments is reported, not hung on");
}
