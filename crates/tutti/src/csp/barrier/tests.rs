//! Barrier tests: phases with many parties (tasks and threads mixed), enrollment and
//! resignation during a phase, non-blocking arrivals, dropped arrivals.

use crate::loom::{AtomicBool, AtomicUsize, Ordering};
use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use super::*;

use crate::test_util::counting_waker as counter;

fn poll<F: Future>(f: std::pin::Pin<&mut F>, w: &Waker) -> Poll<F::Output> {
    f.poll(&mut Context::from_waker(w))
}

const TASKS: usize = 64;
const THREADS: usize = 4;
const PHASES: usize = 50;

/// Tasks and threads share phases: after each sync, every party sees every other party's
/// writes of the previous phase (no party runs ahead).
#[test]
fn phases_with_tasks_and_threads() {
    let b = Barrier::new();
    let parties = TASKS + THREADS;
    let arrived: Arc<Vec<AtomicUsize>> =
        Arc::new((0..PHASES).map(|_| AtomicUsize::new(0)).collect());
    let check = |arrived: &Vec<AtomicUsize>, phase: usize| {
        arrived[phase].fetch_add(1, Ordering::Relaxed);
    };
    // Enroll everyone before anyone runs: a party enrolled later would only count from
    // the phase under way when it enrolled.
    let mut enrollments: Vec<_> = (0..parties).map(|_| b.enroll()).collect();
    let mut tasks = Vec::new();
    for _ in 0..TASKS {
        let mut me = enrollments.pop().unwrap();
        let arrived = arrived.clone();
        tasks.push(crate::runtime::spawn(async move {
            for phase in 0..PHASES {
                check(&arrived, phase);
                me.sync().await;
                assert_eq!(arrived[phase].load(Ordering::Relaxed), parties);
            }
        }));
    }
    let mut threads = Vec::new();
    for _ in 0..THREADS {
        let mut me = enrollments.pop().unwrap();
        let arrived = arrived.clone();
        threads.push(std::thread::spawn(move || {
            for phase in 0..PHASES {
                check(&arrived, phase);
                me.sync_blocking();
                assert_eq!(arrived[phase].load(Ordering::Relaxed), parties);
            }
        }));
    }
    for t in tasks {
        t.join();
    }
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(b.enrolled(), 0);
}

/// A lone party's sync completes at once; a newcomer enrolled while another party waits
/// holds that phase up until it syncs too.
#[test]
fn newcomer_holds_the_current_phase() {
    let b = Barrier::new();
    let mut a = b.enroll();
    let mut c = b.enroll();
    let (woken, w) = counter();
    let mut sa = pin!(a.sync());
    assert!(poll(sa.as_mut(), &w).is_pending());
    let mut newcomer = b.enroll(); // during the phase
    c.sync_blocking_free(); // c arrives; the phase still waits for the newcomer
    assert_eq!(woken.0.load(Ordering::SeqCst), 0);
    assert!(poll(sa.as_mut(), &w).is_pending());
    let arrival = newcomer.arrive(); // the last: completes the phase
    assert!(arrival.is_complete());
    assert_eq!(woken.0.load(Ordering::SeqCst), 1);
    assert!(poll(sa.as_mut(), &w).is_ready());
}

impl Enrollment {
    /// Arrives without waiting (the test drives the others by hand).
    fn sync_blocking_free(&mut self) {
        drop(self.arrive());
    }
}

/// A resignation of the last missing party completes the phase for the others; one of a
/// party that had arrived does not count it again.
#[test]
fn resign_during_a_phase() {
    let b = Barrier::new();
    let mut a = b.enroll();
    let quitter = b.enroll();
    let mut early = b.enroll();
    let (woken, w) = counter();
    early.sync_blocking_free(); // arrived, then resigns while the phase is open
    drop(early);
    assert_eq!(b.enrolled(), 2);
    let mut sa = pin!(a.sync());
    assert!(poll(sa.as_mut(), &w).is_pending());
    drop(quitter); // the last missing party resigns: the phase completes
    assert_eq!(woken.0.load(Ordering::SeqCst), 1);
    assert!(poll(sa.as_mut(), &w).is_ready());
    // `a` is alone now: its syncs complete at once.
    a.sync_blocking();
    assert_eq!(b.enrolled(), 1);
}

/// The non-blocking barrier: the last arrival releases everyone at once, before it awaits;
/// the others do work between arriving and awaiting.
#[test]
fn arrive_then_work_then_wait() {
    const N: usize = 16;
    let b = Barrier::new();
    let done_work = Arc::new(AtomicUsize::new(0));
    let parties: Vec<_> = (0..N).map(|_| b.enroll()).collect();
    let hs: Vec<_> = parties
        .into_iter()
        .map(|mut me| {
            let done_work = done_work.clone();
            crate::runtime::spawn(async move {
                for _ in 0..20 {
                    let arrival = me.arrive();
                    done_work.fetch_add(1, Ordering::Relaxed); // preparatory work
                    arrival.await;
                }
            })
        })
        .collect();
    for h in hs {
        h.join();
    }
    assert_eq!(done_work.load(Ordering::Relaxed), N * 20);
}

/// An arrival dropped before its phase completed stays counted; the party's next sync
/// waits for that phase and then arrives in the next.
#[test]
fn dropped_arrival_defers_the_next_one() {
    let b = Barrier::new();
    let mut a = b.enroll();
    let mut c = b.enroll();
    let (_w0, w) = counter();
    drop(a.arrive()); // a arrived in phase 0
    let mut again = pin!(a.sync());
    assert!(poll(again.as_mut(), &w).is_pending()); // deferred: phase 0 still open
    c.sync_blocking_free(); // c arrives in phase 0: completes it
                            // a's deferred sync arrives in phase 1 and waits for c.
    assert!(poll(again.as_mut(), &w).is_pending());
    c.sync_blocking_free(); // c arrives in phase 1: completes it
    assert!(poll(again.as_mut(), &w).is_ready());
}

