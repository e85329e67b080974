//! A shared-memory mailbox whose slots other processes write: fragments
//! pushed by ranks in any order and with any flags, slots' control words
//! overwritten by a hostile process, frames reassembled and delivered to a
//! rank. Whatever the ring holds, the reader reads on or stops with an
//! error naming the cause (where a real system goes down), never a panic
//! or an out-of-bounds read.
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use tutti::fuzzing::{shm_mailbox, MailboxOp};
use tutti_fuzz::{limited, names_a_cause, Counting};

#[global_allocator]
static ALLOC: Counting = Counting;

#[derive(Arbitrary, Debug)]
enum Op {
    Push { from: u8, flags: u8, bytes: Vec<u8> },
    Scribble { slot: u8, seq: u64, meta: u64 },
    Drain,
}

fuzz_target!(|ops: Vec<Op>| {
    let len: usize = ops
        .iter()
        .map(|o| match o {
            Op::Push { bytes, .. } => bytes.len() + 8,
            _ => 24,
        })
        .sum();
    let ops: Vec<MailboxOp> = ops
        .into_iter()
        .map(|o| match o {
            Op::Push { from, flags, bytes } => MailboxOp::Push {
                from: from % 4,
                flags,
                bytes,
            },
            Op::Scribble { slot, seq, meta } => MailboxOp::Scribble { slot, seq, meta },
            Op::Drain => MailboxOp::Drain,
        })
        .collect();
    if let Err(e) = limited(len, || shm_mailbox(&ops)) {
        names_a_cause(&e);
    }
});
