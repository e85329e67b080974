//! Async tasks: spawn, await, panics, cancellation, callbacks, fairness and
//! the interplay with `join` and `block_on`.
// This file uses tutti as a program would, with `std`'s atomics and locks: the
// loom-shim rule of `clippy.toml` is for the library's own code.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

mod watchdog;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::task::{Context, Poll, Waker};

use tutti::{JoinError, Outcome, Runtime};

fn rt(n: usize) -> Runtime {
    Runtime::builder().workers(n).build().unwrap()
}

#[test]
fn a_million_tasks() {
    let rt = rt(2);
    let sum = rt.block_on(async {
        let handles: Vec<_> = (0..1_000_000u64)
            .map(|i| tutti::spawn(async move { i }))
            .collect();
        let mut sum = 0;
        for h in handles {
            sum += h.await;
        }
        sum
    });
    assert_eq!(sum, 999_999 * 1_000_000 / 2);
}

#[test]
fn join_inside_spawn_and_spawn_inside_join() {
    let rt = rt(2);
    let v = rt.block_on(rt.spawn(async {
        let (a, b) = tutti::join(|| 20, || 22);
        a + b
    }));
    assert_eq!(v, 42);
    let (x, y) = rt.join(
        || tutti::spawn(async { 1 }).join(),
        || tutti::spawn(async { 2 }).join(),
    );
    assert_eq!(x + y, 3);
}

#[test]
fn a_panicking_task_reraises_at_the_awaiter_and_reports_as_error() {
    let rt = rt(2);
    let h = rt.spawn(async { panic!("task failed") });
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| h.join()));
    assert_eq!(*r.unwrap_err().downcast::<&str>().unwrap(), "task failed");
    match rt.block_on(rt.spawn(async { panic!("again") }).result()) {
        Err(JoinError::Panicked(p)) => assert_eq!(*p.downcast::<&str>().unwrap(), "again"),
        other => panic!("unexpected {other:?}"),
    }
    // The runtime keeps running.
    assert_eq!(rt.block_on(rt.spawn(async { 7 })), 7);
}

#[test]
fn callbacks_see_every_outcome_and_late_ones_run_at_once() {
    let rt = rt(2);
    let (tx, rx) = mpsc::channel();
    let ok = rt.spawn(async { 1 });
    let t = tx.clone();
    ok.on_finish(move |o| t.send(("ok", o)).unwrap());
    assert_eq!(ok.join(), 1);
    let bad = rt.spawn(async { panic!("x") });
    let t = tx.clone();
    bad.on_finish(move |o| t.send(("bad", o)).unwrap());
    let _ = rt.block_on(bad.result());
    let pending = rt.spawn(std::future::pending::<()>());
    let t = tx.clone();
    pending.on_finish(move |o| t.send(("cancelled", o)).unwrap());
    pending.abort();
    let mut got: Vec<_> = (0..3).map(|_| rx.recv().unwrap()).collect();
    got.sort_by_key(|g| g.0);
    assert_eq!(
        got,
        [
            ("bad", Outcome::Panicked),
            ("cancelled", Outcome::Cancelled),
            ("ok", Outcome::Completed)
        ]
    );
    // Registered after completion: runs immediately on this thread.
    let done = rt.spawn(async {});
    while !done.is_finished() {
        std::thread::yield_now();
    }
    let hit = Arc::new(AtomicBool::new(false));
    let h2 = hit.clone();
    done.on_finish(move |_| h2.store(true, Ordering::SeqCst));
    assert!(hit.load(Ordering::SeqCst));
}

#[test]
fn shutdown_cancels_pending_tasks_and_joins_workers() {
    let rt = rt(2);
    let dropped = Arc::new(AtomicUsize::new(0));
    struct CountDrop(Arc<AtomicUsize>);
    impl Drop for CountDrop {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }
    let handles: Vec<_> = (0..100)
        .map(|_| {
            let guard = CountDrop(dropped.clone());
            rt.spawn(async move {
                let _g = guard;
                std::future::pending::<()>().await
            })
        })
        .collect();
    // Let them all start and park.
    let started = rt.spawn(async {});
    started.join();
    drop(rt);
    for h in handles {
        assert!(matches!(
            tutti::block_on(h.result()),
            Err(JoinError::Cancelled)
        ));
    }
    assert_eq!(dropped.load(Ordering::SeqCst), 100);
}

/// A hand-made one-slot handoff, so this test depends on nothing but wakers.
#[derive(Default)]
struct Slot {
    inner: Mutex<(Option<u64>, Option<Waker>)>,
}

impl Slot {
    fn put(&self, v: u64) {
        let w = {
            let mut g = self.inner.lock().unwrap();
            g.0 = Some(v);
            g.1.take()
        };
        if let Some(w) = w {
            w.wake();
        }
    }
    fn take(&self) -> impl Future<Output = u64> + '_ {
        std::future::poll_fn(move |cx: &mut Context<'_>| {
            let mut g = self.inner.lock().unwrap();
            match g.0.take() {
                Some(v) => Poll::Ready(v),
                None => {
                    g.1 = Some(cx.waker().clone());
                    Poll::Pending
                }
            }
        })
    }
}

