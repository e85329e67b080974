//! The world's frames: what one rank hands its transport for another rank.
//!
//! A frame is a **head** and an optional **body**. The head is one frame of the
//! message codec ([`msg::codec`](crate::msg::codec): 48-byte header, payload, zero
//! padding to a multiple of 8) of kind [`Control`](FrameKind::Control), so every
//! byte that crosses ranks starts with the codec's magic and version. The body
//! carries one large message (or a large collective value) so that it travels
//! without being copied into a batch.
//!
//! The world's fields sit in the codec header:
//!
//! ```text
//! flags        the world byte: bits 0..7 what (1 data, 2 collective),
//!              bit 7 a body comes with the head; the codec's own flags are clear
//! msg          none
//! data:        src, dst = locations; target = number of messages (the body counts);
//!              corr = the sender's phase (the fences it had completed when it
//!              sent them, see the world's quiescence); payload = the inline messages, each (length u32 LE, bytes);
//!              with a body, the body is the last message.
//! collective:  src, dst = ranks; target = epoch; corr = phase (1 up, 2 down)
//!              | kind << 8 | root << 32; payload = the value (empty if it is the body).
//! channel:     src, dst = locations (the ends' locations); target = the channel's
//!              number | kind << 32 (1 value, 2 credits, 3 sender closed,
//!              4 receiver closed); corr = the
//!              argument (a value's sender capacity, a count of credits);
//!              payload = a value (empty if it is the body; none for the others).
//! ```
//!
//! One codec header per batch, then 4-byte length prefixes: an aggregated 8-byte
//! message costs 12 bytes, not a header of its own.
//!
//! Parsing first lets the codec check the header (magic, version, kind, flags,
//! stated length against the bytes present, zero padding), then checks the world's
//! fields and walks every inline message within the payload; it never panics, and a
//! frame that does not parse is an error naming what is wrong (the receiving rank
//! then takes the job down, since a peer that sends garbage cannot be trusted to
//! follow the protocol).

// Parsing is only needed where frames arrive from another process.
#![cfg_attr(not(feature = "mpi"), allow(dead_code))]

use std::fmt;
use std::ops::Range;

use crate::msg::codec::{self, Flags, FrameKind, Header, HEADER_LEN};
use crate::msg::MsgId;

/// Bytes before a frame's first inline message (the codec header).
pub(crate) const HEADER: usize = HEADER_LEN;
/// Bytes of the length prefix of an inline message.
pub(crate) const ENTRY_PREFIX: usize = 4;

/// World flag byte: a data frame.
const WHAT_DATA: u8 = 1;
/// World flag byte: a collective frame.
const WHAT_COLLECTIVE: u8 = 2;
/// World flag byte: a frame of the cross-rank stall check (`stall.rs`).
const WHAT_STALL: u8 = 3;
/// World flag byte: a message of a channel between locations (`channel/`).
const WHAT_CHANNEL: u8 = 4;
/// World flag byte: a body comes with the head.
const FLAG_BODY: u8 = 0x80;

/// A frame on its way out.
#[derive(Debug, Default)]
pub(crate) struct Frame {
    pub(crate) head: Vec<u8>,
    pub(crate) body: Option<Vec<u8>>,
}

/// Which way a collective frame travels in its tree.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Phase {
    /// From a child towards the root (contributions).
    Up,
    /// From a parent towards the leaves (results).
    Down,
}

/// A parsed collective frame; `inline` is the value's range of the head (empty if
/// the value is the body).
#[derive(Debug)]
pub(crate) struct CollectiveHead {
    pub(crate) from_rank: u32,
    pub(crate) tag: CollectiveTag,
    pub(crate) inline: Range<usize>,
}

/// A parsed data frame: where it goes and how many inline messages it holds.
#[derive(Debug)]
pub(crate) struct DataHead {
    pub(crate) from: u32,
    pub(crate) to: u32,
    /// Inline messages (the body, if any, comes after them).
    pub(crate) inline: u32,
    /// The phase the messages were sent in.
    pub(crate) phase: u64,
}

