//! `tutti::world::launch` (what `tutti launch` runs) when the launcher is
//! told to stop or is killed: nothing is left running and nothing is left
//! in `/dev/shm`.
//!
//! * `SIGTERM` to the launcher: it passes the signal on to its members,
//!   waits for them, removes the system's segments and returns their
//!   statuses (killed by signal 15).
//! * `SIGKILL` to the launcher: its members get their parent-death signal
//!   and end; the segments they leave are removed by the next `launch` on
//!   the host.
//! * The calling process's own handlers of the signals `launch` catches are
//!   back when it returns.
//!
//! The binary plays three parts, chosen by `SHM_LAUNCH_ROLE`: the test
//! itself, a launcher (a process that calls `launch`), and a member (which
//! joins the system, says so in a file, and sleeps until it is stopped).
// This file uses tutti as a program would, with `std`'s atomics and locks: the
// loom-shim rule of `clippy.toml` is for the library's own code.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

mod watchdog;

use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use tutti::world::World;

const ROLE: &str = "SHM_LAUNCH_ROLE";
const DIR: &str = "SHM_LAUNCH_DIR";

fn main() {
    match std::env::var(ROLE).as_deref() {
        Ok("member") => member(),
        Ok("launcher") => launcher(),
        _ => {
            sigterm_stops_the_members_and_removes_the_segments();
            println!(
                "shm_launch: SIGTERM to the launcher stops the members and removes the \
                 segments ... ok"
            );
            a_killed_launchers_segments_go_at_the_next_launch();
            println!(
                "shm_launch: the members of a killed launcher end, and the next launch removes \
                 their segments ... ok"
            );
            launch_gives_back_the_callers_signal_handlers();
            println!("shm_launch: the caller's signal handlers are back after a launch ... ok");
        }
    }
}

/// A member: joins the system, writes its pid to `<dir>/rank-<rank>`, and
/// sleeps until a signal ends it.
fn member() {
    let world = World::builder()
        .locations(1)
        .workers(1)
        .build()
        .expect("member: world");
    let dir = PathBuf::from(std::env::var(DIR).expect("member: dir"));
    let file = dir.join(format!("rank-{}", world.rank()));
    std::fs::write(file, std::process::id().to_string()).expect("member: pid file");
    loop {
        std::thread::sleep(Duration::from_secs(60));
    }
}

/// A launcher of two members; prints their statuses (`signal N` or `exit N`)
/// on one line.
fn launcher() {
    let mut c = Command::new(std::env::current_exe().expect("own path"));
    // Not the launcher's stdout: the test reads that pipe to its end.
    c.env(ROLE, "member").stdout(Stdio::null());
    let statuses = tutti::world::launch(2, c).expect("launch");
    let said: Vec<String> = statuses
        .iter()
        .map(|s| match (s.code(), s.signal()) {
            (Some(code), _) => format!("exit {code}"),
            (_, Some(sig)) => format!("signal {sig}"),
            _ => "unknown".into(),
        })
        .collect();
    println!("{}", said.join(", "));
}

