//! The connection handshake: the client's `Hello` (protocol version, cookie,
//! payload format) is the first frame on a connection, answered by `Welcome`
//! or by `Refused` (then the server closes the connection). Both are `Control`
//! frames of the core; nothing else is accepted before the handshake, and
//! after it every frame belongs to the endpoint's conversation.

use serde::{Deserialize, Serialize};

use crate::msg::codec::{self, CodecError, Format, FrameKind, Header};
use crate::msg::MsgId;

/// The handshake's version; a client of another version is refused.
pub(crate) const VERSION: u32 = 1;

pub(crate) const HELLO: MsgId = MsgId::from_name("tutti.rpc.Hello");
pub(crate) const WELCOME: MsgId = MsgId::from_name("tutti.rpc.Welcome");
pub(crate) const REFUSED: MsgId = MsgId::from_name("tutti.rpc.Refused");

/// A client's first frame.
#[derive(Serialize, Deserialize, Debug)]
pub(crate) struct Hello {
    pub(crate) version: u32,
    pub(crate) cookie: String,
    pub(crate) format: Format,
}

/// A handshake frame: `msg` says which, `body` is its payload.
pub(crate) fn frame<T: Serialize>(msg: MsgId, body: &T) -> Result<Vec<u8>, CodecError> {
    let mut out = Vec::new();
    let h = Header {
        msg,
        ..Header::new(FrameKind::Control)
    };
    codec::encode_frame(&h, body, &mut out)?;
    Ok(out)
}

/// Compares cookies in time independent of where they differ.
pub(crate) fn same_cookie(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let mut diff = (a.len() ^ b.len()) as u64;
    for i in 0..a.len().max(b.len()) {
        let x = a.get(i).copied().unwrap_or(0);
        let y = b.get(i).copied().unwrap_or(0);
        diff |= u64::from(x ^ y);
    }
    diff == 0
}

/// A client's handshake frame with `cookie` and the payload format (JSON if
/// `json`), for the fuzz target `rpc_stream` (feature `fuzzing`).
#[cfg(feature = "fuzzing")]
pub(crate) fn fuzz_hello(cookie: &str, json: bool) -> Vec<u8> {
    let hello = Hello {
        version: VERSION,
        cookie: cookie.to_string(),
        format: if json { Format::Json } else { Format::Binary },
    };
    match frame(HELLO, &hello) {
        Ok(f) => f,
        Err(e) => panic!("a handshake frame does not encode: {e}"),
    }
}
