//! The world's frames: what one rank hands its transport for another rank.
//!
//! A frame is a small **head** and an optional **body**. The head starts with a
//! fixed 20-byte header; the body carries one large message (or a large collective
//! value) so that it travels without being copied into a batch.
//!
//! ```text
//! header  0..2  magic "tw"       2  version       3  kind (1 data, 2 collective)
//!         4     flags (bit 0: the frame has a body)        5..8  zero
//!         8..12 source (u32 LE)  12..16 destination (u32 LE)  16..20 count (u32 LE)
//! data:       source/destination are locations; `count` messages follow the
//!             header as (length u32 LE, bytes); with a body, the body is the last
//!             message and is not among the inline ones.
//! collective: source/destination are ranks; `count` is 0; then
//!             epoch u64, phase u8 (1 up, 2 down), kind u8, root u32, and the value
//!             (inline, or the body).
//! ```
//!
//! Parsing checks every length against what is there and never panics: a frame that
//! does not parse is an error naming what is wrong (the receiving rank then takes the
//! job down, since a peer that sends garbage cannot be trusted to follow the protocol).

// Parsing is only needed where frames arrive from another process.
#![cfg_attr(not(feature = "mpi"), allow(dead_code))]

use std::fmt;
use std::ops::Range;

/// First bytes of every frame.
pub(crate) const MAGIC: [u8; 2] = *b"tw";
/// Frame format version.
pub(crate) const VERSION: u8 = 1;
/// Bytes of the fixed header.
pub(crate) const HEADER: usize = 20;
/// Bytes of a collective frame's fixed part after the header.
pub(crate) const COLLECTIVE_FIXED: usize = 14;
/// Bytes of the length prefix of an inline message.
pub(crate) const ENTRY_PREFIX: usize = 4;

const KIND_DATA: u8 = 1;
const KIND_COLLECTIVE: u8 = 2;
const FLAG_BODY: u8 = 1;

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

/// A parsed collective frame; `value` is a range of the head, or the whole body.
#[derive(Debug)]
pub(crate) struct CollectiveHead {
    pub(crate) from_rank: u32,
    pub(crate) tag: CollectiveTag,
    pub(crate) inline: Range<usize>,
}

/// A parsed data frame: where it goes and where its inline messages are.
#[derive(Debug)]
pub(crate) struct DataHead {
    pub(crate) from: u32,
    pub(crate) to: u32,
    /// Inline messages (the body, if any, comes after them).
    pub(crate) inline: u32,
}

/// What a frame is.
#[derive(Debug)]
pub(crate) enum Parsed {
    Data(DataHead),
    Collective(CollectiveHead),
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

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    let s = b.get(at..at.checked_add(8)?)?;
    let mut a = [0u8; 8];
    a.copy_from_slice(s);
    Some(u64::from_le_bytes(a))
}

fn header(kind: u8, body: bool, from: u32, to: u32, capacity: usize) -> Vec<u8> {
    let mut h = Vec::with_capacity(capacity.max(HEADER));
    h.extend_from_slice(&MAGIC);
    h.push(VERSION);
    h.push(kind);
    h.push(if body { FLAG_BODY } else { 0 });
    h.extend_from_slice(&[0, 0, 0]);
    h.extend_from_slice(&from.to_le_bytes());
    h.extend_from_slice(&to.to_le_bytes());
    h.extend_from_slice(&0u32.to_le_bytes());
    h
}

/// Builds a data frame by appending messages.
#[derive(Debug)]
pub(crate) struct DataBuilder {
    head: Vec<u8>,
    count: u32,
}

impl DataBuilder {
    pub(crate) fn new(from: u32, to: u32, capacity: usize) -> DataBuilder {
        DataBuilder {
            head: header(KIND_DATA, false, from, to, capacity),
            count: 0,
        }
    }

    /// Bytes the frame would have with one more inline message of `len` bytes.
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