/// A parsed frame of the cross-rank stall check: its message code and sequence
/// number, and its payload's range of the head (empty if the payload is the body).
#[derive(Debug)]
pub(crate) struct StallHead {
    pub(crate) from_rank: u32,
    pub(crate) code: u64,
    pub(crate) seq: u64,
    pub(crate) inline: Range<usize>,
}

/// A parsed frame of a channel between locations: its ends, the channel's
/// number, the message's kind and argument, and the value's range of the head
/// (empty if it is the body or the message carries none).
#[derive(Debug)]
pub(crate) struct ChannelHead {
    pub(crate) from: u32,
    pub(crate) to: u32,
    pub(crate) seq: u32,
    pub(crate) kind: u8,
    pub(crate) arg: u64,
    pub(crate) inline: Range<usize>,
}

/// Channel message kind (`ChannelHead::kind`): a value (to the receiving end).
pub(crate) const CHANNEL_VALUE: u8 = 1;
/// Credits (to the sending end).
pub(crate) const CHANNEL_CREDIT: u8 = 2;
/// The sending end closed (to the receiving end).
pub(crate) const CHANNEL_CLOSE_TX: u8 = 3;
/// The receiving end closed (to the sending end).
pub(crate) const CHANNEL_CLOSE_RX: u8 = 4;

/// What a frame is.
#[derive(Debug)]
pub(crate) enum Parsed {
    Data(DataHead),
    Collective(CollectiveHead),
    Stall(StallHead),
    Channel(ChannelHead),
}

/// Why a frame was rejected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FrameError(pub(crate) String);

impl fmt::Display for FrameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

fn bad<T>(why: impl Into<String>) -> Result<T, FrameError> {
    Err(FrameError(why.into()))
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    let s = b.get(at..at.checked_add(4)?)?;
    Some(u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
}

/// A fresh head: room for the codec header, to be written by [`seal`].
fn reserve(capacity: usize) -> Vec<u8> {
    let mut h = Vec::with_capacity(capacity.max(HEADER) + 7);
    h.resize(HEADER, 0);
    h
}

/// Writes the codec header of a head built by appending to [`reserve`]'s buffer.
fn seal(head: &mut Vec<u8>, what: u8, body: bool, src: u32, dst: u32, target: u64, corr: u64) {
    let bits = what | if body { FLAG_BODY } else { 0 };
    let header = Header {
        flags: Flags::world(bits),
        src,
        dst,
        target,
        corr,
        ..Header::new(FrameKind::Control)
    };
    codec::seal_frame(&header, head, 0);
}

/// Builds a data frame by appending messages.
#[derive(Debug)]
pub(crate) struct DataBuilder {
    head: Vec<u8>,
    from: u32,
    to: u32,
    count: u32,
}

impl DataBuilder {
    pub(crate) fn new(from: u32, to: u32, capacity: usize) -> DataBuilder {
        DataBuilder {
            head: reserve(capacity),
            from,
            to,
            count: 0,
        }
    }

    /// Bytes the frame would have with one more inline message of `len` bytes
    /// (before padding).
    pub(crate) fn len_with(&self, len: usize) -> usize {
        self.head.len() + ENTRY_PREFIX + len
    }

    pub(crate) fn count(&self) -> u32 {
        self.count
    }

    /// Appends an inline message (at most `u32::MAX` bytes; the world sends larger
    /// ones as bodies).
    pub(crate) fn push(&mut self, msg: &[u8]) {
        debug_assert!(msg.len() <= u32::MAX as usize);
        self.head
            .extend_from_slice(&(msg.len() as u32).to_le_bytes());
        self.head.extend_from_slice(msg);
        self.count += 1;
    }

    /// The finished frame, with `body` (if any) as its last message, its
    /// messages sent in `phase`.
    pub(crate) fn finish(self, body: Option<Vec<u8>>, phase: u64) -> Frame {
        let head = self.finish_head(body.is_some(), phase);
        Frame { head, body }
    }

    /// The finished head of a frame whose body (if `body`) travels apart from
    /// it, its messages sent in `phase`.
    pub(crate) fn finish_head(mut self, body: bool, phase: u64) -> Vec<u8> {
        let count = u64::from(self.count) + u64::from(body);
        seal(
            &mut self.head,
            WHAT_DATA,
            body,
            self.from,
            self.to,
            count,
            phase,
        );
        self.head
    }
}

/// What identifies a collective frame within its collective.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct CollectiveTag {
    /// Which collective (every location counts its collectives).
    pub(crate) epoch: u64,
    pub(crate) phase: Phase,
    /// The collective's kind code (checked against the receiver's).
    pub(crate) kind: u8,
    /// The root location, for rooted collectives.
    pub(crate) root: u32,
}

