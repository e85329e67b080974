//! decode(encode(x)) == x for the message codec: structured messages in
//! frames (one, or a batch), with every header field the fuzzer picks, read
//! back field for field; plain-old-data frames too.
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use tutti::msg::codec::{
    self, encode_frame, encode_pod_frame, Flags, FrameKind, Header, DEFAULT_MAX_DEPTH,
};
use tutti::msg::MsgId;
use tutti_fuzz::{same, Counting, Sample, Shape};

#[global_allocator]
static ALLOC: Counting = Counting;

/// How deep the sample's shapes nest.
fn depth(s: &Sample) -> usize {
    fn shape(s: &Shape) -> usize {
        1 + match s {
            Shape::Group(v) => v.iter().map(shape).max().unwrap_or(0),
            Shape::Wrapped(b) => shape(b),
            _ => 0,
        }
    }
    s.maybe.as_deref().map_or(0, shape)
}

#[derive(Arbitrary, Debug)]
struct Input {
    frames: Vec<(u8, u32, u32, u64, u64, u64, bool, Sample)>,
    pod: Vec<u64>,
}

fuzz_target!(|input: Input| {
    let mut out = Vec::new();
    let mut sent = Vec::new();
    for (kind, src, dst, msg, target, corr, priority, sample) in input.frames {
        let kind = match kind % 5 {
            0 => FrameKind::Tell,
            1 => FrameKind::Ask,
            2 => FrameKind::Reply,
            3 => FrameKind::Fault,
            _ => FrameKind::Control,
        };
        let header = Header {
            flags: if priority {
                Flags::PRIORITY
            } else {
                Flags::NONE
            },
            src,
            dst,
            msg: MsgId::new(msg | 1),
            target,
            corr: corr | 1,
            ..Header::new(kind)
        };
        match encode_frame(&header, &sample, &mut out) {
            Ok(_) => sent.push((header, sample)),
            Err(e) => panic!("{header:?} does not encode: {e}"),
        }
    }
    let pod_header = Header {
        msg: MsgId::new(9),
        ..Header::new(FrameKind::Tell)
    };
    encode_pod_frame(&pod_header, &input.pod, &mut out).expect("a pod frame encodes");
    let mut got = codec::frames(&out);
    for (header, sample) in &sent {
        let f = got
            .next()
            .expect("a frame for each sent")
            .expect("a sent frame decodes");
        assert_eq!(f.header(), header);
        match f.decode::<Sample>() {
            Ok(back) => assert!(same(&back, sample), "{back:?} != {sample:?}"),
            // The encoder does not limit nesting; the decoder does (a value
            // nested past `Limits::max_depth` is not a message a peer takes).
            Err(e) => assert!(
                depth(sample) * 2 + 4 >= DEFAULT_MAX_DEPTH as usize
                    && e.to_string().contains("nested deeper than"),
                "a sent payload of depth {} does not decode: {e}",
                depth(sample)
            ),
        }
    }
    let f = got
        .next()
        .expect("the pod frame")
        .expect("the pod frame decodes");
    assert_eq!(&f.pod::<u64>().expect("pod payload")[..], &input.pod[..]);
    assert!(got.next().is_none());
});
