//! A mailbox: a fixed-slot ring in shared memory with many producers (any
//! process of the system) and one consumer (the owner's receiving thread).
//!
//! # Protocol
//!
//! Slots carry a sequence word (`seq`), a claim word (`claim`: the position
//! and the rank of the producer that claimed the slot last), a descriptor
//! (`meta`: sender rank, first/last flags, length) and up to `D` bytes. Slot
//! `i` starts with `seq = i` and no claim. Positions only grow; position `p`
//! lives in slot `p mod N`.
//!
//! * *Produce* at position `p = tail`: if `seq == p` the slot is free for this
//!   lap. If its claim already names `p`, another producer has it and has not
//!   moved `tail` yet: help it (CAS `tail` from `p` to `p + 1`) and look
//!   again. Otherwise claim it: CAS the claim word from what it held (an
//!   earlier lap's claim) to (`p`, own rank) — the claim names its producer
//!   from the moment it exists — then move `tail` past `p` (CAS; a helper may
//!   have done it), write the bytes and the descriptor, and **commit** with
//!   `seq = p + 1` (Release). If `seq + N == p + 1` the slot still holds the
//!   previous lap's fragment, and if `seq + N == p` the previous lap is claimed
//!   but not yet committed: the ring is full either way. A larger `seq` means
//!   other producers went past `p`: look at `tail` again.
//! * *Consume* at position `p = head`: if `seq == p + 1` (Acquire) the slot is
//!   committed; copy it out, then free it for the next lap with `seq = p + N`
//!   (Release) and advance `head`. `seq == p` means nothing (yet) at `p`.
//!   Anything else cannot happen in a well-formed ring and is reported as
//!   corruption ([`RingError`]), as is a descriptor whose length or sender
//!   is out of range: a consumer never trusts the bytes it reads.
//! * *Reclaim*: a producer killed between its claim and its commit would
//!   stop the consumer at that slot for ever. The consumer, finding `seq ==
//!   p`, reads the claim ([`Ring::stalled`]); if it names `p` and a rank that
//!   the system knows is dead (its process is gone, so it can write nothing
//!   more), the consumer frees the slot as if it had read it
//!   ([`Ring::reclaim`]) and reports the loss. Only a fragment that was never
//!   committed is skipped: every committed one is read.
//!
//! The Release store of `seq` by whoever last touched a slot and the Acquire
//! load by whoever touches it next order the slot's bytes between them, so
//! each byte range has one writer at a time.
//!
//! # Waiting (no lost wake-up)
//!
//! The consumer, finding the ring empty, sets `waiting = 1`, issues a SeqCst
//! fence, and looks at the slot at `head` again; only if it is still empty it
//! sleeps on the futex word `waiting` while it is 1. A producer publishes,
//! issues a SeqCst fence, and if `waiting` is set clears it and wakes the
//! futex. The fences are ordered: if the consumer's comes first the producer
//! sees `waiting = 1` and wakes it (and the futex wait returns at once if the
//! word is already 0); otherwise the consumer's second look sees the published
//! slot. `loom_tests.rs` checks both this and the slot hand-over.

use crate::loom::{fence, AtomicU32, AtomicU64, Ordering, UnsafeCell};

/// First fragment of a frame.
pub(crate) const FIRST: u64 = 1;
/// Last fragment of a frame.
pub(crate) const LAST: u64 = 2;

/// The descriptor word: `len` (32 bits) | flags (8) | sender rank (24).
pub(crate) fn meta(from: usize, flags: u64, len: usize) -> u64 {
    (len as u64) | (flags << 32) | ((from as u64) << 40)
}

/// Bits of a claim word holding the claimant's rank + 1 (0: no claim).
const CLAIM_RANK_BITS: u32 = 24;

/// The claim word of position `pos` by rank `from`: the position's low 40
/// bits (a slot's claim is at most one lap old, so they tell laps apart) and
/// `from + 1`.
fn claim_word(pos: u64, from: usize) -> u64 {
    (pos << CLAIM_RANK_BITS) | (from as u64 + 1)
}

/// The rank whose claim of position `pos` the claim word `c` is, if it is one.
fn claimant(c: u64, pos: u64) -> Option<usize> {
    let rank = c & ((1 << CLAIM_RANK_BITS) - 1);
    (rank != 0 && c >> CLAIM_RANK_BITS == pos & ((1 << (64 - CLAIM_RANK_BITS)) - 1))
        .then(|| rank as usize - 1)
}