impl CollectiveTag {
    /// The tag's phase, kind and root packed into the header's `corr` field.
    fn corr(&self) -> u64 {
        let phase: u64 = match self.phase {
            Phase::Up => 1,
            Phase::Down => 2,
        };
        phase | u64::from(self.kind) << 8 | u64::from(self.root) << 32
    }
}

/// A collective frame carrying `value`: inline if it is at most `inline_max`
/// bytes, else as the body.
pub(crate) fn collective(
    from_rank: u32,
    to_rank: u32,
    tag: CollectiveTag,
    value: Vec<u8>,
    inline_max: usize,
) -> Frame {
    let (mut head, body) = head_and_body(value, inline_max);
    let as_body = body.is_some();
    let corr = tag.corr();
    seal(
        &mut head,
        WHAT_COLLECTIVE,
        as_body,
        from_rank,
        to_rank,
        tag.epoch,
        corr,
    );
    Frame { head, body }
}

/// A frame of the cross-rank stall check (`stall.rs`): message `code`, sequence
/// number `seq`, and `payload` (inline if at most `inline_max` bytes, else as the
/// body).
pub(crate) fn stall(
    from_rank: u32,
    to_rank: u32,
    code: u64,
    seq: u64,
    payload: Vec<u8>,
    inline_max: usize,
) -> Frame {
    let (mut head, body) = head_and_body(payload, inline_max);
    let as_body = body.is_some();
    seal(
        &mut head, WHAT_STALL, as_body, from_rank, to_rank, code, seq,
    );
    Frame { head, body }
}

/// A frame of a channel between locations `from` and `to` (`channel/`):
/// message `kind` of channel `seq` with argument `arg`, and a value (inline if
/// at most `inline_max` bytes, else as the body).
pub(crate) fn channel(
    from: u32,
    to: u32,
    seq: u32,
    kind: u8,
    arg: u64,
    value: Vec<u8>,
    inline_max: usize,
) -> Frame {
    let (mut head, body) = head_and_body(value, inline_max);
    let as_body = body.is_some();
    let target = u64::from(seq) | u64::from(kind) << 32;
    seal(&mut head, WHAT_CHANNEL, as_body, from, to, target, arg);
    Frame { head, body }
}

/// A frame's head with room for its header, and `value`: appended to the head
/// when it is at most `inline_max` bytes, else returned as the frame's body.
fn head_and_body(value: Vec<u8>, inline_max: usize) -> (Vec<u8>, Option<Vec<u8>>) {
    if value.len() > inline_max {
        (reserve(HEADER), Some(value))
    } else {
        let mut head = reserve(HEADER + value.len());
        head.extend_from_slice(&value);
        (head, None)
    }
}