/// Starts a launcher with a fresh directory for its members' pid files and
/// waits until both members are in; returns it, the directory and the
/// members' pids.
fn start_launcher(case: &str) -> (Child, PathBuf, Vec<i32>) {
    let dir = std::env::temp_dir().join(format!("tutti-shm-launch-{case}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    let mut launcher = Command::new(std::env::current_exe().expect("own path"))
        .env(ROLE, "launcher")
        .env(DIR, &dir)
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn the launcher");
    let deadline = Instant::now() + Duration::from_secs(60);
    let pids = loop {
        let pids: Vec<i32> = (0..2)
            .filter_map(|r| std::fs::read_to_string(dir.join(format!("rank-{r}"))).ok())
            .filter_map(|s| s.trim().parse().ok())
            .collect();
        if pids.len() == 2 {
            break pids;
        }
        if let Ok(Some(st)) = launcher.try_wait() {
            panic!("{case}: the launcher ended ({st}) before both members were in");
        }
        if Instant::now() > deadline {
            let _ = launcher.kill();
            panic!("{case}: the members were not in after 60 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    (launcher, dir, pids)
}

/// The `/dev/shm` entries of the systems `launcher` made.
fn segments_of(launcher: u32) -> Vec<String> {
    let prefix = format!("tutti-launch-{launcher}-");
    std::fs::read_dir("/dev/shm")
        .expect("/dev/shm")
        .flatten()
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| n.starts_with(&prefix))
        .collect()
}

/// Whether process `pid` has ended (gone, or a zombie nobody reaped yet).
fn ended(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        // The state follows the command's closing parenthesis.
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with(['Z', 'X'])),
    }
}

/// Waits up to 20 s for `done`; false if it never held.
fn eventually(mut done: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        if done() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    done()
}

fn signal(pid: u32, sig: libc::c_int) {
    // SAFETY: `kill` with a pid of this test's own child and a valid signal.
    let rc = unsafe { libc::kill(pid as libc::pid_t, sig) };
    assert_eq!(
        rc,
        0,
        "kill({pid}, {sig}): {}",
        std::io::Error::last_os_error()
    );
}

fn remove_dir(dir: &Path) {
    let _ = std::fs::remove_dir_all(dir);
}

fn sigterm_stops_the_members_and_removes_the_segments() {
    let (mut launcher, dir, pids) = start_launcher("term");
    let id = launcher.id();
    assert!(
        !segments_of(id).is_empty(),
        "the running system has no segment in /dev/shm"
    );
    signal(id, libc::SIGTERM);
    assert!(
        eventually(|| matches!(launcher.try_wait(), Ok(Some(_)))),
        "the launcher did not end within 20 s of SIGTERM"
    );
    let out = launcher.wait_with_output().expect("launcher output");
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "launcher: {}: {said}", out.status);
    assert_eq!(said.trim(), "signal 15, signal 15", "the members' statuses");
    for pid in pids {
        assert!(ended(pid), "member {pid} still runs");
    }
    let left = segments_of(id);
    assert!(left.is_empty(), "left in /dev/shm: {left:?}");
    remove_dir(&dir);
}

fn a_killed_launchers_segments_go_at_the_next_launch() {
    let (mut launcher, dir, pids) = start_launcher("kill");
    let id = launcher.id();
    signal(id, libc::SIGKILL);
    let st = launcher.wait().expect("reap the launcher");
    assert_eq!(st.signal(), Some(libc::SIGKILL), "{st}");
    for &pid in &pids {
        assert!(
            eventually(|| ended(pid)),
            "member {pid} still runs 20 s after its launcher was killed"
        );
    }
    assert!(
        !segments_of(id).is_empty(),
        "nothing was left to remove (the members removed their segments themselves?)"
    );
    let st = tutti::world::launch(1, Command::new("true")).expect("launch `true`");
    assert!(st[0].success(), "{st:?}");
    let left = segments_of(id);
    assert!(left.is_empty(), "still in /dev/shm: {left:?}");
    remove_dir(&dir);
}

/// The handler of `sig` this process has now.
fn handler(sig: libc::c_int) -> libc::sighandler_t {
    // SAFETY: a zeroed `sigaction` is valid for the kernel to fill; a null new
    // action only reads the current one.
    unsafe {
        let mut old: libc::sigaction = std::mem::zeroed();
        assert_eq!(libc::sigaction(sig, std::ptr::null(), &mut old), 0);
        old.sa_sigaction
    }
}

fn launch_gives_back_the_callers_signal_handlers() {
    // SIGHUP ignored, the rest as they were: each comes back as it was.
    // SAFETY: ignoring SIGHUP in this test process is harmless.
    unsafe { libc::signal(libc::SIGHUP, libc::SIG_IGN) };
    let sigs = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGCHLD];
    let before: Vec<_> = sigs.iter().map(|&s| handler(s)).collect();
    let st = tutti::world::launch(2, Command::new("true")).expect("launch `true`");
    assert!(st.iter().all(|s| s.success()), "{st:?}");
    let after: Vec<_> = sigs.iter().map(|&s| handler(s)).collect();
    assert_eq!(
        before, after,
        "handlers of SIGINT, SIGTERM, SIGHUP, SIGCHLD"
    );
    assert_eq!(after[2], libc::SIG_IGN);
}
