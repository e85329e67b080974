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
//! * the elements and map entries of one decode, all containers together, number at
//!   most the payload's size plus [`ZST_ALLOWANCE`]: elements of a zero-sized type take
//!   no bytes, so without this a ten-byte payload claiming 2^63 of them would keep the
//!   decoder busy for centuries.
//!
//! The wrappers also keep error messages. postcard drops the message of a custom error
//! (a user's `Deserialize` saying what is wrong, or this guard's own complaints) and
//! reports only "Serde Deserialization Error"; so the code the user's `Deserialize`
//! implementation talks to — the wrapped deserializer, access objects and seeds — uses
//! its own error type, [`Captured`], which keeps the message, and wherever an error
//! crosses back into postcard the guard records the first message, which the decoder
//! then reports.
//!
//! Everything else passes through unchanged; the wrappers are generic and inline away.

use std::cell::{Cell, RefCell};
use std::fmt;

use serde::de::{
    self, DeserializeSeed, Deserializer, EnumAccess, MapAccess, SeqAccess, VariantAccess, Visitor,
};

/// Elements beyond one per payload byte that a decode may produce (zero-sized ones).
pub(crate) const ZST_ALLOWANCE: usize = 1 << 20;

/// The bounds, the current depth and the first error of one decode.
pub(crate) struct Guard {
    depth: Cell<u32>,
    max_depth: u32,
    /// Largest length hint passed on: the payload's size in bytes.
    max_len: usize,
    /// Elements and map entries this decode may still produce.
    elements: Cell<usize>,
    /// The first error message that crossed into the format (see the module docs).
    first_error: RefCell<Option<String>>,
}

impl Guard {
    pub(crate) fn new(max_depth: u32, max_len: usize) -> Guard {
        Guard {
            depth: Cell::new(0),
            max_depth,
            max_len,
            elements: Cell::new(max_len.saturating_add(ZST_ALLOWANCE)),
            first_error: RefCell::new(None),
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
        Captured(format!(
            "values nested deeper than {} levels",
            self.max_depth
        ))
    }

    /// Counts one element or map entry against the budget.
    #[inline]
    fn element(&self) -> Result<(), Captured> {
        match self.elements.get().checked_sub(1) {
            Some(left) => {
                self.elements.set(left);
                Ok(())
            }
            None => Err(self.too_many()),
        }
    }

    #[cold]
    fn too_many(&self) -> Captured {
        Captured(format!(
            "more elements than a {}-byte payload can hold (plus {ZST_ALLOWANCE} zero-sized ones)",
            self.max_len
        ))
    }

    #[inline]
    fn cap(&self, hint: Option<usize>) -> Option<usize> {
        hint.map(|n| n.min(self.max_len))
    }

    /// An error leaving for the format: its message is recorded (if it is the first).
    #[cold]
    fn outbound<E: de::Error>(&self, e: Captured) -> E {
        let mut first = self.first_error.borrow_mut();
        if first.is_none() {
            *first = Some(e.0.clone());
        }
        E::custom(e.0)
    }

    /// An error coming from the format: the recorded message if there is one (the
    /// format's own error then only says that a custom error happened).
    #[cold]
    fn inbound<E: fmt::Display>(&self, e: E) -> Captured {
        match &*self.first_error.borrow() {
            Some(m) => Captured(m.clone()),
            None => Captured(e.to_string()),
        }
    }
}

/// A decode error with its message (see the module docs).
#[derive(Debug)]
pub(crate) struct Captured(pub(crate) String);

impl fmt::Display for Captured {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Captured {}

impl de::Error for Captured {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        Captured(msg.to_string())
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
}

macro_rules! forward_deserialize {
    ($($method:ident($($arg:ident: $ty:ty),*);)*) => {
        $(
            #[inline]
            fn $method<V: Visitor<'de>>(self, $($arg: $ty,)* visitor: V) -> Result<V::Value, Captured> {
                let guard = self.guard;
                self.inner
                    .$method($($arg,)* Vis { inner: visitor, guard })
                    .map_err(|e| guard.inbound(e))
            }
        )*
    };
}

impl<'de, D: Deserializer<'de>> Deserializer<'de> for De<'_, D> {
    type Error = Captured;

    forward_deserialize! {
        deserialize_any();
        deserialize_bool();
        deserialize_i8();
        deserialize_i16();
        deserialize_i32();
        deserialize_i64();
        deserialize_i128();
        deserialize_u8();
        deserialize_u16();
        deserialize_u32();
        deserialize_u64();
        deserialize_u128();
        deserialize_f32();
        deserialize_f64();
        deserialize_char();
        deserialize_str();
        deserialize_string();
        deserialize_bytes();
        deserialize_byte_buf();
        deserialize_option();
        deserialize_unit();
        deserialize_unit_struct(name: &'static str);
        deserialize_newtype_struct(name: &'static str);
        deserialize_seq();
        deserialize_tuple(len: usize);
        deserialize_tuple_struct(name: &'static str, len: usize);
        deserialize_map();
        deserialize_struct(name: &'static str, fields: &'static [&'static str]);
        deserialize_enum(name: &'static str, variants: &'static [&'static str]);
        deserialize_identifier();
        deserialize_ignored_any();
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
        self.inner
            .visit_seq(Access { inner: seq, guard })
            .map_err(|e| guard.outbound(e))
    }

    #[inline]
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<V::Value, A::Error> {
        let guard = self.guard;
        let _level = guard.enter().map_err(|e| guard.outbound::<A::Error>(e))?;
        self.inner
            .visit_map(Access { inner: map, guard })
            .map_err(|e| guard.outbound(e))
    }

    #[inline]
    fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<V::Value, A::Error> {
        let guard = self.guard;
        let _level = guard.enter().map_err(|e| guard.outbound::<A::Error>(e))?;
        self.inner
            .visit_enum(Access { inner: data, guard })
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
        guard.element()?;
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
        guard.element()?;
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
                },
            )
            .map_err(|e| guard.inbound(e))
    }
}
