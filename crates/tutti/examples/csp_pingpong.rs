//! Rendezvous ping-pong and buffered throughput on `tutti::csp` channels.
//!
//! `cargo run --release --example csp_pingpong -- [round_trips] [workers] [only]`
//!
//! `only` (a substring of a benchmark's name, e.g. `tasks` or `threads`) runs a subset.
//!
//! Prints ns per message (one message = one hop of the ping-pong) for two async tasks on
//! a runtime, and for two OS threads; ns per message for a capacity-1024 buffered channel
//! streaming between two tasks and between two threads; and ns per selection of an `Alt`
//! over 2, 8 and 64 buffered inputs fed round-robin by one producer. Medians of 5 runs.
use std::time::Instant;

use tutti::csp::{buffered, channel, Alt, Rx, Tx};

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

async fn ping(tx: Tx<u64>, rx: Rx<u64>, n: u64) {
    for i in 0..n {
        tx.send(i).await.unwrap();
        assert_eq!(rx.recv().await.unwrap(), i);
    }
}

async fn pong(tx: Tx<u64>, rx: Rx<u64>) {
    while let Ok(v) = rx.recv().await {
        tx.send(v).await.unwrap();
    }
}

fn tasks_pingpong(rt: &tutti::Runtime, n: u64) -> f64 {
    let (a_tx, a_rx) = channel();
    let (b_tx, b_rx) = channel();
    let t = Instant::now();
    let p = rt.spawn(pong(b_tx, a_rx));
    rt.block_on(rt.spawn(ping(a_tx, b_rx, n)));
    rt.block_on(p);
    t.elapsed().as_nanos() as f64 / (2 * n) as f64
}

fn threads_pingpong(n: u64) -> f64 {
    let (a_tx, a_rx) = channel::<u64>();
    let (b_tx, b_rx) = channel::<u64>();
    let t = Instant::now();
    let p = std::thread::spawn(move || {
        while let Ok(v) = a_rx.recv_blocking() {
            b_tx.send_blocking(v).unwrap();
        }
    });
    for i in 0..n {
        a_tx.send_blocking(i).unwrap();
        assert_eq!(b_rx.recv_blocking().unwrap(), i);
    }
    drop(a_tx);
    p.join().unwrap();
    t.elapsed().as_nanos() as f64 / (2 * n) as f64
}

fn tasks_stream(rt: &tutti::Runtime, n: u64) -> f64 {
    let (tx, rx) = buffered::<u64>(1024);
    let t = Instant::now();
    let c = rt.spawn(async move {
        let mut sum = 0u64;
        while let Ok(v) = rx.recv().await {
            sum = sum.wrapping_add(v);
        }
        sum
    });
    rt.block_on(rt.spawn(async move {
        for i in 0..n {
            tx.send(i).await.unwrap();
        }
    }));
    assert_eq!(rt.block_on(c), n * (n - 1) / 2);
    t.elapsed().as_nanos() as f64 / n as f64
}

fn threads_stream(n: u64) -> f64 {
    let (tx, rx) = buffered::<u64>(1024);
    let t = Instant::now();
    let c = std::thread::spawn(move || {
        let mut sum = 0u64;
        while let Ok(v) = rx.recv_blocking() {
            sum = sum.wrapping_add(v);
        }
        sum
    });
    for i in 0..n {
        tx.send_blocking(i).unwrap();
    }
    drop(tx);
    assert_eq!(c.join().unwrap(), n * (n - 1) / 2);
    t.elapsed().as_nanos() as f64 / n as f64
}

/// One producer feeds `k` buffered channels round-robin; one consumer selects over them.
/// Async tasks on `rt`, or (without a runtime) two threads using the blocking forms.
fn alt_select(rt: Option<&tutti::Runtime>, k: usize, n: u64) -> f64 {
    let (txs, rxs): (Vec<Tx<u64>>, Vec<Rx<u64>>) = (0..k).map(|_| buffered(64)).unzip();
    let t = Instant::now();
    let sum = match rt {
        Some(rt) => {
            let consumer = rt.spawn(async move {
                let mut alt = rxs.iter().fold(Alt::new(), Alt::recv);
                let mut sum = 0u64;
                for _ in 0..n {
                    let sel = alt.fair_select().await;
                    let i = sel.index();
                    sum = sum.wrapping_add(sel.recv(&rxs[i]).unwrap());
                }
                sum
            });
            let producer = rt.spawn(async move {
                for i in 0..n {
                    txs[i as usize % k].send(i).await.unwrap();
                }
                txs // keep the channels open until the consumer is done
            });
            let sum = rt.block_on(consumer);
            drop(rt.block_on(producer));
            sum
        }
        None => {
            let producer = std::thread::spawn(move || {
                for i in 0..n {
                    txs[i as usize % k].send_blocking(i).unwrap();
                }
                txs
            });
            let mut alt = rxs.iter().fold(Alt::new(), Alt::recv);
            let mut sum = 0u64;
            for _ in 0..n {
                let sel = alt.fair_select_blocking();
                let i = sel.index();
                sum = sum.wrapping_add(sel.recv(&rxs[i]).unwrap());
            }
            drop(producer.join().unwrap());
            sum
        }
    };
    assert_eq!(sum, n * (n - 1) / 2);
    t.elapsed().as_nanos() as f64 / n as f64
}

fn main() {
    let mut args = std::env::args().skip(1);
    let n: u64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(200_000);
    let workers: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(2);
    let only = args.next().unwrap_or_default();
    let rt = tutti::Runtime::builder()
        .workers(workers)
        .build()
        .expect("runtime");
    let runs = 5;
    let report = |name: &str, f: &dyn Fn() -> f64| {
        if !name.contains(only.as_str()) {
            return;
        }
        f(); // warm-up
        let m = median((0..runs).map(|_| f()).collect());
        println!("{name:<40} {m:>8.1} ns/message");
    };
    report(&format!("ping-pong, 2 tasks, {workers} workers"), &|| {
        tasks_pingpong(&rt, n)
    });
    report("ping-pong, 2 threads", &|| threads_pingpong(n / 4));
    report(
        &format!("buffered(1024), 2 tasks, {workers} workers"),
        &|| tasks_stream(&rt, 4 * n),
    );
    report("buffered(1024), 2 threads", &|| threads_stream(4 * n));
    for k in [2, 8, 64] {
        report(
            &format!("alt over {k}, 2 tasks, {workers} workers"),
            &|| alt_select(Some(&rt), k, n),
        );
        report(&format!("alt over {k}, 2 threads"), &|| {
            alt_select(None, k, n / 2)
        });
    }
}
