//! [`Handle`]: the world-wide name of a registered object.

use std::fmt;
use std::hash::{Hash, Hasher};
use std::marker::PhantomData;

/// The name of an object registered on every location (ARMI's `rmi_handle`):
/// the same value on every location, each of which owns its own
/// representative. Handles are small, `Copy`, and may be sent in RMI arguments
/// (they serialize as their registration number).
///
/// ```
/// use tutti::rmi;
/// struct Counter(u64);
/// impl tutti::msg::Object for Counter { type Context = rmi::Rmi; }
/// let world = tutti::world::World::builder().locations(2).workers(1).build().unwrap();
/// let ids = rmi::run(&world, |loc| async move {
///     let h = loc.register(Counter(0)).await.unwrap();
///     h.id()
/// });
/// assert_eq!(ids[0], ids[1]);
/// ```
pub struct Handle<T> {
    id: u32,
    _type: PhantomData<fn() -> T>,
}

impl<T> Handle<T> {
    pub(crate) fn new(id: u32) -> Self {
        Handle {
            id,
            _type: PhantomData,
        }
    }

    /// The registration number (objects are numbered in registration order,
    /// the same on every location).
    pub fn id(&self) -> u32 {
        self.id
    }
}

impl<T> Clone for Handle<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for Handle<T> {}

impl<T> PartialEq for Handle<T> {
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id
    }
}

impl<T> Eq for Handle<T> {}

impl<T> Hash for Handle<T> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.id.hash(state)
    }
}

impl<T> fmt::Debug for Handle<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Handle<{}>(#{})", std::any::type_name::<T>(), self.id)
    }
}

/// A handle travels as its registration number.
impl<T> serde::Serialize for Handle<T> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u32(self.id)
    }
}

impl<'de, T> serde::Deserialize<'de> for Handle<T> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        u32::deserialize(d).map(Handle::new)
    }
}
