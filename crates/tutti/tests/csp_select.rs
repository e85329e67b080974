//! Send guards in `Alt`, the `select!` macros, and fairness: what users rely on when a
//! selection offers values as well as takes them.
// This file uses tutti as a program would, with `std`'s atomics and locks: the
// loom-shim rule of `clippy.toml` is for the library's own code.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

mod watchdog;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tutti::csp::{buffered, channel, run, Alt, RecvError, SendError, Tx};
use tutti::Runtime;

fn rt() -> Runtime {
    Runtime::builder().workers(2).build().unwrap()
}

/// A send guard on a rendezvous channel fires only once a receiver took the value; the
/// receiver gets exactly the values the guard reports sent, in order.
#[test]
fn send_guard_hands_each_value_to_one_receiver() {
    let rt = rt();
    let (tx, rx) = channel::<u32>();
    let (_idle_tx, idle) = channel::<u32>();
    let receiver = rt.spawn(async move {
        let mut got = Vec::new();
        while let Ok(v) = rx.recv().await {
            got.push(v);
        }
        got
    });
    let sent = rt.block_on(rt.spawn(async move {
        let mut alt = Alt::new().recv(&idle).send(&tx, 0);
        for next in 1..=100 {
            let sel = alt.select().await;
            assert_eq!(sel.index(), 1, "nothing arrives on the idle channel");
            sel.sent(&tx).unwrap();
            assert_eq!(alt.offer(1, &tx, next), None, "the last value was sent");
        }
        // The 101st value is still offered: take it back, then close.
        let left = alt.offer(1, &tx, 0);
        drop(alt);
        drop(tx);
        left
    }));
    assert_eq!(sent, Some(100));
    assert_eq!(rt.block_on(receiver), (0..100).collect::<Vec<_>>());
}

/// Two `Alt`s, one offering on a channel and the other waiting on it, each also
/// waiting on a channel nobody uses, on threads and tasks in every combination: every
/// value moves once.
#[test]
fn an_alt_sends_to_an_alt() {
    let rt = rt();
    const N: u32 = 300;
    for (sender_task, receiver_task) in [(true, true), (true, false), (false, true), (false, false)]
    {
        let (tx, rx) = channel::<u32>();
        let sender = move || async move {
            let (_t, idle) = channel::<u32>();
            let mut alt = Alt::new().recv(&idle).send(&tx, 0);
            for next in 1..=N {
                alt.select().await.sent(&tx).unwrap();
                alt.offer(1, &tx, next);
            }
        };
        let receiver = move || async move {
            let (_t, idle) = channel::<u32>();
            let mut alt = Alt::new().recv(&idle).recv(&rx);
            let mut sum = 0;
            for _ in 0..N {
                sum += alt.select().await.recv(&rx).unwrap();
            }
            sum
        };
        let (s, s_thread) = if sender_task {
            (Some(rt.spawn(sender())), None)
        } else {
            (
                None,
                Some(std::thread::spawn(move || tutti::block_on(sender()))),
            )
        };
        let sum = if receiver_task {
            rt.block_on(rt.spawn(receiver()))
        } else {
            tutti::block_on(receiver())
        };
        assert_eq!(sum, (0..N).sum::<u32>());
        if let Some(s) = s {
            rt.block_on(s);
        }
        if let Some(t) = s_thread {
            t.join().unwrap();
        }
    }
}

/// An `Alt` with a send and a receive guard on the same channel never pairs with itself:
/// it waits for another party, which gets the value (or gives one).
#[test]
fn an_alt_does_not_rendezvous_with_itself() {
    let (tx, rx) = channel::<u32>();
    let t2 = tx.clone();
    let r2 = rx.clone();
    let other = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(20));
        r2.recv_blocking()
    });
    let mut alt = Alt::new().recv(&rx).send(&tx, 7);
    let sel = alt.select_blocking();
    assert_eq!(sel.index(), 1, "only the other thread's receive can pair");
    sel.sent(&tx).unwrap();
    assert_eq!(other.join().unwrap(), Ok(7));
    drop(t2);
}

