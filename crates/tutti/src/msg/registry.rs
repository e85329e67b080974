//! The registry of message types that cross process boundaries, and its digest.
//!
//! Every rank of a job registers the same [`Remote`] types; the registry maps each
//! [`MsgId`] to the type's stable name and a decode function, and refuses two types that
//! claim one id or one name. At start-up the world layer exchanges each rank's
//! [`Digest`] — the sorted list of (id, name) pairs plus the facts about the rank that
//! the wire form depends on — and calls [`check_digests`], which names every type one
//! rank has and another lacks or names differently. So a job whose ranks were built
//! from different code stops with a clear error before the first message, instead of
//! misreading frames.
//!
//! The registry it checks is the **process's** one: [`register`] adds a type to it,
//! [`registered`] copies it. The world compares the ranks' digests when it starts
//! under MPI (`World::build`/`from_env`; the error is
//! `WorldError::Registry`), so types are registered before the world is built.
//! Per-object [`Dispatch`](super::Dispatch) tables are separate: they route what
//! one object type accepts and are not compared across ranks.

use crate::loom::{lock, unmodelled};
use std::any::{Any, TypeId};
use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use super::codec::{self, CodecError};
use super::remote::mix64;
use super::{MsgId, Remote};

/// Decodes a payload of one registered type into a boxed value of that type.
type DecodeAny = fn(&[u8]) -> Result<Box<dyn Any + Send>, CodecError>;

fn decode_any<M: Remote>(payload: &[u8]) -> Result<Box<dyn Any + Send>, CodecError> {
    codec::decode::<M>(payload).map(|m| Box::new(m) as Box<dyn Any + Send>)
}

/// One registered message type.
#[derive(Clone, Copy)]
pub struct Entry {
    id: MsgId,
    name: &'static str,
    type_id: TypeId,
    type_name: &'static str,
    decode: DecodeAny,
}

impl Entry {
    pub(crate) fn of<M: Remote>() -> Entry {
        Entry {
            id: M::ID,
            name: M::NAME,
            type_id: TypeId::of::<M>(),
            type_name: std::any::type_name::<M>(),
            decode: decode_any::<M>,
        }
    }

    /// The type's id.
    pub fn id(&self) -> MsgId {
        self.id
    }

    /// The type's stable name ([`Remote::NAME`]).
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The Rust type's name, for diagnostics only (it may differ between builds).
    pub fn type_name(&self) -> &'static str {
        self.type_name
    }

    /// Decodes a payload of this type into a boxed value (downcast it with
    /// `Box::<dyn Any>::downcast`).
    pub fn decode(&self, payload: &[u8]) -> Result<Box<dyn Any + Send>, CodecError> {
        (self.decode)(payload)
    }
}

impl fmt::Debug for Entry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Entry")
            .field("id", &self.id)
            .field("name", &self.name)
            .field("type", &self.type_name)
            .finish()
    }
}

/// Why a type could not be registered.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum RegistryError {
    /// Two different types have the same id: the same [`Remote::NAME`], or names whose
    /// hashes collide, or the same explicit [`Remote::ID`].
    Collision {
        /// The id both claim.
        id: MsgId,
        /// The type registered first: (stable name, Rust type name).
        first: (&'static str, &'static str),
        /// The type refused: (stable name, Rust type name).
        second: (&'static str, &'static str),
    },
    /// Two different types have the same stable name but different (explicit) ids.
    DuplicateName {
        /// The name.
        name: &'static str,
        /// The Rust type registered first.
        first: &'static str,
        /// The Rust type refused.
        second: &'static str,
    },
    /// A type declared an empty stable name.
    EmptyName {
        /// The Rust type.
        type_name: &'static str,
    },
}

