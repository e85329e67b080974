//! A guard around the format's deserializer: it bounds nesting depth and claimed lengths.
//!
//! A serde format decodes by recursion: each nested option, newtype, sequence, map or
//! enum is one more level of Rust stack. A recursive message type (a tree) lets hostile
//! input nest as deep as it has bytes — a few bytes per level — and overflow the stack,
//! which aborts the process instead of returning an error. And a container's claimed
//! length becomes a capacity hint (serde preallocates up to 1 MiB per container from
//! it).
//!
//! So the decoder does not hand the format's deserializer to `T::deserialize` directly,
//! but this wrapper, which forwards every call and wraps every visitor, seed and access
//! object it passes on, so that:
//!
//! * each nested value it enters counts one level, and entering more than
//!   `max_depth` levels is a decode error;
//! * every length hint a sequence or map gives is capped by the payload's size, so a
//!   preallocation is never larger than the bytes actually present allow (each element
//!   of a non-empty type takes at least one byte);
//! * the elements and entries of length-prefixed sequences and maps, all of them
//!   together, number at most the payload's size plus [`ZST_ALLOWANCE`]: elements whose
//!   encoding is empty (a zero-sized type, a struct whose fields are all skipped) take
//!   no bytes, so without this a ten-byte payload claiming 2^63 of them would keep the
//!   decoder busy for centuries. A container's claimed length is charged when it is
//!   entered, or element by element when the format cannot vouch for it. Valid data
//!   always fits: every element with a non-empty encoding starts at a byte of its own.
//!   (Struct and tuple fields are not counted: their number is fixed by the type, and
//!   nesting by the depth limit.)
//!
//! The wrappers also keep error messages. postcard drops the message of a custom error
//! (a user's `Deserialize` saying what is wrong, or this guard's own complaints) and
//! reports only "Serde Deserialization Error"; so the code the user's `Deserialize`
//! implementation talks to — the wrapped deserializer, access objects and seeds — uses
//! its own error type, [`Captured`]. Creating one puts its message in a thread-local
//! slot (the first message of a decode wins: it is the innermost cause), and the
//! decoder reports that message. `Captured` itself is zero-sized, so results through
//! the wrappers are no larger than the format's own and the happy path stays as cheap
//! as postcard's (measured: the wrappers inline away).
//!
//! Everything else passes through unchanged; the wrappers are generic and inline away.

use std::cell::{Cell, RefCell};
use std::fmt;

use serde::de::{
    self, DeserializeSeed, Deserializer, EnumAccess, MapAccess, SeqAccess, VariantAccess, Visitor,
};

/// Elements beyond one per payload byte that a decode may produce (zero-sized ones).
pub(crate) const ZST_ALLOWANCE: usize = 1 << 20;

