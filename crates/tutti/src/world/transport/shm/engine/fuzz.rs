//! A mailbox's reading side on a small ring in private memory, for the fuzz
//! target `shm_mailbox` (feature `fuzzing`): producers push fragments, a
//! hostile process overwrites slots' control words, and the consumer reads,
//! reassembles and delivers exactly as the receiving thread does — but where
//! the receiving thread takes the system down, this returns the error.

use super::cma::Descriptor;
use super::receive::{deliver, reassemble};
use crate::world::fuzzing::MailboxOp;
use crate::world::transport::shm::ring::{Push, Ring};
use crate::world::transport::Sink;

/// Slots of the fuzzed ring: few, so that laps and a full ring are reached.
const SLOTS: usize = 8;
/// Bytes per slot of the fuzzed ring: small, so that frames span slots.
const SLOT_BYTES: usize = 64;

/// Runs `ops` on a fresh ring whose frames go to `sink` (`ranks` senders):
/// the number of frames delivered, or the first error, naming the cause,
/// that makes a real system go down.
pub(crate) fn mailbox(ops: &[MailboxOp], sink: &dyn Sink, ranks: usize) -> Result<usize, String> {
    let ring = Ring::<SLOTS, SLOT_BYTES>::boxed();
    let mut partial = vec![None; ranks];
    let mut scratch = Vec::new();
    let mut frames = 0;
    let mut drain = |ring: &Ring<SLOTS, SLOT_BYTES>| -> Result<(), String> {
        loop {
            scratch.clear();
            let Some(f) = ring.pop(&mut scratch, ranks).map_err(|e| e.0)? else {
                return Ok(());
            };
            if let Some(whole) =
                reassemble(&mut partial, &mut scratch, f, &|m| format!("rank {m}"))?
            {
                deliver(sink, f.from, &whole, &mut refuse)?;
                frames += 1;
            }
        }
    };
    for op in ops {
        match op {
            MailboxOp::Push { from, flags, bytes } => {
                let bytes = &bytes[..bytes.len().min(SLOT_BYTES)];
                let flags = u64::from(*flags & 3);
                let from = usize::from(*from);
                if ring.push(from, flags, bytes).map_err(|e| e.0)? == Push::Full {
                    drain(&ring)?;
                    ring.push(from, flags, bytes).map_err(|e| e.0)?;
                }
            }
            MailboxOp::Scribble { slot, seq, meta } => {
                ring.scribble(usize::from(*slot) % SLOTS, *seq, *meta);
            }
            MailboxOp::Drain => drain(&ring)?,
        }
    }
    drain(&ring)?;
    Ok(frames)
}

/// A lent body cannot be read here: its frame is refused (after its
/// descriptor was checked), as a reader's whose read failed would be.
fn refuse(_: usize, _: Descriptor) -> Result<Option<Vec<u8>>, String> {
    Ok(None)
}
