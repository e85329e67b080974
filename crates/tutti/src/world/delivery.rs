//! [`Delivery`]: one received message, counted as handled when it is dropped.

use std::any::{Any, TypeId};
use std::fmt;
use std::ops::Range;
use std::sync::Arc;

use serde::de::DeserializeOwned;

use super::pool::{Pool, POOL_MIN};
use super::typed::{self, TakeError};
use super::{cast, LocationId};
use crate::loom::{AtomicU64, Ordering};

/// What a delivery holds.
pub(crate) enum Content {
    /// A typed value from a location of this rank, with its type's name.
    Value(Box<dyn Any + Send>, &'static str),
    /// Bytes owned by this delivery.
    Bytes(Vec<u8>),
    /// Bytes inside a frame from another rank, shared with its other messages.
    Shared(Arc<[u8]>, Range<usize>),
    /// The value was taken out.
    Taken,
}

/// A message received by a location.
///
/// The message counts as **handled** when the `Delivery` is dropped: quiescence
/// detection ([`Location::recv_until_quiet`](super::Location::recv_until_quiet))
/// relies on every message sent while handling this one having been sent before
/// then. Keep the delivery alive for as long as you handle it (the natural scope of
/// a `while let Some(d) = …` loop body does that).
///
/// ```
/// use tutti::world::World;
/// let world = World::builder().locations(2).workers(1).build().unwrap();
/// let got = world.run(|loc| async move {
///     let next = tutti::world::LocationId::new(((loc.id().index() + 1) % 2) as u32);
///     loc.send(next, format!("hi from {}", loc.id())).unwrap();
///     let mut d = loc.recv().await;
///     assert_eq!(d.from(), next);
///     d.take::<String>().unwrap()
/// });
/// assert_eq!(got, ["hi from location 1", "hi from location 0"]);
/// ```
pub struct Delivery<'a> {
    from: LocationId,
    /// The sender's tag (`tag.rs`), taken off the content.
    tag: Option<u64>,
    content: Content,
    /// The count this delivery adds to when dropped; `None` for a message
    /// counted when a service's receive passed over it (`location/recv.rs`).
    handled: Option<&'a AtomicU64>,
    /// Where a large body's buffer goes when the delivery is dropped.
    pool: &'a Pool,
}

impl<'a> Delivery<'a> {
    /// A delivery of `content`, whose tag (`tag.rs`) is already taken off.
    pub(crate) fn new(
        from: LocationId,
        tag: Option<u64>,
        content: Content,
        handled: Option<&'a AtomicU64>,
        pool: &'a Pool,
    ) -> Self {
        Delivery {
            from,
            tag,
            content,
            handled,
            pool,
        }
    }

    /// The sending location.
    pub fn from(&self) -> LocationId {
        self.from
    }

    /// The tag the message was sent with
    /// ([`send_tagged`](super::Location::send_tagged)), `None` if untagged.
    ///
    /// ```
    /// use tutti::world::World;
    /// let world = World::builder().locations(1).workers(1).build().unwrap();
    /// let loc = world.location(0).unwrap();
    /// loc.send_tagged(loc.id(), 9, 1.5f64).unwrap();
    /// let mut d = loc.recv_blocking();
    /// assert_eq!(d.tag(), Some(9));
    /// assert_eq!(d.typed::<f64>().unwrap(), 1.5);
    /// ```
    pub fn tag(&self) -> Option<u64> {
        self.tag
    }

    /// The message's bytes, if it was sent as bytes (always the case for a
    /// message from another rank).
    pub fn bytes(&self) -> Option<&[u8]> {
        match &self.content {
            Content::Bytes(b) => Some(b),
            Content::Shared(frame, r) => frame.get(r.clone()),
            _ => None,
        }
    }

    /// The message as a `T`, if it is a typed value of that type.
    pub fn value<T: Any>(&self) -> Option<&T> {
        match &self.content {
            Content::Value(v, _) => v.downcast_ref(),
            _ => None,
        }
    }

