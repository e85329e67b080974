//! Unit tests of the world on the in-process transport (the same bodies also run
//! under MPI in `tests/world.rs`).

use crate::loom::Ordering as StdOrdering;
use std::time::Duration;

use super::*;

fn world(locations: usize, workers: usize, aggregation: usize) -> World {
    World::builder()
        .ignore_env()
        .transport(TransportKind::InProcess)
        .locations(locations)
        .workers(workers)
        .aggregation(aggregation)
        .build()
        .unwrap()
}

#[test]
fn send_errors_name_the_destination_and_return_the_message() {
    let w = world(2, 1, 1);
    let out = w.run(|loc| async move {
        let e = loc.send(LocationId::new(9), String::from("x")).unwrap_err();
        assert!(e.to_string().contains("location 9"), "{e}");
        assert_eq!(e.into_inner(), "x");
        let e = loc.send_bytes(LocationId::new(2), vec![1]).unwrap_err();
        assert_eq!(e, SendError::NoSuchLocation(LocationId::new(2), vec![1]));
    });
    assert_eq!(out.len(), 2);
}

#[test]
fn a_delivery_counts_as_handled_when_dropped() {
    let w = world(1, 1, 1);
    let loc = w.location(0).unwrap();
    let slot = &w.shared().local.slots[0];
    loc.send(loc.id(), 5u32).unwrap();
    loc.send_bytes(loc.id(), vec![1, 2]).unwrap();
    assert_eq!(slot.sent.load(StdOrdering::SeqCst), 2);
    let mut d = loc.try_recv().unwrap();
    assert_eq!(d.value::<u32>(), Some(&5));
    assert_eq!(d.take::<u64>(), None, "wrong type leaves the value");
    assert_eq!(d.take::<u32>(), Some(5));
    assert_eq!(d.take::<u32>(), None, "taken once");
    assert_eq!(slot.handled.load(StdOrdering::SeqCst), 0);
    drop(d);
    assert_eq!(slot.handled.load(StdOrdering::SeqCst), 1);
    let mut d = loc.recv_blocking();
    assert_eq!(d.bytes(), Some(&[1u8, 2][..]));
    assert_eq!(d.take::<Vec<u8>>(), Some(vec![1, 2]));
    drop(d);
    assert_eq!(slot.handled.load(StdOrdering::SeqCst), 2);
    assert!(loc.try_recv().is_none());
    assert!(!loc.poll());
}

#[test]
fn a_location_handle_is_exclusive_and_run_needs_them_all() {
    let w = world(2, 1, 1);
    let l0 = w.location(0).unwrap();
    assert!(w.location(0).is_none());
    assert!(w.location(2).is_none());
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        w.run(|_loc| async {});
    }));
    let msg = r.unwrap_err();
    assert!(
        crate::runtime::payload_text(&*msg).contains("location 0 is in use"),
        "{}",
        crate::runtime::payload_text(&*msg)
    );
    drop(l0);
    assert_eq!(w.run(|loc| async move { loc.id().index() }), [0, 1]);
}

#[test]
fn mismatched_collectives_are_reported_with_both_sides() {
    let w = world(2, 2, 1);
    let err = w
        .try_run(|loc| async move {
            if loc.id().index() == 0 {
                loc.barrier().await;
            } else {
                loc.all_reduce(1u8, |a, b| a + b).await;
            }
        })
        .unwrap_err();
    assert!(err.message.contains("collective #0"), "{err}");
    assert!(
        err.message.contains("barrier") && err.message.contains("all_reduce"),
        "{err}"
    );

    let w = world(2, 2, 1);
    let err = w
        .try_run(|loc| async move {
            if loc.id().index() == 0 {
                loc.all_reduce(1u8, |a, b| a + b).await;
            } else {
                loc.all_reduce(1u16, |a, b| a + b).await;
            }
        })
        .unwrap_err();
    assert!(
        err.message.contains("u8") && err.message.contains("u16"),
        "{err}"
    );

    let w = world(2, 1, 1);
    let err = w
        .try_run(|loc| async move { loc.broadcast::<u8>(LocationId::new(0), None).await })
        .unwrap_err();
    assert!(
        err.message.contains("root location 0 passed no value"),
        "{err}"
    );
    let w = world(1, 1, 1);
    let err = w
        .try_run(|loc| async move { loc.reduce(LocationId::new(3), 1u8, |a, b| a + b).await })
        .unwrap_err();
    assert!(err.message.contains("not a location"), "{err}");
}

