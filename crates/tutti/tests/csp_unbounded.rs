//! Unbounded channels: sends never wait, values arrive once each and in each sender's
//! order across shared ends (tasks and threads), close / drop / poison end them as they
//! end the bounded ones, they take part in `Alt` and `select!`, and the deadlock
//! detector understands a receive that can never complete.

mod watchdog;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use tutti::csp::{
    channel, run, unbounded, unbounded_named, Alt, Par, RecvError, SendError, TryRecvError,
    TrySendError,
};
use tutti::Runtime;

fn rt() -> Runtime {
    Runtime::builder().workers(2).build().unwrap()
}

#[test]
fn sends_never_wait_and_receivers_drain_then_see_closed() {
    let (tx, rx) = unbounded::<u32>();
    assert!(tx.is_empty() && !tx.is_full());
    assert_eq!(tx.capacity(), usize::MAX);
    for i in 0..100_000 {
        tx.try_send(i).unwrap();
    }
    assert_eq!(rx.len(), 100_000);
    assert!(!tx.is_full());
    tx.close();
    assert_eq!(tx.try_send(7), Err(TrySendError::Closed(7)));
    assert_eq!(tx.send_blocking(8), Err(SendError::Closed(8)));
    let drained: Vec<u32> = rx.iter().collect();
    assert_eq!(drained, (0..100_000).collect::<Vec<_>>());
    assert_eq!(rx.try_recv(), Err(TryRecvError::Closed));
    assert_eq!(rx.recv_blocking(), Err(RecvError::Closed));
}

#[test]
fn dropping_every_sender_closes_and_dropping_every_receiver_refuses() {
    let (tx, rx) = unbounded::<String>();
    let tx2 = tx.clone();
    tx.try_send("a".into()).unwrap();
    drop(tx);
    tx2.try_send("b".into()).unwrap();
    drop(tx2);
    let got: Vec<String> = (&rx).into_iter().collect();
    assert_eq!(got, ["a", "b"]);

    let (tx, rx) = unbounded::<u8>();
    let rx2 = rx.clone();
    drop(rx);
    tx.try_send(1).unwrap();
    drop(rx2);
    assert_eq!(tx.try_send(2), Err(TrySendError::Closed(2)));
    assert!(tx.is_closed());
}

#[test]
fn poison_fails_everyone_and_drops_the_buffer() {
    let (tx, rx) = unbounded::<Arc<()>>();
    let token = Arc::new(());
    for _ in 0..10 {
        tx.try_send(token.clone()).unwrap();
    }
    rx.poison();
    assert_eq!(Arc::strong_count(&token), 1, "buffered values were dropped");
    assert!(matches!(
        tx.try_send(token.clone()),
        Err(TrySendError::Poisoned(_))
    ));
    assert_eq!(rx.recv_blocking(), Err(RecvError::Poisoned));
}

/// Four senders (two tasks, two threads) and three receivers (a task, two threads): each
/// value arrives exactly once, and each sender's values in its order.
#[test]
fn any_to_any_across_tasks_and_threads() {
    const PER: u64 = 20_000;
    let rt = rt();
    let (tx, rx) = unbounded::<(u64, u64)>();
    let mut senders = Vec::new();
    for s in 0..2u64 {
        let tx = tx.clone();
        senders.push(rt.spawn(async move {
            for i in 0..PER {
                tx.send((s, i)).await.unwrap();
            }
        }));
    }
    let threads: Vec<_> = (2..4u64)
        .map(|s| {
            let tx = tx.clone();
            std::thread::spawn(move || {
                for i in 0..PER {
                    tx.send_blocking((s, i)).unwrap();
                }
            })
        })
        .collect();
    drop(tx);
    let task_rx = rx.clone();
    let task = rt.spawn(async move {
        let mut got = Vec::new();
        while let Ok(v) = task_rx.recv().await {
            got.push(v);
        }
        got
    });
    let readers: Vec<_> = (0..2)
        .map(|_| {
            let rx = rx.clone();
            std::thread::spawn(move || rx.iter().collect::<Vec<_>>())
        })
        .collect();
    drop(rx);
    for s in senders {
        rt.block_on(s);
    }
    for t in threads {
        t.join().unwrap();
    }
    let mut per_receiver = vec![rt.block_on(task)];
    per_receiver.extend(readers.into_iter().map(|r| r.join().unwrap()));
    let mut seen: HashMap<u64, Vec<u64>> = HashMap::new();
    for got in &per_receiver {
        // Within one receiver, each sender's values come in order.
        let mut last: HashMap<u64, u64> = HashMap::new();
        for &(s, i) in got {
            if let Some(&prev) = last.get(&s) {
                assert!(i > prev, "sender {s}: {i} after {prev}");
            }
            last.insert(s, i);
            seen.entry(s).or_default().push(i);
        }
    }
    for s in 0..4 {
        let mut v = seen.remove(&s).unwrap();
        v.sort_unstable();
        assert_eq!(v, (0..PER).collect::<Vec<_>>(), "sender {s}");
    }
}

