//! The message codec's frames and batches from hostile bytes: every frame
//! of a batch decodes or is an error naming the cause; a frame that decodes
//! re-encodes to the same bytes; its payload, decoded as a message or as
//! plain old data, is a value or an error; nothing allocates past the limit.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tutti::msg::codec::{self, decode_frame_with, encode_raw_frame, frame_len, Limits};
use tutti_fuzz::{limited, names_a_cause, Counting, Sample};

#[global_allocator]
static ALLOC: Counting = Counting;

fuzz_target!(|bytes: &[u8]| {
    // A small payload limit, so that the limit's own check is reached too.
    let limits = Limits {
        max_payload: 1 << 12,
        ..Limits::DEFAULT
    };
    let decoded = limited(bytes.len(), || {
        let mut frames = Vec::new();
        let mut batch = codec::frames_with(bytes, &limits);
        for f in batch.by_ref() {
            match f {
                Ok(f) => {
                    match f.decode::<Sample>() {
                        Ok(_) => {}
                        Err(e) => names_a_cause(&e.to_string()),
                    }
                    if let Err(e) = f.pod::<u64>() {
                        names_a_cause(&e.to_string());
                    }
                    frames.push(f);
                }
                Err(e) => names_a_cause(&e.to_string()),
            }
        }
        match decode_frame_with(bytes, &limits) {
            Ok(f) => assert_eq!(Some(f), frames.first().copied()),
            Err(e) => names_a_cause(&e.to_string()),
        }
        if let Err(e) = frame_len(bytes, &limits) {
            names_a_cause(&e.to_string());
        }
        frames
    });
    // decode(encode(x)) == x, from the other side: what decodes re-encodes to
    // the bytes it came from (the batch's frames back to back).
    let mut again = Vec::new();
    for f in &decoded {
        encode_raw_frame(f.header(), f.payload(), &mut again).expect("a decoded frame encodes");
    }
    assert_eq!(&again[..], &bytes[..again.len()]);
});
