//! The parallel sorts of [`ParallelSliceMut`](super::ParallelSliceMut): a sample sort,
//! one task per key range.
//!
//! 0. **Presorted?** A parallel scan finds slices already in order (done) or in reverse
//!    order (reversed in parallel; for a stable sort only if strictly descending).
//! 1. **Splitters.** Draw `32 × B` random elements, sort them and take every 32nd as one
//!    of `B − 1` splitters, dropping repeats (an element that fills more than about
//!    `1/B` of the slice becomes a single splitter). The chosen elements are swapped to
//!    the front of the slice, so the search below compares against consecutive elements
//!    of the slice itself (no copies, no indirection).
//! 2. **Classify** (parallel, by blocks). With `j` the number of splitters below an
//!    element, an element strictly between splitters `j − 1` and `j` goes to bucket
//!    `2j`, one *equal* to splitter `j` to bucket `2j + 1`. Equality buckets need no
//!    sorting, which keeps inputs with few distinct keys fast and parallel. The search is
//!    branch-free binary lifting over the splitters, padded to `2^L − 1` with the last.
//!    Each block counts its elements per bucket. Then the splitters' swaps are undone
//!    (the counts follow the elements that move), so every element is back where it
//!    was — which the stable sort needs.
//! 3. **Offsets.** Prefix sums over (bucket, block) in bucket-major order give every
//!    block one range of the scratch area per bucket.
//! 4. **Scatter** (parallel, by blocks): every element is moved (bitwise) to the next
//!    slot of its block's range for its bucket — within a bucket in the slice's order.
//! 5. **Buckets** (parallel, one job per bucket, the buckets shared out by size): move the
//!    bucket back to its final place in the slice, then sort it there (stably for a
//!    stable sort) unless it is an equality bucket.
//!
//! Invariant: bucket `b` precedes bucket `b + 1` in order, so the sorted buckets
//! concatenated are the sorted slice; the scatter keeps each bucket in the slice's
//! order, so equal elements keep their order when the buckets are sorted stably.
//!
//! # Moving elements without `Copy`, and panics
//!
//! From the scatter until a bucket's job has moved it back, its elements live in the
//! scratch area (`MaybeUninit`, never dropped) and the slice holds stale bits of
//! elements moved out. No user code runs in between: the scatter and the moves back are
//! plain copies, and each bucket's job moves its bucket back *before* it compares
//! anything. A comparison that panics therefore leaves every element in the slice
//! exactly once (`join` runs every job even when another panics, before re-raising), and
//! the stale bits are all overwritten. A comparison panicking during steps 0–2 finds the
//! elements in place (some splitters swapped to the front).

use std::cmp::Ordering;
use std::mem::MaybeUninit;

use super::{IndexedParallelIterator, IntoParallelIterator, ParallelIterator};
use super::{IntoParallelRefMutIterator, ParallelSlice, ParallelSliceMut};
use crate::runtime::{current_workers, in_worker, join};

/// Whether equal elements keep their order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Stability {
    Stable,
    Unstable,
}

/// At most this many distinct splitters, so bucket ids (`2j + 1 ≤ 255`) fit a byte.
const MAX_SPLITTERS: usize = 127;
/// Sampled elements per key range.
const OVERSAMPLE: usize = 32;
/// Classification blocks per worker: more balance better but cost `blocks × buckets`
/// scatter ranges.
const BLOCKS_PER_WORKER: usize = 4;
/// Elements checked between two looks at the presorted scan's early exit.
const PIECE: usize = 2048;
/// Seed of the splitter sample ("tutti" in ASCII).
const SEED: u64 = 0x0074_7574_7469;

/// How a sort is cut up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Tuning {
    /// Key ranges `B`, a power of two in `2..=128`.
    pub(crate) buckets: usize,
    /// Smallest classification block.
    pub(crate) min_block: usize,
    /// Slices shorter than this are sorted sequentially.
    pub(crate) sequential_below: usize,
}

impl Default for Tuning {
    fn default() -> Self {
        Tuning {
            buckets: 128,
            min_block: 1 << 14,
            sequential_below: 1 << 15,
        }
    }
}

