//! Task priorities: the order in which queued tasks run, the aging rules, and the
//! dump's view. Ordering is made deterministic by holding the workers (a task blocks
//! its worker on a std channel) while the tasks under test are queued.

// This file uses tutti as a program would, with `std`'s atomics and locks: the
// loom-shim rule of `clippy.toml` is for the library's own code.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};

use tutti::runtime::{HIGH_BURST, LOW_EVERY};
use tutti::{DataflowVar, JoinHandle, Priority, Runtime};

type Order = Arc<Mutex<Vec<&'static str>>>;

fn runtime(workers: usize) -> Runtime {
    Runtime::builder().workers(workers).build().unwrap()
}

/// A task recording `label` into `order` when it runs.
fn record(rt: &Runtime, order: &Order, priority: Priority, label: &'static str) -> JoinHandle<()> {
    let order = order.clone();
    rt.spawn_with_priority(priority, async move { order.lock().unwrap().push(label) })
}

/// Holds one worker of `rt` (the one that takes this task) until the returned sender
/// sends or is dropped; `then` runs on it after the release.
fn hold_worker(
    rt: &Runtime,
    then: impl FnOnce() + Send + 'static,
) -> (mpsc::Sender<()>, JoinHandle<()>) {
    let (started_tx, started_rx) = mpsc::channel();
    let (release_tx, release_rx) = mpsc::channel::<()>();
    let h = rt.spawn(async move {
        started_tx.send(()).unwrap();
        let _ = release_rx.recv();
        then();
    });
    started_rx.recv().unwrap();
    (release_tx, h)
}

fn join_all(rt: &Runtime, handles: Vec<JoinHandle<()>>) {
    for h in handles {
        rt.block_on(h);
    }
}

fn position(order: &Order, label: &str) -> usize {
    let order = order.lock().unwrap();
    order
        .iter()
        .position(|l| *l == label)
        .unwrap_or_else(|| panic!("`{label}` never ran: {order:?}"))
}

/// A high task queued last, behind low and normal ones, runs first; normal tasks run
/// before low ones (but for at most one low task the aging rule may let through).
#[test]
fn high_runs_before_queued_normal_and_low_tasks() {
    let rt = runtime(1);
    let order: Order = Arc::default();
    let (release, gate) = hold_worker(&rt, || {});
    let mut handles = Vec::new();
    for _ in 0..5 {
        handles.push(record(&rt, &order, Priority::Low, "low"));
    }
    for _ in 0..5 {
        handles.push(record(&rt, &order, Priority::Normal, "normal"));
    }
    handles.push(record(&rt, &order, Priority::High, "high"));
    release.send(()).unwrap();
    rt.block_on(gate);
    join_all(&rt, handles);
    let order = order.lock().unwrap().clone();
    assert_eq!(order[0], "high", "{order:?}");
    let last_normal = order.iter().rposition(|l| *l == "normal").unwrap();
    assert!(
        last_normal <= 6,
        "more than one low task overtook: {order:?}"
    );
}

/// A high task woken (by a worker) while normal tasks are queued runs before them.
#[test]
fn woken_high_task_overtakes_queued_tasks() {
    let rt = runtime(1);
    let order: Order = Arc::default();
    let var = Arc::new(DataflowVar::<u32>::new());
    let (parked_tx, parked_rx) = mpsc::channel();
    let waiter = {
        let (var, order) = (var.clone(), order.clone());
        rt.spawn_with_priority(Priority::High, async move {
            parked_tx.send(()).unwrap();
            let v = *var.read().await;
            order.lock().unwrap().push("high");
            v
        })
    };
    // One worker: the task parks on the variable before the worker takes the gate.
    parked_rx.recv().unwrap();
    let setter = var.clone();
    let (release, gate) = hold_worker(&rt, move || setter.set(7).unwrap());
    let handles: Vec<_> = (0..5)
        .map(|_| record(&rt, &order, Priority::Normal, "normal"))
        .collect();
    release.send(()).unwrap();
    rt.block_on(gate);
    join_all(&rt, handles);
    assert_eq!(rt.block_on(waiter), 7);
    let order = order.lock().unwrap().clone();
    assert_eq!(order[0], "high", "{order:?}");
}

