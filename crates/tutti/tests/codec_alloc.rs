//! Decoding hostile input never allocates more than a small multiple of the input.
//!
//! A counting global allocator (this test binary only) records, for the calling thread,
//! the largest single allocation and the peak of live bytes while a decode runs. Every
//! input — random bytes, valid frames with bytes overwritten, inserted or cut, and
//! crafted claims of huge lengths — is decoded as several message types; none may
//! allocate more than `PER_BYTE` bytes per input byte plus a constant.

mod watchdog;
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};
use tutti::msg::codec::{decode, decode_frame, encode, encode_frame, FrameKind, Header, PodVec};
use tutti::msg::MsgId;

struct Counting;

std::thread_local! {
    static TRACKING: Cell<bool> = const { Cell::new(false) };
    static LIVE: Cell<isize> = const { Cell::new(0) };
    static PEAK: Cell<isize> = const { Cell::new(0) };
    static LARGEST: Cell<usize> = const { Cell::new(0) };
}

fn note_alloc(size: usize) {
    let _ = TRACKING.try_with(|t| {
        if t.get() {
            LARGEST.with(|l| l.set(l.get().max(size)));
            LIVE.with(|live| {
                live.set(live.get() + size as isize);
                PEAK.with(|p| p.set(p.get().max(live.get())));
            });
        }
    });
}

fn note_free(size: usize) {
    let _ = TRACKING.try_with(|t| {
        if t.get() {
            LIVE.with(|live| live.set(live.get() - size as isize));
        }
    });
}

// SAFETY: forwards to the system allocator unchanged; the bookkeeping only touches
// const-initialised thread-locals, which never allocate.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note_alloc(layout.size());
        // SAFETY: the caller's contract is passed on.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        note_free(layout.size());
        // SAFETY: as above.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note_free(layout.size());
        note_alloc(new_size);
        // SAFETY: as above.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// (largest single allocation, peak live bytes) of `f` on this thread.
fn measure(f: impl FnOnce()) -> (usize, usize) {
    LIVE.with(|l| l.set(0));
    PEAK.with(|p| p.set(0));
    LARGEST.with(|l| l.set(0));
    TRACKING.with(|t| t.set(true));
    f();
    TRACKING.with(|t| t.set(false));
    (
        LARGEST.with(Cell::get),
        PEAK.with(Cell::get).max(0) as usize,
    )
}

#[derive(Serialize, Deserialize, Debug)]
enum Shape {
    Circle { r: f64 },
    Poly(Vec<(f32, f32)>),
    Group(String, Vec<Shape>),
}

#[derive(Serialize, Deserialize, Debug)]
struct Mixed {
    names: Vec<String>,
    table: HashMap<u64, Vec<u32>>,
    sorted: BTreeMap<String, Option<Box<Mixed>>>,
    data: PodVec<f64>,
    shape: Shape,
}

/// Bytes a decode may allocate per input byte: the largest element type here (a
/// `Shape`, a `HashMap` bucket) is under 64 bytes and a growing vector may double.
const PER_BYTE: usize = 256;
/// Plus this much, whatever the input (small strings, the first vector growths).
const SLACK: usize = 4096;

fn decode_all_ways(input: &[u8]) {
    let _ = decode::<Vec<Shape>>(input);
    let _ = decode::<Mixed>(input);
    let _ = decode::<HashMap<String, String>>(input);
    let _ = decode::<Vec<Vec<u8>>>(input);
    let _ = decode::<PodVec<u64>>(input);
    if let Ok(frame) = decode_frame(input) {
        let _ = frame.decode::<Mixed>();
        let _ = frame.pod::<u32>();
    }
}

fn check(input: &[u8]) {
    let (largest, peak) = measure(|| decode_all_ways(input));
    let bound = PER_BYTE * input.len() + SLACK;
    assert!(
        largest <= bound && peak <= bound,
        "a {}-byte input made a {largest}-byte allocation and {peak} live bytes (bound {bound}): {:02x?}",
        input.len(),
        &input[..input.len().min(64)]
    );
}

struct XorShift(u64);
impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

fn valid_inputs() -> Vec<Vec<u8>> {
    let mixed = Mixed {
        names: vec!["alpha".into(), "beta".into()],
        table: [(1, vec![1, 2, 3]), (9, vec![])].into(),
        sorted: [("k".to_string(), None)].into(),
        data: vec![1.5; 20].into(),
        shape: Shape::Group(
            "g".into(),
            vec![Shape::Circle { r: 1.0 }, Shape::Poly(vec![(1.0, 2.0)])],
        ),
    };
    let mut payload = Vec::new();
    encode(&mixed, &mut payload).unwrap();
    let mut frame = Vec::new();
    let header = Header {
        msg: MsgId::from_name("mixed"),
        ..Header::new(FrameKind::Tell)
    };
    encode_frame(&header, &mixed, &mut frame).unwrap();
    vec![payload, frame]
}

#[test]
fn hostile_input_allocates_at_most_a_small_multiple_of_itself() {
    // Crafted claims: a huge length (varint 2^40) in front of little or nothing.
    let mut huge = Vec::new();
    encode(&(1u64 << 40), &mut huge).unwrap();
    check(&huge);
    for tail in [&[1u8, 2, 3][..], &[0; 16], &[0xff; 16]] {
        let mut claim = huge.clone();
        claim.extend_from_slice(tail);
        check(&claim);
        // The same claim for the second field of `Mixed` (its map), after an empty
        // `names`.
        let mut map_claim = vec![0u8];
        map_claim.extend_from_slice(&claim);
        check(&map_claim);
    }

    let mut rng = XorShift(0x2545_f491_4f6c_dd1d);
    let valid = valid_inputs();
    for i in 0..3000 {
        let input: Vec<u8> = if i % 2 == 0 {
            let n = (rng.next() % 200) as usize;
            (0..n).map(|_| rng.next() as u8).collect()
        } else {
            let mut v = valid[(i / 2) % valid.len()].clone();
            for _ in 0..1 + rng.next() % 4 {
                let k = (rng.next() as usize) % v.len().max(1);
                match rng.next() % 4 {
                    0 if k < v.len() => v[k] = rng.next() as u8,
                    1 if k < v.len() => v[k] = 0xff,
                    2 => v.truncate(k),
                    _ => v.insert(k.min(v.len()), rng.next() as u8),
                }
            }
            v
        };
        check(&input);
    }
}
