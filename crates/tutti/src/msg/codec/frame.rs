//! Frames: a fixed 48-byte header, the payload, zero padding to a multiple of 8 bytes.
//! The layout and the checks are in the module documentation of [`codec`](super).

use std::borrow::Cow;
use std::fmt;
use std::ops::BitOr;

use bytemuck::Pod;
use serde::{Deserialize, Serialize};

use super::format::{self, DEFAULT_MAX_DEPTH};
use super::pod;
use super::CodecError;
use crate::msg::MsgId;

/// The first four bytes of every frame.
pub const MAGIC: [u8; 4] = *b"TUTI";
/// The codec version this build writes and reads; any change to the header layout, the
/// serde format or the id hash makes a new version.
pub const VERSION: u8 = 1;
/// Bytes of a frame header.
pub const HEADER_LEN: usize = 48;
/// Every frame's length is a multiple of this.
pub const FRAME_ALIGN: usize = 8;

/// What a frame is for.
///
/// ```
/// use tutti::msg::codec::FrameKind;
/// assert_eq!(FrameKind::Ask as u8, 2);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum FrameKind {
    /// A statement: deliver the message to `target` at `dst`; nobody waits.
    Tell = 1,
    /// A question: deliver the message, and send its reply back with the same `corr`.
    Ask = 2,
    /// The answer to the question with id `corr`; the payload is the reply value.
    Reply = 3,
    /// The question with id `corr` will get no answer; the payload is the reason, a
    /// string (no such target, the message did not decode, the handler panicked, …).
    Fault = 4,
    /// The world layer's own traffic (barriers, termination detection, start-up
    /// checks); `msg` may name a registered type.
    Control = 5,
}

impl FrameKind {
    fn from_wire(k: u8) -> Result<FrameKind, CodecError> {
        Ok(match k {
            1 => FrameKind::Tell,
            2 => FrameKind::Ask,
            3 => FrameKind::Reply,
            4 => FrameKind::Fault,
            5 => FrameKind::Control,
            _ => return Err(CodecError::UnknownKind(k)),
        })
    }
}

/// The flag bits of a frame header.
///
/// The low byte belongs to the codec: [`POD`](Flags::POD) and
/// [`PRIORITY`](Flags::PRIORITY); its other bits are reserved and rejected when set. The
/// high byte belongs to the world layer ([`Flags::world`]), which the codec carries
/// without looking at.
///
/// ```
/// use tutti::msg::codec::Flags;
///
/// let f = Flags::PRIORITY | Flags::world(0b101);
/// assert!(f.contains(Flags::PRIORITY) && !f.contains(Flags::POD));
/// assert_eq!(f.world_bits(), 0b101);
/// assert_eq!(f.bits(), 0x0502);
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Flags(u16);

impl Flags {
    /// No flag set.
    pub const NONE: Flags = Flags(0);
    /// The payload is plain-old-data bytes ([`encode_pod_frame`]), not serde.
    pub const POD: Flags = Flags(1 << 0);
    /// Deliver through the target's priority lane (e.g. an actor's system messages).
    pub const PRIORITY: Flags = Flags(1 << 1);
    /// Bits the world layer owns.
    const WORLD: u16 = 0xff00;
    /// Bits this version of the codec knows.
    const KNOWN: u16 = Self::POD.0 | Self::PRIORITY.0 | Self::WORLD;

    /// The world layer's bits `bits`, in the high byte.
    pub const fn world(bits: u8) -> Flags {
        Flags((bits as u16) << 8)
    }

    /// The world layer's bits.
    pub const fn world_bits(self) -> u8 {
        (self.0 >> 8) as u8
    }

    /// The raw 16 bits, as in the header.
    pub const fn bits(self) -> u16 {
        self.0
    }

    /// Whether every bit of `other` is set.
    pub const fn contains(self, other: Flags) -> bool {
        self.0 & other.0 == other.0
    }

