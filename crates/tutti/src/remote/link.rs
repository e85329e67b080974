//! A node's [`Link`]: its location, until the node's receiving task ends (then
//! the location is released, so that the world can be run again, and nothing
//! more can be sent).

use std::sync::Arc;

use crate::call::{Link, LinkError};
use crate::loom::{lock, Mutex};
use crate::world::{Location, LocationId};

pub(crate) struct NodeLink {
    loc: Mutex<Option<Arc<Location>>>,
    id: LocationId,
    per_rank: usize,
}

impl NodeLink {
    pub(crate) fn new(loc: Arc<Location>) -> Self {
        NodeLink {
            id: loc.id(),
            per_rank: loc.world().locations_per_rank(),
            loc: Mutex::new(Some(loc)),
        }
    }

    /// Lets the location go: nothing more is sent.
    pub(crate) fn release(&self) {
        let held = lock(&self.loc).take();
        drop(held);
    }

    /// Sends what the location has buffered.
    pub(crate) fn flush_all(&self) {
        if let Some(loc) = &*lock(&self.loc) {
            Location::flush(loc);
        }
    }
}

impl Link for NodeLink {
    type Peer = LocationId;

    fn send_frame(&self, to: LocationId, frame: &[u8]) -> Result<(), LinkError> {
        match &*lock(&self.loc) {
            Some(loc) => Link::send_frame(&**loc, to, frame),
            None => Err(LinkError {
                why: format!("the actor node of {} has left the world", self.id),
                rank_died: None,
            }),
        }
    }

    fn flush(&self, _to: LocationId) {
        self.flush_all();
    }

    fn name(&self, peer: LocationId) -> String {
        format!("{peer} (rank {})", peer.rank(self.per_rank))
    }

    fn wire_id(&self, peer: LocationId) -> u32 {
        peer.raw()
    }

    fn local_wire_id(&self) -> u32 {
        self.id.raw()
    }
}
