//! Frames of the cross-rank stall check (marks, confirmations and verdicts
//! between the ranks' detectors): a hostile payload, sequence number or
//! sender is taken or rejected with an error naming the cause, never a
//! panic, within the allocation limit.
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use tutti::fuzzing::stall_frame;
use tutti_fuzz::{limited, names_a_cause, Counting};

#[global_allocator]
static ALLOC: Counting = Counting;

#[derive(Arbitrary, Debug)]
struct Input<'a> {
    to: u8,
    from: u8,
    claimed: u8,
    code: u8,
    seq: u64,
    payload: &'a [u8],
}

fuzz_target!(|input: Input| {
    let r = limited(input.payload.len(), || {
        stall_frame(
            input.to.into(),
            input.from.into(),
            input.claimed.into(),
            u64::from(input.code % 8),
            input.seq,
            input.payload,
        )
    });
    if let Err(e) = r {
        names_a_cause(&e);
    }
});
