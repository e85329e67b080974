//! Loom model of a sender's credits (`credit.rs`).

use std::future::poll_fn;
use std::sync::Arc;
use std::task::Poll;

use super::credit::Flow;
use crate::loom::thread;
use crate::test_util::loom::block_on;

/// A sender that finds its window spent and a credit arriving at the same
/// time: the sender either takes the credit or is woken to take it (a lost
/// wake-up leaves it waiting for ever, which loom reports).
#[test]
fn a_credit_always_reaches_a_waiting_sender() {
    loom::model(|| {
        let flow = Arc::new(Flow::new(1));
        assert!(flow.try_take());
        let giver = {
            let flow = Arc::clone(&flow);
            thread::spawn(move || flow.credit(1))
        };
        block_on(poll_fn(|cx| {
            if flow.take_or_wait(cx.waker()) {
                Poll::Ready(())
            } else {
                Poll::Pending
            }
        }));
        giver.join().unwrap();
        assert_eq!(flow.credits(), 0);
    });
}

/// Two senders wait on a spent window of two; two credits come back one at a
/// time: both senders get one (each credit wakes every waiter, which take
/// them in turn).
#[test]
fn returned_credits_reach_every_waiting_sender() {
    loom::model(|| {
        let flow = Arc::new(Flow::new(2));
        assert!(flow.try_take() && flow.try_take());
        let other = {
            let flow = Arc::clone(&flow);
            thread::spawn(move || {
                block_on(poll_fn(|cx| {
                    if flow.take_or_wait(cx.waker()) {
                        Poll::Ready(())
                    } else {
                        Poll::Pending
                    }
                }))
            })
        };
        let giver = {
            let flow = Arc::clone(&flow);
            thread::spawn(move || {
                flow.credit(1);
                flow.credit(1);
            })
        };
        block_on(poll_fn(|cx| {
            if flow.take_or_wait(cx.waker()) {
                Poll::Ready(())
            } else {
                Poll::Pending
            }
        }));
        other.join().unwrap();
        giver.join().unwrap();
    });
}
