//! Loom models of the world's hand-written atomic protocol: the inbox's
//! producer/consumer wake-up (`inbox.rs`), used by every location's inbox and by
//! the MPI engine's outgoing and control queues.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use super::inbox::Mailslot;
use crate::loom::{thread, Arc};
use crate::test_util::loom::block_on;

/// Receives one item, registering the waker when the queue is empty.
struct Pop<'a>(&'a Mailslot<u32>);

impl Future for Pop<'_> {
    type Output = u32;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<u32> {
        match self.0.pop_or_register(cx.waker()) {
            Some(v) => Poll::Ready(v),
            None => Poll::Pending,
        }
    }
}

/// A producer racing a consumer that is about to wait: the item is either seen
/// by the consumer's second look or the consumer is woken (else loom reports the
/// consumer blocked for ever).
#[test]
fn a_push_racing_a_registration_is_never_lost() {
    loom::model(|| {
        let slot = Arc::new(Mailslot::<u32>::new());
        let p = Arc::clone(&slot);
        let producer = thread::spawn(move || p.push(7));
        assert_eq!(block_on(Pop(&slot)), 7);
        producer.join().unwrap();
    });
}

/// Two producers, one consumer taking both: each push either is seen or wakes.
/// (Three threads: bounded preemptions keep the model small.)
#[test]
fn two_producers_both_arrive() {
    let mut model = loom::model::Builder::new();
    model.preemption_bound = Some(2);
    model.check(|| {
        let slot = Arc::new(Mailslot::<u32>::new());
        let ps: Vec<_> = (1..=2)
            .map(|v| {
                let p = Arc::clone(&slot);
                thread::spawn(move || p.push(v))
            })
            .collect();
        let a = block_on(Pop(&slot));
        let b = block_on(Pop(&slot));
        assert_eq!(a + b, 3);
        for p in ps {
            p.join().unwrap();
        }
    });
}