    /// Flags from the raw header bits; reserved bits are an error.
    ///
    /// ```
    /// # use tutti::msg::codec::{CodecError, Flags};
    /// assert_eq!(Flags::from_bits(1), Ok(Flags::POD));
    /// assert_eq!(Flags::from_bits(1 << 5), Err(CodecError::ReservedFlags(1 << 5)));
    /// ```
    pub const fn from_bits(bits: u16) -> Result<Flags, CodecError> {
        if bits & !Self::KNOWN != 0 {
            Err(CodecError::ReservedFlags(bits & !Self::KNOWN))
        } else {
            Ok(Flags(bits))
        }
    }
}

impl BitOr for Flags {
    type Output = Flags;
    fn bitor(self, rhs: Flags) -> Flags {
        Flags(self.0 | rhs.0)
    }
}

impl fmt::Debug for Flags {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut set = f.debug_set();
        if self.contains(Flags::POD) {
            set.entry(&"POD");
        }
        if self.contains(Flags::PRIORITY) {
            set.entry(&"PRIORITY");
        }
        if self.world_bits() != 0 {
            set.entry(&format_args!("world({:#04x})", self.world_bits()));
        }
        set.finish()
    }
}

/// The fields of a frame header (everything but magic, version and length, which the
/// codec writes and checks itself).
///
/// Build one with [`Header::new`] and struct update syntax:
///
/// ```
/// use tutti::msg::codec::{FrameKind, Header};
/// use tutti::msg::MsgId;
///
/// let h = Header { dst: 3, msg: MsgId::from_name("bank.Deposit"), target: 17, ..Header::new(FrameKind::Tell) };
/// assert_eq!((h.src, h.corr), (0, 0));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Header {
    /// What the frame is for.
    pub kind: FrameKind,
    /// Flag bits.
    pub flags: Flags,
    /// Sending location.
    pub src: u32,
    /// Destination location.
    pub dst: u32,
    /// The payload's message type ([`MsgId::NONE`] if it has none).
    pub msg: MsgId,
    /// The object the message is for at the destination (0 = none).
    pub target: u64,
    /// Pairs a question with its answer (0 = none).
    pub corr: u64,
}

impl Header {
    /// A header of `kind` with every other field zero.
    pub const fn new(kind: FrameKind) -> Header {
        Header {
            kind,
            flags: Flags::NONE,
            src: 0,
            dst: 0,
            msg: MsgId::NONE,
            target: 0,
            corr: 0,
        }
    }

    /// The per-kind rules of the module documentation.
    fn check(&self) -> Result<(), CodecError> {
        let needs_msg = matches!(self.kind, FrameKind::Tell | FrameKind::Ask);
        let needs_corr = matches!(
            self.kind,
            FrameKind::Ask | FrameKind::Reply | FrameKind::Fault
        );
        if needs_msg && self.msg == MsgId::NONE {
            return Err(CodecError::InvalidHeader(
                "a Tell or Ask frame must name its message type",
            ));
        }
        if needs_corr && self.corr == 0 {
            return Err(CodecError::InvalidHeader(
                "an Ask, Reply or Fault frame needs a correlation id",
            ));
        }
        Ok(())
    }

    fn write(&self, flags: Flags, len: u64, out: &mut [u8]) {
        out[0..4].copy_from_slice(&MAGIC);
        out[4] = VERSION;
        out[5] = self.kind as u8;
        out[6..8].copy_from_slice(&flags.0.to_le_bytes());
        out[8..12].copy_from_slice(&self.src.to_le_bytes());
        out[12..16].copy_from_slice(&self.dst.to_le_bytes());
        out[16..24].copy_from_slice(&len.to_le_bytes());
        out[24..32].copy_from_slice(&self.msg.get().to_le_bytes());
        out[32..40].copy_from_slice(&self.target.to_le_bytes());
        out[40..48].copy_from_slice(&self.corr.to_le_bytes());
    }
}

