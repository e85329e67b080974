//! The conveniences users expect of a channel library: timer channels as `Alt` guards,
//! deadlines, lengths, iteration, an explicit close — and values whose `Drop` panics.
// This file uses tutti as a program would, with `std`'s atomics and locks: the
// loom-shim rule of `clippy.toml` is for the library's own code.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

mod watchdog;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tutti::csp::{
    after, at, buffered, channel, never, run, tick, Alt, RecvError, RecvTimeoutError, SendError,
    SendTimeoutError, TryRecvError,
};

/// An `after` guard fires once, at (not before) its instant, and never again; the other
/// guards keep working meanwhile.
#[test]
fn after_fires_once_as_an_alt_guard() {
    let start = Instant::now();
    let timer = after(Duration::from_millis(20));
    let (tx, rx) = buffered::<u32>(4);
    tx.try_send(1).unwrap();
    let mut alt = Alt::new().recv(&timer).recv(&rx);
    // The value is ready first.
    let sel = alt.pri_select_blocking();
    assert_eq!(sel.index(), 1);
    assert_eq!(sel.recv(&rx), Ok(1));
    // Then the timer.
    let sel = alt.pri_select_blocking();
    assert_eq!(sel.index(), 0);
    let when = sel.recv(&timer).unwrap();
    assert!(when >= start + Duration::from_millis(20));
    // It does not fire (nor close) again.
    assert_eq!(timer.try_recv(), Err(TryRecvError::Empty));
    assert!(!timer.is_closed());
    assert_eq!(
        timer.recv_timeout(Duration::from_millis(10)),
        Err(RecvTimeoutError::Timeout)
    );
}

/// `tick` delivers repeatedly at its period and drops the ticks a slow receiver misses;
/// `at` in the past delivers at once.
#[test]
fn tick_and_at() {
    let ticks = tick(Duration::from_millis(2));
    let mut last = Instant::now();
    for _ in 0..5 {
        let t = ticks.recv_blocking().unwrap();
        assert!(t >= last);
        last = t;
    }
    // A slow receiver: at most one tick is waiting, whatever the delay.
    std::thread::sleep(Duration::from_millis(20));
    assert!(ticks.try_recv().is_ok());
    assert_eq!(ticks.try_recv(), Err(TryRecvError::Empty));
    assert!(at(Instant::now() - Duration::from_secs(1))
        .try_recv()
        .is_ok());
}

/// `never` never delivers and never closes; as a guard it just never fires.
#[test]
fn never_never_fires() {
    let rx = never::<u32>();
    let mut alt = Alt::new().recv(&rx).timeout(Duration::from_millis(5));
    assert_eq!(alt.select_blocking().index(), 1);
    assert!(!rx.is_closed());
    assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
}

/// Timer channels in a process network are waits that end: the detector does not report
/// a process that waits on one.
#[test]
fn a_process_waiting_on_a_timer_is_not_deadlocked() {
    run(async {
        let (_tx, idle) = channel::<u32>();
        let timer = after(Duration::from_millis(50));
        let mut alt = Alt::new().recv(&idle).recv(&timer);
        assert_eq!(alt.select().await.index(), 1);
        let ticks = tick(Duration::from_millis(10));
        assert!(ticks.recv().await.is_ok());
    })
    .wait_blocking()
    .unwrap();
}

/// Deadlines: past deadlines still try once; a value or receiver arriving in time wins.
#[test]
fn recv_and_send_deadlines() {
    let (tx, rx) = buffered::<u32>(1);
    let past = Instant::now() - Duration::from_millis(1);
    assert_eq!(rx.recv_deadline(past), Err(RecvTimeoutError::Timeout));
    assert_eq!(tx.send_deadline(1, past), Ok(()), "room: sent at once");
    assert_eq!(tx.send_deadline(2, past), Err(SendTimeoutError::Timeout(2)));
    assert_eq!(rx.recv_deadline(past), Ok(1));
    let sender = {
        let tx = tx.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(10));
            tx.send_blocking(3)
        })
    };
    let soon = Instant::now() + Duration::from_secs(10);
    assert_eq!(rx.recv_deadline(soon), Ok(3));
    sender.join().unwrap().unwrap();
    drop(rx);
    assert_eq!(tx.send_deadline(4, soon), Err(SendTimeoutError::Closed(4)));
}

