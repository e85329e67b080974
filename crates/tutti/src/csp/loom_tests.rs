//! Loom models of the channel protocol (`chan.rs`) and the ALT commit protocol
//! (`alt/mod.rs`): every interleaving of a few parties, with the smallest capacities that
//! reach the hand-off, refill and give-back paths.

use std::future::Future;
use std::pin::pin;
use std::sync::Arc as StdArc;
use std::task::{Context, Poll, Wake, Waker};

use super::*;
use crate::loom::thread;

struct NoWake;

impl Wake for NoWake {
    fn wake(self: StdArc<Self>) {}
}

fn noop() -> Waker {
    Waker::from(StdArc::new(NoWake))
}

use crate::test_util::loom::block_on;

fn poll_once<F: Future>(f: std::pin::Pin<&mut F>) -> Poll<F::Output> {
    f.poll(&mut Context::from_waker(&noop()))
}

/// Three-party models are bounded to keep the state space tractable.
fn bounded(f: impl Fn() + Sync + Send + 'static) {
    let mut model = loom::model::Builder::new();
    model.preemption_bound = Some(3);
    model.check(f);
}

/// A completed rendezvous send means a receiver holds the value: poisoning the channel
/// right after cannot take it away (a buffered value would be dropped by the poison).
#[test]
fn rendezvous_send_completes_only_into_a_receiver() {
    loom::model(|| {
        let (tx, rx) = channel::<u32>();
        let sender = thread::spawn(move || {
            block_on(tx.send(1)).unwrap();
            tx.poison();
        });
        assert_eq!(block_on(rx.recv()), Ok(1));
        sender.join().unwrap();
    });
}

/// A send withdrawn while a receiver takes: the value ends up in exactly one place.
/// `pause` as in [`receive_drop_races_send`].
fn send_cancel_races_receive(pause: bool) {
    loom::model(move || {
        let (tx, rx) = channel::<u32>();
        let sender = thread::spawn(move || {
            let mut f = pin!(tx.send(7));
            match poll_once(f.as_mut()) {
                Poll::Ready(r) => {
                    r.unwrap();
                    None
                }
                Poll::Pending => {
                    if pause {
                        thread::yield_now();
                    }
                    f.as_mut().cancel()
                }
            }
        });
        let received = rx.try_recv().ok();
        let returned = sender.join().unwrap();
        assert!(
            received.is_some() != returned.is_some(),
            "received {received:?}, returned {returned:?}"
        );
    });
}

#[test]
fn send_cancel_races_receive_at_once() {
    send_cancel_races_receive(false);
}

#[test]
fn send_cancel_races_receive_after_a_pause() {
    send_cancel_races_receive(true);
}

/// A receive dropped while a sender hands it a value: the value is given back, so it is
/// received exactly once. With `pause`, the receiver yields between its poll and its drop,
/// steering loom into the drop that finds the commit already made (loom's exploration
/// does not reorder a whole critical section before a lone atomic load on its own).
fn receive_drop_races_send(pause: bool) {
    loom::model(move || {
        let (tx, rx) = channel::<u32>();
        let rx2 = rx.clone();
        let receiver = thread::spawn(move || {
            let mut f = pin!(rx2.recv());
            let ready = poll_once(f.as_mut()).is_ready();
            if pause {
                thread::yield_now();
            }
            ready
        });
        let sent = tx.try_send(7).is_ok();
        let got_in_poll = receiver.join().unwrap();
        let given_back = rx.try_recv().is_ok();
        assert!(!(got_in_poll && given_back), "received twice");
        assert_eq!(sent, got_in_poll || given_back, "lost or invented");
    });
}

#[test]
fn receive_drop_races_send_at_once() {
    receive_drop_races_send(false);
}

#[test]
fn receive_drop_races_send_after_a_pause() {
    receive_drop_races_send(true);
}

/// The last sender leaving while a receiver starts to wait: the receiver sees `Closed`
/// and never sleeps forever (loom reports a deadlock otherwise).
#[test]
fn close_races_receive() {
    loom::model(|| {
        let (tx, rx) = channel::<u32>();
        let closer = thread::spawn(move || drop(tx));
        let r = block_on(rx.recv());
        assert_eq!(r, Err(RecvError::Closed));
        closer.join().unwrap();
    });
}

