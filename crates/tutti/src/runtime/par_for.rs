//! Parallel loops with a block size (Blip's `pLoopArray`).
//!
//! The index range is cut into blocks of `grain` indices; blocks are split in
//! halves recursively with [`join`](super::join()), so thieves take the largest
//! remaining halves and a block is the smallest unit that one worker runs
//! sequentially.

use std::ops::Range;

use super::join::join;

/// Calls `f(i)` for every `i` in `range`, in parallel, in blocks of `grain`
/// consecutive indices (a `grain` of 0 is treated as 1).
///
/// ```
/// use std::sync::Mutex;
/// let sum = Mutex::new(0u64);
/// tutti::par_for(0..1000, 64, |i| *sum.lock().unwrap() += i as u64);
/// assert_eq!(sum.into_inner().unwrap(), 999 * 1000 / 2);
/// ```
pub fn par_for<F>(range: Range<usize>, grain: usize, f: F)
where
    F: Fn(usize) + Sync + Send,
{
    if range.is_empty() {
        return;
    }
    for_blocks(range, grain.max(1), &f);
}

fn for_blocks<F>(range: Range<usize>, grain: usize, f: &F)
where
    F: Fn(usize) + Sync,
{
    let len = range.end - range.start;
    if len <= grain {
        for i in range {
            f(i);
        }
        return;
    }
    let mid = range.start + (len.div_ceil(grain) / 2) * grain;
    join(
        || for_blocks(range.start..mid, grain, f),
        || for_blocks(mid..range.end, grain, f),
    );
}

/// Calls `f(offset, chunk)` for consecutive chunks of at most `grain`
/// elements of `slice`, in parallel; `offset` is the index of the chunk's
/// first element in `slice` (a `grain` of 0 is treated as 1).
///
/// ```
/// let mut v = vec![0usize; 10_000];
/// tutti::par_chunks_mut(&mut v, 1000, |offset, chunk| {
///     for (k, x) in chunk.iter_mut().enumerate() { *x = offset + k; }
/// });
/// assert!(v.iter().enumerate().all(|(i, &x)| i == x));
/// ```
pub fn par_chunks_mut<T, F>(slice: &mut [T], grain: usize, f: F)
where
    T: Send,
    F: Fn(usize, &mut [T]) + Sync + Send,
{
    if slice.is_empty() {
        return;
    }
    chunks(slice, 0, grain.max(1), &f);
}

fn chunks<T, F>(slice: &mut [T], offset: usize, grain: usize, f: &F)
where
    T: Send,
    F: Fn(usize, &mut [T]) + Sync,
{
    let len = slice.len();
    if len <= grain {
        f(offset, slice);
        return;
    }
    let mid = (len.div_ceil(grain) / 2) * grain;
    let (lo, hi) = slice.split_at_mut(mid);
    join(
        || chunks(lo, offset, grain, f),
        || chunks(hi, offset + mid, grain, f),
    );
}
