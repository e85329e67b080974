//! `par` tests: all processes run and end before the `par` does, the replicated form,
//! named panics re-raised after every process ended, nesting.

use crate::loom::{AtomicUsize, Ordering};
use std::sync::Arc;

use super::*;
use crate::csp::{channel, Barrier};

fn message<T: std::fmt::Debug>(r: std::thread::Result<T>) -> String {
    *r.unwrap_err().downcast::<String>().unwrap()
}

/// Processes of a `par` communicate with each other (so they run in parallel, not in
/// sequence) and have all ended when it completes.
#[test]
fn par_runs_processes_in_parallel() {
    let (tx, rx) = channel::<u32>();
    let ended = Arc::new(AtomicUsize::new(0));
    let (e1, e2) = (ended.clone(), ended.clone());
    let receiver = async move {
        let mut sum = 0;
        while let Ok(x) = rx.recv().await {
            sum += x;
        }
        assert_eq!(sum, 55);
        e1.fetch_add(1, Ordering::Relaxed);
    };
    let sender = async move {
        for i in 1..=10 {
            tx.send(i).await.unwrap();
        }
        e2.fetch_add(1, Ordering::Relaxed);
    };
    Par::new()
        .process("receiver", receiver)
        .process("sender", sender)
        .run()
        .wait_blocking()
        .unwrap();
    assert_eq!(ended.load(Ordering::Relaxed), 2);
}

/// `PAR i = 0 FOR n` with a barrier, awaited from inside a task (nested `par`).
#[test]
fn replicated_par_with_barrier_inside_a_task() {
    let b = Barrier::new();
    let count = Arc::new(AtomicUsize::new(0));
    let outer = {
        let count = count.clone();
        let mut parties: Vec<_> = (0..200).map(|_| b.enroll()).collect();
        crate::runtime::spawn(async move {
            par_for_each(0..200, |_| {
                let mut me = parties.pop().unwrap();
                let count = count.clone();
                async move {
                    for _ in 0..3 {
                        count.fetch_add(1, Ordering::Relaxed);
                        me.sync().await;
                    }
                }
            })
            .await
            .unwrap();
        })
    };
    outer.join();
    assert_eq!(count.load(Ordering::Relaxed), 600);
}

/// `par` over an iterator, and an empty `par`.
#[test]
fn par_over_iterator_and_empty() {
    let count = Arc::new(AtomicUsize::new(0));
    let ps: Vec<_> = (0..50)
        .map(|_| {
            let count = count.clone();
            async move {
                count.fetch_add(1, Ordering::Relaxed);
            }
        })
        .collect();
    crate::runtime::block_on(par(ps)).unwrap();
    assert_eq!(count.load(Ordering::Relaxed), 50);
    par(Vec::<std::future::Ready<()>>::new())
        .wait_blocking()
        .unwrap();
}

/// A panic is re-raised only after every other process ended, naming the process.
#[test]
fn panic_names_the_process_after_all_ended() {
    let (tx, rx) = channel::<()>();
    let finished = Arc::new(AtomicUsize::new(0));
    let f = finished.clone();
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || {
        Par::new()
            .process("sender", async move {
                // Waits for the panicking process to be gone before ending.
                tx.send(()).await.unwrap();
                f.fetch_add(1, Ordering::Relaxed);
            })
            .process("receiver", async move {
                rx.recv().await.unwrap();
                panic!("bad value");
            })
            .run()
            .wait_blocking()
    }));
    let msg = message(r);
    assert!(
        msg.contains("process `receiver` panicked: bad value"),
        "{msg}"
    );
    assert_eq!(finished.load(Ordering::Relaxed), 1);
}

/// Several panics in a replicated `par`: the lowest index is reported, the rest counted.
#[test]
fn replicated_panics_report_index_and_count() {
    let r = std::panic::catch_unwind(|| {
        par_for_each(0..10, |i| async move {
            if i % 3 == 1 {
                panic!("odd one {i}");
            }
        })
        .wait_blocking()
    });
    let msg = message(r);
    assert!(msg.contains("process `i = 1` panicked: odd one 1"), "{msg}");
    assert!(msg.contains("and 2 more failed: `i = 4`, `i = 7`"), "{msg}");
}