std::thread_local! {
    /// The first error message of the decode running on this thread.
    static MESSAGE: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Keeps `message()` as this thread's decode error message, unless one is kept already.
#[cold]
fn stash(message: impl FnOnce() -> String) {
    let _ = MESSAGE.try_with(|m| {
        let mut m = m.borrow_mut();
        if m.is_none() {
            *m = Some(message());
        }
    });
}

/// Forgets a message left by an earlier decode (one whose error was recovered from).
#[inline]
pub(crate) fn clear_message() {
    let _ = MESSAGE.try_with(|m| {
        if m.borrow().is_some() {
            *m.borrow_mut() = None;
        }
    });
}

/// Takes this thread's decode error message.
#[cold]
pub(crate) fn take_message() -> Option<String> {
    MESSAGE.try_with(|m| m.borrow_mut().take()).ok().flatten()
}

/// The bounds and the current depth of one decode.
pub(crate) struct Guard {
    depth: Cell<u32>,
    max_depth: u32,
    /// Largest length hint passed on: the payload's size in bytes.
    max_len: usize,
    /// Elements and map entries this decode may still produce.
    elements: Cell<usize>,
}

impl Guard {
    pub(crate) fn new(max_depth: u32, max_len: usize) -> Guard {
        Guard {
            depth: Cell::new(0),
            max_depth,
            max_len,
            elements: Cell::new(max_len.saturating_add(ZST_ALLOWANCE)),
        }
    }

    /// Enters one nesting level; the returned token leaves it when dropped.
    #[inline]
    fn enter(&self) -> Result<Level<'_>, Captured> {
        let d = self.depth.get() + 1;
        if d > self.max_depth {
            return Err(self.too_deep());
        }
        self.depth.set(d);
        Ok(Level(self))
    }

    #[cold]
    fn too_deep(&self) -> Captured {
        stash(|| format!("values nested deeper than {} levels", self.max_depth));
        Captured
    }

    /// Counts `n` elements or map entries against the budget.
    #[inline]
    fn charge(&self, n: usize) -> Result<(), Captured> {
        match self.elements.get().checked_sub(n) {
            Some(left) => {
                self.elements.set(left);
                Ok(())
            }
            None => Err(self.too_many()),
        }
    }

    /// Charges a length-prefixed container as it is entered: its whole claimed length
    /// at once if the format knows it (then no per-element count is needed), else
    /// nothing now and each element as it comes (returns true).
    #[inline]
    fn enter_container(&self, hint: Option<usize>) -> Result<bool, Captured> {
        match hint {
            Some(n) => self.charge(n).map(|()| false),
            None => Ok(true),
        }
    }

    #[cold]
    fn too_many(&self) -> Captured {
        stash(|| {
            format!(
                "more elements than a {}-byte payload can hold (plus {ZST_ALLOWANCE} zero-sized ones)",
                self.max_len
            )
        });
        Captured
    }

    #[inline]
    fn cap(&self, hint: Option<usize>) -> Option<usize> {
        hint.map(|n| n.min(self.max_len))
    }

    /// An error leaving for the format (its message is in the slot already).
    #[cold]
    fn outbound<E: de::Error>(&self, _: Captured) -> E {
        E::custom("invalid payload")
    }

    /// An error coming from the format: its own message, unless a message is kept
    /// already (the format's error then only says that a custom error happened).
    #[cold]
    fn inbound<E: fmt::Display>(&self, e: E) -> Captured {
        stash(|| e.to_string());
        Captured
    }
}

/// A decode error; its message waits in the thread's slot (see the module docs).
#[derive(Debug)]
pub(crate) struct Captured;

impl fmt::Display for Captured {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("invalid payload")
    }
}

impl std::error::Error for Captured {}

impl de::Error for Captured {
    #[cold]
    fn custom<T: fmt::Display>(msg: T) -> Self {
        stash(|| msg.to_string());
        Captured
    }
}

/// One entered level (see [`Guard::enter`]).
struct Level<'g>(&'g Guard);

impl Drop for Level<'_> {
    #[inline]
    fn drop(&mut self) {
        self.0.depth.set(self.0.depth.get() - 1);
    }
}

/// A deserializer whose visitors are guarded.
pub(crate) struct De<'g, D> {
    pub(crate) inner: D,
    pub(crate) guard: &'g Guard,
}

/// A visitor whose nested deserializers and access objects are guarded.
struct Vis<'g, V> {
    inner: V,
    guard: &'g Guard,
    /// Whether the sequence or map it may visit has a length read from the input
    /// (counted against the element budget), not one fixed by the type (a struct, a
    /// tuple: bounded by the type and the depth limit).
    counted: bool,
}

/// A seed that deserializes from a guarded deserializer.
struct Seed<'g, S> {
    inner: S,
    guard: &'g Guard,
}

/// A guarded sequence, map, enum or variant access.
struct Access<'g, A> {
    inner: A,
    guard: &'g Guard,
    /// Whether each element counts against the budget as it comes (a sequence whose
    /// length was not charged on entry; see [`Guard::enter_container`]).
    counted: bool,
}

macro_rules! forward_deserialize {
    ($($method:ident($($arg:ident: $ty:ty),*) $counted:literal;)*) => {
        $(
            #[inline]
            fn $method<V: Visitor<'de>>(self, $($arg: $ty,)* visitor: V) -> Result<V::Value, Captured> {
                let guard = self.guard;
                self.inner
                    .$method($($arg,)* Vis { inner: visitor, guard, counted: $counted })
                    .map_err(|e| guard.inbound(e))
            }
        )*
    };
}

