//! Round trips, rejection of every malformed header field, the decoder's guards, and
//! property tests over random, mutated and truncated input.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};

use proptest::prelude::*;
use proptest::test_runner::{Config as ProptestConfig, RngSeed};
use serde::{Deserialize, Serialize};

use super::*;
use crate::msg::MsgId;

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
enum Shape {
    Circle { r: f64 },
    Poly(Vec<(f32, f32)>),
    Group(String, Vec<Shape>),
    Empty,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
struct Everything {
    a: u8,
    b: i64,
    c: u128,
    d: f32,
    e: char,
    f: String,
    g: Option<Box<Everything>>,
    h: Vec<u16>,
    i: BTreeMap<String, i32>,
    j: (bool, ()),
    k: Shape,
    l: PodVec<[u32; 3]>,
}

fn everything(depth: u32) -> Everything {
    Everything {
        a: 255,
        b: -1 << 40,
        c: u128::MAX - 7,
        d: -0.5,
        e: 'ß',
        f: "tutti ♪".into(),
        g: (depth > 0).then(|| Box::new(everything(depth - 1))),
        h: vec![0, 1, 65535],
        i: [("x".to_string(), -3), ("y".to_string(), 4)].into(),
        j: (true, ()),
        k: Shape::Group(
            "g".into(),
            vec![
                Shape::Circle { r: 2.0 },
                Shape::Poly(vec![(0.0, 1.0)]),
                Shape::Empty,
            ],
        ),
        l: vec![[1, 2, 3], [4, 5, 6]].into(),
    }
}

fn tell(msg: &str) -> Header {
    Header {
        msg: MsgId::from_name(msg),
        ..Header::new(FrameKind::Tell)
    }
}

fn one_frame<T: Serialize + ?Sized>(header: &Header, payload: &T) -> Vec<u8> {
    let mut buf = Vec::new();
    encode_frame(header, payload, &mut buf).unwrap();
    buf
}

#[test]
fn values_round_trip() {
    let v = everything(3);
    let mut buf = Vec::new();
    encode(&v, &mut buf).unwrap();
    assert_eq!(decode::<Everything>(&buf).unwrap(), v);

    let mut map = HashMap::new();
    map.insert(7u64, vec!["a".to_string()]);
    buf.clear();
    encode(&map, &mut buf).unwrap();
    assert_eq!(decode::<HashMap<u64, Vec<String>>>(&buf).unwrap(), map);

    // Borrowed strings and bytes point into the input.
    buf.clear();
    encode(&("borrowed", &b"bytes"[..]), &mut buf).unwrap();
    let (s, b): (&str, &[u8]) = decode(&buf).unwrap();
    assert_eq!((s, b), ("borrowed", &b"bytes"[..]));
    assert!(buf.as_ptr_range().contains(&s.as_ptr()));
}

#[test]
fn frames_round_trip_with_every_header_field() {
    let header = Header {
        kind: FrameKind::Ask,
        flags: Flags::PRIORITY | Flags::world(0xa5),
        src: 0xdead_beef,
        dst: 7,
        msg: MsgId::from_name("everything"),
        target: u64::MAX,
        corr: 0x0123_4567_89ab_cdef,
    };
    let v = everything(2);
    let buf = one_frame(&header, &v);
    assert_eq!(buf.len() % FRAME_ALIGN, 0);
    assert_eq!(&buf[..4], b"TUTI");
    let frame = decode_frame(&buf).unwrap();
    assert_eq!(frame.header(), &header);
    assert_eq!(frame.len(), buf.len());
    assert_eq!(frame.decode::<Everything>().unwrap(), v);
    assert_eq!(frame_len(&buf, &Limits::DEFAULT), Ok(Some(buf.len())));
}

#[test]
fn every_kind_round_trips_and_follows_its_rules() {
    for (kind, msg, corr, ok) in [
        (FrameKind::Tell, 1, 0, true),
        (FrameKind::Tell, 0, 0, false),
        (FrameKind::Ask, 1, 1, true),
        (FrameKind::Ask, 1, 0, false),
        (FrameKind::Ask, 0, 1, false),
        (FrameKind::Reply, 0, 1, true),
        (FrameKind::Reply, 0, 0, false),
        (FrameKind::Fault, 0, 3, true),
        (FrameKind::Fault, 0, 0, false),
        (FrameKind::Control, 0, 0, true),
    ] {
        let header = Header {
            msg: MsgId::from_wire(msg),
            corr,
            ..Header::new(kind)
        };
        let mut buf = vec![1, 2, 3];
        let r = encode_frame(&header, &5u8, &mut buf);
        assert_eq!(r.is_ok(), ok, "{kind:?} msg={msg} corr={corr}");
        if ok {
            assert_eq!(decode_frame(&buf[3..]).unwrap().header().kind, kind);
        } else {
            assert!(matches!(r, Err(CodecError::InvalidHeader(_))));
            assert_eq!(buf, [1, 2, 3], "a refused frame leaves the buffer alone");
            // The decoder enforces the same rules on frames from elsewhere.
            let good = one_frame(
                &Header {
                    msg: MsgId::new(1),
                    corr: 1,
                    ..Header::new(FrameKind::Ask)
                },
                &5u8,
            );
            let mut bad = good.clone();
            bad[5] = kind as u8;
            bad[24..32].copy_from_slice(&msg.to_le_bytes());
            bad[40..48].copy_from_slice(&corr.to_le_bytes());
            assert!(matches!(
                decode_frame(&bad),
                Err(CodecError::InvalidHeader(_))
            ));
        }
    }
}

#[test]
fn every_header_field_is_checked() {
    let good = one_frame(&tell("x"), "payload!!");
    assert!(decode_frame(&good).is_ok());
    let with = |f: &dyn Fn(&mut Vec<u8>)| {
        let mut b = good.clone();
        f(&mut b);
        decode_frame(&b).unwrap_err()
    };
    assert_eq!(with(&|b| b[0] = b'X'), CodecError::BadMagic(*b"XUTI"));
    assert_eq!(with(&|b| b[4] = 2), CodecError::UnsupportedVersion(2));
    assert_eq!(with(&|b| b[5] = 0), CodecError::UnknownKind(0));
    assert_eq!(with(&|b| b[5] = 6), CodecError::UnknownKind(6));
    assert_eq!(with(&|b| b[6] = 0x80), CodecError::ReservedFlags(0x80));
    // The stated length: too long for the bytes, absurd, or too short (the padding
    // then holds payload bytes).
    assert!(matches!(
        with(&|b| b[16] += 8),
        CodecError::Truncated { what: "frame", .. }
    ));
    assert!(matches!(
        with(&|b| b[16..24].copy_from_slice(&u64::MAX.to_le_bytes())),
        CodecError::TooLarge { len: u64::MAX, .. }
    ));
    assert_eq!(with(&|b| b[16] -= 8), CodecError::BadPadding);
    assert_eq!(with(&|b| b[16] -= 1), CodecError::BadPadding);
    let last = good.len() - 1;
    assert_eq!(with(&|b| b[last] = 1), CodecError::BadPadding);
    assert_eq!(
        with(&|b| b.extend_from_slice(&[0; 8])),
        CodecError::TrailingBytes {
            what: "frame",
            extra: 8
        }
    );
    for cut in 0..good.len() {
        assert!(
            matches!(
                decode_frame(&good[..cut]),
                Err(CodecError::Truncated { .. })
            ),
            "cut at {cut}"
        );
    }
    // A payload that is not a valid value of the type asked for.
    let frame = decode_frame(&good).unwrap();
    assert!(matches!(
        frame.decode::<u64>(),
        Err(CodecError::TrailingBytes { .. })
    ));
    assert!(matches!(
        frame.decode::<(&str, u8)>(),
        Err(CodecError::Payload { .. })
    ));
}

#[test]
fn payload_limit_is_configurable() {
    let buf = one_frame(&tell("big"), &vec![7u8; 1000]);
    assert!(decode_frame(&buf).is_ok());
    let tight = Limits {
        max_payload: 100,
        ..Limits::DEFAULT
    };
    assert!(matches!(
        decode_frame_with(&buf, &tight),
        Err(CodecError::TooLarge { max: 100, .. })
    ));
    assert!(matches!(
        frame_len(&buf, &tight),
        Err(CodecError::TooLarge { .. })
    ));
}

#[test]
fn failed_encodes_leave_the_buffer_as_it_was() {
    struct Refuses;
    impl Serialize for Refuses {
        fn serialize<S: serde::Serializer>(&self, _: S) -> Result<S::Ok, S::Error> {
            Err(serde::ser::Error::custom("no"))
        }
    }
    let mut buf = one_frame(&tell("a"), &1u32);
    let before = buf.clone();
    let e = encode_frame(&tell("b"), &(1u64, "partly written", Refuses), &mut buf).unwrap_err();
    assert!(matches!(e, CodecError::Encode { .. }), "{e}");
    assert_eq!(buf, before);
    assert!(encode(&("x", Refuses), &mut buf).is_err());
    assert_eq!(buf, before);
    // A sequence of unknown length cannot be written by a length-prefixed format.
    struct Unsized;
    impl Serialize for Unsized {
        fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            s.collect_seq((0..3).filter(|_| true))
        }
    }
    assert!(encode_frame(&tell("c"), &Unsized, &mut buf).is_err());
    assert_eq!(buf, before);
    let e = encode_frame(
        &Header {
            flags: Flags::POD,
            ..tell("d")
        },
        &1u8,
        &mut buf,
    )
    .unwrap_err();
    assert!(matches!(e, CodecError::InvalidHeader(_)));
}