impl Tuning {
    /// Takes the parallel path even for a handful of elements (tests).
    #[cfg(test)]
    pub(crate) fn tiny() -> Self {
        Tuning {
            buckets: 128,
            min_block: 1,
            sequential_below: 2,
        }
    }
}

/// The scratch area of a sample sort: a slot per element and a bucket id per element.
pub(crate) struct Workspace<T> {
    /// Always empty: only its spare capacity is used, as uninitialised slots.
    scratch: Vec<T>,
    ids: Vec<u8>,
}

impl<T> Workspace<T> {
    const fn new() -> Self {
        Workspace {
            scratch: Vec::new(),
            ids: Vec::new(),
        }
    }

    /// Scratch slots and ids for `n` elements; a buffer too short is replaced by a fresh
    /// one (freed first: fresh memory costs less than growing, which would copy).
    fn for_len(&mut self, n: usize) -> (&mut [MaybeUninit<T>], &mut [u8]) {
        if self.scratch.capacity() < n {
            self.scratch = Vec::new();
            self.scratch = Vec::with_capacity(n);
            advise_huge_pages(&mut self.scratch);
        }
        if self.ids.len() < n {
            self.ids = Vec::new();
            self.ids = vec![0; n];
        }
        (
            &mut self.scratch.spare_capacity_mut()[..n],
            &mut self.ids[..n],
        )
    }
}

