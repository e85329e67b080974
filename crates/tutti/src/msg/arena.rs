//! Envelope memory: small envelopes are bump-allocated from per-thread chunks.
//!
//! Messages are allocated by their sender and freed by their receiver, usually on
//! another thread. General-purpose allocators handle that pattern poorly (glibc's
//! per-thread caches drain on one side and overflow on the other), and measured, it cost
//! about half of a `tell`. So envelopes of up to [`MAX_SMALL`] bytes come from chunks:
//!
//! * Each thread owns one **current chunk** of [`CHUNK`] bytes, aligned to its size, and
//!   bump-allocates envelopes from it with no atomic operation.
//! * Freeing an envelope — on any thread — finds its chunk by rounding the address down
//!   to the chunk alignment and decrements the chunk's `live` count.
//! * A chunk is freed when its last envelope is, once its owner has moved on.
//!
//! # The `live` word
//!
//! `live: AtomicUsize` starts at [`BIAS`] (a huge number standing for "the owner still
//! allocates here"). Every free subtracts 1. When the owner retires the chunk (it is
//! full, or the thread exits) after allocating `n` envelopes from it, it subtracts
//! `BIAS - n`. The total subtracted is then exactly `BIAS`, so `live` reaches zero at
//! the last of these subtractions, whichever thread makes it — and that thread frees the
//! chunk. Before the retire `live ≥ BIAS - n > 0` (at most `n` frees can have happened),
//! so nobody frees a chunk that is still being allocated from. Each subtraction is
//! `AcqRel`, so the freeing thread sees every write made to the chunk's envelopes.
//!
//! Chunk memory is never reused while the chunk lives (bump allocation only), so there
//! is no reuse race. That also lets a consumer that frees many envelopes in a row (the
//! actor loop's turn) defer the subtractions: a [`FreeBatch`] counts consecutive frees
//! from one chunk and subtracts them at once when the chunk changes or the batch is
//! dropped — one atomic operation per run of envelopes instead of one each, and a chunk
//! is only freed later, never earlier. The price: one envelope that stays queued keeps its whole chunk
//! (at most [`CHUNK`] bytes) alive.

use std::alloc::{self, Layout};
use std::cell::Cell;
use std::ptr::{self, NonNull};

use crate::loom::{AtomicUsize, Ordering};

/// Bytes per chunk (also its alignment).
pub(crate) const CHUNK: usize = 16 * 1024;
/// Largest envelope (bytes) taken from a chunk; bigger ones use the global allocator.
pub(crate) const MAX_SMALL: usize = 512;
/// Largest alignment served from chunks.
pub(crate) const MAX_ALIGN: usize = 16;
/// "The owner still allocates here" (see the module documentation).
const BIAS: usize = usize::MAX / 2;

/// The start of every chunk.
#[repr(C, align(16))]
struct ChunkHeader {
    live: AtomicUsize,
}

const FIRST: usize = std::mem::size_of::<ChunkHeader>();

fn chunk_layout() -> Layout {
    // A valid layout: power-of-two alignment, size a multiple of it.
    Layout::from_size_align(CHUNK, CHUNK).expect("tutti: bad chunk layout")
}

/// True if envelopes of this layout come from chunks.
#[inline]
pub(crate) const fn is_small(layout: Layout) -> bool {
    layout.size() <= MAX_SMALL && layout.align() <= MAX_ALIGN
}

/// A thread's current chunk: its address, the bump offset, envelopes allocated.
struct Current {
    chunk: Cell<*mut ChunkHeader>,
    offset: Cell<usize>,
    allocated: Cell<usize>,
}

impl Current {
    /// Retires the current chunk (the owner's subtraction).
    fn retire(&self) {
        let chunk = self.chunk.replace(ptr::null_mut());
        if !chunk.is_null() {
            let n = self.allocated.replace(0);
            // SAFETY: the chunk is live: the owner's bias is still in `live`.
            unsafe { sub_live(chunk, BIAS - n) };
        }
    }
}

impl Drop for Current {
    fn drop(&mut self) {
        self.retire();
    }
}

std::thread_local! {
    static CURRENT: Current = const {
        Current {
            chunk: Cell::new(ptr::null_mut()),
            offset: Cell::new(0),
            allocated: Cell::new(0),
        }
    };
}

/// Subtracts `n` from a chunk's `live` count and frees the chunk if that was the end.
///
/// # Safety
/// `chunk` is live and the caller's `n` is part of the `BIAS` total (see the module
/// documentation).
unsafe fn sub_live(chunk: *mut ChunkHeader, n: usize) {
    // SAFETY: live per the caller.
    let prev = unsafe { (*chunk).live.fetch_sub(n, Ordering::AcqRel) };
    if prev == n {
        // SAFETY: the count reached zero: no envelope and no owner refer to it.
        unsafe { free_chunk(chunk) };
    }
}

#[cold]
unsafe fn free_chunk(chunk: *mut ChunkHeader) {
    // SAFETY: allocated by `new_chunk` with this layout, freed once; dropping the
    // header in place lets loom retire its model atomic.
    unsafe {
        ptr::drop_in_place(chunk);
        alloc::dealloc(chunk.cast(), chunk_layout());
    }
}

