//! The word that ends a loan of a large body (`engine/cma.rs`): the
//! receiver's `copied[sender]` in its member entry, `seq << 1 | refused` of
//! the last body the sender lent it. The receiver ends loan `seq` with a
//! Release store after its copy (or its failed read); the sender waits for it
//! with Acquire loads, so the copy happens before the sender touches the
//! body's memory again (modelled in `loom_tests.rs`). Loans of one sender to
//! one receiver are sequential (the sender holds the receiver's send lock
//! from the descriptor to the end of the loan), so each number follows the
//! one the word holds.

use crate::loom::{AtomicU64, Ordering};

/// The number of the next loan on `word`.
pub(crate) fn next(word: &AtomicU64) -> u64 {
    (word.load(Ordering::Acquire) >> 1) + 1
}

/// The receiver ends loan `seq`: it copied the body, or could not read it.
pub(crate) fn end(word: &AtomicU64, seq: u64, copied: bool) {
    word.store(seq << 1 | u64::from(!copied), Ordering::Release);
}

/// The sender looks: `Some(copied)` once loan `seq` has ended.
pub(crate) fn ended(word: &AtomicU64, seq: u64) -> Option<bool> {
    let c = word.load(Ordering::Acquire);
    (c >> 1 >= seq).then_some(c & 1 == 0)
}