/// Asks the kernel to back a large scratch area with huge pages: the area is written
/// once per sort, and faulting it in 4 KiB at a time costs as much as a pass over it.
/// Only a hint; where it does not apply nothing changes.
fn advise_huge_pages<T>(buffer: &mut Vec<T>) {
    #[cfg(target_os = "linux")]
    {
        const HUGE: usize = 2 << 20;
        let bytes = buffer.capacity() * std::mem::size_of::<T>();
        if bytes < 4 * HUGE {
            return;
        }
        let start = buffer.as_mut_ptr() as usize;
        let aligned = start.next_multiple_of(HUGE);
        let len = (start + bytes - aligned) / HUGE * HUGE;
        // SAFETY: `madvise` on whole pages inside our own allocation only changes how
        // the kernel backs them; `MADV_HUGEPAGE` never discards contents.
        unsafe {
            libc::madvise(aligned as *mut libc::c_void, len, libc::MADV_HUGEPAGE);
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = buffer;
}

/// Sorts `v` by `compare`: sequentially when it is short or the runtime has one worker,
/// else by the sample sort of the module docs on the current runtime.
pub(crate) fn sort_by<T, F>(
    v: &mut [T],
    compare: &F,
    stability: Stability,
    workspace: Option<(&mut Workspace<T>, Tuning)>,
) where
    T: Send + Sync,
    F: Fn(&T, &T) -> Ordering + Sync,
{
    let mut own = Workspace::new();
    let (workspace, tuning) = match workspace {
        Some(w) => w,
        None => (&mut own, Tuning::default()),
    };
    let n = v.len();
    if n < 2 {
        return;
    }
    if n < tuning.sequential_below.max(2) || current_workers() == 1 {
        match stability {
            Stability::Stable => v.sort_by(compare),
            Stability::Unstable => v.sort_unstable_by(compare),
        }
        return;
    }
    in_worker(|| sample_sort(v, compare, stability, workspace, tuning));
}

fn sample_sort<T, F>(
    v: &mut [T],
    compare: &F,
    stability: Stability,
    workspace: &mut Workspace<T>,
    tuning: Tuning,
) where
    T: Send + Sync,
    F: Fn(&T, &T) -> Ordering + Sync,
{
    let n = v.len();
    let blocks = current_workers() * BLOCKS_PER_WORKER;
    let block_len = n.div_ceil(blocks).max(tuning.min_block).max(1);

    // 0. Presorted?
    if is_ordered(v, |a, b| compare(a, b) != Ordering::Greater) {
        return;
    }
    let descending = match stability {
        Stability::Stable => is_ordered(v, |a, b| compare(a, b) == Ordering::Greater),
        Stability::Unstable => is_ordered(v, |a, b| compare(a, b) != Ordering::Less),
    };
    if descending {
        reverse(v, block_len);
        return;
    }

    // 1. Splitters, swapped to the front.
    let chosen = choose_splitters(v, compare, tuning.buckets);
    let m = chosen.len();
    let swaps = gather(v, &chosen);
    let levels = (m + 1).next_power_of_two().trailing_zeros();
    let buckets = 2usize << levels;

    // 2. Classify.
    let (scratch, ids) = workspace.for_len(n);
    let mut hists: Vec<[usize; 256]> = vec![[0; 256]; n.div_ceil(block_len)];
    {
        let keys: &[T] = v;
        let splitters = &keys[..m];
        keys.par_chunks(block_len)
            .zip(ids.par_chunks_mut(block_len))
            .zip(hists.par_iter_mut())
            .for_each(|((keys, ids), hist)| {
                classify(keys, splitters, levels, compare, ids, hist);
            });
    }
    for &(k, p) in swaps.iter().rev() {
        let (bk, bp) = (k / block_len, p / block_len);
        let (ik, ip) = (usize::from(ids[k]), usize::from(ids[p]));
        hists[bk][ik] -= 1;
        hists[bp][ik] += 1;
        hists[bp][ip] -= 1;
        hists[bk][ip] += 1;
        ids.swap(k, p);
        v.swap(k, p);
    }

    // 3. Offsets: where each (bucket, block) range starts in the scratch area.
    let mut bucket_start = vec![0usize; buckets + 1];
    let mut cursors: Vec<[usize; 256]> = vec![[0; 256]; hists.len()];
    let mut at = 0;
    for b in 0..buckets {
        bucket_start[b] = at;
        for (hist, cursor) in hists.iter().zip(&mut cursors) {
            cursor[b] = at;
            at += hist[b];
        }
    }
    bucket_start[buckets] = at;
    debug_assert_eq!(at, n);

    // 4. Scatter: from here until step 5 has moved every bucket back, the elements live
    //    in `scratch` (module docs).
    let to = Slots(scratch.as_mut_ptr().cast::<T>());
    {
        let keys: &[T] = v;
        let ids: &[u8] = ids;
        keys.par_chunks(block_len)
            .zip(ids.par_chunks(block_len))
            .zip(cursors.into_par_iter())
            .for_each(|((keys, ids), mut cursor)| {
                for (key, &b) in keys.iter().zip(ids) {
                    let slot = &mut cursor[usize::from(b)];
                    // SAFETY: the cursors of (bucket, block) pairs cut the scratch area
                    // into disjoint ranges sized by the histograms, so each slot is
                    // written once, by this block; the bits stay owned by the slice's
                    // element until step 5 overwrites the slice (module docs).
                    unsafe { std::ptr::copy_nonoverlapping(key, to.at(*slot), 1) };
                    *slot += 1;
                }
            });
    }

    // 5. Move each bucket back and sort it.
    let mut jobs: Vec<Bucket<'_, T>> = Vec::with_capacity(buckets);
    let mut rest: &mut [T] = v;
    let mut from: &[MaybeUninit<T>] = scratch;
    for b in 0..buckets {
        let len = bucket_start[b + 1] - bucket_start[b];
        let (dst, tail) = std::mem::take(&mut rest).split_at_mut(len);
        let (src, src_tail) = from.split_at(len);
        rest = tail;
        from = src_tail;
        if len > 0 {
            jobs.push(Bucket {
                src,
                dst,
                equal: b % 2 == 1,
            });
        }
    }
    let total: usize = jobs.iter().map(|j| j.dst.len()).sum();
    sort_buckets(&mut jobs, total, compare, stability);
}

/// A bucket: its elements in the scratch area, and its place in the slice (holding stale
/// bits until the job moves the elements back).
struct Bucket<'a, T> {
    src: &'a [MaybeUninit<T>],
    dst: &'a mut [T],
    /// Every element of it equals one splitter: no sorting needed.
    equal: bool,
}

/// Runs the bucket jobs in parallel, halving the list where it halves the elements; a
/// job is one bucket, so each moves its bucket back before any comparison (module docs).
fn sort_buckets<T, F>(jobs: &mut [Bucket<'_, T>], total: usize, compare: &F, stability: Stability)
where
    T: Send + Sync,
    F: Fn(&T, &T) -> Ordering + Sync,
{
    if let [job] = jobs {
        // SAFETY: `src` holds the bucket's elements, owned by the scratch area since the
        // scatter; `dst` has room for exactly them and holds only stale bits, which are
        // overwritten without being dropped. Afterwards the slice owns the elements.
        unsafe {
            std::ptr::copy_nonoverlapping(
                job.src.as_ptr().cast::<T>(),
                job.dst.as_mut_ptr(),
                job.dst.len(),
            );
        }
        if !job.equal {
            match stability {
                Stability::Stable => job.dst.sort_by(compare),
                Stability::Unstable => job.dst.sort_unstable_by(compare),
            }
        }
        return;
    }
    if jobs.is_empty() {
        return;
    }
    // The first job whose end passes half of the elements starts the right half (but
    // each half keeps at least one job).
    let mut seen = 0;
    let mut mid = jobs.len() - 1;
    for (i, job) in jobs.iter().enumerate().take(jobs.len() - 1) {
        seen += job.dst.len();
        if 2 * seen >= total {
            mid = i + 1;
            break;
        }
    }
    let left_total: usize = jobs[..mid].iter().map(|j| j.dst.len()).sum();
    let (left, right) = jobs.split_at_mut(mid);
    join(
        || sort_buckets(left, left_total, compare, stability),
        || sort_buckets(right, total - left_total, compare, stability),
    );
}

/// A raw pointer to the scratch slots, shared by the scatter's blocks.
struct Slots<T>(*mut T);

impl<T> Slots<T> {
    /// Slot `i`.
    ///
    /// # Safety
    /// `i` is within the scratch area.
    unsafe fn at(&self, i: usize) -> *mut T {
        // SAFETY: by the caller's contract.
        unsafe { self.0.add(i) }
    }
}

// SAFETY: the blocks write disjoint slots (see the scatter), so sharing the pointer is
// like sharing disjoint `&mut` parts of the area; the elements moved are `Send`.
unsafe impl<T: Send> Send for Slots<T> {}
// SAFETY: as above.
unsafe impl<T: Send> Sync for Slots<T> {}

/// Whether `ordered(a, b)` holds for every adjacent pair; pieces are checked in
/// parallel, and a failed piece stops the others.
fn is_ordered<T, F>(v: &[T], ordered: F) -> bool
where
    T: Sync,
    F: Fn(&T, &T) -> bool + Sync + Send,
{
    let pairs = v.len() - 1;
    (0..pairs.div_ceil(PIECE)).into_par_iter().all(|p| {
        // The piece's pairs; neighbouring pieces share an element.
        let piece = &v[p * PIECE..((p + 1) * PIECE + 1).min(v.len())];
        // No early exit inside a piece, so it compiles to straight-line code.
        piece[..piece.len() - 1]
            .iter()
            .zip(&piece[1..])
            .fold(true, |ok, (a, b)| ok & ordered(a, b))
    })
}

/// Reverses `v` in parallel: chunk `k` of the front half swaps with the mirror chunk `k`
/// from the back.
fn reverse<T: Send>(v: &mut [T], block_len: usize) {
    let half = v.len() / 2;
    let (front, rest) = v.split_at_mut(half);
    let back_start = rest.len() - half; // skips the middle element of an odd length
    let back = &mut rest[back_start..];
    let mut pairs: Vec<(&mut [T], &mut [T])> = front
        .chunks_mut(block_len)
        .zip(back.rchunks_mut(block_len))
        .collect();
    pairs.par_iter_mut().for_each(|(a, b)| {
        for (x, y) in a.iter_mut().zip(b.iter_mut().rev()) {
            std::mem::swap(x, y);
        }
    });
}

/// The positions of up to `buckets − 1` splitters (at most [`MAX_SPLITTERS`]), in
/// increasing order of their elements, no two equal.
fn choose_splitters<T, F>(v: &[T], compare: &F, buckets: usize) -> Vec<usize>
where
    F: Fn(&T, &T) -> Ordering,
{
    let ranges = buckets.clamp(2, MAX_SPLITTERS + 1).next_power_of_two();
    let mut rng = SplitMix(SEED ^ v.len() as u64);
    let n = v.len() as u64;
    let mut sample: Vec<usize> = (0..ranges * OVERSAMPLE)
        .map(|_| rng.below(n) as usize)
        .collect();
    sample.sort_unstable_by(|&a, &b| compare(&v[a], &v[b]));
    let mut chosen: Vec<usize> = Vec::with_capacity(ranges - 1);
    for i in 1..ranges {
        let p = sample[i * OVERSAMPLE];
        if chosen
            .last()
            .is_none_or(|&q| compare(&v[q], &v[p]) == Ordering::Less)
        {
            chosen.push(p);
        }
    }
    chosen
}

/// Swaps the elements at `positions` (distinct) to `v[..positions.len()]`, in order;
/// returns the swaps made, to undo them in reverse.
fn gather<T>(v: &mut [T], positions: &[usize]) -> Vec<(usize, usize)> {
    let mut at = positions.to_vec();
    let mut swaps = Vec::with_capacity(at.len());
    for k in 0..at.len() {
        let p = at[k];
        v.swap(k, p);
        swaps.push((k, p));
        // What sat at `k` is now at `p`: if it was a later splitter, follow it.
        for q in &mut at[k + 1..] {
            if *q == k {
                *q = p;
            }
        }
    }
    swaps
}

/// Fills `ids` with the bucket of each key and counts them in `hist`.
fn classify<T, F>(
    keys: &[T],
    splitters: &[T],
    levels: u32,
    compare: &F,
    ids: &mut [u8],
    hist: &mut [usize; 256],
) where
    F: Fn(&T, &T) -> Ordering,
{
    let s = Search { splitters, compare };
    match levels {
        1 => s.classify::<1>(keys, ids, hist),
        2 => s.classify::<2>(keys, ids, hist),
        3 => s.classify::<3>(keys, ids, hist),
        4 => s.classify::<4>(keys, ids, hist),
        5 => s.classify::<5>(keys, ids, hist),
        6 => s.classify::<6>(keys, ids, hist),
        _ => s.classify::<7>(keys, ids, hist),
    }
}

/// The splitters (sorted, distinct, at least one) and the order.
struct Search<'a, T, F> {
    splitters: &'a [T],
    compare: &'a F,
}

impl<T, F: Fn(&T, &T) -> Ordering> Search<'_, T, F> {
    /// The search depth is a constant so the loop unrolls; four lanes with their own
    /// counts keep a run of equal keys from serialising on one counter.
    fn classify<const L: u32>(&self, keys: &[T], ids: &mut [u8], hist: &mut [usize; 256]) {
        let mut lanes = [[0usize; 256]; 4];
        let mut key_quads = keys.chunks_exact(4);
        let mut id_quads = ids.chunks_exact_mut(4);
        for (k, i) in (&mut key_quads).zip(&mut id_quads) {
            for lane in 0..4 {
                let b = self.bucket::<L>(&k[lane]);
                i[lane] = b;
                lanes[lane][usize::from(b)] += 1;
            }
        }
        for (k, i) in key_quads.remainder().iter().zip(id_quads.into_remainder()) {
            let b = self.bucket::<L>(k);
            *i = b;
            lanes[0][usize::from(b)] += 1;
        }
        for (b, h) in hist.iter_mut().enumerate() {
            *h += lanes.iter().map(|lane| lane[b]).sum::<usize>();
        }
    }

    #[inline(always)]
    fn bucket<const L: u32>(&self, key: &T) -> u8 {
        // `j` = the number of splitters below `key`, by binary lifting over the
        // splitters padded to 2^L − 1 with the last one.
        let last = self.splitters.len() - 1;
        let mut j = 0usize;
        for level in (0..L).rev() {
            let step = 1usize << level;
            let s = &self.splitters[(j + step - 1).min(last)];
            j += step * usize::from((self.compare)(s, key) == Ordering::Less);
        }
        // `key <= splitter j` (if there is one): equal unless `key < splitter j`.
        let equal = j <= last && (self.compare)(key, &self.splitters[j]) != Ordering::Less;
        (2 * j + usize::from(equal)) as u8
    }
}

/// splitmix64: picks the sample (any fixed sequence of well-spread numbers will do).
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n > 0`), by multiply-shift.
    fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next()) * u128::from(n)) >> 64) as u64
    }
}

/// A parallel sorter that keeps its scratch area between sorts, for programs that sort
/// repeatedly (the slice methods of [`ParallelSliceMut`] allocate it per call).
///
/// The area holds one element slot and one byte per element of the longest slice
/// sorted so far; it is freed with the sorter.
///
/// ```
/// use tutti::par::Sorter;
///
/// let mut sorter = Sorter::new();
/// for round in 0..3u64 {
///     let mut v: Vec<u64> = (0..50_000).map(|i| (i * 7919 + round) % 50_021).collect();
///     sorter.sort_unstable(&mut v);
///     assert!(v.windows(2).all(|w| w[0] <= w[1]));
/// }
/// ```
pub struct Sorter<T> {
    workspace: Workspace<T>,
    tuning: Tuning,
}

impl<T> std::fmt::Debug for Sorter<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sorter")
            .field("buckets", &self.tuning.buckets)
            .field("capacity", &self.workspace.scratch.capacity())
            .finish()
    }
}

