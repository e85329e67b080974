//! `join`, `scope` and parallel loops: recursion depth and width, panics,
//! calls from outside and inside the runtime.
// This file uses tutti as a program would, with `std`'s atomics and locks: the
// loom-shim rule of `clippy.toml` is for the library's own code.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

mod watchdog;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};

use tutti::Runtime;

fn rt(n: usize) -> Runtime {
    Runtime::builder().workers(n).build().unwrap()
}

fn fib(n: u64) -> u64 {
    if n < 2 {
        return n;
    }
    let (a, b) = tutti::join(|| fib(n - 1), || fib(n - 2));
    a + b
}

#[test]
fn deep_recursion_gives_the_right_answer_on_1_2_and_4_workers() {
    for w in [1, 2, 4] {
        assert_eq!(rt(w).install(|| fib(24)), 46368, "{w} workers");
    }
}

#[test]
fn join_from_a_plain_thread_uses_the_global_runtime() {
    let (a, b) = tutti::join(|| 1, || 2);
    assert_eq!((a, b), (1, 2));
    assert_eq!(fib(15), 610);
}

/// A million one-index blocks: about a million joins, twenty levels deep.
#[test]
fn wide_recursion_over_a_million_leaves() {
    let count = AtomicUsize::new(0);
    rt(2).par_for(0..1_000_000, 1, |_| {
        count.fetch_add(1, Ordering::Relaxed);
    });
    assert_eq!(count.into_inner(), 1_000_000);
}

#[test]
fn panic_in_either_half_is_reraised_and_runtime_survives() {
    let rt = rt(2);
    for side in 0..2 {
        let r = catch_unwind(AssertUnwindSafe(|| {
            rt.join(
                || {
                    if side == 0 {
                        panic!("left half failed")
                    }
                },
                || {
                    if side == 1 {
                        panic!("right half failed")
                    }
                },
            )
        }));
        let msg = *r.unwrap_err().downcast::<&str>().unwrap();
        assert_eq!(
            msg,
            if side == 0 {
                "left half failed"
            } else {
                "right half failed"
            }
        );
    }
    assert_eq!(rt.install(|| fib(12)), 144);
}

#[test]
fn when_both_halves_panic_the_first_wins() {
    let r = catch_unwind(|| tutti::join(|| panic!("a"), || panic!("b")));
    assert_eq!(*r.unwrap_err().downcast::<&str>().unwrap(), "a");
}

#[test]
fn scope_borrows_and_nests() {
    let rt = rt(2);
    let mut v: Vec<u64> = (0..1000).collect();
    let total = AtomicUsize::new(0);
    rt.scope(|s| {
        for chunk in v.chunks_mut(100) {
            let total = &total;
            s.spawn(move |s| {
                for x in chunk.iter_mut() {
                    *x *= 2;
                }
                s.spawn(move |_| {
                    total.fetch_add(1, Ordering::Relaxed);
                });
            });
        }
    });
    assert_eq!(total.into_inner(), 10);
    assert!(v.iter().enumerate().all(|(i, &x)| x == 2 * i as u64));
}

#[test]
fn scope_panic_waits_for_siblings_then_reraises() {
    let finished = AtomicUsize::new(0);
    let r = catch_unwind(AssertUnwindSafe(|| {
        tutti::scope(|s| {
            s.spawn(|_| panic!("spawned job failed"));
            for _ in 0..10 {
                s.spawn(|_| {
                    finished.fetch_add(1, Ordering::SeqCst);
                });
            }
        })
    }));
    assert_eq!(
        *r.unwrap_err().downcast::<&str>().unwrap(),
        "spawned job failed"
    );
    assert_eq!(finished.into_inner(), 10);
}

#[test]
fn par_for_visits_every_index_once_for_many_grains() {
    let rt = rt(2);
    for (n, grain) in [
        (0, 1),
        (1, 1),
        (10, 3),
        (1000, 16000),
        (100_003, 4000),
        (5000, 0),
    ] {
        let hits: Vec<AtomicUsize> = (0..n).map(|_| AtomicUsize::new(0)).collect();
        rt.par_for(0..n, grain, |i| {
            hits[i].fetch_add(1, Ordering::Relaxed);
        });
        assert!(
            hits.iter().all(|h| h.load(Ordering::Relaxed) == 1),
            "n={n} grain={grain}"
        );
    }
}

#[test]
fn par_chunks_mut_gives_blocks_of_grain_with_offsets() {
    let mut v = vec![0usize; 10_007];
    let sizes = std::sync::Mutex::new(Vec::new());
    tutti::par_chunks_mut(&mut v, 1000, |off, chunk| {
        sizes.lock().unwrap().push((off, chunk.len()));
        for (k, x) in chunk.iter_mut().enumerate() {
            *x = off + k;
        }
    });
    assert!(v.iter().enumerate().all(|(i, &x)| i == x));
    let mut sizes = sizes.into_inner().unwrap();
    sizes.sort();
    assert_eq!(sizes.len(), 11);
    assert!(sizes
        .iter()
        .all(|&(off, len)| off % 1000 == 0 && len == 1000.min(10_007 - off)));
}

#[test]
fn join_across_two_runtimes() {
    let a = rt(1);
    let b = rt(2);
    let r = a.install(|| b.install(|| fib(16)) + b.join(|| 1, || 2).1);
    assert_eq!(r, 989);
}