/// `Tx::len`, `is_empty`, `is_full` track the buffer; a rendezvous channel is always full.
#[test]
fn sender_side_lengths() {
    let (tx, rx) = buffered::<u32>(2);
    assert!(tx.is_empty() && !tx.is_full());
    tx.try_send(1).unwrap();
    assert_eq!((tx.len(), tx.is_empty(), tx.is_full()), (1, false, false));
    tx.try_send(2).unwrap();
    assert!(tx.is_full());
    assert_eq!(rx.try_recv(), Ok(1));
    assert_eq!(tx.len(), 1);
    let (rtx, _rrx) = channel::<u32>();
    assert!(rtx.is_full() && rtx.is_empty());
}

/// Iteration: blocking until the channel closes, non-blocking over what is there, and by
/// value.
#[test]
fn iterating_over_a_receiver() {
    let (tx, rx) = buffered::<u32>(8);
    let producer = std::thread::spawn(move || {
        for i in 0..100 {
            tx.send_blocking(i).unwrap();
        }
    });
    assert_eq!(rx.iter().count(), 100);
    producer.join().unwrap();
    let (tx, rx) = buffered::<u32>(8);
    for i in 0..3 {
        tx.try_send(i).unwrap();
    }
    assert_eq!(rx.try_iter().collect::<Vec<_>>(), [0, 1, 2]);
    assert_eq!(
        rx.try_iter().next(),
        None,
        "empty, not closed: ends at once"
    );
    tx.try_send(9).unwrap();
    tx.close();
    let mut total = 0;
    for v in &rx {
        total += v;
    }
    assert_eq!(total, 9);
    assert_eq!(rx.into_iter().next(), None);
}

/// `close` from either end: later sends fail with their value back, waiting senders are
/// released with theirs, receivers drain the buffer, then see `Closed`; a waiting
/// receiver of an empty channel is released at once.
#[test]
fn explicit_close() {
    let (tx, rx) = channel::<u32>();
    let waiting_sender = {
        let tx = tx.clone();
        std::thread::spawn(move || tx.send_blocking(1))
    };
    std::thread::sleep(Duration::from_millis(10));
    rx.close();
    assert_eq!(waiting_sender.join().unwrap(), Err(SendError::Closed(1)));
    assert!(tx.is_closed() && rx.is_closed());
    assert_eq!(tx.try_send(2).unwrap_err().into_inner(), 2);
    assert_eq!(rx.recv_blocking(), Err(RecvError::Closed));

    let (tx, rx) = channel::<u32>();
    let waiting_receiver = std::thread::spawn(move || rx.recv_blocking());
    std::thread::sleep(Duration::from_millis(10));
    tx.close();
    tx.close(); // twice is harmless
    assert_eq!(waiting_receiver.join().unwrap(), Err(RecvError::Closed));
}

/// A value whose `Drop` panics, while a channel drops its buffered values (every
/// receiver gone, poisoned, or the channel freed), does not abort the process: every
/// value is still dropped, and the first panic reaches whoever dropped the channel.
#[test]
fn panicking_drops_of_buffered_values_do_not_abort() {
    use std::panic::{catch_unwind, AssertUnwindSafe};
    struct Grumpy(Arc<AtomicUsize>);
    impl Drop for Grumpy {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
            panic!("grumpy value dropped");
        }
    }
    let raises = |f: &mut dyn FnMut()| catch_unwind(AssertUnwindSafe(f)).is_err();
    let dropped = Arc::new(AtomicUsize::new(0));
    // Every receiver gone.
    let (tx, rx) = buffered::<Grumpy>(4);
    for _ in 0..3 {
        assert!(tx.try_send(Grumpy(dropped.clone())).is_ok());
    }
    let mut rx = Some(rx);
    assert!(raises(&mut || drop(rx.take())));
    assert_eq!(dropped.load(Ordering::SeqCst), 3);
    // Poisoned.
    let (tx, _rx) = buffered::<Grumpy>(4);
    for _ in 0..3 {
        assert!(tx.try_send(Grumpy(dropped.clone())).is_ok());
    }
    assert!(raises(&mut || tx.poison()));
    assert_eq!(dropped.load(Ordering::SeqCst), 6);
    // The last handles go while values are buffered.
    let (tx, rx) = buffered::<Grumpy>(2);
    assert!(tx.try_send(Grumpy(dropped.clone())).is_ok());
    assert!(tx.try_send(Grumpy(dropped.clone())).is_ok());
    drop(tx);
    let mut rx = Some(rx);
    assert!(raises(&mut || drop(rx.take())));
    assert_eq!(dropped.load(Ordering::SeqCst), 8);
}