/// Two tasks ping-ponging through the run-next slot must not starve a third
/// task on a one-worker runtime: the run-next bound hands the worker over.
#[test]
fn ping_pong_does_not_starve_a_third_task() {
    let rt = rt(1);
    let stop = Arc::new(AtomicBool::new(false));
    let (a, b) = (Arc::new(Slot::default()), Arc::new(Slot::default()));
    let ping = {
        let (a, b, stop) = (a.clone(), b.clone(), stop.clone());
        rt.spawn(async move {
            let mut n = 0u64;
            while !stop.load(Ordering::SeqCst) {
                a.put(n);
                n = b.take().await + 1;
            }
            a.put(u64::MAX);
            n
        })
    };
    let pong = {
        let (a, b) = (a.clone(), b.clone());
        rt.spawn(async move {
            loop {
                let v = a.take().await;
                if v == u64::MAX {
                    return;
                }
                b.put(v);
            }
        })
    };
    // The third task is spawned after the ping-pong is under way.
    let stopper = {
        let stop = stop.clone();
        rt.spawn(async move { stop.store(true, Ordering::SeqCst) })
    };
    stopper.join();
    pong.join();
    assert!(ping.join() > 0);
}

/// A task that keeps yielding cannot starve a task spawned after it.
#[test]
fn a_yielding_busy_task_does_not_starve_another() {
    let rt = rt(1);
    let flag = Arc::new(AtomicBool::new(false));
    let busy = {
        let flag = flag.clone();
        rt.spawn(async move {
            let mut spins = 0u64;
            while !flag.load(Ordering::SeqCst) {
                spins += 1;
                tutti::runtime::yield_now().await;
            }
            spins
        })
    };
    let setter = {
        let flag = flag.clone();
        rt.spawn(async move { flag.store(true, Ordering::SeqCst) })
    };
    setter.join();
    busy.join();
}

#[test]
fn block_on_inside_a_task_is_a_clear_panic() {
    let rt = rt(1);
    let r = rt.block_on(rt.spawn(async { tutti::block_on(async { 1 }) }).result());
    match r {
        Err(JoinError::Panicked(p)) => {
            let msg = p
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            assert!(msg.contains("inside an async task"), "{msg}");
        }
        other => panic!("expected a panic, got {other:?}"),
    }
}

#[test]
fn block_on_on_a_worker_keeps_running_other_work() {
    // One worker: the task can only run if block_on executes it meanwhile.
    let rt = rt(1);
    let v = rt.install(|| tutti::block_on(tutti::spawn(async { 5 })));
    assert_eq!(v, 5);
}

#[test]
fn entered_runtime_receives_spawns() {
    let rt = Runtime::builder()
        .workers(1)
        .thread_name(|i| format!("entered-{i}"))
        .build()
        .unwrap();
    let name = rt.block_on(async {
        tutti::spawn(async { std::thread::current().name().map(str::to_owned) }).await
    });
    assert_eq!(name.as_deref(), Some("entered-0"));
}

#[test]
fn nested_block_on_on_a_plain_thread() {
    let v = tutti::block_on(async { tutti::block_on(async { 2 }) + 1 });
    assert_eq!(v, 3);
}

#[test]
fn tasks_spawned_from_many_threads() {
    let rt = rt(2);
    let count = Arc::new(AtomicUsize::new(0));
    std::thread::scope(|s| {
        for _ in 0..4 {
            let (rt, count) = (&rt, count.clone());
            s.spawn(move || {
                let hs: Vec<_> = (0..10_000)
                    .map(|_| {
                        let c = count.clone();
                        rt.spawn(async move {
                            c.fetch_add(1, Ordering::Relaxed);
                        })
                    })
                    .collect();
                for h in hs {
                    h.join();
                }
            });
        }
    });
    assert_eq!(count.load(Ordering::Relaxed), 40_000);
}

struct YieldOnce(bool);
impl Future for YieldOnce {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.0 {
            Poll::Ready(())
        } else {
            self.0 = true;
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    }
}

#[test]
fn self_waking_tasks_complete() {
    let rt = rt(2);
    let hs: Vec<_> = (0..1000).map(|_| rt.spawn(YieldOnce(false))).collect();
    for h in hs {
        h.join();
    }
}

/// A task given a name at spawn is listed by that name in the dump (text and JSON),
/// with its state; unnamed tasks are only counted.
#[test]
fn a_named_task_shows_in_the_dump() {
    let rt = rt(1);
    let (tx, rx) = mpsc::channel::<()>();
    let gate = Arc::new(Mutex::new(None::<Waker>));
    let g = gate.clone();
    let h = rt.spawn_named(
        String::from("ingest-loop"),
        std::future::poll_fn(move |cx| {
            *g.lock().unwrap() = Some(cx.waker().clone());
            let _ = tx.send(());
            if Arc::strong_count(&g) == 1 {
                Poll::Ready(5)
            } else {
                Poll::Pending
            }
        }),
    );
    let unnamed = rt.spawn(std::future::pending::<()>());
    rx.recv().unwrap();
    let _enter = rt.enter();
    // The poll that signalled may not have returned yet: wait until it has.
    let mut text = tutti::diag::dump();
    for _ in 0..10_000 {
        if !text.contains("task `ingest-loop`: running") {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
        text = tutti::diag::dump();
    }
    assert!(
        text.contains("task `ingest-loop`: parked"),
        "the dump lacks the named task:\n{text}"
    );
    assert_eq!(text.matches("task `").count(), 1, "{text}");
    let json: serde_json::Value = serde_json::from_str(&tutti::diag::dump_json()).unwrap();
    let tasks: Vec<_> = json["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "task")
        .collect();
    assert_eq!(tasks.len(), 1, "{json}");
    assert_eq!(tasks[0]["name"], "ingest-loop");
    assert_eq!(tasks[0]["state"], "parked");
    // Let it finish: drop our hold, wake it.
    let waker = gate.lock().unwrap().take().unwrap();
    drop(gate);
    waker.wake();
    assert_eq!(rt.block_on(h), 5);
    assert!(!tutti::diag::dump().contains("ingest-loop"));
    unnamed.abort();
}