#[cold]
fn new_chunk() -> *mut ChunkHeader {
    let layout = chunk_layout();
    // SAFETY: non-zero size.
    let p = unsafe { alloc::alloc(layout) }.cast::<ChunkHeader>();
    if p.is_null() {
        alloc::handle_alloc_error(layout);
    }
    // SAFETY: fresh, aligned allocation large enough for the header.
    unsafe {
        p.write(ChunkHeader {
            live: AtomicUsize::new(BIAS),
        })
    };
    p
}

/// Allocates `layout` (which must be [`is_small`]) from this thread's chunk.
#[inline]
pub(crate) fn alloc_small(layout: Layout) -> NonNull<u8> {
    debug_assert!(is_small(layout));
    CURRENT
        .try_with(|c| {
            let mut chunk = c.chunk.get();
            let mut start = (c.offset.get() + layout.align() - 1) & !(layout.align() - 1);
            if chunk.is_null() || start + layout.size() > CHUNK {
                c.retire();
                chunk = new_chunk();
                c.chunk.set(chunk);
                start = FIRST;
            }
            c.offset.set(start + layout.size());
            c.allocated.set(c.allocated.get() + 1);
            // SAFETY: `start + size <= CHUNK`, inside the chunk allocation.
            unsafe { NonNull::new_unchecked(chunk.cast::<u8>().add(start)) }
        })
        .unwrap_or_else(|_| alloc_single(layout))
}

/// During thread teardown (no chunk any more): a chunk holding just this envelope.
#[cold]
fn alloc_single(layout: Layout) -> NonNull<u8> {
    let chunk = new_chunk();
    // SAFETY: the chunk is live; we retire it at once with one envelope allocated.
    unsafe { sub_live(chunk, BIAS - 1) };
    let start = (FIRST + layout.align() - 1) & !(layout.align() - 1);
    // SAFETY: inside the chunk.
    unsafe { NonNull::new_unchecked(chunk.cast::<u8>().add(start)) }
}

/// Frees an envelope allocated by [`alloc_small`].
///
/// # Safety
/// `p` came from `alloc_small` and is freed once.
#[inline]
pub(crate) unsafe fn free_small(p: NonNull<u8>) {
    // SAFETY: the envelope keeps its chunk live until this subtraction.
    unsafe { sub_live(chunk_of(p), 1) };
}

/// The chunk an envelope from `alloc_small` lies in.
fn chunk_of(p: NonNull<u8>) -> *mut ChunkHeader {
    // The chunk starts at the envelope's address rounded down to the chunk alignment;
    // stepping back keeps the pointer's provenance (the whole chunk allocation).
    p.as_ptr()
        .wrapping_sub(p.as_ptr() as usize & (CHUNK - 1))
        .cast::<ChunkHeader>()
}

/// Frees of envelopes not yet subtracted from their chunk (see the module
/// documentation); settles them when dropped.
pub(crate) struct FreeBatch {
    chunk: *mut ChunkHeader,
    n: usize,
}

impl Default for FreeBatch {
    fn default() -> Self {
        FreeBatch {
            chunk: ptr::null_mut(),
            n: 0,
        }
    }
}

impl FreeBatch {
    /// [`free_for`], counted in this batch when the memory came from a chunk.
    ///
    /// # Safety
    /// As for `free_for`.
    #[inline]
    pub(crate) unsafe fn free_for<T>(&mut self, p: NonNull<T>) {
        if !is_small(Layout::new::<T>()) {
            // SAFETY: per the caller.
            return unsafe { free_for(p) };
        }
        let chunk = chunk_of(p.cast());
        if chunk != self.chunk {
            self.settle();
            self.chunk = chunk;
        }
        // The envelope's own unit of `live` now sits in this count, which keeps the
        // chunk live until it is subtracted.
        self.n += 1;
    }

    /// Subtracts the counted frees from their chunk.
    fn settle(&mut self) {
        let n = std::mem::take(&mut self.n);
        if n > 0 {
            // SAFETY: each counted envelope held one unit of its chunk's `live`, handed
            // over to this count by `free_for`.
            unsafe { sub_live(self.chunk, n) };
        }
    }
}

impl Drop for FreeBatch {
    fn drop(&mut self) {
        self.settle();
    }
}

/// Allocates memory for `T`: from a chunk if small, else from the global allocator.
#[inline]
pub(crate) fn alloc_for<T>() -> NonNull<T> {
    let layout = Layout::new::<T>();
    if is_small(layout) {
        alloc_small(layout).cast()
    } else {
        // SAFETY: envelopes are never zero-sized (they have a header).
        let p = unsafe { alloc::alloc(layout) };
        match NonNull::new(p) {
            Some(p) => p.cast(),
            None => alloc::handle_alloc_error(layout),
        }
    }
}