/// Whether claim word `c` is of a position after `pos` (the producer's
/// `pos` is stale: positions are compared modulo 2^40, and a slot's claim is
/// never more than a lap away from the present).
fn claim_ahead(c: u64, pos: u64) -> bool {
    const MASK: u64 = (1 << (64 - CLAIM_RANK_BITS)) - 1;
    let ahead = (c >> CLAIM_RANK_BITS).wrapping_sub(pos) & MASK;
    c & ((1 << CLAIM_RANK_BITS) - 1) != 0 && ahead != 0 && ahead < MASK / 2
}

/// A published fragment, as read by the consumer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Fragment {
    pub(crate) from: usize,
    pub(crate) first: bool,
    pub(crate) last: bool,
    pub(crate) len: usize,
}

/// The ring's contents make no sense (written by a faulty or hostile process,
/// or overwritten): the text names what and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RingError(pub(crate) String);

impl std::fmt::Display for RingError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// The control words, each on its own cache line.
#[repr(C, align(64))]
pub(crate) struct Line<T>(pub(crate) T);

/// One slot: sequence word, claim word, descriptor, bytes.
#[repr(C)]
pub(crate) struct Slot<const D: usize> {
    seq: AtomicU64,
    claim: AtomicU64,
    meta: AtomicU64,
    data: UnsafeCell<[u8; D]>,
}

/// A ring of `N` slots of `D` bytes: its layout is the shared memory's.
#[repr(C)]
pub(crate) struct Ring<const N: usize, const D: usize> {
    /// Next position a producer claims.
    tail: Line<AtomicU64>,
    /// Next position the consumer reads (kept here so that it survives in
    /// the segment; only the consumer writes it).
    head: Line<AtomicU64>,
    /// The futex word: 1 while the consumer sleeps or is about to.
    waiting: Line<AtomicU32>,
    slots: [Slot<D>; N],
    /// Loom has no futex: a condition variable stands in for it.
    #[cfg(loom)]
    futex: (crate::loom::Mutex<()>, crate::loom::Condvar),
}

// SAFETY: every field is an atomic except the slot bytes, which the protocol
// (module docs) hands between one producer and the consumer at a time.
unsafe impl<const N: usize, const D: usize> Sync for Ring<N, D> {}
// SAFETY: as above; the ring owns nothing thread-bound.
unsafe impl<const N: usize, const D: usize> Send for Ring<N, D> {}

/// What [`Ring::push`] found.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Push {
    Done,
    Full,
}

impl<const N: usize, const D: usize> Ring<N, D> {
    /// A fresh ring on the heap (tests and loom models).
    #[cfg(test)]
    pub(crate) fn boxed() -> Box<Self> {
        Box::new(Ring {
            tail: Line(AtomicU64::new(0)),
            head: Line(AtomicU64::new(0)),
            waiting: Line(AtomicU32::new(0)),
            slots: std::array::from_fn(|i| Slot {
                seq: AtomicU64::new(i as u64),
                claim: AtomicU64::new(0),
                meta: AtomicU64::new(0),
                data: UnsafeCell::new([0; D]),
            }),
            #[cfg(loom)]
            futex: (crate::loom::Mutex::new(()), crate::loom::Condvar::new()),
        })
    }

    /// Sets up a ring in zero-filled memory (the owner, before anyone else
    /// can see it).
    pub(crate) fn init(&self) {
        self.tail.0.store(0, Ordering::Relaxed);
        self.head.0.store(0, Ordering::Relaxed);
        self.waiting.0.store(0, Ordering::Relaxed);
        for (i, s) in self.slots.iter().enumerate() {
            s.seq.store(i as u64, Ordering::Relaxed);
            s.claim.store(0, Ordering::Relaxed);
            s.meta.store(0, Ordering::Relaxed);
        }
        fence(Ordering::Release);
    }

    /// Publishes one fragment (`bytes.len() <= D`) from rank `from`; `Full` if
    /// every slot holds an unread fragment. Corrupt control words are an error.
    #[cfg(test)]
    pub(crate) fn push(&self, from: usize, flags: u64, bytes: &[u8]) -> Result<Push, RingError> {
        self.push_with(from, flags, bytes, || {})
    }

