//! [`Wire`]: the fixed-layout encoding of the values that collectives carry
//! between ranks.
//!
//! Collectives move the *values* of a reduction or broadcast (numbers, arrays,
//! tuples, vectors, strings), not messages, so they need no message registry: this
//! is a small little-endian layout with length-prefixed sequences. Decoding checks
//! every length against the bytes that are there and never panics or allocates
//! more than the input could hold. (Messages between locations use the `msg`
//! codec; collectives accept any type that implements this trait.)

use std::fmt;

/// Why bytes did not decode as the expected value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WireError(String);

impl WireError {
    fn short(what: &str, need: usize, have: usize) -> WireError {
        WireError(format!("{what}: needs {need} more bytes, {have} left"))
    }
}

impl fmt::Display for WireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for WireError {}

/// A value that collectives can carry between ranks.
///
/// A decoded sequence never has more elements than bytes remain in the input
/// (zero-sized elements excepted, up to 2^24), so an encoding must spend at least
/// one byte per element of a non-zero-sized type.
///
/// Implemented for the integer and float types, `bool`, `char`, `()`, arrays,
/// tuples of up to four, `Option`, `Vec`, `String` and `Box`. Implement it for your
/// own types by encoding their fields in order:
///
/// ```
/// use tutti::world::{Wire, WireError};
///
/// #[derive(Clone, Debug, PartialEq)]
/// struct MinMax { min: f64, max: f64 }
///
/// impl Wire for MinMax {
///     fn encode(&self, out: &mut Vec<u8>) {
///         self.min.encode(out);
///         self.max.encode(out);
///     }
///     fn decode(input: &mut &[u8]) -> Result<Self, WireError> {
///         Ok(MinMax { min: f64::decode(input)?, max: f64::decode(input)? })
///     }
/// }
///
/// let v = MinMax { min: -1.0, max: 2.5 };
/// let mut bytes = Vec::new();
/// v.encode(&mut bytes);
/// assert_eq!(MinMax::decode(&mut &bytes[..]), Ok(v));
/// ```
pub trait Wire: Sized {
    /// Appends the encoding of `self` to `out`.
    fn encode(&self, out: &mut Vec<u8>);
    /// Decodes a value from the front of `input`, advancing it.
    fn decode(input: &mut &[u8]) -> Result<Self, WireError>;
}

/// Encodes a value into a fresh buffer.
pub(crate) fn to_bytes<T: Wire>(v: &T) -> Vec<u8> {
    let mut out = Vec::new();
    v.encode(&mut out);
    out
}

/// Decodes a whole buffer as one value; trailing bytes are an error.
pub(crate) fn from_bytes<T: Wire>(mut bytes: &[u8]) -> Result<T, WireError> {
    let v = T::decode(&mut bytes)?;
    if !bytes.is_empty() {
        return Err(WireError(format!(
            "{} stray bytes after the value",
            bytes.len()
        )));
    }
    Ok(v)
}

fn take<'a>(input: &mut &'a [u8], n: usize, what: &str) -> Result<&'a [u8], WireError> {
    if input.len() < n {
        return Err(WireError::short(what, n, input.len()));
    }
    let (head, rest) = input.split_at(n);
    *input = rest;
    Ok(head)
}

macro_rules! wire_number {
    ($($t:ty),*) => {$(
        impl Wire for $t {
            fn encode(&self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_le_bytes());
            }
            fn decode(input: &mut &[u8]) -> Result<Self, WireError> {
                const N: usize = std::mem::size_of::<$t>();
                let b = take(input, N, stringify!($t))?;
                let mut a = [0u8; N];
                a.copy_from_slice(b);
                Ok(<$t>::from_le_bytes(a))
            }
        }
    )*};
}

wire_number!(u8, u16, u32, u64, u128, i8, i16, i32, i64, i128, f32, f64);

impl Wire for usize {
    fn encode(&self, out: &mut Vec<u8>) {
        (*self as u64).encode(out);
    }
    fn decode(input: &mut &[u8]) -> Result<Self, WireError> {
        let v = u64::decode(input)?;
        usize::try_from(v).map_err(|_| WireError(format!("{v} does not fit a usize")))
    }
}

impl Wire for isize {
    fn encode(&self, out: &mut Vec<u8>) {
        (*self as i64).encode(out);
    }
    fn decode(input: &mut &[u8]) -> Result<Self, WireError> {
        let v = i64::decode(input)?;
        isize::try_from(v).map_err(|_| WireError(format!("{v} does not fit an isize")))
    }
}

impl Wire for bool {
    fn encode(&self, out: &mut Vec<u8>) {
        out.push(*self as u8);
    }
    fn decode(input: &mut &[u8]) -> Result<Self, WireError> {
        match take(input, 1, "bool")?[0] {
            0 => Ok(false),
            1 => Ok(true),
            b => Err(WireError(format!("{b} is not a bool"))),
        }
    }
}

impl Wire for char {
    fn encode(&self, out: &mut Vec<u8>) {
        (*self as u32).encode(out);
    }
    fn decode(input: &mut &[u8]) -> Result<Self, WireError> {
        let v = u32::decode(input)?;
        char::from_u32(v).ok_or_else(|| WireError(format!("{v:#x} is not a char")))
    }
}

impl Wire for () {
    fn encode(&self, _out: &mut Vec<u8>) {}
    fn decode(_input: &mut &[u8]) -> Result<Self, WireError> {
        Ok(())
    }
}

