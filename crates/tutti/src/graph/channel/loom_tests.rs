//! Loom models of the channels' wake protocols (`wake.rs`).

use std::future::poll_fn;
use std::task::Poll;

use std::sync::Arc;

use super::{Activity, Cell};
use crate::loom::{thread, AtomicBool, Ordering};
use crate::sync::Wait;
use crate::test_util::loom::block_on;

/// A producer (fired on every change) that finds the ring full, and a
/// consumer taking the last token, which notifies the producer's cell as
/// every pop does (`Chan::took`): the producer either sees the room or is
/// notified (a lost notification leaves it waiting for ever, which loom
/// reports).
#[test]
fn room_is_never_missed() {
    use crate::loom::AtomicUsize;
    loom::model(|| {
        let activity = Arc::new(Activity::new(1));
        let cell = Arc::new(Cell::new(Arc::clone(&activity)));
        let len = Arc::new(AtomicUsize::new(1)); // capacity 1, full
        let consumer = {
            let (cell, len) = (Arc::clone(&cell), Arc::clone(&len));
            thread::spawn(move || {
                len.fetch_sub(1, Ordering::AcqRel);
                cell.notify();
            })
        };
        // The producer: consumes its notification, tries, waits while full.
        block_on(poll_fn(|cx| loop {
            cell.signal.take();
            if len.load(Ordering::Acquire) == 0 {
                return Poll::Ready(());
            }
            match cell.signal.poll_wait(cx) {
                Wait::Notified => continue,
                Wait::Parked | Wait::StillParked => return Poll::Pending,
            }
        }));
        consumer.join().unwrap();
    });
}

/// A probe over one loom flag (a port that became ready).
struct Flag(Arc<AtomicBool>);

impl super::Probe for Flag {
    fn ready(&self) -> bool {
        self.0.load(Ordering::Acquire)
    }
}

/// Pond's rule in the notifier: two ports made ready by two notifiers at
/// once; the actor, parked until both are ready, is woken (a notify
/// skipped by both gates would leave it parked for ever, which loom
/// reports).
#[test]
fn a_gated_notify_is_never_lost() {
    loom::model(|| {
        let activity = Arc::new(Activity::new(1));
        let cell = Arc::new(Cell::new(Arc::clone(&activity)));
        let ports = [
            Arc::new(AtomicBool::new(false)),
            Arc::new(AtomicBool::new(false)),
        ];
        cell.set_gate(
            ports
                .iter()
                .map(|p| Arc::new(Flag(Arc::clone(p))) as Arc<dyn super::Probe>)
                .collect(),
        );
        let notifiers: Vec<_> = ports
            .iter()
            .map(|p| {
                let (cell, p) = (Arc::clone(&cell), Arc::clone(p));
                thread::spawn(move || {
                    p.store(true, Ordering::Release);
                    cell.notify();
                })
            })
            .collect();
        // The actor: runs when both are ready, else parks.
        block_on(poll_fn(|cx| loop {
            cell.signal.take();
            if ports.iter().all(|p| p.load(Ordering::Acquire)) {
                return Poll::Ready(());
            }
            match cell.signal.poll_wait(cx) {
                Wait::Notified => continue,
                Wait::Parked | Wait::StillParked => return Poll::Pending,
            }
        }));
        for n in notifiers {
            n.join().unwrap();
        }
    });
}

/// Pond's rule with an output: an `AllReady` actor parked with its input
/// empty and its output full; its input refills (the notify's gate sees the
/// output full and skips) while the consumer takes from its output. The
/// actor must run: the take notifies the producer like any port change, so
/// the later of the two notifiers sees both ports ready. (With the take
/// notifying only a producer that had asked for room, as the channels once
/// did, loom finds the actor parked for ever: it checks its input first, so
/// it never asked.)
#[test]
fn all_ready_fires_when_room_frees_after_a_refill() {
    loom::model(|| {
        let activity = Arc::new(Activity::new(1));
        let cell = Arc::new(Cell::new(Arc::clone(&activity)));
        let input = Arc::new(AtomicBool::new(false)); // empty
        let room = Arc::new(AtomicBool::new(false)); // the output is full
        cell.set_gate(vec![
            Arc::new(Flag(Arc::clone(&input))) as Arc<dyn super::Probe>,
            Arc::new(Flag(Arc::clone(&room))),
        ]);
        let refill = {
            let (cell, input) = (Arc::clone(&cell), Arc::clone(&input));
            thread::spawn(move || {
                input.store(true, Ordering::Release);
                cell.notify();
            })
        };
        let take = {
            let (cell, room) = (Arc::clone(&cell), Arc::clone(&room));
            thread::spawn(move || {
                room.store(true, Ordering::Release);
                cell.notify(); // as `Chan::took`
            })
        };
        // The actor: the firing rule as the task checks it, parks unless it
        // holds.
        block_on(poll_fn(|cx| loop {
            cell.signal.take();
            if input.load(Ordering::Acquire) && room.load(Ordering::Acquire) {
                return Poll::Ready(());
            }
            match cell.signal.poll_wait(cx) {
                Wait::Notified => continue,
                Wait::Parked | Wait::StillParked => return Poll::Pending,
            }
        }));
        refill.join().unwrap();
        take.join().unwrap();
    });
}

/// The idle detection the end of a run rests on: once a notify of an actor
/// has returned, its location is not seen idle until that actor has run
/// (else the router could end a run with a token unhandled).
#[test]
fn idle_is_never_seen_before_a_notified_actor_ran() {
    loom::model(|| {
        let activity = Arc::new(Activity::new(1));
        let cell = Arc::new(Cell::new(Arc::clone(&activity)));
        let acted = Arc::new(AtomicBool::new(false));
        let actor = {
            let (activity, cell, acted) =
                (Arc::clone(&activity), Arc::clone(&cell), Arc::clone(&acted));
            thread::spawn(move || {
                // Active from the start; waits for one notification.
                block_on(poll_fn(|cx| match cell.signal.poll_wait(cx) {
                    Wait::Notified => Poll::Ready(()),
                    Wait::Parked => {
                        activity.parked();
                        Poll::Pending
                    }
                    Wait::StillParked => Poll::Pending,
                }));
                acted.store(true, Ordering::Release);
                activity.parked(); // terminates
            })
        };
        let notifier = {
            let cell = Arc::clone(&cell);
            thread::spawn(move || cell.notify())
        };
        notifier.join().unwrap();
        block_on(poll_fn(|cx| loop {
            if activity.is_idle() {
                return Poll::Ready(());
            }
            match activity.router.poll_wait(cx) {
                Wait::Notified => continue,
                Wait::Parked | Wait::StillParked => return Poll::Pending,
            }
        }));
        assert!(
            acted.load(Ordering::Acquire),
            "idle before the notified actor ran"
        );
        actor.join().unwrap();
    });
}
