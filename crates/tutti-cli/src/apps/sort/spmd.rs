//! The distributed sample sorts of `tutti sort` (Saunders 2003 §II.D), SPMD on a
//! `tutti::world::World`: one block of the input per location.
//!
//! Both pick the same splitters: every location draws [`OVERSAMPLE`] keys
//! of its block, the samples are gathered (an all-reduce that concatenates
//! them in location order) and every location takes every
//! [`OVERSAMPLE`]-th of them, sorted, as the `P - 1` splitters. Then:
//!
//! * [`rmi_sort`] — ARMI's version: one `async_rmi` per key to the location
//!   owning the key's bucket (the world's aggregation does the coarsening),
//!   a `fence`, and a local sort of the bucket;
//! * [`alltoall_sort`] — the seed's "hand-coded MPI" version on the world's
//!   messages: each location buffers its keys per destination and sends each
//!   destination one message, receives one from every location, and sorts.
//!
//! Every location then checks its bucket (sorted, in range of its
//! neighbours', and the multiset of all buckets equal to the input's via
//! [`Fingerprint`]) through one all-reduce, so the check works across ranks.
//! Each run is timed from a barrier to the end of the local sort; the time
//! reported is the slowest location's.

use std::sync::Arc;
use std::time::Instant;

use serde::{Deserialize, Serialize};
use tutti::msg::{Dispatch, Handler, Message, Object, RegistryError, Remote};
use tutti::rmi;
use tutti::world::{self, LocationId, World};

use super::data::{is_sorted, Fingerprint};
use crate::rng::Rng;

/// Samples each location draws from its block for the splitters.
pub const OVERSAMPLE: usize = 256;

/// The outcome of one run on one location: the slowest location's time, in
/// seconds, and whether the whole sorted output checked out.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Outcome {
    /// Seconds from the start barrier to the last location's sorted bucket.
    pub secs: f64,
    /// Whether the distributed output is sorted and a permutation of the input.
    pub ok: bool,
}

/// The block of `n` keys location `me` of `p` starts with.
pub fn block(n: usize, p: usize, me: usize) -> std::ops::Range<usize> {
    (n * me / p)..(n * (me + 1) / p)
}

/// This location's samples: [`OVERSAMPLE`] keys of `keys` drawn with `seed`
/// (none from an empty block).
fn samples(keys: &[u64], seed: u64, me: usize) -> Vec<u64> {
    if keys.is_empty() {
        return Vec::new();
    }
    let mut r = Rng::stream(seed, me as u64);
    (0..OVERSAMPLE)
        .map(|_| keys[r.below(keys.len() as u64) as usize])
        .collect()
}

/// The `p - 1` splitters from everyone's samples: every `len / p`-th sample
/// in sorted order.
pub fn splitters(mut all: Vec<u64>, p: usize) -> Vec<u64> {
    all.sort_unstable();
    if all.is_empty() {
        return Vec::new();
    }
    (1..p).map(|i| all[i * all.len() / p]).collect()
}

/// The bucket (location) of `key`: the number of splitters `<= key`, so that
/// equal keys share a bucket and bucket `i` holds keys below splitter `i`.
#[inline]
pub fn bucket_of(splitters: &[u64], key: u64) -> usize {
    splitters.partition_point(|&s| s <= key)
}

/// Words per location in the verification all-reduce.
const WORDS: usize = 7;

/// What one location contributes to the check of the whole output: its
/// slots in a vector of `WORDS * p` words that the all-reduce adds up.
fn contribution(bucket: &[u64], me: usize, p: usize) -> Vec<u64> {
    let mut v = vec![0u64; WORDS * p];
    let [len, sum, xor] = Fingerprint::of(bucket).words();
    let slot = &mut v[WORDS * me..WORDS * (me + 1)];
    slot[0] = len;
    slot[1] = sum;
    slot[2] = xor;
    slot[3] = u64::from(is_sorted(bucket));
    slot[4] = bucket.first().copied().unwrap_or(0);
    slot[5] = bucket.last().copied().unwrap_or(0);
    slot[6] = 1; // present
    v
}

