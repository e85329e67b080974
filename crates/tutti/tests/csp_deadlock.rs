//! Deadlock detection: networks that can no longer progress are reported (positive
//! cases), networks that can are left alone (negative cases).

mod watchdog;
use std::future::{poll_fn, Future};
use std::pin::pin;
use std::task::Context;
use std::time::Duration;

use tutti::csp::{
    buffered, channel, channel_named, par_for_each, run, Alt, Barrier, Deadlock, Par,
};

/// Runs the network `network` builds (inside the network's root process, so
/// its channels are the network's) and returns the deadlock it must end in.
fn deadlock_of(network: impl FnOnce() -> Par + Send + 'static) -> Deadlock {
    run(async move { network().run().await.unwrap() })
        .wait_blocking()
        .unwrap_err()
}

fn waits_of<'a>(d: &'a Deadlock, name: &str) -> &'a str {
    d.processes()
        .iter()
        .find(|p| p.name() == name)
        .unwrap_or_else(|| panic!("no process `{name}` in\n{d}"))
        .waits()
}

/// Two processes that talked before each wait to send to the other: both are named,
/// with the channel and direction, and the cycle is found.
#[test]
fn crossed_sends_are_reported_with_the_cycle() {
    let err = deadlock_of(|| {
        let (to_b, from_a) = channel_named::<u32>("a->b");
        let (to_a, from_b) = channel_named::<u32>("b->a");
        Par::new()
            .process("a", async move {
                let _ = from_b.try_recv(); // a uses its receiving end
                to_b.send(1).await.unwrap();
                to_b.send(2).await.unwrap(); // b sends too: stuck
                let _ = from_b.recv().await;
            })
            .process("b", async move {
                assert_eq!(from_a.recv().await, Ok(1));
                to_a.send(3).await.unwrap(); // a sends too: stuck
                let _ = from_a.recv().await;
            })
    });
    assert_eq!(err.processes().len(), 3, "{err}");
    assert_eq!(waits_of(&err, "run/a"), "waits to send on channel `a->b`");
    assert_eq!(waits_of(&err, "run/b"), "waits to send on channel `b->a`");
    assert!(waits_of(&err, "run").contains("PAR"), "{err}");
    let cycle = err.cycle();
    assert_eq!(cycle.len(), 3, "{err}");
    assert_eq!(cycle[0], cycle[2]);
    assert!(cycle.contains(&"run/a".to_string()) && cycle.contains(&"run/b".to_string()));
    assert!(err.to_string().contains("cycle: "), "{err}");
}

/// The mutually-assured-destruction shape: each process serves an ALT over its kill
/// channel and then, at the same moment, tries to kill the other.
#[test]
fn mutual_kill_through_alt_is_reported() {
    let err = deadlock_of(|| {
        let (kill_a, a_killed) = channel_named::<()>("kill a");
        let (kill_b, b_killed) = channel_named::<()>("kill b");
        let (go_a, ready_a) = buffered::<()>(1);
        let (go_b, ready_b) = buffered::<()>(1);
        Par::new()
            .process("a", async move {
                // ALT: killed, or our task completes (the `go` signal).
                let mut alt = Alt::new().recv(&a_killed).recv(&ready_a);
                if alt.pri_select().await.index() == 1 {
                    drop(alt);
                    kill_b.send(()).await.unwrap();
                }
            })
            .process("b", async move {
                let mut alt = Alt::new().recv(&b_killed).recv(&ready_b);
                if alt.pri_select().await.index() == 1 {
                    drop(alt);
                    kill_a.send(()).await.unwrap();
                }
            })
            .process("controller", async move {
                go_a.send(()).await.unwrap();
                go_b.send(()).await.unwrap();
            })
    });
    assert_eq!(waits_of(&err, "run/a"), "waits to send on channel `kill b`");
    assert_eq!(waits_of(&err, "run/b"), "waits to send on channel `kill a`");
    let mut cycle = err.cycle().to_vec();
    cycle.pop();
    cycle.sort();
    assert_eq!(cycle, ["run/a", "run/b"], "{err}");
}

/// A barrier that one enrolled process never reaches (it waits on a channel nobody
/// sends on): the report names the barrier and the channel.
#[test]
fn barrier_never_completed_is_reported() {
    let err = run(async {
        let b = Barrier::named("phase");
        let (_tx, rx) = channel_named::<u8>("never");
        let mut p = b.enroll();
        let q = b.enroll();
        Par::new()
            .process("syncer", async move { p.sync().await })
            .process("stuck", async move {
                let _q = q;
                let _ = rx.recv().await;
            })
            .run()
            .await
            .unwrap();
    })
    .wait_blocking()
    .unwrap_err();
    assert_eq!(waits_of(&err, "run/syncer"), "waits at barrier `phase`");
    assert_eq!(
        waits_of(&err, "run/stuck"),
        "waits to receive from channel `never`"
    );
    assert!(err.cycle().is_empty(), "{err}");
}