impl<T: Send + Sync> Default for Sorter<T> {
    fn default() -> Self {
        Sorter::new()
    }
}

impl<T: Send + Sync> Sorter<T> {
    /// A sorter with an empty scratch area and 128 key ranges.
    pub fn new() -> Self {
        Sorter {
            workspace: Workspace::new(),
            tuning: Tuning::default(),
        }
    }

    /// Cuts the keys into `ranges` ranges (clamped to `2..=128` and rounded up to a
    /// power of two); 128 is the default.
    ///
    /// ```
    /// let mut s = tutti::par::Sorter::new().key_ranges(16);
    /// let mut v: Vec<i32> = (0..100_000).rev().collect();
    /// v[7] = -1;
    /// s.sort(&mut v);
    /// assert!(v.windows(2).all(|w| w[0] <= w[1]));
    /// ```
    pub fn key_ranges(mut self, ranges: usize) -> Self {
        self.tuning.buckets = ranges.clamp(2, MAX_SPLITTERS + 1).next_power_of_two();
        self
    }

    /// The number of key ranges.
    ///
    /// ```
    /// assert_eq!(tutti::par::Sorter::<u8>::new().key_ranges(100).ranges(), 128);
    /// ```
    pub fn ranges(&self) -> usize {
        self.tuning.buckets
    }

