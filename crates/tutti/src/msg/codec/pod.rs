//! The plain-old-data fast path: slices of [`Pod`] values travel as their bytes.
//!
//! A serde format writes a `Vec<f64>` element by element (a call, a bounds check and
//! eight byte writes each) and reads it back the same way. For plain-old-data — types
//! whose every bit pattern is a valid value and that have no padding, which
//! `bytemuck::Pod` certifies — the bytes in memory *are* an encoding, so:
//!
//! * encoding is one `memcpy` of the slice into the frame buffer;
//! * decoding borrows the payload as `&[T]` when it is aligned for `T` (frames keep
//!   payloads 8-aligned relative to the frame start), and copies it into a `Vec<T>`
//!   with one `memcpy` when it is not.
//!
//! Lengths are checked: a payload whose size is not a whole number of elements is an
//! error, never a short read. Values are in the sender's byte order; ranks of one job
//! agree on it (the registry digest exchanged at start-up includes it, see
//! [`Digest`](crate::msg::Digest)).
//!
//! Two ways in: whole frames ([`encode_pod_frame`](super::encode_pod_frame) and
//! [`Frame::pod`](super::Frame::pod)), and [`PodVec`], a field type that carries a
//! vector through serde as one byte string.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;
use std::ops::{Deref, DerefMut};

use bytemuck::Pod;
use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};

use super::CodecError;

/// Rejects zero-sized element types at compile time: their count cannot be recovered
/// from a byte length.
struct NonZeroSize<T>(PhantomData<T>);

impl<T> NonZeroSize<T> {
    const OK: () = assert!(
        std::mem::size_of::<T>() > 0,
        "tutti: zero-sized types cannot travel as plain-old-data"
    );
}

/// The bytes of a slice of plain-old-data, to be sent as they are.
#[inline]
pub(crate) fn bytes_of<T: Pod>(values: &[T]) -> &[u8] {
    let () = NonZeroSize::<T>::OK;
    bytemuck::cast_slice(values)
}

/// Copies `bytes` into a new vector of `T` (one `memcpy`); `bytes.len()` must be a
/// multiple of `size_of::<T>()`.
fn copy_to_vec<T: Pod>(bytes: &[u8]) -> Vec<T> {
    let n = bytes.len() / std::mem::size_of::<T>();
    let mut v: Vec<T> = Vec::with_capacity(n);
    // SAFETY: the vector has room for `n` elements, i.e. `n * size_of::<T>()` =
    // `bytes.len()` bytes, which we fill completely before setting the length; any
    // bit pattern is a valid `T` (`T: Pod`); the regions do not overlap (fresh
    // allocation).
    unsafe {
        std::ptr::copy_nonoverlapping(bytes.as_ptr(), v.as_mut_ptr().cast::<u8>(), bytes.len());
        v.set_len(n);
    }
    v
}

/// Views `bytes` as a slice of `T`: borrowed if aligned, copied if not.
///
/// Errors if the length is not a whole number of elements.
pub(crate) fn cast_or_copy<T: Pod>(bytes: &[u8]) -> Result<Cow<'_, [T]>, CodecError> {
    let () = NonZeroSize::<T>::OK;
    let size = std::mem::size_of::<T>();
    if bytes.len() % size != 0 {
        return Err(CodecError::PodLength {
            len: bytes.len() as u64,
            size,
        });
    }
    match bytemuck::try_cast_slice(bytes) {
        Ok(values) => Ok(Cow::Borrowed(values)),
        // The only other failure, a length mismatch, was excluded above.
        Err(_) => Ok(Cow::Owned(copy_to_vec(bytes))),
    }
}

/// A vector of plain-old-data that serde carries as one byte string: a length and a
/// `memcpy`, instead of element by element.
///
/// Use it as a field of a message type in place of `Vec<T>`; it dereferences to
/// `Vec<T>`.
///
/// ```
/// use serde::{Deserialize, Serialize};
/// use tutti::msg::codec::{decode, encode, PodVec};
///
/// #[derive(Serialize, Deserialize, PartialEq, Debug)]
/// struct Samples { channel: u8, values: PodVec<f64> }
///
/// let s = Samples { channel: 3, values: vec![0.5; 1000].into() };
/// let mut buf = Vec::new();
/// encode(&s, &mut buf).unwrap();
/// assert_eq!(buf.len(), 1 + 2 + 8000); // channel, length varint, the bytes
/// let back: Samples = decode(&buf).unwrap();
/// assert_eq!(back, s);
/// assert_eq!(back.values.len(), 1000);
/// ```
#[derive(Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PodVec<T: Pod>(pub Vec<T>);

