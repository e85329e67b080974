//! A mailbox: a fixed-slot ring in shared memory with many producers (any
//! process of the system) and one consumer (the owner's receiving thread).
//!
//! # Protocol
//!
//! Slots carry a sequence word (`seq`), a claim word (`claim`: the position
//! and the rank of the producer that claimed the slot last), a descriptor
//! (`meta`: sender rank, first/last flags, length) and up to `D` bytes; the
//! sequence word and the descriptor share a cache line, the claim word and
//! the bytes are on others (see [`Slot`]). Slot
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
//! The consumer and a producer meet on one word, the sequence word of the
//! slot at `head`, through read-modify-writes only (no fence: the argument
//! rests on the modification order of that word, which loom checks). The
//! consumer, finding the ring empty, counts itself in `sleepers`, reads the
//! futex word `wakes` (a generation, with a read-modify-write: the latest),
//! then **marks** the empty slot: a CAS of its `seq` from `p` to `p |
//! SLEEPING`. If the CAS fails, something arrived: it does not sleep.
//! Otherwise it sleeps on `wakes` while it holds the generation it read. A
//! producer commits with a swap of `seq` (not a store); if the value it
//! replaced carries the mark, it bumps `wakes` and, if `sleepers` is not
//! zero, wakes the futex. The commit and the mark are two read-modify-writes
//! of one word, so one comes first: if the commit, the consumer's CAS fails
//! and it looks again; if the mark, the producer's swap reads it, and so
//! (reading from the consumer's release) bumps `wakes` past the generation
//! the consumer read and sees it counted in `sleepers`: the futex wait
//! returns at once or is woken. A generation, not a flag: a sleeper that
//! leaves (woken, timed out, finding work) cannot leave behind a state
//! that sends another one to sleep (the receiving thread and a parked worker
//! may sleep at once). A mark left by a sleeper that left costs the next
//! commit one bump. Producers and the consumer treat a marked `seq` as
//! unmarked otherwise. `loom_tests.rs` checks this and the slot hand-over.
//!
//! # A producer preempted for long
//!
//! A producer reads `tail`, then its slot's `seq`; between the two the
//! ring may go round any number of times. A `seq` ahead of the position
//! read is then no corruption: the producer reads `tail` again and goes on
//! from there. It is corruption only if `tail` has not moved meanwhile:
//! whoever commits or frees a position has moved `tail` past it first.

use crate::loom::{fence, AtomicU32, AtomicU64, Ordering, UnsafeCell};

/// First fragment of a frame.
pub(crate) const FIRST: u64 = 1;
/// Last fragment of a frame.
pub(crate) const LAST: u64 = 2;

/// The consumer's mark on the sequence word of the empty slot it sleeps on
/// (positions stay far below 2^63).
const SLEEPING: u64 = 1 << 63;

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

/// One slot: its sequence word and descriptor on a cache line of their own
/// (the line a waiting consumer keeps reading), then its bytes. The
/// producer writes the bytes and then touches the control line once, with
/// the descriptor and the commit; the claim word lives apart, in
/// [`Ring::claims`], so the claim does not take the line away from the
/// consumer either.
#[repr(C)]
pub(crate) struct Slot<const D: usize> {
    ctl: Line<Control>,
    data: UnsafeCell<[u8; D]>,
}

/// A slot's control words.
#[repr(C)]
pub(crate) struct Control {
    seq: AtomicU64,
    meta: AtomicU64,
}

impl<const D: usize> std::ops::Deref for Slot<D> {
    type Target = Control;

    fn deref(&self) -> &Control {
        &self.ctl.0
    }
}

/// A ring of `N` slots of `D` bytes: its layout is the shared memory's.
#[repr(C)]
pub(crate) struct Ring<const N: usize, const D: usize> {
    /// Next position a producer claims.
    tail: Line<AtomicU64>,
    /// Next position the consumer reads (kept here so that it survives in
    /// the segment; only the consumer writes it).
    head: Line<AtomicU64>,
    /// The futex word: a generation, bumped by every wake-up.
    wakes: Line<AtomicU32>,
    /// Threads sleeping on the ring or about to.
    sleepers: Line<AtomicU32>,
    /// Slot `i`'s claim word, each on its own line: only producers touch
    /// them (and the consumer when it looks for a dead producer's claim).
    claims: [Line<AtomicU64>; N],
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
    /// A fresh ring on the heap (tests, loom models and the fuzz target).
    #[cfg(any(test, feature = "fuzzing"))]
    pub(crate) fn boxed() -> Box<Self> {
        Box::new(Ring {
            tail: Line(AtomicU64::new(0)),
            head: Line(AtomicU64::new(0)),
            wakes: Line(AtomicU32::new(0)),
            sleepers: Line(AtomicU32::new(0)),
            claims: std::array::from_fn(|_| Line(AtomicU64::new(0))),
            slots: std::array::from_fn(|i| Slot {
                ctl: Line(Control {
                    seq: AtomicU64::new(i as u64),
                    meta: AtomicU64::new(0),
                }),
                data: UnsafeCell::new([0; D]),
            }),
            #[cfg(loom)]
            futex: (crate::loom::Mutex::new(()), crate::loom::Condvar::new()),
        })
    }

