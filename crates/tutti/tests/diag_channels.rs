//! Waits on channels between locations in the deadlock diagnosis (`tutti::diag`),
//! in one process (the same across ranks: `diag_ranks.rs`):
//!
//! * two locations each waiting to receive on a channel only the other sends on —
//!   a cycle: reported naming both locations, each channel (number, ends,
//!   capacity, operation) and the cycle; each receive panics its location with
//!   the report;
//! * the same with one location in a `select!` over two channels from the other;
//! * no report for a slow but live peer: a location waits while its peer sleeps,
//!   waits on a timer and computes before it sends; nor for a selection whose
//!   other arm a live location will fire, while its first arm's peer waits on it.
//!
//! The deadlock mode is the default `Fail` throughout.
// This file uses tutti as a program would, with `std`'s atomics and locks: the
// loom-shim rule of `clippy.toml` is for the library's own code.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

#[path = "common/in_process.rs"]
mod in_process;
mod watchdog;

use std::time::{Duration, Instant};

use in_process::in_process_world;
use tutti::world::LocationId;

/// The message of the first location panic of `run`, which must fail.
fn panic_of(run: impl FnOnce()) -> String {
    let p = std::panic::catch_unwind(std::panic::AssertUnwindSafe(run))
        .expect_err("the deadlock fails the run");
    p.downcast_ref::<String>()
        .cloned()
        .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default()
}

#[test]
fn two_locations_receiving_from_each_other_are_a_reported_cycle() {
    let world = in_process_world(2, 2);
    let m = panic_of(|| {
        world.run(|loc| async move {
            let other = LocationId::new(1 - loc.id().index() as u32);
            let cap = if loc.id().index() == 0 { 2 } else { 0 };
            // Both ends of both channels are open; nobody sends.
            let tx = loc.channel_to::<u32>(other, 2 - cap).unwrap();
            let rx = loc.channel_from::<u32>(other, cap).unwrap();
            let _ = rx.recv().await;
            drop(tx);
        });
    });
    assert!(
        m.contains("cannot finish: it waits to receive on the channel #0"),
        "{m}"
    );
    for want in [
        "`location 0` waits to receive on the channel #0 from location 1 to location 0 \
         (capacity 2, `RemoteRx::recv`)",
        "`location 1` waits to receive on the channel #0 from location 0 to location 1 \
         (rendezvous, `RemoteRx::recv`)",
    ] {
        assert!(m.contains(want), "missing {want:?} in\n{m}");
    }
    assert!(
        m.contains("cycle: `location 0` → `location 1` → `location 0`")
            || m.contains("cycle: `location 1` → `location 0` → `location 1`"),
        "{m}"
    );
}

#[test]
fn a_select_over_two_channels_in_a_cycle_is_reported() {
    let world = in_process_world(2, 2);
    let m = panic_of(|| {
        world.run(|loc| async move {
            let (zero, one) = (LocationId::new(0), LocationId::new(1));
            if loc.id() == zero {
                let a = loc.channel_from::<u32>(one, 1).unwrap();
                let b = loc.channel_from::<String>(one, 4).unwrap();
                let _tx = loc.channel_to::<u32>(one, 1).unwrap();
                tutti::select! {
                    future(a.recv()) -> _v => {},
                    future(b.recv()) -> _v => {},
                }
            } else {
                let _a = loc.channel_to::<u32>(zero, 1).unwrap();
                let _b = loc.channel_to::<String>(zero, 4).unwrap();
                let rx = loc.channel_from::<u32>(zero, 1).unwrap();
                let _ = rx.recv().await;
            }
        });
    });
    for want in [
        "`location 0` waits on whichever comes first (a selection): to receive on the channel \
         #0 from location 1 to location 0 (capacity 1, `RemoteRx::recv`); or to receive on the \
         channel #1 from location 1 to location 0 (capacity 4, `RemoteRx::recv`)",
        "`location 1` waits to receive on the channel #0 from location 0 to location 1",
    ] {
        assert!(m.contains(want), "missing {want:?} in\n{m}");
    }
    assert!(m.contains("cycle: `location"), "{m}");
}

/// Busy for `d` without yielding (a worker held, the location running).
fn spin(d: Duration) {
    let t = Instant::now();
    while t.elapsed() < d {
        std::hint::spin_loop();
    }
}

#[test]
fn a_slow_but_live_peer_is_not_reported() {
    let world = in_process_world(2, 2);
    let got = world.run(|loc| async move {
        let other = LocationId::new(1 - loc.id().index() as u32);
        let tx = loc.channel_to::<u32>(other, 0).unwrap();
        let rx = loc.channel_from::<u32>(other, 0).unwrap();
        if loc.id().index() == 0 {
            // Waits while location 1 sleeps, waits on a timer, computes.
            let v = rx.recv().await.unwrap();
            tx.send(v + 1).await.unwrap();
            v
        } else {
            std::thread::sleep(Duration::from_millis(150));
            tutti::sleep(Duration::from_millis(150)).await;
            spin(Duration::from_millis(150));
            tx.send(41).await.unwrap();
            rx.recv().await.unwrap()
        }
    });
    assert_eq!(got, [41, 42]);
}

#[test]
fn a_selection_with_a_live_arm_is_not_reported() {
    // Location 0 selects over channels from 1 and from 2; 1 waits on 0 (that
    // arm alone would be a cycle); 2 sends after a while.
    let world = in_process_world(3, 2);
    let got = world.run(|loc| async move {
        let me = loc.id().index();
        let at = |i: u32| LocationId::new(i);
        match me {
            0 => {
                let from1 = loc.channel_from::<u32>(at(1), 1).unwrap();
                let from2 = loc.channel_from::<u32>(at(2), 1).unwrap();
                let to1 = loc.channel_to::<u32>(at(1), 1).unwrap();
                let v = tutti::select! {
                    future(from1.recv()) -> v => v.unwrap(),
                    future(from2.recv()) -> v => v.unwrap(),
                };
                to1.send(v).await.unwrap();
                v
            }
            1 => {
                let _to0 = loc.channel_to::<u32>(at(0), 1).unwrap();
                let from0 = loc.channel_from::<u32>(at(0), 1).unwrap();
                from0.recv().await.unwrap()
            }
            _ => {
                let to0 = loc.channel_to::<u32>(at(0), 1).unwrap();
                tutti::sleep(Duration::from_millis(100)).await;
                spin(Duration::from_millis(150));
                to0.send(7).await.unwrap();
                7
            }
        }
    });
    assert_eq!(got, [7, 7, 7]);
}