/// A deadlock inside nested `par`s names the processes with their full path, and the
/// values of cancelled sends are dropped, not delivered twice or leaked.
#[test]
fn nested_pars_and_replicated_names() {
    let err = run(async {
        let (tx, rx) = channel::<String>();
        par_for_each(0..3, move |i| {
            let tx = tx.clone();
            async move { tx.send(format!("from {i}")).await.unwrap() }
        })
        .await
        .unwrap();
        drop(rx); // never reached: nobody receives
    })
    .wait_blocking()
    .unwrap_err();
    assert_eq!(err.processes().len(), 4, "{err}");
    for i in 0..3 {
        assert!(
            waits_of(&err, &format!("run/i = {i}")).starts_with("waits to send on channel #1"),
            "{err}"
        );
    }
}

/// Negative: a thread outside the network receives, late. Not a deadlock.
#[test]
fn a_slow_outside_receiver_is_not_a_deadlock() {
    let (tx, rx) = channel::<u32>();
    let receiver = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(150));
        (0..4).map(|_| rx.recv_blocking().unwrap()).sum::<u32>()
    });
    par_for_each(0..4, |i| {
        let tx = tx.clone();
        async move { tx.send(i as u32).await.unwrap() }
    })
    .wait_blocking()
    .unwrap();
    assert_eq!(receiver.join().unwrap(), 6);
}

/// Negative: channels created inside the network but used from a thread outside it
/// (which uses them first, then waits before completing the exchange). The process
/// waits for the thread's first use through a dataflow variable (not a CSP wait): an
/// end handed to a thread that has not used it yet is the detector's documented blind
/// spot.
#[test]
fn an_inside_channel_used_outside_is_not_internal() {
    run(async {
        let (tx, rx) = channel::<u32>();
        let (back_tx, back_rx) = channel::<u32>();
        let ready = std::sync::Arc::new(tutti::DataflowVar::new());
        let thread_ready = ready.clone();
        let thread = std::thread::spawn(move || {
            let _ = back_tx.try_send(0);
            let _ = rx.try_recv();
            thread_ready.set(()).unwrap();
            assert_eq!(rx.recv_blocking(), Ok(1));
            std::thread::sleep(Duration::from_millis(100));
            back_tx.send_blocking(2).unwrap();
        });
        ready.read().await;
        tx.send(1).await.unwrap();
        assert_eq!(back_rx.recv().await, Ok(2));
        drop(thread); // it ends right after its send
    })
    .wait_blocking()
    .unwrap();
}

/// Negative: an ALT with a timeout guard is waiting on a timer, not deadlocked.
#[test]
fn alt_with_timeout_is_not_a_deadlock() {
    run(async {
        let (_tx, rx) = channel::<u8>();
        let mut alt = Alt::new().recv(&rx).timeout(Duration::from_millis(100));
        assert_eq!(alt.pri_select().await.index(), 1);
    })
    .wait_blocking()
    .unwrap();
}

/// Negative: a process waiting for a task outside the network (not a CSP wait).
#[test]
fn waiting_for_a_plain_task_is_not_a_deadlock() {
    run(async {
        let (tx, rx) = channel::<u8>();
        let helper = tutti::spawn(async {
            tutti::sleep(Duration::from_millis(50)).await;
            7
        });
        Par::new()
            .process("waits for task", async move {
                let v = helper.await;
                tx.send(v).await.unwrap();
            })
            .process(
                "receiver",
                async move { assert_eq!(rx.recv().await, Ok(7)) },
            )
            .run()
            .await
            .unwrap();
    })
    .wait_blocking()
    .unwrap();
}

/// Negative: a long pipeline with much blocking makes progress and is never reported.
#[test]
fn busy_pipeline_is_never_reported() {
    for _ in 0..20 {
        run(async {
            let (tx, mut rx) = channel::<u64>();
            let mut stages = Par::new().process("source", async move {
                for i in 0..200 {
                    tx.send(i).await.unwrap();
                }
            });
            for s in 0..8 {
                let (next_tx, next_rx) = channel::<u64>();
                let input = std::mem::replace(&mut rx, next_rx);
                stages = stages.process(format!("stage {s}"), async move {
                    while let Ok(v) = input.recv().await {
                        next_tx.send(v + 1).await.unwrap();
                    }
                });
            }
            stages = stages.process("sink", async move {
                let mut sum = 0;
                while let Ok(v) = rx.recv().await {
                    sum += v;
                }
                assert_eq!(sum, (0..200).sum::<u64>() + 200 * 8);
            });
            stages.run().await.unwrap();
        })
        .wait_blocking()
        .unwrap();
    }
}