impl<T: Wire> Wire for Box<T> {
    fn encode(&self, out: &mut Vec<u8>) {
        (**self).encode(out);
    }
    fn decode(input: &mut &[u8]) -> Result<Self, WireError> {
        T::decode(input).map(Box::new)
    }
}

impl<T: Wire> Wire for Option<T> {
    fn encode(&self, out: &mut Vec<u8>) {
        match self {
            None => out.push(0),
            Some(v) => {
                out.push(1);
                v.encode(out);
            }
        }
    }
    fn decode(input: &mut &[u8]) -> Result<Self, WireError> {
        match take(input, 1, "Option tag")?[0] {
            0 => Ok(None),
            1 => T::decode(input).map(Some),
            b => Err(WireError(format!("{b} is not an Option tag"))),
        }
    }
}

/// Most zero-sized elements one decoded vector may hold.
const MAX_ZERO_SIZED: usize = 1 << 24;

fn decode_len(input: &mut &[u8]) -> Result<usize, WireError> {
    let n = u64::decode(input)?;
    usize::try_from(n).map_err(|_| WireError(format!("length {n} does not fit a usize")))
}

impl<T: Wire> Wire for Vec<T> {
    fn encode(&self, out: &mut Vec<u8>) {
        (self.len() as u64).encode(out);
        for v in self {
            v.encode(out);
        }
    }
    fn decode(input: &mut &[u8]) -> Result<Self, WireError> {
        let n = decode_len(input)?;
        // Never trust the length: an element of a sized type takes at least one
        // byte, so more elements than bytes left is malformed; zero-sized values
        // cost nothing to hold but are capped so the loop stays short.
        let limit = if std::mem::size_of::<T>() == 0 {
            MAX_ZERO_SIZED
        } else {
            input.len()
        };
        if n > limit {
            return Err(WireError(format!(
                "a sequence of {n} elements with only {} bytes left",
                input.len()
            )));
        }
        let mut v = Vec::with_capacity(n);
        for _ in 0..n {
            v.push(T::decode(input)?);
        }
        Ok(v)
    }
}

impl Wire for String {
    fn encode(&self, out: &mut Vec<u8>) {
        (self.len() as u64).encode(out);
        out.extend_from_slice(self.as_bytes());
    }
    fn decode(input: &mut &[u8]) -> Result<Self, WireError> {
        let n = decode_len(input)?;
        let b = take(input, n, "String")?;
        String::from_utf8(b.to_vec()).map_err(|e| WireError(format!("String: {e}")))
    }
}

impl<T: Wire, const N: usize> Wire for [T; N] {
    fn encode(&self, out: &mut Vec<u8>) {
        for v in self {
            v.encode(out);
        }
    }
    fn decode(input: &mut &[u8]) -> Result<Self, WireError> {
        let mut v = Vec::with_capacity(N.min(input.len()));
        for _ in 0..N {
            v.push(T::decode(input)?);
        }
        v.try_into()
            .map_err(|_| WireError("array length changed while decoding".into()))
    }
}

macro_rules! wire_tuple {
    ($($name:ident),+) => {
        impl<$($name: Wire),+> Wire for ($($name,)+) {
            #[allow(non_snake_case)]
            fn encode(&self, out: &mut Vec<u8>) {
                let ($($name,)+) = self;
                $($name.encode(out);)+
            }
            fn decode(input: &mut &[u8]) -> Result<Self, WireError> {
                Ok(($($name::decode(input)?,)+))
            }
        }
    };
}

wire_tuple!(A);
wire_tuple!(A, B);
wire_tuple!(A, B, C);
wire_tuple!(A, B, C, D);

#[cfg(test)]
mod tests {
    use super::*;

    fn round<T: Wire + PartialEq + fmt::Debug>(v: T) {
        let b = to_bytes(&v);
        assert_eq!(from_bytes::<T>(&b).unwrap(), v);
        for cut in 0..b.len() {
            assert!(from_bytes::<T>(&b[..cut]).is_err(), "{v:?} cut at {cut}");
        }
    }

    #[test]
    fn values_round_trip_and_truncations_fail() {
        round(7u8);
        round(-3i64);
        round(u128::MAX);
        round(1.5f64);
        round(true);
        round('λ');
        round(());
        round(Some(5u32));
        round(None::<u32>);
        round(vec![1u64, 2, 3]);
        round(String::from("tutti"));
        round([1i16, -2, 3]);
        round((1u8, 2u16, 3u32, 4u64));
        round(vec![(String::from("a"), vec![1.0f32])]);
        round(Box::new(9usize));
    }

    #[test]
    fn malformed_input_is_an_error_not_a_panic_or_a_huge_allocation() {
        // A vector claiming u64::MAX elements of unit type must fail or be bounded:
        // units take no bytes, so it is only bounded by the loop. Claim a huge
        // number of u64 instead, which must fail quickly for lack of bytes.
        let mut b = Vec::new();
        u64::MAX.encode(&mut b);
        assert!(from_bytes::<Vec<u64>>(&b).is_err());
        assert!(from_bytes::<String>(&b).is_err());
        assert!(from_bytes::<bool>(&[2]).is_err());
        assert!(from_bytes::<char>(&0xd800u32.to_le_bytes()).is_err());
        assert!(from_bytes::<Option<u8>>(&[7]).is_err());
        assert!(from_bytes::<u8>(&[1, 2])
            .unwrap_err()
            .to_string()
            .contains("stray"));
        let mut x = 88172645463325252u64;
        for len in 0..300 {
            let bytes: Vec<u8> = (0..len)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x as u8
                })
                .collect();
            let _ = from_bytes::<Vec<(String, Option<u32>)>>(&bytes);
        }
    }
}
