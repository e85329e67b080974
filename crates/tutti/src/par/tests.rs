//! The parallel iterators and sorts against the sequential iterator and std's sorts, on
//! many shapes (proptest), on empty and one-element inputs, with panics, nested in the
//! runtime's other forms of parallelism, and from plain threads and workers.

use crate::loom::{AtomicUsize, Ordering::Relaxed};
use std::cmp::Ordering;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, OnceLock};

use proptest::prelude::*;

use super::prelude::*;
use super::sort::Tuning;
use super::Sorter;
use crate::Runtime;

/// Three workers: more interleavings than two, and the parallel sort path (one worker
/// sorts sequentially).
fn rt() -> &'static Runtime {
    static RT: OnceLock<Runtime> = OnceLock::new();
    RT.get_or_init(|| Runtime::builder().workers(3).build().unwrap())
}

fn cases() -> ProptestConfig {
    ProptestConfig {
        cases: 48,
        ..ProptestConfig::default()
    }
}

/// Every adaptor and consumer on `v`, against the sequential iterator.
fn check_all(v: &[i64]) {
    let seq_sum: i64 = v
        .iter()
        .map(|x| x.wrapping_mul(3))
        .fold(0, i64::wrapping_add);
    assert_eq!(
        v.par_iter()
            .map(|x| x.wrapping_mul(3))
            .reduce(|| 0, i64::wrapping_add),
        seq_sum
    );
    let small: Vec<i32> = v.iter().map(|&x| (x % 1000) as i32).collect();
    assert_eq!(
        small.par_iter().sum::<i32>(),
        small.iter().sum::<i32>(),
        "sum"
    );
    assert_eq!(
        small.par_iter().map(|&x| i64::from(x % 3)).product::<i64>(),
        small.iter().map(|&x| i64::from(x % 3)).product::<i64>()
    );
    assert_eq!(
        v.par_iter().map(|x| x / 2).collect::<Vec<_>>(),
        v.iter().map(|x| x / 2).collect::<Vec<_>>(),
        "map + collect"
    );
    assert_eq!(
        v.par_iter().filter(|x| *x % 3 == 0).collect::<Vec<_>>(),
        v.iter().filter(|x| *x % 3 == 0).collect::<Vec<_>>(),
        "filter + collect"
    );
    assert_eq!(
        v.par_iter().filter(|x| *x % 3 == 0).count(),
        v.iter().filter(|x| *x % 3 == 0).count()
    );
    assert_eq!(
        v.par_iter()
            .filter_map(|&x| (x % 2 == 0).then_some(x * 2))
            .collect::<Vec<_>>(),
        v.iter()
            .filter_map(|&x| (x % 2 == 0).then_some(x * 2))
            .collect::<Vec<_>>()
    );
    assert_eq!(
        v.par_iter()
            .flat_map_iter(|&x| (0..(x.rem_euclid(4))).map(move |k| x + k))
            .collect::<Vec<_>>(),
        v.iter()
            .flat_map(|&x| (0..(x.rem_euclid(4))).map(move |k| x + k))
            .collect::<Vec<_>>()
    );
    assert_eq!(
        v.par_iter().copied().enumerate().collect::<Vec<_>>(),
        v.iter().copied().enumerate().collect::<Vec<_>>()
    );
    // Zip with a shorter and a longer side.
    let half = &v[..v.len() / 2];
    assert_eq!(
        v.par_iter()
            .zip(half)
            .map(|(a, b)| a - b)
            .collect::<Vec<_>>(),
        v.iter().zip(half).map(|(a, b)| a - b).collect::<Vec<_>>()
    );
    assert_eq!(
        half.par_iter().zip(v.par_iter()).collect::<Vec<_>>(),
        half.iter().zip(v.iter()).collect::<Vec<_>>()
    );
    for size in [1, 3, 64] {
        assert_eq!(
            v.par_iter().copied().chunks(size).collect::<Vec<_>>(),
            v.chunks(size).map(<[i64]>::to_vec).collect::<Vec<_>>()
        );
        assert_eq!(
            v.par_chunks(size).map(|c| c.len()).collect::<Vec<_>>(),
            v.chunks(size).map(|c| c.len()).collect::<Vec<_>>()
        );
    }
    assert_eq!(
        v.par_iter().cloned().with_min_len(7).collect::<Vec<_>>(),
        v.to_vec()
    );
    let hist = v
        .par_iter()
        .fold(
            || [0usize; 5],
            |mut h, x| {
                h[x.rem_euclid(5) as usize] += 1;
                h
            },
        )
        .reduce(|| [0; 5], |a, b| std::array::from_fn(|i| a[i] + b[i]));
    let mut seq_hist = [0usize; 5];
    v.iter()
        .for_each(|x| seq_hist[x.rem_euclid(5) as usize] += 1);
    assert_eq!(hist, seq_hist);
    // Ties: (key, position) tells which of equal keys was returned.
    let keyed: Vec<(i64, usize)> = v.iter().map(|&x| x % 7).zip(0..).collect();
    assert_eq!(
        keyed.par_iter().min_by_key(|p| p.0),
        keyed.iter().min_by_key(|p| p.0)
    );
    assert_eq!(
        keyed.par_iter().max_by_key(|p| p.0),
        keyed.iter().max_by_key(|p| p.0)
    );
    assert_eq!(
        keyed.par_iter().min_by(|a, b| a.0.cmp(&b.0)),
        keyed.iter().min_by(|a, b| a.0.cmp(&b.0))
    );
    assert_eq!(
        keyed.par_iter().max_by(|a, b| a.0.cmp(&b.0)),
        keyed.iter().max_by(|a, b| a.0.cmp(&b.0))
    );
    assert_eq!(v.par_iter().min(), v.iter().min());
    assert_eq!(v.par_iter().max(), v.iter().max());
    assert_eq!(
        v.par_iter()
            .map(|x| x.to_string())
            .reduce_with(|a, b| a + &b),
        v.iter().map(|x| x.to_string()).reduce(|a, b| a + &b)
    );
    assert_eq!(
        v.par_iter().any(|&x| x % 11 == 5),
        v.iter().any(|&x| x % 11 == 5)
    );
    assert_eq!(
        v.par_iter().all(|&x| x % 11 != 5),
        v.iter().all(|&x| x % 11 != 5)
    );
    match v.par_iter().find_any(|&&x| x % 13 == 1) {
        Some(x) => assert_eq!(x % 13, 1),
        None => assert!(!v.iter().any(|&x| x % 13 == 1)),
    }
    let (a, b): (Vec<i64>, Vec<usize>) = keyed.par_iter().copied().unzip();
    assert_eq!((a, b), keyed.iter().copied().unzip());
    let (a, b): (Vec<i64>, Vec<i64>) = v.par_iter().filter(|x| **x != 0).map(|&x| (x, -x)).unzip();
    assert_eq!(
        (a, b),
        v.iter().filter(|x| **x != 0).map(|&x| (x, -x)).unzip()
    );
    assert_eq!(
        v.par_iter().partition(|x| **x > 0),
        v.iter().partition::<Vec<_>, _>(|x| **x > 0)
    );
    let mut out = vec![1, 2, 3];
    v.par_iter().map(|x| x + 1).collect_into_vec(&mut out);
    assert_eq!(out, v.iter().map(|x| x + 1).collect::<Vec<_>>());
    // Owned items and mutable references.
    let strings: Vec<String> = v.iter().map(|x| x.to_string()).collect();
    assert_eq!(
        strings
            .clone()
            .into_par_iter()
            .map(|s| s.len())
            .collect::<Vec<_>>(),
        strings.iter().map(String::len).collect::<Vec<_>>()
    );
    let mut w = v.to_vec();
    w.par_iter_mut().for_each(|x| *x = x.wrapping_neg());
    assert_eq!(w, v.iter().map(|x| x.wrapping_neg()).collect::<Vec<_>>());
    let mut w = v.to_vec();
    w.par_chunks_mut(5)
        .enumerate()
        .for_each(|(i, c)| c.iter_mut().for_each(|x| *x = i as i64));
    assert_eq!(w, (0..v.len()).map(|i| (i / 5) as i64).collect::<Vec<_>>());
}