/// Bounds on what a decoder accepts.
///
/// ```
/// use tutti::msg::codec::{decode_frame_with, encode_frame, CodecError, FrameKind, Header, Limits};
///
/// let mut buf = Vec::new();
/// let h = Header { corr: 1, ..Header::new(FrameKind::Reply) };
/// encode_frame(&h, &vec![0u8; 100], &mut buf).unwrap();
/// let small = Limits { max_payload: 64, ..Limits::DEFAULT };
/// assert!(matches!(decode_frame_with(&buf, &small), Err(CodecError::TooLarge { .. })));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Largest payload accepted, in bytes (default 1 GiB).
    pub max_payload: u64,
    /// Deepest nesting of a decoded serde value (default 128).
    pub max_depth: u32,
}

impl Limits {
    /// 1 GiB payloads, values nested up to 128 levels.
    pub const DEFAULT: Limits = Limits {
        max_payload: 1 << 30,
        max_depth: DEFAULT_MAX_DEPTH,
    };
}

impl Default for Limits {
    fn default() -> Self {
        Limits::DEFAULT
    }
}

/// Bytes of padding after a payload of `len` bytes.
fn padding(len: usize) -> usize {
    (FRAME_ALIGN - len % FRAME_ALIGN) % FRAME_ALIGN
}

/// Reserves the header, lets `write_payload` append the payload, then writes the
/// header and the padding. On error `out` is left as it was.
fn encode_with(
    header: &Header,
    flags: Flags,
    out: &mut Vec<u8>,
    write_payload: impl FnOnce(&mut Vec<u8>) -> Result<(), CodecError>,
) -> Result<usize, CodecError> {
    header.check()?;
    let start = out.len();
    out.resize(start + HEADER_LEN, 0);
    if let Err(e) = write_payload(out) {
        out.truncate(start);
        return Err(e);
    }
    Ok(seal(header, flags, out, start))
}

/// Writes `header` into the [`HEADER_LEN`] bytes reserved at `out[start..]` for the
/// payload the caller has appended after them, then pads. Returns the frame's length.
fn seal(header: &Header, flags: Flags, out: &mut Vec<u8>, start: usize) -> usize {
    let len = out.len() - start - HEADER_LEN;
    out.resize(out.len() + padding(len), 0);
    header.write(flags, len as u64, &mut out[start..start + HEADER_LEN]);
    out.len() - start
}

/// Finishes a frame built in place: `out[start..start + HEADER_LEN]` was reserved
/// (any bytes) and the raw payload appended after it; writes `header` there and the
/// padding, and returns the frame's length. For the world layer, which appends
/// messages to an aggregation buffer one at a time.
///
/// # Panics
/// If no room was reserved, or `header` breaks its kind's rules (a caller's bug:
/// the world only seals `Control` frames).
pub(crate) fn seal_frame(header: &Header, out: &mut Vec<u8>, start: usize) -> usize {
    assert!(
        out.len() >= start + HEADER_LEN && header.check().is_ok(),
        "seal_frame: no header room reserved, or an invalid header {header:?}"
    );
    seal(header, header.flags, out, start)
}

/// Appends one frame to `out`: `header`, then `payload` encoded with serde.
/// Returns the frame's length in bytes; on error `out` is left as it was.
///
/// `out` can be a reused buffer, or one that already holds frames (an aggregation
/// buffer): frames are simply concatenated.
///
/// ```
/// use tutti::msg::codec::{decode_frame, encode_frame, FrameKind, Header};
/// use tutti::msg::MsgId;
///
/// let header = Header { dst: 1, msg: MsgId::from_name("greeting"), ..Header::new(FrameKind::Tell) };
/// let mut buf = Vec::new();
/// let n = encode_frame(&header, "hello", &mut buf).unwrap();
/// assert_eq!((n, buf.len() % 8), (56, 0));
///
/// let frame = decode_frame(&buf).unwrap();
/// assert_eq!(frame.header(), &header);
/// assert_eq!(frame.decode::<&str>().unwrap(), "hello");
/// ```
pub fn encode_frame<T: Serialize + ?Sized>(
    header: &Header,
    payload: &T,
    out: &mut Vec<u8>,
) -> Result<usize, CodecError> {
    if header.flags.contains(Flags::POD) {
        return Err(CodecError::InvalidHeader(
            "the POD flag is for encode_pod_frame, not for a serde payload",
        ));
    }
    encode_with(header, header.flags, out, |out| {
        format::encode(payload, out)
    })
}