    /// Moves the typed value out, if it is a `T` (a message sent as bytes can be
    /// taken as a `Vec<u8>`); the delivery stays alive (and unhandled) until
    /// dropped.
    pub fn take<T: Any>(&mut self) -> Option<T> {
        if TypeId::of::<T>() == TypeId::of::<Vec<u8>>() && self.bytes().is_some() {
            return self.take_bytes().and_then(|b| cast::<Vec<u8>, T>(b).ok());
        }
        match std::mem::replace(&mut self.content, Content::Taken) {
            Content::Value(v, name) => match v.downcast::<T>() {
                Ok(t) => Some(*t),
                Err(v) => {
                    self.content = Content::Value(v, name);
                    None
                }
            },
            other => {
                self.content = other;
                None
            }
        }
    }

    /// Moves the message out as a `T`, wherever it came from: a value sent
    /// with [`send`](super::Location::send) by a location of this rank moves
    /// as it is; one from another rank is decoded from the codec's bytes (see
    /// `typed.rs`); a message sent as bytes is taken as a `Vec<u8>`. If the
    /// message is of another type the error names both types, and the message
    /// stays in the delivery (take it as the right type, or drop it).
    ///
    /// ```
    /// use tutti::world::{LocationId, World};
    /// let world = World::builder().locations(2).workers(1).build().unwrap();
    /// let got = world.run(|loc| async move {
    ///     let next = LocationId::new(((loc.id().index() + 1) % 2) as u32);
    ///     loc.send(next, (loc.id().index() as u32, vec![1.5f64])).unwrap();
    ///     loc.recv().await.typed::<(u32, Vec<f64>)>().unwrap()
    /// });
    /// assert_eq!(got, [(1, vec![1.5]), (0, vec![1.5])]);
    /// ```
    pub fn typed<T: DeserializeOwned + Any>(&mut self) -> Result<T, TakeError> {
        let from = self.from;
        let expected = std::any::type_name::<T>();
        match &self.content {
            Content::Value(_, name) => {
                let found = *name;
                self.take::<T>().ok_or_else(|| TakeError::Mismatch {
                    from,
                    expected,
                    found: found.to_string(),
                })
            }
            Content::Taken => Err(TakeError::Taken { from }),
            Content::Bytes(_) | Content::Shared(..) => {
                let plain = typed::split(self.bytes().unwrap_or_default()).is_none();
                if plain && TypeId::of::<T>() == TypeId::of::<Vec<u8>>() {
                    // Plain bytes: a `Vec<u8>` is what was sent.
                    if let Some(t) = self.take::<T>() {
                        return Ok(t);
                    }
                }
                let bytes = self.bytes().unwrap_or_default();
                let value = typed::decode::<T>(from, bytes)?;
                if let Content::Bytes(b) = std::mem::replace(&mut self.content, Content::Taken) {
                    if b.capacity() >= POOL_MIN {
                        self.pool.put(b);
                    }
                }
                Ok(value)
            }
        }
    }

    /// Moves the bytes out (copying them if they share a frame with other
    /// messages), if the message was sent as bytes.
    pub fn take_bytes(&mut self) -> Option<Vec<u8>> {
        match std::mem::replace(&mut self.content, Content::Taken) {
            Content::Bytes(b) => Some(b),
            Content::Shared(frame, r) => frame.get(r).map(<[u8]>::to_vec),
            other => {
                self.content = other;
                None
            }
        }
    }
}

impl Drop for Delivery<'_> {
    fn drop(&mut self) {
        if let Content::Bytes(b) = &mut self.content {
            if b.capacity() >= POOL_MIN {
                self.pool.put(std::mem::take(b));
            }
        }
        // Release: whoever reads this count with Acquire (the location's
        // quiescence contribution) also sees the sends made while handling.
        if let Some(handled) = self.handled {
            handled.fetch_add(1, Ordering::Release);
        }
    }
}

impl fmt::Debug for Delivery<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match &self.content {
            Content::Value(_, name) => format!("a {name}"),
            Content::Bytes(b) => format!("{} bytes", b.len()),
            Content::Shared(_, r) => format!("{} bytes", r.len()),
            Content::Taken => "taken".to_string(),
        };
        f.debug_struct("Delivery")
            .field("from", &self.from)
            .field("content", &what)
            .finish()
    }
}
