//! Messages that cross process boundaries: the [`Remote`] trait and stable [`MsgId`]s.
use std::fmt;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use super::Message;

/// The stable id of a message type: the same on every rank, carried in every frame.
///
/// Made from a stable name by [`MsgId::from_name`] (a 64-bit FNV-1a hash with a final
/// mix, computed at compile time) or given explicitly with [`MsgId::new`]. Zero is
/// reserved for "no message type" ([`MsgId::NONE`]).
///
/// ```
/// use tutti::msg::MsgId;
///
/// const DEPOSIT: MsgId = MsgId::from_name("bank.Deposit");
/// assert_eq!(DEPOSIT, MsgId::from_name("bank.Deposit"));
/// assert_ne!(DEPOSIT, MsgId::from_name("bank.Withdraw"));
/// assert_eq!(MsgId::new(42).get(), 42);
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct MsgId(u64);

impl MsgId {
    /// "No message type": frames that carry no typed message (e.g. control traffic
    /// whose meaning lies in the header alone).
    pub const NONE: MsgId = MsgId(0);

    /// The id of a stable name: FNV-1a over its UTF-8 bytes, then a bijective 64-bit
    /// mix so that similar names spread over all bits. Never [`MsgId::NONE`].
    ///
    /// ```
    /// # use tutti::msg::MsgId;
    /// assert_ne!(MsgId::from_name(""), MsgId::NONE);
    /// ```
    pub const fn from_name(name: &str) -> MsgId {
        let bytes = name.as_bytes();
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        let mut i = 0;
        while i < bytes.len() {
            h ^= bytes[i] as u64;
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
            i += 1;
        }
        let h = mix64(h);
        // The mix is a bijection, so exactly one hash maps to zero; move it.
        MsgId(if h == 0 { 1 } else { h })
    }

    /// An explicit id. Panics (at compile time in a `const`) if `raw` is zero, the
    /// reserved [`MsgId::NONE`].
    ///
    /// ```
    /// # use tutti::msg::MsgId;
    /// const PING: MsgId = MsgId::new(7);
    /// assert_eq!(PING.get(), 7);
    /// ```
    ///
    /// ```compile_fail
    /// # use tutti::msg::MsgId;
    /// const BAD: MsgId = MsgId::new(0);
    /// ```
    pub const fn new(raw: u64) -> MsgId {
        assert!(raw != 0, "tutti: message id 0 is reserved for MsgId::NONE");
        MsgId(raw)
    }

    /// The id as it travels in a frame header (zero for [`MsgId::NONE`]).
    pub(crate) const fn from_wire(raw: u64) -> MsgId {
        MsgId(raw)
    }

    /// The raw 64-bit value, as it travels in a frame header.
    ///
    /// ```
    /// # use tutti::msg::MsgId;
    /// assert_eq!(MsgId::NONE.get(), 0);
    /// ```
    pub const fn get(self) -> u64 {
        self.0
    }
}

/// SplitMix64's finalizer: a bijection whose every output bit depends on every input bit.
pub(crate) const fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl fmt::Debug for MsgId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "MsgId({self})")
    }
}

impl fmt::Display for MsgId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#018x}", self.0)
    }
}

/// A message that can cross a process boundary: serializable, with a serializable
/// reply, and a stable name that identifies its type on every rank.
///
/// In-process, a `Remote` message still moves as a typed value; serialization happens
/// only when it leaves the process.
///
/// A frame names the type of its payload by a [`MsgId`], so the id of a type must be
/// the same on every rank of a job. `std::any::TypeId` and `std::any::type_name` are
/// not made for that (the first differs between builds, the second is documented as a
/// diagnostic that may change between compiler versions), so the id comes from a name
/// the programmer gives, hashed at compile time by [`MsgId::from_name`], or from an
/// explicit [`ID`](Remote::ID). Ranks compare their registries at start-up
/// ([`check_digests`](super::check_digests)), so a type that one rank lacks or names
/// differently is a clear error before any message flows. The name must be unique among the registered types
/// of a job and the same on every rank; a dotted path (`"bank.Deposit"`) is a good habit.
/// [`ID`](Remote::ID) defaults to the hash of the name; set it explicitly to keep an id
/// fixed across renames.
///
/// ```
/// use serde::{Deserialize, Serialize};
/// use tutti::msg::{Message, MsgId, Remote};
///
/// #[derive(Serialize, Deserialize)]
/// struct Deposit { account: u32, cents: u64 }
/// impl Message for Deposit { type Reply = u64; }
/// impl Remote for Deposit { const NAME: &'static str = "bank.Deposit"; }
///
/// assert_eq!(Deposit::ID, MsgId::from_name("bank.Deposit"));
/// ```
///
/// The reply must be serializable too:
///
/// ```compile_fail
/// use serde::{Deserialize, Serialize};
/// use tutti::msg::{Message, Remote};
///
/// struct NotWire;
/// #[derive(Serialize, Deserialize)]
/// struct Ask;
/// impl Message for Ask { type Reply = NotWire; }
/// impl Remote for Ask { const NAME: &'static str = "Ask"; }
/// ```
pub trait Remote:
    Message<Reply: Serialize + DeserializeOwned> + Serialize + DeserializeOwned
{
    /// The stable name of the type, the same on every rank.
    const NAME: &'static str;
    /// The id frames carry for this type; by default the hash of [`NAME`](Remote::NAME).
    const ID: MsgId = MsgId::from_name(Self::NAME);
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn ids_are_fixed_values() {
        // The hash is part of the wire format: these values must never change
        // (computed independently: FNV-1a 64, then SplitMix64's finalizer).
        assert_eq!(MsgId::from_name("").get(), 0xf52a_15e9_a9b5_e89b);
        assert_eq!(
            MsgId::from_name("bank.Deposit").get(),
            0x06dc_bfd0_b646_1411
        );
        let a = MsgId::from_name("bank.Deposit");
        assert_eq!(a, MsgId::from_name("bank.Deposit"));
        assert_ne!(a, MsgId::from_name("bank.deposit"));
        assert_ne!(a, MsgId::from_name("bank.Deposit "));
    }

    #[test]
    fn display_is_hex() {
        assert_eq!(MsgId::new(255).to_string(), "0x00000000000000ff");
        assert_eq!(format!("{:?}", MsgId::new(1)), "MsgId(0x0000000000000001)");
    }
}
