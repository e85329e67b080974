//! The rank's receive path: how the transport hands this rank what other
//! ranks sent it ([`Sink`] for [`Local`]). A frame is parsed and checked
//! (`frame.rs`) before anything is delivered: data frames go to the inbox of
//! the location they name, collective frames to the collective rounds,
//! stall-check frames to `stall.rs`, channel frames to the channel end they
//! name (`channel/`), quiescence sums to the wave that waits
//! for them, and a dead rank to everyone watching for deaths. A frame that
//! does not parse, or names a location that is not on this rank or a sender
//! that is not the rank it came from, is an error for the transport to report.

use std::sync::Arc;

use super::frame::{self, DataHead, Parsed};
use super::inbox::{Parcel, Payload};
use super::rank::{Local, Slot};
use super::transport::Sink;
use super::LocationId;

impl Local {
    /// The slot a data frame from `from_rank` goes to, after checking its ends.
    fn data_slot(&self, from_rank: usize, h: &DataHead) -> Result<(LocationId, &Slot), String> {
        let to = LocationId::new(h.to);
        let from = LocationId::new(h.from);
        let total = self.ranks * self.per_rank;
        if from.index() >= total || from.rank(self.per_rank) != from_rank {
            return Err(format!(
                "a data frame from rank {from_rank} claims to come from {from}"
            ));
        }
        let Some(slot) = self.slot_of(to).filter(|_| to.index() < total) else {
            return Err(format!(
                "a data frame from rank {from_rank} for {to}, which is not on this rank"
            ));
        };
        Ok((from, slot))
    }
}

impl Local {
    /// A collective frame's value, for the collective rounds.
    fn collective(
        &self,
        from_rank: usize,
        c: frame::CollectiveHead,
        value: Vec<u8>,
    ) -> Result<(), String> {
        if c.from_rank as usize != from_rank {
            return Err(malformed(
                from_rank,
                format!(
                    "a collective frame claims to come from rank {}",
                    c.from_rank
                ),
            ));
        }
        self.stall.arrived();
        // A well-formed frame of a collective this rank runs otherwise:
        // the message names both sides.
        self.rounds.incoming(c.from_rank, c.tag, value)
    }
}

impl Sink for Local {
    fn deliver_head(&self, from_rank: usize, head: &[u8]) -> Result<(), String> {
        match frame::parse(head, false).map_err(|e| malformed(from_rank, e.0))? {
            // One message: only its bytes are copied out, into a delivery of
            // its own (no shared head to count references on).
            Parsed::Data(h) if h.inline == 1 => {
                self.stall.arrived();
                let (from, slot) = self
                    .data_slot(from_rank, &h)
                    .map_err(|e| malformed(from_rank, e))?;
                let mut pos = frame::HEADER;
                let Some(r) = frame::next_entry(head, &mut pos) else {
                    self.fail_invariant("a validated frame ran out of messages");
                };
                slot.inbox.push(Parcel::One {
                    from,
                    phase: h.phase,
                    payload: Payload::Bytes(head[r].to_vec()),
                });
                Ok(())
            }
            // A collective value: only its bytes are copied out (the head
            // is parsed once, and not copied into a shared head first).
            Parsed::Collective(c) => {
                let value = head.get(c.inline.clone()).map(<[u8]>::to_vec);
                self.collective(from_rank, c, value.unwrap_or_default())
            }
            _ => self.deliver(from_rank, Arc::from(head), None),
        }
    }

    fn deliver(
        &self,
        from_rank: usize,
        head: Arc<[u8]>,
        body: Option<Vec<u8>>,
    ) -> Result<(), String> {
        match frame::parse(&head, body.is_some()).map_err(|e| malformed(from_rank, e.0))? {
            Parsed::Data(h) => {
                let (from, slot) = self
                    .data_slot(from_rank, &h)
                    .map_err(|e| malformed(from_rank, e))?;
                self.stall.arrived();
                slot.inbox.push(Parcel::Frame {
                    from,
                    phase: h.phase,
                    head,
                    inline: h.inline,
                    body,
                });
                Ok(())
            }
            Parsed::Collective(c) => {
                let value = match body {
                    Some(b) => b,
                    None => head
                        .get(c.inline.clone())
                        .map(<[u8]>::to_vec)
                        .unwrap_or_default(),
                };
                self.collective(from_rank, c, value)
            }
            Parsed::Channel(h) => {
                let value = match body {
                    Some(b) => b,
                    None => head
                        .get(h.inline.clone())
                        .map(<[u8]>::to_vec)
                        .unwrap_or_default(),
                };
                self.stall.arrived();
                super::channel::incoming(self, from_rank, &h, value)
                    .map_err(|e| malformed(from_rank, e))
            }
            Parsed::Stall(h) => {
                let payload = match &body {
                    Some(b) => &b[..],
                    None => head.get(h.inline.clone()).unwrap_or_default(),
                };
                super::stall::incoming(self, from_rank, &h, payload)
                    .map_err(|e| malformed(from_rank, e))
            }
        }
    }

    fn body_buffer(&self, len: usize) -> Option<Vec<u8>> {
        self.pool.take(len)
    }

    fn recycle(&self, buffer: Vec<u8>) {
        self.pool.put(buffer);
    }

    fn summed(&self, epoch: u64, sums: [u64; 2]) {
        self.stall.arrived();
        super::collective::complete(self, epoch, Some(sums));
    }

    fn rank_died(&self, rank: usize) {
        self.stall.arrived();
        self.bury(rank);
    }

    fn rank_revived(&self, rank: usize) {
        self.stall.arrived();
        self.revive(rank);
    }
}

/// The error for a frame from `rank` that does not parse or names the wrong
/// ends.
fn malformed(rank: usize, why: String) -> String {
    format!("a malformed frame from rank {rank}: {why}")
}
