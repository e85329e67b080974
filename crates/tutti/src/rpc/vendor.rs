//! Vendors: where a published object's calls run. A published object is
//! served by the core's serving side
//! ([`ServedObject`](crate::call::serve::ServedObject): a frame from a
//! connection is decoded by the object's [`Dispatch`](crate::msg::Dispatch)
//! table), and each call — decoded, or a typed envelope from a local proxy —
//! is delivered ([`Deliver`]) to the object's vendor:
//!
//! * an **actor** (`Rpc::publish_actor`) is its own vendor: calls queue in its
//!   mailbox and its task handles them one at a time, in arrival order, in
//!   order with its local messages;
//! * a plain object (`Rpc::publish`) gets a [`Vendor`]: a
//!   [`SequentialGroup`] of its own, or one shared with other objects so that
//!   the calls of all of them are serialized (CSP-style: one at a time, in
//!   submission order).

use std::sync::Arc;

use crate::call::serve::Deliver;
use crate::call::Refusal;
use crate::loom::{lock, Mutex};
use crate::msg::{Envelope, Object};
use crate::runtime::SequentialGroup;

/// Where a published plain object's calls run (see [`Rpc::publish`](super::Rpc::publish)).
///
/// ```
/// use std::sync::Arc;
/// use tutti::rpc::Vendor;
///
/// // Two objects whose calls are serialized together:
/// let group = Arc::new(tutti::SequentialGroup::new());
/// let (a, b) = (Vendor::Group(Arc::clone(&group)), Vendor::Group(group));
/// # drop((a, b));
/// let own = Vendor::Sequential; // a group of the object's own
/// # drop(own);
/// ```
#[derive(Clone, Debug, Default)]
pub enum Vendor {
    /// A sequential group of the object's own: its calls run one at a time, in
    /// the order they arrive, each as a task of the runtime.
    #[default]
    Sequential,
    /// A sequential group shared with other objects: the calls of all of them
    /// run one at a time, in the order they arrive.
    Group(Arc<SequentialGroup>),
}

/// A plain object in a sequential group, where its calls are delivered. The
/// object is taken out of its slot for each call and put back after it (also
/// if the handler panics); the group runs one call at a time, so the slot is
/// never empty when a call starts.
pub(crate) struct Grouped<O: Object> {
    slot: Mutex<Option<(O, O::Context)>>,
    group: Arc<SequentialGroup>,
}

impl<O: Object> Grouped<O> {
    pub(crate) fn new(obj: O, ctx: O::Context, vendor: Vendor) -> Arc<Self> {
        let group = match vendor {
            Vendor::Sequential => Arc::new(SequentialGroup::new()),
            Vendor::Group(g) => g,
        };
        Arc::new(Grouped {
            slot: Mutex::new(Some((obj, ctx))),
            group,
        })
    }
}

/// Puts the object back into its slot when the call ends, however it ends.
struct PutBack<'a, O: Object> {
    slot: &'a Mutex<Option<(O, O::Context)>>,
    obj: Option<(O, O::Context)>,
}

impl<O: Object> Drop for PutBack<'_, O> {
    fn drop(&mut self) {
        if let Some(o) = self.obj.take() {
            *lock(self.slot) = Some(o);
        }
    }
}

impl<O: Object> Deliver<O> for Arc<Grouped<O>> {
    fn deliver(&self, e: Envelope<O>) -> Result<(), Refusal> {
        let inner = Arc::clone(self);
        drop(self.group.spawn(async move {
            let taken = lock(&inner.slot).take();
            let mut guard = PutBack {
                slot: &inner.slot,
                obj: taken,
            };
            match &mut guard.obj {
                Some((obj, ctx)) => e.handle(obj, ctx).await,
                // Unreachable while the group serializes the calls; dropping the
                // envelope answers its asker with `NoReply`.
                None => drop(e),
            }
        }));
        Ok(())
    }

    /// The object goes on after a call whose handler panicked.
    fn dropped_means_stopped(&self) -> bool {
        false
    }
}
