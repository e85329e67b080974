//! Faults of a shared-memory system: a member killed with `kill -9` is
//! detected, messages to it fail with `SendError::RankDied`, its mailbox
//! segment is removed, and the others go on (and end cleanly).
//!
//! The test launches 3 processes of this binary (`tutti::world::launch`);
//! each runs `member()` because `TUTTI_SYSTEM` is set.

mod watchdog;

use std::time::{Duration, Instant};

use tutti::world::{LocationId, SendError, World};

fn member() {
    let world = World::builder()
        .locations(1)
        .workers(1)
        .build()
        .expect("world");
    let system = world.config().system().expect("a named system").to_string();
    let rank = world.rank();
    world.run(move |loc| {
        let system = system.clone();
        async move {
            // Everyone is here before rank 2 dies.
            loc.barrier().await;
            if rank == 2 {
                let me = std::process::id().to_string();
                let _ = std::process::Command::new("kill")
                    .args(["-9", &me])
                    .status();
                std::thread::sleep(Duration::from_secs(60));
                unreachable!("kill -9 did not kill rank 2");
            }
            let dead = LocationId::new(2);
            let start = Instant::now();
            loop {
                match loc.send_slice(dead, b"are you there") {
                    Err(SendError::RankDied(to, ())) => {
                        assert_eq!(to, dead);
                        break;
                    }
                    Err(e) => panic!("unexpected error: {e}"),
                    Ok(()) => {}
                }
                assert!(
                    start.elapsed() < Duration::from_secs(20),
                    "rank 2's death was not detected"
                );
                tutti::sleep(Duration::from_millis(5)).await;
            }
            let e = loc.send_slice(dead, b"x").unwrap_err().to_string();
            assert!(e.contains("died"), "{e}");
            // Its mailbox segment is reclaimed (by whoever saw it first).
            let seg = format!("/dev/shm/tutti-{system}+2");
            let start = Instant::now();
            while std::path::Path::new(&seg).exists() {
                assert!(
                    start.elapsed() < Duration::from_secs(5),
                    "{seg} left behind"
                );
                tutti::sleep(Duration::from_millis(5)).await;
            }
            // The others go on: ranks 0 and 1 talk.
            let other = LocationId::new(1 - rank as u32);
            for i in 0..100u32 {
                loc.send_slice(other, &i.to_le_bytes()).unwrap();
                let d = loc.recv().await;
                assert_eq!(d.bytes(), Some(&i.to_le_bytes()[..]));
            }
        }
    });
    println!("shm_faults: rank {rank} went on after rank 2 died");
}

fn main() {
    if std::env::var_os("TUTTI_SYSTEM").is_some() {
        member();
        return;
    }
    let cmd = std::process::Command::new(std::env::current_exe().expect("own path"));
    let st = tutti::world::launch(3, cmd).expect("launch");
    use std::os::unix::process::ExitStatusExt;
    assert!(st[0].success(), "rank 0: {}", st[0]);
    assert!(st[1].success(), "rank 1: {}", st[1]);
    assert_eq!(st[2].signal(), Some(9), "rank 2: {}", st[2]);
    println!("shm_faults: a member killed with kill -9 was detected; the others went on");
    let left: Vec<String> = std::fs::read_dir("/dev/shm")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.starts_with(&format!("tutti-launch-{}-", std::process::id())))
        .collect();
    assert!(left.is_empty(), "left in /dev/shm: {left:?}");
}
