//! Loom models of the mailbox ring (`ring.rs`): slot hand-over between
//! producers and the consumer (claim, commit, helping a claimant move the
//! tail), the futex sleep/wake, the reclaim of a slot whose producer
//! died between claim and commit; the end of a large body's loan
//! (`loan.rs`); and the receiving thread's doze against a worker leaving
//! the futex (`backstop.rs`).

use super::ring::{Ring, FIRST, LAST};
use crate::loom::{thread, Arc};

/// Runs `f` as a loom model exploring at most `bound` preemptions.
fn model(bound: usize, f: impl Fn() + Sync + Send + 'static) {
    let mut model = loom::model::Builder::new();
    model.preemption_bound = Some(bound);
    model.check(f);
}

/// Pushes each of `fragments` from producer `from`, retrying (yielding) while
/// the ring is full.
fn push_all<const N: usize>(ring: &Ring<N, 4>, from: usize, fragments: &[&[u8]]) {
    for b in fragments {
        while ring.push(from, FIRST | LAST, b).unwrap() != super::ring::Push::Done {
            thread::yield_now();
        }
    }
}

/// Takes `n` fragments, calling `idle` whenever the ring is empty.
fn drain(ring: &Ring<2, 4>, n: usize, idle: impl Fn(&Ring<2, 4>)) -> Vec<(usize, Vec<u8>)> {
    let mut got = Vec::new();
    while got.len() < n {
        let mut buf = Vec::new();
        match ring.pop(&mut buf, 4).expect("a well-formed ring") {
            Some(f) => got.push((f.from, buf)),
            None => idle(ring),
        }
    }
    got
}

/// Consumes `n` fragments, sleeping on the futex whenever the ring is empty
/// (a lost wake-up blocks for ever, which loom reports).
fn consume(ring: &Ring<2, 4>, n: usize) -> Vec<(usize, Vec<u8>)> {
    drain(ring, n, |r| r.sleep(std::time::Duration::from_secs(1)))
}

/// Two producers race for one two-slot ring while the consumer sleeps and
/// wakes: every fragment arrives once, intact, in each producer's order, and
/// no wake-up is lost (the model's futex has no timeout). Bound 3 reaches
/// the consumer preempted between its look at the ring and its mark while
/// both producers commit.
#[test]
fn two_producers_one_sleeping_consumer_lose_nothing() {
    model(3, || {
        let ring = Arc::new(Ring::<2, 4>::boxed());
        let mut hs = Vec::new();
        for from in 1..=2usize {
            let r = Arc::clone(&ring);
            hs.push(thread::spawn(move || {
                push_all(&r, from, &[&[from as u8; 3]]);
            }));
        }
        let mut got = consume(&ring, 2);
        for h in hs {
            h.join().unwrap();
        }
        got.sort();
        assert_eq!(got, vec![(1, vec![1; 3]), (2, vec![2; 3])]);
    });
}

/// One producer fills the ring past its size while the consumer drains it:
/// `Full` is only reported while unread fragments occupy every slot, and the
/// fragments arrive in order.
#[test]
fn a_producer_lapping_the_ring_keeps_order() {
    model(2, || {
        let ring = Arc::new(Ring::<2, 4>::boxed());
        let r = Arc::clone(&ring);
        let p = thread::spawn(move || push_all(&r, 1, &[&[0], &[1], &[2]]));
        let got = consume(&ring, 3);
        p.join().unwrap();
        assert_eq!(got, vec![(1, vec![0]), (1, vec![1]), (1, vec![2])]);
    });
}

/// A producer claims a slot and dies (never commits) while another producer
/// pushes two fragments; once the death is known the consumer reclaims the
/// dead producer's slot: the live producer's fragments all arrive, in order,
/// intact, whichever of the two claimed first, and its pushes never see a
/// corrupt ring.
#[test]
fn a_dead_claimant_is_reclaimed_and_the_live_producer_loses_nothing() {
    model(2, || {
        let ring = Arc::new(Ring::<4, 4>::boxed());
        let r = Arc::clone(&ring);
        let dead = thread::spawn(move || {
            assert!(r.claim_and_die(3).is_some(), "a four-slot ring has room");
        });
        let r = Arc::clone(&ring);
        let live = thread::spawn(move || push_all(&r, 1, &[&[0], &[1]]));
        // The death is known (the process is gone) only after it happened.
        dead.join().unwrap();
        let mut got = Vec::new();
        let mut reclaimed = 0;
        while got.len() < 2 {
            let mut buf = Vec::new();
            match ring.pop(&mut buf, 4).expect("a well-formed ring") {
                Some(f) => got.push((f.from, buf)),
                None => match ring.stalled() {
                    Some(3) => {
                        assert!(ring.reclaim(3).is_some());
                        reclaimed += 1;
                    }
                    _ => thread::yield_now(),
                },
            }
        }
        live.join().unwrap();
        // The dead claim may also have come after both live fragments.
        if ring.stalled() == Some(3) {
            assert!(ring.reclaim(3).is_some());
            reclaimed += 1;
        }
        assert_eq!(reclaimed, 1);
        assert_eq!(got, vec![(1, vec![0]), (1, vec![1])]);
        let mut buf = Vec::new();
        assert!(ring.pop(&mut buf, 4).unwrap().is_none());
    });
}