/// A send guard on a channel that ended fires with its value back, naming the end.
#[test]
fn send_guard_reports_closed_and_poisoned() {
    let (tx, rx) = channel::<String>();
    drop(rx);
    let mut alt = Alt::new().send(&tx, "kept".to_string());
    assert_eq!(
        alt.select_blocking().sent(&tx),
        Err(SendError::Closed("kept".to_string()))
    );
    let (tx, rx) = buffered::<u8>(1);
    tx.try_send(0).unwrap();
    let mut alt = Alt::new().send(&tx, 1);
    let poisoner = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(10));
        rx.poison();
    });
    assert_eq!(alt.select_blocking().sent(&tx), Err(SendError::Poisoned(1)));
    poisoner.join().unwrap();
}

/// Dropping a selection that was decided for a send guard leaves the value sent; one
/// that was not leaves it offered. Nothing is sent twice.
#[test]
fn abandoned_send_selections_lose_nothing() {
    let rt = rt();
    let (tx, rx) = buffered::<u32>(1);
    let mut alt = Alt::new().send(&tx, 1);
    // Room in the buffer: the selection fires at once; dropping the `Selected` is fine.
    drop(tutti::block_on(alt.select()));
    assert_eq!(alt.offer(0, &tx, 2), None, "1 was sent");
    // Full now: a selection that waits and is dropped sends nothing.
    let aborted = rt.block_on(async {
        tutti::timeout(Duration::from_millis(10), alt.select())
            .await
            .is_err()
    });
    assert!(aborted);
    assert_eq!(rx.try_recv(), Ok(1));
    assert_eq!(rx.try_recv(), Err(tutti::csp::TryRecvError::Empty));
    assert_eq!(alt.offer(0, &tx, 3), Some(2), "2 stayed offered");
}

/// `select!` in a task: receive, send, timeout and default branches, pre-conditions, and
/// branches that use (or drop) the channels.
#[test]
fn select_macro_branches() {
    let rt = rt();
    rt.block_on(rt.spawn(async {
        let (tx, rx) = buffered::<u32>(1);
        let (out, out_rx) = buffered::<u32>(1);
        tx.send(5).await.unwrap();
        // Priority: the receive is first and ready.
        let got = tutti::select! {
            pri;
            recv(rx) -> v => v.unwrap() * 10,
            send(out, 1) -> r => { r.unwrap(); 0 }
        };
        assert_eq!(got, 50);
        // The receive is disabled by its pre-condition: the send fires.
        let got = tutti::select! {
            recv(rx) -> v if false => v.unwrap(),
            send(out, 2) -> r => { r.unwrap(); 2 }
        };
        assert_eq!(got, 2);
        assert_eq!(out_rx.recv().await, Ok(2));
        // Nothing ready: the timeout fires; the channels are free in the branch.
        let got = tutti::select! {
            recv(rx) -> _v => unreachable!(),
            timeout(Duration::from_millis(5)) => { drop(tx); "late" },
        };
        assert_eq!(got, "late");
        // `default` makes it a poll; the closed channel is ready with `Closed`.
        let got: Result<u32, RecvError> = tutti::select! {
            recv(rx) -> v => v,
            default => Ok(99),
        };
        assert_eq!(got, Err(RecvError::Closed));
    }));
}

/// The guard expressions are evaluated once each, in order.
#[test]
fn select_macro_evaluates_guards_once() {
    let evaluated = AtomicUsize::new(0);
    let (tx, rx) = buffered::<u32>(1);
    let value = || {
        evaluated.fetch_add(1, Ordering::SeqCst);
        7
    };
    let r = tutti::select_blocking! {
        send(tx, value()) -> r => r,
    };
    assert_eq!(r, Ok(()));
    assert_eq!(evaluated.load(Ordering::SeqCst), 1);
    assert_eq!(rx.try_recv(), Ok(7));
}

