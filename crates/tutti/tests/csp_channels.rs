//! Channels across processes: rendezvous semantics, shared ends (every value delivered
//! exactly once), close and poison propagating through a pipeline, and the same channel
//! used from async tasks and plain threads at once.
// This file uses tutti as a program would, with `std`'s atomics and locks: the
// loom-shim rule of `clippy.toml` is for the library's own code.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

mod watchdog;
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tutti::csp::{buffered, channel, RecvError, Rx, SendError, Tx};
use tutti::Runtime;

fn rt() -> Runtime {
    Runtime::builder().workers(2).build().unwrap()
}

/// Values per sender in the shared-end tests (small: the machine is shared).
const PER_SENDER: u64 = 2_000;

/// A completed rendezvous send means a receiver holds the value, so poisoning right after
/// the last send cannot destroy anything: every value arrives. (With a buffer the poison
/// would drop what is still buffered.)
#[test]
fn rendezvous_writer_resumes_only_after_the_reader_has_the_value() {
    let rt = rt();
    for round in 0..20u64 {
        let (tx, rx) = channel::<u64>();
        let writer = rt.spawn(async move {
            for i in 0..50 {
                tx.send(round * 100 + i).await.unwrap();
            }
            tx.poison();
        });
        let reader = rt.spawn(async move {
            let mut got = Vec::new();
            loop {
                match rx.recv().await {
                    Ok(v) => got.push(v),
                    Err(RecvError::Poisoned) => break got,
                    Err(e) => panic!("unexpected {e}"),
                }
            }
        });
        rt.block_on(writer);
        let got = rt.block_on(reader);
        assert_eq!(got, (0..50).map(|i| round * 100 + i).collect::<Vec<_>>());
    }
    // The same between two plain threads.
    let (tx, rx) = channel::<u64>();
    let writer = std::thread::spawn(move || {
        for i in 0..200 {
            tx.send_blocking(i).unwrap();
        }
        tx.poison();
    });
    let mut n = 0;
    while let Ok(v) = rx.recv_blocking() {
        assert_eq!(v, n);
        n += 1;
    }
    assert_eq!(n, 200);
    writer.join().unwrap();
}

/// Many senders and many receivers on one channel, half of each async tasks and half
/// plain threads: every value is received exactly once.
fn any_to_any(capacity: usize) {
    let rt = rt();
    let (tx, rx) = buffered::<u64>(capacity);
    let senders = 4u64;
    let mut task_senders = Vec::new();
    let mut thread_senders = Vec::new();
    for s in 0..senders {
        let tx = tx.clone();
        let values = (0..PER_SENDER).map(move |i| s * PER_SENDER + i);
        if s % 2 == 0 {
            task_senders.push(rt.spawn(async move {
                for v in values {
                    tx.send(v).await.unwrap();
                }
            }));
        } else {
            thread_senders.push(std::thread::spawn(move || {
                for v in values {
                    tx.send_blocking(v).unwrap();
                }
            }));
        }
    }
    drop(tx);
    let collect = |rx: Rx<u64>| async move {
        let mut got = Vec::new();
        while let Ok(v) = rx.recv().await {
            got.push(v);
        }
        got
    };
    let task_receivers: Vec<_> = (0..2).map(|_| rt.spawn(collect(rx.clone()))).collect();
    let thread_receivers: Vec<_> = (0..2)
        .map(|_| {
            let rx = rx.clone();
            std::thread::spawn(move || {
                let mut got = Vec::new();
                while let Ok(v) = rx.recv_blocking() {
                    got.push(v);
                }
                got
            })
        })
        .collect();
    drop(rx);
    for h in task_senders {
        rt.block_on(h);
    }
    for h in thread_senders {
        h.join().unwrap();
    }
    let mut all: Vec<u64> = task_receivers
        .into_iter()
        .flat_map(|h| rt.block_on(h))
        .chain(thread_receivers.into_iter().flat_map(|h| h.join().unwrap()))
        .collect();
    all.sort_unstable();
    assert_eq!(all, (0..senders * PER_SENDER).collect::<Vec<_>>());
}

#[test]
fn any_to_any_rendezvous_delivers_each_value_once() {
    any_to_any(0);
}

#[test]
fn any_to_any_buffered_delivers_each_value_once() {
    any_to_any(3);
}