/// Frees memory from [`alloc_for::<T>`] (without dropping a `T`).
///
/// # Safety
/// `p` came from `alloc_for::<T>` and is freed once.
#[inline]
pub(crate) unsafe fn free_for<T>(p: NonNull<T>) {
    let layout = Layout::new::<T>();
    if is_small(layout) {
        // SAFETY: per the caller.
        unsafe { free_small(p.cast()) }
    } else {
        // SAFETY: per the caller.
        unsafe { alloc::dealloc(p.as_ptr().cast(), layout) }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn chunks_fill_up_and_are_freed_from_other_threads() {
        let layout = Layout::new::<[u64; 8]>();
        let per_chunk = (CHUNK - FIRST) / layout.size();
        let ptrs: Vec<usize> = (0..3 * per_chunk + 5)
            .map(|i| {
                let p = alloc_small(layout).cast::<[u64; 8]>();
                // SAFETY: fresh memory for one [u64; 8].
                unsafe { p.as_ptr().write([i as u64; 8]) };
                p.as_ptr() as usize
            })
            .collect();
        let chunks: std::collections::BTreeSet<usize> =
            ptrs.iter().map(|p| p & !(CHUNK - 1)).collect();
        assert_eq!(chunks.len(), 4);
        std::thread::scope(|s| {
            for part in ptrs.chunks(ptrs.len() / 3 + 1) {
                s.spawn(move || {
                    for &p in part {
                        let p = p as *mut [u64; 8];
                        // SAFETY: each pointer is read and freed once, here.
                        unsafe {
                            assert!((*p).iter().all(|&x| x == (*p)[0]));
                            free_small(NonNull::new_unchecked(p.cast()));
                        }
                    }
                });
            }
        });
        // The current chunk still belongs to this thread; the others were freed (a
        // double free or use-after-free would show under a sanitizer or Miri).
        let p = alloc_small(layout);
        // SAFETY: from `alloc_small`, once.
        unsafe { free_small(p) };
    }

    #[test]
    fn a_free_batch_settles_each_chunk_once_it_moves_on_and_when_dropped() {
        let layout = Layout::new::<[u64; 8]>();
        let per_chunk = (CHUNK - FIRST) / layout.size();
        let ptrs: Vec<NonNull<[u64; 8]>> = (0..2 * per_chunk + 3)
            .map(|_| alloc_small(layout).cast())
            .collect();
        let first = chunk_of(ptrs[0].cast());
        let mut batch = FreeBatch::default();
        for p in &ptrs[..per_chunk] {
            // SAFETY: from `alloc_small`, freed once.
            unsafe { batch.free_for(*p) };
        }
        // Nothing subtracted yet: the first chunk still counts its envelopes.
        // SAFETY: the chunk is live (the batch holds its envelopes' units).
        let live = unsafe { (*first).live.load(Ordering::Relaxed) };
        assert_eq!(
            live, per_chunk,
            "retired by its owner, the frees not yet settled"
        );
        for p in &ptrs[per_chunk..] {
            // SAFETY: as above.
            unsafe { batch.free_for(*p) };
        }
        // Moving to the second chunk settled (and freed) the first; dropping the
        // batch settles the rest (a leak or double free would show under Miri).
        drop(batch);
    }

    #[test]
    fn big_or_over_aligned_values_use_the_global_allocator() {
        #[repr(align(64))]
        struct Wide([u8; 64]);
        assert!(!is_small(Layout::new::<Wide>()));
        assert_eq!(Wide([1; 64]).0[63], 1);
        assert!(!is_small(Layout::new::<[u8; 1024]>()));
        let p = alloc_for::<Wide>();
        assert_eq!(p.as_ptr() as usize % 64, 0);
        // SAFETY: from `alloc_for::<Wide>`, once.
        unsafe { free_for(p) };
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use crate::loom::thread;

    /// The owner retires a chunk while two other threads free its envelopes: the chunk
    /// is freed exactly once, by whoever is last (loom would report the double free or
    /// leak of the model's atomic, and a use after free as a causality violation).
    #[test]
    fn last_of_owner_and_freers_frees_the_chunk() {
        loom::model(|| {
            let chunk = new_chunk();
            let addr = chunk as usize;
            let freers: Vec<_> = (0..2)
                .map(|_| {
                    thread::spawn(move || {
                        // SAFETY: each thread frees one of the owner's two envelopes.
                        unsafe { sub_live(addr as *mut ChunkHeader, 1) }
                    })
                })
                .collect();
            // The owner allocated two envelopes, then retires the chunk.
            // SAFETY: the owner's bias is still in `live`.
            unsafe { sub_live(chunk, BIAS - 2) };
            for f in freers {
                f.join().unwrap();
            }
        });
    }

    /// The same with the consumer's frees batched: one thread settles both envelopes
    /// with a single subtraction while the owner retires the chunk.
    #[test]
    fn a_batched_free_and_the_owner_free_the_chunk_once() {
        loom::model(|| {
            let chunk = new_chunk();
            let addr = chunk as usize;
            let consumer = thread::spawn(move || {
                let mut batch = FreeBatch::default();
                batch.chunk = addr as *mut ChunkHeader;
                batch.n = 2; // two envelopes of the chunk, freed and counted
                drop(batch);
            });
            // SAFETY: the owner's bias is still in `live`.
            unsafe { sub_live(chunk, BIAS - 2) };
            consumer.join().unwrap();
        });
    }
}