/// A continuously ready guard fires within `n` fair selections, however busy the others
/// are: two always-full channels alternate strictly.
#[test]
fn fair_selection_rotates_among_ready_guards() {
    let (ta, a) = buffered::<u32>(64);
    let (tb, b) = buffered::<u32>(64);
    for i in 0..64 {
        ta.try_send(i).unwrap();
        tb.try_send(i).unwrap();
    }
    let mut alt = Alt::new().recv(&a).recv(&b);
    let fired: Vec<usize> = (0..64)
        .map(|_| {
            let sel = alt.fair_select_blocking();
            let i = sel.index();
            sel.recv([&a, &b][i]).unwrap();
            i
        })
        .collect();
    assert!(fired.windows(2).all(|w| w[0] != w[1]), "{fired:?}");
}

/// Queued senders are served in rotation too: three senders waiting on rendezvous
/// channels (threads parked in `send_blocking`) are each served once in any three
/// selections after the first.
#[test]
fn fair_selection_serves_every_waiting_sender() {
    let chans: Vec<_> = (0..3).map(|_| channel::<usize>()).collect();
    let (txs, rxs): (Vec<Tx<usize>>, Vec<_>) = chans.into_iter().unzip();
    let senders: Vec<_> = txs
        .into_iter()
        .enumerate()
        .map(|(i, tx)| std::thread::spawn(move || while tx.send_blocking(i).is_ok() {}))
        .collect();
    // Let every sender queue.
    std::thread::sleep(Duration::from_millis(50));
    let mut alt = rxs.iter().fold(Alt::new(), |alt, rx| alt.recv(rx));
    let mut fired = Vec::new();
    for _ in 0..300 {
        let sel = alt.fair_select_blocking();
        let i = sel.index();
        assert_eq!(sel.recv(&rxs[i]), Ok(i));
        fired.push(i);
    }
    let mut counts = [0usize; 3];
    for &i in &fired {
        counts[i] += 1;
    }
    assert!(
        counts.iter().all(|&c| c > 0),
        "a sender was starved: {counts:?}"
    );
    drop(alt);
    drop(rxs);
    for s in senders {
        s.join().unwrap();
    }
}

/// A process blocked in an `Alt` on a send guard is part of a deadlock report, which
/// names the send.
#[test]
fn deadlock_reports_a_waiting_send_guard() {
    let err = run(async {
        let (tx, _rx) = channel::<u32>();
        let (_t2, idle) = channel::<u32>();
        let mut alt = Alt::new().recv(&idle).send(&tx, 1);
        let _ = alt.select().await;
        unreachable!("nobody receives");
    })
    .wait_blocking()
    .unwrap_err();
    assert!(err.to_string().contains("in an ALT over 2 guards"), "{err}");
}

/// The channels of a `select!` are not borrowed once a branch runs.
#[test]
fn select_branch_may_move_the_channels() {
    let (tx, rx) = buffered::<u32>(1);
    tx.try_send(1).unwrap();
    let moved = tutti::select_blocking! {
        recv(rx) -> v => { let keep = rx; (v, keep) }
    };
    assert_eq!(moved.0, Ok(1));
    drop(Arc::new(moved.1));
}