/// Appends one frame whose payload is the bytes of `values` (the plain-old-data fast
/// path: one `memcpy`); sets [`Flags::POD`]. Returns the frame's length in bytes.
///
/// ```
/// use tutti::msg::codec::{decode_frame, encode_pod_frame, FrameKind, Header};
///
/// let mut buf = Vec::new();
/// let h = Header { corr: 9, ..Header::new(FrameKind::Reply) };
/// encode_pod_frame(&h, &[1.0f64, 2.0, 3.0], &mut buf).unwrap();
/// let frame = decode_frame(&buf).unwrap();
/// assert_eq!(&*frame.pod::<f64>().unwrap(), &[1.0, 2.0, 3.0]);
/// ```
pub fn encode_pod_frame<T: Pod>(
    header: &Header,
    values: &[T],
    out: &mut Vec<u8>,
) -> Result<usize, CodecError> {
    let bytes = pod::bytes_of(values);
    encode_with(header, header.flags | Flags::POD, out, |out| {
        out.extend_from_slice(bytes);
        Ok(())
    })
}

/// Appends one frame whose payload is `payload`, bytes already encoded (e.g. by
/// [`encode`](super::encode), or a reply from
/// [`RemoteReply`](crate::msg::RemoteReply)); the flags are taken as given. Returns the
/// frame's length in bytes.
///
/// ```
/// use tutti::msg::codec::{decode_frame, encode, encode_raw_frame, FrameKind, Header};
///
/// let mut payload = Vec::new();
/// encode(&42u32, &mut payload).unwrap();
/// let mut buf = Vec::new();
/// encode_raw_frame(&Header { corr: 5, ..Header::new(FrameKind::Reply) }, &payload, &mut buf).unwrap();
/// assert_eq!(decode_frame(&buf).unwrap().decode::<u32>(), Ok(42));
/// ```
pub fn encode_raw_frame(
    header: &Header,
    payload: &[u8],
    out: &mut Vec<u8>,
) -> Result<usize, CodecError> {
    encode_with(header, header.flags, out, |out| {
        out.extend_from_slice(payload);
        Ok(())
    })
}

/// One decoded frame: its header and a view of its payload in the input bytes.
///
/// Made by [`decode_frame`] and [`frames`]; borrows the input.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Frame<'a> {
    header: Header,
    payload: &'a [u8],
    max_depth: u32,
}

impl<'a> Frame<'a> {
    /// The header.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The payload bytes.
    pub fn payload(&self) -> &'a [u8] {
        self.payload
    }

    /// The nesting limit its payload is decoded with.
    pub(crate) fn max_depth(&self) -> u32 {
        self.max_depth
    }

    /// The frame's length in the input: header, payload and padding.
    pub fn len(&self) -> usize {
        HEADER_LEN + self.payload.len() + padding(self.payload.len())
    }

    /// Always false: a frame has at least its header.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Decodes the serde payload as a `T`, which may borrow from the input.
    ///
    /// An error if the payload is plain-old-data ([`Flags::POD`]), is not a valid
    /// `T`, or does not use all of the payload.
    pub fn decode<T: Deserialize<'a>>(&self) -> Result<T, CodecError> {
        if self.header.flags.contains(Flags::POD) {
            return Err(CodecError::WrongEncoding {
                actual: "plain-old-data",
            });
        }
        format::decode_with_depth(self.payload, self.max_depth)
    }

    /// The plain-old-data payload as a slice of `T`: borrowed from the input if it is
    /// aligned for `T`, else copied.
    ///
    /// An error if the frame's payload is serde ([`Flags::POD`] not set) or its length
    /// is not a whole number of `T`s.
    pub fn pod<T: Pod>(&self) -> Result<Cow<'a, [T]>, CodecError> {
        if !self.header.flags.contains(Flags::POD) {
            return Err(CodecError::WrongEncoding { actual: "serde" });
        }
        pod::cast_or_copy(self.payload)
    }
}