/// Poison racing a rendezvous: the send succeeds exactly when the receive does.
#[test]
fn poison_races_rendezvous() {
    bounded(|| {
        let (tx, rx) = channel::<u32>();
        let tx2 = tx.clone();
        let sender = thread::spawn(move || block_on(tx.send(1)));
        let poisoner = thread::spawn(move || tx2.poison());
        let received = block_on(rx.recv());
        let sent = sender.join().unwrap();
        poisoner.join().unwrap();
        assert_eq!(sent.is_ok(), received.is_ok(), "{sent:?} / {received:?}");
        if let Ok(v) = received {
            assert_eq!(v, 1);
        } else {
            assert_eq!(sent, Err(SendError::Poisoned(1)));
            assert_eq!(received, Err(RecvError::Poisoned));
        }
    });
}

/// A capacity-1 buffer: the second send waits until a receive moves it in; order holds.
#[test]
fn buffered_refill_keeps_order() {
    loom::model(|| {
        let (tx, rx) = buffered::<u32>(1);
        let sender = thread::spawn(move || {
            block_on(tx.send(1)).unwrap();
            block_on(tx.send(2)).unwrap();
        });
        assert_eq!(block_on(rx.recv()), Ok(1));
        assert_eq!(block_on(rx.recv()), Ok(2));
        sender.join().unwrap();
    });
}

/// The ALT commit: one `Alt` over two rendezvous channels, two senders racing to commit
/// it. Exactly one guard fires with its own sender's value; the other value is then
/// received normally, so each value arrives exactly once and both senders complete.
#[test]
fn alt_commit_two_senders() {
    bounded(|| {
        let (ta, a) = channel::<u32>();
        let (tb, b) = channel::<u32>();
        let sa = thread::spawn(move || block_on(ta.send(1)).unwrap());
        let sb = thread::spawn(move || block_on(tb.send(2)).unwrap());
        let mut alt = Alt::new().recv(&a).recv(&b);
        let sel = block_on(alt.pri_select());
        let (first, other) = match sel.index() {
            0 => (sel.recv(&a), &b),
            _ => (sel.recv(&b), &a),
        };
        let second = block_on(other.recv());
        let mut got = [first.unwrap(), second.unwrap()];
        got.sort_unstable();
        assert_eq!(got, [1, 2]);
        sa.join().unwrap();
        sb.join().unwrap();
    });
}

/// A selection abandoned while a sender commits to it: a committed value goes back to
/// its channel, an uncommitted one stays with the sender. `pause` as in
/// [`receive_drop_races_send`].
fn alt_abandon_races_commit(pause: bool) {
    loom::model(move || {
        let (ta, a) = channel::<u32>();
        let (_tb, b) = channel::<u32>();
        // The sender keeps its end until joined, so the guard cannot fire on `Closed`.
        let sender = thread::spawn(move || (ta.try_send(1).is_ok(), ta));
        let mut alt = Alt::new().recv(&a).recv(&b);
        let fired = {
            let mut sel = pin!(alt.pri_select());
            match poll_once(sel.as_mut()) {
                Poll::Ready(s) => Some(s.recv(&a).unwrap()),
                Poll::Pending => {
                    if pause {
                        thread::yield_now();
                    }
                    None
                }
            }
        };
        let (sent, _ta) = sender.join().unwrap();
        let given_back = a.try_recv().ok();
        assert!(!(fired.is_some() && given_back.is_some()), "received twice");
        assert_eq!(
            sent,
            fired.is_some() || given_back.is_some(),
            "lost or invented"
        );
    });
}

#[test]
fn alt_abandon_races_commit_at_once() {
    alt_abandon_races_commit(false);
}

#[test]
fn alt_abandon_races_commit_after_a_pause() {
    alt_abandon_races_commit(true);
}

/// Two senders hit an `Alt` that a third party abandons: every value that a `try_send`
/// reports as delivered is received exactly once.
#[test]
fn alt_abandon_with_two_committers() {
    bounded(|| {
        let (ta, a) = channel::<u32>();
        let (tb, b) = channel::<u32>();
        let sa = thread::spawn(move || (ta.try_send(1).is_ok(), ta));
        let sb = thread::spawn(move || (tb.try_send(2).is_ok(), tb));
        let mut alt = Alt::new().recv(&a).recv(&b);
        let mut got = Vec::new();
        {
            let mut sel = pin!(alt.fair_select());
            match poll_once(sel.as_mut()) {
                Poll::Ready(s) => {
                    let i = s.index();
                    got.push(s.recv([&a, &b][i]).unwrap());
                }
                Poll::Pending => thread::yield_now(),
            }
        }
        let (sent_a, _ta) = sa.join().unwrap();
        let (sent_b, _tb) = sb.join().unwrap();
        got.extend(a.try_recv().ok());
        got.extend(b.try_recv().ok());
        got.sort_unstable();
        let mut expected = Vec::new();
        if sent_a {
            expected.push(1);
        }
        if sent_b {
            expected.push(2);
        }
        assert_eq!(got, expected);
        assert!(got.len() <= 1, "an Alt fires one guard; nobody else waited");
    });
}