/// Runs a network of one process whose first poll runs `withdraw` — which waits on an
/// object (the first wait the poll notes), withdraws that wait and drops the object,
/// freeing it — and then waits to receive on channel `b`, whose only sender it holds.
/// Returns what the deadlock report says the process waits on. (The detector looks at
/// the first wait a poll notes; a withdrawn one must not be it, least of all once its
/// object is gone.)
fn waits_after_withdrawing(withdraw: fn(&mut Context<'_>)) -> String {
    let err = run(async move {
        let (keep_b, rx_b) = channel_named::<u32>("b");
        let mut on_b = pin!(rx_b.recv());
        let mut first = true;
        let got = poll_fn(|cx| {
            if std::mem::take(&mut first) {
                withdraw(cx);
            }
            on_b.as_mut().poll(cx)
        })
        .await;
        drop(keep_b);
        panic!("received {got:?} on a channel nobody sends on");
    })
    .wait_blocking()
    .unwrap_err();
    assert_eq!(err.processes().len(), 1, "{err}");
    waits_of(&err, "run").to_string()
}

const WAITS_ON_B: &str = "waits to receive from channel `b`";

#[test]
fn a_receive_withdrawn_and_freed_in_the_same_poll_is_not_reported() {
    let waits = waits_after_withdrawing(|cx| {
        let (_tx, rx) = channel_named::<u32>("a");
        let mut on_a = pin!(rx.recv());
        assert!(on_a.as_mut().poll(cx).is_pending());
        // Dropped here, last declared first: the receive (withdrawn), then both ends.
    });
    assert_eq!(waits, WAITS_ON_B);
}

#[test]
fn a_send_cancelled_and_freed_in_the_same_poll_is_not_reported() {
    let waits = waits_after_withdrawing(|cx| {
        let (tx, _rx) = channel_named::<u32>("a");
        let mut on_a = pin!(tx.send(1));
        assert!(on_a.as_mut().poll(cx).is_pending());
        assert_eq!(on_a.cancel(), Some(1));
    });
    assert_eq!(waits, WAITS_ON_B);
}

#[test]
fn an_alt_abandoned_and_freed_in_the_same_poll_is_not_reported() {
    let waits = waits_after_withdrawing(|cx| {
        let (_tx, rx) = channel_named::<u32>("a");
        let (_tx2, rx2) = channel_named::<u32>("a2");
        let mut alt = Alt::new().recv(&rx).recv(&rx2);
        let mut select = pin!(alt.select());
        assert!(select.as_mut().poll(cx).is_pending());
    });
    assert_eq!(waits, WAITS_ON_B);
}

/// As above, but the withdrawn wait's channel `x` is freed later, by another process
/// (`q` holds the last ends and drops them once `p` is blocked on `b`).
#[test]
fn a_first_wait_withdrawn_then_freed_by_another_process_is_not_reported() {
    let err = deadlock_of(|| {
        let (tx_x, rx_x) = channel_named::<u32>("x");
        let rx_x_q = rx_x.clone();
        let (go_tx, go_rx) = buffered::<()>(1);
        let (keep_b, rx_b) = channel_named::<u32>("b");
        let (keep_c, rx_c) = channel_named::<u32>("c");
        Par::new()
            .process("p", async move {
                let mut on_b = pin!(rx_b.recv());
                let mut x = Some(rx_x);
                let got = poll_fn(|cx| {
                    if let Some(rx_x) = x.take() {
                        {
                            let mut on_x = pin!(rx_x.recv());
                            assert!(on_x.as_mut().poll(cx).is_pending());
                        }
                        drop(rx_x);
                        go_tx.try_send(()).unwrap();
                    }
                    on_b.as_mut().poll(cx)
                })
                .await;
                drop(keep_b);
                panic!("p received {got:?} on a channel nobody sends on");
            })
            .process("q", async move {
                go_rx.recv().await.unwrap();
                drop((tx_x, rx_x_q)); // `x` goes away while `p` waits on `b`
                let got = rx_c.recv().await;
                drop(keep_c);
                panic!("q received {got:?} on a channel nobody sends on");
            })
    });
    assert_eq!(err.processes().len(), 3, "{err}");
    assert_eq!(waits_of(&err, "run/p"), "waits to receive from channel `b`");
    assert_eq!(waits_of(&err, "run/q"), "waits to receive from channel `c`");
}