/// Parses and fully validates a frame's head (`has_body`: a body came with it).
pub(crate) fn parse(head: &[u8], has_body: bool) -> Result<Parsed, FrameError> {
    let frame = codec::decode_frame(head).map_err(|e| FrameError(e.to_string()))?;
    let h = *frame.header();
    let end = HEADER + frame.payload().len();
    if h.kind != FrameKind::Control {
        return bad(format!(
            "a {:?} frame where the world sends only Control frames",
            h.kind
        ));
    }
    let bits = h.flags.world_bits();
    if h.flags != Flags::world(bits) {
        return bad(format!("codec flags {:?} on a world frame", h.flags));
    }
    if h.msg != MsgId::NONE {
        return bad("a world frame names a message type");
    }
    if (bits & FLAG_BODY != 0) != has_body {
        return bad(if has_body {
            "a body came with a frame that announces none"
        } else {
            "the frame announces a body that did not come"
        });
    }
    match bits & !FLAG_BODY {
        WHAT_DATA => {
            // Count the inline messages by walking them: each must end within
            // the payload, and together they must fill it exactly.
            let payload = &head[..end];
            let mut pos = HEADER;
            let mut inline = 0u64;
            while pos < end {
                if next_entry(payload, &mut pos).is_none() {
                    return bad(format!(
                        "message {inline} runs past the end of the {}-byte payload",
                        end - HEADER
                    ));
                }
                inline += 1;
            }
            let count = inline + u64::from(has_body);
            if count != h.target {
                return bad(format!(
                    "a data frame says it holds {} messages and holds {count}",
                    h.target
                ));
            }
            if count == 0 {
                return bad("a data frame without messages");
            }
            Ok(Parsed::Data(DataHead {
                from: h.src,
                to: h.dst,
                // At most a quarter of the payload's length.
                inline: u32::try_from(inline)
                    .map_err(|_| FrameError(format!("{inline} messages in one frame")))?,
                phase: h.corr,
            }))
        }
        WHAT_COLLECTIVE => {
            let phase = match h.corr & 0xff {
                1 => Phase::Up,
                2 => Phase::Down,
                p => return bad(format!("unknown collective phase {p}")),
            };
            if h.corr & 0xffff_0000 != 0 {
                return bad(format!(
                    "unknown bits in a collective tag: {:#018x}",
                    h.corr
                ));
            }
            if has_body && end != HEADER {
                return bad("a collective frame with both an inline value and a body");
            }
            Ok(Parsed::Collective(CollectiveHead {
                from_rank: h.src,
                tag: CollectiveTag {
                    epoch: h.target,
                    phase,
                    kind: (h.corr >> 8) as u8,
                    root: (h.corr >> 32) as u32,
                },
                inline: HEADER..end,
            }))
        }
        WHAT_STALL => {
            if has_body && end != HEADER {
                return bad("a stall-check frame with both an inline payload and a body");
            }
            Ok(Parsed::Stall(StallHead {
                from_rank: h.src,
                code: h.target,
                seq: h.corr,
                inline: HEADER..end,
            }))
        }
        WHAT_CHANNEL => {
            let kind = (h.target >> 32) as u8;
            if h.target >> 40 != 0 || !(CHANNEL_VALUE..=CHANNEL_CLOSE_RX).contains(&kind) {
                return bad(format!(
                    "unknown channel message kind in {:#018x}",
                    h.target
                ));
            }
            if kind != CHANNEL_VALUE && (has_body || end != HEADER) {
                return bad("a channel's credit or close message carries a value");
            }
            if has_body && end != HEADER {
                return bad("a channel frame with both an inline value and a body");
            }
            Ok(Parsed::Channel(ChannelHead {
                from: h.src,
                to: h.dst,
                seq: h.target as u32,
                kind,
                arg: h.corr,
                inline: HEADER..end,
            }))
        }
        w => bad(format!("unknown world frame kind {w}")),
    }
}

