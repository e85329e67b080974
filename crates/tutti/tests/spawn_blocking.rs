//! `spawn_blocking`: blocking closures run apart from the workers, in a pool whose
//! cap holds; their handles await, re-raise panics and report cancellation like a
//! task's; the runtime is entered inside them; shutdown cancels the queued ones.
// This file uses tutti as a program would, with `std`'s atomics and locks: the
// loom-shim rule of `clippy.toml` is for the library's own code.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

mod watchdog;

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

use tutti::{BuildError, JoinError, Outcome, Runtime};

fn rt(workers: usize, cap: usize) -> Runtime {
    Runtime::builder()
        .workers(workers)
        .max_blocking_threads(cap)
        .build()
        .unwrap()
}

/// On a one-worker runtime, a closure blocked on a plain channel waits for a value
/// that only a task on that worker sends: were the closure on the worker, neither
/// could ever run.
#[test]
fn a_blocking_call_does_not_stall_the_only_worker() {
    let rt = rt(1, 4);
    let (tx, rx) = mpsc::channel::<u32>();
    let blocked = rt.spawn_blocking(move || rx.recv().unwrap() * 2);
    let got = rt.block_on(async move {
        // Many rounds of task work on the one worker while the closure blocks.
        let mut sum = 0;
        for i in 0..100u32 {
            sum += tutti::spawn(async move {
                tutti::yield_now().await;
                i
            })
            .await;
        }
        tx.send(sum).unwrap();
        blocked.await
    });
    assert_eq!(got, 2 * 4950);
}

/// Eight closures on a pool capped at two threads: never more than two run at once,
/// at most two threads are ever started, and all eight complete.
#[test]
fn the_pool_cap_holds() {
    let rt = rt(2, 2);
    let running = Arc::new(AtomicUsize::new(0));
    let peak = Arc::new(AtomicUsize::new(0));
    let threads = Arc::new(Mutex::new(HashSet::new()));
    let handles: Vec<_> = (0..8u64)
        .map(|i| {
            let (running, peak, threads) = (running.clone(), peak.clone(), threads.clone());
            rt.spawn_blocking(move || {
                let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                peak.fetch_max(now, Ordering::SeqCst);
                threads
                    .lock()
                    .unwrap()
                    .insert(std::thread::current().name().map(str::to_owned));
                std::thread::sleep(Duration::from_millis(10));
                running.fetch_sub(1, Ordering::SeqCst);
                i
            })
        })
        .collect();
    let sum: u64 = rt.block_on(async {
        let mut sum = 0;
        for h in handles {
            sum += h.await;
        }
        sum
    });
    assert_eq!(sum, 28);
    assert_eq!(peak.load(Ordering::SeqCst), 2, "two threads work at once");
    let threads = threads.lock().unwrap();
    assert!(threads.len() <= 2, "{threads:?}");
    assert!(
        threads.iter().all(|n| n
            .as_deref()
            .is_some_and(|n| n.starts_with("tutti-blocking-"))),
        "{threads:?}"
    );
}

#[test]
fn a_panic_in_the_closure_reaches_the_joiner() {
    let rt = rt(1, 2);
    let h = rt.spawn_blocking(|| -> u32 { panic!("disk on fire") });
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| h.join()));
    assert_eq!(*r.unwrap_err().downcast::<&str>().unwrap(), "disk on fire");
    match rt.block_on(rt.spawn_blocking(|| -> u32 { panic!("again") }).result()) {
        Err(JoinError::Panicked(p)) => assert_eq!(*p.downcast::<&str>().unwrap(), "again"),
        other => panic!("unexpected {other:?}"),
    }
    // The pool's thread survived.
    assert_eq!(rt.spawn_blocking(|| 3).join(), 3);
}

/// With the only thread busy, a queued closure aborted before it starts never runs,
/// and its outcome is `Cancelled` (reported when a thread reaches it in the queue, as
/// the job is dropped there).
#[test]
fn aborting_a_queued_call_cancels_it() {
    let rt = rt(1, 1);
    let (go, wait) = mpsc::channel::<()>();
    let first = rt.spawn_blocking(move || wait.recv().unwrap());
    let ran = Arc::new(AtomicBool::new(false));
    let r = ran.clone();
    let second = rt.spawn_blocking(move || r.store(true, Ordering::SeqCst));
    let (otx, orx) = mpsc::channel();
    second.on_finish(move |o| otx.send(o).unwrap());
    second.abort();
    go.send(()).unwrap();
    first.join();
    assert_eq!(orx.recv().unwrap(), Outcome::Cancelled);
    rt.spawn_blocking(|| ()).join();
    assert!(!ran.load(Ordering::SeqCst));
}

/// Inside the closure the runtime is entered: `spawn` goes to it, `block_on` waits.
#[test]
fn the_runtime_is_entered_inside_the_closure() {
    let rt = rt(2, 2);
    let v = rt.block_on(async {
        tutti::spawn_blocking(|| tutti::block_on(tutti::spawn(async { 20 })) + 1).await
    });
    assert_eq!(v, 21);
    // And nested: a blocking closure spawning another.
    let v = rt
        .spawn_blocking(|| tutti::spawn_blocking(|| 5).join() * 2)
        .join();
    assert_eq!(v, 10);
}

/// Shutdown cancels closures still queued; the running one finishes on its thread.
#[test]
fn shutdown_cancels_queued_calls() {
    let rt = rt(1, 1);
    let (go, wait) = mpsc::channel::<()>();
    let (started_tx, started) = mpsc::channel::<()>();
    let running = rt.spawn_blocking(move || {
        started_tx.send(()).unwrap();
        wait.recv().unwrap();
        7
    });
    let queued = rt.spawn_blocking(|| 8);
    started.recv().unwrap();
    drop(rt);
    assert!(matches!(
        tutti::block_on(queued.result()),
        Err(JoinError::Cancelled)
    ));
    go.send(()).unwrap();
    assert_eq!(tutti::block_on(running), 7);
}

#[test]
fn a_zero_cap_is_refused() {
    let e = Runtime::builder()
        .workers(1)
        .max_blocking_threads(0)
        .build()
        .unwrap_err();
    assert!(matches!(e, BuildError::ZeroBlockingThreads), "{e}");
    assert!(e.to_string().contains("max_blocking_threads(0)"), "{e}");
}