    #[cfg(test)]
    pub(crate) fn with_tuning(tuning: Tuning) -> Self {
        Sorter {
            workspace: Workspace::new(),
            tuning,
        }
    }

    fn run<F>(&mut self, v: &mut [T], compare: &F, stability: Stability)
    where
        F: Fn(&T, &T) -> Ordering + Sync,
    {
        sort_by(
            v,
            compare,
            stability,
            Some((&mut self.workspace, self.tuning)),
        );
    }

    /// [`par_sort`](ParallelSliceMut::par_sort) with this sorter's scratch area.
    ///
    /// ```
    /// let mut v = vec![3, 1, 2];
    /// tutti::par::Sorter::new().sort(&mut v);
    /// assert_eq!(v, [1, 2, 3]);
    /// ```
    pub fn sort(&mut self, v: &mut [T])
    where
        T: Ord,
    {
        self.run(v, &T::cmp, Stability::Stable);
    }

    /// [`par_sort_unstable`](ParallelSliceMut::par_sort_unstable) with this sorter's
    /// scratch area.
    ///
    /// ```
    /// let mut v = vec![3, 1, 2];
    /// tutti::par::Sorter::new().sort_unstable(&mut v);
    /// assert_eq!(v, [1, 2, 3]);
    /// ```
    pub fn sort_unstable(&mut self, v: &mut [T])
    where
        T: Ord,
    {
        self.run(v, &T::cmp, Stability::Unstable);
    }