/// Polls (never sleeps) until `n` fragments arrived.
fn poll(ring: &Ring<2, 4>, n: usize) -> Vec<(usize, Vec<u8>)> {
    drain(ring, n, |_| thread::yield_now())
}

/// A waiting location spins on the slot at the head (`ready`, then `pop`)
/// while two producers gather their fragments from two parts each: every
/// fragment arrives once and whole, and since a spinning consumer never
/// marks the slot, no producer bumps the futex word (no wake-up system
/// call while the consumer spins).
#[test]
fn a_spinning_consumer_costs_its_producers_no_wake_up() {
    model(3, || {
        let ring = Arc::new(Ring::<2, 4>::boxed());
        let mut hs = Vec::new();
        for from in 1..=2usize {
            let r = Arc::clone(&ring);
            hs.push(thread::spawn(move || {
                let (head, body) = ([from as u8], [from as u8 + 10; 2]);
                while r
                    .push_with(from, FIRST | LAST, &[&head, &body], || {})
                    .unwrap()
                    != super::ring::Push::Done
                {
                    thread::yield_now();
                }
            }));
        }
        let mut got = Vec::new();
        while got.len() < 2 {
            if !ring.ready() {
                thread::yield_now();
                continue;
            }
            let mut buf = Vec::new();
            if let Some(f) = ring.pop(&mut buf, 4).expect("a well-formed ring") {
                got.push((f.from, buf));
            }
        }
        for h in hs {
            h.join().unwrap();
        }
        got.sort();
        assert_eq!(got, vec![(1, vec![1, 11, 11]), (2, vec![2, 12, 12])]);
        assert_eq!(
            ring.wakes(),
            0,
            "a producer woke a consumer that was spinning"
        );
    });
}

/// Two sleepers on one ring (the receiving thread and a parked worker) and
/// one producer: whichever sleeper goes first, leaves first or finds the
/// fragment, neither undoes the other's announcement, so the producer's
/// wake-up reaches every sleeper and both see the fragment.
#[test]
fn two_sleepers_are_both_woken() {
    model(3, || {
        let ring = Arc::new(Ring::<2, 4>::boxed());
        let r = Arc::clone(&ring);
        let other = thread::spawn(move || {
            while !r.ready() {
                r.sleep(std::time::Duration::from_secs(1));
            }
        });
        let r = Arc::clone(&ring);
        let p = thread::spawn(move || push_all(&r, 1, &[&[7]]));
        while !ring.ready() {
            ring.sleep(std::time::Duration::from_secs(1));
        }
        other.join().unwrap();
        p.join().unwrap();
        let got = poll(&ring, 1);
        assert_eq!(got, vec![(1, vec![7])]);
    });
}

/// A parked worker sleeps on the ring unless its waker cleared its parked
/// flag; the waker clears it and nudges: the worker never sleeps on.
#[test]
fn a_nudge_after_unparking_is_never_lost() {
    use crate::loom::{AtomicBool, Ordering};
    model(3, || {
        let ring = Arc::new(Ring::<2, 4>::boxed());
        let parked = Arc::new(AtomicBool::new(true));
        let (r, p) = (Arc::clone(&ring), Arc::clone(&parked));
        let waker = thread::spawn(move || {
            p.store(false, Ordering::Release);
            r.nudge();
        });
        while parked.load(Ordering::Acquire) {
            ring.sleep_unless(std::time::Duration::from_secs(1), &|| {
                parked.load(Ordering::Acquire)
            });
        }
        waker.join().unwrap();
    });
}