/// A worker looking for work takes the high task before stealing another worker's older
/// normal tasks.
#[test]
fn thieves_take_high_tasks_first() {
    let rt = Arc::new(runtime(2));
    let order: Order = Arc::default();
    let (release_thief, thief_gate) = hold_worker(&rt, || {});
    // The other worker spawns normal tasks into its own queue, then a high task, and
    // stays busy until released.
    let (ready_tx, ready_rx) = mpsc::channel();
    let (release_tx, release_rx) = mpsc::channel::<()>();
    let spawner = {
        let order = order.clone();
        rt.spawn(async move {
            let mut handles: Vec<_> = (0..10)
                .map(|_| {
                    let order = order.clone();
                    tutti::spawn(async move { order.lock().unwrap().push("normal") })
                })
                .collect();
            let order = order.clone();
            handles.push(tutti::spawn_with_priority(Priority::High, async move {
                order.lock().unwrap().push("high")
            }));
            ready_tx.send(()).unwrap();
            let _ = release_rx.recv();
            handles
        })
    };
    ready_rx.recv().unwrap();
    release_thief.send(()).unwrap();
    rt.block_on(thief_gate);
    // The thief runs the high task first; only then release the spawner.
    while order.lock().unwrap().is_empty() {
        std::thread::yield_now();
    }
    release_tx.send(()).unwrap();
    let handles = rt.block_on(spawner);
    join_all(&rt, handles);
    let order = order.lock().unwrap().clone();
    assert_eq!(order[0], "high", "{order:?}");
    assert_eq!(order.len(), 11);
}

/// Aging, high side: after `HIGH_BURST` high tasks in a row a worker runs a normal one.
#[test]
fn a_burst_of_high_tasks_lets_normal_work_through() {
    let rt = runtime(1);
    let order: Order = Arc::default();
    let (release, gate) = hold_worker(&rt, || {});
    let mut handles = vec![record(&rt, &order, Priority::Normal, "normal")];
    for _ in 0..3 * HIGH_BURST {
        handles.push(record(&rt, &order, Priority::High, "high"));
    }
    release.send(()).unwrap();
    rt.block_on(gate);
    join_all(&rt, handles);
    let at = position(&order, "normal");
    assert!(
        at <= HIGH_BURST as usize,
        "the normal task waited for {at} high tasks (burst {HIGH_BURST})"
    );
    assert!(at > 0, "the high tasks did not go first");
}

/// Aging, low side: a worker busy with normal tasks still runs a queued low task within
/// `LOW_EVERY` of them.
#[test]
fn low_tasks_age_under_normal_load() {
    let rt = runtime(1);
    let order: Order = Arc::default();
    let (release, gate) = hold_worker(&rt, || {});
    let mut handles = vec![record(&rt, &order, Priority::Low, "low")];
    for _ in 0..4 * LOW_EVERY {
        handles.push(record(&rt, &order, Priority::Normal, "normal"));
    }
    release.send(()).unwrap();
    rt.block_on(gate);
    join_all(&rt, handles);
    let at = position(&order, "low");
    assert!(
        at <= LOW_EVERY as usize,
        "the low task waited for {at} normal tasks (aging every {LOW_EVERY})"
    );
}

/// A low task completes while normal tasks keep both workers busy for ever (they stop
/// only when it has run): without aging this test would never end.
#[test]
fn endless_normal_work_does_not_starve_low_tasks() {
    let rt = runtime(2);
    let done = Arc::new(AtomicBool::new(false));
    let busy: Vec<_> = (0..4)
        .map(|_| {
            let done = done.clone();
            rt.spawn(async move {
                let mut polls = 0u64;
                while !done.load(Ordering::Acquire) {
                    polls += 1;
                    tutti::yield_now().await;
                }
                polls
            })
        })
        .collect();
    let flag = done.clone();
    let low = rt.spawn_with_priority(Priority::Low, async move {
        flag.store(true, Ordering::Release);
    });
    rt.block_on(low);
    for h in busy {
        rt.block_on(h);
    }
}