impl<'de, D: Deserializer<'de>> Deserializer<'de> for De<'_, D> {
    type Error = Captured;

    forward_deserialize! {
        deserialize_any() true;
        deserialize_bool() false;
        deserialize_i8() false;
        deserialize_i16() false;
        deserialize_i32() false;
        deserialize_i64() false;
        deserialize_i128() false;
        deserialize_u8() false;
        deserialize_u16() false;
        deserialize_u32() false;
        deserialize_u64() false;
        deserialize_u128() false;
        deserialize_f32() false;
        deserialize_f64() false;
        deserialize_char() false;
        deserialize_str() false;
        deserialize_string() false;
        deserialize_bytes() false;
        deserialize_byte_buf() false;
        deserialize_option() false;
        deserialize_unit() false;
        deserialize_unit_struct(name: &'static str) false;
        deserialize_newtype_struct(name: &'static str) false;
        deserialize_seq() true;
        deserialize_tuple(len: usize) false;
        deserialize_tuple_struct(name: &'static str, len: usize) false;
        deserialize_map() true;
        deserialize_struct(name: &'static str, fields: &'static [&'static str]) false;
        deserialize_enum(name: &'static str, variants: &'static [&'static str]) false;
        deserialize_identifier() false;
        deserialize_ignored_any() true;
    }

    #[inline]
    fn is_human_readable(&self) -> bool {
        self.inner.is_human_readable()
    }
}

macro_rules! forward_visit {
    ($($method:ident($ty:ty);)*) => {
        $(
            #[inline]
            fn $method<E: de::Error>(self, v: $ty) -> Result<V::Value, E> {
                let guard = self.guard;
                self.inner.$method::<Captured>(v).map_err(|e| guard.outbound(e))
            }
        )*
    };
}

impl<'de, V: Visitor<'de>> Visitor<'de> for Vis<'_, V> {
    type Value = V::Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.inner.expecting(f)
    }

    forward_visit! {
        visit_bool(bool);
        visit_i8(i8);
        visit_i16(i16);
        visit_i32(i32);
        visit_i64(i64);
        visit_i128(i128);
        visit_u8(u8);
        visit_u16(u16);
        visit_u32(u32);
        visit_u64(u64);
        visit_u128(u128);
        visit_f32(f32);
        visit_f64(f64);
        visit_char(char);
        visit_str(&str);
        visit_borrowed_str(&'de str);
        visit_string(String);
        visit_bytes(&[u8]);
        visit_borrowed_bytes(&'de [u8]);
        visit_byte_buf(Vec<u8>);
    }

    #[inline]
    fn visit_none<E: de::Error>(self) -> Result<V::Value, E> {
        let guard = self.guard;
        self.inner
            .visit_none::<Captured>()
            .map_err(|e| guard.outbound(e))
    }

    #[inline]
    fn visit_unit<E: de::Error>(self) -> Result<V::Value, E> {
        let guard = self.guard;
        self.inner
            .visit_unit::<Captured>()
            .map_err(|e| guard.outbound(e))
    }

    #[inline]
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<V::Value, D::Error> {
        let guard = self.guard;
        let _level = guard.enter().map_err(|e| guard.outbound::<D::Error>(e))?;
        self.inner
            .visit_some(De { inner: d, guard })
            .map_err(|e| guard.outbound(e))
    }

    #[inline]
    fn visit_newtype_struct<D: Deserializer<'de>>(self, d: D) -> Result<V::Value, D::Error> {
        let guard = self.guard;
        let _level = guard.enter().map_err(|e| guard.outbound::<D::Error>(e))?;
        self.inner
            .visit_newtype_struct(De { inner: d, guard })
            .map_err(|e| guard.outbound(e))
    }

    #[inline]
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<V::Value, A::Error> {
        let guard = self.guard;
        let _level = guard.enter().map_err(|e| guard.outbound::<A::Error>(e))?;
        let counted = self.counted
            && guard
                .enter_container(seq.size_hint())
                .map_err(|e| guard.outbound::<A::Error>(e))?;
        self.inner
            .visit_seq(Access {
                inner: seq,
                guard,
                counted,
            })
            .map_err(|e| guard.outbound(e))
    }

    #[inline]
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<V::Value, A::Error> {
        let guard = self.guard;
        let _level = guard.enter().map_err(|e| guard.outbound::<A::Error>(e))?;
        let counted = self.counted
            && guard
                .enter_container(map.size_hint())
                .map_err(|e| guard.outbound::<A::Error>(e))?;
        self.inner
            .visit_map(Access {
                inner: map,
                guard,
                counted,
            })
            .map_err(|e| guard.outbound(e))
    }

    #[inline]
    fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<V::Value, A::Error> {
        let guard = self.guard;
        let _level = guard.enter().map_err(|e| guard.outbound::<A::Error>(e))?;
        self.inner
            .visit_enum(Access {
                inner: data,
                guard,
                counted: false,
            })
            .map_err(|e| guard.outbound(e))
    }
}

impl<'de, S: DeserializeSeed<'de>> DeserializeSeed<'de> for Seed<'_, S> {
    type Value = S::Value;

    #[inline]
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<S::Value, D::Error> {
        let guard = self.guard;
        self.inner
            .deserialize(De { inner: d, guard })
            .map_err(|e| guard.outbound(e))
    }
}

impl<'de, A: SeqAccess<'de>> SeqAccess<'de> for Access<'_, A> {
    type Error = Captured;

    #[inline]
    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, Captured> {
        let guard = self.guard;
        if self.counted {
            guard.charge(1)?;
        }
        self.inner
            .next_element_seed(Seed { inner: seed, guard })
            .map_err(|e| guard.inbound(e))
    }

    #[inline]
    fn size_hint(&self) -> Option<usize> {
        self.guard.cap(self.inner.size_hint())
    }
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for Access<'_, A> {
    type Error = Captured;

    #[inline]
    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Captured> {
        let guard = self.guard;
        if self.counted {
            guard.charge(1)?;
        }
        self.inner
            .next_key_seed(Seed { inner: seed, guard })
            .map_err(|e| guard.inbound(e))
    }

    #[inline]
    fn next_value_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<T::Value, Captured> {
        let guard = self.guard;
        self.inner
            .next_value_seed(Seed { inner: seed, guard })
            .map_err(|e| guard.inbound(e))
    }

    #[inline]
    fn size_hint(&self) -> Option<usize> {
        self.guard.cap(self.inner.size_hint())
    }
}

impl<'g, 'de, A: EnumAccess<'de>> EnumAccess<'de> for Access<'g, A> {
    type Error = Captured;
    type Variant = Access<'g, A::Variant>;

    #[inline]
    fn variant_seed<T: DeserializeSeed<'de>>(
        self,
        seed: T,
    ) -> Result<(T::Value, Self::Variant), Captured> {
        let guard = self.guard;
        let (value, variant) = self
            .inner
            .variant_seed(Seed { inner: seed, guard })
            .map_err(|e| guard.inbound(e))?;
        Ok((
            value,
            Access {
                inner: variant,
                guard,
                counted: false,
            },
        ))
    }
}

impl<'de, A: VariantAccess<'de>> VariantAccess<'de> for Access<'_, A> {
    type Error = Captured;

    #[inline]
    fn unit_variant(self) -> Result<(), Captured> {
        let guard = self.guard;
        self.inner.unit_variant().map_err(|e| guard.inbound(e))
    }

    #[inline]
    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<T::Value, Captured> {
        let guard = self.guard;
        self.inner
            .newtype_variant_seed(Seed { inner: seed, guard })
            .map_err(|e| guard.inbound(e))
    }

    #[inline]
    fn tuple_variant<V: Visitor<'de>>(self, len: usize, visitor: V) -> Result<V::Value, Captured> {
        let guard = self.guard;
        self.inner
            .tuple_variant(
                len,
                Vis {
                    inner: visitor,
                    guard,
                    counted: false,
                },
            )
            .map_err(|e| guard.inbound(e))
    }

    #[inline]
    fn struct_variant<V: Visitor<'de>>(
        self,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Captured> {
        let guard = self.guard;
        self.inner
            .struct_variant(
                fields,
                Vis {
                    inner: visitor,
                    guard,
                    counted: false,
                },
            )
            .map_err(|e| guard.inbound(e))
    }
}