/// A send guard abandoned while a receiver takes from it: the value ends up either with
/// the receiver (the guard fired: the send happened) or still offered by the guard —
/// never both, never neither. (An async selection's guard is a two-phase offer: a
/// `try_recv` only pokes it, so here the value always stays offered unless the guard
/// fired in its own look.)
#[test]
fn send_guard_abandon_races_receive() {
    loom::model(|| {
        let (tx, rx) = channel::<u32>();
        let (_tb, b) = channel::<u32>();
        // The receiver keeps its end until joined, so the guard cannot fire on `Closed`.
        let receiver = thread::spawn(move || (rx.try_recv().ok(), rx));
        let mut alt = Alt::new().recv(&b).send(&tx, 7);
        let fired = {
            let mut sel = pin!(alt.pri_select());
            match poll_once(sel.as_mut()) {
                Poll::Ready(s) => {
                    assert_eq!(s.index(), 1);
                    s.sent(&tx).unwrap();
                    true
                }
                Poll::Pending => false,
            }
        };
        let (received, _rx) = receiver.join().unwrap();
        let kept = alt.offer(1, &tx, 8);
        match received {
            Some(v) => {
                assert_eq!(v, 7);
                assert_eq!(kept, None, "received and still offered");
            }
            None => {
                assert!(!fired, "fired without a receiver");
                assert_eq!(kept, Some(7), "lost");
            }
        }
    });
}

/// A two-phase offer (an async selection's send guard) met by a receiver that waits:
/// the receiver only pokes the selection, which sends in a later poll — or, abandoned
/// after one or two polls, has not sent, and the caller's retry delivers the value. The
/// receiver gets it exactly once either way.
#[test]
fn poked_offer_sends_or_is_withdrawn() {
    loom::model(|| {
        let (tx, rx) = channel::<u32>();
        let receiver = thread::spawn(move || (block_on(rx.recv()), rx));
        let mut alt = Alt::new().send(&tx, 7);
        let fired = {
            let mut sel = pin!(alt.select());
            let mut fired = false;
            for _ in 0..2 {
                if let Poll::Ready(s) = poll_once(sel.as_mut()) {
                    s.sent(&tx).unwrap();
                    fired = true;
                    break;
                }
            }
            fired
        }; // abandoned if it did not fire
        let kept = alt.withdraw(0, &tx);
        assert_eq!(fired, kept.is_none(), "fired {fired}, kept {kept:?}");
        if let Some(v) = kept {
            block_on(tx.send(v)).unwrap(); // the retry
        }
        let (got, rx) = receiver.join().unwrap();
        assert_eq!(got, Ok(7));
        assert!(rx.try_recv().is_err(), "delivered twice");
    });
}

/// Two `Alt`s meet on one rendezvous channel, one offering a value and the other
/// waiting for it, each also waiting on a channel nobody uses: both fire that channel's
/// guards and the value moves once (an `Alt` that finds the other registered commits
/// it; one that finds a guard ready while registering withdraws and looks again).
#[test]
fn alt_send_meets_alt_recv() {
    bounded(|| {
        let (tx, rx) = channel::<u32>();
        let (_t1, idle1) = channel::<u32>();
        let (_t2, idle2) = channel::<u32>();
        let sender = thread::spawn(move || {
            let mut alt = Alt::new().recv(&idle1).send(&tx, 5);
            let sel = block_on(alt.select());
            assert_eq!(sel.index(), 1);
            sel.sent(&tx).unwrap();
            drop(alt);
            (tx, idle1)
        });
        let mut alt = Alt::new().recv(&idle2).recv(&rx);
        let sel = block_on(alt.select());
        assert_eq!(sel.index(), 1);
        assert_eq!(sel.recv(&rx), Ok(5));
        drop(alt);
        let _ = sender.join().unwrap();
    });
}