proptest! {
    #![proptest_config(cases())]

    #[test]
    fn adaptors_and_consumers_match_the_sequential_iterator(
        v in proptest::collection::vec(-1000i64..1000, 0..3000)
    ) {
        rt().install(|| check_all(&v));
    }

    #[test]
    fn ranges_match_the_sequential_iterator(start in -300i32..300, len in 0u32..3000) {
        let end = start + len as i32;
        let par: Vec<i32> = rt().install(|| (start..end).into_par_iter().collect());
        prop_assert_eq!(par, (start..end).collect::<Vec<_>>());
        let par: i64 = rt().install(|| (start..=end).into_par_iter().map(i64::from).sum());
        prop_assert_eq!(par, (start..=end).map(i64::from).sum::<i64>());
        prop_assert_eq!((start..end).into_par_iter().len(), len as usize);
    }

    #[test]
    fn sorts_match_std(v in proptest::collection::vec(0u16..300, 0..3000)) {
        let keyed: Vec<(u16, usize)> = v.iter().copied().zip(0..).collect();
        rt().install(|| {
            for tuning in [Tuning::tiny(), Tuning { buckets: 4, ..Tuning::tiny() }, Tuning::default()] {
                let mut expected = keyed.clone();
                expected.sort_by_key(|p| p.0);
                let mut got = keyed.clone();
                Sorter::with_tuning(tuning).sort_by_key(&mut got, |p| p.0);
                assert_eq!(got, expected, "stable by key, {tuning:?}");
                let mut got = keyed.clone();
                Sorter::with_tuning(tuning).sort_by(&mut got, |a, b| b.0.cmp(&a.0));
                expected.sort_by_key(|p| std::cmp::Reverse(p.0));
                assert_eq!(got, expected, "stable by, {tuning:?}");
                let mut got = v.clone();
                Sorter::with_tuning(tuning).sort_unstable(&mut got);
                let mut sorted = v.clone();
                sorted.sort_unstable();
                assert_eq!(got, sorted, "unstable, {tuning:?}");
            }
        });
        let mut got = v.clone();
        got.par_sort_unstable();
        let mut sorted = v.clone();
        sorted.sort_unstable();
        prop_assert_eq!(got, sorted);
    }
}

