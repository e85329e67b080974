//! Large bodies in one copy (cross-memory attach): between the processes of
//! one host, a body of at least [`threshold`] bytes is not cut into ring
//! slots (a copy in, a copy out) but *lent*: the sender writes a
//! [`Descriptor`] (the body's address in its memory, its length and a
//! sequence number) into the receiver's mailbox as a frame whose prefix flag
//! is [`LENT`], and waits; the receiver, reading its mailbox in order, copies
//! the body straight out of the sender's memory with `process_vm_readv` (one
//! copy, by the kernel, as Open MPI's shared-memory transport does with CMA),
//! stores `seq << 1` in its member entry's `copied[sender]` (Release), and
//! delivers the frame. The sender's Acquire load of that word ends the loan:
//! the body's memory is the caller's again.
//!
//! The kernel lets a process read another's memory only with ptrace access
//! (same user and Yama's `ptrace_scope` 0, or `CAP_SYS_PTRACE`). So every
//! member, once all have joined, reads a known word of each other member's
//! memory ([`CMA_PROBE`](super::system::CMA_PROBE), whose address each
//! publishes) and sets bit `r` of its `reads` word if it may read member
//! `r`; a sender lends only to a receiver that reads it, and bodies go
//! through the rings otherwise, with the reason in the transport's
//! description (`--verbose`). A read that fails later anyway (the sender
//! died) is a *refusal*: the receiver drops the descriptor's frame, clears
//! the bit, stores `seq << 1 | 1`, and the sender, still holding the
//! receiver's send lock, writes the whole frame through the rings instead —
//! nothing of its own can come between, so the order of its frames holds.
//!
//! A sender never lends from inside a drain of its own mailbox (a thread
//! that delivers frames and, handling one, sends): two such threads lending
//! to each other would each wait for the other's copy. Sequence numbers
//! continue from the receiver's `copied` word, so a new incarnation of either
//! side starts after what the old one left there.

use std::cell::Cell;
use std::thread;
use std::time::{Duration, Instant};

use super::{Inner, Members, CHECK_EVERY};
use crate::loom::{spin_hint, Ordering};
use crate::world::transport::shm::system::{self, System, CMA_PROBE};
use crate::world::transport::shm::{loan, sys};
use crate::world::transport::Sink;

/// The prefix flag of a frame whose body is lent (0: no body, 1: a body
/// follows the head in the ring).
pub(super) const LENT: u8 = 2;
/// Bytes of a [`Descriptor`].
const DESCRIPTOR: usize = 24;
/// Smallest body lent by default (`TUTTI_SHM_CMA_BYTES`).
const THRESHOLD: usize = 32 * 1024;
/// Largest body a descriptor may announce (a corrupt length is refused,
/// not allocated).
const MAX_LENT: u64 = 1 << 40;

thread_local! {
    /// This thread is draining its process's mailbox (see the module docs).
    static DRAINING: Cell<bool> = const { Cell::new(false) };
}

/// Marks the current thread as draining its mailbox while alive.
pub(super) struct Draining(bool);

impl Draining {
    pub(super) fn start() -> Draining {
        Draining(DRAINING.with(|d| d.replace(true)))
    }
}

impl Drop for Draining {
    fn drop(&mut self) {
        DRAINING.with(|d| d.set(self.0));
    }
}

/// The smallest body lent (`TUTTI_SHM_CMA_BYTES`; 0: none, every body goes
/// through the rings).
pub(super) fn threshold() -> usize {
    match std::env::var("TUTTI_SHM_CMA_BYTES") {
        Err(_) => THRESHOLD,
        Ok(v) => match v.trim().parse::<usize>() {
            Ok(0) => usize::MAX,
            Ok(n) => n,
            Err(_) => {
                crate::world::say(&format!(
                    "TUTTI_SHM_CMA_BYTES={v:?} is not a number of bytes; using {THRESHOLD}"
                ));
                THRESHOLD
            }
        },
    }
}

/// What a lent body's frame says about it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Descriptor {
    addr: u64,
    len: usize,
    seq: u64,
}

impl Descriptor {
    fn encode(&self) -> [u8; DESCRIPTOR] {
        let mut d = [0u8; DESCRIPTOR];
        d[..8].copy_from_slice(&self.addr.to_le_bytes());
        d[8..16].copy_from_slice(&(self.len as u64).to_le_bytes());
        d[16..].copy_from_slice(&self.seq.to_le_bytes());
        d
    }

    /// The descriptor in the bytes after a [`LENT`] frame's head.
    pub(crate) fn parse(b: &[u8]) -> Result<Descriptor, String> {
        let word = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().unwrap_or([0; 8]));
        if b.len() != DESCRIPTOR {
            return Err(format!(
                "a lent body's descriptor of {} bytes, not {DESCRIPTOR}",
                b.len()
            ));
        }
        let len = word(8);
        if len > MAX_LENT {
            return Err(format!("a lent body of {len} bytes"));
        }
        Ok(Descriptor {
            addr: word(0),
            len: len as usize,
            seq: word(16),
        })
    }
}

/// How a loan ended.
pub(super) enum Lent {
    /// The receiver copied the body and has the frame.
    Copied,
    /// The receiver could not read the body and dropped the frame: send it
    /// through the rings.
    Refused,
    /// The receiver died or was replaced.
    Died,
}

impl Inner {
    /// Whether a body of `len` bytes for member `to` is lent.
    pub(super) fn lends_to(&self, to: usize, len: usize) -> bool {
        len >= self.cma_min
            && !DRAINING.with(Cell::get)
            && self.system.header().members[to]
                .reads
                .load(Ordering::Relaxed)
                & (1 << self.rank)
                != 0
    }

