//! A parallel sample sort on tutti's fork-join loops, one task per bucket.
//!
//! 0. **Presorted?** A parallel scan finds inputs that are already in
//!    ascending order (done) or in descending order (reversed in parallel).
//!    On other inputs every block stops at its first out-of-order pair.
//! 1. **Splitters.** Draw `oversample × B` random keys, sort them and take
//!    every `oversample`-th as one of `B − 1` splitters; drop repeats, so a
//!    key that fills more than about `1/B` of the input becomes a single
//!    splitter.
//! 2. **Classify** (parallel, one task per block of the input). Each key
//!    gets a bucket id by a branch-free search of the splitters: with `j`
//!    the number of splitters below the key, keys strictly between splitter
//!    `j − 1` and splitter `j` go to bucket `2j`, keys *equal* to splitter
//!    `j` go to bucket `2j + 1`. Odd buckets hold a single repeated key and
//!    need no sorting, which keeps few-unique and all-equal inputs parallel
//!    and fast. Each block counts its keys per bucket.
//!    If every key landed in an equality bucket (few distinct keys), the
//!    output is known from the counts alone: fill the buckets' ranges with
//!    their keys in parallel and stop.
//! 3. **Offsets.** Prefix sums over (bucket, block) in bucket-major order
//!    give every block one disjoint range of the scratch buffer per bucket.
//!    The buffer is split into those ranges up front with `split_at_mut`,
//!    so the parallel scatter needs no `unsafe`.
//! 4. **Scatter** (parallel, one task per block): every key is written to
//!    the next free slot of its block's range for its bucket.
//! 5. **Sort buckets** (parallel, one task per bucket): copy the bucket back
//!    to its final place in the input and `sort_unstable` it there, unless it
//!    is an equality bucket.
//!
//! Invariant: bucket `b` precedes bucket `b + 1` in key order, so the
//! concatenation of the sorted buckets is the sorted input.

use std::sync::atomic::{AtomicBool, Ordering};

/// At most this many distinct splitters, so bucket ids (`2j + 1 ≤ 255`)
/// fit in a byte.
const MAX_SPLITTERS: usize = 127;

/// Size of the padded splitter array; indices are masked with
/// `TREE_LEN − 1`, which lets the compiler drop bounds checks.
const TREE_LEN: usize = 256;

/// Tuning of [`sample_sort`].
#[derive(Clone, Debug)]
pub struct Config {
    /// Number of key ranges (`B`); rounded to a power of two in `2..=128`.
    pub buckets: usize,
    /// Sample keys per bucket.
    pub oversample: usize,
    /// Classification blocks per worker (more blocks balance better, but
    /// cost `blocks × buckets` scatter ranges).
    pub blocks_per_worker: usize,
    /// Smallest classification block.
    pub min_block: usize,
    /// Inputs shorter than this are sorted sequentially.
    pub sequential_below: usize,
    /// Worker count the block count is tuned for.
    pub workers: usize,
    /// Seed of the splitter sample.
    pub seed: u64,
}

impl Config {
    /// The tuned defaults for `workers` workers.
    pub fn for_workers(workers: usize) -> Config {
        Config {
            buckets: 128,
            oversample: 32,
            blocks_per_worker: 4,
            min_block: 1 << 14,
            sequential_below: 1 << 15,
            workers: workers.max(1),
            seed: 0x0074_7574_7469, // "tutti" in ASCII
        }
    }
}

/// Sorts `data` in parallel on the current tutti runtime (call it inside
/// `Runtime::install`), with a workspace allocated for this call.
pub fn sample_sort<T>(data: &mut [T], cfg: &Config)
where
    T: Ord + Copy + Send + Sync + Default,
{
    SampleSorter::new(cfg.clone()).sort(data);
}

/// A sample sorter that keeps its workspace (a scratch copy of the keys and
/// a bucket id per key) between calls, so sorting repeatedly does not pay
/// for fresh memory every time.
pub struct SampleSorter<T> {
    cfg: Config,
    scratch: Vec<T>,
    ids: Vec<u8>,
}