/// The next inline message of a data frame: its byte range, advancing `pos`.
/// `None` if it would run past the end of `head` (impossible for a parsed frame).
pub(crate) fn next_entry(head: &[u8], pos: &mut usize) -> Option<Range<usize>> {
    let len = u32_at(head, *pos)? as usize;
    let start = pos.checked_add(ENTRY_PREFIX)?;
    let end = start.checked_add(len)?;
    if end > head.len() {
        return None;
    }
    *pos = end;
    Some(start..end)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(msgs: &[&[u8]], body: Option<Vec<u8>>) -> Frame {
        let mut b = DataBuilder::new(3, 9, 64);
        for m in msgs {
            b.push(m);
        }
        b.finish(body, 0)
    }

    fn messages(f: &Frame) -> Vec<Vec<u8>> {
        let Parsed::Data(h) = parse(&f.head, f.body.is_some()).unwrap() else {
            panic!("not data")
        };
        let mut pos = HEADER;
        (0..h.inline)
            .map(|_| f.head[next_entry(&f.head, &mut pos).unwrap()].to_vec())
            .collect()
    }

    #[test]
    fn data_frames_are_codec_frames_and_round_trip() {
        let f = data(&[b"ab", b"", b"xyz"], None);
        let c = codec::decode_frame(&f.head).unwrap();
        assert_eq!(c.header().kind, FrameKind::Control);
        assert_eq!(f.head.len() % 8, 0);
        // One header for the batch, then 4-byte prefixes.
        assert_eq!(c.payload().len(), 3 * ENTRY_PREFIX + 5);
        let Parsed::Data(h) = parse(&f.head, false).unwrap() else {
            panic!("not data")
        };
        assert_eq!((h.from, h.to, h.inline), (3, 9, 3));
        assert_eq!(messages(&f), [&b"ab"[..], b"", b"xyz"]);

        let f = data(&[b"q"], Some(vec![7; 100]));
        assert_eq!(messages(&f), [b"q"]);
        assert!(
            parse(&f.head, false).is_err(),
            "missing body must be noticed"
        );
        let f = data(&[], Some(vec![1]));
        assert_eq!(f.head.len(), HEADER);
        assert!(messages(&f).is_empty());
    }

    #[test]
    fn collective_frames_round_trip_inline_and_as_body() {
        for (value, inline_max) in [(vec![1, 2, 3], 16), (vec![5; 40], 16), (vec![], 16)] {
            for phase in [Phase::Up, Phase::Down] {
                let tag = CollectiveTag {
                    epoch: u64::MAX - 3,
                    phase,
                    kind: 3,
                    root: u32::MAX,
                };
                let f = collective(1, 0, tag, value.clone(), inline_max);
                let Parsed::Collective(c) = parse(&f.head, f.body.is_some()).unwrap() else {
                    panic!("not collective")
                };
                assert_eq!((c.from_rank, c.tag), (1, tag));
                match f.body {
                    Some(b) => assert_eq!(b, value),
                    None => assert_eq!(&f.head[c.inline], &value[..]),
                }
            }
        }
    }

    #[test]
    fn channel_frames_round_trip_and_reject_what_their_kind_forbids() {
        for (value, inline_max) in [(vec![1, 2, 3], 16), (vec![5; 40], 16), (vec![], 16)] {
            let f = channel(3, 8, u32::MAX, CHANNEL_VALUE, 7, value.clone(), inline_max);
            let Parsed::Channel(c) = parse(&f.head, f.body.is_some()).unwrap() else {
                panic!("not a channel frame")
            };
            assert_eq!((c.from, c.to, c.seq, c.kind, c.arg), (3, 8, u32::MAX, 1, 7));
            match f.body {
                Some(b) => assert_eq!(b, value),
                None => assert_eq!(&f.head[c.inline], &value[..]),
            }
        }
        let f = channel(0, 1, 2, CHANNEL_CREDIT, 5, Vec::new(), 16);
        assert!(matches!(
            parse(&f.head, false),
            Ok(Parsed::Channel(ChannelHead {
                kind: CHANNEL_CREDIT,
                arg: 5,
                ..
            }))
        ));
        let f = channel(0, 1, 2, CHANNEL_CLOSE_RX, 0, vec![9], 16);
        assert_eq!(
            parse(&f.head, false).unwrap_err().0,
            "a channel's credit or close message carries a value"
        );
        let f = channel(0, 1, 2, 9, 0, Vec::new(), 16);
        assert!(parse(&f.head, false)
            .unwrap_err()
            .0
            .starts_with("unknown channel message kind"));
    }

    /// Deterministic pseudo-random bytes.
    fn noise(x: &mut u64) -> u8 {
        *x ^= *x << 13;
        *x ^= *x >> 7;
        *x ^= *x << 17;
        *x as u8
    }

    #[test]
    fn every_truncation_and_many_mutations_are_rejected_without_panic() {
        let frames = [
            data(&[b"hello", b"world", &[0; 30]], None),
            data(&[b"x"], Some(vec![1; 9])),
            collective(
                2,
                1,
                CollectiveTag {
                    epoch: 5,
                    phase: Phase::Down,
                    kind: 4,
                    root: 0,
                },
                vec![9; 11],
                64,
            ),
            channel(4, 2, 6, CHANNEL_VALUE, 3, vec![8; 13], 64),
        ];
        let mut accepted = 0;
        for f in &frames {
            let body = f.body.is_some();
            for cut in 0..f.head.len() {
                assert!(parse(&f.head[..cut], body).is_err(), "cut at {cut}");
            }
            // Set every byte to several values: must never panic; the data frames
            // that still parse must describe messages that lie inside the payload.
            for i in 0..f.head.len() {
                for v in [0u8, 1, 2, 0x7f, 0x80, 0xff] {
                    let mut m = f.head.clone();
                    m[i] = v;
                    match parse(&m, body) {
                        Ok(Parsed::Data(h)) => {
                            accepted += 1;
                            let end = HEADER + codec::decode_frame(&m).unwrap().payload().len();
                            let mut pos = HEADER;
                            for _ in 0..h.inline {
                                let r = next_entry(&m, &mut pos).expect("validated");
                                assert!(r.end <= end);
                            }
                        }
                        Ok(Parsed::Collective(c)) => {
                            accepted += 1;
                            assert!(c.inline.end <= m.len());
                        }
                        Ok(Parsed::Stall(h)) => {
                            accepted += 1;
                            assert!(h.inline.end <= m.len());
                        }
                        Ok(Parsed::Channel(h)) => {
                            accepted += 1;
                            assert!(h.inline.end <= m.len());
                        }
                        Err(e) => assert!(!e.0.is_empty()),
                    }
                }
            }
        }
        assert!(accepted > 0, "mutating message bytes keeps frames valid");
        // Random garbage, and random bytes behind a valid codec header.
        let mut x = 0x2545_f491_4f6c_dd1du64;
        for len in 0..300 {
            let bytes: Vec<u8> = (0..len).map(|_| noise(&mut x)).collect();
            assert!(parse(&bytes, len % 2 == 0).is_err());
            let mut framed = reserve(HEADER);
            framed.extend_from_slice(&bytes);
            seal(
                &mut framed,
                WHAT_DATA,
                false,
                0,
                1,
                u64::from(noise(&mut x) % 4),
                0,
            );
            let _ = parse(&framed, false);
        }
        // A huge claimed message length is an error, not an allocation.
        let mut m = data(&[b"a"], None).head;
        m[HEADER..HEADER + 4].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(parse(&m, false).unwrap_err().0.contains("runs past"));
    }

    #[test]
    fn errors_name_the_problem() {
        let f = data(&[b"x"], None);
        let expect = |m: &[u8], body: bool, want: &str| {
            let e = parse(m, body).unwrap_err().0;
            assert!(e.contains(want), "{e:?} does not mention {want:?}");
        };
        let mut m = f.head.clone();
        m[0] = b'X';
        expect(&m, false, "not a tutti frame");
        let mut m = f.head.clone();
        m[4] = 9;
        expect(&m, false, "version 9");
        let mut m = f.head.clone();
        m[5] = 9;
        expect(&m, false, "kind 9");
        let mut m = f.head.clone();
        m[5] = FrameKind::Tell as u8;
        m[24] = 1;
        expect(&m, false, "only Control frames");
        let mut m = f.head.clone();
        m[7] = 5;
        expect(&m, false, "world frame kind 5");
        let mut m = f.head.clone();
        m[7] |= FLAG_BODY;
        expect(&m, false, "announces a body");
        expect(&f.head, true, "announces none");
        let mut m = f.head.clone();
        m[32] = 2;
        expect(&m, false, "says it holds 2 messages and holds 1");
        let mut m = f.head.clone();
        m.extend_from_slice(&[0; 8]);
        expect(&m, false, "left over");
        let mut m = f.head.clone();
        m[HEADER + 5] = 1;
        expect(&m, false, "padding");
    }
}