#[test]
fn empty_and_one_element_inputs() {
    rt().install(|| {
        let empty: Vec<u32> = Vec::new();
        assert_eq!(empty.par_iter().sum::<u32>(), 0);
        assert_eq!(empty.par_iter().min(), None);
        assert_eq!(empty.par_iter().map(|x| x + 1).collect::<Vec<_>>(), empty);
        assert_eq!(empty.par_iter().filter(|_| true).count(), 0);
        assert_eq!(empty.par_iter().find_any(|_| true), None);
        assert!(empty.par_iter().all(|_| false));
        assert!(!empty.par_iter().any(|_| true));
        assert_eq!(empty.par_iter().reduce_with(|a, _| a), None);
        assert_eq!(empty.par_iter().copied().chunks(3).count(), 0);
        assert_eq!((5..5u64).into_par_iter().count(), 0);
        let (hi, lo) = (5u64, 3u64);
        assert_eq!((hi..lo).into_par_iter().count(), 0);
        assert_eq!((hi as u8..=lo as u8).into_par_iter().count(), 0);
        let (a, b): (Vec<u8>, Vec<u8>) = Vec::<(u8, u8)>::new().into_par_iter().unzip();
        assert!(a.is_empty() && b.is_empty());
        let mut e: Vec<u8> = Vec::new();
        e.par_sort();
        e.par_sort_unstable();

        let one = vec![7u32];
        assert_eq!(one.par_iter().sum::<u32>(), 7);
        assert_eq!(one.par_iter().max(), Some(&7));
        assert_eq!(
            one.par_iter().copied().enumerate().collect::<Vec<_>>(),
            [(0, 7)]
        );
        assert_eq!(one.clone().into_par_iter().collect::<Vec<_>>(), one);
        assert_eq!(one.par_iter().find_any(|&&x| x == 7), Some(&7));
        let mut o = one.clone();
        o.par_sort_by_key(|x| *x);
        assert_eq!(o, one);
    });
}

