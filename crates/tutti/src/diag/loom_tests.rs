//! Loom models of the node protocols (`node.rs`) the detector (`detect.rs`) relies on:
//! the state word's double collect, the failure handed to a blocked waiter, and the
//! `WAITING` count. Each runs the real `Node` code (its atomics and locks come from the
//! `crate::loom` shim); a model thread plays the worker polling the node, another (or
//! the model's main thread) plays the detector.

use std::sync::Arc;
use std::task::{Wake, Waker};

use super::node::{self, Node, On, Wait, What, BLOCKED, IDLE};
use super::report::Deadlock;
use crate::loom::{thread, AtomicBool, Ordering};

/// A waker that records that it was woken (the scheduler would poll the task again;
/// Release/Acquire as the task state's hand-off). Set and taken with read-modify-writes
/// only: loom 0.7 can let a plain store fall inside a concurrent RMW
/// (tokio-rs/loom#254), which would lose a wake no scheduler loses.
struct Woken(AtomicBool);

impl Wake for Woken {
    fn wake(self: Arc<Self>) {
        self.0.swap(true, Ordering::AcqRel);
    }
}

impl Woken {
    fn new() -> (Arc<Woken>, Waker) {
        let w = Arc::new(Woken(AtomicBool::new(false)));
        let waker = Waker::from(Arc::clone(&w));
        (w, waker)
    }

    /// Whether a wake came since the last call.
    fn take(&self) -> bool {
        self.0.swap(false, Ordering::AcqRel)
    }
}

fn on(id: u64) -> Wait {
    Wait {
        on: On::Node(id),
        what: What::Text("waits in a model"),
    }
}

/// What the node's future does in one poll.
enum Op {
    /// A blocking operation still waiting on this: it takes a failure handed to it (and
    /// fails), or notes the wait and stays pending.
    Wait(Wait),
    /// A blocking operation that finds its answer now: it takes a failure handed to it
    /// (and fails) or completes.
    Ends,
    /// No blocking operation: the node waits for work (an actor's empty mailbox).
    Idle,
}

/// One poll of `n` on this thread doing `op` (the node ends it pending: blocked if it
/// noted a wait, idle otherwise). Returns whether it took a failure.
fn poll(n: &Arc<Node>, op: Op, waker: &Waker) -> bool {
    let entered = n.enter();
    let failed = match op {
        Op::Wait(wait) => {
            let failed = node::take_failure().is_some();
            if !failed {
                node::note(|| wait, Some(waker));
            }
            failed
        }
        Op::Ends => node::take_failure().is_some(),
        Op::Idle => false,
    };
    entered.leave(true);
    failed
}

/// A node blocked on node 2 is polled again (woken, it blocks on node 3 instead) while
/// the detector collects its word twice and reads its wait in between. The detector
/// judges it stalled only if both collects read the same poll's word, and then the wait
/// it read is that poll's: a poll between the collects (even one that blocks again)
/// changes the word, so it is never judged stalled on a wait it has left.
#[test]
fn a_node_polled_between_the_collects_is_never_judged_stalled() {
    loom::model(|| {
        let (_, waker) = Woken::new();
        let n = Node::for_model(1);
        poll(&n, Op::Wait(on(2)), &waker);
        let first = n.word();
        let worker = {
            let (n, waker) = (Arc::clone(&n), waker.clone());
            thread::spawn(move || {
                poll(&n, Op::Wait(on(3)), &waker);
            })
        };
        // The detector: collect, read the wait, collect again.
        let w1 = n.word();
        let wait = n.wait().map(|w| w.on);
        let w2 = n.word();
        let judged = Node::state_of(w1) == BLOCKED && w1 == w2;
        worker.join().unwrap();
        let last = n.word();
        assert_ne!(
            first, last,
            "a poll that blocks again still changes the word"
        );
        assert_eq!(Node::state_of(last), BLOCKED);
        if judged {
            assert!(w1 == first || w1 == last);
            let want = if w1 == first { 2 } else { 3 };
            assert_eq!(
                wait,
                Some(On::Node(want)),
                "judged {w1:#x} on another poll's wait"
            );
        }
    });
}

/// The detector hands a failure to a node blocked on node 2 and wakes it, while the
/// node is woken by something else at the same time and polls (its wait goes on, or
/// ends: the answer came). The failure is taken at most once, by the judged wait; if no
/// poll takes it (the concurrent poll had passed its waiting operation: the judgement
/// is stale), it is not left for a later wait, and a node still blocked is blocked on a
/// word the detector has not judged, so the next scan judges it again: the failure is
/// never simply lost.
#[test]
fn a_failure_handed_to_a_waiter_is_taken_once_or_judged_again() {
    for answered in [false, true] {
        loom::model(move || failure_hand_off(answered));
    }
}

