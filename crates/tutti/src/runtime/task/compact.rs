//! [`CompactWaker`]: an optional waker in one word, for records that many waiting
//! parties keep (a channel waiter per blocked process).
//!
//! A `Waker` is two words. The waker of a tutti task is fully described by the task's
//! header pointer, so it is kept as that pointer (tagged in bit 0, holding the waker's
//! reference); any other waker is boxed. The box costs an allocation, but only futures
//! polled outside tutti's tasks (a `block_on` on a plain thread, a foreign executor) make
//! one, once per registration.
//!
//! | value | meaning |
//! |---|---|
//! | `0` | no waker |
//! | task pointer with bit 0 set | a tutti task's waker (owns one reference) |
//! | pointer to a `Box<Waker>` | any other waker |

use std::ptr::NonNull;
use std::task::Waker;

use super::raw::RawTask;

const TASK: usize = 1;

/// An optional [`Waker`] in one word; see the module docs.
pub(crate) struct CompactWaker(usize);

impl CompactWaker {
    /// No waker.
    #[inline]
    pub(crate) const fn new() -> CompactWaker {
        CompactWaker(0)
    }

    /// Stores `waker`, unless the one stored already wakes the same task.
    #[inline]
    pub(crate) fn set(&mut self, waker: &Waker) {
        if self.will_wake(waker) {
            return;
        }
        let new = match RawTask::of_waker(waker) {
            Some(task) => {
                task.add_ref();
                task.as_ptr().as_ptr() as usize | TASK
            }
            None => Box::into_raw(Box::new(waker.clone())) as usize,
        };
        self.release();
        self.0 = new;
    }

    /// Whether the stored waker wakes the same task as `waker`.
    #[inline]
    pub(crate) fn will_wake(&self, waker: &Waker) -> bool {
        match self.0 {
            0 => false,
            w if w & TASK != 0 => {
                RawTask::of_waker(waker).is_some_and(|t| t.as_ptr().as_ptr() as usize == w & !TASK)
            }
            // SAFETY: an untagged non-zero value is a `Box<Waker>` we own.
            w => unsafe { &*(w as *const Waker) }.will_wake(waker),
        }
    }

    /// Takes the stored waker out.
    #[inline]
    pub(crate) fn take(&mut self) -> Option<Waker> {
        let w = std::mem::replace(&mut self.0, 0);
        match w {
            0 => None,
            // SAFETY: the tag marks a task pointer whose reference we own; it moves into
            // the waker.
            w if w & TASK != 0 => Some(unsafe { task_of(w) }.into_waker()),
            // SAFETY: an untagged non-zero value is a `Box<Waker>` we own.
            w => Some(*unsafe { Box::from_raw(w as *mut Waker) }),
        }
    }

    #[inline]
    fn release(&mut self) {
        if self.0 != 0 {
            self.release_cold();
        }
    }

    #[cold]
    fn release_cold(&mut self) {
        drop(self.take());
    }
}

/// # Safety
/// `w` is a tagged task pointer stored by [`CompactWaker::set`].
unsafe fn task_of(w: usize) -> RawTask {
    // SAFETY: a tagged value is a non-null task header pointer with bit 0 set.
    unsafe { RawTask::from_ptr(NonNull::new_unchecked((w & !TASK) as *mut ())) }
}

impl Drop for CompactWaker {
    #[inline]
    fn drop(&mut self) {
        self.release();
    }
}

// SAFETY: the word owns a task reference or a boxed `Waker`; both are `Send + Sync`.
unsafe impl Send for CompactWaker {}
// SAFETY: as above; `&CompactWaker` only clones or compares.
unsafe impl Sync for CompactWaker {}

impl std::fmt::Debug for CompactWaker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = match self.0 {
            0 => "none",
            w if w & TASK != 0 => "task",
            _ => "boxed",
        };
        f.debug_tuple("CompactWaker").field(&kind).finish()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::CompactWaker;
    use crate::loom::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::task::{Wake, Waker};

    struct Count(AtomicUsize);
    impl Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[test]
    fn foreign_wakers_are_boxed_and_task_wakers_are_one_word() {
        assert_eq!(std::mem::size_of::<CompactWaker>(), 8);
        let count = Arc::new(Count(AtomicUsize::new(0)));
        let w = Waker::from(count.clone());
        let mut c = CompactWaker::new();
        assert!(c.take().is_none());
        c.set(&w);
        assert!(c.will_wake(&w));
        c.take().unwrap().wake();
        assert!(c.take().is_none());
        assert_eq!(count.0.load(Ordering::SeqCst), 1);

        // A task's waker: stored as its pointer, cloned and taken without leaking it.
        let got = crate::runtime::block_on(crate::runtime::spawn(async {
            std::future::poll_fn(|cx| {
                let mut c = CompactWaker::new();
                c.set(cx.waker());
                let same = c.will_wake(cx.waker());
                c.set(cx.waker()); // no change
                let taken = c.take().unwrap();
                std::task::Poll::Ready(same && taken.will_wake(cx.waker()))
            })
            .await
        }));
        assert!(got);
    }
}