/// Each sender's values arrive in the order it sent them (per-sender FIFO), through a
/// shared end.
#[test]
fn any_to_one_keeps_each_senders_order() {
    let rt = rt();
    for capacity in [0, 1, 16] {
        let (tx, rx) = buffered::<(u64, u64)>(capacity);
        let handles: Vec<_> = (0..3u64)
            .map(|s| {
                let tx = tx.clone();
                rt.spawn(async move {
                    for i in 0..500 {
                        tx.send((s, i)).await.unwrap();
                    }
                })
            })
            .collect();
        drop(tx);
        let mut next: HashMap<u64, u64> = HashMap::new();
        while let Ok((s, i)) = rx.recv_blocking() {
            let expect = next.entry(s).or_default();
            assert_eq!(i, *expect, "sender {s} out of order");
            *expect += 1;
        }
        assert!(next.values().all(|&n| n == 500));
        for h in handles {
            rt.block_on(h);
        }
    }
}

/// A stage of a pipeline: forwards `x + 1`; stops when its input ends, and passes poison
/// on in both directions.
async fn stage(input: Rx<u64>, output: Tx<u64>) -> &'static str {
    loop {
        match input.recv().await {
            Ok(x) => {
                if output.send(x + 1).await.is_err() {
                    input.poison();
                    return "output failed";
                }
            }
            Err(RecvError::Closed) => return "closed",
            Err(RecvError::Poisoned) => {
                output.poison();
                return "poisoned";
            }
        }
    }
}

fn pipeline(
    rt: &Runtime,
    stages: usize,
) -> (Tx<u64>, Rx<u64>, Vec<tutti::JoinHandle<&'static str>>) {
    let (first_tx, mut rx) = channel::<u64>();
    let mut handles = Vec::new();
    for k in 0..stages {
        let (tx, next_rx) = if k % 2 == 0 { channel() } else { buffered(2) };
        handles.push(rt.spawn(stage(rx, tx)));
        rx = next_rx;
    }
    (first_tx, rx, handles)
}

#[test]
fn closing_the_head_of_a_pipeline_ends_every_stage() {
    let rt = rt();
    let (tx, rx, stages) = pipeline(&rt, 6);
    for i in 0..10 {
        tx.send_blocking(i).unwrap();
        assert_eq!(rx.recv_blocking(), Ok(i + 6));
    }
    drop(tx);
    assert_eq!(rx.recv_blocking(), Err(RecvError::Closed));
    for h in stages {
        assert_eq!(rt.block_on(h), "closed");
    }
}

#[test]
fn poison_in_the_middle_spreads_both_ways() {
    let rt = rt();
    let (head, mid_rx, upstream) = pipeline(&rt, 3);
    let (mid_tx, tail) = channel::<u64>();
    // A middle process that forwards one value, then poisons both of its channels.
    let middle = rt.spawn(async move {
        let v = mid_rx.recv().await.unwrap();
        mid_tx.send(v).await.unwrap();
        mid_rx.poison();
        mid_tx.poison();
    });
    head.send_blocking(1).unwrap();
    assert_eq!(tail.recv_blocking(), Ok(4));
    rt.block_on(middle);
    // Downstream sees the poison at once.
    assert_eq!(tail.recv_blocking(), Err(RecvError::Poisoned));
    // Upstream, each stage finds it when it next sends, and poisons its own input; so
    // the head is refused within a few values (one per stage, at most).
    let refused = (2..10).find_map(|v| head.send_blocking(v).err());
    assert!(
        matches!(refused, Some(SendError::Poisoned(_))),
        "{refused:?}"
    );
    for h in upstream {
        assert_eq!(rt.block_on(h), "output failed");
    }
}

#[test]
fn dropping_every_receiver_returns_values_to_senders() {
    let rt = rt();
    let (tx, rx) = channel::<String>();
    let waiting = rt.spawn({
        let tx = tx.clone();
        async move { tx.send("kept".to_string()).await }
    });
    // Most likely the sender is waiting by now; either way it must get its value back.
    std::thread::sleep(Duration::from_millis(1));
    drop(rx);
    match rt.block_on(waiting) {
        Err(SendError::Closed(v)) => assert_eq!(v, "kept"),
        Ok(()) => panic!("nobody could have received it"),
        Err(e) => panic!("unexpected {e}"),
    }
    assert_eq!(tx.try_send("x".into()).unwrap_err().into_inner(), "x");
}

/// A blocking receive on a worker (outside any task) keeps the worker busy with other
/// work: here, the very task that sends to it.
#[test]
fn blocking_on_a_worker_runs_other_work_meanwhile() {
    let rt = Runtime::builder().workers(1).build().unwrap();
    let got = rt.install(|| {
        let (tx, rx) = channel::<u32>();
        let h = tutti::spawn(async move { tx.send(11).await.unwrap() });
        let v = rx.recv_blocking();
        h.join();
        v
    });
    assert_eq!(got, Ok(11));
}