#[test]
fn install_from_many_threads_at_once() {
    let rt = rt(2);
    std::thread::scope(|s| {
        for t in 0..8u64 {
            let rt = &rt;
            s.spawn(move || assert_eq!(rt.install(|| fib(14) + t), 377 + t));
        }
    });
}

/// A `join` records its second half privately and offers it to other workers
/// only while one of them is idle, at its own `join`s: a first half that keeps
/// joining while it waits for the second half gets it run by the idle worker.
#[test]
fn an_idle_worker_takes_the_second_half_of_a_busy_join() {
    idle_worker_takes_the_outermost_half(0, "the second half");
}

/// Runs `join(spin, set)` on two workers 20 times, where `spin`, `depth`
/// nested joins deep, joins trivial halves until `set` has run: `set` (the
/// outermost second half) must be offered to the idle worker, within 30 s.
fn idle_worker_takes_the_outermost_half(depth: u32, what: &str) {
    use std::sync::atomic::AtomicBool;
    let rt = rt(2);
    for _ in 0..20 {
        let started = AtomicBool::new(false);
        let give_up = std::time::Instant::now() + std::time::Duration::from_secs(30);
        rt.join(
            || {
                nested(depth, &|| {
                    while !started.load(Ordering::Acquire) {
                        // A join point: where a private half can be promoted.
                        let (x, y) = tutti::join(|| 1u64, || 1u64);
                        assert_eq!(x + y, 2);
                        assert!(
                            std::time::Instant::now() < give_up,
                            "{what} was never offered to the idle worker"
                        );
                    }
                })
            },
            || started.store(true, Ordering::Release),
        );
    }
}

/// The second half runs even when a wait inside the first half needs it: the
/// waiting worker runs its own private halves (newest first, then older ones),
/// on one worker as on two.
#[test]
fn a_first_half_that_waits_for_an_outer_second_half_completes() {
    for w in [1, 2] {
        let rt = rt(w);
        let v = tutti::DataflowVar::new();
        let ((got, inner), ()) = rt.install(|| {
            tutti::join(
                // The inner first half blocks until the outer second half ran.
                || tutti::join(|| *v.get(), || fib(10)),
                || v.set(7).unwrap(),
            )
        });
        assert_eq!((got, inner), (7, 55), "{w} workers");
    }
}

/// Deep recursion (hundreds of nested joins) and a panic deep inside it:
/// every pending half still runs, and the panic reaches the top.
#[test]
fn a_panic_deep_in_a_chain_of_joins_reaches_the_top_after_every_half_ran() {
    fn chain(depth: u32, ran: &AtomicUsize) -> u32 {
        if depth == 0 {
            panic!("bottom of the chain");
        }
        let (a, ()) = tutti::join(
            || chain(depth - 1, ran),
            || {
                ran.fetch_add(1, Ordering::Relaxed);
            },
        );
        a
    }
    for w in [1, 2] {
        let rt = rt(w);
        let ran = AtomicUsize::new(0);
        let r = catch_unwind(AssertUnwindSafe(|| rt.install(|| chain(500, &ran))));
        assert_eq!(
            *r.unwrap_err().downcast::<&str>().unwrap(),
            "bottom of the chain"
        );
        assert_eq!(ran.into_inner(), 500, "{w} workers");
    }
}

/// Runs `f` under `depth` nested `join`s (each second half does nothing), so
/// that `f`'s own `join`s are deeper than the ones a worker records.
fn nested<R: Send>(depth: u32, f: &(dyn Fn() -> R + Sync)) -> R {
    if depth == 0 {
        return f();
    }
    tutti::join(|| nested(depth - 1, f), || ()).0
}

/// Deep inside a recursion, where `join`s no longer record their second
/// halves, both halves still panic-propagate as on top: the first half's
/// panic wins, and the second half ran anyway.
#[test]
fn deep_unrecorded_joins_run_the_second_half_and_raise_the_first_panic() {
    for w in [1, 2] {
        let rt = rt(w);
        let ran_b = AtomicUsize::new(0);
        let r = catch_unwind(AssertUnwindSafe(|| {
            rt.install(|| {
                nested(40, &|| {
                    tutti::join(
                        || panic!("a"),
                        || {
                            ran_b.fetch_add(1, Ordering::Relaxed);
                            panic!("b")
                        },
                    )
                })
            })
        }));
        assert_eq!(
            *r.unwrap_err().downcast::<&str>().unwrap(),
            "a",
            "{w} workers"
        );
        assert_eq!(ran_b.into_inner(), 1, "{w} workers");
        let r = catch_unwind(AssertUnwindSafe(|| {
            rt.install(|| nested(40, &|| tutti::join(|| 1, || panic!("b only"))))
        }));
        assert_eq!(*r.unwrap_err().downcast::<&str>().unwrap(), "b only");
        assert_eq!(rt.install(|| nested(40, &|| fib(12))), 144);
    }
}

/// Load balance below the recorded depth: a first half 40 `join`s deep keeps
/// joining until the outermost second half has run, which only the idle
/// worker can do — the deep `join`s must record (and promote the oldest
/// half) while it is idle.
#[test]
fn an_idle_worker_gets_the_outermost_half_of_a_deep_busy_recursion() {
    idle_worker_takes_the_outermost_half(40, "the outermost second half");
}