    /// The finished frame, with `body` (if any) as its last message.
    pub(crate) fn finish(mut self, body: Option<Vec<u8>>) -> Frame {
        if body.is_some() {
            self.head[4] = FLAG_BODY;
            self.count += 1;
        }
        self.head[16..20].copy_from_slice(&self.count.to_le_bytes());
        Frame {
            head: self.head,
            body,
        }
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

/// A collective frame carrying `value`: inline if it is at most `inline_max`
/// bytes, else as the body.
pub(crate) fn collective(
    from_rank: u32,
    to_rank: u32,
    tag: CollectiveTag,
    value: Vec<u8>,
    inline_max: usize,
) -> Frame {
    let CollectiveTag {
        epoch,
        phase,
        kind,
        root,
    } = tag;
    let as_body = value.len() > inline_max;
    let mut head = header(
        KIND_COLLECTIVE,
        as_body,
        from_rank,
        to_rank,
        HEADER + COLLECTIVE_FIXED + if as_body { 0 } else { value.len() },
    );
    head.extend_from_slice(&epoch.to_le_bytes());
    head.push(match phase {
        Phase::Up => 1,
        Phase::Down => 2,
    });
    head.push(kind);
    head.extend_from_slice(&root.to_le_bytes());
    if as_body {
        Frame {
            head,
            body: Some(value),
        }
    } else {
        head.extend_from_slice(&value);
        Frame { head, body: None }
    }
}

/// Parses and fully validates a frame's head (`has_body`: a body came with it).
pub(crate) fn parse(head: &[u8], has_body: bool) -> Result<Parsed, FrameError> {
    if head.len() < HEADER {
        return bad(format!(
            "frame of {} bytes is shorter than the {HEADER}-byte header",
            head.len()
        ));
    }
    if head[0..2] != MAGIC {
        return bad(format!("bad magic {:02x}{:02x}", head[0], head[1]));
    }
    if head[2] != VERSION {
        return bad(format!(
            "frame version {} (this build speaks {VERSION})",
            head[2]
        ));
    }
    let flags = head[4];
    if flags & !FLAG_BODY != 0 || head[5..8] != [0, 0, 0] {
        return bad(format!("unknown flags {flags:#04x}"));
    }
    if (flags & FLAG_BODY != 0) != has_body {
        return bad(if has_body {
            "a body came with a frame that announces none"
        } else {
            "the frame announces a body that did not come"
        });
    }
    // Every read below is within the checked header length.
    let from = u32_at(head, 8).unwrap_or(0);
    let to = u32_at(head, 12).unwrap_or(0);
    let count = u32_at(head, 16).unwrap_or(0);
    match head[3] {
        KIND_DATA => {
            let inline = if has_body {
                match count.checked_sub(1) {
                    Some(n) => n,
                    None => return bad("a data frame with a body counts no messages"),
                }
            } else {
                count
            };
            let mut pos = HEADER;
            for i in 0..inline {
                match next_entry(head, &mut pos) {
                    Some(_) => {}
                    None => {
                        return bad(format!(
                            "message {i} of {inline} runs past the end of the {}-byte frame",
                            head.len()
                        ))
                    }
                }
            }
            if pos != head.len() {
                return bad(format!(
                    "{} stray bytes after the last of {inline} messages",
                    head.len() - pos
                ));
            }
            Ok(Parsed::Data(DataHead { from, to, inline }))
        }
        KIND_COLLECTIVE => {
            if count != 0 {
                return bad("a collective frame with a message count");
            }
            let fixed = HEADER + COLLECTIVE_FIXED;
            if head.len() < fixed {
                return bad("collective frame shorter than its fixed part");
            }
            let epoch = u64_at(head, HEADER).unwrap_or(0);
            let phase = match head[HEADER + 8] {
                1 => Phase::Up,
                2 => Phase::Down,
                p => return bad(format!("unknown collective phase {p}")),
            };
            let kind = head[HEADER + 9];
            let root = u32_at(head, HEADER + 10).unwrap_or(0);
            if has_body && head.len() != fixed {
                return bad("a collective frame with both an inline value and a body");
            }
            Ok(Parsed::Collective(CollectiveHead {
                from_rank: from,
                tag: CollectiveTag {
                    epoch,
                    phase,
                    kind,
                    root,
                },
                inline: fixed..head.len(),
            }))
        }
        k => bad(format!("unknown frame kind {k}")),
    }
}

/// The next inline message of a data frame: its byte range, advancing `pos`.
/// `None` if it would run past the end (impossible for a parsed frame).
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
        b.finish(body)
    }