#[test]
fn pod_frames_borrow_when_aligned_and_copy_when_not() {
    let values: Vec<f64> = (0..100).map(|i| i as f64 * 0.25).collect();
    let header = Header {
        corr: 3,
        ..Header::new(FrameKind::Reply)
    };
    let mut buf = Vec::new();
    encode_pod_frame(&header, &values, &mut buf).unwrap();
    assert_eq!(buf.len(), HEADER_LEN + 800);

    // An 8-aligned buffer: the payload is borrowed in place.
    let mut aligned = vec![0u64; buf.len() / 8];
    bytemuck::cast_slice_mut::<u64, u8>(&mut aligned).copy_from_slice(&buf);
    let bytes: &[u8] = bytemuck::cast_slice(&aligned);
    let frame = decode_frame(bytes).unwrap();
    assert!(frame.header().flags.contains(Flags::POD));
    match frame.pod::<f64>().unwrap() {
        Cow::Borrowed(v) => assert_eq!(v, &values[..]),
        Cow::Owned(_) => panic!("aligned payload copied"),
    }
    // One byte off: copied, same values.
    let mut shifted = vec![0u64; buf.len() / 8 + 1];
    let shifted_bytes = &mut bytemuck::cast_slice_mut::<u64, u8>(&mut shifted)[1..=buf.len()];
    shifted_bytes.copy_from_slice(&buf);
    let frame = decode_frame(shifted_bytes).unwrap();
    match frame.pod::<f64>().unwrap() {
        Cow::Owned(v) => assert_eq!(v, values),
        Cow::Borrowed(_) => panic!("misaligned payload borrowed"),
    }
    // The wrong element size, and the wrong decoder either way.
    assert_eq!(
        frame.pod::<[u8; 3]>().unwrap_err(),
        CodecError::PodLength { len: 800, size: 3 }
    );
    assert_eq!(
        frame.decode::<Vec<f64>>().unwrap_err(),
        CodecError::WrongEncoding {
            actual: "plain-old-data"
        }
    );
    let serde_frame = one_frame(&tell("v"), &values);
    assert_eq!(
        decode_frame(&serde_frame)
            .unwrap()
            .pod::<f64>()
            .unwrap_err(),
        CodecError::WrongEncoding { actual: "serde" }
    );
    // Empty slices are fine.
    buf.clear();
    encode_pod_frame::<u32>(&header, &[], &mut buf).unwrap();
    assert!(decode_frame(&buf).unwrap().pod::<u32>().unwrap().is_empty());
}