#[test]
fn blocking_inside_a_task_panics_with_a_clear_message() {
    let rt = rt();
    let (_tx, rx) = channel::<u32>();
    let h = rt.spawn(async move { rx.recv_blocking() });
    let err = rt.block_on(h.result()).unwrap_err();
    assert!(err.to_string().contains("Use `.await` instead"), "{err}");
}

/// Values are dropped exactly once whatever ends the channel.
#[test]
fn values_are_dropped_exactly_once() {
    struct Counted(Arc<AtomicUsize>);
    impl Drop for Counted {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }
    let drops = Arc::new(AtomicUsize::new(0));
    let (tx, rx) = buffered::<Counted>(4);
    for _ in 0..4 {
        tx.try_send(Counted(drops.clone())).unwrap();
    }
    drop(rx.try_recv().unwrap());
    assert_eq!(drops.load(Ordering::SeqCst), 1);
    tx.poison();
    assert_eq!(drops.load(Ordering::SeqCst), 4);
    let (tx, rx) = buffered::<Counted>(4);
    tx.try_send(Counted(drops.clone())).unwrap();
    drop(tx);
    drop(rx);
    assert_eq!(drops.load(Ordering::SeqCst), 5);
}

/// A buffered value whose destructor panics when `loud`; counts every drop.
struct Fragile {
    loud: bool,
    drops: Arc<AtomicUsize>,
}

impl Drop for Fragile {
    fn drop(&mut self) {
        self.drops.fetch_add(1, Ordering::SeqCst);
        if self.loud {
            panic!("fragile value dropped");
        }
    }
}

fn catch(f: impl FnOnce()) -> std::thread::Result<()> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f))
}

fn panic_text(p: &(dyn std::any::Any + Send)) -> &str {
    p.downcast_ref::<&'static str>()
        .copied()
        .or_else(|| p.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("?")
}

/// A panicking destructor of a buffered value propagates to whoever drops the channel,
/// after every other buffered value was dropped, without aborting (std's `Vec`,
/// crossbeam): dropping the last receiver, dropping the last end of any kind, and
/// poisoning; two panicking values still drop all and raise one panic; and a channel
/// dropped while its thread unwinds from another panic does not abort.
#[test]
fn a_panicking_drop_of_a_buffered_value_reaches_whoever_drops_the_channel() {
    let drops = Arc::new(AtomicUsize::new(0));
    let fill = |tx: &Tx<Fragile>, loud: &[bool]| {
        for &loud in loud {
            let drops = Arc::clone(&drops);
            tx.try_send(Fragile { loud, drops }).ok().unwrap();
        }
    };
    // The last receiver goes while a sender stays.
    let (tx, rx) = buffered::<Fragile>(4);
    fill(&tx, &[false, true, false, false]);
    let r = catch(move || drop(rx));
    let p = r.expect_err("dropping the receiver must raise the value's panic");
    assert_eq!(panic_text(&*p), "fragile value dropped");
    assert_eq!(
        drops.swap(0, Ordering::SeqCst),
        4,
        "every value was dropped"
    );
    assert!(matches!(
        tx.try_send(Fragile {
            loud: false,
            drops: Arc::clone(&drops)
        }),
        Err(tutti::csp::TrySendError::Closed(_))
    ));
    drops.store(0, Ordering::SeqCst);
    drop(tx);
    // The sender goes first; the receiver's drop frees the channel. Two loud values.
    let (tx, rx) = buffered::<Fragile>(4);
    fill(&tx, &[true, false, true]);
    drop(tx);
    let r = catch(move || drop(rx));
    assert!(r.is_err(), "the last end's drop must raise a value's panic");
    assert_eq!(
        drops.swap(0, Ordering::SeqCst),
        3,
        "every value was dropped"
    );
    // Poisoning drops the buffer: the poisoner gets the panic, the channel stays usable.
    let (tx, rx) = buffered::<Fragile>(4);
    fill(&tx, &[false, true]);
    let r = catch(|| tx.poison());
    assert!(r.is_err(), "poisoning must raise the dropped value's panic");
    assert_eq!(drops.swap(0, Ordering::SeqCst), 2);
    assert_eq!(
        rx.try_recv().err(),
        Some(tutti::csp::TryRecvError::Poisoned)
    );
    drop((tx, rx));
    // Dropped during another panic's unwinding: reported, no abort; the first panic wins.
    let (tx, rx) = buffered::<Fragile>(4);
    fill(&tx, &[true]);
    let r = catch(move || {
        let _rx = rx;
        panic!("outer");
    });
    assert_eq!(panic_text(&*r.unwrap_err()), "outer");
    assert_eq!(drops.swap(0, Ordering::SeqCst), 1);
    drop(tx);
}
