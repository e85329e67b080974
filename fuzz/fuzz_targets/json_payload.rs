//! The JSON payload format (an RPC connection's alternative to the binary
//! codec): hostile text decodes or is an error naming the cause, within the
//! allocation limit; decode(encode(x)) == x for structured values.
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use tutti::msg::codec::Format;
use tutti_fuzz::{limited, names_a_cause, Counting, JsonSample, Sample};

#[global_allocator]
static ALLOC: Counting = Counting;

#[derive(Arbitrary, Debug)]
struct Input<'a> {
    value: JsonSample,
    text: &'a [u8],
}

fuzz_target!(|input: Input| {
    limited(input.text.len(), || {
        for r in [
            Format::Json.decode::<JsonSample>(input.text).map(drop),
            Format::Json.decode::<Sample>(input.text).map(drop),
            Format::Json.decode::<Vec<String>>(input.text).map(drop),
        ] {
            if let Err(e) = r {
                names_a_cause(&e.to_string());
            }
        }
    });
    let mut out = Vec::new();
    Format::Json
        .encode(&input.value, &mut out)
        .expect("a value encodes as JSON");
    let back: JsonSample = Format::Json.decode(&out).expect("its JSON decodes");
    assert_eq!(back, input.value);
});
