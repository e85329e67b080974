//! Loom models of the unbounded mailbox: the state word (`state.rs`) and the intrusive
//! queue (`queue.rs`) together, through [`Mailbox`], exactly as the actor loop uses them.
//!
//! The actor's task is modelled by a loom thread: "return `Pending`" is waiting on a
//! flag, "wake" sets the flag (a wake that comes while the task runs makes its next wait
//! return at once, like a task woken while running). A lost wake-up leaves the consumer
//! waiting for ever, which loom reports as a deadlock.

use std::ptr::NonNull;

use super::queue::Pop;
use super::state::Retired;
use super::Mailbox;
use crate::loom::{lock, thread, Arc, Condvar, Mutex};
use crate::msg::Link;

/// Runs a model with a preemption bound: enough to reach every interleaving of the
/// protocol's steps between two threads while keeping the models fast.
fn model(f: impl Fn() + Sync + Send + 'static) {
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(3);
    b.check(f);
}

#[repr(C)]
struct Node {
    link: Link,
    from: usize,
    seq: usize,
}

fn node(from: usize, seq: usize) -> NonNull<Link> {
    NonNull::from(Box::leak(Box::new(Node {
        link: Link::new(),
        from,
        seq,
    })))
    .cast()
}

/// Takes back a node the queue returned.
fn take(l: NonNull<Link>) -> Box<Node> {
    // SAFETY: every link in these models comes from `node`, and each is returned once.
    unsafe { Box::from_raw(l.cast::<Node>().as_ptr()) }
}

/// The actor's task, as far as waking is concerned.
struct Task {
    woken: Mutex<bool>,
    cond: Condvar,
}

impl Task {
    fn new() -> Task {
        Task {
            woken: Mutex::new(false),
            cond: Condvar::new(),
        }
    }

    fn wake(&self) {
        *lock(&self.woken) = true;
        self.cond.notify_one();
    }

    /// Returns `Pending` and waits to be polled again.
    fn park(&self) {
        let mut w = lock(&self.woken);
        while !*w {
            w = self.cond.wait(w).unwrap();
        }
        *w = false;
    }
}

struct Actor {
    mailbox: Mailbox,
    task: Task,
}

fn actor() -> Arc<Actor> {
    Arc::new(Actor {
        mailbox: Mailbox::new(),
        task: Task::new(),
    })
}

/// A producer's `tell`: reserve, push, wake if it found the actor idle.
fn tell(a: &Actor, from: usize, seq: usize) -> bool {
    match a.mailbox.offer(|| node(from, seq)) {
        None => false,
        Some(wake) => {
            if wake {
                a.task.wake();
            }
            true
        }
    }
}

/// The consumer: turns of popping until the mailbox is idle, then waiting to be woken,
/// until `expected` messages arrived. Checks per-producer order.
fn consume(a: &Actor, producers: usize, expected: usize) {
    let mut next = vec![0; producers];
    let mut got = 0;
    loop {
        loop {
            // SAFETY: this thread is the only consumer.
            match unsafe { a.mailbox.pop() } {
                Pop::Item(l) => {
                    let n = take(l);
                    assert_eq!(n.seq, next[n.from], "order of producer {}", n.from);
                    next[n.from] += 1;
                    got += 1;
                }
                // A push in flight: the task re-queues itself and comes back.
                Pop::Busy => thread::yield_now(),
                Pop::Empty => match a.mailbox.retire() {
                    Retired::Idle => break,
                    Retired::More => {}
                },
            }
        }
        if got == expected {
            return;
        }
        a.task.park();
    }
}

/// Two producers (one sending two messages) and the consumer: every message arrives
/// once, in order per producer, and the consumer is never left waiting with messages
/// queued (no lost wake-up), whatever the interleaving of reserve, push and retire.
#[test]
fn producers_and_consumer_lose_no_message_and_no_wake_up() {
    model(|| {
        let a = actor();
        let p0 = {
            let a = a.clone();
            thread::spawn(move || {
                assert!(tell(&a, 0, 0));
                assert!(tell(&a, 0, 1));
            })
        };
        let p1 = {
            let a = a.clone();
            thread::spawn(move || assert!(tell(&a, 1, 0)))
        };
        consume(&a, 2, 3);
        p0.join().unwrap();
        p1.join().unwrap();
        assert_eq!(a.mailbox.waiting(), 0);
    });
}

/// A consumer that went idle is woken by the next message, and again after a second
/// idle period (the stub is re-pushed and the queue wraps through it).
#[test]
fn idle_consumer_is_woken_twice() {
    model(|| {
        let a = actor();
        let p = {
            let a = a.clone();
            thread::spawn(move || {
                assert!(tell(&a, 0, 0));
                thread::yield_now();
                assert!(tell(&a, 0, 1));
            })
        };
        consume(&a, 1, 2);
        p.join().unwrap();
    });
}