/// Checks the summed contributions of every location against the input's
/// fingerprint: every bucket sorted, each non-empty bucket's keys at least
/// the previous non-empty bucket's last, and the union a permutation.
pub fn check(all: &[u64], p: usize, input: &Fingerprint) -> bool {
    if all.len() != WORDS * p {
        return false;
    }
    let mut fp = Fingerprint::from_words([0, 0, 0]);
    let mut prev_last: Option<u64> = None;
    for slot in all.chunks(WORDS) {
        if slot[6] != 1 || slot[3] != 1 {
            return false;
        }
        fp = fp.merge(Fingerprint::from_words([slot[0], slot[1], slot[2]]));
        if slot[0] > 0 {
            if prev_last.is_some_and(|l| l > slot[4]) {
                return false;
            }
            prev_last = Some(slot[5]);
        }
    }
    fp == *input
}

/// Element-wise wrapping sum (the verification all-reduce's operation).
fn add_words(mut a: Vec<u64>, b: Vec<u64>) -> Vec<u64> {
    for (x, y) in a.iter_mut().zip(b) {
        *x = x.wrapping_add(y);
    }
    a
}

/// The gathered samples turned into splitters, then the check and the
/// slowest time; shared by both versions.
async fn gather_splitters(w: &world::Location, mine: Vec<u64>, p: usize) -> Vec<u64> {
    let all = w
        .all_reduce(mine, |mut a, b| {
            a.extend(b);
            a
        })
        .await;
    splitters(all, p)
}

async fn finish(w: &world::Location, bucket: &[u64], secs: f64, input: Fingerprint) -> Outcome {
    let p = w.world().locations();
    let me = w.id().index();
    let secs = w.all_reduce(secs, f64::max).await;
    let all = w.all_reduce(contribution(bucket, me, p), add_words).await;
    Outcome {
        secs,
        ok: check(&all, p, &input),
    }
}

// ---- the RMI version ----

/// A location's bucket: the representative of the registered object.
#[derive(Default)]
struct Bucket {
    keys: Vec<u64>,
}

/// "Put this key into your bucket" (one per key).
#[derive(Serialize, Deserialize)]
pub struct Insert(pub u64);

impl Message for Insert {
    type Reply = ();
}

impl Remote for Insert {
    const NAME: &'static str = "tutti-cli.sort.Insert";
}

impl Object for Bucket {
    type Context = ();
    fn remote(table: &mut Dispatch<Self>) -> Result<(), RegistryError> {
        table.register::<Insert>()?;
        Ok(())
    }
}

impl Handler<Insert> for Bucket {
    async fn handle(&mut self, m: Insert, _: &mut ()) {
        self.keys.push(m.0);
    }
}

/// Sorts `input` with one `async_rmi` per key; `aggregation` overrides the
/// world's factor. Returns each local location's [`Outcome`] (all equal).
pub fn rmi_sort(
    world: &World,
    input: &Arc<Vec<u64>>,
    fingerprint: Fingerprint,
    seed: u64,
    aggregation: Option<usize>,
) -> Vec<Outcome> {
    let input = Arc::clone(input);
    rmi::run(world, move |mut loc| {
        let input = Arc::clone(&input);
        async move {
            if let Some(f) = aggregation {
                loc.set_aggregation(f);
            }
            let (me, p) = (loc.id(), loc.count());
            let expect = block(input.len(), p, me).len() + input.len() / p;
            let h = match loc
                .register(Bucket {
                    keys: Vec::with_capacity(expect),
                })
                .await
            {
                Ok(h) => h,
                Err(e) => panic!("sort: {e}"),
            };
            loc.barrier().await;
            let start = Instant::now();
            let keys = &input[block(input.len(), p, me)];
            let split = gather_splitters(loc.world(), samples(keys, seed, me), p).await;
            for &k in keys {
                loc.async_rmi(bucket_of(&split, k), &h, Insert(k)).await;
            }
            loc.fence().await;
            let mut bucket = loc.unregister(h).keys;
            bucket.sort_unstable();
            let secs = start.elapsed().as_secs_f64();
            finish(loc.world(), &bucket, secs, fingerprint).await
        }
    })
}

// ---- the all-to-all version ----

