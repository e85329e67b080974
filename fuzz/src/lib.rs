//! What every fuzz target shares: a counting global allocator that holds
//! each input to an allocation limit, the check that a rejection names its
//! cause, and the structured values the round-trip targets encode.
//!
//! A target declares `#[global_allocator] static ALLOC: Counting = Counting;`
//! and runs each input's decoding inside [`limited`]: an allocation of more
//! than the limit while it runs fails the input, naming the size. The limit
//! is the codec's declared bound — 256 bytes per input byte — plus a fixed
//! allowance, so a decoder that preallocates from a length it read (instead of
//! from the bytes present) is caught even when the length is far below what
//! would exhaust the machine.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use arbitrary::Arbitrary;
use serde::{Deserialize, Serialize};

/// The counting allocator: the system's, recording while armed the largest
/// single request.
pub struct Counting;

static ARMED: AtomicBool = AtomicBool::new(false);
static LARGEST: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is forwarded to the system allocator unchanged; the
// counting touches only atomics (it never allocates).
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        // SAFETY: the caller's contract is the system allocator's.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        // SAFETY: as above.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: as above.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note(new_size);
        // SAFETY: as above.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

fn note(size: usize) {
    if ARMED.load(Ordering::Relaxed) {
        LARGEST.fetch_max(size, Ordering::Relaxed);
    }
}

/// Fixed allowance of [`limit`]: buffers whose size does not depend on the
/// input (a rank's state, scratch buffers, a `Vec`'s first growth).
pub const ALLOWANCE: usize = 64 << 10;
/// Bytes a decoder may allocate in one request per byte of input: the
/// codec's declared bound (`crates/tutti/tests/codec_alloc.rs`). The codec
/// caps a sequence's preallocation at one element per byte present, so a
/// vector of 56-byte elements (a stall-check confirmation's waiting
/// locations) may take 56 bytes per input byte, and twice that as it grows.
pub const PER_INPUT_BYTE: usize = 256;

/// The largest single allocation allowed while decoding `input_len` bytes.
pub fn limit(input_len: usize) -> usize {
    ALLOWANCE + PER_INPUT_BYTE * input_len
}

/// Runs `f` (the decoding of an input of `input_len` bytes) with the
/// counting allocator armed, and fails if it asked for more than
/// [`limit`]`(input_len)` bytes at once.
pub fn limited<R>(input_len: usize, f: impl FnOnce() -> R) -> R {
    LARGEST.store(0, Ordering::Relaxed);
    ARMED.store(true, Ordering::Relaxed);
    let r = f();
    ARMED.store(false, Ordering::Relaxed);
    let largest = LARGEST.load(Ordering::Relaxed);
    assert!(
        largest <= limit(input_len),
        "an allocation of {largest} bytes while decoding {input_len} bytes (limit {})",
        limit(input_len)
    );
    r
}

/// A rejection must say what is wrong: not empty, and not a bare word.
pub fn names_a_cause(error: &str) {
    assert!(
        error.trim().len() >= 8,
        "a rejection without a cause: {error:?}"
    );
}

/// The payload the binary targets decode and round-trip: scalars,
/// strings, sequences, maps, options and a nested enum (every serde shape
/// a message is made of).
#[derive(Arbitrary, Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct Sample {
    pub id: u64,
    pub small: i8,
    pub flag: bool,
    pub ratio: f64,
    pub name: String,
    pub bytes: Vec<u8>,
    pub pairs: Vec<(u32, i64)>,
    pub maybe: Option<Box<Shape>>,
    pub unit: (),
    pub ch: char,
}

/// A recursive enum of [`Sample`].
#[derive(Arbitrary, Serialize, Deserialize, Debug, Clone, PartialEq)]
pub enum Shape {
    Point,
    Circle { r: u32 },
    Label(String),
    Group(Vec<Shape>),
    Wrapped(Box<Shape>),
}

/// What the JSON target round-trips: as [`Sample`] but with no float (JSON
/// has no NaN) and a map.
#[derive(Arbitrary, Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct JsonSample {
    pub id: u64,
    pub neg: i64,
    pub flag: bool,
    pub name: String,
    pub list: Vec<u16>,
    pub map: std::collections::BTreeMap<String, u32>,
    pub shape: Option<Shape>,
}

/// Bit-exact equality for [`Sample`] (a NaN ratio equals itself).
pub fn same(a: &Sample, b: &Sample) -> bool {
    let mut a = a.clone();
    let mut b = b.clone();
    if a.ratio.to_bits() == b.ratio.to_bits() {
        a.ratio = 0.0;
        b.ratio = 0.0;
    }
    a == b
}