/// `select!` evaluated in a loop over three always-ready arms picks each about equally
/// (Go and crossbeam pick uniformly at random): each evaluation builds a fresh `Alt`,
/// so fairness cannot come from one `Alt`'s rotation. Both forms, and a `select!` with
/// two of four arms ready.
#[test]
fn select_macro_in_a_loop_picks_ready_arms_about_equally() {
    const N: usize = 6000;
    let (ta, a) = buffered::<u32>(1);
    let (tb, b) = buffered::<u32>(1);
    let (tc, c) = buffered::<u32>(1);
    let (_td, d) = buffered::<u32>(1);
    let refill = |i: usize| [&ta, &tb, &tc][i].try_send(0).unwrap();
    (0..3).for_each(refill);
    let mut counts = [0usize; 3];
    for _ in 0..N {
        let i = tutti::select_blocking! {
            recv(a) -> _v => 0,
            recv(b) -> _v => 1,
            recv(c) -> _v => 2,
        };
        counts[i] += 1;
        refill(i);
    }
    let fair = |counts: &[usize], n: usize| counts.iter().all(|&k| k * counts.len() * 10 > n * 8);
    assert!(fair(&counts, N), "select_blocking! picked {counts:?}");
    let counts = rt().block_on(async {
        let mut counts = [0usize; 3];
        for _ in 0..N {
            let i = tutti::select! {
                recv(a) -> _v => 0,
                recv(b) -> _v => 1,
                recv(c) -> _v => 2,
            };
            counts[i] += 1;
            refill(i);
        }
        counts
    });
    assert!(fair(&counts, N), "select! picked {counts:?}");
    // Arms 0 and 2 ready, 1 and 3 (d) not.
    while b.try_recv().is_ok() {}
    let mut counts = [0usize; 2];
    for _ in 0..N {
        let i = tutti::select_blocking! {
            recv(a) -> _v => 0,
            recv(d) -> _v => unreachable!("d is empty"),
            recv(c) -> _v => 2,
            recv(b) -> _v => unreachable!("b is empty"),
        };
        counts[i / 2] += 1;
        refill(i);
    }
    assert!(fair(&counts, N), "two of four ready: picked {counts:?}");
}

/// A `default` arm runs only when no other arm can proceed, wherever it is written
/// (Go): first, in the middle or last, with a ready receive, a ready send or an elapsed
/// deadline among the others.
#[test]
fn select_default_runs_only_when_nothing_else_can() {
    let (tx, rx) = buffered::<u32>(1);
    let (out, out_rx) = buffered::<u32>(1);
    tx.try_send(1).unwrap();
    let got = tutti::select_blocking! {
        default => "default",
        recv(rx) -> v => { assert_eq!(v, Ok(1)); "recv" },
    };
    assert_eq!(got, "recv");
    let got = tutti::select_blocking! {
        pri;
        default => "default",
        recv(rx) -> _v => "recv",
        send(out, 2) -> r => { r.unwrap(); "send" },
    };
    assert_eq!(got, "send");
    assert_eq!(out_rx.try_recv(), Ok(2));
    let got = tutti::select_blocking! {
        recv(rx) -> _v => "recv",
        default => "default",
        deadline(std::time::Instant::now()) => "deadline",
    };
    assert_eq!(got, "deadline");
    let got = rt().block_on(async {
        tx.send(3).await.unwrap();
        tutti::select! {
            default => "default",
            recv(rx) -> _v => "recv",
        }
    });
    assert_eq!(got, "recv");
    // Nothing ready: the default, wherever it is.
    let got = tutti::select_blocking! {
        default => "default",
        recv(rx) -> _v => "recv",
    };
    assert_eq!(got, "default");
}

