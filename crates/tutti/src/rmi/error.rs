//! [`RmiError`]: what a collective RMI operation can report.

use std::fmt;

/// An error from a collective RMI operation; every location gets the same one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RmiError {
    /// The locations did not register the same types in the same order: the
    /// `index`-th registration was of `first` on some location and of `second`
    /// on another (type names, smallest and largest seen).
    RegistrationMismatch {
        /// Which registration (0 for a location's first).
        index: u64,
        /// One type registered there.
        first: String,
        /// Another type registered there.
        second: String,
    },
    /// The `index`-th registration, of `object`, accepts different message types
    /// from other locations on different locations (its
    /// [`Object::remote`](crate::msg::Object::remote) differs: ranks running
    /// different builds).
    MethodsMismatch {
        /// Which registration.
        index: u64,
        /// The object type.
        object: String,
    },
}

impl fmt::Display for RmiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RmiError::RegistrationMismatch {
                index,
                first,
                second,
            } => write!(
                f,
                "registration #{index} differs between locations: `{first}` on one, \
                 `{second}` on another (every location must register the same types \
                 in the same order)"
            ),
            RmiError::MethodsMismatch { index, object } => write!(
                f,
                "registration #{index} (`{object}`) accepts different message types on \
                 different locations (its Object::remote differs: do all ranks run the \
                 same build?)"
            ),
        }
    }
}

impl std::error::Error for RmiError {}