impl<T> SampleSorter<T>
where
    T: Ord + Copy + Send + Sync + Default,
{
    /// A sorter with an empty workspace.
    pub fn new(cfg: Config) -> SampleSorter<T> {
        SampleSorter {
            cfg,
            scratch: Vec::new(),
            ids: Vec::new(),
        }
    }

    /// Sorts `data` in parallel on the current tutti runtime (call it inside
    /// `Runtime::install`).
    pub fn sort(&mut self, data: &mut [T]) {
        let n = data.len();
        if n <= 1 {
            return;
        }
        if n < self.cfg.sequential_below {
            data.sort_unstable();
            return;
        }
        let cfg = &self.cfg;
        let blocks = (cfg.workers * cfg.blocks_per_worker).max(1);
        let block_len = n.div_ceil(blocks).max(cfg.min_block.max(1));
        if is_monotone(data, block_len, |a, b| a <= b) {
            return;
        }
        if is_monotone(data, block_len, |a, b| a >= b) {
            reverse(data, block_len);
            return;
        }
        sort_with(data, &mut self.scratch, &mut self.ids, block_len, cfg);
    }
}

/// `buf[..n]`, after replacing `buf` by a fresh zeroed buffer if it is
/// shorter (freed first: fresh memory is cheaper than growing, which would
/// copy and then fill).
fn workspace<U: Clone + Default>(buf: &mut Vec<U>, n: usize) -> &mut [U] {
    if buf.len() < n {
        *buf = Vec::new();
        *buf = vec![U::default(); n];
    }
    &mut buf[..n]
}

/// Keys checked between two looks at the shared "failed" flag.
const PIECE: usize = 2048;

/// Whether `ordered(a, b)` holds for every adjacent pair of `data`; blocks
/// are checked in parallel and stop at the first pair that fails.
fn is_monotone<T, F>(data: &[T], block_len: usize, ordered: F) -> bool
where
    T: Sync,
    F: Fn(&T, &T) -> bool + Sync + Send,
{
    let n = data.len();
    let failed = AtomicBool::new(false);
    tutti::par_for(0..n.div_ceil(block_len), 1, |i| {
        // Each block also checks the pair across its end.
        let block = &data[i * block_len..((i + 1) * block_len + 1).min(n)];
        // Pieces overlap by one key. Within a piece the check has no early
        // exit, so it compiles to straight-line (vectorizable) code; between
        // pieces it stops once any block has failed.
        for start in (0..block.len().saturating_sub(1)).step_by(PIECE) {
            let piece = &block[start..(start + PIECE + 1).min(block.len())];
            let ok = piece[..piece.len() - 1]
                .iter()
                .zip(&piece[1..])
                .fold(true, |ok, (a, b)| ok & ordered(a, b));
            if !ok {
                failed.store(true, Ordering::Relaxed);
            }
            if failed.load(Ordering::Relaxed) {
                return;
            }
        }
    });
    !failed.into_inner()
}

/// Reverses `data` in parallel: chunk `k` of the front half swaps with the
/// mirror chunk `k` from the back of the back half.
fn reverse<T: Send>(data: &mut [T], block_len: usize) {
    let half = data.len() / 2;
    let (front, rest) = data.split_at_mut(half);
    let back_start = rest.len() - half; // skips the middle key of an odd length
    let back = &mut rest[back_start..];
    let mut pairs: Vec<(&mut [T], &mut [T])> = front
        .chunks_mut(block_len)
        .zip(back.rchunks_mut(block_len))
        .collect();
    tutti::par_chunks_mut(&mut pairs, 1, |_, pairs| {
        for (a, b) in pairs {
            for (x, y) in a.iter_mut().zip(b.iter_mut().rev()) {
                std::mem::swap(x, y);
            }
        }
    });
}

