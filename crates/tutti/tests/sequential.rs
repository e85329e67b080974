//! Sequential groups run their tasks one at a time in submission order.
// This file uses tutti as a program would, with `std`'s atomics and locks: the
// loom-shim rule of `clippy.toml` is for the library's own code.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

mod watchdog;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use tutti::{Runtime, SequentialGroup};

#[test]
fn tasks_run_in_submission_order_one_at_a_time() {
    let rt = Runtime::builder().workers(2).build().unwrap();
    let _g = rt.enter();
    let group = SequentialGroup::new();
    let log = Arc::new(Mutex::new(Vec::new()));
    let running = Arc::new(AtomicUsize::new(0));
    let handles: Vec<_> = (0..200)
        .map(|i| {
            let (log, running) = (log.clone(), running.clone());
            group.spawn(async move {
                assert_eq!(
                    running.fetch_add(1, Ordering::SeqCst),
                    0,
                    "two group tasks overlapped"
                );
                // Suspend in the middle: the next task must still wait.
                if i % 3 == 0 {
                    tutti::runtime::yield_now().await;
                }
                log.lock().unwrap().push(i);
                running.fetch_sub(1, Ordering::SeqCst);
            })
        })
        .collect();
    for h in handles {
        h.join();
    }
    assert_eq!(*log.lock().unwrap(), (0..200).collect::<Vec<_>>());
}

#[test]
fn a_panicking_member_does_not_stall_the_group() {
    let group = SequentialGroup::new();
    let a = group.run(|| 1);
    let b = group.run(|| -> i32 { panic!("member failed") });
    let c = group.run(|| 3);
    assert_eq!(a.join(), 1);
    assert!(tutti::block_on(b.result()).is_err());
    assert_eq!(c.join(), 3);
}

#[test]
fn an_aborted_member_does_not_stall_the_group() {
    let group = SequentialGroup::new();
    let a = group.spawn(std::future::pending::<()>());
    let b = group.run(|| "after");
    a.abort();
    assert_eq!(b.join(), "after");
}
