//! [`Tagged`]: a boxed value of an erased type with its type's id kept beside
//! it, so that finding it again as its type compares a stored id instead of
//! asking the value through its vtable.
//!
//! `Box<dyn Any>::downcast_mut` calls the value's `type_id` through the
//! vtable on every downcast. Where a value is found again on every message —
//! an RMI location's run of statements being built, extended by each
//! `async_rmi` — that indirect call (and reading its 16-byte result back) is
//! most of the cost of the step. A `Tagged` value pays it never: its id is
//! taken once, from the static type, when it is made.

use std::any::{Any, TypeId};

/// A boxed value of an erased type, with its type's id (see the module
/// documentation).
pub(crate) struct Tagged {
    /// Invariant: the `TypeId` of the value in `value`.
    id: TypeId,
    value: Box<dyn Any + Send>,
}

impl Tagged {
    /// `value`, boxed, with its type's id.
    pub(crate) fn new<T: Any + Send>(value: T) -> Tagged {
        Tagged {
            id: TypeId::of::<T>(),
            value: Box::new(value),
        }
    }

    /// The value, if it is a `T`.
    #[inline]
    pub(crate) fn downcast_mut<T: Any>(&mut self) -> Option<&mut T> {
        if self.id != TypeId::of::<T>() {
            return None;
        }
        let value: *mut dyn Any = &mut *self.value;
        // SAFETY: `id` is the `TypeId` of the boxed value (the invariant: set
        // from its static type by `new`, the only constructor, and never
        // changed, nor the value replaced), and it equals `T`'s: the value is
        // a `T`, exclusively borrowed through `self` for the returned lifetime.
        Some(unsafe { &mut *value.cast::<T>() })
    }

    /// The box, to take the value out by its type.
    pub(crate) fn into_box(self) -> Box<dyn Any + Send> {
        self.value
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn finds_its_value_only_as_its_own_type() {
        let mut t = Tagged::new(vec![1u32, 2]);
        t.downcast_mut::<Vec<u32>>().unwrap().push(3);
        assert!(t.downcast_mut::<Vec<u64>>().is_none());
        assert!(t.downcast_mut::<u32>().is_none());
        let back = t.into_box().downcast::<Vec<u32>>().unwrap();
        assert_eq!(*back, [1, 2, 3]);
    }
}
