//! Loom models of the barrier phase protocol (module docs of `barrier.rs`): arrivals
//! racing each other, a resignation completing a phase, an enrollment during a phase, and
//! phases wrapping the (2-bit, under loom) phase number.

use super::*;
use crate::loom::{thread, AtomicUsize, Ordering};

use crate::test_util::loom::block_on;

/// Two parties sync once: both complete, and each sees the other's pre-barrier write.
#[test]
fn loom_two_parties_one_phase() {
    loom::model(|| {
        let b = Barrier::new();
        let data = Arc::new([AtomicUsize::new(0), AtomicUsize::new(0)]);
        let mut other = b.enroll();
        let mut me = b.enroll();
        let t = {
            let data = data.clone();
            thread::spawn(move || {
                data[1].store(1, Ordering::Relaxed);
                block_on(other.sync());
                assert_eq!(data[0].load(Ordering::Relaxed), 1);
            })
        };
        data[0].store(1, Ordering::Relaxed);
        block_on(me.sync());
        assert_eq!(data[1].load(Ordering::Relaxed), 1);
        t.join().unwrap();
    });
}

/// One party waits while the other resigns: the resignation completes the phase.
#[test]
fn loom_resign_completes_the_phase() {
    loom::model(|| {
        let b = Barrier::new();
        let quitter = b.enroll();
        let mut me = b.enroll();
        let t = thread::spawn(move || drop(quitter));
        block_on(me.sync());
        t.join().unwrap();
        assert_eq!(b.enrolled(), 1);
    });
}

/// A party enrolls a newcomer during the phase (occam `PAR … ENROLL`) while another party
/// waits: the phase completes only once all three have arrived or resigned.
#[test]
fn loom_enroll_during_a_phase() {
    loom::model(|| {
        let b = Barrier::new();
        let mut waiter = b.enroll();
        let mut parent = b.enroll();
        let released = Arc::new(AtomicUsize::new(0));
        let t = {
            let released = released.clone();
            thread::spawn(move || {
                block_on(waiter.sync());
                released.fetch_add(1, Ordering::Relaxed);
            })
        };
        let newcomer = parent.barrier().enroll();
        let arrival = parent.arrive();
        drop(arrival); // stays arrived
                       // The newcomer has not arrived: nobody can have been released.
        assert_eq!(released.load(Ordering::Relaxed), 0);
        drop(newcomer); // resigns: completes the phase
        t.join().unwrap();
        assert_eq!(released.load(Ordering::Relaxed), 1);
    });
}

/// Two parties run five phases, one of them with non-blocking arrivals: the 2-bit phase
/// number wraps, and both waiter lists are reused. Bounded to two preemptions: the full
/// space of five phases is too large to explore.
#[test]
fn loom_phases_wrap() {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(2);
    builder.check(|| {
        let b = Barrier::new();
        let mut a = b.enroll();
        let mut c = b.enroll();
        let t = thread::spawn(move || {
            for _ in 0..5 {
                block_on(a.sync());
            }
        });
        for _ in 0..5 {
            let arrival = c.arrive();
            block_on(arrival);
        }
        t.join().unwrap();
    });
}

/// A completion waits while the other party arrives concurrently: the arrival that
/// leaves it last wakes it (or it sees the arrival itself), and it completes the phase.
#[test]
fn loom_completion_is_not_lost() {
    loom::model(|| {
        let b = Barrier::new();
        let mut other = b.enroll();
        let mut me = b.enroll();
        let t = thread::spawn(move || block_on(other.sync()));
        block_on(me.complete());
        t.join().unwrap();
    });
}

/// A completion and a resignation race: the resignation leaves the completion last.
#[test]
fn loom_completion_after_a_resignation() {
    loom::model(|| {
        let b = Barrier::new();
        let quitter = b.enroll();
        let mut other = b.enroll();
        let mut me = b.enroll();
        let t = thread::spawn(move || drop(quitter));
        let arrival = other.arrive();
        block_on(me.complete());
        assert!(arrival.is_complete());
        t.join().unwrap();
    });
}