fn failure_hand_off(answered: bool) {
    let (woken, waker) = Woken::new();
    let n = Node::for_model(1);
    poll(&n, Op::Wait(on(2)), &waker);
    let judged = n.word();
    // What the node does in a poll after `taken` failures, its wait having ended or not.
    let next = move |taken: u32, ended: bool| {
        if taken > 0 || ended {
            Op::Idle
        } else {
            Op::Wait(on(2))
        }
    };
    let waiter = {
        let (n, woken, waker) = (Arc::clone(&n), Arc::clone(&woken), waker.clone());
        thread::spawn(move || {
            // Woken concurrently by something else: polls.
            let op = if answered { Op::Ends } else { Op::Wait(on(2)) };
            let mut taken = u32::from(poll(&n, op, &waker));
            // Woken by the detector meanwhile: polls again.
            if woken.take() {
                taken += u32::from(poll(&n, next(taken, answered), &waker));
            }
            taken
        })
    };
    n.fail(Arc::new(Deadlock::new(Vec::new(), Vec::new())));
    let mut taken = waiter.join().unwrap();
    // The detector's wake may land after the waiter's last look: the scheduler polls
    // once more.
    if woken.take() {
        taken += u32::from(poll(&n, next(taken, answered), &waker));
    }
    assert!(taken <= 1, "a failure was taken {taken} times");
    assert!(!n.has_failure(), "a failure was left for a later wait");
    if taken == 0 && !answered {
        let now = n.word();
        assert_eq!(Node::state_of(now), BLOCKED);
        assert_ne!(
            now, judged,
            "the lost failure's wait would not be judged again"
        );
    } else {
        assert_eq!(Node::state_of(n.word()), IDLE);
    }
}

/// `WAITING` follows the nodes' polls when they move between workers: a node blocked
/// with an edge on one worker counts once; its next poll on another worker (handed over
/// through the scheduler's Release/Acquire) ends idle and uncounts it; a node dropped
/// while blocked uncounts itself. The count never underflows or stays up.
#[test]
fn the_waiting_count_follows_polls_across_workers() {
    loom::model(|| {
        let (_, waker) = Woken::new();
        let n = Node::for_model(1);
        let queued = Arc::new(AtomicBool::new(false));
        let a = {
            let (n, queued, waker) = (Arc::clone(&n), Arc::clone(&queued), waker.clone());
            thread::spawn(move || {
                poll(&n, Op::Wait(on(2)), &waker);
                // Woken: the task goes to a queue another worker steals from.
                queued.store(true, Ordering::Release);
            })
        };
        let b = {
            let (n, queued, waker) = (Arc::clone(&n), Arc::clone(&queued), waker.clone());
            thread::spawn(move || {
                while !queued.load(Ordering::Acquire) {
                    thread::yield_now();
                }
                poll(&n, Op::Idle, &waker);
            })
        };
        // The detector looks meanwhile (no claim on what it sees).
        let _ = node::any_waiting();
        a.join().unwrap();
        b.join().unwrap();
        assert_eq!(Node::state_of(n.word()), IDLE);
        assert!(!node::any_waiting());
        // Blocked again, then dropped while blocked.
        poll(&n, Op::Wait(on(2)), &waker);
        assert!(node::any_waiting());
        drop(n);
        assert!(!node::any_waiting());
    });
}

/// A repeated note of the same wait takes no lock (`node.rs`, "The note's fast
/// path"), and a failure takes the waker out of the slot: the next note of that same
/// wait must put it back, so that a second failure still wakes the node. The node,
/// failed once and past it, blocks again on node 2 while the detector hands it a second
/// failure: the node takes it in that poll, or is woken for it, or (the failure
/// stale, see the model above) a failure of the next scan wakes it (N4).
#[test]
fn a_waker_taken_by_a_failure_is_noted_again() {
    loom::model(|| {
        let (woken, waker) = Woken::new();
        let n = Node::for_model(1);
        poll(&n, Op::Wait(on(2)), &waker);
        n.fail(Arc::new(Deadlock::new(Vec::new(), Vec::new())));
        assert!(woken.take());
        assert!(poll(&n, Op::Wait(on(2)), &waker), "the first failure");
        let waiter = {
            let (n, waker) = (Arc::clone(&n), waker.clone());
            thread::spawn(move || poll(&n, Op::Wait(on(2)), &waker))
        };
        n.fail(Arc::new(Deadlock::new(Vec::new(), Vec::new())));
        let taken = waiter.join().unwrap();
        if !taken && !woken.take() {
            // The poll ran past its look for a failure before the failure was set and
            // stored the waker after `fail` found none: the failure was stale at the
            // poll's end (and dropped), the node blocked again on a new word. The next
            // scan judges it again, and its failure must wake it.
            n.fail(Arc::new(Deadlock::new(Vec::new(), Vec::new())));
            assert!(woken.take(), "the node's waker was not noted again");
        }
    });
}

/// The wait's words are published with a sequence number (`node.rs`, N1–N2): a reader
/// racing two notes of different waits (a fence's, then a text's on another node) gets
/// none, or one of them whole — never the tag of one with the payload of the other.
#[test]
fn a_wait_is_read_whole_while_the_node_notes_another() {
    loom::model(|| {
        let (_, waker) = Woken::new();
        let n = Node::for_model(1);
        let worker = {
            let (n, waker) = (Arc::clone(&n), waker.clone());
            thread::spawn(move || {
                let fence = Wait {
                    on: On::World(7),
                    what: What::Fence(9),
                };
                poll(&n, Op::Wait(fence), &waker);
                poll(&n, Op::Wait(on(3)), &waker);
            })
        };
        let seen = n.wait();
        worker.join().unwrap();
        match seen {
            None => {}
            Some(Wait {
                on: On::World(7),
                what: What::Fence(9),
            }) => {}
            Some(Wait {
                on: On::Node(3),
                what: What::Text(t),
            }) => assert_eq!(t, "waits in a model"),
            Some(w) => panic!("a torn wait: {w:?}"),
        }
    });
}