impl fmt::Debug for Frame<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Frame")
            .field("header", &self.header)
            .field("payload_len", &self.payload.len())
            .finish()
    }
}

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    let mut x = [0; 4];
    x.copy_from_slice(&b[at..at + 4]);
    u32::from_le_bytes(x)
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut x = [0; 8];
    x.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(x)
}

/// Reads and checks a header at the start of `bytes`; returns it, the payload length
/// and the whole frame's length (both checked against `limits`, not yet against the
/// bytes present).
fn read_header(bytes: &[u8], limits: &Limits) -> Result<(Header, usize, usize), CodecError> {
    if bytes.len() < HEADER_LEN {
        return Err(CodecError::Truncated {
            what: "48-byte frame header",
            needed: HEADER_LEN as u64,
            available: bytes.len() as u64,
        });
    }
    let h = &bytes[..HEADER_LEN];
    let magic = [h[0], h[1], h[2], h[3]];
    if magic != MAGIC {
        return Err(CodecError::BadMagic(magic));
    }
    if h[4] != VERSION {
        return Err(CodecError::UnsupportedVersion(h[4]));
    }
    let header = Header {
        kind: FrameKind::from_wire(h[5])?,
        flags: Flags::from_bits(u16_at(h, 6))?,
        src: u32_at(h, 8),
        dst: u32_at(h, 12),
        msg: MsgId::from_wire(u64_at(h, 24)),
        target: u64_at(h, 32),
        corr: u64_at(h, 40),
    };
    header.check()?;
    let len = u64_at(h, 16);
    if len > limits.max_payload {
        return Err(CodecError::TooLarge {
            len,
            max: limits.max_payload,
        });
    }
    // A checked conversion and sum keep even an absurd limit an error, not a wrap.
    let too_large = CodecError::TooLarge {
        len,
        max: limits.max_payload,
    };
    let len = usize::try_from(len).map_err(|_| too_large.clone())?;
    let total = len
        .checked_add(HEADER_LEN + padding(len))
        .ok_or(too_large)?;
    Ok((header, len, total))
}

/// Splits the first frame off `bytes`: the frame and the bytes after it.
fn split<'a>(bytes: &'a [u8], limits: &Limits) -> Result<(Frame<'a>, &'a [u8]), CodecError> {
    let (header, len, total) = read_header(bytes, limits)?;
    if bytes.len() < total {
        return Err(CodecError::Truncated {
            what: "frame",
            needed: total as u64,
            available: bytes.len() as u64,
        });
    }
    let (frame, rest) = bytes.split_at(total);
    let (payload, pad) = frame[HEADER_LEN..].split_at(len);
    if pad.iter().any(|&b| b != 0) {
        return Err(CodecError::BadPadding);
    }
    let frame = Frame {
        header,
        payload,
        max_depth: limits.max_depth,
    };
    Ok((frame, rest))
}

/// The length of the frame that starts `bytes`, read from its header: `Ok(None)` if
/// fewer than [`HEADER_LEN`] bytes are there yet, an error if the header is invalid.
///
/// For stream transports: read a header, learn how many bytes the whole frame takes,
/// read those.
///
/// ```
/// use tutti::msg::codec::{encode_frame, frame_len, FrameKind, Header, Limits};
///
/// let mut buf = Vec::new();
/// encode_frame(&Header { corr: 1, ..Header::new(FrameKind::Reply) }, &[1u8, 2, 3], &mut buf).unwrap();
/// assert_eq!(frame_len(&buf[..10], &Limits::DEFAULT), Ok(None));
/// assert_eq!(frame_len(&buf[..48], &Limits::DEFAULT), Ok(Some(56)));
/// ```
pub fn frame_len(bytes: &[u8], limits: &Limits) -> Result<Option<usize>, CodecError> {
    if bytes.len() < HEADER_LEN {
        return Ok(None);
    }
    read_header(bytes, limits).map(|(_, _, total)| Some(total))
}