/// The actor stops while a producer sends: the message is either handled, drained by
/// the close (so an asker would be told), or refused at reservation (given back) —
/// exactly one of the three, never lost, and the close never waits for ever.
#[test]
fn close_races_a_producer() {
    model(|| {
        let a = actor();
        let p = {
            let a = a.clone();
            thread::spawn(move || tell(&a, 0, 0))
        };
        let mut handled = 0;
        // One look at the mailbox, then the actor stops.
        // SAFETY: this thread is the only consumer.
        if let Pop::Item(l) = unsafe { a.mailbox.pop() } {
            drop(take(l));
            handled += 1;
        }
        let mut drained = 0;
        // SAFETY: as above; every link is a `Node`.
        unsafe {
            a.mailbox.close(|l| {
                drop(take(l));
                drained += 1;
            })
        };
        let accepted = p.join().unwrap();
        assert_eq!(handled + drained, usize::from(accepted));
        // After the close every send is refused.
        assert!(!tell(&a, 1, 0));
    });
}

/// A stop request (an interrupting system signal) racing a handler that suspends: the
/// consumer either sees the event when it marks itself `AWAITING`, or is woken by the
/// signal.
#[test]
fn interrupt_reaches_a_suspending_handler() {
    model(|| {
        let a = actor();
        let s = {
            let a = a.clone();
            thread::spawn(move || {
                if a.mailbox.state.signal(true) {
                    a.task.wake();
                }
            })
        };
        // A handler of the first turn returns Pending.
        if !a.mailbox.state.set_awaiting() {
            a.task.park();
        }
        assert!(a.mailbox.state.take_system(), "woken without the event");
        s.join().unwrap();
    });
}

/// A non-interrupting system event (a down notice) racing the consumer going idle: the
/// consumer either sees `SYSTEM` in its retire, or is woken by the signal.
#[test]
fn system_event_reaches_an_idle_consumer() {
    model(|| {
        let a = actor();
        let s = {
            let a = a.clone();
            thread::spawn(move || {
                if a.mailbox.state.signal(false) {
                    a.task.wake();
                }
            })
        };
        // The first turn finds nothing and retires the start token.
        loop {
            // SAFETY: this thread is the only consumer.
            match unsafe { a.mailbox.pop() } {
                Pop::Empty => {}
                other => panic!("unexpected {other:?}"),
            }
            match a.mailbox.retire() {
                Retired::Idle => a.task.park(),
                Retired::More => {}
            }
            if a.mailbox.state.take_system() {
                break;
            }
        }
        s.join().unwrap();
    });
}

/// The trace's mark (`Mailbox::last`, `diag/trace/chain.rs`): a consumer that loads
/// the mark, then takes a snapshot of what each producer did before its push (a
/// producer's clock reading, here a flag it sets before pushing), must find that done
/// for every message up to the mark, which it then pops in order: the turns on those
/// messages may share a reading taken after the mark. The mark may be one producer's
/// message with the other's before it: what that one did must be visible through the
/// later producer's swap.
#[test]
fn every_message_up_to_the_mark_was_sent_before_it() {
    use crate::loom::{AtomicBool, Ordering};
    model(|| {
        let a = actor();
        let read = Arc::new([AtomicBool::new(false), AtomicBool::new(false)]);
        // A producer's send: its reading, then the push (as in `tell`).
        let send = |a: &Actor, read: &[AtomicBool; 2], from: usize| {
            read[from].store(true, Ordering::Relaxed);
            assert!(tell(a, from, 0));
        };
        let producers: Vec<_> = (0..2)
            .map(|from| {
                let (a, read) = (a.clone(), read.clone());
                thread::spawn(move || send(&a, &read, from))
            })
            .collect();
        // One look at the mark, at any point of the producers' pushes.
        let mark = a.mailbox.last();
        let seen: Vec<bool> = read.iter().map(|r| r.load(Ordering::Relaxed)).collect();
        let mut got = 0;
        if mark != 0 {
            // Pop up to the mark: each was sent before the mark was loaded.
            loop {
                // SAFETY: this thread is the only consumer.
                match unsafe { a.mailbox.pop() } {
                    Pop::Item(l) => {
                        let n = take(l);
                        got += 1;
                        assert!(seen[n.from], "a message up to the mark sent after it");
                        if &*n as *const Node as usize == mark {
                            break;
                        }
                    }
                    Pop::Busy => thread::yield_now(),
                    Pop::Empty => panic!("the mark's message never came"),
                }
            }
        }
        for p in producers {
            p.join().unwrap();
        }
        // The rest, after the producers finished.
        while got < 2 {
            // SAFETY: as above.
            if let Pop::Item(l) = unsafe { a.mailbox.pop() } {
                drop(take(l));
                got += 1;
            }
        }
    });
}