/// Two producers race for the same position, with a pause between claim and
/// commit: one wins the claim, the other helps it move the tail and takes
/// the next position; each fragment arrives once, intact.
#[test]
fn a_claim_is_exclusive_and_helped_past() {
    model(3, || {
        let ring = Arc::new(Ring::<2, 4>::boxed());
        let mut hs = Vec::new();
        for from in 1..=2usize {
            let r = Arc::clone(&ring);
            hs.push(thread::spawn(move || {
                let b = [from as u8; 2];
                let pushed = r
                    .push_with(from, FIRST | LAST, &[&b], thread::yield_now)
                    .unwrap();
                assert_eq!(pushed, super::ring::Push::Done);
            }));
        }
        let mut got = consume(&ring, 2);
        for h in hs {
            h.join().unwrap();
        }
        got.sort();
        assert_eq!(got, vec![(1, vec![1; 2]), (2, vec![2; 2])]);
    });
}

/// Two producers lap a two-slot ring (three fragments) while the consumer
/// drains it: a producer with a stale position never claims over a later
/// lap's claim, so every fragment arrives once, intact, each producer's in
/// its order.
#[test]
fn producers_lapping_the_ring_never_claim_over_a_later_lap() {
    let mut model = loom::model::Builder::new();
    // Three threads, three laps' worth of retries: bound 1 keeps the model
    // within CI's time (bound 2 runs for many minutes).
    model.preemption_bound = Some(1);
    // Producers finding the ring full and the consumer finding it empty
    // retry (yielding): more branches than the default allows.
    model.max_branches = 100_000;
    model.check(|| {
        let ring = Arc::new(Ring::<2, 4>::boxed());
        let mut hs = Vec::new();
        for (from, count) in [(1usize, 2u8), (2, 1)] {
            let r = Arc::clone(&ring);
            hs.push(thread::spawn(move || {
                let fragments: Vec<[u8; 1]> = (0..count).map(|i| [i]).collect();
                let fragments: Vec<&[u8]> = fragments.iter().map(|f| &f[..]).collect();
                push_all(&r, from, &fragments);
            }));
        }
        let got = poll(&ring, 3);
        for h in hs {
            h.join().unwrap();
        }
        let ones: Vec<_> = got.iter().filter(|g| g.0 == 1).cloned().collect();
        assert_eq!(ones, vec![(1, vec![0]), (1, vec![1])]);
        assert!(got.contains(&(2, vec![0])));
    });
}

mod member {
    use super::super::member::{StateWord, DEAD, JOINING, READY};
    use super::model;
    use crate::loom::{thread, Arc, AtomicU64, Ordering};

    /// A process claims a dead rank (noticing the death itself first) and
    /// publishes READY while a survivor, slow, buries the incarnation it
    /// knew: whatever the interleaving, the newcomer stays READY. Without
    /// the incarnation tag in the state word the survivor's READY → DEAD
    /// exchange succeeds on the newcomer's READY (an ABA).
    #[test]
    fn a_survivor_never_buries_the_newcomer() {
        model(3, || {
            let state = Arc::new(StateWord::new(READY, 1));
            let incarnation = Arc::new(AtomicU64::new(1));
            let claimer = {
                let (state, incarnation) = (Arc::clone(&state), Arc::clone(&incarnation));
                thread::spawn(move || {
                    state.bury(incarnation.load(Ordering::Acquire));
                    let mine = state
                        .claim(DEAD, &incarnation)
                        .expect("the dead rank is free to take");
                    state.set(JOINING, mine);
                    state.set(READY, mine);
                    mine
                })
            };
            state.bury(1);
            let mine = claimer.join().unwrap();
            assert_eq!(mine, 2);
            assert_eq!(state.get(), READY, "the survivor buried the newcomer");
        });
    }

    /// Two processes claim the same dead rank: exactly one wins, and the
    /// incarnation grows by one.
    #[test]
    fn two_claimers_one_winner() {
        model(3, || {
            let state = Arc::new(StateWord::new(DEAD, 1));
            let incarnation = Arc::new(AtomicU64::new(1));
            let claim = || {
                let (state, incarnation) = (Arc::clone(&state), Arc::clone(&incarnation));
                thread::spawn(move || {
                    let won = state.claim(DEAD, &incarnation);
                    if let Some(i) = won {
                        state.set(JOINING, i);
                    }
                    won
                })
            };
            let (a, b) = (claim(), claim());
            let won: Vec<u64> = [a.join().unwrap(), b.join().unwrap()]
                .into_iter()
                .flatten()
                .collect();
            assert_eq!(won, [2]);
            assert_eq!(incarnation.load(Ordering::Relaxed), 2);
            assert_eq!(state.get(), JOINING);
        });
    }
}