#[test]
fn batches_keep_payloads_aligned() {
    let mut batch = Vec::new();
    for n in 0..20usize {
        // Odd serde payloads between the pod ones shift nothing: frames pad to 8.
        encode_frame(&tell("odd"), &vec![1u8; n], &mut batch).unwrap();
        let h = Header {
            corr: n as u64 + 1,
            ..Header::new(FrameKind::Reply)
        };
        encode_pod_frame(&h, &vec![n as u64; n], &mut batch).unwrap();
    }
    let mut aligned = vec![0u64; batch.len() / 8];
    bytemuck::cast_slice_mut::<u64, u8>(&mut aligned).copy_from_slice(&batch);
    let bytes: &[u8] = bytemuck::cast_slice(&aligned);
    let mut count = 0;
    for frame in frames(bytes) {
        let frame = frame.unwrap();
        if frame.header().kind == FrameKind::Reply {
            let n = frame.header().corr - 1;
            assert!(
                matches!(frame.pod::<u64>().unwrap(), Cow::Borrowed(v) if v.len() as u64 == n && v.iter().all(|&x| x == n))
            );
        } else {
            assert_eq!(frame.decode::<Vec<u8>>().unwrap().len(), count / 2);
        }
        count += 1;
    }
    assert_eq!(count, 40);
}

