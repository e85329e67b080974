//! Task names: a name given at spawn is kept as a `&'static str` in the task's
//! allocation (`raw.rs`'s `NameSlot`), because trace events record names as
//! `'static` strings without copying them (`diag/trace/event.rs`).
//!
//! A name given as a `String` is interned: the first task with that name leaks
//! one copy, every later one shares it. Distinct names therefore cost memory for
//! the life of the process; [`spawn_named`](super::spawn_named) says so.

use std::borrow::Cow;
use std::collections::HashSet;

use crate::loom::{lock, unmodelled::Mutex};

static NAMES: Mutex<Option<HashSet<&'static str>>> = Mutex::new(None);

/// `name` as a `'static` string: as it is if it is one, else its interned copy.
pub(super) fn intern(name: Cow<'static, str>) -> &'static str {
    match name {
        Cow::Borrowed(s) => s,
        Cow::Owned(s) => intern_cold(s),
    }
}

#[cold]
fn intern_cold(s: String) -> &'static str {
    let mut names = lock(&NAMES);
    let names = names.get_or_insert_with(HashSet::new);
    if let Some(&known) = names.get(s.as_str()) {
        return known;
    }
    let leaked: &'static str = Box::leak(s.into_boxed_str());
    names.insert(leaked);
    leaked
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::intern;

    #[test]
    fn a_name_given_twice_is_stored_once() {
        let a = intern(format!("conn-{}", 7).into());
        let b = intern(String::from("conn-7").into());
        assert_eq!(a, "conn-7");
        assert!(std::ptr::eq(a, b));
        let lit = "acceptor";
        assert!(std::ptr::eq(intern(lit.into()), lit));
    }
}