/// A send guard registered on a channel that gets closed: the guard fires and gives the
/// value back with `Closed`; or, if a receiver took it first, the send happened.
#[test]
fn send_guard_races_close() {
    loom::model(|| {
        let (tx, rx) = buffered::<u32>(1);
        tx.try_send(0).unwrap(); // full: the guard has to wait
        let closer = thread::spawn(move || {
            let first = rx.try_recv().ok();
            rx.close();
            (first, rx)
        });
        let mut alt = Alt::new().send(&tx, 9);
        let outcome = block_on(alt.select()).sent(&tx);
        let (first, rx) = closer.join().unwrap();
        assert_eq!(first, Some(0));
        match outcome {
            Ok(()) => assert_eq!(rx.try_recv(), Ok(9), "sent but not in the channel"),
            Err(e) => {
                assert_eq!(e, SendError::Closed(9));
                assert_eq!(rx.try_recv(), Err(TryRecvError::Closed));
            }
        }
    });
}

/// Unbounded: two senders that never wait and a receiver that waits while the channel is
/// empty; every value arrives once, each sender's in order, and the buffer's growing and
/// giving memory back (two slots kept under loom) happen under the same lock.
#[test]
fn unbounded_two_senders_one_receiver() {
    bounded(|| {
        let (tx, rx) = unbounded::<u32>();
        let tx2 = tx.clone();
        let a = thread::spawn(move || {
            block_on(tx.send(1)).unwrap();
            block_on(tx.send(2)).unwrap();
        });
        let b = thread::spawn(move || block_on(tx2.send(10)).unwrap());
        let got: Vec<u32> = (0..3).map(|_| block_on(rx.recv()).unwrap()).collect();
        let ones: Vec<u32> = got.iter().copied().filter(|&v| v < 10).collect();
        assert_eq!(ones, [1, 2], "{got:?}");
        assert!(got.contains(&10), "{got:?}");
        a.join().unwrap();
        b.join().unwrap();
        assert_eq!(rx.try_recv(), Err(TryRecvError::Closed));
    });
}

/// Unbounded: a close races a send and a waiting receive. The receiver gets what was
/// sent before the close, then `Closed`; a send after the close gets its value back; no
/// value is lost or received twice.
#[test]
fn unbounded_close_races_send_and_receive() {
    loom::model(|| {
        let (tx, rx) = unbounded::<u32>();
        let closer = tx.clone();
        let sender = thread::spawn(move || block_on(tx.send(1)));
        let receiver = thread::spawn(move || {
            let mut got = Vec::new();
            while let Ok(v) = block_on(rx.recv()) {
                got.push(v);
            }
            got
        });
        closer.close();
        let sent = sender.join().unwrap();
        let got = receiver.join().unwrap();
        match sent {
            Ok(()) => assert_eq!(got, [1]),
            Err(SendError::Closed(1)) => assert!(got.is_empty()),
            Err(e) => panic!("{e:?}"),
        }
    });
}

/// Unbounded in an `Alt`: a selection waiting on an empty unbounded channel (and a
/// rendezvous nobody uses) is committed by a plain send, with its value.
#[test]
fn unbounded_send_commits_a_waiting_alt() {
    loom::model(|| {
        let (tx, rx) = unbounded::<u32>();
        let (_quiet_tx, quiet) = channel::<u32>();
        let sender = thread::spawn(move || block_on(tx.send(5)).unwrap());
        let mut alt = Alt::new().recv(&quiet).recv(&rx);
        let sel = block_on(alt.select());
        assert_eq!(sel.index(), 1);
        assert_eq!(sel.recv(&rx), Ok(5));
        sender.join().unwrap();
    });
}

/// How the sender thread of [`fair_select_with_a_resuming_sender`] behaves.
#[derive(Clone, Copy)]
enum Resuming {
    /// It sends 1, then 3: its second offer ends a selection's wait for it.
    SendsAgain,
    /// It sends 1 and 3 and drops its end while the selector's own end of `a` stays
    /// open: the drop ends a selection's wait for it. (Its first value usually goes to
    /// a registered selection, which marks nothing; the second is queued by the time
    /// the selector looks again, and taken by the look, which marks.)
    DropsItsEnd,
    /// It polls its send once and then cancels it: a future whose value may have been
    /// taken is dropped without being polled again.
    Cancels,
    /// It sends once, waits until the selector has no more values of its own to offer
    /// (keeping its end open), and drops its end, closing its channel. With no patience,
    /// the selection gives up on it at once instead of waiting.
    Quiet,
}