    /// Positions claimed so far (the next one a producer claims).
    #[cfg_attr(loom, allow(dead_code))]
    pub(crate) fn claimed(&self) -> u64 {
        self.tail.0.load(Ordering::Acquire)
    }

    /// Positions the consumer has read or reclaimed so far.
    #[cfg_attr(loom, allow(dead_code))]
    pub(crate) fn consumed(&self) -> u64 {
        self.head.0.load(Ordering::Acquire)
    }

    /// Sets up a ring in zero-filled memory (the owner, before anyone else
    /// can see it).
    pub(crate) fn init(&self) {
        self.tail.0.store(0, Ordering::Relaxed);
        self.head.0.store(0, Ordering::Relaxed);
        self.wakes.0.store(0, Ordering::Relaxed);
        self.sleepers.0.store(0, Ordering::Relaxed);
        for (i, s) in self.slots.iter().enumerate() {
            s.seq.store(i as u64, Ordering::Relaxed);
            self.claims[i].0.store(0, Ordering::Relaxed);
            s.meta.store(0, Ordering::Relaxed);
        }
        fence(Ordering::Release);
    }

    /// Publishes one fragment (`bytes.len() <= D`) from rank `from`; `Full` if
    /// every slot holds an unread fragment. Corrupt control words are an error.
    #[cfg(any(test, feature = "fuzzing"))]
    pub(crate) fn push(&self, from: usize, flags: u64, bytes: &[u8]) -> Result<Push, RingError> {
        self.push_with(from, flags, &[bytes], || {})
    }

    /// [`push`](Self::push) of the concatenation of `parts` (at most `D`
    /// bytes in all: a sender gathers a frame's prefix, head and body
    /// straight into the slot), calling `claimed` between the claim and the
    /// writing of the bytes (a test pauses or ends a producer there).
    pub(crate) fn push_with(
        &self,
        from: usize,
        flags: u64,
        parts: &[&[u8]],
        claimed: impl FnOnce(),
    ) -> Result<Push, RingError> {
        debug_assert!(parts.iter().map(|p| p.len()).sum::<usize>() <= D);
        let pos = match self.claim(from)? {
            Some(pos) => pos,
            None => return Ok(Push::Full),
        };
        claimed();
        self.publish(pos, from, flags, parts);
        Ok(Push::Done)
    }

    /// Test hook: [`push`](Self::push) by a producer that read `tail` as
    /// `stale` and was preempted before it read the slot.
    #[cfg(test)]
    pub(crate) fn push_after_reading(
        &self,
        from: usize,
        flags: u64,
        bytes: &[u8],
        stale: u64,
    ) -> Result<Push, RingError> {
        match self.claim_from(from, stale)? {
            Some(pos) => {
                self.publish(pos, from, flags, &[bytes]);
                Ok(Push::Done)
            }
            None => Ok(Push::Full),
        }
    }

