//! A CSP process network: a generator, a bank of workers sharing one channel
//! end, and a collector that waits on several events at once with `select!`.
//!
//! ```sh
//! cargo run -p tutti --example csp_network
//! ```
//!
//! ```text
//!                    ┌─ square 0 ─┐
//!  numbers ─ work ─▶ ├─ square 1 ─┤ ─ results ─▶ collector ─▶ main
//!                    └─ square 2 ─┘        tick ─▶
//! ```
//!
//! `work` and `results` are synchronous channels: a send completes when a
//! receiver takes the value, so the network needs no buffers and no locks. Both
//! ends are shared (any-to-any): each value goes to exactly one worker. The
//! collector's `select!` takes a result, a tick of a timer channel (progress
//! lines), or the end of the network (every worker gone closes `results`). The
//! collector checks the sum of the squares; the program exits with an error if
//! it is wrong.

use std::time::Duration;

use tutti::csp::{self, Par, RecvError};

const N: u64 = 20_000;
const WORKERS: usize = 3;

fn main() {
    let (work_tx, work_rx) = csp::channel_named::<u64>("work");
    let (results_tx, results_rx) = csp::channel_named::<(usize, u64)>("results");
    let (total_tx, total_rx) = csp::buffered::<(u64, [u64; WORKERS])>(1);

    let mut network = Par::new().process("numbers", async move {
        for i in 1..=N {
            work_tx.send(i).await.unwrap();
        }
        // Dropping the last sending end closes `work`: the workers end.
    });
    for w in 0..WORKERS {
        let (work, results) = (work_rx.clone(), results_tx.clone());
        network = network.process(format!("square {w}"), async move {
            while let Ok(x) = work.recv().await {
                results.send((w, x * x)).await.unwrap();
            }
        });
    }
    // Only the workers hold these ends now: when they end, the channels close.
    drop((work_rx, results_tx));

    network = network.process("collector", async move {
        let ticks = csp::tick(Duration::from_millis(25));
        let (mut total, mut count, mut per_worker) = (0u64, 0u64, [0u64; WORKERS]);
        loop {
            tutti::select! {
                recv(results_rx) -> r => match r {
                    Ok((worker, square)) => {
                        total += square;
                        count += 1;
                        per_worker[worker] += 1;
                    }
                    Err(RecvError::Closed) => break,
                    Err(e) => panic!("results: {e}"),
                },
                recv(ticks) -> _ => println!("  collected {count:>6} of {N}"),
                timeout(Duration::from_secs(30)) => panic!("no result for 30 s"),
            }
        }
        total_tx.send((total, per_worker)).await.unwrap();
    });

    // Run the network to its end; a network that can no longer progress would
    // come back as an error naming each blocked process.
    network.run().wait_blocking().expect("the network ends");
    let (total, per_worker) = total_rx.recv_blocking().expect("the collector's total");

    let expected = N * (N + 1) * (2 * N + 1) / 6;
    println!("sum of the squares of 1..={N}: {total}");
    for (w, n) in per_worker.iter().enumerate() {
        println!("  square {w} handled {n} numbers");
    }
    if total != expected || per_worker.iter().sum::<u64>() != N {
        eprintln!("csp_network: expected {expected} from {N} numbers");
        std::process::exit(1);
    }
    println!("verified: every number squared once, by one of the {WORKERS} workers");
}
