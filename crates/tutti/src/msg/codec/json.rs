//! The second payload format: JSON (serde_json), for peers that want readable
//! payloads (an RPC connection chooses its format when it connects). Frames and
//! their headers are the same in both formats; only the payload differs.
//! serde_json refuses values nested deeper than 128 levels and never trusts a
//! length, so a decoder allocates no more than the bytes present allow.

use serde::de::DeserializeOwned;
use serde::Serialize;

use super::CodecError;

/// How a payload is encoded: the binary codec ([`encode`](super::encode)) or
/// JSON.
///
/// ```
/// use tutti::msg::codec::Format;
///
/// let mut buf = Vec::new();
/// Format::Json.encode(&(1u8, "two"), &mut buf).unwrap();
/// assert_eq!(buf, br#"[1,"two"]"#);
/// assert_eq!(Format::Json.decode::<(u8, String)>(&buf).unwrap(), (1, "two".into()));
/// assert!(Format::Json.decode::<(u8, String)>(b"[1,").is_err());
/// ```
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize,
)]
pub enum Format {
    /// tutti's binary codec (postcard through the depth guard).
    #[default]
    Binary,
    /// JSON text (serde_json).
    Json,
}

impl Format {
    /// Appends `value`, encoded in this format, to `out`; on error `out` is left
    /// as it was.
    pub fn encode<T: Serialize + ?Sized>(
        self,
        value: &T,
        out: &mut Vec<u8>,
    ) -> Result<(), CodecError> {
        match self {
            Format::Binary => super::encode(value, out),
            Format::Json => {
                let start = out.len();
                serde_json::to_writer(&mut *out, value).map_err(|e| {
                    out.truncate(start);
                    CodecError::Encode {
                        what: std::any::type_name::<T>(),
                        reason: e.to_string(),
                    }
                })
            }
        }
    }

    /// Decodes `bytes`, the whole of them, as a `T` in this format.
    pub fn decode<T: DeserializeOwned>(self, bytes: &[u8]) -> Result<T, CodecError> {
        match self {
            Format::Binary => super::decode(bytes),
            Format::Json => serde_json::from_slice(bytes).map_err(|e| CodecError::Payload {
                what: std::any::type_name::<T>(),
                reason: e.to_string(),
            }),
        }
    }

    /// The format's name ("binary" or "json").
    pub fn name(self) -> &'static str {
        match self {
            Format::Binary => "binary",
            Format::Json => "json",
        }
    }
}