impl<T: Pod> PodVec<T> {
    /// The vector.
    ///
    /// ```
    /// # use tutti::msg::codec::PodVec;
    /// assert_eq!(PodVec::from(vec![1u32, 2]).into_inner(), vec![1, 2]);
    /// ```
    pub fn into_inner(self) -> Vec<T> {
        self.0
    }
}

impl<T: Pod> From<Vec<T>> for PodVec<T> {
    fn from(v: Vec<T>) -> Self {
        PodVec(v)
    }
}

impl<T: Pod> From<PodVec<T>> for Vec<T> {
    fn from(v: PodVec<T>) -> Self {
        v.0
    }
}

impl<T: Pod> Deref for PodVec<T> {
    type Target = Vec<T>;
    fn deref(&self) -> &Vec<T> {
        &self.0
    }
}

impl<T: Pod> DerefMut for PodVec<T> {
    fn deref_mut(&mut self) -> &mut Vec<T> {
        &mut self.0
    }
}

impl<T: Pod + fmt::Debug> fmt::Debug for PodVec<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl<T: Pod> Serialize for PodVec<T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(bytes_of(&self.0))
    }
}

impl<'de, T: Pod> Deserialize<'de> for PodVec<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct BytesVisitor<T>(PhantomData<T>);

        impl<T: Pod> BytesVisitor<T> {
            fn convert<E: de::Error>(bytes: &[u8]) -> Result<PodVec<T>, E> {
                let size = std::mem::size_of::<T>();
                if bytes.len() % size != 0 {
                    return Err(E::custom(CodecError::PodLength {
                        len: bytes.len() as u64,
                        size,
                    }));
                }
                Ok(PodVec(copy_to_vec(bytes)))
            }
        }

        impl<T: Pod> Visitor<'_> for BytesVisitor<T> {
            type Value = PodVec<T>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(
                    f,
                    "a byte string of {}-byte elements",
                    std::mem::size_of::<T>()
                )
            }

            fn visit_bytes<E: de::Error>(self, bytes: &[u8]) -> Result<PodVec<T>, E> {
                Self::convert(bytes)
            }
        }

        let () = NonZeroSize::<T>::OK;
        d.deserialize_bytes(BytesVisitor(PhantomData))
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn aligned_bytes_are_borrowed_misaligned_copied() {
        let values: Vec<u64> = (0..16).map(|i| i * 0x0101_0101).collect();
        let bytes = bytes_of(&values);
        match cast_or_copy::<u64>(bytes).unwrap() {
            Cow::Borrowed(v) => assert_eq!(v, &values[..]),
            Cow::Owned(_) => panic!("aligned input was copied"),
        }
        // The same bytes one byte off their alignment.
        let mut shifted = vec![0u8; bytes.len() + 1];
        shifted[1..].copy_from_slice(bytes);
        match cast_or_copy::<u64>(&shifted[1..]).unwrap() {
            Cow::Owned(v) => assert_eq!(v, values),
            Cow::Borrowed(_) => panic!("misaligned input was borrowed"),
        }
    }

    #[test]
    fn partial_elements_are_rejected() {
        for len in [1, 7, 9, 15] {
            let bytes = vec![0u8; len];
            assert_eq!(
                cast_or_copy::<u64>(&bytes).unwrap_err(),
                CodecError::PodLength {
                    len: len as u64,
                    size: 8
                }
            );
        }
        assert!(cast_or_copy::<u64>(&[]).unwrap().is_empty());
    }

    #[test]
    fn podvec_rejects_partial_elements_with_a_message() {
        let mut buf = Vec::new();
        crate::msg::codec::encode(&serde_bytes_like(&[1, 2, 3]), &mut buf).unwrap();
        let err = crate::msg::codec::decode::<PodVec<u16>>(&buf).unwrap_err();
        assert!(err.to_string().contains("3 bytes"), "{err}");
    }

    /// A 3-byte byte string, as serde writes one.
    fn serde_bytes_like(b: &[u8]) -> impl Serialize + '_ {
        struct B<'a>(&'a [u8]);
        impl Serialize for B<'_> {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_bytes(self.0)
            }
        }
        B(b)
    }
}
