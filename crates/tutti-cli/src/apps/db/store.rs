//! The key–value store every implementation serves, and its wire format.

use std::collections::HashMap;

/// A request to the store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Request {
    /// The value of a key.
    Get(u64),
    /// Sets a key; the reply is the value it replaces.
    Put(u64, u64),
}

/// Bytes of an encoded request: op, key, value.
pub const REQUEST_BYTES: usize = 17;
/// Bytes of an encoded reply: present, value.
pub const REPLY_BYTES: usize = 9;

impl Request {
    /// The wire form.
    pub fn encode(self) -> [u8; REQUEST_BYTES] {
        let (op, key, value) = match self {
            Request::Get(k) => (0u8, k, 0),
            Request::Put(k, v) => (1u8, k, v),
        };
        let mut b = [0u8; REQUEST_BYTES];
        b[0] = op;
        b[1..9].copy_from_slice(&key.to_le_bytes());
        b[9..17].copy_from_slice(&value.to_le_bytes());
        b
    }

    /// Reads the wire form; an unknown operation is an error.
    pub fn decode(b: &[u8; REQUEST_BYTES]) -> Result<Request, String> {
        let word = |r: std::ops::Range<usize>| {
            let mut w = [0u8; 8];
            w.copy_from_slice(&b[r]);
            u64::from_le_bytes(w)
        };
        match b[0] {
            0 => Ok(Request::Get(word(1..9))),
            1 => Ok(Request::Put(word(1..9), word(9..17))),
            op => Err(format!("unknown request operation {op}")),
        }
    }
}

/// The wire form of a reply.
pub fn encode_reply(r: Option<u64>) -> [u8; REPLY_BYTES] {
    let mut b = [0u8; REPLY_BYTES];
    if let Some(v) = r {
        b[0] = 1;
        b[1..9].copy_from_slice(&v.to_le_bytes());
    }
    b
}

/// Reads a reply; a malformed presence byte is an error.
pub fn decode_reply(b: &[u8; REPLY_BYTES]) -> Result<Option<u64>, String> {
    let mut w = [0u8; 8];
    w.copy_from_slice(&b[1..9]);
    match b[0] {
        0 => Ok(None),
        1 => Ok(Some(u64::from_le_bytes(w))),
        t => Err(format!("malformed reply tag {t}")),
    }
}

/// The store.
#[derive(Default, Debug)]
pub struct Store {
    map: HashMap<u64, u64>,
}

impl Store {
    /// Applies a request and returns its reply.
    pub fn apply(&mut self, r: Request) -> Option<u64> {
        match r {
            Request::Get(k) => self.map.get(&k).copied(),
            Request::Put(k, v) => self.map.insert(k, v),
        }
    }

    /// Keys stored.
    pub fn len(&self) -> usize {
        self.map.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_forms_round_trip_and_reject_garbage() {
        for r in [Request::Get(7), Request::Put(u64::MAX, 3)] {
            assert_eq!(Request::decode(&r.encode()), Ok(r));
        }
        let mut bad = Request::Get(1).encode();
        bad[0] = 9;
        assert!(Request::decode(&bad).is_err());
        for v in [None, Some(0), Some(42)] {
            assert_eq!(decode_reply(&encode_reply(v)), Ok(v));
        }
        assert!(decode_reply(&[2; REPLY_BYTES]).is_err());
    }
}