#[test]
fn full_width_ranges() {
    let all: Vec<u8> = (0..=255u8).into_par_iter().collect();
    assert_eq!(all, (0..=255u8).collect::<Vec<_>>());
    let all: Vec<i8> = (i8::MIN..=i8::MAX).into_par_iter().collect();
    assert_eq!(all, (i8::MIN..=i8::MAX).collect::<Vec<_>>());
    let top: Vec<u64> = (u64::MAX - 3..=u64::MAX).into_par_iter().collect();
    assert_eq!(top, [u64::MAX - 3, u64::MAX - 2, u64::MAX - 1, u64::MAX]);
    let s: i128 = (i64::MIN..i64::MIN + 1000)
        .into_par_iter()
        .map(i128::from)
        .sum();
    assert_eq!(s, (i64::MIN..i64::MIN + 1000).map(i128::from).sum());
    let too_long = catch_unwind(|| (0..=u64::MAX).into_par_iter());
    let message = too_long.unwrap_err();
    assert!(crate::runtime::payload_text(&*message).contains("more than usize::MAX"));
}

/// Counts the drops of its values, to catch leaks and double drops.
struct Counted(Arc<AtomicUsize>, u32);

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.fetch_add(1, Relaxed);
    }
}

#[test]
fn a_panic_propagates_and_owned_items_are_dropped_once() {
    for at in [0u32, 1, 500, 999] {
        let drops = Arc::new(AtomicUsize::new(0));
        let v: Vec<Counted> = (0..1000).map(|i| Counted(drops.clone(), i)).collect();
        let r = catch_unwind(AssertUnwindSafe(|| {
            rt().install(|| {
                v.into_par_iter()
                    .map(|c| {
                        assert!(c.1 != at, "boom at {at}");
                        c
                    })
                    .collect::<Vec<_>>()
            })
        }));
        let payload = r.err().expect("the panic reached the caller");
        assert_eq!(
            crate::runtime::payload_text(&*payload),
            format!("boom at {at}")
        );
        assert_eq!(drops.load(Relaxed), 1000, "every item dropped exactly once");
    }
    // A panic in an inexact pipeline, and in a reducing consumer.
    let drops = Arc::new(AtomicUsize::new(0));
    let v: Vec<Counted> = (0..1000).map(|i| Counted(drops.clone(), i)).collect();
    let r = catch_unwind(AssertUnwindSafe(|| {
        v.into_par_iter()
            .filter(|c| {
                assert!(c.1 != 777, "filter boom");
                true
            })
            .collect::<Vec<_>>()
    }));
    assert!(r.is_err());
    assert_eq!(drops.load(Relaxed), 1000);
    let r = catch_unwind(|| {
        (0..10_000u32)
            .into_par_iter()
            .map(|x| 100 / (x as i32 - 4321))
            .sum::<i32>()
    });
    assert!(r.is_err());
}

#[test]
fn a_find_any_that_stops_early_drops_the_rest() {
    let drops = Arc::new(AtomicUsize::new(0));
    let v: Vec<Counted> = (0..10_000).map(|i| Counted(drops.clone(), i)).collect();
    let found = rt().install(|| v.into_par_iter().find_any(|c| c.1 % 1000 == 3));
    assert_eq!(found.as_ref().map(|c| c.1 % 1000), Some(3));
    drop(found);
    assert_eq!(drops.load(Relaxed), 10_000);
}

