//! Loom models of a thread's trace log (`log.rs`): the owner records without a
//! lock while write-outs drain its chunk under the hand-off lock, and it hands
//! off full chunks under that lock. Every event must be read exactly once, in
//! the order it was recorded, and loom checks that no slot is read while it is
//! written.

use super::log::{chunk, Log};
use crate::loom::{lock, thread, Arc, Mutex};

/// The owner's side: pushes `events`, handing off full chunks (capacity
/// `cap`) into `sink` under its lock, as `buffer::hand_off` does.
fn record(log: &Log<u64>, sink: &Mutex<Vec<u64>>, events: &[u64], cap: usize) {
    for &e in events {
        // SAFETY: this thread is the log's only owner.
        if unsafe { log.push(e) } {
            continue;
        }
        let mut s = lock(sink);
        // SAFETY: owner, holding the hand-off lock.
        let full = unsafe { log.hand_off(chunk(cap)) };
        s.extend(full.events());
        drop(s);
        // SAFETY: owner; the fresh chunk has room.
        assert!(unsafe { log.push(e) });
    }
}

/// A write-out: drains what is published, under the lock.
fn drain(log: &Log<u64>, sink: &Mutex<Vec<u64>>) {
    let mut s = lock(sink);
    // SAFETY: holding the hand-off lock.
    unsafe { log.take(|e| s.push(e)) };
}

fn model(f: impl Fn() + Sync + Send + 'static) {
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(3);
    b.check(f);
}

#[test]
fn loom_trace_log_reads_every_event_once_across_a_hand_off() {
    model(|| {
        let log = Arc::new(Log::new(chunk::<u64>(2)));
        let sink = Arc::new(Mutex::new(Vec::new()));
        let owner = {
            let (log, sink) = (Arc::clone(&log), Arc::clone(&sink));
            thread::spawn(move || record(&log, &sink, &[1, 2, 3], 2))
        };
        drain(&log, &sink);
        owner.join().unwrap();
        // The final write-out, after the owner stopped (or exited).
        drain(&log, &sink);
        assert_eq!(*lock(&*sink), [1, 2, 3]);
    });
}

#[test]
fn loom_trace_log_two_write_outs_race_the_owner() {
    model(|| {
        let log = Arc::new(Log::new(chunk::<u64>(4)));
        let sink = Arc::new(Mutex::new(Vec::new()));
        let writer = {
            let (log, sink) = (Arc::clone(&log), Arc::clone(&sink));
            thread::spawn(move || {
                drain(&log, &sink);
                drain(&log, &sink);
            })
        };
        record(&log, &sink, &[1, 2, 3], 4);
        writer.join().unwrap();
        drain(&log, &sink);
        assert_eq!(*lock(&*sink), [1, 2, 3]);
    });
}
