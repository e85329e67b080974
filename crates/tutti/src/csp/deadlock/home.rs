//! What the detector knows about a channel or barrier: the network it was created in,
//! whether anyone outside that network has acted on it, who last waited on each side,
//! and its name.

use std::borrow::Cow;
use std::sync::Arc;

use crate::loom::{AtomicBool, AtomicUsize, Ordering};

use super::member;
use super::network::Network;

/// What kind of object a [`Home`] belongs to (for reports).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Object {
    /// A channel of this capacity (0: rendezvous, `usize::MAX`: unbounded).
    Channel(usize),
    /// A barrier.
    Barrier,
    /// A timer channel (`after`, `tick`): a task of the timer feeds it, so a wait on it
    /// always ends.
    Timer,
}

/// Side of an object a process waits on, indexing [`HomeInner::last`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Side {
    /// Sending on a channel.
    Send = 0,
    /// Receiving from a channel (also as an `Alt` guard).
    Recv = 1,
}

/// The detector's record of one object. Absent (`Home(None)`, no allocation) for an
/// unnamed object created outside every process network: such an object is never
/// internal to a network, so there is nothing to track.
#[derive(Default)]
pub(crate) struct Home(Option<Box<HomeInner>>);

pub(crate) struct HomeInner {
    /// The network whose process created the object (`None`: created outside any).
    net: Option<Arc<Network>>,
    /// Someone outside `net` has acted on the object (sticky).
    outside: AtomicBool,
    /// Member ids (addresses) of the last process that used each [`Side`] (`0`: none).
    /// Only compared with the members a detector sees, never followed.
    last: [AtomicUsize; 2],
    pub(crate) name: Option<Cow<'static, str>>,
    pub(crate) object: Object,
}

impl Home {
    /// The record of an object being created now, by the calling context.
    pub(crate) fn new(object: Object, name: Option<Cow<'static, str>>) -> Home {
        let net = member::current_network();
        // A timer channel is never internal to a network (its feeder is outside): like
        // an unnamed object made outside every network, it needs no record.
        if object == Object::Timer || (net.is_none() && name.is_none()) {
            return Home(None);
        }
        Home(Some(Box::new(HomeInner {
            net,
            outside: AtomicBool::new(false),
            last: [AtomicUsize::new(0), AtomicUsize::new(0)],
            name,
            object,
        })))
    }

    /// The record, if any.
    #[inline]
    pub(crate) fn get(&self) -> Option<&HomeInner> {
        self.0.as_deref()
    }

    /// The calling context acts on the object (any operation, clone or drop of an end);
    /// `side`: the side it uses, if it is a send or a receive.
    #[inline]
    pub(crate) fn act(&self, side: Option<Side>) {
        if let Some(h) = &self.0 {
            h.act(side);
        }
    }

    /// A channel's record in `net`, made on no process (the loom models).
    #[cfg(all(test, loom))]
    pub(crate) fn for_model(net: Arc<Network>) -> Home {
        Home(Some(Box::new(HomeInner {
            net: Some(net),
            outside: AtomicBool::new(false),
            last: [AtomicUsize::new(0), AtomicUsize::new(0)],
            name: None,
            object: Object::Channel(0),
        })))
    }

    /// Acts on the object as a party outside its network does (the loom models:
    /// their threads share one task context, so `act` cannot tell them apart).
    #[cfg(all(test, loom))]
    pub(crate) fn act_from_outside(&self) {
        if let Some(h) = &self.0 {
            if let Some(net) = &h.net {
                h.go_outside(net);
            }
        }
    }

    /// The object's name, if it was given one.
    pub(crate) fn name(&self) -> Option<&str> {
        self.0.as_ref().and_then(|h| h.name.as_deref())
    }
}

impl HomeInner {
    #[inline]
    fn act(&self, side: Option<Side>) {
        let Some(net) = &self.net else { return };
        if self.outside.load(Ordering::Relaxed) {
            return;
        }
        match member::current_id_in(net) {
            Some(id) => {
                if let Some(side) = side {
                    self.set_last(side, id);
                }
            }
            None => self.go_outside(net),
        }
    }

    #[cold]
    fn go_outside(&self, net: &Network) {
        // The flag before the epoch: a member that reads the new epoch (Acquire) at the
        // start of a poll then also sees the flag (see `network.rs`, "outside actions").
        if !self.outside.swap(true, Ordering::SeqCst) {
            net.outside_acted();
        }
    }

    /// Whether the object belongs to `net` and nobody outside `net` has acted on it.
    #[inline]
    pub(crate) fn is_internal_to(&self, net: &Network) -> bool {
        self.net
            .as_ref()
            .is_some_and(|n| std::ptr::eq(Arc::as_ptr(n), net))
            && !self.outside.load(Ordering::Acquire)
    }

    /// Records that member `id` uses `side`.
    #[inline]
    pub(crate) fn set_last(&self, side: Side, id: usize) {
        let slot = &self.last[side as usize];
        if slot.load(Ordering::Relaxed) != id {
            slot.store(id, Ordering::Relaxed);
        }
    }

    /// The member that last waited on `side`, if any.
    pub(crate) fn last(&self, side: Side) -> Option<usize> {
        let id = self.last[side as usize].load(Ordering::Relaxed);
        (id != 0).then_some(id)
    }
}
