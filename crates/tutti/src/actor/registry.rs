//! The name registry (the C task framework's repository, Erlang's `register`/`whereis`).
//!
//! One process-wide map from [`Name`] to a typed address. [`lookup`] checks the type:
//! asking for the wrong actor type is a [`LookupError::WrongType`] naming both types,
//! never a panic. A registered name holds an address, so a registered actor does not
//! stop by the last-address rule; its names vanish when it stops for any reason.
//!
//! # Consistency with stopping
//!
//! Registering takes the map's lock, then the actor's aux lock, checks that the actor
//! has not finished and records the name on both sides. A stopping actor marks itself
//! finished and takes its name list under its aux lock, then removes those names from
//! the map (only if they still map to it). So a name is either refused (the actor had
//! finished) or recorded before the actor took its list — and then removed by it.
//!
//! # World-wide names
//!
//! This registry is the process's. Names for the whole world — registered on one
//! location, looked up from any rank — are kept by the actor nodes of the world
//! layer ([`remote::Node::register`](crate::remote::Node::register) and
//! [`lookup`](crate::remote::Node::lookup), with the same [`Name`] type), since the
//! actor layer knows nothing of ranks.

use std::any::Any;
use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, LazyLock};

use super::{Actor, ActorId, Addr, LookupError, RegisterError};
use crate::loom::{lock, unmodelled};

/// The name of a registered actor.
///
/// ```
/// use tutti::actor::Name;
/// let n = Name::new("weather/montreal");
/// assert_eq!(n.as_str(), "weather/montreal");
/// assert_eq!(Name::from("weather/montreal"), n);
/// ```
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Name(Arc<str>);

impl Name {
    /// A name from text.
    pub fn new(name: impl AsRef<str>) -> Name {
        Name(Arc::from(name.as_ref()))
    }

    /// The text of the name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl From<&str> for Name {
    fn from(s: &str) -> Name {
        Name::new(s)
    }
}

impl From<String> for Name {
    fn from(s: String) -> Name {
        Name(Arc::from(s))
    }
}

impl From<&Name> for Name {
    fn from(n: &Name) -> Name {
        n.clone()
    }
}

impl fmt::Debug for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl fmt::Display for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

struct Entry {
    id: ActorId,
    type_name: &'static str,
    /// An `Addr<A>`.
    addr: Box<dyn Any + Send + Sync>,
}

static NAMES: LazyLock<unmodelled::Mutex<HashMap<Name, Entry>>> =
    LazyLock::new(|| unmodelled::Mutex::new(HashMap::new()));

/// Registers `addr` under `name`. Fails if the name is taken or the actor has stopped.
///
/// ```
/// use tutti::actor::{self, Actor, RegisterError};
/// struct Station;
/// impl Actor for Station {}
/// let s = actor::spawn(Station);
/// actor::register("doc-station", &s).unwrap();
/// assert!(matches!(actor::register("doc-station", &s), Err(RegisterError::Taken { .. })));
/// s.stop();
/// s.wait_blocking();
/// assert!(actor::lookup::<Station>("doc-station").is_err(), "names vanish with the actor");
/// ```
pub fn register<A: Actor>(name: impl Into<Name>, addr: &Addr<A>) -> Result<(), RegisterError> {
    let name = name.into();
    let mut map = lock(&*NAMES);
    if let Some(e) = map.get(&name) {
        return Err(RegisterError::Taken { name, by: e.id });
    }
    {
        let mut aux = lock(&addr.cell().aux().inner);
        if aux.finished.is_some() {
            return Err(RegisterError::Stopped { name });
        }
        aux.names.push(name.clone());
    }
    map.insert(
        name,
        Entry {
            id: addr.id(),
            type_name: std::any::type_name::<A>(),
            addr: Box::new(addr.clone()),
        },
    );
    Ok(())
}

/// The address registered under `name`, if it is an `A`.
///
/// ```
/// use tutti::actor::{self, Actor, LookupError};
/// struct Db;
/// impl Actor for Db {}
/// struct Cache;
/// impl Actor for Cache {}
/// let db = actor::spawn(Db);
/// actor::register("doc-lookup-db", &db).unwrap();
/// assert_eq!(actor::lookup::<Db>("doc-lookup-db").unwrap(), db);
/// assert!(matches!(actor::lookup::<Cache>("doc-lookup-db"), Err(LookupError::WrongType { .. })));
/// assert!(matches!(actor::lookup::<Db>("nobody"), Err(LookupError::NotFound { .. })));
/// ```
pub fn lookup<A: Actor>(name: impl Into<Name>) -> Result<Addr<A>, LookupError> {
    let name = name.into();
    let map = lock(&*NAMES);
    let Some(e) = map.get(&name) else {
        return Err(LookupError::NotFound { name });
    };
    match e.addr.downcast_ref::<Addr<A>>() {
        Some(a) => Ok(a.clone()),
        None => Err(LookupError::WrongType {
            expected: std::any::type_name::<A>(),
            found: e.type_name,
            name,
        }),
    }
}

/// The id of the actor registered under `name`, whatever its type (Erlang's `whereis`).
///
/// ```
/// # use tutti::actor::{self, Actor};
/// # struct A; impl Actor for A {}
/// let a = actor::spawn(A);
/// actor::register("doc-whereis", &a).unwrap();
/// assert_eq!(actor::whereis("doc-whereis"), Some(a.id()));
/// ```
pub fn whereis(name: impl Into<Name>) -> Option<ActorId> {
    lock(&*NAMES).get(&name.into()).map(|e| e.id)
}

/// Removes a registration; returns the id that held the name, if any.
///
/// ```
/// # use tutti::actor::{self, Actor};
/// # struct A; impl Actor for A {}
/// let a = actor::spawn(A);
/// actor::register("doc-unregister", &a).unwrap();
/// assert_eq!(actor::unregister("doc-unregister"), Some(a.id()));
/// assert_eq!(actor::unregister("doc-unregister"), None);
/// ```
pub fn unregister(name: impl Into<Name>) -> Option<ActorId> {
    let name = name.into();
    let entry = lock(&*NAMES).remove(&name)?;
    // The entry's address is dropped outside the lock (it may signal its actor).
    let id = entry.id;
    drop(entry);
    Some(id)
}

/// Every registered name, sorted.
///
/// ```
/// # use tutti::actor::{self, Actor};
/// # struct A; impl Actor for A {}
/// let a = actor::spawn(A);
/// actor::register("doc-registered", &a).unwrap();
/// assert!(actor::registered().iter().any(|n| n.as_str() == "doc-registered"));
/// ```
pub fn registered() -> Vec<Name> {
    let mut v: Vec<Name> = lock(&*NAMES).keys().cloned().collect();
    v.sort();
    v
}

/// Removes `name` if it still maps to `id` (a stopping actor's own names).
pub(crate) fn remove_if(name: &Name, id: ActorId) {
    let entry = {
        let mut map = lock(&*NAMES);
        match map.get(name) {
            Some(e) if e.id == id => map.remove(name),
            _ => None,
        }
    };
    drop(entry);
}