/// `par_named` with boxed processes; a numbered report for plain `par`.
#[test]
fn named_and_numbered_reports() {
    type P = std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>;
    let ps: Vec<(String, P)> = vec![
        ("fine".to_string(), Box::pin(async {})),
        ("broken".to_string(), Box::pin(async { panic!("x") })),
    ];
    let msg = message(std::panic::catch_unwind(std::panic::AssertUnwindSafe(
        || par_named(ps).wait_blocking(),
    )));
    assert!(msg.contains("process `broken` panicked: x"), "{msg}");
    let msg = message(std::panic::catch_unwind(|| {
        par((0..2).map(|i| async move { assert!(i != 1, "y") })).wait_blocking()
    }));
    assert!(msg.contains("process `#1` panicked: y"), "{msg}");
}

/// A large `par` spawns its processes in batches and lets each batch run before it
/// spawns the next: on one worker, the first process runs when one batch is spawned,
/// not all of them (so a million-process `par` never has all of them queued).
#[test]
fn a_large_par_lets_each_batch_run_before_spawning_more() {
    const N: usize = 10 * SPAWN_BATCH;
    let rt = crate::runtime::Runtime::builder()
        .workers(1)
        .build()
        .unwrap();
    let spawned = Arc::new(AtomicUsize::new(0));
    let seen_first = Arc::new(AtomicUsize::new(usize::MAX));
    let ran = Arc::new(AtomicUsize::new(0));
    let (s, f, r) = (spawned.clone(), seen_first.clone(), ran.clone());
    let net = par_for_each(0..N, move |i| {
        s.fetch_add(1, Ordering::Relaxed);
        let (s, f, r) = (s.clone(), f.clone(), r.clone());
        async move {
            if i == 0 {
                f.store(s.load(Ordering::Relaxed), Ordering::Relaxed);
            }
            r.fetch_add(1, Ordering::Relaxed);
        }
    });
    rt.block_on(rt.spawn(net)).unwrap();
    assert_eq!(ran.load(Ordering::Relaxed), N);
    assert_eq!(seen_first.load(Ordering::Relaxed), SPAWN_BATCH);
}

/// Dropping a `par` that has spawned only some of its processes spawns the rest: every
/// process of a started `par` runs.
#[test]
fn dropping_a_par_while_it_spawns_starts_the_rest() {
    const N: usize = 3 * SPAWN_BATCH + 5;
    let ran = Arc::new(AtomicUsize::new(0));
    let r = ran.clone();
    let mut net = Box::pin(par_for_each(0..N, move |_| {
        let r = r.clone();
        async move {
            r.fetch_add(1, Ordering::Relaxed);
        }
    }));
    let (woken, waker) = crate::test_util::counting_waker();
    assert!(net
        .as_mut()
        .poll(&mut Context::from_waker(&waker))
        .is_pending());
    assert_eq!(
        woken.0.load(Ordering::Relaxed),
        1,
        "it yields to its first batch"
    );
    drop(net);
    let give_up = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while ran.load(Ordering::Relaxed) < N {
        assert!(std::time::Instant::now() < give_up, "not every process ran");
        std::thread::yield_now();
    }
    assert_eq!(ran.load(Ordering::Relaxed), N);
}

