//! Vendors: where a published object's calls run. A published object sits
//! behind a desk that takes each call — a typed envelope from a local proxy,
//! or a frame decoded by the object's [`Dispatch`] table from a connection —
//! and hands it to the object's vendor:
//!
//! * an **actor** (`Rpc::publish_actor`) is its own vendor: calls queue in its
//!   mailbox and its task handles them one at a time, in arrival order, in
//!   order with its local messages;
//! * a plain object (`Rpc::publish`) gets a [`Vendor`]: a
//!   [`SequentialGroup`] of its own, or one shared with other objects so that
//!   the calls of all of them are serialized (CSP-style: one at a time, in
//!   submission order).

use std::any::Any;
use std::sync::Arc;

use crate::actor::{Actor, Addr, AskError};
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

/// A published object with its type erased: takes frames from connections.
pub(crate) trait Desk: Send + Sync {
    /// Decodes `frame` (payload in `format`) and hands the call to the vendor;
    /// for a question, the future of its encoded reply.
    fn incoming(&self, frame: &Frame<'_>, format: Format) -> Result<Option<RemoteReply>, Refusal>;
    /// The object's type (for errors).
    fn type_name(&self) -> &'static str;
    /// `Arc<dyn Deliver<O>>` for the object's type `O`, for local proxies.
    fn local(&self) -> Box<dyn Any + Send>;
}

/// An actor published as is.
pub(crate) struct ActorDesk<A: Actor> {
    pub(crate) addr: Addr<A>,
    pub(crate) dispatch: Dispatch<A>,
}

impl<A: Actor> Deliver<A> for ActorDesk<A> {
    fn deliver(&self, e: Envelope<A>) -> Result<(), Refusal> {
        self.addr.enqueue(e).map_err(|(_, why)| match why {
            AskError::Full => Refusal::Full,
            _ => Refusal::NoTarget,
        })
    }
}

impl<A: Actor> Desk for ActorDesk<A> {
    fn incoming(&self, frame: &Frame<'_>, format: Format) -> Result<Option<RemoteReply>, Refusal> {
        let incoming = self
            .dispatch
            .incoming_in(frame, format)
            .map_err(|e| Refusal::Failed(e.to_string()))?;
        self.deliver(incoming.envelope)?;
        Ok(incoming.reply)
    }

    fn type_name(&self) -> &'static str {
        std::any::type_name::<A>()
    }

    fn local(&self) -> Box<dyn Any + Send> {
        let d: Arc<dyn Deliver<A>> = Arc::new(ActorDesk {
            addr: self.addr.clone(),
            dispatch: Dispatch::new(),
        });
        Box::new(d)
    }
}

/// A plain object in a sequential group. The object is taken out of its slot
/// for each call and put back after it (also if the handler panics); the group
/// runs one call at a time, so the slot is never empty when a call starts.
pub(crate) struct GroupDesk<O: Object> {
    inner: Arc<GroupInner<O>>,
    dispatch: Dispatch<O>,
}

struct GroupInner<O: Object> {
    slot: Mutex<Option<(O, O::Context)>>,
    group: Arc<SequentialGroup>,
}

impl<O: Object> GroupDesk<O> {
    pub(crate) fn new(obj: O, ctx: O::Context, vendor: Vendor, dispatch: Dispatch<O>) -> Self {
        let group = match vendor {
            Vendor::Sequential => Arc::new(SequentialGroup::new()),
            Vendor::Group(g) => g,
        };
        GroupDesk {
            inner: Arc::new(GroupInner {
                slot: Mutex::new(Some((obj, ctx))),
                group,
            }),
            dispatch,
        }
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

impl<O: Object> Desk for GroupDesk<O> {
    fn incoming(&self, frame: &Frame<'_>, format: Format) -> Result<Option<RemoteReply>, Refusal> {
        let incoming = self
            .dispatch
            .incoming_in(frame, format)
            .map_err(|e| Refusal::Failed(e.to_string()))?;
        self.inner.deliver(incoming.envelope)?;
        Ok(incoming.reply)
    }

    fn type_name(&self) -> &'static str {
        std::any::type_name::<O>()
    }

    fn local(&self) -> Box<dyn Any + Send> {
        let d: Arc<dyn Deliver<O>> = Arc::new(Arc::clone(&self.inner));
        Box::new(d)
    }
}