/// Sorts `input` by one message per pair of locations on the world's
/// point-to-point messages (typed within a rank, bytes across ranks).
pub fn alltoall_sort(
    world: &World,
    input: &Arc<Vec<u64>>,
    fingerprint: Fingerprint,
    seed: u64,
) -> Vec<Outcome> {
    let input = Arc::clone(input);
    world.run(move |loc| {
        let input = Arc::clone(&input);
        async move {
            let p = loc.world().locations();
            let me = loc.id().index();
            loc.barrier().await;
            let start = Instant::now();
            let keys = &input[block(input.len(), p, me)];
            let split = gather_splitters(&loc, samples(keys, seed, me), p).await;
            let mut counts = vec![0usize; p];
            for &k in keys {
                counts[bucket_of(&split, k)] += 1;
            }
            let mut out: Vec<Vec<u64>> = counts.iter().map(|&c| Vec::with_capacity(c)).collect();
            for &k in keys {
                out[bucket_of(&split, k)].push(k);
            }
            // One call for every destination: within the rank the keys move,
            // to another rank they are serialized and decoded on arrival.
            for (dest, keys) in out.into_iter().enumerate() {
                if let Err(e) = loc.send(LocationId::new(dest as u32), keys) {
                    panic!("sort alltoall: location {me} cannot send to {dest}: {e}");
                }
            }
            let mut bucket = Vec::new();
            for _ in 0..p {
                let mut d = loc.recv().await;
                match d.typed::<Vec<u64>>() {
                    Ok(keys) => bucket.extend_from_slice(&keys),
                    Err(e) => panic!("sort alltoall: {e}"),
                }
            }
            bucket.sort_unstable();
            let secs = start.elapsed().as_secs_f64();
            finish(&loc, &bucket, secs, fingerprint).await
        }
    })
}

#[cfg(test)]
mod tests {
    use super::super::data::{generate, Dist};
    use super::*;

    fn world(p: usize) -> World {
        crate::apps::test_world(p, tutti::world::DEFAULT_AGGREGATION_INPROC)
    }

    #[test]
    fn both_versions_sort_random_inputs() {
        for (dist, p, agg) in [
            (Dist::Uniform, 3, Some(16)),
            (Dist::FewUnique, 2, None),
            (Dist::AllEqual, 4, Some(1)),
            (Dist::Reverse, 1, None),
        ] {
            let input = Arc::new(generate(dist, 5003, 11));
            let fp = Fingerprint::of(&input);
            let w = world(p);
            for out in [
                rmi_sort(&w, &input, fp, 5, agg),
                alltoall_sort(&w, &input, fp, 5),
            ] {
                assert_eq!(out.len(), p);
                assert!(out.iter().all(|o| o.ok), "{dist:?} on {p}: {out:?}");
            }
        }
    }

    #[test]
    fn the_check_detects_wrong_outputs() {
        let p = 3;
        let mut keys = generate(Dist::Uniform, 300, 2);
        let fp = Fingerprint::of(&keys);
        keys.sort_unstable();
        let sum = |buckets: &[&[u64]]| {
            buckets
                .iter()
                .enumerate()
                .map(|(i, b)| contribution(b, i, p))
                .fold(vec![0; WORDS * p], add_words)
        };
        let good = sum(&[&keys[..100], &keys[100..200], &keys[200..]]);
        assert!(check(&good, p, &fp));
        // Buckets out of order.
        let swapped = sum(&[&keys[100..200], &keys[..100], &keys[200..]]);
        assert!(!check(&swapped, p, &fp));
        // A lost key.
        let lost = sum(&[&keys[..100], &keys[100..199], &keys[200..]]);
        assert!(!check(&lost, p, &fp));
        // An unsorted bucket.
        let mut bad = keys[100..200].to_vec();
        bad.swap(0, 50);
        let unsorted = sum(&[&keys[..100], &bad, &keys[200..]]);
        assert!(!check(&unsorted, p, &fp));
        // A location that did not report.
        let missing = sum(&[&keys[..100], &keys[100..200]]);
        assert!(!check(&missing, p, &fp));
    }

    #[test]
    fn splitters_and_buckets() {
        assert_eq!(splitters(vec![5, 1, 4, 2, 3, 6], 3), [3, 5]);
        assert_eq!(bucket_of(&[3, 5], 2), 0);
        assert_eq!(bucket_of(&[3, 5], 3), 1);
        assert_eq!(bucket_of(&[3, 5], 9), 2);
        assert_eq!(block(10, 3, 2), 6..10);
    }
}
