//! The test watchdog (`tests/watchdog/mod.rs`): a test binary whose test hangs fails,
//! naming the binary and the hung test's thread, instead of running forever.

mod watchdog;

use std::process::Command;
use std::time::{Duration, Instant};

/// Set in the child run: only then does the victim hang.
const VICTIM: &str = "TUTTI_HANG_VICTIM";

#[test]
fn a_hanging_test_fails_its_binary() {
    if std::env::var_os(VICTIM).is_some() {
        return; // the child runs only the victim (`--exact`), but be sure
    }
    let start = Instant::now();
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "victim_hangs_when_asked", "--test-threads", "1"])
        .env("TUTTI_TEST_TIMEOUT", "1")
        .env(VICTIM, "1")
        .output()
        .expect("the test binary runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "a hung test passed: {stderr}");
    assert!(
        stderr.contains("tutti test watchdog:") && stderr.contains("is still running after 1 s"),
        "{stderr}"
    );
    // libtest names a test's thread after the test (the kernel keeps 15 bytes).
    assert!(stderr.contains("victim_hangs_wh"), "{stderr}");
    assert!(start.elapsed() < Duration::from_secs(60));
}

#[test]
fn victim_hangs_when_asked() {
    if std::env::var_os(VICTIM).is_some() {
        loop {
            std::thread::park();
        }
    }
}
