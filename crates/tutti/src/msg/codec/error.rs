//! What can go wrong on the wire: one error type for frames and payloads.

use std::fmt;

/// Why bytes could not be decoded as a frame or a payload, or a value could not be
/// encoded.
///
/// Every decoding function returns this instead of panicking, whatever the input.
///
/// ```
/// use tutti::msg::codec::{decode_frame, CodecError};
///
/// let err = decode_frame(b"GET / HTTP/1.1\r\n").unwrap_err();
/// assert!(matches!(err, CodecError::Truncated { .. }));
/// assert!(err.to_string().contains("48-byte frame header"));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum CodecError {
    /// Fewer bytes than the frame header or its stated length need.
    Truncated {
        /// What was being read.
        what: &'static str,
        /// Bytes it needs.
        needed: u64,
        /// Bytes there are.
        available: u64,
    },
    /// The frame does not start with [`MAGIC`](super::MAGIC): not a tutti frame, or the
    /// stream lost its place.
    BadMagic([u8; 4]),
    /// A frame of another codec version.
    UnsupportedVersion(u8),
    /// A frame kind this version does not know.
    UnknownKind(u8),
    /// Flag bits this version reserves were set.
    ReservedFlags(u16),
    /// A header field has a value its frame kind does not allow.
    InvalidHeader(&'static str),
    /// The stated payload is larger than the configured maximum.
    TooLarge {
        /// Stated payload length in bytes.
        len: u64,
        /// The maximum allowed ([`Limits::max_payload`](super::Limits::max_payload)).
        max: u64,
    },
    /// The padding after the payload is not zero.
    BadPadding,
    /// Bytes after the end of the frame or value.
    TrailingBytes {
        /// What was decoded.
        what: &'static str,
        /// How many bytes were left over.
        extra: u64,
    },
    /// The payload is not a valid encoding of the expected type.
    Payload {
        /// The expected type (diagnostic name).
        what: &'static str,
        /// What the decoder found wrong.
        reason: String,
    },
    /// A plain-old-data payload whose length is not a whole number of elements.
    PodLength {
        /// Payload bytes.
        len: u64,
        /// Size of one element.
        size: usize,
    },
    /// The payload was decoded with the wrong decoder: a serde payload read as
    /// plain-old-data or the other way round.
    WrongEncoding {
        /// The encoding the frame's [`POD`](super::Flags::POD) flag says it has.
        actual: &'static str,
    },
    /// A value could not be encoded (its `Serialize` implementation failed, or the
    /// format cannot express it).
    Encode {
        /// The type being encoded (diagnostic name).
        what: &'static str,
        /// Why.
        reason: String,
    },
}

impl fmt::Display for CodecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CodecError::Truncated {
                what,
                needed,
                available,
            } => write!(
                f,
                "truncated input: the {what} needs {needed} bytes, {available} are there"
            ),
            CodecError::BadMagic(m) => write!(
                f,
                "not a tutti frame: it starts with {m:02x?}, not {:02x?}",
                super::MAGIC
            ),
            CodecError::UnsupportedVersion(v) => write!(
                f,
                "frame of codec version {v}, this build speaks version {}",
                super::VERSION
            ),
            CodecError::UnknownKind(k) => write!(f, "unknown frame kind {k}"),
            CodecError::ReservedFlags(bits) => {
                write!(f, "reserved frame flag bits set: {bits:#06x}")
            }
            CodecError::InvalidHeader(why) => write!(f, "invalid frame header: {why}"),
            CodecError::TooLarge { len, max } => write!(
                f,
                "frame payload of {len} bytes exceeds the maximum of {max} bytes"
            ),
            CodecError::BadPadding => f.write_str("frame padding is not zero"),
            CodecError::TrailingBytes { what, extra } => {
                write!(f, "{extra} bytes left over after the {what}")
            }
            CodecError::Payload { what, reason } => {
                write!(f, "payload is not a valid `{what}`: {reason}")
            }
            CodecError::PodLength { len, size } => write!(
                f,
                "plain-old-data payload of {len} bytes is not a whole number of {size}-byte elements"
            ),
            CodecError::WrongEncoding { actual } => {
                write!(f, "the frame's payload is {actual}, read with the other decoder")
            }
            CodecError::Encode { what, reason } => write!(f, "cannot encode `{what}`: {reason}"),
        }
    }
}

impl std::error::Error for CodecError {}