/// Phases 1 to 5 of the module doc; `scratch` and `ids` are the reusable
/// workspace.
fn sort_with<T>(
    data: &mut [T],
    scratch: &mut Vec<T>,
    ids: &mut Vec<u8>,
    block_len: usize,
    cfg: &Config,
) where
    T: Ord + Copy + Send + Sync + Default,
{
    let n = data.len();
    let tree = Splitters::choose(data, cfg);
    let nb = tree.bucket_count();

    // Classify: a bucket id per key and a histogram per block.
    let ids = workspace(ids, n);
    let mut classify: Vec<ClassifyJob<'_, T>> = data
        .chunks(block_len)
        .zip(ids.chunks_mut(block_len))
        .map(|(keys, ids)| ClassifyJob {
            keys,
            ids,
            hist: vec![0; nb],
        })
        .collect();
    tutti::par_chunks_mut(&mut classify, 1, |_, jobs| {
        for job in jobs {
            tree.classify(job.keys, job.ids, &mut job.hist);
        }
    });
    let hists: Vec<Vec<usize>> = classify.into_iter().map(|j| j.hist).collect();
    let bucket_len: Vec<usize> = (0..nb).map(|b| hists.iter().map(|h| h[b]).sum()).collect();

    if bucket_len.iter().step_by(2).all(|&len| len == 0) {
        fill_equal_buckets(data, &bucket_len, &tree, block_len);
        return;
    }
    let scratch = workspace(scratch, n);

    // Offsets: cut the scratch buffer into (bucket, block) ranges.
    let mut targets: Vec<Vec<&mut [T]>> = hists.iter().map(|_| Vec::with_capacity(nb)).collect();
    let mut rest: &mut [T] = scratch;
    for b in 0..nb {
        for (hist, target) in hists.iter().zip(&mut targets) {
            let (range, tail) = std::mem::take(&mut rest).split_at_mut(hist[b]);
            target.push(range);
            rest = tail;
        }
    }
    debug_assert!(rest.is_empty());

    // Scatter each block into its ranges.
    let mut scatter: Vec<ScatterJob<'_, T>> = data
        .chunks(block_len)
        .zip(ids.chunks(block_len))
        .zip(targets)
        .map(|((keys, ids), targets)| ScatterJob { keys, ids, targets })
        .collect();
    tutti::par_chunks_mut(&mut scatter, 1, |_, jobs| {
        for job in jobs {
            job.run();
        }
    });
    drop(scatter);

    // Copy each bucket home and sort it, one task per non-empty bucket.
    let mut buckets: Vec<BucketJob<'_, T>> = Vec::with_capacity(nb);
    let (mut src, mut dst): (&[T], &mut [T]) = (scratch, data);
    for (b, &len) in bucket_len.iter().enumerate() {
        let (s, s_rest) = src.split_at(len);
        let (d, d_rest) = std::mem::take(&mut dst).split_at_mut(len);
        src = s_rest;
        dst = d_rest;
        if len > 0 {
            buckets.push(BucketJob {
                src: s,
                dst: d,
                equal: b % 2 == 1,
            });
        }
    }
    tutti::par_chunks_mut(&mut buckets, 1, |_, jobs| {
        for job in jobs {
            job.dst.copy_from_slice(job.src);
            if !job.equal {
                job.dst.sort_unstable();
            }
        }
    });
}

/// Writes the output when every key is equal to a splitter: bucket `2j + 1`
/// is splitter `j` repeated, and even buckets are empty. Pieces of at most
/// `block_len` keys are filled in parallel.
fn fill_equal_buckets<T>(
    data: &mut [T],
    bucket_len: &[usize],
    tree: &Splitters<T>,
    block_len: usize,
) where
    T: Ord + Copy + Send + Sync + Default,
{
    let mut pieces: Vec<(&mut [T], T)> = Vec::new();
    let mut rest = data;
    for (b, &len) in bucket_len.iter().enumerate() {
        let (range, tail) = std::mem::take(&mut rest).split_at_mut(len);
        rest = tail;
        if len > 0 {
            let key = tree.equal_key(b);
            pieces.extend(range.chunks_mut(block_len).map(|piece| (piece, key)));
        }
    }
    tutti::par_chunks_mut(&mut pieces, 1, |_, pieces| {
        for (piece, key) in pieces {
            piece.fill(*key);
        }
    });
}

/// The deduplicated splitters, padded to `2^levels − 1` entries with the
/// largest one (padding cannot change any key's bucket order: keys above
/// the largest splitter land in the last, empty-padded range).
struct Splitters<T> {
    tree: [T; TREE_LEN],
    levels: u32,
}

impl<T: Ord + Copy + Default> Splitters<T> {
    fn choose(data: &[T], cfg: &Config) -> Splitters<T> {
        let ranges = cfg.buckets.clamp(2, MAX_SPLITTERS + 1).next_power_of_two();
        let per = cfg.oversample.max(1);
        let size = ranges * per;
        let mut rng = crate::rng::Rng::new(cfg.seed);
        let n = data.len() as u64;
        let mut sample: Vec<T> = (0..size).map(|_| data[rng.below(n) as usize]).collect();
        sample.sort_unstable();
        let mut splitters: Vec<T> = (1..ranges).map(|i| sample[i * per]).collect();
        splitters.dedup();
        Splitters::from_sorted(&splitters)
    }

    /// `splitters` must be strictly increasing, 1 to 127 of them.
    fn from_sorted(splitters: &[T]) -> Splitters<T> {
        let m = splitters.len();
        assert!((1..=MAX_SPLITTERS).contains(&m));
        let levels = (m + 1).next_power_of_two().trailing_zeros();
        let mut tree = [splitters[m - 1]; TREE_LEN];
        tree[..m].copy_from_slice(splitters);
        Splitters { tree, levels }
    }

