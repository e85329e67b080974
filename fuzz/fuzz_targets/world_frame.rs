//! Frames between ranks of a world (the MPI and shared-memory transports
//! hand every arriving frame to this path): hostile heads and bodies are
//! taken or rejected with an error naming the cause, never a panic, within
//! the allocation limit; batches built by the sending side read back as
//! they were sent.
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use tutti::fuzzing::{data_round_trip, world_frame};
use tutti_fuzz::{limited, names_a_cause, Counting};

#[global_allocator]
static ALLOC: Counting = Counting;

#[derive(Arbitrary, Debug)]
struct Input<'a> {
    to: u8,
    from: u8,
    body: Option<&'a [u8]>,
    head: &'a [u8],
    /// Sent as a batch and read back.
    msgs: Vec<Vec<u8>>,
    big: Option<Vec<u8>>,
    phase: u64,
}

fuzz_target!(|input: Input| {
    let len = input.head.len() + input.body.map_or(0, <[u8]>::len);
    let r = limited(len, || {
        world_frame(input.to.into(), input.from.into(), input.head, input.body)
    });
    if let Err(e) = r {
        names_a_cause(&e);
    }
    if input.msgs.is_empty() && input.big.is_none() {
        return;
    }
    let mut want = input.msgs.clone();
    want.extend(input.big.clone());
    let got = data_round_trip(&input.msgs, input.big, input.phase).expect("a built batch parses");
    assert_eq!(got, want);
});
