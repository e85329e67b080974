//! Inputs for the sort command and the check of its outputs.
//!
//! Inputs are generated from a seed in fixed chunks, each chunk with its own
//! random stream, so the same `(dist, n, seed)` always gives the same data
//! whatever the machine. Outputs are checked for order and for being a
//! permutation of the input through an order-independent [`Fingerprint`].

use clap::ValueEnum;

use crate::rng::{mix64, Rng};

/// The key distributions of `tutti sort --dist`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Dist {
    /// Independent uniform 64-bit keys.
    Uniform,
    /// Normally distributed keys around 2^63 (σ = 2^58).
    Normal,
    /// Distinct keys in ascending order.
    Sorted,
    /// Distinct keys in descending order.
    Reverse,
    /// Keys drawn from 16 distinct values.
    FewUnique,
    /// One key repeated.
    AllEqual,
}

impl Dist {
    /// Every distribution, for tests.
    #[cfg(test)]
    pub const ALL: [Dist; 6] = [
        Dist::Uniform,
        Dist::Normal,
        Dist::Sorted,
        Dist::Reverse,
        Dist::FewUnique,
        Dist::AllEqual,
    ];

    /// The name used on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Dist::Uniform => "uniform",
            Dist::Normal => "normal",
            Dist::Sorted => "sorted",
            Dist::Reverse => "reverse",
            Dist::FewUnique => "few-unique",
            Dist::AllEqual => "all-equal",
        }
    }
}

/// Elements per generation chunk; each chunk has its own random stream.
const CHUNK: usize = 1 << 20;

/// Number of distinct values of [`Dist::FewUnique`].
const FEW: u64 = 16;

/// Generates `n` keys of distribution `dist` from `seed`, using plain
/// threads (generation is never timed and must not depend on the runtime
/// under test).
pub fn generate(dist: Dist, n: usize, seed: u64) -> Vec<u64> {
    let mut data = vec![0u64; n];
    let few: Vec<u64> = {
        let mut r = Rng::stream(seed, u64::MAX);
        (0..FEW).map(|_| r.next_u64()).collect()
    };
    // Sorted inputs are prefix sums of positive gaps, small enough that the
    // sum of n of them cannot overflow.
    let max_gap = (u64::MAX / (n as u64).max(1)).max(1);
    let fill = |index: usize, chunk: &mut [u64]| {
        let mut r = Rng::stream(seed, index as u64);
        match dist {
            Dist::Uniform => chunk.iter_mut().for_each(|x| *x = r.next_u64()),
            Dist::Normal => fill_normal(&mut r, chunk),
            Dist::Sorted | Dist::Reverse => {
                chunk.iter_mut().for_each(|x| *x = 1 + r.below(max_gap - 1))
            }
            Dist::FewUnique => chunk
                .iter_mut()
                .for_each(|x| *x = few[r.below(FEW) as usize]),
            Dist::AllEqual => chunk.fill(few[0]),
        }
    };
    let threads = std::thread::available_parallelism().map_or(1, |t| t.get());
    let chunks: Vec<(usize, &mut [u64])> = data.chunks_mut(CHUNK).enumerate().collect();
    let per_thread = chunks.len().div_ceil(threads).max(1);
    std::thread::scope(|s| {
        let mut chunks = chunks;
        while !chunks.is_empty() {
            let take = per_thread.min(chunks.len());
            let mine: Vec<_> = chunks.drain(..take).collect();
            let fill = &fill;
            s.spawn(move || mine.into_iter().for_each(|(i, c)| fill(i, c)));
        }
    });
    if matches!(dist, Dist::Sorted | Dist::Reverse) {
        let mut acc = 0u64;
        for x in data.iter_mut() {
            acc = acc.wrapping_add(*x);
            *x = acc;
        }
        if dist == Dist::Reverse {
            data.reverse();
        }
    }
    data
}

