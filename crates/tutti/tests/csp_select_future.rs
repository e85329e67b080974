//! Future guards in `Alt` and `future(…)` arms in `select!`: one selection over channel
//! operations, timers and any future (a `JoinHandle`, a `DataflowVar` read, an actor's
//! `ask`), with a losing future left uncompleted.
// This file uses tutti as a program would, with `std`'s atomics and locks: the
// loom-shim rule of `clippy.toml` is for the library's own code.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

mod watchdog;
use std::future::Future;
use std::pin::{pin, Pin};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use tutti::actor::{self, Actor};
use tutti::csp::{buffered, channel, Alt};
use tutti::msg::{Handler, Message};
use tutti::{DataflowVar, Runtime};

fn rt() -> Runtime {
    Runtime::builder().workers(2).build().unwrap()
}

/// A future that completes on its `n`th poll and counts its completions: a losing arm
/// must not have completed (consumed its event).
struct ReadyAfter {
    polls: usize,
    completed: Arc<AtomicUsize>,
}

impl Future for ReadyAfter {
    type Output = &'static str;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<&'static str> {
        if self.polls == 0 {
            self.completed.fetch_add(1, Ordering::SeqCst);
            return Poll::Ready("done");
        }
        self.polls -= 1;
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

#[test]
fn a_join_handle_arm_fires_when_the_task_ends() {
    let rt = rt();
    let got = rt.block_on(async {
        let (_tx, idle) = channel::<u32>();
        let var = Arc::new(DataflowVar::<u32>::new());
        let v = Arc::clone(&var);
        let job = tutti::spawn(async move { *v.read().await + 1 });
        tutti::spawn(async move {
            tutti::sleep(Duration::from_millis(5)).await;
            var.set(41).unwrap();
        })
        .detach();
        tutti::select! {
            recv(idle) -> _m => unreachable!("nobody sends"),
            future(job) -> n => n,
            timeout(Duration::from_secs(30)) => unreachable!("the task ends first"),
        }
    });
    assert_eq!(got, 42);
}

#[test]
fn a_dataflow_read_arm_wakes_a_waiting_select_and_works_blocking() {
    let rt = rt();
    let _g = rt.enter();
    let var = Arc::new(DataflowVar::<String>::new());
    let (_tx, idle) = channel::<u32>();
    let setter = {
        let var = Arc::clone(&var);
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(5));
            var.set("bound".to_string()).unwrap();
        })
    };
    // The blocking form on a plain thread: the read wakes the selection.
    let got = tutti::select_blocking! {
        recv(idle) -> _m => unreachable!("nobody sends"),
        future(var.read()) -> s => s.clone(),
    };
    assert_eq!(got, "bound");
    setter.join().unwrap();
}

#[test]
fn a_losing_future_arm_has_not_completed_and_can_be_kept() {
    let rt = rt();
    rt.block_on(async {
        let completed = Arc::new(AtomicUsize::new(0));
        let mut fut = ReadyAfter {
            polls: 3,
            completed: Arc::clone(&completed),
        };
        let (tx, rx) = buffered::<u32>(4);
        for i in 0..3 {
            tx.try_send(i).unwrap();
        }
        // The channel is ready each time and comes first: the future loses thrice (a
        // `pri` look stops at the ready receive, so the future is not even polled).
        for i in 0..3 {
            let n = tutti::select! { pri;
                recv(rx) -> n => n.unwrap(),
                future(&mut fut) -> _s => unreachable!("the receive is first and ready"),
            };
            assert_eq!(n, i);
        }
        assert_eq!(
            completed.load(Ordering::SeqCst),
            0,
            "a losing arm did not complete"
        );
        // Kept: the same future wins once nothing else is ready.
        let s = tutti::select! {
            recv(rx) -> _n => unreachable!("empty"),
            future(&mut fut) -> s => s,
        };
        assert_eq!(s, "done");
        assert_eq!(completed.load(Ordering::SeqCst), 1);
    });
}

/// A channel value and a task's end racing: exactly one arm fires each time, and a value
/// not taken by a selection stays in the channel — nothing is lost or taken twice.
#[test]
fn a_future_arm_racing_a_channel_loses_nothing() {
    const ROUNDS: u32 = 300;
    let rt = rt();
    let (received, joined) = rt.block_on(async {
        let (tx, rx) = buffered::<u32>(ROUNDS as usize);
        let (mut received, mut joined) = (Vec::new(), 0u32);
        for i in 0..ROUNDS {
            let tx = tx.clone();
            let job = tutti::spawn(async move {
                tx.send(i).await.unwrap();
                i
            });
            tutti::select! {
                recv(rx) -> n => received.push(n.unwrap()),
                future(job) -> j => { assert_eq!(j, i); joined += 1 },
            }
        }
        drop(tx);
        while let Ok(n) = rx.recv().await {
            received.push(n);
        }
        (received, joined)
    });
    let mut sorted = received.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, (0..ROUNDS).collect::<Vec<_>>(), "each value once");
    assert!(joined <= ROUNDS);
}