    /// The key of equality bucket `b` (odd): splitter `b / 2`.
    fn equal_key(&self, b: usize) -> T {
        self.tree[(b / 2) & (TREE_LEN - 1)]
    }

    /// Bucket ids run over `0..2^(levels+1)`.
    fn bucket_count(&self) -> usize {
        2 << self.levels
    }

    /// Fills `ids` with the bucket of each key and adds them up in `hist`.
    fn classify(&self, keys: &[T], ids: &mut [u8], hist: &mut [usize]) {
        match self.levels {
            1 => self.classify_with::<1>(keys, ids, hist),
            2 => self.classify_with::<2>(keys, ids, hist),
            3 => self.classify_with::<3>(keys, ids, hist),
            4 => self.classify_with::<4>(keys, ids, hist),
            5 => self.classify_with::<5>(keys, ids, hist),
            6 => self.classify_with::<6>(keys, ids, hist),
            _ => self.classify_with::<7>(keys, ids, hist),
        }
    }

    /// The search depth is a constant so the loop unrolls. Four lanes with
    /// their own histograms keep a run of equal keys from serializing on
    /// one counter.
    fn classify_with<const L: u32>(&self, keys: &[T], ids: &mut [u8], hist: &mut [usize]) {
        let mut lanes = [[0usize; TREE_LEN]; 4];
        let mut key_quads = keys.chunks_exact(4);
        let mut id_quads = ids.chunks_exact_mut(4);
        for (k, i) in (&mut key_quads).zip(&mut id_quads) {
            for lane in 0..4 {
                let b = self.bucket::<L>(k[lane]);
                i[lane] = b;
                lanes[lane][usize::from(b)] += 1;
            }
        }
        for (&k, i) in key_quads.remainder().iter().zip(id_quads.into_remainder()) {
            let b = self.bucket::<L>(k);
            *i = b;
            lanes[0][usize::from(b)] += 1;
        }
        for (b, h) in hist.iter_mut().enumerate() {
            *h += lanes.iter().map(|lane| lane[b]).sum::<usize>();
        }
    }

    #[inline(always)]
    fn bucket<const L: u32>(&self, key: T) -> u8 {
        // `j` = number of splitters below `key`, found by binary lifting
        // over the 2^L − 1 padded entries.
        let mut j = 0usize;
        for level in (0..L).rev() {
            let step = 1usize << level;
            j += step * usize::from(self.tree[(j + step - 1) & (TREE_LEN - 1)] < key);
        }
        let equal = usize::from(self.tree[j & (TREE_LEN - 1)] == key);
        (2 * j + equal) as u8
    }
}

struct ClassifyJob<'a, T> {
    keys: &'a [T],
    ids: &'a mut [u8],
    hist: Vec<usize>,
}

struct ScatterJob<'a, T> {
    keys: &'a [T],
    ids: &'a [u8],
    /// This block's range of the scratch buffer for every bucket, sized by
    /// its histogram.
    targets: Vec<&'a mut [T]>,
}

impl<T: Copy> ScatterJob<'_, T> {
    fn run(&mut self) {
        for (&key, &b) in self.keys.iter().zip(self.ids) {
            let slot = &mut self.targets[usize::from(b)];
            let (first, rest) = std::mem::take(slot)
                .split_first_mut()
                .expect("the histogram sized every range");
            *first = key;
            *slot = rest;
        }
    }
}

struct BucketJob<'a, T> {
    src: &'a [T],
    dst: &'a mut [T],
    /// An equality bucket: every key in it is the same.
    equal: bool,
}

#[cfg(test)]
mod tests {
    use super::super::data::{generate, verify, Dist, Fingerprint};
    use super::*;

    /// A configuration that takes the parallel path even for tiny inputs.
    fn tiny(workers: usize) -> Config {
        Config {
            min_block: 1,
            sequential_below: 0,
            ..Config::for_workers(workers)
        }
    }

    fn runtime() -> tutti::Runtime {
        tutti::Runtime::builder()
            .workers(2)
            .build()
            .expect("a 2-worker runtime")
    }

    fn check(rt: &tutti::Runtime, input: &[u64], cfg: &Config) {
        let fp = Fingerprint::of(input);
        let mut out = input.to_vec();
        rt.install(|| sample_sort(&mut out, cfg));
        assert!(verify(&out, &fp), "n={} cfg={cfg:?}", input.len());
        let mut expected = input.to_vec();
        expected.sort_unstable();
        assert_eq!(out, expected);
    }

