//! One thread's log of trace events: a chunk of slots that only the owning
//! thread writes, with no lock and no read-modify-write on the recording path,
//! and that a write-out on any thread drains while the owner keeps recording.
//!
//! # Protocol
//!
//! * `len` counts the slots the owner has filled in the current chunk. Only the
//!   owner stores it: `Release` after writing a slot (a plain store on x86), so
//!   a reader that loads `len` with `Acquire` sees every slot below it written.
//! * `chunk` (which chunk) and `taken` (how many of its events a write-out has
//!   already taken) change only under the *hand-off lock* (the trace's sink
//!   lock): the owner exchanges a full chunk under it ([`Log::hand_off`]), a
//!   write-out drains under it ([`Log::take`]).
//!
//! Invariants: the owner writes only the slot at `len` and only while it is
//! beyond every index a reader may read (readers read `taken..len` for a `len`
//! they loaded, and the owner only ever grows `len` between hand-offs); the
//! slots `taken..len` are read at most once (`taken` moves to `len` under the
//! lock); a hand-off gives away exactly the slots `taken..len` of the old chunk
//! (nothing is read twice or lost) and resets both to 0 on the new chunk
//! before any later reader can look (it holds the lock). So every event pushed
//! is read exactly once, by a write-out or with its chunk, in the order it was
//! pushed. The owner reads `chunk` without the lock; it races only with other
//! readers of it, never with a write (only the owner writes it).
//!
//! `loom_tests.rs` model-checks an owner that pushes past a chunk and hands it
//! off against a concurrent write-out.

use std::mem::MaybeUninit;

use crate::loom::{AtomicUsize, Ordering, UnsafeCell};

/// A slot of a chunk.
pub(super) type Slot<T> = UnsafeCell<MaybeUninit<T>>;

/// An empty chunk of `capacity` slots (at least 1). The memory is not touched
/// here: a page is first written when an event lands on it.
pub(super) fn chunk<T>(capacity: usize) -> Box<[Slot<T>]> {
    (0..capacity.max(1))
        .map(|_| UnsafeCell::new(MaybeUninit::uninit()))
        .collect()
}

/// How many slots ahead of the one it writes a push asks the processor to
/// fetch, for writing: a log is written once, in order, over chunks larger
/// than the caches, so without it nearly every event's store waits for its
/// line to come in (`perf` showed the store as the cost of a recorded
/// event). A prefetch past the end of the chunk fetches nothing harmful
/// (it never faults).
const PREFETCH_AHEAD: usize = 8;

/// Asks for the cache line at `p` in a writable state (nothing elsewhere).
#[inline(always)]
fn prefetch_for_write<T>(p: *const T) {
    #[cfg(all(target_arch = "x86_64", not(loom)))]
    // SAFETY: a prefetch only hints the cache; it does not access memory and
    // cannot fault, whatever the address.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_ET0 }>(p.cast::<i8>());
    }
    #[cfg(not(all(target_arch = "x86_64", not(loom))))]
    let _ = p;
}

/// One thread's events (see the module documentation).
pub(super) struct Log<T> {
    chunk: UnsafeCell<Box<[Slot<T>]>>,
    /// Slots of `chunk` filled; stored by the owner only.
    len: AtomicUsize,
    /// Slots of `chunk` already read by a write-out; under the hand-off lock.
    taken: UnsafeCell<usize>,
}

// SAFETY: the slots are shared between the owner and write-outs by the protocol
// of the module documentation (disjoint slots, published by `len`, `chunk` and
// `taken` changed under the hand-off lock); events are plain `Copy` data.
unsafe impl<T: Copy + Send> Sync for Log<T> {}
// SAFETY: as above; a `Log` owns its chunk.
unsafe impl<T: Copy + Send> Send for Log<T> {}

/// A chunk handed off by its owner: its events not yet taken by a write-out.
pub(super) struct Full<T> {
    slots: Box<[Slot<T>]>,
    from: usize,
    to: usize,
}