/// A fair selection over two rendezvous channels (`alt/resume.rs`): a sender thread on
/// `a`, and the selecting thread keeping `b` ready itself (a send future of its own, polled
/// by hand, re-offered whenever guard `b` fires). Once guard `b` has fired, a look that
/// finds `a`'s sender taken from but not offering again leaves `b` out and waits; the
/// sender's next offer, its dropped end (or its cancelled future, then its closed
/// channel) must wake it — a lost wake-up leaves the model waiting for ever — and the
/// selection ends when `a` is closed. A `Quiet` sender is given up on at once (zero
/// patience): the model checks that giving up races safely with the sender. With
/// `stop_after`, the selector gives up after that many selections and drops its ends
/// while the sender may still be marked; the sender must still finish.
fn fair_select_with_a_resuming_sender(sender: Resuming, stop_after: Option<usize>) {
    let model = move || {
        let (ta, a) = channel::<u32>();
        let (tb, b) = channel::<u32>();
        let (done_tx, done) = buffered::<()>(1);
        // The selector's own end of `a` (`DropsItsEnd`), dropped once `b` is spent.
        let mut own_ta = matches!(sender, Resuming::DropsItsEnd).then(|| ta.clone());
        let sa = thread::spawn(move || match sender {
            Resuming::SendsAgain | Resuming::DropsItsEnd => {
                block_on(ta.send(1)).is_ok() && block_on(ta.send(3)).is_ok()
            }
            Resuming::Quiet => {
                let sent = block_on(ta.send(1)).is_ok();
                let _ = block_on(done.recv());
                sent
            }
            Resuming::Cancels => {
                let mut f = pin!(ta.send(1));
                if poll_once(f.as_mut()).is_pending() {
                    thread::yield_now();
                }
                // `None`: the selector took the value.
                f.as_mut().cancel().is_none()
            }
        });
        let mut fb = Box::pin(tb.send(2));
        assert!(poll_once(fb.as_mut()).is_pending());
        let mut from_a = Vec::new();
        // Re-offers on `b`: few, so that the selector must block (and the sender run) in
        // every schedule.
        let mut offers = 2;
        {
            let mut alt = Alt::new().recv(&a).recv(&b);
            if matches!(sender, Resuming::Quiet) {
                alt.set_patience(Some(std::time::Duration::ZERO));
            }
            for _ in 0..stop_after.unwrap_or(usize::MAX) {
                let sel = block_on(alt.fair_select());
                if sel.index() == 1 {
                    assert_eq!(sel.recv(&b), Ok(2));
                    assert!(poll_once(fb.as_mut()).is_ready());
                    if offers > 0 {
                        offers -= 1;
                        fb = Box::pin(tb.send(2));
                        assert!(poll_once(fb.as_mut()).is_pending());
                    } else {
                        alt.set_when(1, false);
                        // Fails only for a sender that is gone already.
                        let _ = done_tx.try_send(());
                        own_ta = None;
                    }
                    continue;
                }
                match sel.recv(&a) {
                    Ok(v) => from_a.push(v),
                    Err(_) => break, // `a` ended: every value of it was received
                }
            }
        }
        drop(own_ta);
        drop(fb);
        drop(a);
        drop(done_tx);
        let sent = sa.join().unwrap();
        let expected: &[u32] = match sender {
            Resuming::SendsAgain | Resuming::DropsItsEnd => &[1, 3],
            _ => &[1],
        };
        if stop_after.is_none() {
            assert_eq!(sent, from_a == expected, "sent {sent}, received {from_a:?}");
        } else if !from_a.is_empty() {
            assert!(
                expected.starts_with(&from_a),
                "received {from_a:?}, not sent so"
            );
        }
    };
    let mut builder = loom::model::Builder::new();
    // Three preemptions for a dropped end: with two, no schedule has the selection
    // leave a guard out while the sender still holds its end.
    builder.preemption_bound = Some(if matches!(sender, Resuming::DropsItsEnd) {
        3
    } else {
        2
    });
    builder.check(model);
}

#[test]
fn fair_select_waits_for_a_sender_to_send_again() {
    fair_select_with_a_resuming_sender(Resuming::SendsAgain, None);
}

#[test]
fn fair_select_waits_for_a_sender_to_drop_its_end() {
    fair_select_with_a_resuming_sender(Resuming::DropsItsEnd, None);
}

#[test]
fn fair_select_survives_a_dropped_resuming_sender() {
    fair_select_with_a_resuming_sender(Resuming::Cancels, None);
}

#[test]
fn fair_select_gives_up_on_a_quiet_sender() {
    fair_select_with_a_resuming_sender(Resuming::Quiet, None);
}

#[test]
fn fair_selector_stops_while_its_sender_resumes() {
    fair_select_with_a_resuming_sender(Resuming::SendsAgain, Some(2));
}
