//! The request/reply wire (RMI, distributed actors and RPC ask and answer
//! through it): hostile bytes from a peer with questions pending on it are
//! classified frame by frame; every rejection names its cause, the core's
//! answers to them decode, nothing allocates past the limit.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tutti::fuzzing::call_wire;
use tutti_fuzz::{limited, names_a_cause, Counting};

#[global_allocator]
static ALLOC: Counting = Counting;

fuzz_target!(|bytes: &[u8]| {
    let out = limited(bytes.len(), || call_wire(bytes));
    for e in &out.errors {
        names_a_cause(e);
    }
});
