//! The one serde format: postcard, behind two functions.
//!
//! Nothing else in tutti names the format crate, so changing it is a change of this
//! file (and of [`VERSION`](super::VERSION)). Why postcard is in the module
//! documentation of [`codec`](super).

use serde::{Deserialize, Serialize};

use super::guard::{self, De, Guard};
use super::CodecError;

/// Largest nesting depth of a decoded value by default: serde_json's choice, deep
/// enough for any message and shallow enough for a 2 MiB thread stack.
pub const DEFAULT_MAX_DEPTH: u32 = 128;

/// postcard output appended to a `Vec<u8>` that the caller keeps and reuses.
struct Append<'a>(&'a mut Vec<u8>);

impl postcard::ser_flavors::Flavor for Append<'_> {
    type Output = ();

    #[inline]
    fn try_push(&mut self, byte: u8) -> postcard::Result<()> {
        self.0.push(byte);
        Ok(())
    }

    #[inline]
    fn try_extend(&mut self, bytes: &[u8]) -> postcard::Result<()> {
        self.0.extend_from_slice(bytes);
        Ok(())
    }

    fn finalize(self) -> postcard::Result<()> {
        Ok(())
    }
}

/// Appends the encoding of `value` to `out`. On error `out` is left as it was.
///
/// ```
/// let mut buf = vec![0xAA];
/// tutti::msg::codec::encode(&(7u32, "seven"), &mut buf).unwrap();
/// assert_eq!(buf, [0xAA, 7, 5, b's', b'e', b'v', b'e', b'n']);
/// ```
pub fn encode<T: Serialize + ?Sized>(value: &T, out: &mut Vec<u8>) -> Result<(), CodecError> {
    let start = out.len();
    postcard::serialize_with_flavor(value, Append(out)).map_err(|e| {
        out.truncate(start);
        CodecError::Encode {
            what: std::any::type_name::<T>(),
            reason: e.to_string(),
        }
    })
}

/// Decodes a `T` that uses exactly all of `bytes`, nested at most
/// [`DEFAULT_MAX_DEPTH`] deep. `T` may borrow from `bytes` (`&str`, `&[u8]`).
///
/// Never panics and never allocates more than the bytes present allow, whatever
/// `bytes` holds (see the module documentation of [`codec`](super)).
///
/// ```
/// use tutti::msg::codec::{decode, encode};
///
/// let mut buf = Vec::new();
/// encode(&("name", vec![1.5f64, 2.5]), &mut buf).unwrap();
/// let (name, xs): (&str, Vec<f64>) = decode(&buf).unwrap();
/// assert_eq!((name, xs), ("name", vec![1.5, 2.5]));
///
/// assert!(decode::<(&str, Vec<f64>)>(&buf[..buf.len() - 1]).is_err());
/// ```
#[inline]
pub fn decode<'a, T: Deserialize<'a>>(bytes: &'a [u8]) -> Result<T, CodecError> {
    decode_with_depth(bytes, DEFAULT_MAX_DEPTH)
}

/// [`decode`] with a nesting limit of `max_depth`.
#[inline]
pub(crate) fn decode_with_depth<'a, T: Deserialize<'a>>(
    bytes: &'a [u8],
    max_depth: u32,
) -> Result<T, CodecError> {
    let (value, rest) = decode_prefix(bytes, max_depth)?;
    if rest.is_empty() {
        Ok(value)
    } else {
        Err(CodecError::TrailingBytes {
            what: std::any::type_name::<T>(),
            extra: rest.len() as u64,
        })
    }
}

/// Decodes a `T` from the start of `bytes` and returns it with the bytes after
/// it (for several values written one after the other, each self-delimiting).
/// The same guarantees as [`decode`]: the guard bounds every length by the
/// bytes present.
#[inline]
pub(crate) fn decode_prefix<'a, T: Deserialize<'a>>(
    bytes: &'a [u8],
    max_depth: u32,
) -> Result<(T, &'a [u8]), CodecError> {
    let payload_error = |reason: String| CodecError::Payload {
        what: std::any::type_name::<T>(),
        reason,
    };
    let guard = Guard::new(max_depth, bytes.len());
    guard::clear_message();
    let mut de = postcard::Deserializer::from_bytes(bytes);
    let value = T::deserialize(De {
        inner: &mut de,
        guard: &guard,
    })
    .map_err(|_| {
        payload_error(guard::take_message().unwrap_or_else(|| "invalid payload".into()))
    })?;
    let rest = de.finalize().map_err(|e| payload_error(e.to_string()))?;
    Ok((value, rest))
}