#[test]
fn collectives_work_from_plain_threads_with_blocking_waits() {
    let w = world(3, 2, 1);
    let handles: Vec<_> = (0..3)
        .map(|i| {
            let loc = w.location(i).unwrap();
            std::thread::spawn(move || {
                loc.barrier().wait();
                let s = loc.all_reduce(i as u32, |a, b| a + b).wait();
                let r = loc
                    .reduce(LocationId::new(0), i as u32, |a, b| a.max(b))
                    .wait();
                (s, r)
            })
        })
        .collect();
    let got: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    assert_eq!(got, [(3, Some(2)), (3, None), (3, None)]);
    // Every round was cleaned up.
    assert!(w.shared().local.rounds.is_empty());
}

#[test]
fn aggregated_messages_wait_for_a_flush_or_the_time_bound() {
    let w = World::builder()
        .ignore_env()
        .transport(TransportKind::InProcess)
        .locations(2)
        .workers(1)
        .aggregation(4)
        .flush_after(Duration::from_millis(30))
        .build()
        .unwrap();
    let a = w.location(0).unwrap();
    let b = w.location(1).unwrap();
    // Below the factor: buffered.
    for i in 0..3u8 {
        a.send(b.id(), i).unwrap();
    }
    assert!(b.try_recv().is_none());
    // The fourth fills the buffer: sent as one batch.
    a.send(b.id(), 3u8).unwrap();
    for i in 0..4u8 {
        assert_eq!(b.try_recv().unwrap().take::<u8>(), Some(i));
    }
    // An explicit flush.
    a.send(b.id(), 9u8).unwrap();
    assert!(b.try_recv().is_none());
    a.flush();
    assert_eq!(b.try_recv().unwrap().take::<u8>(), Some(9));
    // The time bound: nobody flushes, the sweeper does.
    a.send(b.id(), 10u8).unwrap();
    assert!(b.try_recv().is_none());
    let mut d = b.recv_blocking();
    assert_eq!(d.take::<u8>(), Some(10));
}

#[test]
fn waiting_flushes_the_waiters_own_buffers() {
    let w = world(2, 2, 100);
    let got = w.run(|loc| async move {
        let other = LocationId::new(1 - loc.id().index() as u32);
        loc.send(other, loc.id()).unwrap();
        // Without the flush on wait, both would wait for ever.
        let mut d = loc.recv().await;
        d.take::<LocationId>().unwrap()
    });
    assert_eq!(got, [LocationId::new(1), LocationId::new(0)]);
}

/// A location inside `recv_until_quiet` keeps serving while it waits for a wave:
/// location 0 asks location 1 (already fencing) and waits for the answer before
/// it fences itself. (A fence that stopped handing messages out during a wave,
/// to end in one wave, would hang here.)
#[test]
fn a_fencing_location_keeps_serving() {
    let w = world(2, 2, 1);
    let got = w.run(|loc| async move {
        let other = LocationId::new(1 - loc.id().index() as u32);
        let mut n = 0;
        if loc.id().index() == 0 {
            // Location 1 is inside its fence by then.
            std::thread::sleep(Duration::from_millis(50));
            loc.send(other, 1u32).unwrap();
            let mut d = loc.recv().await;
            n += d.take::<u32>().unwrap();
        }
        while let Some(mut d) = loc.recv_until_quiet().await {
            let v = d.take::<u32>().unwrap();
            loc.send(other, v + 1).unwrap();
            n += v;
        }
        n
    });
    assert_eq!(got, [2, 1]);
}

/// A detection after a phase that sent nothing takes one wave (its first wave
/// is compared with the previous detection's last), and one after traffic ends
/// too; each location's collective count shows the waves.
#[test]
fn a_quiet_phase_costs_one_wave() {
    let w = world(3, 2, 4);
    let waves = w.run(|loc| async move {
        let slot = &loc.shared().local.slots[loc.local_index()];
        let mut waves = Vec::new();
        for round in 0..4 {
            if round == 2 {
                let next = LocationId::new(((loc.id().index() + 1) % 3) as u32);
                loc.send(next, 1u8).unwrap();
            }
            let before = slot.epochs();
            while let Some(d) = loc.recv_until_quiet().await {
                drop(d);
            }
            waves.push(slot.epochs() - before);
        }
        waves
    });
    for w in &waves {
        assert_eq!(w[0], 1, "the first detection, nothing sent: {waves:?}");
        assert_eq!(w[1], 1, "nothing sent since the last: {waves:?}");
        assert!(w[2] >= 2, "traffic needs a second wave: {waves:?}");
        assert_eq!(w[3], 1, "quiet again: {waves:?}");
    }
}