/// A send guard's selection abandoned by an outer cancellation has not sent (issue of
/// the two-phase hand-over): a receiver that comes while the selection waits only wakes
/// it — on a rendezvous channel it waits, on a buffered one the room it made stays free
/// — so when the selection's future is dropped instead of polled, the value is still
/// the caller's (`Alt::withdraw` returns it) and a retry delivers it exactly once.
#[test]
fn an_abandoned_send_selection_has_not_sent() {
    use std::future::Future;
    use std::pin::pin;
    use std::task::{Context, Poll, Waker};
    let mut cx = Context::from_waker(Waker::noop());
    for capacity in [0, 1] {
        let (tx, rx) = if capacity == 0 {
            channel::<u32>()
        } else {
            buffered::<u32>(1)
        };
        if capacity == 1 {
            tx.try_send(0).unwrap(); // full
        }
        let (_idle_tx, idle) = channel::<u32>();
        let mut alt = Alt::new().recv(&idle).send(&tx, 7);
        let mut recv = pin!(rx.recv());
        {
            let sel = pin!(alt.select());
            assert!(sel.poll(&mut cx).is_pending(), "nothing ready yet");
            // While the selection waits (not polled again), a receiver comes.
            let got = recv.as_mut().poll(&mut cx);
            if capacity == 1 {
                assert_eq!(got, Poll::Ready(Ok(0)));
            } else {
                assert!(
                    got.is_pending(),
                    "the receiver only woke the selection: the value is not sent yet"
                );
            }
        } // dropped, as a timeout would
        assert_eq!(
            alt.withdraw(1, &tx),
            Some(7),
            "capacity {capacity}: 7 was not sent"
        );
        assert!(
            rx.try_recv().is_err(),
            "capacity {capacity}: nothing arrived"
        );
        // The retry delivers once: to the waiting receiver, or into the freed room.
        tx.try_send(7)
            .unwrap_or_else(|_| panic!("capacity {capacity}: a receiver or room"));
        if capacity == 0 {
            assert_eq!(recv.as_mut().poll(&mut cx), Poll::Ready(Ok(7)));
        } else {
            assert_eq!(rx.try_recv(), Ok(7));
        }
        assert!(
            rx.try_recv().is_err(),
            "capacity {capacity}: 7 arrived once"
        );
    }
}

/// The same through `select!` under an outer timeout: the arm either completed (its
/// branch ran and the receiver has the value) or did not send — never a value in the
/// receiver's hands from a `select!` whose branch did not run.
#[test]
fn a_select_send_arm_under_a_timeout_completes_or_has_not_sent() {
    const ROUNDS: u32 = 400;
    let rt = rt();
    let (sent, got) = rt.block_on(async {
        let (tx, rx) = channel::<u32>();
        let receiver = tutti::spawn(async move {
            let mut got = Vec::new();
            while let Ok(v) = rx.recv().await {
                got.push(v);
                // Slow now and then, so that the selections time out while offering.
                if v % 3 == 0 {
                    tutti::sleep(Duration::from_micros(200)).await;
                }
            }
            got
        });
        let mut sent = Vec::new();
        let mut v = 0;
        while v < ROUNDS {
            let arm = tutti::timeout(Duration::from_micros(50), async {
                tutti::select! {
                    send(tx, v) -> r => r.is_ok(),
                }
            })
            .await;
            match arm {
                Ok(true) => {
                    sent.push(v);
                    v += 1;
                }
                Ok(false) => unreachable!("the receiver lives"),
                Err(_) => {} // not sent: retry the same value
            }
        }
        drop(tx);
        (sent, receiver.await)
    });
    assert_eq!(got, sent, "each value once, only those whose arm completed");
    assert_eq!(got, (0..ROUNDS).collect::<Vec<_>>());
}

/// A poked selection that is polled again sends in that poll: the waiting receiver gets
/// the value and the selection completes, on a rendezvous and on a buffered channel.
#[test]
fn a_woken_send_selection_sends_when_polled_again() {
    use std::future::Future;
    use std::pin::pin;
    use std::task::{Context, Poll, Waker};
    let mut cx = Context::from_waker(Waker::noop());
    let (tx, rx) = channel::<u32>();
    let (_idle_tx, idle) = channel::<u32>();
    let mut alt = Alt::new().recv(&idle).send(&tx, 7);
    let mut sel = pin!(alt.select());
    assert!(sel.as_mut().poll(&mut cx).is_pending());
    let mut recv = pin!(rx.recv());
    assert!(recv.as_mut().poll(&mut cx).is_pending());
    match sel.as_mut().poll(&mut cx) {
        Poll::Ready(s) => {
            assert_eq!(s.index(), 1);
            assert_eq!(s.sent(&tx), Ok(()));
        }
        Poll::Pending => panic!("the receiver waits: the selection sends"),
    }
    assert_eq!(recv.as_mut().poll(&mut cx), Poll::Ready(Ok(7)));
}
