//! Loom models of the mailbox ring (`ring.rs`): slot hand-over between
//! producers and the consumer, and the futex sleep/wake.

use super::ring::{Ring, FIRST, LAST};
use crate::loom::{thread, Arc};

/// Consumes `n` fragments, sleeping on the futex whenever the ring is empty
/// (a lost wake-up blocks for ever, which loom reports).
fn consume(ring: &Ring<2, 4>, n: usize) -> Vec<(usize, Vec<u8>)> {
    let mut got = Vec::new();
    while got.len() < n {
        let mut buf = Vec::new();
        match ring.pop(&mut buf, 4).expect("a well-formed ring") {
            Some(f) => got.push((f.from, buf)),
            None => ring.sleep(std::time::Duration::from_secs(1)),
        }
    }
    got
}

/// Two producers race for one two-slot ring while the consumer sleeps and
/// wakes: every fragment arrives once, intact, in each producer's order.
#[test]
fn two_producers_one_sleeping_consumer_lose_nothing() {
    let mut model = loom::model::Builder::new();
    model.preemption_bound = Some(2);
    model.check(|| {
        let ring = Arc::new(Ring::<2, 4>::boxed());
        let mut hs = Vec::new();
        for from in 1..=2usize {
            let r = Arc::clone(&ring);
            hs.push(thread::spawn(move || {
                let b = [from as u8; 3];
                while r.push(from, FIRST | LAST, &b).unwrap() != super::ring::Push::Done {
                    thread::yield_now();
                }
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
    let mut model = loom::model::Builder::new();
    model.preemption_bound = Some(2);
    model.check(|| {
        let ring = Arc::new(Ring::<2, 4>::boxed());
        let r = Arc::clone(&ring);
        let p = thread::spawn(move || {
            for i in 0..3u8 {
                while r.push(1, FIRST | LAST, &[i]).unwrap() != super::ring::Push::Done {
                    thread::yield_now();
                }
            }
        });
        let got = consume(&ring, 3);
        p.join().unwrap();
        assert_eq!(got, vec![(1, vec![0]), (1, vec![1]), (1, vec![2])]);
    });
}