    /// [`push`](Self::push), calling `claimed` between the claim and the
    /// writing of the bytes (a test pauses or ends a producer there).
    pub(crate) fn push_with(
        &self,
        from: usize,
        flags: u64,
        bytes: &[u8],
        claimed: impl FnOnce(),
    ) -> Result<Push, RingError> {
        debug_assert!(bytes.len() <= D);
        let pos = match self.claim(from)? {
            Some(pos) => pos,
            None => return Ok(Push::Full),
        };
        claimed();
        let slot = &self.slots[(pos % N as u64) as usize];
        slot.data.with_mut(|p| {
            // SAFETY: the claim made this producer the only one at `pos` (the
            // claim word names `pos` until the next lap), and `seq == pos`
            // (Acquire, in `claim`) says the consumer is done with the slot's
            // previous lap, so nobody else touches these bytes until the
            // Release store below (the consumer reclaims a claimed slot only
            // once its producer's process is dead); `bytes.len() <= D`
            // (checked by the caller).
            unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), p.cast::<u8>(), bytes.len()) }
        });
        slot.meta
            .store(meta(from, flags, bytes.len()), Ordering::Relaxed);
        slot.seq.store(pos + 1, Ordering::Release);
        self.wake();
        Ok(Push::Done)
    }

    /// Claims the next position for rank `from` (see the module docs):
    /// `None` if the ring is full.
    fn claim(&self, from: usize) -> Result<Option<u64>, RingError> {
        let mut stuck = 0u32;
        loop {
            let pos = self.tail.0.load(Ordering::Relaxed);
            let slot = &self.slots[(pos % N as u64) as usize];
            let seq = slot.seq.load(Ordering::Acquire);
            if seq == pos {
                let c = slot.claim.load(Ordering::Acquire);
                if claim_ahead(c, pos) {
                    // `pos` is stale: the slot has been claimed for a later
                    // lap. Never claim over it; read `tail` afresh (a
                    // read-modify-write sees its latest value).
                    self.tail.0.fetch_add(0, Ordering::Relaxed);
                    continue;
                }
                if claimant(c, pos).is_some() {
                    // Claimed by a producer that has not moved `tail` yet
                    // (or died before it could): move it for them.
                    let _ = self.tail.0.compare_exchange(
                        pos,
                        pos + 1,
                        Ordering::Relaxed,
                        Ordering::Relaxed,
                    );
                    continue;
                }
                let mine = claim_word(pos, from);
                if slot
                    .claim
                    .compare_exchange(c, mine, Ordering::AcqRel, Ordering::Relaxed)
                    .is_err()
                {
                    continue;
                }
                let _ = self.tail.0.compare_exchange(
                    pos,
                    pos + 1,
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                );
                return Ok(Some(pos));
            }
            // The previous lap unread, or claimed and not yet committed.
            if seq.wrapping_add(N as u64) == pos + 1 || seq.wrapping_add(N as u64) == pos {
                return Ok(None);
            }
            if seq > pos && seq <= pos + 1 + N as u64 {
                // Other producers went past `pos` first.
                stuck += 1;
                if stuck < 1 << 20 {
                    crate::loom::spin_hint();
                    continue;
                }
            }
            return Err(RingError(format!(
                "slot {} has sequence {seq} while producers are at position {pos}",
                pos % N as u64
            )));
        }
    }

    /// Test hook: claims a position for `from` and never commits it (a
    /// producer killed mid-write); `None` if the ring is full.
    #[cfg(test)]
    pub(crate) fn claim_and_die(&self, from: usize) -> Option<u64> {
        self.claim(from).expect("a well-formed ring")
    }

    /// The consumer, having found nothing at its position: the rank that
    /// claimed that position and has not committed it, if one has.
    pub(crate) fn stalled(&self) -> Option<usize> {
        let pos = self.head.0.load(Ordering::Relaxed);
        let slot = &self.slots[(pos % N as u64) as usize];
        if slot.seq.load(Ordering::Acquire) != pos {
            return None;
        }
        claimant(slot.claim.load(Ordering::Acquire), pos)
    }

    /// The consumer: frees the slot at its position, claimed by rank `dead`
    /// whose process has died, as if it had read it; returns the position.
    /// Does nothing (`None`) if the slot was committed meanwhile or is not
    /// `dead`'s claim: a committed fragment is never skipped.
    pub(crate) fn reclaim(&self, dead: usize) -> Option<u64> {
        let pos = self.head.0.load(Ordering::Relaxed);
        let slot = &self.slots[(pos % N as u64) as usize];
        if slot.seq.load(Ordering::Acquire) != pos
            || claimant(slot.claim.load(Ordering::Acquire), pos) != Some(dead)
        {
            return None;
        }
        slot.seq.store(pos + N as u64, Ordering::Release);
        self.head.0.store(pos + 1, Ordering::Relaxed);
        Some(pos)
    }

    /// Wakes the consumer if it sleeps (after a publish).
    fn wake(&self) {
        fence(Ordering::SeqCst);
        if self.waiting.0.load(Ordering::Relaxed) != 0
            && self.waiting.0.swap(0, Ordering::Relaxed) != 0
        {
            self.futex_wake();
        }
    }

    /// Whether the slot at the consumer's position is published.
    pub(crate) fn ready(&self) -> bool {
        let pos = self.head.0.load(Ordering::Relaxed);
        self.slots[(pos % N as u64) as usize]
            .seq
            .load(Ordering::Acquire)
            != pos
    }

    /// The consumer: takes the fragment at its position, if published, into
    /// `out` (appending). `ranks` bounds the sender ranks it accepts.
    pub(crate) fn pop(
        &self,
        out: &mut Vec<u8>,
        ranks: usize,
    ) -> Result<Option<Fragment>, RingError> {
        let pos = self.head.0.load(Ordering::Relaxed);
        let at = (pos % N as u64) as usize;
        let slot = &self.slots[at];
        let seq = slot.seq.load(Ordering::Acquire);
        if seq == pos {
            return Ok(None);
        }
        if seq != pos + 1 {
            return Err(RingError(format!(
                "slot {at} has sequence {seq}; the reader at position {pos} expects {pos} or {}",
                pos + 1
            )));
        }
        let m = slot.meta.load(Ordering::Relaxed);
        let len = (m & 0xffff_ffff) as usize;
        let flags = (m >> 32) & 0xff;
        let from = (m >> 40) as usize;
        if len > D || flags & !(FIRST | LAST) != 0 || from >= ranks {
            return Err(RingError(format!(
                "slot {at} at position {pos} has a bad descriptor (length {len} of at most {D}, \
                 flags {flags:#x}, sender rank {from} of {ranks})"
            )));
        }
        let start = out.len();
        out.resize(start + len, 0);
        slot.data.with(|p| {
            // SAFETY: `seq == pos + 1` (Acquire) says the producer published
            // the slot and nobody writes it until the Release store below;
            // `len <= D` was checked, and `out` has `len` bytes from `start`.
            unsafe {
                std::ptr::copy_nonoverlapping(p.cast::<u8>(), out.as_mut_ptr().add(start), len)
            }
        });
        slot.seq.store(pos + N as u64, Ordering::Release);
        self.head.0.store(pos + 1, Ordering::Relaxed);
        Ok(Some(Fragment {
            from,
            first: flags & FIRST != 0,
            last: flags & LAST != 0,
            len,
        }))
    }

    /// The consumer, having found the ring empty: sleeps until a producer
    /// publishes or `timeout` passes (see the module docs). Returns at once
    /// if something arrived meanwhile.
    pub(crate) fn sleep(&self, timeout: std::time::Duration) {
        self.waiting.0.store(1, Ordering::Relaxed);
        fence(Ordering::SeqCst);
        if self.ready() {
            self.waiting.0.store(0, Ordering::Relaxed);
            return;
        }
        self.futex_wait(timeout);
        self.waiting.0.store(0, Ordering::Relaxed);
    }

    /// [`sleep`](Self::sleep) unless `stay()` is false once the wake-up is
    /// armed (a runtime worker blocking here: `stay` reads whether it is
    /// still parked, and its waker calls [`nudge`](Self::nudge) after
    /// clearing that; see `runtime::sleep::IdleWaiter`).
    pub(crate) fn sleep_unless(&self, timeout: std::time::Duration, stay: &dyn Fn() -> bool) {
        self.waiting.0.store(1, Ordering::Relaxed);
        fence(Ordering::SeqCst);
        if self.ready() || !stay() {
            self.waiting.0.store(0, Ordering::Relaxed);
            return;
        }
        self.futex_wait(timeout);
        self.waiting.0.store(0, Ordering::Relaxed);
    }

    /// Wakes the consumer whatever it is doing (shutdown, abort).
    pub(crate) fn nudge(&self) {
        self.waiting.0.store(0, Ordering::Relaxed);
        self.futex_wake();
    }

    #[cfg(not(loom))]
    fn futex_wait(&self, timeout: std::time::Duration) {
        super::sys::futex_wait(&self.waiting.0, 1, timeout);
    }

    #[cfg(not(loom))]
    fn futex_wake(&self) {
        super::sys::futex_wake(&self.waiting.0);
    }

    #[cfg(loom)]
    fn futex_wait(&self, _timeout: std::time::Duration) {
        // The model has no timeouts: a lost wake-up blocks for ever and loom
        // reports it.
        let mut g = crate::loom::lock(&self.futex.0);
        while self.waiting.0.load(Ordering::Relaxed) == 1 {
            g = self.futex.1.wait(g).unwrap();
        }
    }

    #[cfg(loom)]
    fn futex_wake(&self) {
        let _g = crate::loom::lock(&self.futex.0);
        self.futex.1.notify_all();
    }

    /// Test hook: overwrites slot `i`'s control words (corruption tests).
    #[cfg(all(test, not(loom)))]
    pub(crate) fn scribble(&self, i: usize, seq: u64, meta: u64) {
        self.slots[i].claim.store(0, Ordering::Relaxed);
        self.slots[i].seq.store(seq, Ordering::Relaxed);
        self.slots[i].meta.store(meta, Ordering::Relaxed);
    }
}