    /// Lends `body` to member `to` (whose send lock the caller holds):
    /// writes the descriptor frame into `ring`, its mailbox, and waits
    /// until `to` is done with the body.
    pub(super) fn lend(&self, to: usize, ring: &system::Mailbox, head: &[u8], body: &[u8]) -> Lent {
        let done = &self.system.header().members[to].copied[self.rank];
        let d = Descriptor {
            addr: body.as_ptr() as u64,
            len: body.len(),
            seq: loan::next(done),
        };
        if !self.push_flagged(to, ring, head, &d.encode(), LENT) {
            return Lent::Died;
        }
        let mut waited = 0u32;
        let mut since = Instant::now();
        loop {
            // The copy happens before the body is touched again (`loan.rs`).
            if let Some(copied) = loan::ended(done, d.seq) {
                return if copied { Lent::Copied } else { Lent::Refused };
            }
            waited = waited.saturating_add(1);
            if waited < 256 {
                spin_hint();
            } else if waited < 1024 {
                if waited == 256 {
                    // While this thread waits, maybe no worker of this
                    // process drains its mailbox: in an exchange (an
                    // all-gather) each side's worker lends to the other
                    // and waits for its copy. Each lender wakes its own
                    // receiving thread from its nap, which copies what
                    // the other lent: both copies happen now, not after
                    // the naps (a 64 KiB all-gather of two ranks: 205 µs
                    // → 58 µs, `mpi-bench --what collectives`).
                    self.wake_receiving();
                }
                thread::yield_now();
            } else {
                thread::sleep(Duration::from_micros(20));
                if since.elapsed() >= CHECK_EVERY {
                    since = Instant::now();
                    if !self.still_there(to) {
                        return Lent::Died;
                    }
                }
            }
        }
    }

    /// The receiver's side: copies the body `d` describes out of member
    /// `from`'s memory (into a buffer of `sink`'s, if it keeps one), and
    /// tells `from` it is done. `None` if the kernel refused the read: the
    /// frame is dropped, and `from` sends it again through the rings.
    pub(super) fn fetch(
        &self,
        sink: &dyn Sink,
        from: usize,
        d: Descriptor,
    ) -> Result<Option<Vec<u8>>, String> {
        let h = self.system.header();
        let done = &h.members[self.rank].copied[from];
        let expected = loan::next(done);
        if d.seq != expected {
            return Err(format!(
                "{} lent body {} where {expected} was due",
                self.members.rank(from),
                d.seq
            ));
        }
        let pid = h.members[from].pid.load(Ordering::Relaxed);
        let mut buf = sink.body_buffer(d.len).unwrap_or_else(|| vec![0; d.len]);
        match sys::read_process(pid, d.addr, &mut buf) {
            Ok(()) => {
                loan::end(done, d.seq, true);
                Ok(Some(buf))
            }
            Err(e) => {
                h.members[self.rank]
                    .reads
                    .fetch_and(!(1 << from), Ordering::AcqRel);
                loan::end(done, d.seq, false);
                sink.recycle(buf);
                crate::world::say(&format!(
                    "{}: cannot read a body of {} bytes from {}'s memory ({e}); its large \
                     bodies go through the rings from now on",
                    self.members.rank(self.rank),
                    d.len,
                    self.members.rank(from)
                ));
                Ok(None)
            }
        }
    }
}

/// Start-up, once every member has joined: reads each other member's probe
/// word, sets this member's `reads` bits for those it may read, and returns
/// a description of the outcome for the transport's description.
pub(super) fn probe(
    system: &System,
    me: usize,
    ranks: usize,
    members: &Members,
    min: usize,
) -> String {
    if min == usize::MAX {
        return "large bodies through the rings (TUTTI_SHM_CMA_BYTES=0)".into();
    }
    let h = system.header();
    let mut readable = 0usize;
    let mut refused: Option<String> = None;
    for r in (0..ranks).filter(|&r| r != me) {
        let pid = h.members[r].pid.load(Ordering::Relaxed);
        let addr = h.members[r].probe.load(Ordering::Relaxed);
        let mut word = [0u8; 8];
        match sys::read_process(pid, addr, &mut word) {
            Ok(()) if u64::from_le_bytes(word) == CMA_PROBE => {
                h.members[me].reads.fetch_or(1 << r, Ordering::AcqRel);
                readable += 1;
            }
            Ok(()) => {
                refused.get_or_insert_with(|| {
                    format!(
                        "{}'s probe word reads otherwise (another build of tutti?)",
                        members.rank(r)
                    )
                });
            }
            Err(e) => {
                refused.get_or_insert_with(|| {
                    let scope = match sys::ptrace_scope() {
                        Some(s) if s > 0 => format!(
                            "; Yama's ptrace_scope is {s} (/proc/sys/kernel/yama/ptrace_scope; \
                             0 allows it)"
                        ),
                        _ => String::new(),
                    };
                    format!(
                        "the kernel refuses process_vm_readv of {}'s memory: {e}{scope}",
                        members.rank(r)
                    )
                });
            }
        }
    }
    let others = ranks.saturating_sub(1);
    let lent = format!(
        "bodies of {min} bytes and more copied once from the sender's memory (cross-memory \
         attach)"
    );
    match refused {
        None => lent,
        Some(why) if readable == 0 => {
            format!("large bodies through the rings: cross-memory attach unavailable: {why}")
        }
        Some(why) => format!(
            "{lent} from {readable} of {others} mates; from the others through the rings: {why}"
        ),
    }
}
