//! Typed messages across ranks: the envelope a typed value travels in when
//! [`Location::send`](super::Location::send) sends it to another rank, and
//! [`TakeError`], what a typed receive ([`Delivery::typed`](super::Delivery::typed))
//! says when the message is not of the type asked for.
//!
//! Within a rank a typed value moves as it is, boxed with its type's name. To
//! another rank it is serialized with the message core's codec into one byte
//! message:
//!
//! ```text
//! offset  size  field
//!  0      8     MAGIC  b"\0tutti:T"   (a byte message starting otherwise is plain bytes)
//!  8      2     n      length of the type's name, u16 LE
//! 10      n     name   std::any::type_name of the sent type (UTF-8)
//! 10+n    …     value  the value in the codec's serde format
//! ```
//!
//! The receiver compares the name with the type it asks for: every rank runs the
//! same program, so the same type has the same name everywhere, and a mismatch
//! can name both types. Decoding checks every length and never panics; a message
//! whose envelope or value does not decode is [`TakeError::Malformed`].
//!
//! Limit: a message sent as plain bytes ([`Location::send_bytes`](super::Location::send_bytes))
//! whose first eight bytes happen to be `MAGIC` is read as a typed envelope by a
//! typed receive (a plain [`Delivery::bytes`](super::Delivery::bytes) still
//! returns it unchanged).

use std::error::Error;
use std::fmt;

use serde::de::DeserializeOwned;
use serde::Serialize;

use super::LocationId;
use crate::msg::codec::{self, CodecError};

/// The first bytes of a typed message between ranks.
pub(crate) const MAGIC: [u8; 8] = *b"\0tutti:T";

/// `value` as a typed message's bytes for another rank.
pub(crate) fn encode<T: Serialize>(value: &T) -> Result<Vec<u8>, CodecError> {
    let mut out = Vec::new();
    encode_into(value, &mut out)?;
    Ok(out)
}

/// [`encode`], appended to `out`.
pub(crate) fn encode_into<T: Serialize>(value: &T, out: &mut Vec<u8>) -> Result<(), CodecError> {
    let name = std::any::type_name::<T>();
    // Type names longer than 64 KiB do not occur; cut one rather than fail
    // (it still compares equal on every rank, which cuts it alike).
    let name = &name.as_bytes()[..name.len().min(u16::MAX as usize)];
    out.reserve(MAGIC.len() + 2 + name.len() + 16);
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&(name.len() as u16).to_le_bytes());
    out.extend_from_slice(name);
    codec::encode(value, out)
}

/// The type name and value bytes of a typed message, `None` if `bytes` are not
/// one (plain bytes), `Err` if they start like one but are cut short.
pub(crate) fn split(bytes: &[u8]) -> Option<Result<(&str, &[u8]), String>> {
    let rest = bytes.strip_prefix(&MAGIC[..])?;
    let Some((len, rest)) = rest.split_first_chunk::<2>() else {
        return Some(Err(
            "a typed message cut short before its type's name".into()
        ));
    };
    let len = u16::from_le_bytes(*len) as usize;
    let Some((name, value)) = rest.split_at_checked(len) else {
        return Some(Err(format!(
            "a typed message whose {len}-byte type name runs past its end"
        )));
    };
    match std::str::from_utf8(name) {
        Ok(name) => Some(Ok((name, value))),
        Err(_) => Some(Err("a typed message whose type name is not UTF-8".into())),
    }
}

/// Decodes a typed message from another rank as a `T`.
pub(crate) fn decode<T: DeserializeOwned>(from: LocationId, bytes: &[u8]) -> Result<T, TakeError> {
    let expected = std::any::type_name::<T>();
    let found = match split(bytes) {
        None => {
            return Err(TakeError::Mismatch {
                from,
                expected,
                found: "plain bytes (sent with send_bytes or as a Vec<u8>)".into(),
            })
        }
        Some(Err(why)) => {
            return Err(TakeError::Malformed {
                from,
                expected,
                why,
            })
        }
        Some(Ok(found)) => found,
    };
    let (name, value) = found;
    let cut = &expected.as_bytes()[..expected.len().min(u16::MAX as usize)];
    if name.as_bytes() != cut {
        return Err(TakeError::Mismatch {
            from,
            expected,
            found: name.to_string(),
        });
    }
    codec::decode::<T>(value).map_err(|e| TakeError::Malformed {
        from,
        expected,
        why: e.to_string(),
    })
}

/// Why a typed receive ([`Delivery::typed`](super::Delivery::typed)) could not
/// hand out the message as the type asked for. The message stays in the delivery.
///
/// ```
/// use tutti::world::{TakeError, World};
/// let world = World::builder().locations(1).workers(1).build().unwrap();
/// let loc = world.location(0).unwrap();
/// loc.send(loc.id(), String::from("seven")).unwrap();
/// let mut d = loc.recv_blocking();
/// let e = d.typed::<u64>().unwrap_err();
/// assert!(matches!(e, TakeError::Mismatch { .. }));
/// assert_eq!(
///     e.to_string(),
///     "tutti::world: the message from location 0 is a alloc::string::String, \
///      received as a u64"
/// );
/// assert_eq!(d.typed::<String>().unwrap(), "seven");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TakeError {
    /// The message is of another type (or plain bytes).
    Mismatch {
        /// The sending location.
        from: LocationId,
        /// The type asked for.
        expected: &'static str,
        /// The type the message was sent as.
        found: String,
    },
    /// The message came from another rank and its bytes do not decode as the
    /// type asked for (a corrupt envelope, or a type whose serde form differs
    /// between the ranks' builds).
    Malformed {
        /// The sending location.
        from: LocationId,
        /// The type asked for.
        expected: &'static str,
        /// What is wrong with the bytes.
        why: String,
    },
    /// The message was already taken out of the delivery.
    Taken {
        /// The sending location.
        from: LocationId,
    },
}

impl fmt::Display for TakeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TakeError::Mismatch {
                from,
                expected,
                found,
            } => write!(
                f,
                "tutti::world: the message from {from} is a {found}, received as a {expected}"
            ),
            TakeError::Malformed {
                from,
                expected,
                why,
            } => write!(
                f,
                "tutti::world: the message from {from} does not decode as a {expected}: {why}"
            ),
            TakeError::Taken { from } => write!(
                f,
                "tutti::world: the message from {from} was already taken out of its delivery"
            ),
        }
    }
}

impl Error for TakeError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn envelopes_round_trip_and_name_both_types() {
        let from = LocationId::new(3);
        let b = encode(&(7u32, String::from("x"))).unwrap();
        assert_eq!(decode::<(u32, String)>(from, &b).unwrap(), (7, "x".into()));
        let e = decode::<u64>(from, &b).unwrap_err();
        assert_eq!(
            e.to_string(),
            "tutti::world: the message from location 3 is a (u32, alloc::string::String), \
             received as a u64"
        );
        assert!(matches!(
            decode::<u64>(from, &[1, 2, 3]),
            Err(TakeError::Mismatch { .. })
        ));
    }

    #[test]
    fn every_truncation_is_an_error_without_panic() {
        let b = encode(&vec![1u64, 2, 3]).unwrap();
        for cut in 0..b.len() {
            assert!(decode::<Vec<u64>>(LocationId::new(0), &b[..cut]).is_err());
        }
        let mut bad = b.clone();
        bad[8] = 0xff;
        bad[9] = 0xff;
        assert!(matches!(
            decode::<Vec<u64>>(LocationId::new(0), &bad),
            Err(TakeError::Malformed { .. })
        ));
    }
}