mod loan {
    use super::super::loan::{end, ended, next};
    use super::model;
    use crate::loom::{thread, Arc, AtomicU64, Ordering, UnsafeCell};

    /// What the sender and the receiver share in the model: the lent body
    /// (one word of the sender's memory), the ring's hand-over of the
    /// descriptor (its sequence number), and the receiver's loan word.
    struct Shared {
        body: UnsafeCell<u64>,
        posted: AtomicU64,
        copied: AtomicU64,
    }

    // SAFETY: `body` is written by the sender only while no loan is open and
    // read by the receiver only during one; loom checks exactly that.
    unsafe impl Sync for Shared {}

    /// Two loans in a row, the first copied, the second refused: the
    /// receiver's copy reads the value lent (never the next one the sender
    /// writes after the loan ended), the sender learns each outcome, and the
    /// numbers follow one another. A Relaxed end or look is a data race loom
    /// reports.
    #[test]
    fn the_copy_happens_before_the_sender_reuses_the_body() {
        model(3, || {
            let s = Arc::new(Shared {
                body: UnsafeCell::new(0),
                posted: AtomicU64::new(0),
                copied: AtomicU64::new(0),
            });
            let receiver = {
                let s = Arc::clone(&s);
                thread::spawn(move || {
                    let mut got = Vec::new();
                    for (seq, copy) in [(1u64, true), (2, false)] {
                        while s.posted.load(Ordering::Acquire) < seq {
                            thread::yield_now();
                        }
                        assert_eq!(next(&s.copied), seq);
                        if copy {
                            // SAFETY: loan `seq` is open: the sender does not write.
                            got.push(s.body.with(|p| unsafe { *p }));
                        }
                        end(&s.copied, seq, copy);
                    }
                    got
                })
            };
            let mut outcomes = Vec::new();
            for value in [10u64, 20] {
                let seq = next(&s.copied);
                // SAFETY: no loan is open (the previous one ended).
                s.body.with_mut(|p| unsafe { *p = value });
                s.posted.store(seq, Ordering::Release);
                let copied = loop {
                    if let Some(c) = ended(&s.copied, seq) {
                        break c;
                    }
                    thread::yield_now();
                };
                outcomes.push(copied);
            }
            // SAFETY: every loan has ended.
            s.body.with_mut(|p| unsafe { *p = 30 });
            assert_eq!(receiver.join().unwrap(), [10]);
            assert_eq!(outcomes, [true, false]);
        });
    }
}

/// The receiving thread's doze against the worker leaving the futex
/// (`backstop.rs`): the thread either does not doze or is woken by the
/// worker's bell — the model's bell (a counter and a condvar, like an
/// eventfd: a ring before the wait leaves it readable) has no timeout, so a
/// lost ring blocks for ever and loom reports it. Twice in a row, so that a
/// ring left over from the first round cannot hide a lost one in the second
/// (the thread empties the bell after each doze, as the engine does).
#[test]
fn a_worker_leaving_the_futex_ends_the_doze() {
    use super::backstop::Backstop;
    use crate::loom::{lock, Condvar, Mutex};
    struct Bell {
        rung: Mutex<u32>,
        cond: Condvar,
    }
    model(3, || {
        let backstop = Arc::new(Backstop::new());
        let bell = Arc::new(Bell {
            rung: Mutex::new(0),
            cond: Condvar::new(),
        });
        for _ in 0..2 {
            backstop.worker_blocks();
            let worker = {
                let (backstop, bell) = (Arc::clone(&backstop), Arc::clone(&bell));
                thread::spawn(move || {
                    if backstop.worker_leaves() {
                        *lock(&bell.rung) += 1;
                        bell.cond.notify_all();
                    }
                })
            };
            backstop.doze(|| {
                let mut rung = lock(&bell.rung);
                while *rung == 0 {
                    rung = bell.cond.wait(rung).unwrap();
                }
            });
            worker.join().unwrap();
            // Emptied after the doze, as `sys::drain` does (here once the
            // worker's ring, if any, is in).
            *lock(&bell.rung) = 0;
            assert!(!backstop.hooked());
        }
    });
}