    /// [`par_sort_by`](ParallelSliceMut::par_sort_by) with this sorter's scratch area.
    ///
    /// ```
    /// let mut v = vec![1, 3, 2];
    /// tutti::par::Sorter::new().sort_by(&mut v, |a, b| b.cmp(a));
    /// assert_eq!(v, [3, 2, 1]);
    /// ```
    pub fn sort_by<F>(&mut self, v: &mut [T], compare: F)
    where
        F: Fn(&T, &T) -> Ordering + Sync,
    {
        self.run(v, &compare, Stability::Stable);
    }

    /// [`par_sort_unstable_by`](ParallelSliceMut::par_sort_unstable_by) with this
    /// sorter's scratch area.
    ///
    /// ```
    /// let mut v = vec![1, 3, 2];
    /// tutti::par::Sorter::new().sort_unstable_by(&mut v, |a, b| b.cmp(a));
    /// assert_eq!(v, [3, 2, 1]);
    /// ```
    pub fn sort_unstable_by<F>(&mut self, v: &mut [T], compare: F)
    where
        F: Fn(&T, &T) -> Ordering + Sync,
    {
        self.run(v, &compare, Stability::Unstable);
    }

    /// [`par_sort_by_key`](ParallelSliceMut::par_sort_by_key) with this sorter's scratch
    /// area.
    ///
    /// ```
    /// let mut v = vec![(1, 'x'), (0, 'y'), (1, 'z')];
    /// tutti::par::Sorter::new().sort_by_key(&mut v, |p| p.0);
    /// assert_eq!(v, [(0, 'y'), (1, 'x'), (1, 'z')]);
    /// ```
    pub fn sort_by_key<K, F>(&mut self, v: &mut [T], f: F)
    where
        K: Ord,
        F: Fn(&T) -> K + Sync,
    {
        self.run(v, &|a: &T, b: &T| f(a).cmp(&f(b)), Stability::Stable);
    }