/// A reused `Alt` with a future guard: fair and PRI selections, and an output that was
/// not taken is kept for the next selection.
#[test]
fn a_reused_alt_keeps_an_untaken_output_and_skips_a_spent_guard() {
    let rt = rt();
    rt.block_on(async {
        let (tx, rx) = buffered::<u32>(8);
        let mut alt = Alt::new().recv(&rx);
        let ready = alt.future(std::future::ready(7u32));
        // Both ready; PRI picks the future only when the receive is not ready.
        let sel = alt.pri_select().await;
        assert_eq!(sel.index(), ready.index());
        drop(sel); // the output is not taken: kept
        tx.try_send(1).unwrap();
        let sel = alt.fair_select().await;
        assert_eq!(
            sel.index(),
            0,
            "rotation starts after the guard that fired last"
        );
        assert_eq!(sel.recv(&rx), Ok(1));
        let sel = alt.fair_select().await;
        assert_eq!(sel.output(&ready), 7, "the output was kept");
        // Spent: only the channel can fire now.
        tx.try_send(2).unwrap();
        for _ in 0..3 {
            let sel = alt.fair_select().await;
            assert_eq!(sel.index(), 0);
            let _ = sel.recv(&rx);
            tx.try_send(3).unwrap();
        }
    });
}

#[test]
#[should_panic(expected = "did not fire")]
fn taking_the_output_of_a_guard_that_did_not_fire_is_a_clear_error() {
    let mut alt = Alt::new().skip();
    let never = alt.future(std::future::pending::<()>());
    let sel = alt.pri_select_blocking();
    sel.output(&never);
}

#[test]
#[should_panic(expected = "not one of this Alt's")]
fn a_future_handle_of_another_alt_is_refused() {
    let mut other = Alt::new();
    let foreign = other.future(std::future::ready(1u8));
    let mut alt = Alt::new();
    let _mine = alt.future(std::future::ready(2u8));
    let sel = alt.pri_select_blocking();
    sel.output(&foreign);
}

// ----- an actor's ask as an arm -----

struct Slow;
impl Actor for Slow {}
struct Double(u32);
impl Message for Double {
    type Reply = u32;
}
impl Handler<Double> for Slow {
    async fn handle(&mut self, m: Double, _: &mut actor::Context<Self>) -> u32 {
        tutti::sleep(Duration::from_millis(2)).await;
        m.0 * 2
    }
}

#[test]
fn an_ask_arm_beside_a_channel_and_a_timeout() {
    let rt = rt();
    rt.block_on(async {
        let slow = actor::spawn(Slow);
        let (_tx, idle) = channel::<u32>();
        let answer = tutti::select! {
            recv(idle) -> _m => unreachable!("nobody sends"),
            future(slow.ask(Double(21))) -> r => r.unwrap(),
            timeout(Duration::from_secs(30)) => unreachable!("the actor answers first"),
        };
        assert_eq!(answer, 42);
        // A timeout that wins drops the losing ask: the selection returns at once.
        let timed_out = AtomicBool::new(false);
        tutti::select! {
            future(tutti::sleep(Duration::from_secs(30))) -> () => {}
            timeout(Duration::from_millis(1)) => timed_out.store(true, Ordering::SeqCst),
        }
        assert!(timed_out.load(Ordering::SeqCst));
    });
}

/// A select whose future arm never completes is polled with the `Alt`'s waker: a task
/// blocked on it leaves its worker (the other task runs on the same single worker).
#[test]
fn a_waiting_future_arm_gives_its_worker_back() {
    let rt = Runtime::builder().workers(1).build().unwrap();
    rt.block_on(async {
        let (tx, rx) = channel::<u32>();
        let waiter = tutti::spawn(async move {
            let mut pending = pin!(std::future::pending::<()>());
            tutti::select! {
                recv(rx) -> n => n.unwrap(),
                future(pending.as_mut()) -> () => unreachable!(),
            }
        });
        tx.send(5).await.unwrap();
        assert_eq!(waiter.await, 5);
    });
}