#[test]
fn frames_stop_at_the_first_broken_frame() {
    let mut batch = Vec::new();
    for i in 0..3u32 {
        encode_frame(&tell("t"), &i, &mut batch).unwrap();
    }
    let second = decode_frame(&batch[..56]).map(|f| f.len()).unwrap();
    batch[second] = b'!'; // the second frame's magic
    let mut it = frames(&batch);
    assert_eq!(it.next().unwrap().unwrap().decode::<u32>(), Ok(0));
    assert!(matches!(it.next(), Some(Err(CodecError::BadMagic(_)))));
    assert_eq!(it.remainder().len(), batch.len() - second);
    assert!(it.next().is_none());
    assert!(frames(&[]).next().is_none());
}

#[derive(Serialize, Deserialize, Debug, PartialEq)]
enum Tree {
    Leaf,
    Node(Box<Tree>),
}

fn nested(depth: usize) -> Tree {
    let mut t = Tree::Leaf;
    for _ in 0..depth {
        t = Tree::Node(Box::new(t));
    }
    t
}

#[test]
fn nesting_is_limited_instead_of_overflowing_the_stack() {
    // Legitimately deep values: fine up to the limit, an error past it.
    let mut buf = Vec::new();
    encode(&nested(100), &mut buf).unwrap();
    assert_eq!(decode::<Tree>(&buf).unwrap(), nested(100));
    buf.clear();
    encode(&nested(200), &mut buf).unwrap();
    let e = decode::<Tree>(&buf).unwrap_err();
    assert!(
        e.to_string().contains("nested deeper than 128 levels"),
        "{e}"
    );
    let frame_buf = one_frame(&tell("tree"), &nested(200));
    let deep = Limits {
        max_depth: 256,
        ..Limits::DEFAULT
    };
    assert_eq!(
        decode_frame_with(&frame_buf, &deep)
            .unwrap()
            .decode::<Tree>()
            .unwrap(),
        nested(200)
    );
    // Hostile: a million levels in a megabyte (variant 1 = Node, repeated).
    let mut hostile = vec![1u8; 1 << 20];
    hostile.push(0);
    let e = decode::<Tree>(&hostile).unwrap_err();
    assert!(e.to_string().contains("nested deeper"), "{e}");
}

#[test]
fn zero_sized_elements_cannot_spin() {
    // A ten-byte payload claiming 2^62 unit values.
    let mut buf = Vec::new();
    encode(&(1u64 << 62), &mut buf).unwrap();
    let e = decode::<Vec<()>>(&buf).unwrap_err();
    assert!(e.to_string().contains("more elements than"), "{e}");
    // Elements of a non-zero-sized type can have empty encodings too.
    #[derive(Deserialize, Debug)]
    struct Skipped {
        #[serde(skip)]
        _cache: u64,
    }
    let e = decode::<Vec<Skipped>>(&buf).unwrap_err();
    assert!(e.to_string().contains("more elements than"), "{e}");
    // Nested claims that each fit the bytes left but multiply: 1000 inner vectors of
    // 100 000 unit values each, in 3 kB.
    buf.clear();
    encode(&1000u32, &mut buf).unwrap();
    for _ in 0..1000 {
        encode(&100_000u32, &mut buf).unwrap();
    }
    let e = decode::<Vec<Vec<()>>>(&buf).unwrap_err();
    assert!(e.to_string().contains("more elements than"), "{e}");
    // A legitimate vector of unit values within the allowance decodes.
    buf.clear();
    encode(&vec![(); 1000], &mut buf).unwrap();
    assert_eq!(decode::<Vec<()>>(&buf).unwrap().len(), 1000);
    // And nested containers of real data always fit the budget.
    let nested: Vec<Vec<Vec<u8>>> = vec![vec![vec![1]; 50]; 50];
    buf.clear();
    encode(&nested, &mut buf).unwrap();
    assert_eq!(decode::<Vec<Vec<Vec<u8>>>>(&buf).unwrap(), nested);
}

