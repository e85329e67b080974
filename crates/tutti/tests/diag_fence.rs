//! Fences that cannot end because the locations do not fence alike
//! (`tutti::diag`), in one process (across ranks: `diag_ranks.rs`):
//!
//! * a location fences once more than the other, whose body then returns —
//!   reported naming the location in the fence (with its collective's number)
//!   and the location that ended; the fence panics its location with the report;
//! * a location whose body returns without ever fencing, while the other fences;
//! * no report when a location reaches its fence late (it computes, sleeps and
//!   waits on a timer first), nor when every location fences as often;
//! * no report when a location waits in a barrier while `World::run` is still
//!   starting the others (their bodies not made yet).
//!
//! Without the diagnosis these runs hang. The deadlock mode is the default `Fail`.
// This file uses tutti as a program would, with `std`'s atomics and locks: the
// loom-shim rule of `clippy.toml` is for the library's own code.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

#[path = "common/in_process.rs"]
mod in_process;
mod watchdog;

use std::time::{Duration, Instant};

use in_process::in_process_world;
use tutti::world::Location;

/// A fence: receives until the world is quiet.
async fn fence(loc: &Location) {
    while loc.recv_until_quiet().await.is_some() {}
}

/// The message of the first location panic of `run`, which must fail.
fn panic_of(run: impl FnOnce()) -> String {
    let p = std::panic::catch_unwind(std::panic::AssertUnwindSafe(run))
        .expect_err("the stalled fence fails the run");
    p.downcast_ref::<String>()
        .cloned()
        .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default()
}

/// Location 0 fences `zero` times, location 1 `one` times; then both return.
fn fences(zero: usize, one: usize) -> String {
    let world = in_process_world(2, 2);
    panic_of(|| {
        world.run(move |loc| async move {
            let n = if loc.id().index() == 0 { zero } else { one };
            for _ in 0..n {
                fence(&loc).await;
            }
        });
    })
}

#[test]
fn a_location_fencing_once_more_than_the_other_is_reported() {
    let m = fences(2, 1);
    for want in [
        "location 0 cannot finish: it waits in a fence",
        "`location 0` waits in a fence (quiescence detection, collective #",
        "`location 1` has ended (its body returned): it will never enter a fence or \
         collective again",
    ] {
        assert!(m.contains(want), "missing {want:?} in\n{m}");
    }
}

#[test]
fn a_location_that_never_fences_is_reported() {
    let m = fences(1, 0);
    for want in [
        "`location 0` waits in a fence (quiescence detection, collective #0)",
        "`location 1` has ended (its body returned)",
    ] {
        assert!(m.contains(want), "missing {want:?} in\n{m}");
    }
}

#[test]
fn a_late_fence_and_equal_fences_are_not_reported() {
    let world = in_process_world(2, 2);
    world.run(|loc| async move {
        for round in 0..3 {
            if loc.id().index() == 1 && round == 1 {
                std::thread::sleep(Duration::from_millis(100));
                tutti::sleep(Duration::from_millis(100)).await;
                let t = Instant::now();
                while t.elapsed() < Duration::from_millis(100) {
                    std::hint::spin_loop();
                }
            }
            fence(&loc).await;
        }
    });
}

/// `World::run` makes each location's body (calls the closure) on the calling
/// thread, one after the other, and starts it. A location started first may
/// already wait in a barrier, its worker idle, while the closure of a later one
/// still runs: the later locations have not started, but they will, so the world
/// is not stalled. (The window the detector once misjudged, the caller
/// descheduled between starting one location and making the next one's node, has
/// no user code in it; the detector's unit tests cover a world whose nodes are not
/// all there.)
#[test]
fn a_barrier_while_run_still_starts_the_others_is_not_reported() {
    let world = in_process_world(3, 1);
    // A report would fail location 0's barrier (the default mode `Fail`), and
    // `run` would panic with it.
    world.run(|loc| {
        if loc.id().index() == 1 {
            // Long enough for location 0 to reach its barrier and its worker
            // to go idle (the detector looks then).
            std::thread::sleep(Duration::from_millis(300));
        }
        async move { loc.barrier().await }
    });
}