impl fmt::Display for RegistryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RegistryError::Collision { id, first, second } if first.0 == second.0 => write!(
                f,
                "message types `{}` and `{}` both use the stable name \"{}\" (id {id}): \
                 give one of them another Remote::NAME",
                first.1, second.1, first.0
            ),
            RegistryError::Collision { id, first, second } => write!(
                f,
                "message types \"{}\" (`{}`) and \"{}\" (`{}`) have the same id {id}: \
                 change one of the names or set an explicit Remote::ID",
                first.0, first.1, second.0, second.1
            ),
            RegistryError::DuplicateName {
                name,
                first,
                second,
            } => write!(
                f,
                "message types `{first}` and `{second}` both use the stable name \"{name}\" \
                 with different ids: give one of them another Remote::NAME"
            ),
            RegistryError::EmptyName { type_name } => {
                write!(f, "message type `{type_name}` has an empty Remote::NAME")
            }
        }
    }
}

impl std::error::Error for RegistryError {}

/// The message types a rank can receive across process boundaries: id → name and
/// decode function.
///
/// Registering a type twice is harmless; registering two types with one id or one
/// name is an error that names both.
///
/// ```
/// use serde::{Deserialize, Serialize};
/// use tutti::msg::{Message, Registry, Remote};
///
/// #[derive(Serialize, Deserialize)]
/// struct Deposit(u64);
/// impl Message for Deposit { type Reply = (); }
/// impl Remote for Deposit { const NAME: &'static str = "bank.Deposit"; }
///
/// #[derive(Serialize, Deserialize)]
/// struct Balance;
/// impl Message for Balance { type Reply = u64; }
/// impl Remote for Balance { const NAME: &'static str = "bank.Balance"; }
///
/// let mut registry = Registry::new();
/// registry.register::<Deposit>()?.register::<Balance>()?;
/// assert_eq!(registry.get(Deposit::ID).map(|e| e.name()), Some("bank.Deposit"));
///
/// // Decoding by id, without knowing the type statically:
/// let mut payload = Vec::new();
/// tutti::msg::codec::encode(&Deposit(5), &mut payload)?;
/// let value = registry.decode(Deposit::ID, &payload)?;
/// assert_eq!(value.downcast::<Deposit>().unwrap().0, 5);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, Default)]
pub struct Registry {
    /// Sorted by id.
    entries: Vec<Entry>,
}

impl Registry {
    /// An empty registry.
    pub fn new() -> Registry {
        Registry::default()
    }

    /// Registers `M`; chains with `?`.
    pub fn register<M: Remote>(&mut self) -> Result<&mut Registry, RegistryError> {
        self.insert(Entry::of::<M>())?;
        Ok(self)
    }

    pub(crate) fn insert(&mut self, entry: Entry) -> Result<(), RegistryError> {
        if entry.name.is_empty() {
            return Err(RegistryError::EmptyName {
                type_name: entry.type_name,
            });
        }
        if let Some(other) = self.entries.iter().find(|e| e.name == entry.name) {
            if other.type_id != entry.type_id && other.id != entry.id {
                return Err(RegistryError::DuplicateName {
                    name: entry.name,
                    first: other.type_name,
                    second: entry.type_name,
                });
            }
        }
        match self.entries.binary_search_by_key(&entry.id, |e| e.id) {
            Ok(i) if self.entries[i].type_id == entry.type_id => Ok(()),
            Ok(i) => {
                let first = &self.entries[i];
                Err(RegistryError::Collision {
                    id: entry.id,
                    first: (first.name, first.type_name),
                    second: (entry.name, entry.type_name),
                })
            }
            Err(i) => {
                self.entries.insert(i, entry);
                Ok(())
            }
        }
    }

    /// The entry of `id`, if registered.
    pub fn get(&self, id: MsgId) -> Option<&Entry> {
        self.entries
            .binary_search_by_key(&id, |e| e.id)
            .ok()
            .map(|i| &self.entries[i])
    }