/// Decodes `bytes` as exactly one frame, with the [default limits](Limits::DEFAULT).
///
/// Never panics and never allocates; every header field is checked before it is used.
///
/// ```
/// use tutti::msg::codec::{decode_frame, encode_frame, CodecError, FrameKind, Header};
///
/// let mut buf = Vec::new();
/// encode_frame(&Header { corr: 1, ..Header::new(FrameKind::Fault) }, "no such actor", &mut buf).unwrap();
/// assert_eq!(decode_frame(&buf).unwrap().decode::<String>().unwrap(), "no such actor");
///
/// buf[5] = 99; // the kind byte
/// assert_eq!(decode_frame(&buf).unwrap_err(), CodecError::UnknownKind(99));
/// ```
pub fn decode_frame(bytes: &[u8]) -> Result<Frame<'_>, CodecError> {
    decode_frame_with(bytes, &Limits::DEFAULT)
}

/// [`decode_frame`] with explicit limits.
pub fn decode_frame_with<'a>(bytes: &'a [u8], limits: &Limits) -> Result<Frame<'a>, CodecError> {
    let (frame, rest) = split(bytes, limits)?;
    if !rest.is_empty() {
        return Err(CodecError::TrailingBytes {
            what: "frame",
            extra: rest.len() as u64,
        });
    }
    Ok(frame)
}

/// The frames of a buffer of concatenated frames (an aggregated batch), in order, with
/// the [default limits](Limits::DEFAULT).
///
/// The iterator yields each frame, or an error and then nothing more: after a broken
/// frame nothing later in the buffer can be located reliably.
///
/// ```
/// use tutti::msg::codec::{encode_frame, frames, FrameKind, Header};
/// use tutti::msg::MsgId;
///
/// let mut batch = Vec::new();
/// for i in 0..3u64 {
///     let h = Header { msg: MsgId::from_name("tick"), ..Header::new(FrameKind::Tell) };
///     encode_frame(&h, &i, &mut batch).unwrap();
/// }
/// let ticks: Vec<u64> = frames(&batch).map(|f| f.unwrap().decode().unwrap()).collect();
/// assert_eq!(ticks, [0, 1, 2]);
/// ```
pub fn frames(bytes: &[u8]) -> Frames<'_> {
    frames_with(bytes, &Limits::DEFAULT)
}

/// [`frames`] with explicit limits.
pub fn frames_with<'a>(bytes: &'a [u8], limits: &Limits) -> Frames<'a> {
    Frames {
        rest: bytes,
        limits: *limits,
        failed: false,
    }
}

/// Iterator over the frames of a buffer; see [`frames`].
#[derive(Clone, Debug)]
#[must_use = "iterators do nothing unless consumed"]
pub struct Frames<'a> {
    rest: &'a [u8],
    limits: Limits,
    failed: bool,
}

impl<'a> Frames<'a> {
    /// The bytes not yet decoded (after an error: starting with the broken frame).
    pub fn remainder(&self) -> &'a [u8] {
        self.rest
    }
}

impl<'a> Iterator for Frames<'a> {
    type Item = Result<Frame<'a>, CodecError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.rest.is_empty() {
            return None;
        }
        match split(self.rest, &self.limits) {
            Ok((frame, rest)) => {
                self.rest = rest;
                Some(Ok(frame))
            }
            Err(e) => {
                self.failed = true;
                Some(Err(e))
            }
        }
    }
}

impl std::iter::FusedIterator for Frames<'_> {}
