//! Named shared-memory systems started by hand (no launcher): the first
//! process creates the system, the second joins; ranks disagreeing on their
//! locations fail naming it; a segment a crashed run of another layout
//! version left behind is removed, never reused.

mod watchdog;

use std::process::{Command, Output};

fn member() {
    let world = tutti::world::World::from_env().expect("world");
    let sums = world.run(|loc| async move {
        loc.all_reduce(loc.id().index() as u64 + 1, |a, b| a + b)
            .await
    });
    let n = world.locations() as u64;
    assert_eq!(sums[0], n * (n + 1) / 2);
    println!("rank {} of {}", world.rank(), world.ranks());
}

/// Starts 2 processes of this binary by hand in system `name`, with the given
/// locations each, and waits for both.
fn by_hand(name: &str, locations: [&str; 2]) -> Vec<Output> {
    by_hand_with(name, locations, &[])
}

/// [`by_hand`] with more environment variables.
fn by_hand_with(name: &str, locations: [&str; 2], env: &[(&str, &str)]) -> Vec<Output> {
    let children: Vec<_> = locations
        .iter()
        .map(|l| {
            Command::new(std::env::current_exe().unwrap())
                .envs(env.iter().copied())
                .env("TUTTI_SYSTEM", name)
                .env("TUTTI_RANKS", "2")
                .env("TUTTI_LOCATIONS", l)
                .env("TUTTI_WORKERS", "1")
                .env("TUTTI_SHM_TIMEOUT_S", "20")
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    children
        .into_iter()
        .map(|c| c.wait_with_output().unwrap())
        .collect()
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn main() {
    if std::env::var_os("TUTTI_SYSTEM").is_some() {
        member();
        return;
    }
    let base = format!("test-{}", std::process::id());

    // By hand: ranks are claimed first come, first served.
    let name = format!("{base}-hand");
    let out = by_hand(&name, ["2", "2"]);
    let mut ranks: Vec<String> = out.iter().map(|o| text(o).trim().to_string()).collect();
    ranks.sort();
    assert!(out.iter().all(|o| o.status.success()), "{ranks:?}");
    assert_eq!(ranks, ["rank 0 of 2", "rank 1 of 2"]);
    assert!(!std::path::Path::new(&format!("/dev/shm/tutti-{name}")).exists());
    println!("shm_system: two processes started by hand formed one system");

    // Locations that differ: both refuse, naming it.
    let out = by_hand(&format!("{base}-differ"), ["1", "2"]);
    for o in &out {
        assert!(!o.status.success());
        assert!(text(o).contains("LocationsDiffer"), "{}", text(o));
    }
    println!("shm_system: differing locations refused");
    let left: Vec<String> = std::fs::read_dir("/dev/shm")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.starts_with(&format!("tutti-{base}-differ")))
        .collect();
    assert!(left.is_empty(), "a refused start left {left:?} in /dev/shm");

    // A stale segment of another layout version, its creator gone.
    let name = format!("{base}-stale");
    let path = format!("/dev/shm/tutti-{name}");
    let mut bytes = vec![0u8; 4096];
    bytes[..8].copy_from_slice(b"tuttiSHM");
    bytes[8..16].copy_from_slice(&99u64.to_le_bytes());
    bytes[16..24].copy_from_slice(&u64::from(u32::MAX - 7).to_le_bytes());
    std::fs::write(&path, &bytes).unwrap();
    let out = by_hand(&name, ["1", "1"]);
    let all: String = out.iter().map(text).collect();
    assert!(out.iter().all(|o| o.status.success()), "{all}");
    assert!(all.contains("removing the stale segment"), "{all}");
    assert!(all.contains("layout version 99"), "{all}");
    println!("shm_system: a stale segment of layout version 99 was removed, not reused");

    // Two processes finding one stale segment at once (each pausing between
    // its judgement and the removal): one removes it, both end in one system.
    for round in 0..3 {
        let name = format!("{base}-race{round}");
        let path = format!("/dev/shm/tutti-{name}");
        std::fs::write(&path, &bytes).unwrap();
        let out = by_hand_with(
            &name,
            ["1", "1"],
            &[("TUTTI_SHM_TEST_STALE_PAUSE_MS", "300")],
        );
        let all: String = out.iter().map(text).collect();
        assert!(out.iter().all(|o| o.status.success()), "{all}");
        assert_eq!(
            all.matches("removing the stale segment").count(),
            1,
            "{all}"
        );
        assert!(!std::path::Path::new(&path).exists());
    }
    println!("shm_system: two processes re-creating a stale system at once formed one system");
}