#[test]
fn error_messages_survive_the_format() {
    // serde's own message for a bad variant index.
    let e = decode::<Shape>(&[9]).unwrap_err();
    assert!(e.to_string().contains("variant index"), "{e}");
    // A user's Deserialize that validates.
    #[derive(Debug)]
    struct Even(#[allow(dead_code)] u32);
    impl<'de> Deserialize<'de> for Even {
        fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            let n = u32::deserialize(d)?;
            if n % 2 == 0 {
                Ok(Even(n))
            } else {
                Err(serde::de::Error::custom(format_args!("{n} is odd")))
            }
        }
    }
    let mut buf = Vec::new();
    encode(&vec![2u32, 4, 7], &mut buf).unwrap();
    let e = decode::<Vec<Even>>(&buf).unwrap_err();
    assert!(e.to_string().contains("7 is odd"), "{e}");
    assert!(e.to_string().contains("Even"), "names the type: {e}");
    // postcard's own complaints come through too.
    let e = decode::<String>(&[3, 0xff, 0xfe, 0xfd]).unwrap_err();
    assert!(matches!(e, CodecError::Payload { .. }), "{e}");
    let e = decode::<u8>(&[1, 2]).unwrap_err();
    assert_eq!(
        e,
        CodecError::TrailingBytes {
            what: "u8",
            extra: 1
        }
    );
}

#[test]
fn claimed_lengths_do_not_allocate() {
    // A sequence claiming 2^40 strings, a map claiming 2^40 entries: errors, at once.
    let mut buf = Vec::new();
    encode(&(1u64 << 40), &mut buf).unwrap();
    assert!(decode::<Vec<String>>(&buf).is_err());
    assert!(decode::<HashMap<u64, u64>>(&buf).is_err());
    assert!(decode::<PodVec<u64>>(&buf).is_err());
    assert!(decode::<String>(&buf).is_err());
}

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 512,
        failure_persistence: None,
        rng_seed: RngSeed::Fixed(0x7077_7151),
        ..ProptestConfig::default()
    }
}

fn arb_kind() -> impl Strategy<Value = FrameKind> {
    prop_oneof![
        Just(FrameKind::Tell),
        Just(FrameKind::Ask),
        Just(FrameKind::Reply),
        Just(FrameKind::Fault),
        Just(FrameKind::Control),
    ]
}

fn arb_header() -> impl Strategy<Value = Header> {
    (
        arb_kind(),
        any::<bool>(),
        any::<u8>(),
        any::<u32>(),
        any::<u32>(),
        1..u64::MAX,
        any::<u64>(),
        1..u64::MAX,
    )
        .prop_map(
            |(kind, priority, world, src, dst, msg, target, corr)| Header {
                kind,
                flags: if priority {
                    Flags::PRIORITY
                } else {
                    Flags::NONE
                } | Flags::world(world),
                src,
                dst,
                msg: MsgId::from_wire(msg),
                target,
                corr,
            },
        )
}

fn arb_shape() -> impl Strategy<Value = Shape> {
    let leaf = prop_oneof![
        any::<f64>()
            .prop_filter("NaN != NaN", |r| !r.is_nan())
            .prop_map(|r| Shape::Circle { r }),
        prop::collection::vec((-1e3f32..1e3, -1e3f32..1e3), 0..5).prop_map(Shape::Poly),
        Just(Shape::Empty),
    ];
    leaf.prop_recursive(4, 32, 4, |inner| {
        (".{0,8}", prop::collection::vec(inner, 0..4)).prop_map(|(s, v)| Shape::Group(s, v))
    })
}

#[derive(Clone, Debug)]
enum Payload {
    Shape(Shape),
    Text(String),
    Pod(Vec<u32>),
}

fn arb_payload() -> impl Strategy<Value = Payload> {
    prop_oneof![
        arb_shape().prop_map(Payload::Shape),
        ".{0,40}".prop_map(Payload::Text),
        prop::collection::vec(any::<u32>(), 0..40).prop_map(Payload::Pod),
    ]
}

