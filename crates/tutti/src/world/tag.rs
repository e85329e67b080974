//! Tags: a number the sender attaches to a message
//! ([`Location::send_tagged`](super::Location::send_tagged)) so that a
//! receiver can take the next message with that tag
//! ([`Location::recv_matching`](super::Location::recv_matching) with a
//! [`Match`]), as MPI's `tag` argument.
//!
//! A tag travels with the message, not in the frame: within a rank a tagged
//! value moves boxed in a [`Tagged`] beside its tag; as bytes (to another rank,
//! or a `Vec<u8>` sent tagged) the message starts with a header:
//!
//! ```text
//! offset  size  field
//!  0      8     MAGIC  b"\0tutti:#"
//!  8      8     tag    u64 LE
//! 16      …     the message (a typed envelope, `typed.rs`, or the bytes sent)
//! ```
//!
//! The receiving location takes the tag off when it hands the message out
//! (`Delivery::tag`), so a tagged message reads as the same message untagged.
//! Limit: plain bytes (`send_bytes`) that happen to start with `MAGIC` read as
//! tagged.

use std::any::Any;

use super::delivery::Content;
use super::LocationId;

/// The first bytes of a tagged message sent as bytes.
const MAGIC: [u8; 8] = *b"\0tutti:#";

/// Bytes before the message in a tagged message sent as bytes.
pub(crate) const HEADER: usize = 16;

/// The header of a message with tag `tag`.
pub(crate) fn header(tag: u64) -> [u8; HEADER] {
    let mut h = [0; HEADER];
    h[..8].copy_from_slice(&MAGIC);
    h[8..].copy_from_slice(&tag.to_le_bytes());
    h
}

/// The tag of a tagged message sent as bytes, `None` if `bytes` are not one.
fn split(bytes: &[u8]) -> Option<u64> {
    let rest = bytes.strip_prefix(&MAGIC[..])?;
    let tag = rest.first_chunk::<8>()?;
    Some(u64::from_le_bytes(*tag))
}

/// A tagged value moving within a rank.
pub(crate) struct Tagged {
    pub(crate) tag: u64,
    pub(crate) value: Box<dyn Any + Send>,
    pub(crate) name: &'static str,
}

/// Takes the tag off a message: its tag (`None` if untagged) and its content
/// as sent.
pub(crate) fn untag(content: Content) -> (Option<u64>, Content) {
    match content {
        Content::Value(v, name) => match v.downcast::<Tagged>() {
            Ok(t) => (Some(t.tag), Content::Value(t.value, t.name)),
            Err(v) => (None, Content::Value(v, name)),
        },
        Content::Bytes(mut b) => match split(&b) {
            Some(tag) => {
                b.drain(..HEADER);
                (Some(tag), Content::Bytes(b))
            }
            None => (None, Content::Bytes(b)),
        },
        Content::Shared(frame, r) => match frame.get(r.clone()).and_then(split) {
            Some(tag) => (Some(tag), Content::Shared(frame, r.start + HEADER..r.end)),
            None => (None, Content::Shared(frame, r)),
        },
        Content::Taken => (None, Content::Taken),
    }
}

/// Which messages a matching receive takes: those from one source location,
/// with one tag, or both (MPI's `source` and `tag`; an unset field matches
/// any, as `MPI_ANY_SOURCE`/`MPI_ANY_TAG`). A tag matches only messages sent
/// with it ([`Location::send_tagged`](super::Location::send_tagged)).
///
/// ```
/// use tutti::world::{LocationId, Match};
/// let m = Match::any().source(LocationId::new(2)).tag(7);
/// assert_eq!(m.source_of(), Some(LocationId::new(2)));
/// assert_eq!(m.tag_of(), Some(7));
/// assert_eq!(Match::any().tag_of(), None);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Match {
    source: Option<LocationId>,
    tag: Option<u64>,
}

impl Match {
    /// Matches every message.
    pub fn any() -> Match {
        Match::default()
    }

    /// Only messages from `source`.
    pub fn source(self, source: LocationId) -> Match {
        Match {
            source: Some(source),
            ..self
        }
    }

    /// Only messages sent with tag `tag`.
    pub fn tag(self, tag: u64) -> Match {
        Match {
            tag: Some(tag),
            ..self
        }
    }

    /// The source this matches, if one.
    pub fn source_of(&self) -> Option<LocationId> {
        self.source
    }

    /// The tag this matches, if one.
    pub fn tag_of(&self) -> Option<u64> {
        self.tag
    }

    /// Whether a message from `from` with tag `tag` matches.
    pub(crate) fn matches(&self, from: LocationId, tag: Option<u64>) -> bool {
        self.source.is_none_or(|s| s == from) && self.tag.is_none_or(|t| tag == Some(t))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_come_off_and_short_bytes_are_untagged() {
        let mut b = header(0xdead_beef).to_vec();
        b.extend_from_slice(b"abc");
        let (tag, c) = untag(Content::Bytes(b.clone()));
        assert_eq!(tag, Some(0xdead_beef));
        assert!(matches!(c, Content::Bytes(ref x) if x == b"abc"));
        for cut in 0..HEADER {
            let (tag, _) = untag(Content::Bytes(b[..cut].to_vec()));
            assert_eq!(tag, None, "cut at {cut}");
        }
        let frame: std::sync::Arc<[u8]> = b.into();
        let (tag, c) = untag(Content::Shared(frame, 0..HEADER + 3));
        assert_eq!(tag, Some(0xdead_beef));
        assert!(matches!(c, Content::Shared(_, r) if r == (HEADER..HEADER + 3)));
    }

    #[test]
    fn matches_by_source_and_tag() {
        let (a, b) = (LocationId::new(0), LocationId::new(1));
        assert!(Match::any().matches(a, None));
        assert!(Match::any().source(a).matches(a, Some(3)));
        assert!(!Match::any().source(a).matches(b, None));
        assert!(!Match::any().tag(3).matches(a, None));
        assert!(Match::any().tag(3).source(b).matches(b, Some(3)));
        assert!(!Match::any().tag(3).source(b).matches(b, Some(4)));
    }
}