    /// The stable name of `id`, if registered (for error messages about frames).
    pub fn name(&self, id: MsgId) -> Option<&'static str> {
        self.get(id).map(|e| e.name)
    }

    /// Decodes a payload of the registered type `id` into a boxed value.
    ///
    /// An error if `id` is not registered or the payload is not a valid value of it.
    pub fn decode(
        &self,
        id: MsgId,
        payload: &[u8],
    ) -> Result<Box<dyn Any + Send>, DecodeByIdError> {
        let entry = self.get(id).ok_or(DecodeByIdError::Unregistered(id))?;
        entry
            .decode(payload)
            .map_err(|error| DecodeByIdError::Codec {
                name: entry.name,
                error,
            })
    }

    /// The registered types, sorted by id.
    pub fn iter(&self) -> impl Iterator<Item = &Entry> + '_ {
        self.entries.iter()
    }

    /// How many types are registered.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no type is registered.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// This rank's digest, for the start-up check that all ranks agree
    /// ([`check_digests`]).
    ///
    /// ```
    /// # use serde::{Deserialize, Serialize};
    /// # use tutti::msg::{Message, Registry, Remote};
    /// # #[derive(Serialize, Deserialize)] struct Ping;
    /// # impl Message for Ping { type Reply = (); }
    /// # impl Remote for Ping { const NAME: &'static str = "Ping"; }
    /// let mut a = Registry::new();
    /// a.register::<Ping>()?;
    /// let b = a.clone();
    /// assert_eq!(a.digest().hash(), b.digest().hash());
    /// assert_ne!(a.digest().hash(), Registry::new().digest().hash());
    /// # Ok::<(), tutti::msg::RegistryError>(())
    /// ```
    pub fn digest(&self) -> Digest {
        Digest {
            platform: Platform::this(),
            types: self
                .entries
                .iter()
                .map(|e| (e.id, e.name.to_string()))
                .collect(),
        }
    }
}

/// The process's registry: the types registered with [`register`].
static PROCESS: unmodelled::Mutex<Registry> = unmodelled::Mutex::new(Registry {
    entries: Vec::new(),
});

fn process() -> unmodelled::MutexGuard<'static, Registry> {
    // The registry is only ever changed by `insert`, which leaves it valid even
    // if it panicked; a poisoned lock is still usable.
    lock(&PROCESS)
}

/// Registers `M` in the process's registry, the one whose [`Digest`] the world
/// compares across ranks when it starts under MPI.
///
/// Register every message type that crosses ranks **before building the
/// world** (typically first thing in `main`, on every rank alike): a job whose
/// ranks registered different types then fails at start-up with an error
/// naming the ranks and the types ([`check_digests`]), before any frame is
/// misread. Registering a type twice is harmless; two types with one id or one
/// name are an error naming both.
///
/// ```
/// use serde::{Deserialize, Serialize};
/// use tutti::msg::{self, Message, Remote};
///
/// #[derive(Serialize, Deserialize)]
/// struct Deposit(u64);
/// impl Message for Deposit { type Reply = (); }
/// impl Remote for Deposit { const NAME: &'static str = "doc.bank.Deposit"; }
///
/// msg::register::<Deposit>()?;
/// assert_eq!(msg::registered().name(Deposit::ID), Some("doc.bank.Deposit"));
/// # Ok::<(), tutti::msg::RegistryError>(())
/// ```
pub fn register<M: Remote>() -> Result<(), RegistryError> {
    process().insert(Entry::of::<M>())
}

/// A copy of the process's registry (the types registered with [`register`]).
pub fn registered() -> Registry {
    process().clone()
}

/// Why [`Registry::decode`] failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DecodeByIdError {
    /// No type with this id is registered.
    Unregistered(MsgId),
    /// The payload is not a valid value of the registered type.
    Codec {
        /// The type's stable name.
        name: &'static str,
        /// What was wrong.
        error: CodecError,
    },
}

impl fmt::Display for DecodeByIdError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DecodeByIdError::Unregistered(id) => {
                write!(f, "no message type with id {id} is registered")
            }
            DecodeByIdError::Codec { name, error } => {
                write!(f, "cannot decode a \"{name}\": {error}")
            }
        }
    }
}

impl std::error::Error for DecodeByIdError {}

/// The facts about a rank that plain-old-data payloads and the codec depend on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Platform {
    /// The codec version ([`codec::VERSION`]).
    pub codec_version: u8,
    /// Whether the rank is little-endian (plain-old-data travels in native order).
    pub little_endian: bool,
    /// Bits of a pointer (`usize` fields of plain-old-data types).
    pub pointer_width: u8,
}

impl Platform {
    /// This process's platform.
    pub fn this() -> Platform {
        Platform {
            codec_version: codec::VERSION,
            little_endian: cfg!(target_endian = "little"),
            pointer_width: (usize::BITS) as u8,
        }
    }
}

