//! A small deterministic random number generator and a 64-bit hash mix.
//!
//! Benchmarks need reproducible inputs from a seed, not cryptographic
//! quality, so this is the SplitMix64 construction: a Weyl sequence (add an
//! odd constant) passed through a bijective finalizer. The same finalizer,
//! [`mix64`], is the hash used for order-independent fingerprints.

/// The golden-ratio increment of the Weyl sequence (odd, so the sequence
/// visits every 64-bit value once per period).
const GAMMA: u64 = 0x9e37_79b9_7f4a_7c15;

/// A bijective 64-bit mix: every output bit depends on every input bit.
#[inline]
pub fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A SplitMix64 generator.
#[derive(Clone, Debug)]
pub struct Rng {
    state: u64,
}

impl Rng {
    /// A generator seeded with `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng { state: seed }
    }

    /// A generator for stream number `stream` of `seed`, so that parallel
    /// chunks of one input get independent but reproducible sequences.
    pub fn stream(seed: u64, stream: u64) -> Rng {
        Rng::new(mix64(seed ^ mix64(stream.wrapping_add(GAMMA))))
    }

    /// The next 64 random bits.
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(GAMMA);
        mix64(self.state)
    }

    /// A value in `0..bound` (`bound` > 0), by multiply-shift: the bias is
    /// below 2^-32 for the bounds used here, irrelevant for benchmarks.
    #[inline]
    pub fn below(&mut self, bound: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(bound)) >> 64) as u64
    }

    /// A uniform value in `[0, 1)` with 53 random bits.
    #[inline]
    pub fn unit_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deterministic_per_seed_and_stream() {
        let a: Vec<u64> = (0..4)
            .map({
                let mut r = Rng::new(7);
                move |_| r.next_u64()
            })
            .collect();
        let mut r = Rng::new(7);
        let b: Vec<u64> = (0..4).map(|_| r.next_u64()).collect();
        assert_eq!(a, b);
        assert_ne!(Rng::stream(7, 0).next_u64(), Rng::stream(7, 1).next_u64());
    }

    #[test]
    fn below_and_unit_stay_in_range() {
        let mut r = Rng::new(1);
        for _ in 0..1000 {
            assert!(r.below(10) < 10);
            let u = r.unit_f64();
            assert!((0.0..1.0).contains(&u));
        }
    }
}