#[test]
fn a_panicking_comparison_leaves_every_element_in_place_once() {
    let keys: Vec<u32> = (0..20_000u32)
        .map(|i| i.wrapping_mul(2_654_435_761) % 50_000)
        .collect();
    // About the number of comparisons a whole sort makes (it varies a little with how
    // the work was shared out, so the last panic comes well before the end).
    let total = AtomicUsize::new(0);
    let mut dry = keys.clone();
    rt().install(|| {
        Sorter::with_tuning(Tuning::tiny()).sort_by(&mut dry, |a, b| {
            total.fetch_add(1, Relaxed);
            a.cmp(b)
        })
    });
    let total = total.into_inner();
    // Early (choosing splitters, classifying) and late (sorting the buckets).
    for at in [10, total / 2, total * 3 / 4] {
        let drops = Arc::new(AtomicUsize::new(0));
        let calls = AtomicUsize::new(0);
        let mut v: Vec<Counted> = keys.iter().map(|&k| Counted(drops.clone(), k)).collect();
        let r = catch_unwind(AssertUnwindSafe(|| {
            rt().install(|| {
                Sorter::with_tuning(Tuning::tiny()).sort_by(&mut v, |a, b| {
                    assert!(calls.fetch_add(1, Relaxed) != at, "comparison boom");
                    a.1.cmp(&b.1)
                })
            })
        }));
        assert!(r.is_err(), "the comparison {at} of {total} panicked");
        assert_eq!(drops.load(Relaxed), 0, "nothing dropped while sorting");
        let mut left: Vec<u32> = v.iter().map(|c| c.1).collect();
        left.sort_unstable();
        let mut expected = keys.clone();
        expected.sort_unstable();
        assert_eq!(left, expected, "every element is still there exactly once");
        drop(v);
        assert_eq!(drops.load(Relaxed), 20_000);
    }
}

#[test]
fn sorts_of_owned_values_and_presorted_inputs() {
    rt().install(|| {
        let mut words: Vec<String> = (0..50_000u32)
            .map(|i| format!("w{}", i.wrapping_mul(2_654_435_761) % 7919))
            .collect();
        let mut expected = words.clone();
        expected.sort();
        Sorter::with_tuning(Tuning::tiny()).sort(&mut words);
        assert_eq!(words, expected);
        for n in [100_000usize, 100_001] {
            let ascending: Vec<u32> = (0..n as u32).map(|i| i / 3).collect();
            let mut v = ascending.clone();
            v.par_sort_unstable();
            assert_eq!(v, ascending);
            v.reverse();
            v.par_sort_unstable();
            assert_eq!(v, ascending);
            // Descending with ties: the stable sort must not just reverse it.
            let mut pairs: Vec<(u32, usize)> = ascending.iter().rev().copied().zip(0..).collect();
            let mut expected = pairs.clone();
            expected.sort_by_key(|p| p.0);
            pairs.par_sort_by_key(|p| p.0);
            assert_eq!(pairs, expected);
        }
        // Few distinct keys: all in equality buckets.
        let mut few: Vec<u64> = (0..200_000u64).map(|i| (i * 7) % 3 * 1000).collect();
        let mut expected = few.clone();
        expected.sort_unstable();
        few.par_sort_unstable();
        assert_eq!(few, expected);
        let mut floats: Vec<f64> = (0..100_000)
            .map(|i| ((i * 7919) % 1000) as f64 / 7.0)
            .collect();
        let mut expected = floats.clone();
        expected.sort_by(f64::total_cmp);
        floats.par_sort_unstable_by(f64::total_cmp);
        assert_eq!(floats, expected);
    });
}

#[test]
fn a_sorter_reuses_its_scratch_area_across_sizes() {
    let mut sorter = Sorter::with_tuning(Tuning::tiny());
    for n in [4000usize, 1000, 6000, 1, 0, 6000] {
        let mut v: Vec<u64> = (0..n as u64)
            .map(|i| i.wrapping_mul(0x9E37_79B9) % 977)
            .collect();
        let mut expected = v.clone();
        expected.sort_unstable();
        rt().install(|| sorter.sort_unstable(&mut v));
        assert_eq!(v, expected, "n={n}");
    }
}

