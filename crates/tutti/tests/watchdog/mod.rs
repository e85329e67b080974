//! The test watchdog: a test binary that is still running after a time limit aborts,
//! so that a plain `cargo test` whose test hangs fails (naming the binary and listing
//! its threads, which libtest names after the tests they run) instead of running
//! forever.
//!
//! Every test binary of the workspace includes this file — each integration suite as
//! `mod watchdog;`, the library's and the CLI's unit tests by `#[path]` — and so arms
//! the watchdog before `main` runs. The limit is `TUTTI_TEST_TIMEOUT` seconds
//! ([`DEFAULT_LIMIT`] if unset; `0` turns the watchdog off). It bounds a whole binary,
//! not one test: libtest gives no hook around a test, and a per-test wrapper would
//! have to be written into every test. A hang in any test still fails the run.

use std::time::Duration;

/// The limit for one test binary when `TUTTI_TEST_TIMEOUT` is unset: above the
/// slowest suite on a loaded 2-core machine (the library's loom models included),
/// far below CI's budget.
pub const DEFAULT_LIMIT: Duration = Duration::from_secs(900);

/// Arms the watchdog of this process (once, before `main`).
#[ctor::ctor(unsafe)]
fn arm() {
    let limit = match std::env::var("TUTTI_TEST_TIMEOUT") {
        Err(_) => DEFAULT_LIMIT,
        Ok(s) => match s.trim().parse::<f64>() {
            Ok(0.0) => return,
            Ok(secs) if secs.is_finite() && secs > 0.0 => Duration::from_secs_f64(secs),
            _ => {
                eprintln!(
                    "tutti test watchdog: TUTTI_TEST_TIMEOUT={s:?} is not a number of seconds; \
                     using {} s",
                    DEFAULT_LIMIT.as_secs()
                );
                DEFAULT_LIMIT
            }
        },
    };
    let _ = std::thread::Builder::new()
        .name("test-watchdog".into())
        .spawn(move || {
            std::thread::sleep(limit);
            expire(limit)
        });
}

/// The limit passed: say which binary hangs and what runs in it, then abort (a
/// signal, so that no lock a hung thread holds, stdout's included, can stop us).
fn expire(limit: Duration) -> ! {
    let exe = std::env::current_exe()
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| "this test binary".into());
    eprintln!(
        "\ntutti test watchdog: {exe} is still running after {:.0} s: a test hangs \
         (TUTTI_TEST_TIMEOUT sets the limit in seconds, 0 turns it off).\nthreads: {}",
        limit.as_secs_f64(),
        threads().join(", ")
    );
    std::process::abort()
}

/// The names of this process's threads (Linux; truncated to 15 bytes by the kernel).
fn threads() -> Vec<String> {
    let Ok(dir) = std::fs::read_dir("/proc/self/task") else {
        return vec!["(unknown)".into()];
    };
    let mut names: Vec<String> = dir
        .flatten()
        .filter_map(|t| std::fs::read_to_string(t.path().join("comm")).ok())
        .map(|n| n.trim_end().to_string())
        .filter(|n| n != "test-watchdog")
        .collect();
    names.sort();
    names
}
