//! Deadlock detection must never report a network that is still progressing, however
//! the threads running it are scheduled: here a network does thousands of rendezvous
//! through short-lived nested `PAR`s (each side sends and receives in parallel, the
//! revised MAD's kill exchange) while another runtime of the process keeps going idle
//! and a plain thread competes for the cores, so that workers are preempted at any
//! point — for instance just after taking a woken task out of a queue.
// This file uses tutti as a program would, with `std`'s atomics and locks: the
// loom-shim rule of `clippy.toml` is for the library's own code.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

mod watchdog;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tutti::csp::{channel_named, run, Par, ParFuture, Rx, Tx};

/// Rounds of the exchange per run (enough for many idle scans, and quick).
const ROUNDS: u32 = 3000;

/// One side's round: `PAR (out ! r, in ? x)` as a nested `par`.
async fn exchange(out: &Tx<u32>, inp: &Rx<u32>, r: u32) {
    let (tx, rx) = (out.clone(), inp.clone());
    Par::new()
        .process("send", async move { tx.send(r).await.unwrap() })
        .process("hear", async move {
            assert_eq!(rx.recv().await, Ok(r));
        })
        .run()
        .await
        .unwrap();
}

fn network() -> ParFuture<'static> {
    run(async {
        let (a_tx, a_rx) = channel_named::<u32>("a");
        let (b_tx, b_rx) = channel_named::<u32>("b");
        Par::new()
            .process("left", async move {
                for r in 0..ROUNDS {
                    exchange(&a_tx, &b_rx, r).await;
                }
            })
            .process("right", async move {
                for r in 0..ROUNDS {
                    exchange(&b_tx, &a_rx, r).await;
                }
            })
            .run()
            .await
            .unwrap();
    })
}

#[test]
fn a_progressing_network_is_never_reported() {
    let stop = Arc::new(AtomicBool::new(false));
    // Another runtime whose workers go idle (and run the idle hook) again and again.
    let other = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let rt = tutti::Runtime::builder().workers(2).build().unwrap();
            while !stop.load(Ordering::Relaxed) {
                rt.block_on(rt.spawn(async { 1 }));
                std::thread::sleep(Duration::from_micros(50));
            }
        })
    };
    // A thread competing for the cores, so that workers get preempted.
    let hog = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                std::hint::spin_loop();
            }
        })
    };
    let rt = tutti::Runtime::builder().workers(2).build().unwrap();
    let results: Vec<_> = (0..4).map(|_| rt.block_on(rt.spawn(network()))).collect();
    stop.store(true, Ordering::Relaxed);
    other.join().unwrap();
    hog.join().unwrap();
    for r in results {
        if let Err(d) = r {
            panic!("a progressing network was reported deadlocked:\n{d}");
        }
    }
}