#[test]
fn takes_part_in_alt_and_select() {
    let rt = rt();
    let (utx, urx) = unbounded::<u32>();
    let (ctx, crx) = channel::<u32>();
    utx.try_send(5).unwrap();
    // A ready unbounded receive wins over a rendezvous nobody offers.
    let got = rt.block_on(async {
        tutti::select! {
            recv(urx) -> v => v.unwrap(),
            recv(crx) -> v => v.unwrap() + 1000,
        }
    });
    assert_eq!(got, 5);
    // A send guard on an unbounded channel is always ready.
    let fired = tutti::select_blocking! {
        recv(crx) -> _v => "recv",
        send(utx, 9) -> r => { r.unwrap(); "send" },
    };
    assert_eq!(fired, "send");
    assert_eq!(urx.try_recv(), Ok(9));
    // An `Alt` waiting on an empty unbounded channel wakes for a later send.
    let waiter = rt.spawn(async move {
        let mut alt = Alt::new().recv(&crx).recv(&urx);
        let selected = alt.select().await;
        match selected.index() {
            1 => selected.recv(&urx).unwrap(),
            _ => selected.recv(&crx).unwrap() + 1000,
        }
    });
    std::thread::sleep(Duration::from_millis(20));
    utx.send_blocking(42).unwrap();
    assert_eq!(rt.block_on(waiter), 42);
    drop(ctx);
}

#[test]
fn a_cancelled_receive_loses_nothing() {
    let rt = rt();
    let (tx, rx) = unbounded::<u64>();
    for round in 0..200u64 {
        // Race a receive against a short timeout; whatever the outcome, no value is lost.
        let rx2 = rx.clone();
        let pending = rt.spawn(async move {
            tutti::timeout(Duration::from_micros(50), rx2.recv())
                .await
                .ok()
                .map(|r| r.unwrap())
        });
        if round % 2 == 0 {
            tx.try_send(round).unwrap();
        }
        let got = rt.block_on(pending);
        if round % 2 == 0 && got.is_none() {
            assert_eq!(rx.try_recv(), Ok(round), "the value stayed in the channel");
        } else {
            assert_eq!(got, (round % 2 == 0).then_some(round));
        }
    }
    assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
}

/// A receive on an unbounded channel that nobody will ever send on again is a wait the
/// detector sees and names.
#[test]
fn a_receive_that_can_never_complete_is_reported() {
    let err = run(async {
        let (to_a, from_b) = unbounded_named::<u32>("replies");
        let (to_b, from_a) = channel::<u32>();
        Par::new()
            .process("a", async move {
                to_b.send(1).await.unwrap();
                let _ = from_b.recv().await; // b never replies
            })
            .process("b", async move {
                assert_eq!(from_a.recv().await, Ok(1));
                let _keep = to_a; // holds the sending end, never sends
                let _ = from_a.recv().await;
            })
            .run()
            .await
            .unwrap();
    })
    .wait_blocking()
    .unwrap_err();
    let a = err
        .processes()
        .iter()
        .find(|p| p.name() == "run/a")
        .unwrap_or_else(|| panic!("no process run/a in\n{err}"));
    assert_eq!(
        a.waits(),
        "waits to receive from unbounded channel `replies`",
        "{err}"
    );
}
