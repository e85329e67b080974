//! `Alt` across processes: a server selecting over many clients' channels, PRI ALT
//! priority under load, fair rotation, timeouts and pre-conditions, from async tasks and
//! plain threads.

mod watchdog;
use std::time::Duration;

use tutti::csp::{buffered, channel, Alt, RecvError, Rx};
use tutti::Runtime;

fn rt() -> Runtime {
    Runtime::builder().workers(2).build().unwrap()
}

/// A server task alting over several client channels (tasks and threads as clients)
/// receives every value exactly once and in each client's order, and stops when all
/// clients are gone — disabling each guard with its pre-condition as its channel closes.
#[test]
fn alt_server_serves_every_client_exactly_once() {
    let rt = rt();
    const CLIENTS: usize = 6;
    const EACH: u64 = 300;
    let (txs, rxs): (Vec<_>, Vec<Rx<u64>>) = (0..CLIENTS)
        .map(|c| if c % 3 == 0 { buffered(2) } else { channel() })
        .unzip();
    let server = rt.spawn(async move {
        let mut open = [true; CLIENTS];
        let mut next = vec![0u64; CLIENTS];
        let mut alt = rxs.iter().fold(Alt::new(), Alt::recv);
        while open.iter().any(|&o| o) {
            for (i, &o) in open.iter().enumerate() {
                alt.set_when(i, o);
            }
            let sel = alt.fair_select().await;
            let c = sel.index();
            match sel.recv(&rxs[c]) {
                Ok(v) => {
                    assert_eq!(v, next[c], "client {c} out of order");
                    next[c] += 1;
                }
                Err(RecvError::Closed) => open[c] = false,
                Err(e) => panic!("unexpected {e}"),
            }
        }
        next
    });
    let mut threads = Vec::new();
    let mut tasks = Vec::new();
    for (c, tx) in txs.into_iter().enumerate() {
        if c % 2 == 0 {
            tasks.push(rt.spawn(async move {
                for i in 0..EACH {
                    tx.send(i).await.unwrap();
                }
            }));
        } else {
            threads.push(std::thread::spawn(move || {
                for i in 0..EACH {
                    tx.send_blocking(i).unwrap();
                }
            }));
        }
    }
    for t in threads {
        t.join().unwrap();
    }
    for t in tasks {
        rt.block_on(t);
    }
    assert_eq!(rt.block_on(server), vec![EACH; CLIENTS]);
}

/// PRI ALT under load: while the high-priority channel has a value ready, the
/// low-priority one is never chosen.
#[test]
fn pri_alt_prefers_the_first_guard_while_it_is_ready() {
    let (hi_tx, hi) = buffered::<u32>(64);
    let (lo_tx, lo) = buffered::<u32>(64);
    for i in 0..64 {
        hi_tx.try_send(i).unwrap();
        lo_tx.try_send(i).unwrap();
    }
    let mut alt = Alt::new().recv(&hi).recv(&lo);
    for i in 0..64 {
        let sel = alt.pri_select_blocking();
        assert_eq!(sel.index(), 0);
        assert_eq!(sel.recv(&hi), Ok(i));
    }
    let sel = alt.pri_select_blocking();
    assert_eq!(sel.index(), 1);
    assert_eq!(sel.recv(&lo), Ok(0));
}

/// Fair selection over channels that are all always ready serves them evenly.
#[test]
fn fair_alt_serves_ready_guards_evenly() {
    const N: usize = 4;
    let chans: Vec<_> = (0..N).map(|_| buffered::<u32>(128)).collect();
    for (tx, _) in &chans {
        for i in 0..100 {
            tx.try_send(i).unwrap();
        }
    }
    let mut alt = chans.iter().fold(Alt::new(), |alt, (_, rx)| alt.recv(rx));
    let mut counts = [0; N];
    for _ in 0..100 * N {
        let sel = alt.fair_select_blocking();
        let i = sel.index();
        sel.recv(&chans[i].1).unwrap();
        counts[i] += 1;
    }
    assert_eq!(counts, [100; N]);
}

/// The rover's monitor from the seed: PRI ALT over a kill channel and a sensor, with the
/// kill taking priority; in an async task, with a timeout guard as a watchdog.
#[test]
fn monitor_with_kill_priority_and_watchdog() {
    let rt = rt();
    let (kill_tx, kill) = channel::<()>();
    let (sensor_tx, sensor) = buffered::<u32>(8);
    let probe = sensor.clone();
    let monitor = rt.spawn(async move {
        let mut alt = Alt::new()
            .recv(&kill)
            .recv(&sensor)
            .timeout(Duration::from_secs(30));
        let mut readings = 0;
        loop {
            let sel = alt.pri_select().await;
            match sel.index() {
                0 => {
                    sel.recv(&kill).unwrap();
                    return readings;
                }
                1 => {
                    sel.recv(&sensor).unwrap();
                    readings += 1;
                }
                _ => panic!("watchdog fired"),
            }
        }
    });
    for i in 0..5 {
        sensor_tx.send_blocking(i).unwrap();
    }
    // Wait until the monitor has consumed them, so the count below is exact.
    while !probe.is_empty() {
        std::thread::yield_now();
    }
    kill_tx.send_blocking(()).unwrap();
    assert_eq!(rt.block_on(monitor), 5);
}

/// A timeout guard in an async selection gives the worker back while it waits.
#[test]
fn timeout_guard_in_a_task() {
    let rt = rt();
    let (_tx, rx) = channel::<u8>();
    let h = rt.spawn(async move {
        let mut alt = Alt::new().recv(&rx).timeout(Duration::from_millis(2));
        let mut fired = 0;
        for _ in 0..3 {
            fired += alt.select().await.index();
        }
        fired
    });
    assert_eq!(rt.block_on(h), 3);
}

/// Several selecting processes share one receiving end: each value goes to exactly one.
#[test]
fn many_alts_share_one_input() {
    let rt = rt();
    let (tx, rx) = channel::<u64>();
    let (stop_tx, stop) = channel::<()>();
    let workers: Vec<_> = (0..4)
        .map(|_| {
            let rx = rx.clone();
            let stop = stop.clone();
            rt.spawn(async move {
                let mut got = Vec::new();
                let mut alt = Alt::new().recv(&stop).recv(&rx);
                loop {
                    let sel = alt.pri_select().await;
                    if sel.index() == 0 {
                        let _ = sel.recv(&stop);
                        return got;
                    }
                    got.push(sel.recv(&rx).unwrap());
                }
            })
        })
        .collect();
    drop(rx);
    drop(stop);
    for i in 0..2_000 {
        tx.send_blocking(i).unwrap();
    }
    drop(stop_tx); // closing `stop` fires guard 0 in every worker
    let mut all: Vec<u64> = workers.into_iter().flat_map(|h| rt.block_on(h)).collect();
    all.sort_unstable();
    assert_eq!(all, (0..2_000).collect::<Vec<_>>());
}