    /// Writes the fragment (the concatenation of `parts`) into the slot of
    /// position `pos`, which this producer claimed, and commits it.
    fn publish(&self, pos: u64, from: usize, flags: u64, parts: &[&[u8]]) {
        let slot = &self.slots[(pos % N as u64) as usize];
        let len = slot.data.with_mut(|p| {
            let mut at = 0usize;
            for bytes in parts {
                // Never past the slot, whatever the caller handed in.
                let n = bytes.len().min(D - at);
                // SAFETY: the claim made this producer the only one at `pos`
                // (the claim word names `pos` until the next lap), and `seq
                // == pos` (Acquire, in `claim`) says the consumer is done
                // with the slot's previous lap, so nobody else touches these
                // bytes until the Release store below (the consumer reclaims
                // a claimed slot only once its producer's process is dead);
                // `at + n <= D`.
                unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), p.cast::<u8>().add(at), n) }
                at += n;
            }
            at
        });
        slot.meta.store(meta(from, flags, len), Ordering::Relaxed);
        let was = slot.seq.swap(pos + 1, Ordering::AcqRel);
        if was & SLEEPING != 0 {
            self.wake();
        }
    }

    /// Claims the next position for rank `from` (see the module docs):
    /// `None` if the ring is full.
    fn claim(&self, from: usize) -> Result<Option<u64>, RingError> {
        self.claim_from(from, self.tail.0.load(Ordering::Relaxed))
    }

    /// [`claim`](Self::claim), starting from `first` as the value of `tail`
    /// read first (a test hands in a stale one: a producer preempted there).
    fn claim_from(&self, from: usize, first: u64) -> Result<Option<u64>, RingError> {
        let mut stuck = 0u32;
        let mut pos = first;
        loop {
            let at = pos % N as u64;
            let slot = &self.slots[at as usize];
            let claim = &self.claims[at as usize].0;
            let seq = slot.seq.load(Ordering::Acquire) & !SLEEPING;
            if seq == pos {
                let c = claim.load(Ordering::Acquire);
                if claim_ahead(c, pos) {
                    // `pos` is stale: the slot has been claimed for a later
                    // lap. Never claim over it.
                    pos = self.latest_tail();
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
                    pos = self.latest_tail();
                    continue;
                }
                let mine = claim_word(pos, from);
                if claim
                    .compare_exchange(c, mine, Ordering::AcqRel, Ordering::Relaxed)
                    .is_err()
                {
                    pos = self.latest_tail();
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
            // The ring moved on since this producer read `tail` (by any
            // number of laps: it may have been preempted for long), or the
            // sequence read is older than `tail`: look again from the
            // latest `tail`.
            let now = self.latest_tail();
            if now != pos {
                pos = now;
                continue;
            }
            // `tail` has not moved, so no position from `pos` on was
            // committed or freed: every such store comes after `tail` moved
            // past that position (in `claim`, `reclaim`, and the consumer's
            // read of a committed slot), and the Acquire load above would
            // have seen `tail` move. A larger sequence, or one that is not
            // this slot's (`at` or `at + 1` modulo `N`), is corruption; a
            // smaller one may be a stale read: look again, for a while.
            let own = seq % N as u64 == at || seq.wrapping_sub(1) % N as u64 == at;
            if seq < pos && own {
                stuck += 1;
                if stuck < 1 << 20 {
                    crate::loom::spin_hint();
                    continue;
                }
            }
            return Err(RingError(format!(
                "slot {at} has sequence {seq} while producers are at position {pos}"
            )));
        }
    }

    /// The latest value of `tail` (a read-modify-write reads the last one).
    fn latest_tail(&self) -> u64 {
        self.tail.0.fetch_add(0, Ordering::Relaxed)
    }

    /// Test hook: claims a position for `from` and never commits it (a
    /// producer killed mid-write); `None` if the ring is full.
    #[cfg(test)]
    pub(crate) fn claim_and_die(&self, from: usize) -> Option<u64> {
        self.claim(from).expect("a well-formed ring")
    }

    /// Test hook: claims the position at `tail` for `from` and dies before
    /// moving `tail` past it (nobody has helped yet).
    #[cfg(test)]
    pub(crate) fn claim_and_die_before_moving_tail(&self, from: usize) -> u64 {
        let pos = self.tail.0.load(Ordering::Relaxed);
        let at = (pos % N as u64) as usize;
        assert_eq!(
            self.slots[at].seq.load(Ordering::Relaxed),
            pos,
            "a free slot at `tail`"
        );
        self.claims[at]
            .0
            .store(claim_word(pos, from), Ordering::Release);
        pos
    }

    /// The consumer, having found nothing at its position: the rank that
    /// claimed that position and has not committed it, if one has.
    pub(crate) fn stalled(&self) -> Option<usize> {
        let pos = self.head.0.load(Ordering::Relaxed);
        let at = (pos % N as u64) as usize;
        if self.slots[at].seq.load(Ordering::Acquire) & !SLEEPING != pos {
            return None;
        }
        claimant(self.claims[at].0.load(Ordering::Acquire), pos)
    }

    /// The consumer: frees the slot at its position, claimed by rank `dead`
    /// whose process has died, as if it had read it; returns the position.
    /// Does nothing (`None`) if the slot was committed meanwhile or is not
    /// `dead`'s claim: a committed fragment is never skipped.
    pub(crate) fn reclaim(&self, dead: usize) -> Option<u64> {
        let pos = self.head.0.load(Ordering::Relaxed);
        let at = (pos % N as u64) as usize;
        let slot = &self.slots[at];
        if slot.seq.load(Ordering::Acquire) & !SLEEPING != pos
            || claimant(self.claims[at].0.load(Ordering::Acquire), pos) != Some(dead)
        {
            return None;
        }
        // The dead claimant may not have moved `tail` past `pos`: move it
        // before the slot is freed (producers rely on it, see `claim`).
        let _ = self
            .tail
            .0
            .compare_exchange(pos, pos + 1, Ordering::Relaxed, Ordering::Relaxed);
        let was = slot.seq.swap(pos + N as u64, Ordering::AcqRel);
        self.head.0.store(pos + 1, Ordering::Relaxed);
        if was & SLEEPING != 0 {
            self.wake();
        }
        Some(pos)
    }

    /// Wakes whoever sleeps on the ring: after committing or freeing a slot
    /// the consumer marked, or to nudge it.
    fn wake(&self) {
        self.wakes.0.fetch_add(1, Ordering::AcqRel);
        if self.sleepers.0.load(Ordering::Acquire) != 0 {
            self.futex_wake();
        }
    }

    /// Whether the slot at the consumer's position is published.
    pub(crate) fn ready(&self) -> bool {
        let pos = self.head.0.load(Ordering::Relaxed);
        self.slots[(pos % N as u64) as usize]
            .seq
            .load(Ordering::Acquire)
            & !SLEEPING
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
        let seq = slot.seq.load(Ordering::Acquire) & !SLEEPING;
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
    /// commits the slot at its position or `timeout` passes (see the
    /// module docs). Returns at once if something arrived meanwhile.
    pub(crate) fn sleep(&self, timeout: std::time::Duration) {
        self.sleep_unless(timeout, &|| true);
    }

    /// [`sleep`](Self::sleep) unless `stay()` is false once the wake-up is
    /// armed (a runtime worker blocking here: `stay` reads whether it is
    /// still parked, and its waker calls [`nudge`](Self::nudge) after
    /// clearing that; see `runtime::sleep::IdleWaiter`).
    pub(crate) fn sleep_unless(&self, timeout: std::time::Duration, stay: &dyn Fn() -> bool) {
        self.sleepers.0.fetch_add(1, Ordering::AcqRel);
        let generation = self.wakes.0.fetch_add(0, Ordering::AcqRel);
        if stay() && self.mark() {
            self.futex_wait(generation, timeout);
        }
        self.sleepers.0.fetch_sub(1, Ordering::Release);
    }

    /// Marks the slot at the consumer's position as the one the consumer
    /// sleeps on, if it is still empty (a read-modify-write, also when an
    /// earlier sleeper's mark is there: the committing producer's swap reads
    /// from it); false if something arrived there.
    fn mark(&self) -> bool {
        let pos = self.head.0.load(Ordering::Relaxed);
        let seq = &self.slots[(pos % N as u64) as usize].seq;
        let mut cur = seq.load(Ordering::Relaxed);
        while cur & !SLEEPING == pos {
            match seq.compare_exchange_weak(
                cur,
                pos | SLEEPING,
                Ordering::AcqRel,
                Ordering::Relaxed,
            ) {
                Ok(_) => return true,
                Err(now) => cur = now,
            }
        }
        false
    }

    /// Test hook: the futex word's generation (how many wake-ups so far).
    #[cfg(all(test, loom))]
    pub(crate) fn wakes(&self) -> u32 {
        self.wakes.0.load(Ordering::Acquire)
    }

    /// Wakes the consumer whatever it is doing (shutdown, abort).
    pub(crate) fn nudge(&self) {
        self.wake();
    }

    #[cfg(not(loom))]
    fn futex_wait(&self, generation: u32, timeout: std::time::Duration) {
        super::sys::futex_wait(&self.wakes.0, generation, timeout);
    }

    #[cfg(not(loom))]
    fn futex_wake(&self) {
        super::sys::futex_wake(&self.wakes.0);
    }

    #[cfg(loom)]
    fn futex_wait(&self, generation: u32, _timeout: std::time::Duration) {
        // The model has no timeouts: a lost wake-up blocks for ever and loom
        // reports it.
        let mut g = crate::loom::lock(&self.futex.0);
        while self.wakes.0.load(Ordering::Relaxed) == generation {
            g = self.futex.1.wait(g).unwrap();
        }
    }

    #[cfg(loom)]
    fn futex_wake(&self) {
        let _g = crate::loom::lock(&self.futex.0);
        self.futex.1.notify_all();
    }

    /// Test hook: overwrites slot `i`'s control words (corruption tests and
    /// the fuzz target).
    #[cfg(all(any(test, feature = "fuzzing"), not(loom)))]
    pub(crate) fn scribble(&self, i: usize, seq: u64, meta: u64) {
        self.claims[i].0.store(0, Ordering::Relaxed);
        self.slots[i].seq.store(seq, Ordering::Relaxed);
        self.slots[i].meta.store(meta, Ordering::Relaxed);
    }
}
