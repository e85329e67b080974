//! Loom models of the channels' wake protocols (`wake.rs`).

use std::future::poll_fn;
use std::task::Poll;

use std::sync::Arc;

use super::{Activity, Cell};
use crate::loom::{thread, AtomicBool, Ordering};
use crate::sync::Wait;
use crate::test_util::loom::block_on;

/// A producer that finds the ring full and a consumer taking the last
/// token: the producer either sees the room or is notified (a lost
/// notification leaves it waiting for ever, which loom reports).
#[test]
fn room_is_never_missed() {
    use super::RoomFlag;
    use crate::loom::AtomicUsize;
    loom::model(|| {
        let activity = Arc::new(Activity::new(1));
        let cell = Arc::new(Cell::new(Arc::clone(&activity)));
        let flag = Arc::new(RoomFlag::new());
        let len = Arc::new(AtomicUsize::new(1)); // capacity 1, full
        let consumer = {
            let (cell, flag, len) = (Arc::clone(&cell), Arc::clone(&flag), Arc::clone(&len));
            thread::spawn(move || {
                len.fetch_sub(1, Ordering::AcqRel);
                flag.took(|| cell.notify());
            })
        };
        // The producer: full, so it asks, and waits until there is room.
        block_on(poll_fn(|cx| loop {
            if !flag.arm(|| len.load(Ordering::Acquire) == 1) {
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
