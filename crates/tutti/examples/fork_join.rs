//! Fork-join and parallel loops: recursive work with `join`, borrowing tasks
//! with `scope`, and parallel loops over index ranges and slices.
//!
//! ```sh
//! cargo run --release -p tutti --example fork_join
//! ```
//!
//! Each part checks its result against a sequential computation; the program
//! exits with an error if one differs.
// This file uses tutti as a program would, with `std`'s atomics and locks: the
// loom-shim rule of `clippy.toml` is for the library's own code.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

use std::sync::atomic::{AtomicU64, Ordering};

/// Recursive work: `join` runs the two halves, possibly in parallel. Below a
/// cut-off the recursion goes on sequentially, so tasks stay coarse.
fn fib(n: u64) -> u64 {
    if n < 20 {
        return fib_seq(n);
    }
    let (a, b) = tutti::join(|| fib(n - 1), || fib(n - 2));
    a + b
}

fn fib_seq(n: u64) -> u64 {
    if n < 2 {
        n
    } else {
        fib_seq(n - 1) + fib_seq(n - 2)
    }
}

/// A parallel merge sort: sort both halves in parallel, then merge.
fn merge_sort(v: &mut [u64], scratch: &mut [u64]) {
    if v.len() <= 4096 {
        v.sort_unstable();
        return;
    }
    let mid = v.len() / 2;
    let (left, right) = v.split_at_mut(mid);
    let (s_left, s_right) = scratch.split_at_mut(mid);
    tutti::join(|| merge_sort(left, s_left), || merge_sort(right, s_right));
    let (mut i, mut j) = (0, mid);
    for slot in scratch.iter_mut() {
        if j == v.len() || (i < mid && v[i] <= v[j]) {
            *slot = v[i];
            i += 1;
        } else {
            *slot = v[j];
            j += 1;
        }
    }
    v.copy_from_slice(scratch);
}

fn main() {
    let mut failures = Vec::new();
    let mut check = |what: &str, ok: bool| {
        println!("{what:<58} {}", if ok { "ok" } else { "WRONG" });
        if !ok {
            failures.push(what.to_string());
        }
    };
    println!(
        "tutti's runtime: {} workers (one per core; TUTTI_WORKERS sets another number)",
        tutti::runtime::current_workers()
    );

    // 1. Recursive work with join.
    let n = 32;
    check(
        &format!("fib({n}) with join = {}", fib(n)),
        fib(n) == fib_seq(n),
    );

    // 2. Divide and conquer on a slice: a parallel merge sort.
    let mut keys: Vec<u64> = (0..1_000_000u64)
        .map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 11)
        .collect();
    let mut expected = keys.clone();
    expected.sort_unstable();
    let mut scratch = vec![0; keys.len()];
    merge_sort(&mut keys, &mut scratch);
    check("merge sort of 10^6 keys with join", keys == expected);

    // 3. Tasks that borrow from the stack: all of them end before `scope` returns.
    let words = ["fork", "join", "scope", "spawn", "steal"];
    let mut lengths = vec![0; words.len()];
    tutti::scope(|s| {
        for (len, word) in lengths.iter_mut().zip(words) {
            s.spawn(move |_| *len = word.len());
        }
    });
    check(
        "scope: tasks that write into a borrowed vector",
        lengths == [4, 4, 5, 5, 5],
    );

    // 4. A parallel loop over an index range, in blocks of 10 000 indices.
    let sum = AtomicU64::new(0);
    tutti::par_for(0..1_000_000, 10_000, |i| {
        sum.fetch_add(i as u64, Ordering::Relaxed);
    });
    let total = sum.into_inner();
    check(
        &format!("par_for: sum of 0..10^6 = {total}"),
        total == 999_999 * 1_000_000 / 2,
    );

    // 5. A parallel loop over a mutable slice, in chunks of 16 000 elements.
    let mut roots = vec![0.0f64; 1_000_000];
    tutti::par_chunks_mut(&mut roots, 16_000, |offset, chunk| {
        for (k, x) in chunk.iter_mut().enumerate() {
            *x = ((offset + k) as f64).sqrt();
        }
    });
    let ok = roots
        .iter()
        .enumerate()
        .all(|(i, &r)| r == (i as f64).sqrt());
    check("par_chunks_mut: square roots of 0..10^6", ok);

    if !failures.is_empty() {
        eprintln!(
            "fork_join: {} check(s) failed: {failures:?}",
            failures.len()
        );
        std::process::exit(1);
    }
    println!("verified: every parallel result equals the sequential one");
}