impl fmt::Display for Platform {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "codec v{}, {}-endian, {}-bit",
            self.codec_version,
            if self.little_endian { "little" } else { "big" },
            self.pointer_width
        )
    }
}

/// What a rank tells the others at start-up about its registry: the registered
/// (id, name) pairs, sorted by id, and its [`Platform`].
///
/// Serializable: encode it with [`codec::encode`] and exchange it; compare with
/// [`check_digests`]. [`hash`](Digest::hash) condenses it to 64 bits for a cheap
/// first comparison.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Digest {
    platform: Platform,
    types: Vec<(MsgId, String)>,
}

impl Digest {
    /// A 64-bit hash of the whole digest: equal digests have equal hashes.
    pub fn hash(&self) -> u64 {
        let mut h = mix64(u64::from(self.platform.codec_version))
            ^ mix64(u64::from(self.platform.little_endian) << 8)
            ^ mix64(u64::from(self.platform.pointer_width) << 16);
        for (id, name) in &self.types {
            h = mix64(h ^ id.get()) ^ MsgId::from_name(name).get();
        }
        h
    }

    /// The platform of the rank that made it.
    pub fn platform(&self) -> Platform {
        self.platform
    }

    /// The registered (id, name) pairs, sorted by id.
    pub fn types(&self) -> &[(MsgId, String)] {
        &self.types
    }
}

/// How one rank's registry differs from rank 0's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RankMismatch {
    /// The rank.
    pub rank: usize,
    /// Its platform and rank 0's, if they differ.
    pub platform: Option<(Platform, Platform)>,
    /// Types rank 0 registered that this rank lacks: (id, name).
    pub missing: Vec<(MsgId, String)>,
    /// Types this rank registered that rank 0 lacks: (id, name).
    pub extra: Vec<(MsgId, String)>,
    /// Ids both registered under different names: (id, rank 0's name, this rank's).
    pub renamed: Vec<(MsgId, String, String)>,
}

/// The ranks of a job disagree about their message registries: every rank that differs
/// from rank 0, with the types that differ.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mismatch {
    /// One entry per rank that differs from rank 0, in rank order.
    pub ranks: Vec<RankMismatch>,
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the ranks registered different message types")?;
        for r in &self.ranks {
            write!(f, "; rank {} vs rank 0:", r.rank)?;
            let mut sep = " ";
            if let Some((ours, theirs)) = r.platform {
                write!(f, "{sep}platform {ours} vs {theirs}")?;
                sep = ", ";
            }
            for (id, name) in &r.missing {
                write!(f, "{sep}lacks \"{name}\" ({id})")?;
                sep = ", ";
            }
            for (id, name) in &r.extra {
                write!(f, "{sep}has \"{name}\" ({id}) which rank 0 lacks")?;
                sep = ", ";
            }
            for (id, zero, theirs) in &r.renamed {
                write!(
                    f,
                    "{sep}calls {id} \"{theirs}\" where rank 0 says \"{zero}\""
                )?;
                sep = ", ";
            }
        }
        Ok(())
    }
}

impl std::error::Error for Mismatch {}

