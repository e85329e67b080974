//! Timers on the scheduler, through the public API only: tasks that sleep give their
//! worker back, timeouts inside tasks, and sleeps on plain threads.
//!
//! No test asserts an upper bound on time; "at least `d` elapsed" is guaranteed.
// This file uses tutti as a program would, with `std`'s atomics and locks: the
// loom-shim rule of `clippy.toml` is for the library's own code.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

mod watchdog;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tutti::runtime::{sleep, sleep_until, timeout, timeout_at, Elapsed};
use tutti::Runtime;

fn one_worker() -> Runtime {
    Runtime::builder().workers(1).build().unwrap()
}

#[test]
fn a_sleeping_task_gives_its_worker_back() {
    let rt = one_worker();
    let log = Arc::new(Mutex::new(Vec::new()));
    let outer = {
        let log = log.clone();
        let inner_log = log.clone();
        rt.spawn(async move {
            // Queued before this task sleeps; with one worker it can only run while this
            // task is suspended in the sleep.
            let other = tutti::spawn(async move { inner_log.lock().unwrap().push("other") });
            sleep(Duration::from_millis(20)).await;
            log.lock().unwrap().push("sleeper");
            other.await;
        })
    };
    rt.block_on(outer);
    assert_eq!(*log.lock().unwrap(), ["other", "sleeper"]);
}

#[test]
fn many_tasks_sleep_concurrently() {
    let rt = Runtime::builder().workers(2).build().unwrap();
    let handles: Vec<_> = (0..64u64)
        .map(|i| {
            rt.spawn(async move {
                let d = Duration::from_millis(i % 8);
                let start = Instant::now();
                sleep(d).await;
                assert!(start.elapsed() >= d);
                i
            })
        })
        .collect();
    let sum: u64 = handles.into_iter().map(|h| rt.block_on(h)).sum();
    assert_eq!(sum, (0..64u64).sum::<u64>());
}

#[test]
fn timeouts_inside_tasks() {
    let rt = one_worker();
    let r = rt.block_on(rt.spawn(async {
        let won = timeout(Duration::from_secs(3600), async { 1 }).await;
        let lost = timeout(Duration::from_millis(5), std::future::pending::<u8>()).await;
        let slept = timeout(Duration::from_secs(3600), sleep(Duration::from_millis(1))).await;
        (won, lost, slept)
    }));
    let (won, lost, slept) = r;
    assert_eq!(won, Ok(1));
    let err: Elapsed = lost.unwrap_err();
    assert_eq!(err.to_string(), "deadline elapsed");
    assert_eq!(slept, Ok(()));
}

#[test]
fn sleep_and_timeout_on_a_plain_thread() {
    let d = Duration::from_millis(10);
    let start = Instant::now();
    tutti::block_on(sleep(d));
    assert!(start.elapsed() >= d);

    let at = Instant::now() + d;
    tutti::block_on(sleep_until(at));
    assert!(Instant::now() >= at);

    let at = Instant::now() + d;
    let r = tutti::block_on(timeout_at(at, std::future::pending::<()>()));
    assert_eq!(r.unwrap_err().to_string(), "deadline elapsed");
    assert!(Instant::now() >= at);
}

#[test]
fn past_deadlines_complete_at_once() {
    let past = Instant::now() - Duration::from_millis(1);
    tutti::block_on(sleep_until(past));
    tutti::block_on(sleep(Duration::ZERO));
    assert!(tutti::block_on(timeout_at(past, std::future::pending::<()>())).is_err());
    assert_eq!(tutti::block_on(timeout_at(past, async { 3 })), Ok(3));
}