#[test]
fn pieces_adapt_to_the_workers_not_to_the_items() {
    // Each piece of a `fold` yields one accumulator: counting them counts the pieces.
    let pieces = rt().install(|| {
        (0..10_000_000u64)
            .into_par_iter()
            .fold(|| (), |(), _| ())
            .count()
    });
    assert!(
        (2..=4096).contains(&pieces),
        "{pieces} pieces for 10^7 items on 3 workers"
    );
    let pieces = (0..10_000u64)
        .into_par_iter()
        .with_min_len(5000)
        .fold(|| (), |(), _| ())
        .count();
    assert!(
        pieces <= 2,
        "{pieces} pieces with a minimum of half the items"
    );
}

#[test]
fn nests_in_join_scope_tasks_and_itself() {
    let v: Vec<u64> = (0..10_000).collect();
    let want: u64 = v.iter().sum();
    let (a, b) = rt().join(|| v.par_iter().sum::<u64>(), || v.par_iter().sum::<u64>());
    assert_eq!((a, b), (want, want));
    let mut results = [0u64; 4];
    rt().scope(|s| {
        for r in &mut results {
            let v = &v;
            s.spawn(move |_| *r = v.par_iter().sum());
        }
    });
    assert_eq!(results, [want; 4]);
    let shared = Arc::new(v.clone());
    let handle = rt().spawn(async move { shared.par_iter().map(|x| x * 2).sum::<u64>() });
    assert_eq!(rt().block_on(handle), 2 * want);
    // A parallel iterator inside another's closure.
    let nested: u64 = rt().install(|| {
        (0..100u64)
            .into_par_iter()
            .map(|i| (0..i).into_par_iter().sum::<u64>())
            .sum()
    });
    assert_eq!(
        nested,
        (0..100u64).map(|i| (0..i).sum::<u64>()).sum::<u64>()
    );
}

#[test]
fn runs_from_plain_threads_and_from_workers() {
    let v: Vec<u32> = (0..5000).collect();
    // A plain thread with the runtime entered: the work moves onto its workers.
    let on_workers = AtomicUsize::new(0);
    std::thread::scope(|s| {
        s.spawn(|| {
            let _g = rt().enter();
            v.par_iter().for_each(|_| {
                if crate::runtime::worker_index().is_some() {
                    on_workers.fetch_add(1, Relaxed);
                }
            });
        });
    });
    assert_eq!(on_workers.load(Relaxed), 5000);
    // From a worker of the runtime.
    let sum = rt().install(|| {
        assert!(crate::runtime::worker_index().is_some());
        v.par_iter().map(|&x| u64::from(x)).sum::<u64>()
    });
    assert_eq!(sum, 4999 * 5000 / 2);
    // From a worker of another runtime: it runs on the current one, that worker's.
    let other = Runtime::builder().workers(1).build().unwrap();
    let max = other.install(|| v.par_iter().max().copied());
    assert_eq!(max, Some(4999));
}

#[test]
fn chunks_of_size_zero_are_refused_clearly() {
    let v = [1, 2, 3];
    let r = catch_unwind(|| v.par_chunks(0).count());
    let text = r.unwrap_err();
    assert!(crate::runtime::payload_text(&*text).contains("chunks of size 0"));
}

#[test]
fn min_and_max_keep_the_sequential_choice_between_equal_items() {
    // Equal by `Ord`, told apart by the second field.
    #[derive(Debug, Clone, Copy)]
    struct K(u8, usize);
    impl PartialEq for K {
        fn eq(&self, o: &K) -> bool {
            self.0 == o.0
        }
    }
    impl Eq for K {}
    impl PartialOrd for K {
        fn partial_cmp(&self, o: &K) -> Option<Ordering> {
            Some(self.cmp(o))
        }
    }
    impl Ord for K {
        fn cmp(&self, o: &K) -> Ordering {
            self.0.cmp(&o.0)
        }
    }
    let v: Vec<K> = (0..10_000).map(|i| K((i % 3) as u8, i)).collect();
    let par_min = rt().install(|| v.par_iter().copied().min()).unwrap();
    let par_max = rt().install(|| v.par_iter().copied().max()).unwrap();
    assert_eq!(par_min.1, v.iter().copied().min().unwrap().1);
    assert_eq!(par_max.1, v.iter().copied().max().unwrap().1);
}