/// Checks that every rank's digest equals rank 0's; `digests[r]` is rank `r`'s.
///
/// The error names, for each differing rank, the types it lacks, the types only it
/// has, the ids it names differently, and a platform difference.
///
/// ```
/// use serde::{Deserialize, Serialize};
/// use tutti::msg::{check_digests, Message, Registry, Remote};
///
/// #[derive(Serialize, Deserialize)] struct Deposit(u64);
/// impl Message for Deposit { type Reply = (); }
/// impl Remote for Deposit { const NAME: &'static str = "bank.Deposit"; }
/// #[derive(Serialize, Deserialize)] struct Audit;
/// impl Message for Audit { type Reply = (); }
/// impl Remote for Audit { const NAME: &'static str = "bank.Audit"; }
///
/// let mut full = Registry::new();
/// full.register::<Deposit>()?.register::<Audit>()?;
/// let mut partial = Registry::new();
/// partial.register::<Deposit>()?;
///
/// assert!(check_digests(&[full.digest(), full.digest()]).is_ok());
/// let err = check_digests(&[full.digest(), full.digest(), partial.digest()]).unwrap_err();
/// assert_eq!(err.ranks[0].rank, 2);
/// assert!(err.to_string().contains("rank 2 vs rank 0: lacks \"bank.Audit\""), "{err}");
/// # Ok::<(), tutti::msg::RegistryError>(())
/// ```
pub fn check_digests(digests: &[Digest]) -> Result<(), Mismatch> {
    let Some(zero) = digests.first() else {
        return Ok(());
    };
    let reference: BTreeMap<MsgId, &str> =
        zero.types.iter().map(|(id, n)| (*id, n.as_str())).collect();
    let mut ranks = Vec::new();
    for (rank, d) in digests.iter().enumerate().skip(1) {
        if d == zero {
            continue;
        }
        let theirs: BTreeMap<MsgId, &str> =
            d.types.iter().map(|(id, n)| (*id, n.as_str())).collect();
        let mut r = RankMismatch {
            rank,
            platform: (d.platform != zero.platform).then_some((d.platform, zero.platform)),
            missing: Vec::new(),
            extra: Vec::new(),
            renamed: Vec::new(),
        };
        for (id, name) in &reference {
            match theirs.get(id) {
                None => r.missing.push((*id, name.to_string())),
                Some(t) if t != name => r.renamed.push((*id, name.to_string(), t.to_string())),
                Some(_) => {}
            }
        }
        for (id, name) in &theirs {
            if !reference.contains_key(id) {
                r.extra.push((*id, name.to_string()));
            }
        }
        // A digest with duplicate or unsorted entries (not made by `Registry::digest`)
        // that still maps to the same set counts as equal.
        if r.platform.is_some()
            || !r.missing.is_empty()
            || !r.extra.is_empty()
            || !r.renamed.is_empty()
        {
            ranks.push(r);
        }
    }
    if ranks.is_empty() {
        Ok(())
    } else {
        Err(Mismatch { ranks })
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::msg::Message;

    macro_rules! remote {
        ($t:ident, $name:expr) => {
            #[derive(Serialize, Deserialize, Debug, PartialEq)]
            struct $t(u32);
            impl Message for $t {
                type Reply = ();
            }
            impl Remote for $t {
                const NAME: &'static str = $name;
            }
        };
        ($t:ident, $name:expr, $id:expr) => {
            #[derive(Serialize, Deserialize, Debug, PartialEq)]
            struct $t(u32);
            impl Message for $t {
                type Reply = ();
            }
            impl Remote for $t {
                const NAME: &'static str = $name;
                const ID: MsgId = MsgId::new($id);
            }
        };
    }

    remote!(Deposit, "bank.Deposit");
    remote!(Withdraw, "bank.Withdraw");
    remote!(AlsoDeposit, "bank.Deposit");
    remote!(Fixed, "fixed", 42);
    remote!(FixedToo, "fixed.too", 42);
    remote!(Renamed, "bank.Deposit", 43);
    remote!(Nameless, "");

    #[test]
    fn registering_twice_is_harmless() {
        let mut r = Registry::new();
        r.register::<Deposit>()
            .unwrap()
            .register::<Deposit>()
            .unwrap();
        assert_eq!(r.len(), 1);
    }

    #[test]
    fn two_types_with_one_name_collide_and_both_are_named() {
        let mut r = Registry::new();
        r.register::<Deposit>().unwrap();
        let e = r.register::<AlsoDeposit>().unwrap_err();
        assert!(matches!(e, RegistryError::Collision { id, .. } if id == Deposit::ID));
        let msg = e.to_string();
        assert!(
            msg.contains("Deposit`") && msg.contains("AlsoDeposit`"),
            "{msg}"
        );
        assert!(msg.contains("\"bank.Deposit\""), "{msg}");
        assert_eq!(r.len(), 1, "the refused type is not registered");
    }

    #[test]
    fn explicit_ids_collide_too() {
        let mut r = Registry::new();
        r.register::<Fixed>().unwrap();
        let e = r.register::<FixedToo>().unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.contains("\"fixed\"") && msg.contains("\"fixed.too\""),
            "{msg}"
        );
        assert!(msg.contains("0x000000000000002a"), "{msg}");
    }

    #[test]
    fn one_name_with_two_ids_is_refused() {
        let mut r = Registry::new();
        r.register::<Deposit>().unwrap();
        let e = r.register::<Renamed>().unwrap_err();
        assert!(matches!(
            e,
            RegistryError::DuplicateName {
                name: "bank.Deposit",
                ..
            }
        ));
    }

    #[test]
    fn empty_names_are_refused() {
        let e = Registry::new().register::<Nameless>().unwrap_err();
        assert!(e.to_string().contains("empty Remote::NAME"), "{e}");
    }

    #[test]
    fn decode_by_id() {
        let mut r = Registry::new();
        r.register::<Deposit>()
            .unwrap()
            .register::<Withdraw>()
            .unwrap();
        let mut buf = Vec::new();
        codec::encode(&Withdraw(9), &mut buf).unwrap();
        let v = r.decode(Withdraw::ID, &buf).unwrap();
        assert_eq!(*v.downcast::<Withdraw>().unwrap(), Withdraw(9));
        assert_eq!(
            r.decode(Fixed::ID, &buf).unwrap_err(),
            DecodeByIdError::Unregistered(Fixed::ID)
        );
        let e = r.decode(Withdraw::ID, &buf[..0]).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("cannot decode a \"bank.Withdraw\""),
            "{e}"
        );
    }

    #[test]
    fn digests_name_every_difference() {
        let mut a = Registry::new();
        a.register::<Deposit>()
            .unwrap()
            .register::<Fixed>()
            .unwrap();
        let mut b = Registry::new();
        b.register::<Withdraw>()
            .unwrap()
            .register::<Fixed>()
            .unwrap();
        let mut c = a.digest();
        // The same id under another name, and another platform.
        c.types = vec![
            (Deposit::ID, "bank.Deposit".into()),
            (Fixed::ID, "fixed.v2".into()),
        ];
        c.platform.little_endian = !c.platform.little_endian;

        assert!(check_digests(&[]).is_ok());
        assert!(check_digests(&[a.digest()]).is_ok());
        assert!(check_digests(&[a.digest(), a.clone().digest()]).is_ok());

        let err = check_digests(&[a.digest(), a.digest(), b.digest(), c]).unwrap_err();
        assert_eq!(err.ranks.len(), 2);
        let r2 = &err.ranks[0];
        assert_eq!(r2.rank, 2);
        assert_eq!(r2.missing, vec![(Deposit::ID, "bank.Deposit".to_string())]);
        assert_eq!(r2.extra, vec![(Withdraw::ID, "bank.Withdraw".to_string())]);
        assert!(r2.renamed.is_empty() && r2.platform.is_none());
        let r3 = &err.ranks[1];
        assert_eq!(r3.rank, 3);
        assert_eq!(
            r3.renamed,
            vec![(Fixed::ID, "fixed".to_string(), "fixed.v2".to_string())]
        );
        assert!(r3.platform.is_some());
        let msg = err.to_string();
        for needle in [
            "rank 2 vs rank 0: lacks \"bank.Deposit\"",
            "has \"bank.Withdraw\"",
            "rank 3 vs rank 0: platform",
            "calls 0x000000000000002a \"fixed.v2\" where rank 0 says \"fixed\"",
        ] {
            assert!(msg.contains(needle), "{needle:?} not in {msg}");
        }
    }

    #[test]
    fn digests_travel_through_the_codec_and_hash_stably() {
        let mut a = Registry::new();
        a.register::<Deposit>()
            .unwrap()
            .register::<Withdraw>()
            .unwrap();
        let d = a.digest();
        let mut buf = Vec::new();
        codec::encode(&d, &mut buf).unwrap();
        let back: Digest = codec::decode(&buf).unwrap();
        assert_eq!(back, d);
        assert_eq!(back.hash(), d.hash());
        let mut b = Registry::new();
        b.register::<Deposit>().unwrap();
        assert_ne!(b.digest().hash(), d.hash());
    }
}
