//! Vendors: where a published object's calls run. A published object is a
//! target of the core's serving side ([`Target`]) that takes each call — a
//! typed envelope from a local proxy ([`Deliver`]), or a frame decoded by the
//! object's [`Dispatch`] table from a connection — and hands it to the
//! object's vendor:
//!
//! * an **actor** (`Rpc::publish_actor`) is its own vendor: calls queue in its
//!   mailbox and its task handles them one at a time, in arrival order, in
//!   order with its local messages;
//! * a plain object (`Rpc::publish`) gets a [`Vendor`]: a
//!   [`SequentialGroup`] of its own, or one shared with other objects so that
//!   the calls of all of them are serialized (CSP-style: one at a time, in
//!   submission order).

use std::sync::Arc;

use crate::actor::Actor;
use crate::call::serve::{ActorTarget, Target};
use crate::call::Refusal;
use crate::loom::{lock, Mutex};
use crate::msg::codec::{Format, Frame};
use crate::msg::{Dispatch, Envelope, Object, RemoteReply};
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

/// Takes typed calls for an object of type `O` (a local proxy's path: no
/// serialization).
pub(crate) trait Deliver<O: Object>: Send + Sync {
    fn deliver(&self, e: Envelope<O>) -> Result<(), Refusal>;
}

impl<A: Actor> Deliver<A> for ActorTarget<A> {
    fn deliver(&self, e: Envelope<A>) -> Result<(), Refusal> {
        self.enqueue(e)
    }
}

/// A plain object in a sequential group. The object is taken out of its slot
/// for each call and put back after it (also if the handler panics); the group
/// runs one call at a time, so the slot is never empty when a call starts.
pub(crate) struct GroupedObject<O: Object> {
    inner: Arc<GroupInner<O>>,
    dispatch: Dispatch<O>,
}

struct GroupInner<O: Object> {
    slot: Mutex<Option<(O, O::Context)>>,
    group: Arc<SequentialGroup>,
}

impl<O: Object> GroupedObject<O> {
    pub(crate) fn new(obj: O, ctx: O::Context, vendor: Vendor, dispatch: Dispatch<O>) -> Self {
        let group = match vendor {
            Vendor::Sequential => Arc::new(SequentialGroup::new()),
            Vendor::Group(g) => g,
        };
        GroupedObject {
            inner: Arc::new(GroupInner {
                slot: Mutex::new(Some((obj, ctx))),
                group,
            }),
            dispatch,
        }
    }

    /// The typed path to the object, for local proxies.
    pub(crate) fn deliver(&self) -> Arc<dyn Deliver<O>> {
        Arc::new(Arc::clone(&self.inner))
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

impl<O: Object> Deliver<O> for Arc<GroupInner<O>> {
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
}

impl<O: Object> Target for GroupedObject<O> {
    fn take(&self, frame: &Frame<'_>, format: Format) -> Result<Option<RemoteReply>, Refusal> {
        let incoming = self
            .dispatch
            .incoming_in(frame, format)
            .map_err(|e| Refusal::Failed(e.to_string()))?;
        self.inner.deliver(incoming.envelope)?;
        Ok(incoming.reply)
    }

    /// The object goes on after a call whose handler panicked.
    fn dropped_means_stopped(&self) -> bool {
        false
    }

    fn type_name(&self) -> &'static str {
        std::any::type_name::<O>()
    }
}