    /// [`par_sort_unstable_by_key`](ParallelSliceMut::par_sort_unstable_by_key) with this
    /// sorter's scratch area.
    ///
    /// ```
    /// let mut v = vec![-3i32, 2, -1];
    /// tutti::par::Sorter::new().sort_unstable_by_key(&mut v, |x| x.abs());
    /// assert_eq!(v, [-1, 2, -3]);
    /// ```
    pub fn sort_unstable_by_key<K, F>(&mut self, v: &mut [T], f: F)
    where
        K: Ord,
        F: Fn(&T) -> K + Sync,
    {
        self.run(v, &|a: &T, b: &T| f(a).cmp(&f(b)), Stability::Unstable);
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn gather_then_undo_restores_the_order() {
        let original: Vec<u32> = (0..20).collect();
        for positions in [vec![3, 0, 1], vec![19, 2, 0, 5], vec![1, 0], vec![0]] {
            let mut v = original.clone();
            let swaps = gather(&mut v, &positions);
            let front: Vec<u32> = positions.iter().map(|&p| original[p]).collect();
            assert_eq!(&v[..positions.len()], &front[..], "{positions:?}");
            for &(k, p) in swaps.iter().rev() {
                v.swap(k, p);
            }
            assert_eq!(v, original);
        }
    }

    #[test]
    fn buckets_are_in_key_order() {
        let splitters = [10u64, 20, 30];
        let s = Search {
            splitters: &splitters,
            compare: &u64::cmp,
        };
        let ids: Vec<u8> = [0, 10, 15, 20, 25, 30, 31, u64::MAX]
            .iter()
            .map(|k| s.bucket::<2>(k))
            .collect();
        assert_eq!(ids, [0, 1, 2, 3, 4, 5, 6, 6]);
        let one = Search {
            splitters: &[7u64],
            compare: &u64::cmp,
        };
        let ids: Vec<u8> = [6, 7, 8].iter().map(|k| one.bucket::<1>(k)).collect();
        assert_eq!(ids, [0, 1, 2]);
    }
}
