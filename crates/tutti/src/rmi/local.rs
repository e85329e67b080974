//! [`Local`]: exclusive access to this location's representative.

use std::fmt;
use std::ops::{Deref, DerefMut};

use super::Rmi;

/// Exclusive access to this location's representative of a registered object,
/// from [`Rmi::local`]. It mutably borrows the location, so nothing that
/// could execute an incoming request runs while it lives; dropping it makes the
/// representative available to methods again.
pub struct Local<'a, T: Send + 'static> {
    loc: &'a mut Rmi,
    id: u32,
    obj: Option<Box<T>>,
}

impl<'a, T: Send + 'static> Local<'a, T> {
    pub(crate) fn new(loc: &'a mut Rmi, id: u32, obj: Box<T>) -> Self {
        Local {
            loc,
            id,
            obj: Some(obj),
        }
    }
}

impl<T: Send + 'static> Deref for Local<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        self.obj.as_deref().expect("present until dropped")
    }
}

impl<T: Send + 'static> DerefMut for Local<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        self.obj.as_deref_mut().expect("present until dropped")
    }
}

impl<T: Send + 'static> Drop for Local<'_, T> {
    fn drop(&mut self) {
        if let Some(obj) = self.obj.take() {
            self.loc.put_back(self.id, obj);
        }
    }
}

impl<T: fmt::Debug + Send + 'static> fmt::Debug for Local<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        (**self).fmt(f)
    }
}