fn encode_payload(h: &Header, p: &Payload, out: &mut Vec<u8>) {
    match p {
        Payload::Shape(s) => encode_frame(h, s, out).unwrap(),
        Payload::Text(t) => encode_frame(h, t, out).unwrap(),
        Payload::Pod(v) => encode_pod_frame(h, v, out).unwrap(),
    };
}

/// Every way to read a frame; none may panic, whatever the bytes.
fn read_every_way(bytes: &[u8]) {
    let _ = frame_len(bytes, &Limits::DEFAULT);
    if let Ok(f) = decode_frame(bytes) {
        let _ = f.decode::<Shape>();
        let _ = f.decode::<String>();
        let _ = f.decode::<Everything>();
        let _ = f.pod::<u32>();
        let _ = f.pod::<[u64; 3]>();
    }
    for f in frames(bytes).flatten() {
        let _ = f.decode::<Vec<Shape>>();
    }
    let _ = decode::<Shape>(bytes);
    let _ = decode::<Everything>(bytes);
    let _ = decode::<(String, HashMap<u32, Vec<u8>>, BTreeMap<String, Tree>)>(bytes);
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn batches_round_trip(items in prop::collection::vec((arb_header(), arb_payload()), 0..12)) {
        let mut batch = Vec::new();
        for (h, p) in &items {
            encode_payload(h, p, &mut batch);
        }
        prop_assert_eq!(batch.len() % FRAME_ALIGN, 0);
        let decoded: Vec<Frame<'_>> = frames(&batch).collect::<Result<_, _>>().unwrap();
        prop_assert_eq!(decoded.len(), items.len());
        for (f, (h, p)) in decoded.iter().zip(&items) {
            let mut expected = *h;
            match p {
                Payload::Shape(s) => prop_assert_eq!(&f.decode::<Shape>().unwrap(), s),
                Payload::Text(t) => prop_assert_eq!(&f.decode::<&str>().unwrap(), t),
                Payload::Pod(v) => {
                    prop_assert_eq!(&*f.pod::<u32>().unwrap(), &v[..]);
                    expected.flags = expected.flags | Flags::POD;
                }
            }
            prop_assert_eq!(f.header(), &expected);
        }
    }

    #[test]
    fn random_bytes_are_rejected_without_panic(bytes in prop::collection::vec(any::<u8>(), 0..300)) {
        read_every_way(&bytes);
        // Behind a valid magic and version the rest of the header gets exercised.
        let mut framed = b"TUTI\x01".to_vec();
        framed.extend_from_slice(&bytes);
        read_every_way(&framed);
    }

    #[test]
    fn mutated_frames_are_rejected_or_read_without_panic(
        items in prop::collection::vec((arb_header(), arb_payload()), 1..4),
        edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>(), 0..4u8), 1..6),
    ) {
        let mut batch = Vec::new();
        for (h, p) in &items {
            encode_payload(h, p, &mut batch);
        }
        for (at, byte, op) in edits {
            if batch.is_empty() {
                break;
            }
            let i = at.index(batch.len());
            match op {
                0 => batch[i] = byte,
                1 => batch[i] ^= 1 << (byte % 8),
                2 => batch.truncate(i),
                _ => batch.insert(i, byte),
            }
        }
        read_every_way(&batch);
    }

    #[test]
    fn truncated_batches_yield_a_prefix_then_an_error(
        items in prop::collection::vec((arb_header(), arb_payload()), 1..6),
        cut in any::<prop::sample::Index>(),
    ) {
        let mut batch = Vec::new();
        let mut ends = Vec::new();
        for (h, p) in &items {
            encode_payload(h, p, &mut batch);
            ends.push(batch.len());
        }
        let cut = cut.index(batch.len());
        let results: Vec<_> = frames(&batch[..cut]).collect();
        let whole = ends.iter().filter(|&&e| e <= cut).count();
        prop_assert!(results[..whole].iter().all(|r| r.is_ok()));
        if ends.contains(&cut) || cut == 0 {
            prop_assert_eq!(results.len(), whole);
        } else {
            prop_assert_eq!(results.len(), whole + 1);
            let is_truncated = matches!(results[whole], Err(CodecError::Truncated { .. }));
            prop_assert!(is_truncated);
        }
    }
}