impl<T: Copy> Full<T> {
    /// The events, in the order they were recorded.
    pub(super) fn events(&self) -> impl Iterator<Item = T> + '_ {
        self.slots[self.from..self.to]
            .iter()
            // SAFETY: slots `from..to` were written (the owner filled them before
            // handing the chunk off, which happened before we own it).
            .map(|s| s.with(|p| unsafe { (*p).assume_init_read() }))
    }

    /// How many events.
    pub(super) fn len(&self) -> usize {
        self.to - self.from
    }

    /// The chunk, for reuse.
    pub(super) fn into_chunk(self) -> Box<[Slot<T>]> {
        self.slots
    }
}

impl<T: Copy> Log<T> {
    /// A log with an empty chunk.
    pub(super) fn new(chunk: Box<[Slot<T>]>) -> Log<T> {
        Log {
            chunk: UnsafeCell::new(chunk),
            len: AtomicUsize::new(0),
            taken: UnsafeCell::new(0),
        }
    }

    /// Appends `e`; `false` when the chunk is full (nothing recorded): the
    /// owner then hands the chunk off and pushes again.
    ///
    /// # Safety
    /// Only the owning thread pushes.
    #[inline(always)]
    pub(super) unsafe fn push(&self, e: T) -> bool {
        // Only this thread stores `len`: it reads its own last store.
        let n = self.len.load(Ordering::Relaxed);
        // (The closures take `e` by value, so it stays in registers.)
        let pushed = self.chunk.with(move |c| {
            // SAFETY: only the owner (us) writes `chunk`; others only read it.
            let c = unsafe { &*c };
            prefetch_for_write(c.as_ptr().wrapping_add(n + PREFETCH_AHEAD));
            match c.get(n) {
                // SAFETY: slot `n` is at `len`, beyond every slot a reader may
                // read until we publish it below.
                Some(slot) => slot.with_mut(move |p| unsafe { (*p).write(e) }),
                None => return false,
            };
            true
        });
        if pushed {
            // Publishes the slot to write-outs (they load `len` with Acquire).
            self.len.store(n + 1, Ordering::Release);
        }
        pushed
    }

    /// Exchanges the current chunk for the empty `fresh` one and returns its
    /// events that no write-out has taken.
    ///
    /// # Safety
    /// Only the owning thread hands off, holding the hand-off lock.
    pub(super) unsafe fn hand_off(&self, fresh: Box<[Slot<T>]>) -> Full<T> {
        let to = self.len.load(Ordering::Relaxed);
        // SAFETY: `taken` and `chunk` change only under the lock, which we hold.
        let from = self
            .taken
            .with_mut(|t| unsafe { std::mem::replace(&mut *t, 0) });
        // SAFETY: as above; no reader holds a reference into the chunk outside
        // the lock, and the owner (us) is not pushing.
        let slots = self
            .chunk
            .with_mut(|c| unsafe { std::mem::replace(&mut *c, fresh) });
        // Readers load `len` only under the lock, which orders this store
        // before them.
        self.len.store(0, Ordering::Relaxed);
        Full { slots, from, to }
    }

    /// The chunk, emptied, for reuse (the log is being dropped).
    pub(super) fn take_chunk(&mut self) -> Box<[Slot<T>]> {
        // SAFETY: `&mut self`: no other access exists.
        self.chunk.with_mut(|c| unsafe { std::mem::take(&mut *c) })
    }

    /// Calls `f` on every event recorded and not yet taken, in order, and marks
    /// them taken.
    ///
    /// # Safety
    /// The caller holds the hand-off lock (any thread).
    pub(super) unsafe fn take(&self, mut f: impl FnMut(T)) {
        // Pairs with the owner's Release store: slots below `to` are written.
        let to = self.len.load(Ordering::Acquire);
        // SAFETY: `taken` changes only under the lock, which we hold.
        let from = self.taken.with(|t| unsafe { *t });
        self.chunk.with(|c| {
            // SAFETY: `chunk` changes only under the lock; the owner writes
            // only slots at or beyond `to` meanwhile.
            let slots = unsafe { &(&*c)[from..to] };
            for s in slots {
                // SAFETY: below `to`, so written and published.
                f(s.with(|p| unsafe { (*p).assume_init_read() }));
            }
        });
        // SAFETY: under the lock, as above.
        self.taken.with_mut(|t| unsafe { *t = to });
    }
}
