//! Processes of one host as one program: a world whose ranks are OS processes
//! that talk through shared memory, without MPI.
//!
//! ```sh
//! cargo run -p tutti --example shm_processes                  # starts itself as 3 processes
//! tutti launch -n 4 -- target/debug/examples/shm_processes    # or started by the launcher
//! ```
//!
//! Run plainly, the program is the launcher: `tutti::world::launch` starts 3
//! copies of it as one named system (what `tutti launch -n 3 -- …` does) and
//! waits for them. Each copy finds the system in its environment
//! (`TUTTI_SYSTEM`, `TUTTI_RANKS`, `TUTTI_RANK`), builds its world from it and
//! becomes one rank: a token goes around the ring of all locations, one hop
//! per location, each adding its process id to it, and an all-reduce sums the
//! hops. Every rank checks what it received; a wrong result makes that rank
//! exit with an error, and the launcher reports which rank failed.

use tutti::world::{LocationId, World};

const PROCESSES: usize = 3;
const ROUNDS: usize = 3;

/// One rank of the system.
fn member() -> Result<(), String> {
    let world = World::from_env().map_err(|e| format!("cannot join the system: {e}"))?;
    let results = world.run(|loc| async move {
        let n = loc.world().locations();
        let me = loc.id().index();
        let right = LocationId::new(((me + 1) % n) as u32);
        let mut hops = 0u64;
        let mut pids = Vec::new();
        for round in 0..ROUNDS {
            // Location 0 starts each round with an empty token.
            if me == 0 {
                loc.send_bytes(right, Vec::new())
                    .map_err(|e| e.to_string())?;
            }
            let mut token = loc.recv().await;
            let mut bytes = token.take_bytes().ok_or("a token of bytes")?;
            drop(token);
            hops += 1;
            if me == 0 {
                // The token came all the way round: one pid per process
                // (each location adds its process's pid, once per location).
                pids = bytes
                    .chunks_exact(4)
                    .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
                    .collect();
                if pids.len() != n - 1 {
                    return Err(format!(
                        "round {round}: the token visited {} locations",
                        pids.len()
                    ));
                }
            } else {
                bytes.extend_from_slice(&std::process::id().to_le_bytes());
                loc.send_bytes(right, bytes).map_err(|e| e.to_string())?;
            }
        }
        let total = loc.all_reduce(hops, |a, b| a + b).await;
        Ok::<_, String>((me, loc.rank(), total, pids))
    });
    for r in results {
        let (me, rank, total, pids) = r?;
        let n = world.locations() as u64;
        if total != ROUNDS as u64 * n {
            return Err(format!(
                "location {me}: {total} hops in all, expected {}",
                ROUNDS as u64 * n
            ));
        }
        if me == 0 {
            let mut distinct = pids.clone();
            distinct.push(std::process::id());
            distinct.sort_unstable();
            distinct.dedup();
            println!(
                "rank {rank} (pid {}): the token went round {ROUNDS} times through {n} locations \
                 in {} processes (pids {pids:?}); {total} hops in all",
                std::process::id(),
                distinct.len(),
            );
            if distinct.len() != world.ranks() {
                return Err(format!(
                    "the token saw {} processes, the system has {}",
                    distinct.len(),
                    world.ranks()
                ));
            }
        }
    }
    Ok(())
}

fn main() {
    if std::env::var_os("TUTTI_SYSTEM").is_some() {
        if let Err(e) = member() {
            eprintln!(
                "shm_processes: rank {}: {e}",
                std::env::var("TUTTI_RANK").unwrap_or_default()
            );
            std::process::exit(1);
        }
        return;
    }
    // The launcher: start this same program as the processes of one system.
    let me = std::env::current_exe().expect("the path of this program");
    println!(
        "starting {PROCESSES} processes of {} as one system",
        me.display()
    );
    let statuses = tutti::world::launch(PROCESSES, std::process::Command::new(me))
        .expect("the processes start");
    let failed: Vec<usize> = (0..PROCESSES).filter(|&r| !statuses[r].success()).collect();
    if !failed.is_empty() {
        eprintln!("shm_processes: rank(s) {failed:?} failed");
        std::process::exit(1);
    }
    println!("verified: every rank of the system checked its part");
}