    #[test]
    fn sorts_every_distribution_at_small_sizes() {
        let rt = runtime();
        for dist in Dist::ALL {
            // 0, 1, fewer keys than buckets, and a few thousand.
            for n in [0, 1, 2, 3, 7, 100, 127, 129, 1000, 5000] {
                let input = generate(dist, n, n as u64 + 1);
                check(&rt, &input, &tiny(2));
            }
        }
    }

    #[test]
    fn sorts_with_every_bucket_count() {
        let rt = runtime();
        let input = generate(Dist::Uniform, 3000, 4);
        for buckets in [2, 3, 4, 16, 64, 128, 1000] {
            let cfg = Config { buckets, ..tiny(2) };
            check(&rt, &input, &cfg);
        }
    }

    #[test]
    fn sorts_extreme_keys_and_default_config() {
        let rt = runtime();
        let mut input: Vec<u64> = (0..50_000u64).map(|i| i % 5).collect();
        input.extend([u64::MAX; 1000]);
        input.extend([0; 1000]);
        check(&rt, &input, &tiny(2));
        check(&rt, &input, &Config::for_workers(2));
        let few = generate(Dist::FewUnique, 100_000, 3);
        check(&rt, &few, &Config::for_workers(2));
    }

    #[test]
    fn presorted_and_nearly_presorted_inputs() {
        let rt = runtime();
        let ascending: Vec<u64> = (0..10_000).map(|i| i / 3).collect();
        let descending: Vec<u64> = ascending.iter().rev().copied().collect();
        for cfg in [tiny(2), Config::for_workers(2)] {
            check(&rt, &ascending, &cfg);
            check(&rt, &descending, &cfg);
            for odd in [9_999, 10_001] {
                let v: Vec<u64> = (0..odd).rev().collect();
                check(&rt, &v, &cfg);
            }
            // One pair out of place, at the start, in the middle, at the end.
            for at in [0, 5_000, 9_998] {
                let mut a = ascending.clone();
                a.swap(at, at + 1);
                a[at] += 1;
                check(&rt, &a, &cfg);
                let mut d = descending.clone();
                d.swap(at, at + 1);
                check(&rt, &d, &cfg);
            }
        }
    }

    #[test]
    fn few_distinct_keys_take_the_fill_path() {
        let rt = runtime();
        let input: Vec<u64> = (0..50_000u64).map(|i| (i * 7) % 3 * 1000).collect();
        let tree = Splitters::choose(&input, &tiny(2));
        assert!(input.iter().all(|&k| tree.bucket::<2>(k) % 2 == 1));
        check(&rt, &input, &tiny(2));
    }

    #[test]
    fn a_sorter_reuses_its_workspace_across_sizes() {
        let rt = runtime();
        let mut sorter = SampleSorter::new(tiny(2));
        for (n, dist) in [
            (4000, Dist::Uniform),
            (1000, Dist::FewUnique),
            (6000, Dist::Reverse),
            (1, Dist::Uniform),
            (6000, Dist::AllEqual),
        ] {
            let input = generate(dist, n, 11);
            let mut out = input.clone();
            rt.install(|| sorter.sort(&mut out));
            assert!(verify(&out, &Fingerprint::of(&input)), "{dist:?} n={n}");
        }
    }

    #[test]
    fn buckets_are_in_key_order() {
        let s = Splitters::from_sorted(&[10u64, 20, 30]);
        assert_eq!(s.levels, 2);
        assert_eq!(s.bucket_count(), 8);
        let ids: Vec<u8> = [0, 10, 15, 20, 25, 30, 31, u64::MAX]
            .iter()
            .map(|&k| s.bucket::<2>(k))
            .collect();
        assert_eq!(ids, [0, 1, 2, 3, 4, 5, 6, 6]);
        let one = Splitters::from_sorted(&[7u64]);
        assert_eq!(one.levels, 1);
        let ids: Vec<u8> = [6, 7, 8].iter().map(|&k| one.bucket::<1>(k)).collect();
        assert_eq!(ids, [0, 1, 2]);
    }

    #[test]
    fn generic_over_key_type() {
        let rt = runtime();
        let mut words: Vec<i32> = (0..10_000).map(|i| (i * 7919) % 1013 - 500).collect();
        let mut expected = words.clone();
        expected.sort_unstable();
        rt.install(|| sample_sort(&mut words, &tiny(2)));
        assert_eq!(words, expected);
    }
}
