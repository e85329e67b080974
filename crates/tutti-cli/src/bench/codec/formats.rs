//! The serde formats compared by `tutti bench codec`, behind one interface.
//!
//! Every format appends to a reused buffer (the way a transport fills its aggregation
//! buffers) and decodes owned values from a byte slice. Where a crate has no
//! append-into-a-buffer call (bitcode's serde path), its own allocating call is used and
//! its output copied, which is what a transport would have to do with it.
//!
//! bincode 2 decodes with a 1 MiB limit: with its standard configuration and no limit, a
//! hostile 36-byte input made it request an allocation of 3.5 × 10^18 bytes, which
//! aborts the process (measured while choosing the format; see the module docs of
//! `bench::codec`).

use serde::de::DeserializeOwned;
use serde::Serialize;

/// One serde format: append an encoding to a buffer, decode from a slice.
pub trait Format {
    /// The name in the report.
    const NAME: &'static str;
    /// Appends the encoding of `value` to `out`.
    fn encode<T: Serialize>(value: &T, out: &mut Vec<u8>) -> Result<(), String>;
    /// Decodes a value that must use all of `bytes`.
    fn decode<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, String>;
}

/// postcard 1: varints, no field names, stable documented wire format.
pub struct Postcard;
impl Format for Postcard {
    const NAME: &'static str = "postcard";
    fn encode<T: Serialize>(value: &T, out: &mut Vec<u8>) -> Result<(), String> {
        postcard::to_io(value, out)
            .map(drop)
            .map_err(|e| e.to_string())
    }
    fn decode<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, String> {
        match postcard::take_from_bytes(bytes) {
            Ok((v, [])) => Ok(v),
            Ok(_) => Err("trailing bytes".into()),
            Err(e) => Err(e.to_string()),
        }
    }
}

/// bincode 1 with its default functions (fixed-width integers).
pub struct Bincode1;
impl Format for Bincode1 {
    const NAME: &'static str = "bincode1";
    fn encode<T: Serialize>(value: &T, out: &mut Vec<u8>) -> Result<(), String> {
        bincode1::serialize_into(out, value).map_err(|e| e.to_string())
    }
    fn decode<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, String> {
        bincode1::deserialize(bytes).map_err(|e| e.to_string())
    }
}

/// bincode 2's serde path with its standard configuration (varints), decoding with a
/// 1 MiB limit.
pub struct Bincode2;
impl Format for Bincode2 {
    const NAME: &'static str = "bincode2";
    fn encode<T: Serialize>(value: &T, out: &mut Vec<u8>) -> Result<(), String> {
        bincode2::serde::encode_into_std_write(value, out, bincode2::config::standard())
            .map(drop)
            .map_err(|e| e.to_string())
    }
    fn decode<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, String> {
        let config = bincode2::config::standard().with_limit::<{ 1 << 20 }>();
        match bincode2::serde::decode_from_slice(bytes, config) {
            Ok((v, n)) if n == bytes.len() => Ok(v),
            Ok(_) => Err("trailing bytes".into()),
            Err(e) => Err(e.to_string()),
        }
    }
}

/// bitcode 0.6's serde path (columnar, bit-packed).
pub struct Bitcode;
impl Format for Bitcode {
    const NAME: &'static str = "bitcode";
    fn encode<T: Serialize>(value: &T, out: &mut Vec<u8>) -> Result<(), String> {
        let bytes = bitcode::serialize(value).map_err(|e| e.to_string())?;
        out.extend_from_slice(&bytes);
        Ok(())
    }
    fn decode<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, String> {
        bitcode::deserialize(bytes).map_err(|e| e.to_string())
    }
}

/// MessagePack through rmp-serde (structs as arrays, self-describing values).
pub struct Rmp;
impl Format for Rmp {
    const NAME: &'static str = "rmp-serde";
    fn encode<T: Serialize>(value: &T, out: &mut Vec<u8>) -> Result<(), String> {
        rmp_serde::encode::write(out, value).map_err(|e| e.to_string())
    }
    fn decode<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, String> {
        let mut de = rmp_serde::Deserializer::new(std::io::Cursor::new(bytes));
        let v = T::deserialize(&mut de).map_err(|e| e.to_string())?;
        if de.position() == bytes.len() as u64 {
            Ok(v)
        } else {
            Err("trailing bytes".into())
        }
    }
}

/// tutti's codec: the format it chose, behind `tutti::msg::codec` (appending to the
/// buffer directly, decoding through its depth and length guard).
pub struct Tutti;
impl Format for Tutti {
    const NAME: &'static str = "tutti";
    fn encode<T: Serialize>(value: &T, out: &mut Vec<u8>) -> Result<(), String> {
        tutti::msg::codec::encode(value, out).map_err(|e| e.to_string())
    }
    fn decode<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, String> {
        tutti::msg::codec::decode(bytes).map_err(|e| e.to_string())
    }
}

/// tutti's codec with a whole frame around each value: the 48-byte header, the
/// payload and its padding, decoded through every header check.
pub struct TuttiFrame;
impl Format for TuttiFrame {
    const NAME: &'static str = "tutti-frame";
    fn encode<T: Serialize>(value: &T, out: &mut Vec<u8>) -> Result<(), String> {
        use tutti::msg::codec::{encode_frame, FrameKind, Header};
        let header = Header {
            msg: tutti::msg::MsgId::new(1),
            ..Header::new(FrameKind::Tell)
        };
        encode_frame(&header, value, out)
            .map(drop)
            .map_err(|e| e.to_string())
    }
    fn decode<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, String> {
        let frame = tutti::msg::codec::decode_frame(bytes).map_err(|e| e.to_string())?;
        frame.decode().map_err(|e| e.to_string())
    }
}
