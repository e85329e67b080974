//! The world's [`Link`]: conversations between locations. Frames are bytes
//! sent through the sending location (`send_slice`: aggregated per
//! destination like any message, counted by quiescence detection), and arrive
//! as deliveries at the destination, whose owner hands them to its
//! conversation.

use super::{Link, LinkError};
use crate::world::{self, LocationId};

impl Link for world::Location {
    type Peer = LocationId;

    fn send_frame(&self, to: LocationId, frame: &[u8]) -> Result<(), LinkError> {
        self.send_slice(to, frame).map_err(|e| LinkError {
            rank_died: matches!(e, world::SendError::RankDied(..))
                .then(|| to.rank(self.world().locations_per_rank())),
            why: e.to_string(),
        })
    }

    fn flush(&self, _to: LocationId) {
        world::Location::flush(self);
    }

    fn name(&self, peer: LocationId) -> String {
        let per_rank = self.world().locations_per_rank();
        format!("{peer} (rank {})", peer.rank(per_rank))
    }

    fn wire_id(&self, peer: LocationId) -> u32 {
        peer.raw()
    }

    fn local_wire_id(&self) -> u32 {
        self.id().raw()
    }
}
