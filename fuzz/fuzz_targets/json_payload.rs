//! The JSON payload format (an RPC connection's alternative to the binary
//! codec): hostile text decodes or is an error naming the cause, within the
//! allocation limit; decode(encode(x)) == x for structured values.
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use tutti::msg::codec::Format;
use tutti_fuzz::{limited, names_a_cause, Counting, JsonSample, Sample, Shape};

#[global_allocator]
static ALLOC: Counting = Counting;

/// How deep a shape nests.
fn depth(s: Option<&Shape>) -> usize {
    s.map_or(0, |s| {
        1 + match s {
            Shape::Group(v) => v.iter().map(|s| depth(Some(s))).max().unwrap_or(0),
            Shape::Wrapped(b) => depth(Some(b)),
            _ => 0,
        }
    })
}

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
    match Format::Json.decode::<JsonSample>(&out) {
        Ok(back) => assert_eq!(back, input.value),
        // serde_json writes any depth and reads 128 levels: a value nested
        // deeper is not one a peer takes, and the refusal says so.
        Err(e) => assert!(
            depth(input.value.shape.as_ref()) * 2 + 4 >= 128
                && e.to_string().contains("recursion limit exceeded"),
            "JSON of a value {} deep does not decode: {e}",
            depth(input.value.shape.as_ref())
        ),
    }
});