/// A `par` dropped while spawning, after the runtime it started on shut down, spawns
/// nothing more (anywhere else): the rest are dropped unstarted, as that runtime's tasks
/// were cancelled.
#[test]
fn a_par_dropped_after_its_runtime_spawns_no_more() {
    const N: usize = 4 * SPAWN_BATCH;
    let rt = crate::runtime::Runtime::builder()
        .workers(1)
        .build()
        .unwrap();
    let ran = Arc::new(AtomicUsize::new(0));
    let made = Arc::new(AtomicUsize::new(0));
    let (r, m) = (ran.clone(), made.clone());
    let mut net = Box::pin(par_for_each(0..N, move |_| {
        m.fetch_add(1, Ordering::Relaxed);
        let r = r.clone();
        async move {
            r.fetch_add(1, Ordering::Relaxed);
        }
    }));
    let (_woken, waker) = crate::test_util::counting_waker();
    {
        let _on = rt.enter();
        assert!(net
            .as_mut()
            .poll(&mut Context::from_waker(&waker))
            .is_pending());
    }
    drop(rt);
    drop(net);
    std::thread::sleep(std::time::Duration::from_millis(50));
    // Nothing ran beyond the first batch (the rest were dropped, or spawned on the
    // stopped runtime and cancelled), in particular nothing on the global runtime.
    assert!(made.load(Ordering::Relaxed) >= SPAWN_BATCH);
    assert!(ran.load(Ordering::Relaxed) <= SPAWN_BATCH);
}

/// The allocator's bytes for a request of `n` bytes: glibc's malloc adds a word and
/// rounds the chunk up to 16 bytes (32 at least).
fn malloc_chunk(n: usize) -> usize {
    (n + 8).div_ceil(16).max(2) * 16
}

/// Where the memory of one live blocked process goes — the case `tutti bench csp live`
/// measures: a process of a replicated `par`, waiting in `recv` on a rendezvous channel
/// of its own. Printed piece by piece (`--nocapture`) and bounded, so that a field added
/// to the task header, the process record, the receive future or the channel shows up
/// here as a failure, not only as a benchmark figure.
#[test]
fn a_live_blocked_process_costs_what_its_pieces_add_up_to() {
    use std::mem::size_of;

    use crate::csp::chan::Chan;
    use crate::csp::{RecvFuture, Rx, Tx};
    use crate::runtime::task::HEADER_BYTES;

    /// The future a process of the benchmark runs: its receiving end and the wait.
    // An `async move` block, as the benchmark spawns (an `async fn` keeps its argument
    // twice in an unoptimised build).
    #[allow(clippy::manual_async_fn)]
    fn body(rx: Rx<u32>) -> impl Future<Output = ()> + Send + 'static {
        async move {
            if let Ok(v) = rx.recv().await {
                std::hint::black_box(v);
            }
        }
    }
    /// The sizes of the future `body` returns and of the process wrapping it.
    fn sizes<F>(_: &dyn Fn(Rx<u32>) -> F) -> (usize, usize) {
        (size_of::<F>(), size_of::<Process<F>>())
    }
    let (user, process) = sizes(&body);
    let record = size_of::<Process<()>>();
    let task = HEADER_BYTES + process;
    let chan = size_of::<Chan<u32>>();
    let handle = size_of::<Tx<u32>>();
    let total = malloc_chunk(task) + malloc_chunk(chan) + handle;
    eprintln!("task header               {HEADER_BYTES:>4} B");
    eprintln!("process record            {record:>4} B");
    eprintln!(
        "user future               {user:>4} B  (its Rx {} + receive future {})",
        size_of::<Rx<u32>>(),
        size_of::<RecvFuture<'static, u32>>()
    );
    eprintln!(
        "task allocation           {task:>4} B  ({} B chunk)",
        malloc_chunk(task)
    );
    eprintln!(
        "channel                   {chan:>4} B  ({} B chunk)",
        malloc_chunk(chan)
    );
    eprintln!("sender kept by the sender {handle:>4} B");
    eprintln!("per live process          {total:>4} B");
    assert_eq!(HEADER_BYTES, 40, "the task header grew");
    assert_eq!(record, 32, "the process record grew");
    assert_eq!(
        size_of::<RecvFuture<'static, u32>>(),
        32,
        "the receive future grew"
    );
    assert_eq!(chan, 56, "the channel grew past one 64-byte chunk");
    assert!(
        task <= 120,
        "a live process's task grew past one 128-byte chunk: {task} B"
    );
}