    #[test]
    fn data_frames_round_trip() {
        let f = data(&[b"ab", b"", b"xyz"], None);
        let Parsed::Data(h) = parse(&f.head, false).unwrap() else {
            panic!("not data")
        };
        assert_eq!((h.from, h.to, h.inline), (3, 9, 3));
        let mut pos = HEADER;
        let got: Vec<&[u8]> = (0..3)
            .map(|_| &f.head[next_entry(&f.head, &mut pos).unwrap()])
            .collect();
        assert_eq!(got, [&b"ab"[..], b"", b"xyz"]);

        let f = data(&[b"q"], Some(vec![7; 100]));
        let Parsed::Data(h) = parse(&f.head, true).unwrap() else {
            panic!("not data")
        };
        assert_eq!(h.inline, 1);
        assert!(
            parse(&f.head, false).is_err(),
            "missing body must be noticed"
        );
    }

    #[test]
    fn collective_frames_round_trip_inline_and_as_body() {
        for (value, inline_max) in [(vec![1, 2, 3], 16), (vec![5; 40], 16)] {
            let tag = CollectiveTag {
                epoch: 42,
                phase: Phase::Up,
                kind: 3,
                root: 7,
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

    #[test]
    fn every_truncation_and_many_mutations_are_rejected_without_panic() {
        let f = data(&[b"hello", b"world", &[0; 30]], None);
        for cut in 0..f.head.len() {
            assert!(parse(&f.head[..cut], false).is_err(), "cut at {cut}");
        }
        // Flip every byte to every other value: must never panic; the frames that
        // still parse must describe messages that lie inside the frame.
        let mut accepted = 0;
        for i in 0..f.head.len() {
            for v in [0u8, 1, 2, 0x7f, 0x80, 0xff] {
                let mut m = f.head.clone();
                m[i] = v;
                if let Ok(Parsed::Data(h)) = parse(&m, false) {
                    accepted += 1;
                    let mut pos = HEADER;
                    for _ in 0..h.inline {
                        let r = next_entry(&m, &mut pos).expect("validated");
                        assert!(r.end <= m.len());
                    }
                }
            }
        }
        assert!(accepted > 0, "mutating message bytes keeps frames valid");
        // Random garbage, deterministic.
        let mut x = 0x2545_f491_4f6c_dd1du64;
        for len in 0..200 {
            let bytes: Vec<u8> = (0..len)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x as u8
                })
                .collect();
            let _ = parse(&bytes, len % 2 == 0);
        }
        // A huge claimed length is an error, not an allocation.
        let mut m = data(&[b"a"], None).head;
        m[HEADER..HEADER + 4].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(parse(&m, false).unwrap_err().0.contains("runs past"));
    }

    #[test]
    fn errors_name_the_problem() {
        let f = data(&[b"x"], None);
        let mut m = f.head.clone();
        m[0] = b'X';
        assert!(parse(&m, false).unwrap_err().0.contains("magic"));
        let mut m = f.head.clone();
        m[2] = 9;
        assert!(parse(&m, false).unwrap_err().0.contains("version 9"));
        let mut m = f.head.clone();
        m[3] = 5;
        assert!(parse(&m, false).unwrap_err().0.contains("kind 5"));
        let mut m = f.head.clone();
        m.push(0);
        assert!(parse(&m, false).unwrap_err().0.contains("stray"));
    }
}