/// Box–Muller: two uniform draws give two independent standard normals.
fn fill_normal(r: &mut Rng, chunk: &mut [u64]) {
    const MEAN: f64 = 9_223_372_036_854_775_808.0; // 2^63
    const SIGMA: f64 = 288_230_376_151_711_744.0; // 2^58
    let to_key = |z: f64| (MEAN + SIGMA * z).clamp(0.0, u64::MAX as f64) as u64;
    for pair in chunk.chunks_mut(2) {
        let u1 = 1.0 - r.unit_f64(); // (0, 1], so ln is finite
        let u2 = r.unit_f64();
        let radius = (-2.0 * u1.ln()).sqrt();
        let angle = std::f64::consts::TAU * u2;
        pair[0] = to_key(radius * angle.cos());
        if let Some(second) = pair.get_mut(1) {
            *second = to_key(radius * angle.sin());
        }
    }
}

/// An order-independent summary of a multiset of keys: the length, and the
/// wrapping sum and the xor of a strong hash of every key. A permutation
/// keeps it; losing, duplicating or altering a key changes it (with
/// overwhelming probability).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fingerprint {
    len: usize,
    sum: u64,
    xor: u64,
}

impl Fingerprint {
    /// The fingerprint of `keys`.
    pub fn of(keys: &[u64]) -> Fingerprint {
        let (sum, xor) = keys.iter().fold((0u64, 0u64), |(s, x), &k| {
            // A second, differently seeded hash for the sum, so one key's
            // change cannot cancel in both words at once.
            (
                s.wrapping_add(mix64(k ^ 0x5851_f42d_4c95_7f2d)),
                x ^ mix64(k),
            )
        });
        Fingerprint {
            len: keys.len(),
            sum,
            xor,
        }
    }

    /// The fingerprint as three words (length, sum, xor), to travel in a
    /// reduction.
    pub fn words(&self) -> [u64; 3] {
        [self.len as u64, self.sum, self.xor]
    }

    /// The fingerprint whose [`words`](Self::words) are `w`.
    pub fn from_words(w: [u64; 3]) -> Fingerprint {
        Fingerprint {
            len: w[0] as usize,
            sum: w[1],
            xor: w[2],
        }
    }

    /// The fingerprint of the union of two multisets.
    pub fn merge(self, other: Fingerprint) -> Fingerprint {
        Fingerprint {
            len: self.len + other.len,
            sum: self.sum.wrapping_add(other.sum),
            xor: self.xor ^ other.xor,
        }
    }
}

/// Whether `keys` is in non-decreasing order.
pub fn is_sorted(keys: &[u64]) -> bool {
    keys.windows(2).all(|w| w[0] <= w[1])
}

/// Whether `output` is sorted and a permutation of the input whose
/// fingerprint is `input`.
pub fn verify(output: &[u64], input: &Fingerprint) -> bool {
    is_sorted(output) && Fingerprint::of(output) == *input
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generation_is_reproducible_and_shaped() {
        for dist in Dist::ALL {
            let a = generate(dist, 3000, 9);
            assert_eq!(a, generate(dist, 3000, 9), "{dist:?}");
            assert_eq!(a.len(), 3000);
        }
        let sorted = generate(Dist::Sorted, 5000, 1);
        assert!(sorted.windows(2).all(|w| w[0] < w[1]));
        let reverse = generate(Dist::Reverse, 5000, 1);
        assert!(reverse.windows(2).all(|w| w[0] > w[1]));
        let few = generate(Dist::FewUnique, 5000, 1);
        let mut distinct = few.clone();
        distinct.sort_unstable();
        distinct.dedup();
        assert!(distinct.len() <= FEW as usize && distinct.len() > 1);
        let equal = generate(Dist::AllEqual, 100, 1);
        assert!(equal.iter().all(|&x| x == equal[0]));
    }

    #[test]
    fn generation_spans_chunks() {
        let a = generate(Dist::Uniform, CHUNK + 10, 3);
        assert_ne!(a[0], a[CHUNK]);
    }

    #[test]
    fn fingerprint_detects_corruption() {
        let input = generate(Dist::Uniform, 1000, 5);
        let fp = Fingerprint::of(&input);
        let mut out = input.clone();
        out.sort_unstable();
        assert!(verify(&out, &fp));

        // A duplicated key in place of another keeps the order but not the
        // multiset.
        let mut dup = out.clone();
        dup[10] = dup[11];
        assert!(is_sorted(&dup));
        assert!(!verify(&dup, &fp));

        // A lost key.
        assert!(!verify(&out[1..], &fp));

        // Order broken.
        let mut swapped = out.clone();
        swapped.swap(0, 999);
        assert!(!verify(&swapped, &fp));
    }
}
