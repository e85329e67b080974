//! Unit tests of channels and `Alt`, driving futures by hand so that every interleaving
//! they check is deterministic.

use crate::loom::{AtomicUsize, Ordering};
use std::future::Future;
use std::pin::{pin, Pin};
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use super::*;

use crate::test_util::{counting_waker as counter, WakeCount as Count};

fn woken(c: &Count) -> usize {
    c.0.load(Ordering::SeqCst)
}

fn poll<F: Future>(f: Pin<&mut F>, w: &Waker) -> Poll<F::Output> {
    f.poll(&mut Context::from_waker(w))
}

fn waiting<T>(tx: &Tx<T>) -> (usize, usize) {
    tx.chan().lock().waiting()
}

/// Counts live values, to check that dropped values are dropped exactly once.
struct Tracked(Arc<AtomicUsize>);

impl Tracked {
    fn new(live: &Arc<AtomicUsize>) -> Self {
        live.fetch_add(1, Ordering::SeqCst);
        Tracked(live.clone())
    }
}

impl Drop for Tracked {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

fn assert_send_sync<T: Send + Sync>() {}
fn assert_send<T: Send>() {}

#[test]
fn auto_traits() {
    assert_send_sync::<Tx<String>>();
    assert_send_sync::<Rx<String>>();
    assert_send::<SendFuture<'static, String>>();
    assert_send::<RecvFuture<'static, String>>();
    assert_send::<Alt<'static>>();
    assert_send::<SelectFuture<'static, 'static>>();
    assert_send_sync::<SendError<String>>();
    assert_send_sync::<RecvTimeoutError>();
}

#[test]
fn rendezvous_writer_resumes_only_after_the_reader_has_the_value() {
    let (tx, rx) = channel::<u32>();
    let (c, w) = counter();
    let mut send = pin!(tx.send(1));
    assert!(poll(send.as_mut(), &w).is_pending());
    assert!(poll(send.as_mut(), &w).is_pending(), "no reader yet");
    assert_eq!(rx.len(), 0, "a rendezvous buffers nothing");
    assert_eq!(waiting(&tx), (1, 0));
    assert_eq!(woken(&c), 0);
    assert_eq!(rx.try_recv(), Ok(1));
    assert_eq!(woken(&c), 1, "taking the value wakes the writer");
    assert_eq!(poll(send.as_mut(), &w), Poll::Ready(Ok(())));
    assert_eq!(waiting(&tx), (0, 0));
}

#[test]
fn rendezvous_reader_first_gets_the_value_handed_over() {
    let (tx, rx) = channel::<u32>();
    let (c, w) = counter();
    let mut recv = pin!(rx.recv());
    assert!(poll(recv.as_mut(), &w).is_pending());
    assert_eq!(waiting(&tx), (0, 1));
    // The writer completes at once: the waiting reader now has the value.
    assert_eq!(tx.try_send(9), Ok(()));
    assert_eq!(woken(&c), 1);
    assert_eq!(poll(recv.as_mut(), &w), Poll::Ready(Ok(9)));
    // Nobody waits: a rendezvous try_send fails and keeps the value.
    assert_eq!(tx.try_send(10), Err(TrySendError::Full(10)));
}

#[test]
fn waiting_receivers_are_served_fifo() {
    let (tx, rx) = channel::<u32>();
    let rx2 = rx.clone();
    let (_c, w) = counter();
    let mut a = pin!(rx.recv());
    let mut b = pin!(rx2.recv());
    let mut c = pin!(rx.recv());
    for f in [a.as_mut(), b.as_mut(), c.as_mut()] {
        assert!(poll(f, &w).is_pending());
    }
    for v in 0..3 {
        tx.try_send(v).unwrap();
    }
    assert_eq!(poll(a, &w), Poll::Ready(Ok(0)));
    assert_eq!(poll(b, &w), Poll::Ready(Ok(1)));
    assert_eq!(poll(c, &w), Poll::Ready(Ok(2)));
}

#[test]
fn waiting_senders_are_served_fifo_and_refill_a_buffer() {
    let (tx, rx) = buffered::<u32>(1);
    let tx2 = tx.clone();
    let (c, w) = counter();
    tx.try_send(0).unwrap();
    let mut a = pin!(tx.send(1));
    let mut b = pin!(tx2.send(2));
    assert!(poll(a.as_mut(), &w).is_pending());
    assert!(poll(b.as_mut(), &w).is_pending());
    assert_eq!(rx.try_recv(), Ok(0));
    // Taking from the full buffer moved the oldest waiting sender's value in.
    assert_eq!(woken(&c), 1);
    assert_eq!(poll(a.as_mut(), &w), Poll::Ready(Ok(())));
    assert!(poll(b.as_mut(), &w).is_pending());
    assert_eq!(rx.len(), 1);
    assert_eq!(rx.try_recv(), Ok(1));
    assert_eq!(poll(b, &w), Poll::Ready(Ok(())));
    assert_eq!(rx.try_recv(), Ok(2));
    assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
}

#[test]
fn a_dropped_send_keeps_its_value_out_of_the_channel() {
    let live = Arc::new(AtomicUsize::new(0));
    let (tx, rx) = channel::<Tracked>();
    let (_c, w) = counter();
    {
        let mut send = pin!(tx.send(Tracked::new(&live)));
        assert!(poll(send.as_mut(), &w).is_pending());
        assert_eq!(waiting(&tx), (1, 0));
    }
    assert_eq!(waiting(&tx), (0, 0), "the waiter was removed");
    assert_eq!(
        live.load(Ordering::SeqCst),
        0,
        "the value was dropped with the future"
    );
    assert_eq!(rx.try_recv().err(), Some(TryRecvError::Empty));
}

#[test]
fn cancel_returns_the_unsent_value_or_none_once_taken() {
    let (tx, rx) = channel::<String>();
    let (_c, w) = counter();
    let mut send = pin!(tx.send("a".into()));
    assert_eq!(send.as_mut().cancel().as_deref(), Some("a"), "never polled");
    let mut send = pin!(tx.send("b".into()));
    assert!(poll(send.as_mut(), &w).is_pending());
    assert_eq!(send.as_mut().cancel().as_deref(), Some("b"), "waiting");
    let mut send = pin!(tx.send("c".into()));
    assert!(poll(send.as_mut(), &w).is_pending());
    assert_eq!(rx.try_recv().as_deref(), Ok("c"));
    assert_eq!(send.as_mut().cancel(), None, "taken: the send happened");
}

#[test]
fn a_receive_dropped_after_a_commit_gives_the_value_back() {
    let (tx, rx) = channel::<u32>();
    let (_c, w) = counter();
    {
        let mut recv = pin!(rx.recv());
        assert!(poll(recv.as_mut(), &w).is_pending());
        tx.try_send(5).unwrap(); // committed into the future's slot
    }
    assert_eq!(rx.len(), 1, "given back to the channel");
    assert_eq!(rx.try_recv(), Ok(5));
    // Given back straight to the next waiting receiver, if any.
    let mut second = Box::pin(rx.recv());
    {
        let mut first = pin!(rx.recv());
        assert!(poll(first.as_mut(), &w).is_pending());
        assert!(poll(second.as_mut(), &w).is_pending());
        tx.try_send(6).unwrap();
    } // `first` is dropped holding 6
    assert_eq!(poll(second.as_mut(), &w), Poll::Ready(Ok(6)));
    // `cancel` returns it instead.
    let mut recv = pin!(rx.recv());
    assert!(poll(recv.as_mut(), &w).is_pending());
    tx.try_send(7).unwrap();
    assert_eq!(recv.as_mut().cancel(), Some(7));
    assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
}

#[test]
fn given_back_values_are_received_before_waiting_senders() {
    let (tx, rx) = buffered::<u32>(1);
    let (_c, w) = counter();
    {
        let mut recv = pin!(rx.recv());
        assert!(poll(recv.as_mut(), &w).is_pending());
        tx.try_send(1).unwrap();
    }
    tx.try_send(2).unwrap_err(); // the given-back value fills the buffer
    let mut send = pin!(tx.send(2));
    assert!(poll(send.as_mut(), &w).is_pending());
    assert_eq!(rx.try_recv(), Ok(1));
    assert_eq!(rx.try_recv(), Ok(2));
    assert_eq!(poll(send, &w), Poll::Ready(Ok(())));
}

#[test]
fn closing_the_sending_side_wakes_receivers_after_draining() {
    let (tx, rx) = buffered::<u32>(2);
    let tx2 = tx.clone();
    tx.try_send(1).unwrap();
    drop(tx);
    tx2.try_send(2).unwrap();
    drop(tx2);
    assert_eq!(rx.try_recv(), Ok(1));
    assert_eq!(rx.recv_blocking(), Ok(2));
    assert_eq!(rx.try_recv(), Err(TryRecvError::Closed));
    assert_eq!(rx.recv_blocking(), Err(RecvError::Closed));

    let (tx, rx) = channel::<u32>();
    let (c, w) = counter();
    let mut recv = pin!(rx.recv());
    assert!(poll(recv.as_mut(), &w).is_pending());
    drop(tx);
    assert_eq!(woken(&c), 1);
    assert_eq!(poll(recv, &w), Poll::Ready(Err(RecvError::Closed)));
}

#[test]
fn closing_the_receiving_side_returns_values_to_senders_and_drops_the_buffer() {
    let live = Arc::new(AtomicUsize::new(0));
    let (tx, rx) = buffered::<Tracked>(1);
    let (c, w) = counter();
    tx.try_send(Tracked::new(&live)).unwrap();
    let mut send = pin!(tx.send(Tracked::new(&live)));
    assert!(poll(send.as_mut(), &w).is_pending());
    assert_eq!(live.load(Ordering::SeqCst), 2);
    drop(rx);
    assert_eq!(
        live.load(Ordering::SeqCst),
        1,
        "the buffered value is dropped"
    );
    assert_eq!(woken(&c), 1);
    match poll(send.as_mut(), &w) {
        Poll::Ready(Err(SendError::Closed(v))) => drop(v),
        other => panic!("unexpected {:?}", other.map(|r| r.is_ok())),
    }
    assert_eq!(live.load(Ordering::SeqCst), 0);
    assert!(tx.is_closed());
    assert!(matches!(
        tx.try_send(Tracked::new(&live)),
        Err(TrySendError::Closed(_))
    ));
    assert_eq!(live.load(Ordering::SeqCst), 0);
}

#[test]
fn poison_fails_everyone_and_drops_buffered_values() {
    let live = Arc::new(AtomicUsize::new(0));
    let (tx, rx) = buffered::<Tracked>(1);
    let (c, w) = counter();
    tx.try_send(Tracked::new(&live)).unwrap();
    let mut send = pin!(tx.send(Tracked::new(&live)));
    assert!(poll(send.as_mut(), &w).is_pending());
    rx.poison();
    assert_eq!(woken(&c), 1);
    assert_eq!(
        live.load(Ordering::SeqCst),
        1,
        "the buffered value is dropped"
    );
    match poll(send.as_mut(), &w) {
        Poll::Ready(Err(SendError::Poisoned(v))) => drop(v),
        _ => panic!("expected Poisoned"),
    }
    assert_eq!(live.load(Ordering::SeqCst), 0);
    assert!(tx.is_poisoned() && rx.is_poisoned());
    assert_eq!(rx.try_recv().err(), Some(TryRecvError::Poisoned));
    assert!(matches!(
        tx.try_send(Tracked::new(&live)),
        Err(TrySendError::Poisoned(_))
    ));
    tx.poison(); // idempotent

    let (tx, rx) = channel::<u8>();
    let mut recv = pin!(rx.recv());
    let (c, w) = counter();
    assert!(poll(recv.as_mut(), &w).is_pending());
    tx.poison();
    assert_eq!(woken(&c), 1);
    assert_eq!(poll(recv, &w), Poll::Ready(Err(RecvError::Poisoned)));
    assert_eq!(
        tx.send_timeout(1, Duration::from_secs(1)),
        Err(SendTimeoutError::Poisoned(1))
    );
    assert_eq!(
        rx.recv_timeout(Duration::from_secs(1)),
        Err(RecvTimeoutError::Poisoned)
    );
}

#[test]
fn a_repoll_with_another_waker_moves_the_registration() {
    let (tx, rx) = channel::<u8>();
    let (c1, w1) = counter();
    let (c2, w2) = counter();
    let mut recv = pin!(rx.recv());
    assert!(poll(recv.as_mut(), &w1).is_pending());
    assert!(poll(recv.as_mut(), &w2).is_pending());
    tx.try_send(3).unwrap();
    assert_eq!((woken(&c1), woken(&c2)), (0, 1));
    assert_eq!(poll(recv, &w2), Poll::Ready(Ok(3)));

    let mut send = pin!(tx.send(4));
    assert!(poll(send.as_mut(), &w1).is_pending());
    assert!(poll(send.as_mut(), &w2).is_pending());
    assert_eq!(rx.try_recv(), Ok(4));
    assert_eq!((woken(&c1), woken(&c2)), (0, 2));
}

#[test]
fn timed_operations() {
    let (tx, rx) = channel::<u8>();
    assert_eq!(
        tx.send_timeout(1, Duration::from_millis(2)),
        Err(SendTimeoutError::Timeout(1))
    );
    assert_eq!(waiting(&tx), (0, 0), "the timed-out send withdrew");
    assert_eq!(
        rx.recv_timeout(Duration::from_millis(2)),
        Err(RecvTimeoutError::Timeout)
    );
    assert_eq!(waiting(&tx), (0, 0), "the timed-out receive withdrew");
    let t = std::thread::spawn(move || tx.send_timeout(2, Duration::MAX));
    assert_eq!(rx.recv_timeout(Duration::from_secs(60)), Ok(2));
    assert_eq!(t.join().unwrap(), Ok(()));
}

#[test]
fn errors_display_and_convert() {
    // Every message names the layer.
    assert_eq!(
        SendError::Closed(1).to_string(),
        "tutti::csp: the channel is closed for sending (closed, or every receiver is gone)"
    );
    assert_eq!(
        format!("{:?}", SendError::Poisoned(vec![1])),
        "Poisoned(..)"
    );
    assert_eq!(format!("{:?}", TrySendError::Full(())), "Full(..)");
    assert_eq!(TrySendError::Closed(2).into_inner(), 2);
    assert_eq!(
        RecvError::Poisoned.to_string(),
        "tutti::csp: the channel is poisoned"
    );
    assert_eq!(
        TryRecvError::Empty.to_string(),
        "tutti::csp: the channel is empty (and no sender is waiting)"
    );
    assert_eq!(
        RecvTimeoutError::Timeout.to_string(),
        "tutti::csp: timed out waiting for a value"
    );
    let e: Box<dyn std::error::Error + Send + Sync> = Box::new(SendTimeoutError::Timeout(1));
    assert!(e.to_string().starts_with("tutti::csp: timed out"));
    // One family: the same questions and conversions across the forms.
    let plain = SendError::Poisoned(3);
    assert!(plain.is_poisoned() && !plain.is_closed());
    assert!(TrySendError::from(plain).is_poisoned());
    assert!(SendTimeoutError::from(SendError::Closed(3)).is_closed());
    assert!(TryRecvError::from(RecvError::Closed).is_closed());
    assert!(RecvTimeoutError::from(RecvError::Poisoned).is_poisoned());
    assert!(TryRecvError::Empty.is_empty() && RecvTimeoutError::Timeout.is_timeout());
}

// ---- Alt ---------------------------------------------------------------------------------

fn ready<T: Send>(v: T) -> (Tx<T>, Rx<T>) {
    let (tx, rx) = buffered(4);
    tx.try_send(v).unwrap();
    (tx, rx)
}

#[test]
fn pri_select_picks_the_first_ready_guard_every_time() {
    let (_ta, a) = ready(1);
    let (tb, b) = ready(2);
    let (_tc, c) = ready(3);
    tb.try_send(22).unwrap();
    let mut alt = Alt::new().recv(&a).recv(&b).recv(&c);
    let sel = alt.pri_select_blocking();
    assert_eq!(sel.index(), 0);
    assert_eq!(sel.recv(&a), Ok(1));
    for expect in [2, 22] {
        let sel = alt.pri_select_blocking();
        assert_eq!(sel.index(), 1);
        assert_eq!(sel.recv(&b), Ok(expect));
    }
    let sel = alt.pri_select_blocking();
    assert_eq!(sel.index(), 2);
    assert_eq!(sel.recv(&c), Ok(3));
}

#[test]
fn fair_select_rotates_among_ready_guards() {
    let (ta, a) = buffered::<u32>(16);
    let (tb, b) = buffered::<u32>(16);
    let (tc, c) = buffered::<u32>(16);
    for i in 0..9 {
        ta.try_send(i).unwrap();
        tb.try_send(i).unwrap();
        tc.try_send(i).unwrap();
    }
    let mut alt = Alt::new().recv(&a).recv(&b).recv(&c);
    let mut order = Vec::new();
    for _ in 0..9 {
        let sel = alt.fair_select_blocking();
        order.push(sel.index());
        let rx = [&a, &b, &c][sel.index()];
        sel.recv(rx).unwrap();
    }
    assert_eq!(order, [0, 1, 2, 0, 1, 2, 0, 1, 2]);
    // A guard that is not ready is skipped, and the rotation continues after the winner.
    while b.try_recv().is_ok() {}
    let order: Vec<usize> = (0..4)
        .map(|_| {
            let sel = alt.fair_select_blocking();
            let i = sel.index();
            sel.recv([&a, &b, &c][i]).unwrap();
            i
        })
        .collect();
    assert_eq!(order, [0, 2, 0, 2]);
}

#[test]
fn preconditions_skip_guards_and_can_change_between_selections() {
    let (_ta, a) = ready(1);
    let (_tb, b) = ready(2);
    let mut alt = Alt::new().recv_if(false, &a).recv(&b).skip().when(true);
    let sel = alt.pri_select_blocking();
    assert_eq!(sel.index(), 1);
    assert_eq!(sel.recv(&b), Ok(2));
    assert_eq!(alt.pri_select_blocking().index(), 2, "b is empty now: skip");
    alt.set_when(0, true);
    let sel = alt.pri_select_blocking();
    assert_eq!(sel.index(), 0);
    assert_eq!(sel.recv(&a), Ok(1));
}

#[test]
fn a_sender_commits_a_waiting_alt() {
    let (ta, a) = channel::<u32>();
    let (tb, b) = channel::<u32>();
    let mut alt = Alt::new().recv(&a).recv(&b);
    let (c, w) = counter();
    {
        let mut sel = pin!(alt.pri_select());
        assert!(poll(sel.as_mut(), &w).is_pending());
        assert_eq!(waiting(&ta), (0, 1));
        assert_eq!(waiting(&tb), (0, 1));
        assert_eq!(tb.try_send(7), Ok(()), "the waiting alt takes it");
        assert_eq!(woken(&c), 1);
        // Only one guard fires: the alt no longer takes values from `a`.
        assert_eq!(ta.try_send(8), Err(TrySendError::Full(8)));
        let Poll::Ready(s) = poll(sel.as_mut(), &w) else {
            panic!("not ready")
        };
        assert_eq!(s.index(), 1);
        assert_eq!(s.recv(&b), Ok(7));
    }
    assert_eq!(waiting(&ta), (0, 0), "the losing guard was disabled");
    assert_eq!(waiting(&tb), (0, 0));
}

#[test]
fn an_alt_takes_a_waiting_senders_value_and_completes_it() {
    let (tx, rx) = channel::<u32>();
    let (c, w) = counter();
    let mut send = pin!(tx.send(4));
    assert!(poll(send.as_mut(), &w).is_pending());
    let mut alt = Alt::new().recv(&rx);
    let sel = alt.pri_select_blocking();
    assert_eq!(woken(&c), 1);
    assert_eq!(poll(send, &w), Poll::Ready(Ok(())));
    assert_eq!(sel.recv(&rx), Ok(4));
}

#[test]
fn an_abandoned_selection_gives_a_committed_value_back() {
    let (ta, a) = channel::<u32>();
    let (_tb, b) = channel::<u32>();
    let mut alt = Alt::new().recv(&a).recv(&b);
    let (_c, w) = counter();
    {
        let mut sel = pin!(alt.pri_select());
        assert!(poll(sel.as_mut(), &w).is_pending());
        ta.try_send(1).unwrap();
    } // dropped before seeing the commit
    assert_eq!(waiting(&ta), (0, 0));
    assert_eq!(a.try_recv(), Ok(1), "the value went back to its channel");
    // Abandoning an undecided selection takes nothing.
    {
        let mut sel = pin!(alt.pri_select());
        assert!(poll(sel.as_mut(), &w).is_pending());
    }
    assert_eq!(waiting(&ta), (0, 0));
    assert_eq!(ta.try_send(2), Err(TrySendError::Full(2)));
}

#[test]
fn an_unclaimed_selected_value_goes_back() {
    let (_t, rx) = ready(5u32);
    let mut alt = Alt::new().recv(&rx);
    let sel = alt.pri_select_blocking();
    assert_eq!(sel.index(), 0);
    drop(sel);
    assert_eq!(rx.try_recv(), Ok(5));
}

#[test]
fn a_leaked_selection_is_cleaned_up_by_the_next_one() {
    let (ta, a) = channel::<u32>();
    let mut alt = Alt::new().recv(&a).skip().when(false);
    let (_c, w) = counter();
    let mut fut = Box::pin(alt.pri_select());
    assert!(poll(fut.as_mut(), &w).is_pending());
    std::mem::forget(fut); // leaks the future (and keeps its memory valid)
    ta.try_send(3).unwrap(); // committed to the leaked round
    alt.set_when(1, true);
    let sel = alt.pri_select_blocking();
    assert_eq!(sel.index(), 0, "the value given back is ready");
    assert_eq!(sel.recv(&a), Ok(3));
    let sel = alt.pri_select_blocking();
    assert_eq!(sel.index(), 1, "and was taken exactly once");
    drop(sel);
    drop(alt);
    assert_eq!(waiting(&ta), (0, 0));
}

#[test]
fn dropping_an_alt_with_a_leaked_round_dequeues_it() {
    let (ta, a) = channel::<u32>();
    let mut alt = Alt::new().recv(&a);
    let (_c, w) = counter();
    let mut fut = Box::pin(alt.pri_select());
    assert!(poll(fut.as_mut(), &w).is_pending());
    std::mem::forget(fut);
    assert_eq!(waiting(&ta), (0, 1));
    drop(alt);
    assert_eq!(waiting(&ta), (0, 0));
}

#[test]
fn closed_and_poisoned_inputs_fire_and_report_it() {
    let (ta, a) = channel::<u32>();
    let (tb, b) = channel::<u32>();
    let mut alt = Alt::new().recv(&a).recv(&b);
    let (c, w) = counter();
    {
        let mut sel = pin!(alt.pri_select());
        assert!(poll(sel.as_mut(), &w).is_pending());
        drop(tb);
        assert_eq!(woken(&c), 1);
        let Poll::Ready(s) = poll(sel.as_mut(), &w) else {
            panic!("not ready")
        };
        assert_eq!(s.index(), 1);
        assert_eq!(s.recv(&b), Err(RecvError::Closed));
    }
    ta.poison();
    let s = alt.pri_select_blocking();
    assert_eq!(s.index(), 0);
    assert_eq!(s.recv(&a), Err(RecvError::Poisoned));
}

#[test]
fn timeout_guards() {
    let (_tx, rx) = channel::<u8>();
    let mut alt = Alt::new().recv(&rx).timeout(Duration::from_millis(2));
    let start = Instant::now();
    for _ in 0..2 {
        assert_eq!(alt.pri_select_blocking().index(), 1);
    }
    assert!(
        start.elapsed() >= Duration::from_millis(4),
        "the clock restarts each time"
    );
    // A timeout that is already due fires in priority order, without waiting.
    let mut alt = Alt::new().deadline(Instant::now()).skip();
    assert_eq!(alt.pri_select_blocking().index(), 0);
    let mut alt = Alt::new().skip().deadline(Instant::now());
    assert_eq!(alt.pri_select_blocking().index(), 0);
    // A far deadline moved into the past.
    let mut alt = Alt::new()
        .recv(&rx)
        .deadline(Instant::now() + Duration::from_secs(3600));
    alt.set_deadline(1, Instant::now());
    assert_eq!(alt.pri_select_blocking().index(), 1);
    // A value arriving before the timeout wins, and the timer is disarmed.
    let (tx, rx) = channel::<u8>();
    let mut alt = Alt::new().recv(&rx).timeout(Duration::from_secs(3600));
    let t = std::thread::spawn(move || tx.send_blocking(1));
    let sel = alt.pri_select_blocking();
    assert_eq!(sel.index(), 0);
    assert_eq!(sel.recv(&rx), Ok(1));
    t.join().unwrap().unwrap();
}

#[test]
fn a_selection_with_no_enabled_guard_waits_forever() {
    let (_tx, rx) = channel::<u8>();
    let mut alt = Alt::new().recv_if(false, &rx).skip().when(false);
    let (c, w) = counter();
    let mut sel = pin!(alt.pri_select());
    for _ in 0..3 {
        assert!(poll(sel.as_mut(), &w).is_pending());
    }
    assert_eq!(woken(&c), 0);
}

#[test]
#[should_panic(expected = "Alt without guards")]
fn selecting_on_an_empty_alt_panics() {
    let mut alt = Alt::new();
    let _ = alt.pri_select_blocking();
}

#[test]
#[should_panic(expected = "is on another channel")]
fn taking_from_the_wrong_channel_panics() {
    let (_ta, a) = ready(1u8);
    let (_tb, b) = ready(2u8);
    let mut alt = Alt::new().recv(&a);
    let _ = alt.pri_select_blocking().recv(&b);
}

#[test]
fn a_waker_change_reregisters_the_alt() {
    let (ta, a) = channel::<u32>();
    let (tb, b) = channel::<u32>();
    let mut alt = Alt::new().recv(&a).recv(&b);
    let (c1, w1) = counter();
    let (c2, w2) = counter();
    let mut sel = pin!(alt.pri_select());
    assert!(poll(sel.as_mut(), &w1).is_pending());
    assert!(poll(sel.as_mut(), &w2).is_pending());
    assert_eq!(waiting(&ta), (0, 1), "registered once, not twice");
    ta.try_send(1).unwrap();
    assert_eq!((woken(&c1), woken(&c2)), (0, 1));
    let Poll::Ready(s) = poll(sel.as_mut(), &w2) else {
        panic!("not ready")
    };
    assert_eq!(s.recv(&a), Ok(1));
    assert_eq!(waiting(&tb), (0, 0));
}

/// Senders queued on `rx`'s channel right now.
fn queued_senders<T>(rx: &Rx<T>) -> usize {
    rx.chan().lock().waiting().0
}

/// How a contending sender paces itself, so that the senders differ in who spins.
#[derive(Clone, Copy, Debug)]
enum Pace {
    /// A plain thread in a tight `send_blocking` loop (it spins before it parks).
    Spin,
    /// A plain thread that sleeps between sends, so each send starts cold.
    Sleep,
    /// A plain thread that parks at once in every send (`block_on`, no spin phase).
    Park,
    /// A tutti task on the global runtime.
    Task,
}

/// Fair ALT under contention, measured by counts, not time: one
/// plain thread selects over rendezvous channels whose senders keep sending, each
/// paced differently (one spins, one starts cold, one parks at once, one is a task).
///
/// * **Gated:** before each selection the selector waits until *every* sender is
///   queued; then every selection must fire the guard after the last one (strict
///   rotation), so each sender gets exactly its share of the selections.
/// * **Free-running:** before each selection the selector notes which senders are
///   queued. A queued sender stays queued until its value is taken (nobody else
///   receives there), so each guard noted ready must fire within `s` selections —
///   whatever the OS scheduler does with the threads.
///
/// `select` runs one fair selection, blocking, and returns the fired guard's value.
fn fair_alt_bound(select: fn(&mut Alt<'_>, &[Rx<usize>]) -> (usize, usize)) {
    const PACES: [Pace; 4] = [Pace::Spin, Pace::Sleep, Pace::Park, Pace::Task];
    const GATED: usize = 200;
    const FREE: usize = 4_000;
    let s = PACES.len();
    let (txs, rxs): (Vec<Tx<usize>>, Vec<Rx<usize>>) = (0..s).map(|_| channel()).unzip();
    let mut threads = Vec::new();
    let mut tasks = Vec::new();
    for (i, (tx, pace)) in txs.into_iter().zip(PACES).enumerate() {
        match pace {
            Pace::Spin => threads.push(std::thread::spawn(
                move || {
                    while tx.send_blocking(i).is_ok() {}
                },
            )),
            Pace::Sleep => threads.push(std::thread::spawn(move || loop {
                std::thread::sleep(Duration::from_micros(20));
                if tx.send_blocking(i).is_err() {
                    break;
                }
            })),
            Pace::Park => threads.push(std::thread::spawn(move || {
                while crate::runtime::block_on(tx.send(i)).is_ok() {}
            })),
            Pace::Task => tasks.push(crate::runtime::spawn(async move {
                while tx.send(i).await.is_ok() {}
            })),
        }
    }
    let mut alt = rxs.iter().fold(Alt::new(), |alt, rx| alt.recv(rx));

    // Gated: every guard ready at every selection.
    let mut counts = vec![0usize; s];
    let mut last = None;
    for k in 0..GATED {
        let give_up = Instant::now() + Duration::from_secs(30);
        while rxs.iter().any(|rx| queued_senders(rx) == 0) {
            assert!(Instant::now() < give_up, "a sender never queued again");
            std::thread::yield_now();
        }
        let (i, v) = select(&mut alt, &rxs);
        assert_eq!(v, i, "guard {i} delivered another channel's value");
        if let Some(prev) = last {
            assert_eq!(i, (prev + 1) % s, "selection {k}: not the next ready guard");
        }
        last = Some(i);
        counts[i] += 1;
    }
    assert!(
        counts.iter().all(|&c| c == GATED / s),
        "uneven split with every guard ready: {counts:?}"
    );

    // Free-running: a guard seen ready fires within `s` selections.
    let mut ready = Vec::with_capacity(FREE);
    let mut fired = Vec::with_capacity(FREE);
    for _ in 0..FREE {
        let mask = rxs
            .iter()
            .enumerate()
            .filter(|(_, rx)| queued_senders(rx) > 0)
            .fold(0u32, |m, (i, _)| m | 1 << i);
        ready.push(mask);
        fired.push(select(&mut alt, &rxs).0);
    }
    for (k, &mask) in ready.iter().enumerate().take(FREE - s) {
        for i in (0..s).filter(|&i| mask & 1 << i != 0) {
            assert!(
                fired[k..k + s].contains(&i),
                "guard {i} ({:?} sender) was ready at selection {k} but did not fire in \
                 the next {s}: {:?}",
                PACES[i],
                &fired[k..k + s]
            );
        }
    }

    drop(alt);
    drop(rxs); // the senders see `Closed`
    for t in threads {
        t.join().unwrap();
    }
    for t in tasks {
        t.join();
    }
}

fn select_spinning(alt: &mut Alt<'_>, rxs: &[Rx<usize>]) -> (usize, usize) {
    let sel = alt.fair_select_blocking();
    let i = sel.index();
    (i, sel.recv(&rxs[i]).unwrap())
}

fn select_parking(alt: &mut Alt<'_>, rxs: &[Rx<usize>]) -> (usize, usize) {
    let sel = crate::runtime::block_on(alt.fair_select());
    let i = sel.index();
    (i, sel.recv(&rxs[i]).unwrap())
}

/// The selector spins before it parks (`fair_select_blocking` on a plain thread).
#[test]
fn fair_alt_serves_every_ready_sender_within_a_rotation_spinning() {
    fair_alt_bound(select_spinning);
}

/// The selector parks at once (`block_on` of `fair_select` on a plain thread).
#[test]
fn fair_alt_serves_every_ready_sender_within_a_rotation_parking() {
    fair_alt_bound(select_parking);
}

/// A channel keeps its capacity in 48 bits: every capacity below 2^48 − 1 reads back
/// exactly, and larger ones make an unbounded channel, which never makes a sender wait.
#[test]
fn capacities_read_back_exactly_below_two_to_the_48() {
    let limit = (1usize << 48) - 1;
    for c in [0, 1, 7, u32::MAX as usize, u32::MAX as usize + 1, limit - 1] {
        let (tx, rx) = crate::csp::buffered::<u8>(c);
        assert_eq!((tx.capacity(), rx.capacity()), (c, c));
    }
    for c in [limit, limit + 1, usize::MAX - 1] {
        let (tx, rx) = crate::csp::buffered::<u8>(c);
        assert_eq!((tx.capacity(), rx.capacity()), (usize::MAX, usize::MAX));
        for v in 0..100 {
            tx.try_send(v).unwrap();
        }
        assert_eq!(rx.try_recv(), Ok(0));
    }
}

/// Both senders of a two-guard fair `Alt` were served once each; sender b offered again,
/// sender a was taken from and has not offered again. The selection that served guard 1
/// last then finds only guard 1 ready, leaves it out and waits (`alt/resume.rs`).
fn wait_for_a_resuming_sender(
    test: impl FnOnce(&mut Alt<'_>, &Tx<u32>, &Rx<u32>, &Rx<u32>, Pin<&mut SendFuture<'_, u32>>),
) {
    let (ta, a) = channel::<u32>();
    let (tb, b) = channel::<u32>();
    let (_, quiet) = counter();
    let mut fa = pin!(ta.send(1));
    let mut fb = pin!(tb.send(2));
    assert!(poll(fa.as_mut(), &quiet).is_pending());
    assert!(poll(fb.as_mut(), &quiet).is_pending());
    let mut alt = Alt::new().recv(&a).recv(&b);
    // Both senders wait: guard 0, then guard 1 — each sender taken from.
    for (i, rx, v) in [(0, &a, 1), (1, &b, 2)] {
        let sel = crate::runtime::block_on(alt.fair_select());
        assert_eq!(sel.index(), i);
        assert_eq!(sel.recv(rx), Ok(v));
    }
    // Sender b offers again; sender a has not run yet.
    assert_eq!(poll(fb.as_mut(), &quiet), Poll::Ready(Ok(())));
    let mut fb2 = pin!(tb.send(4));
    assert!(poll(fb2.as_mut(), &quiet).is_pending());
    test(&mut alt, &ta, &a, &b, fa);
}

/// ... and the sender's next offer, not the return of its `send`, ends the wait: the
/// offer goes to the waiting selection, which serves guard 0; the next serves guard 1.
#[test]
fn fair_select_waits_for_a_taken_sender_to_offer_again() {
    wait_for_a_resuming_sender(|alt, ta, a, b, mut fa| {
        let (_, quiet) = counter();
        let (count, waker) = counter();
        {
            let mut sel = pin!(alt.fair_select());
            assert!(
                poll(sel.as_mut(), &waker).is_pending(),
                "served guard 1 twice"
            );
            // Sender a's send returns: it has not offered yet, so the selection waits on.
            assert_eq!(poll(fa.as_mut(), &quiet), Poll::Ready(Ok(())));
            assert_eq!(woken(&count), 0);
            assert!(poll(sel.as_mut(), &waker).is_pending());
            // Its next offer is taken by the waiting selection.
            let mut fa2 = pin!(ta.send(3));
            assert_eq!(poll(fa2.as_mut(), &quiet), Poll::Ready(Ok(())));
            assert!(woken(&count) >= 1);
            let Poll::Ready(s) = poll(sel.as_mut(), &waker) else {
                panic!("the woken selection did not serve guard 0");
            };
            assert_eq!(s.index(), 0);
            assert_eq!(s.recv(a), Ok(3));
        }
        let sel = crate::runtime::block_on(alt.fair_select());
        assert_eq!(sel.index(), 1);
        assert_eq!(sel.recv(b), Ok(4));
    });
}

/// ... and a dropped end of the sender's channel (another stays open) ends the wait:
/// the woken selection serves guard 1.
#[test]
fn fair_select_stops_waiting_when_the_sender_drops_its_end() {
    wait_for_a_resuming_sender(|alt, ta, _a, b, mut fa| {
        let (_, quiet) = counter();
        let (count, waker) = counter();
        let other_end = ta.clone();
        let mut sel = pin!(alt.fair_select());
        assert!(poll(sel.as_mut(), &waker).is_pending());
        assert_eq!(poll(fa.as_mut(), &quiet), Poll::Ready(Ok(())));
        drop(other_end);
        assert!(
            woken(&count) >= 1,
            "the dropped end did not wake the selection"
        );
        let Poll::Ready(s) = poll(sel.as_mut(), &waker) else {
            panic!("the woken selection did not serve guard 1");
        };
        assert_eq!(s.index(), 1);
        assert_eq!(s.recv(b), Ok(4));
    });
}

/// ... and a sender that keeps its end and never sends again holds guard 1 back only for
/// the selection's patience: the selection then serves guard 1, and clears the mark, so
/// that later selections do not wait for that sender again.
#[test]
fn fair_select_gives_up_on_a_quiet_sender_after_its_patience() {
    wait_for_a_resuming_sender(|alt, ta, _a, b, mut fa| {
        let (_, quiet) = counter();
        assert_eq!(poll(fa.as_mut(), &quiet), Poll::Ready(Ok(())));
        alt.set_patience(Some(std::time::Duration::from_millis(5)));
        let sel = crate::runtime::block_on(alt.fair_select());
        assert_eq!(sel.index(), 1);
        assert_eq!(sel.recv(b), Ok(4));
        assert!(!ta.chan().is_resuming(), "the mark outlived the patience");
    });
}
