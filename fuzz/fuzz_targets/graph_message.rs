//! A graph channel's messages between ranks (tokens, credits, `Close`,
//! `Gone`, one-sided signals): read as the router reads them, with a token
//! decoded as a typical port type; a rejection names its cause.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tutti::fuzzing::graph_message;
use tutti_fuzz::{limited, names_a_cause, Counting};

#[global_allocator]
static ALLOC: Counting = Counting;

fuzz_target!(|bytes: &[u8]| {
    if let Err(e) = limited(bytes.len(), || graph_message(bytes)) {
        names_a_cause(&e);
    }
});