/// Many tasks on a small runtime keep in step over many phases, with parties resigning
/// part-way: the others go on without them.
#[test]
fn resigning_part_way() {
    let rt = crate::runtime::Runtime::builder()
        .workers(2)
        .build()
        .unwrap();
    let b = Barrier::new();
    let hs: Vec<_> = (0..100)
        .map(|i| {
            let mut me = b.enroll();
            rt.spawn(async move {
                for _ in 0..(i % 10) * 5 {
                    me.sync().await;
                }
            })
        })
        .collect();
    for h in hs {
        rt.block_on(h);
    }
    assert_eq!(b.enrolled(), 0);
}

/// Threads enroll and resign concurrently with syncing threads: nothing hangs.
#[test]
fn enroll_resign_races() {
    let b = Barrier::new();
    let stop = Arc::new(AtomicBool::new(false));
    let syncers: Vec<_> = (0..3)
        .map(|_| {
            let mut me = b.enroll();
            std::thread::spawn(move || {
                for _ in 0..2000 {
                    me.sync_blocking();
                }
            })
        })
        .collect();
    let churn = {
        let b = b.clone();
        let stop = stop.clone();
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                let mut e = b.enroll();
                e.sync_blocking();
                drop(e);
                drop(b.enroll()); // enroll and resign at once
            }
        })
    };
    for s in syncers {
        s.join().unwrap();
    }
    stop.store(true, Ordering::Relaxed);
    churn.join().unwrap();
    assert_eq!(b.enrolled(), 0);
}

/// `complete` arrives only as the last party: while another party is missing it is
/// pending and has not arrived (the others' arrival does not complete the phase); the
/// arrival that leaves it last wakes it, and its poll completes the phase for everyone.
#[test]
fn complete_arrives_only_as_the_last_party() {
    let b = Barrier::new();
    let mut me = b.enroll();
    let mut first = b.enroll();
    let mut second = b.enroll();
    let (woken, w) = counter();
    {
        let mut c = pin!(me.complete());
        assert!(poll(c.as_mut(), &w).is_pending());
        let a1 = first.arrive();
        assert!(!a1.is_complete());
        assert_eq!(
            woken.0.load(Ordering::SeqCst),
            0,
            "two parties are still missing"
        );
        // Dropping the completion withdraws nothing: it had not arrived.
    }
    let mut c = pin!(me.complete());
    assert!(poll(c.as_mut(), &w).is_pending());
    let a2 = second.arrive();
    assert_eq!(
        woken.0.load(Ordering::SeqCst),
        1,
        "one party left: the completion is woken"
    );
    assert!(!a2.is_complete(), "the completion has not arrived yet");
    assert!(poll(c.as_mut(), &w).is_ready());
    assert!(a2.is_complete());
}

/// A losing `complete` arm in a selection leaves the party not arrived.
#[test]
fn a_losing_complete_arm_has_not_arrived() {
    let b = Barrier::new();
    let mut me = b.enroll();
    let mut other = b.enroll();
    // Polled first, not ready (`other` is missing); the timeout fires.
    let mut alt = crate::csp::Alt::new();
    let _arm = alt.future(me.complete());
    let mut alt = alt.timeout(std::time::Duration::from_millis(5));
    assert_eq!(alt.pri_select_blocking().index(), 1);
    drop(alt);
    let arrival = other.arrive();
    assert!(
        !arrival.is_complete(),
        "`me` did not arrive: the phase waits for it"
    );
    drop(arrival);
    // Now `me` is the last: the arm wins against a skip placed after it.
    let mut alt = crate::csp::Alt::new();
    let arm = alt.future(me.complete());
    let mut alt = alt.skip();
    assert_eq!(alt.pri_select_blocking().index(), arm.index());
}

/// A resignation that leaves the waiting completion last wakes it too; a completion
/// with an earlier arrival pending completes with that phase.
#[test]
fn resignation_wakes_and_pending_arrivals_complete() {
    let b = Barrier::new();
    let mut me = b.enroll();
    let quitter = b.enroll();
    let mut other = b.enroll();
    let arrival = other.arrive();
    let (woken, w) = counter();
    let mut c = pin!(me.complete());
    assert!(poll(c.as_mut(), &w).is_pending());
    drop(quitter);
    assert_eq!(woken.0.load(Ordering::SeqCst), 1);
    assert!(poll(c.as_mut(), &w).is_ready());
    assert!(arrival.is_complete());
    // An arrival dropped unfinished: `complete` waits for that phase, arriving no more.
    drop(me.arrive());
    let mut c = pin!(me.complete());
    assert!(poll(c.as_mut(), &w).is_pending());
    crate::runtime::block_on(other.sync());
    assert!(poll(c.as_mut(), &w).is_ready());
}

/// Threads: one party loops on `complete` against a stream of phases the others sync.
#[test]
fn complete_keeps_up_with_many_phases() {
    let b = Barrier::new();
    let mut me = b.enroll();
    let others: Vec<_> = (0..3).map(|_| b.enroll()).collect();
    let threads: Vec<_> = others
        .into_iter()
        .map(|mut e| {
            std::thread::spawn(move || {
                for _ in 0..PHASES {
                    e.sync_blocking();
                }
            })
        })
        .collect();
    for _ in 0..PHASES {
        me.complete().wait_blocking();
    }
    for t in threads {
        t.join().unwrap();
    }
}