/// A high task spawned while low tasks flood every worker (each yielding forever until
/// it has run) runs, and the flood goes on afterwards.
#[test]
fn high_task_runs_through_a_low_flood() {
    let rt = runtime(2);
    let done = Arc::new(AtomicBool::new(false));
    let flood: Vec<_> = (0..16)
        .map(|_| {
            let done = done.clone();
            rt.spawn_with_priority(Priority::Low, async move {
                while !done.load(Ordering::Acquire) {
                    std::hint::black_box((0..1000u64).sum::<u64>());
                    tutti::yield_now().await;
                }
            })
        })
        .collect();
    let flag = done.clone();
    let high = rt.spawn_with_priority(Priority::High, async move {
        flag.store(true, Ordering::Release);
        tutti::yield_now().await; // woken by itself: queued as high again
        5
    });
    assert_eq!(rt.block_on(high), 5);
    join_all(&rt, flood);
}

/// Tasks spawned without a priority get the runtime's default.
#[test]
fn the_runtime_default_applies_to_plain_spawns() {
    let rt = Runtime::builder()
        .workers(1)
        .default_priority(Priority::High)
        .build()
        .unwrap();
    assert_eq!(rt.default_priority(), Priority::High);
    let inner = rt.block_on(rt.spawn(async { tutti::spawn(async {}).priority() }));
    assert_eq!(inner, Priority::High);
    let explicit = rt.spawn_with_priority(Priority::Low, async {});
    assert_eq!(explicit.priority(), Priority::Low);
    rt.block_on(explicit);
    assert_eq!(runtime(1).spawn(async {}).priority(), Priority::Normal);
}

/// The dump counts a runtime's live tasks by priority.
#[test]
fn dump_shows_priorities() {
    let rt = runtime(1);
    let _entered = rt.enter();
    let var = Arc::new(DataflowVar::<()>::new());
    let parked: Vec<_> = [Priority::High, Priority::Low, Priority::Low]
        .into_iter()
        .map(|p| {
            let var = var.clone();
            rt.spawn_with_priority(p, async move {
                var.read().await;
            })
        })
        .collect();
    let text = tutti::diag::dump();
    assert!(
        text.contains("(1 high, 0 normal, 2 low priority)"),
        "no priorities in\n{text}"
    );
    let json: serde_json::Value = serde_json::from_str(&tutti::diag::dump_json()).unwrap();
    let runtimes = json["runtimes"].as_array().unwrap();
    assert!(
        runtimes
            .iter()
            .any(|r| r["by_priority"]["high"] == 1 && r["by_priority"]["low"] == 2),
        "{json}"
    );
    var.set(()).unwrap();
    join_all(&rt, parked);
}

/// A named task's dump entry shows its priority (a named task gets the runtime's
/// default).
#[test]
fn dump_shows_a_named_tasks_priority() {
    let rt = Runtime::builder()
        .workers(1)
        .default_priority(Priority::Low)
        .build()
        .unwrap();
    let _entered = rt.enter();
    let var = Arc::new(DataflowVar::<()>::new());
    let reader = var.clone();
    let h = tutti::spawn_named("priority-test-sleeper", async move {
        reader.read().await;
    });
    assert_eq!(h.priority(), Priority::Low);
    let mut text = String::new();
    for _ in 0..2000 {
        text = tutti::diag::dump();
        if text.contains("task `priority-test-sleeper`: parked (low priority)") {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    assert!(
        text.contains("task `priority-test-sleeper`: parked (low priority)"),
        "{text}"
    );
    var.set(()).unwrap();
    rt.block_on(h);
}
