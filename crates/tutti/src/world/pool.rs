//! Reused buffers for large message bodies.
//!
//! A large message crosses ranks as a frame's body: its own buffer, sent and
//! received without being copied into a batch. Allocating a fresh buffer for
//! every one costs a page fault (and the kernel's zeroing) per 4 KiB page when
//! MPI first writes or reads it, and unmapping it when it is freed: at 16 MiB
//! that is more than the transfer itself. So a rank keeps a few of them: the
//! engine returns a body buffer once its send completed, a [`Delivery`] of a
//! body returns its buffer when dropped, the engine receives bodies into
//! buffers taken from here, and [`Location::buffer`] gives one to a sender.
//!
//! [`Delivery`]: super::Delivery
//! [`Location::buffer`]: super::Location::buffer

use crate::loom::{lock, Mutex};

/// Smallest buffer worth keeping (below this, the allocator does well).
pub(crate) const POOL_MIN: usize = 64 * 1024;
/// Buffers kept at most (a stream of 1 MiB messages keeps 64 in flight).
const MAX_BUFFERS: usize = 64;
/// Bytes kept at most.
const MAX_BYTES: usize = 128 << 20;

/// The rank's pool; see the module documentation.
#[derive(Default)]
pub(crate) struct Pool {
    bufs: Mutex<Vec<Vec<u8>>>,
}

impl Pool {
    /// Keeps `v` (its bytes stay initialized: `take` hands out prefixes of
    /// them) if it is large enough and there is room.
    pub(crate) fn put(&self, v: Vec<u8>) {
        if v.capacity() < POOL_MIN || v.is_empty() || v.capacity() > MAX_BYTES {
            return;
        }
        let mut evicted = Vec::new();
        {
            let mut bufs = lock(&self.bufs);
            let mut held: usize = bufs.iter().map(Vec::capacity).sum();
            // Full: smaller buffers make room for a larger one (the sizes in
            // use now are the likely ones next).
            while bufs.len() >= MAX_BUFFERS || held + v.capacity() > MAX_BYTES {
                let smallest = (0..bufs.len()).min_by_key(|&i| bufs[i].capacity());
                match smallest {
                    Some(i) if bufs[i].capacity() < v.capacity() => {
                        let old = bufs.remove(i);
                        held -= old.capacity();
                        evicted.push(old);
                    }
                    _ => break,
                }
            }
            if bufs.len() < MAX_BUFFERS && held + v.capacity() <= MAX_BYTES {
                bufs.push(v);
            } else {
                evicted.push(v);
            }
        }
        // Freed outside the lock.
        drop(evicted);
    }

    /// A kept buffer with at least `len` initialized bytes (and not wastefully
    /// larger), truncated to `len`: the last kept of those (most recently used
    /// memory is warm in the cache).
    pub(crate) fn take(&self, len: usize) -> Option<Vec<u8>> {
        if len < POOL_MIN {
            return None;
        }
        let mut bufs = lock(&self.bufs);
        // The most recently kept of the best fitting ones: its bytes are the
        // likeliest to be in the cache.
        let i = (0..bufs.len())
            .rev()
            .filter(|&i| bufs[i].len() >= len && bufs[i].len() / 2 <= len)
            .min_by_key(|&i| bufs[i].len())?;
        let mut v = bufs.remove(i);
        drop(bufs);
        v.truncate(len);
        Some(v)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn keeps_large_buffers_within_bounds_and_hands_out_fitting_prefixes() {
        let p = Pool::default();
        p.put(vec![1u8; 1000]);
        assert!(p.take(1000).is_none(), "small buffers are not kept");
        p.put(vec![7u8; 1 << 20]);
        assert!(p.take(100 << 10).is_none(), "not wastefully larger");
        let v = p.take(600 << 10).unwrap();
        assert_eq!(v.len(), 600 << 10);
        assert!(v.iter().all(|&b| b == 7));
        assert!(p.take(600 << 10).is_none(), "taken once");
        p.put(vec![1u8; 1 << 20]);
        p.put(vec![2u8; 1 << 20]);
        assert_eq!(p.take(1 << 20).unwrap()[0], 2, "the warmest first");
        assert_eq!(p.take(1 << 20).unwrap()[0], 1);
        for _ in 0..100 {
            p.put(vec![0u8; 1 << 20]);
        }
        assert_eq!(lock(&p.bufs).len(), MAX_BUFFERS);
        for _ in 0..20 {
            p.put(vec![0u8; 16 << 20]);
        }
        let held: usize = lock(&p.bufs).iter().map(Vec::capacity).sum();
        assert!(held <= MAX_BYTES && lock(&p.bufs).len() <= MAX_BUFFERS);
        let large = lock(&p.bufs).iter().filter(|b| b.len() == 16 << 20).count();
        assert_eq!(
            large,
            MAX_BYTES / (16 << 20),
            "larger buffers evict smaller ones"
        );
    }
}
