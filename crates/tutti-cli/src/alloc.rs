//! A global allocator that can count live heap bytes during a window, for
//! memory benchmarks (`tutti bench actor memory`).
//!
//! It forwards to the system allocator. While a [`Window`] is open, every
//! allocation adds its requested size to a global balance and every
//! deallocation subtracts it, so the balance at the end is exactly the growth
//! of live heap bytes over the window — including frees of blocks allocated
//! before it opened, which really do shrink the heap. Outside a window the
//! cost is one relaxed load per call.
//!
//! The sizes are the ones requested; the allocator's own per-block overhead
//! (8–16 bytes per block in glibc) is not included, which is why the window
//! also counts allocations: the caller can report both.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicIsize, Ordering};
use std::sync::Mutex;

/// The counting allocator; installed as the CLI's global allocator.
pub struct Counting;

static ON: AtomicBool = AtomicBool::new(false);
static BYTES: AtomicIsize = AtomicIsize::new(0);
static BLOCKS: AtomicIsize = AtomicIsize::new(0);
/// Only one window at a time.
static WINDOW: Mutex<()> = Mutex::new(());

#[inline]
fn count(bytes: isize, blocks: isize) {
    if ON.load(Ordering::Relaxed) {
        BYTES.fetch_add(bytes, Ordering::Relaxed);
        BLOCKS.fetch_add(blocks, Ordering::Relaxed);
    }
}

// SAFETY: every call forwards to `System` with the caller's arguments; the
// counting touches only atomics and never allocates.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count(layout.size() as isize, 1);
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count(layout.size() as isize, 1);
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        count(-(layout.size() as isize), -1);
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count(new_size as isize - layout.size() as isize, 0);
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

/// Growth of the live heap over a window.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Growth {
    /// Requested bytes allocated minus bytes freed.
    pub bytes: isize,
    /// Blocks allocated minus blocks freed.
    pub blocks: isize,
}

/// Counts heap growth (in every thread) while `f` runs.
pub fn measure<R>(f: impl FnOnce() -> R) -> (R, Growth) {
    let _one = WINDOW.lock().unwrap_or_else(|e| e.into_inner());
    BYTES.store(0, Ordering::SeqCst);
    BLOCKS.store(0, Ordering::SeqCst);
    ON.store(true, Ordering::SeqCst);
    let r = f();
    ON.store(false, Ordering::SeqCst);
    let growth = Growth {
        bytes: BYTES.load(Ordering::SeqCst),
        blocks: BLOCKS.load(Ordering::SeqCst),
    };
    (r, growth)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_window_sees_exactly_what_stays_allocated() {
        let kept_size = 10 * 1000 + 10 * 8; // ten boxes and the vector of them
                                            // Other tests allocate in parallel threads, which a window sees too;
                                            // some attempt out of a few sees exactly ours.
        let exact = (0..20).any(|_| {
            let (kept, grown) = measure(|| {
                let kept: Vec<Box<[u8; 1000]>> = (0..10).map(|_| Box::new([0u8; 1000])).collect();
                drop(vec![0u8; 5000]);
                kept
            });
            let ((), shrunk) = measure(|| drop(kept));
            grown
                == Growth {
                    bytes: kept_size,
                    blocks: 11,
                }
                && shrunk
                    == Growth {
                        bytes: -kept_size,
                        blocks: -11,
                    }
        });
        assert!(exact);
    }
}
