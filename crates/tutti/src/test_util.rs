//! Helpers shared by the crate's unit tests.

/// Aborts this test binary if it is still running after a time limit (a hung test).
#[path = "../tests/watchdog/mod.rs"]
mod watchdog;

#[cfg(not(loom))]
pub(crate) use parked::{counting_waker, park_on, WakeCount};

#[cfg(not(loom))]
mod parked {
    use std::future::Future;
    use std::sync::Arc;
    use std::task::{Context, Poll, Wake, Waker};
    use std::thread::{self, Thread};

    /// A `block_on` that depends on nothing in the runtime: the thread parks
    /// until the future's waker unparks it. Lets unit tests of the lower
    /// layers drive futures without the scheduler.
    pub(crate) fn park_on<F: Future>(future: F) -> F::Output {
        struct Unpark(Thread);
        impl Wake for Unpark {
            fn wake(self: Arc<Self>) {
                self.0.unpark();
            }
        }
        let waker = Waker::from(Arc::new(Unpark(thread::current())));
        let mut cx = Context::from_waker(&waker);
        let mut future = std::pin::pin!(future);
        loop {
            if let Poll::Ready(output) = future.as_mut().poll(&mut cx) {
                return output;
            }
            thread::park();
        }
    }

    /// A waker that counts its wake-ups.
    pub(crate) struct WakeCount(pub(crate) crate::loom::AtomicUsize);

    impl Wake for WakeCount {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, crate::loom::Ordering::SeqCst);
        }
    }

    /// A fresh [`WakeCount`] and a waker that increments it.
    pub(crate) fn counting_waker() -> (Arc<WakeCount>, Waker) {
        let c = Arc::new(WakeCount(crate::loom::AtomicUsize::new(0)));
        (c.clone(), Waker::from(c))
    }
}

/// Helpers for loom models.
#[cfg(loom)]
pub(crate) mod loom {
    use std::future::Future;
    use std::pin::pin;
    use std::sync::Arc;
    use std::task::{Context, Poll, Wake, Waker};

    use crate::loom::{lock, AtomicBool, Condvar, Mutex, Ordering};

    /// A waker that records, in a loom-visible atomic, that it was woken.
    pub(crate) struct Flag(pub(crate) AtomicBool);

    impl Wake for Flag {
        fn wake(self: Arc<Self>) {
            self.0.store(true, Ordering::Release);
        }
    }

    /// A fresh [`Flag`] and a waker that sets it.
    pub(crate) fn flag() -> (Arc<Flag>, Waker) {
        let f = Arc::new(Flag(AtomicBool::new(false)));
        (f.clone(), Waker::from(f))
    }

    /// Set when woken, under a loom mutex; [`block_on`] waits on the condvar.
    struct Woken {
        woken: Mutex<bool>,
        cond: Condvar,
    }

    impl Wake for Woken {
        fn wake(self: Arc<Self>) {
            self.wake_by_ref();
        }

        fn wake_by_ref(self: &Arc<Self>) {
            *lock(&self.woken) = true;
            self.cond.notify_one();
        }
    }

    /// Drives `f` to completion on a loom thread. A lost wake-up leaves it
    /// waiting for ever, which loom reports as a deadlock.
    pub(crate) fn block_on<F: Future>(f: F) -> F::Output {
        let flag = Arc::new(Woken {
            woken: Mutex::new(false),
            cond: Condvar::new(),
        });
        let waker = Waker::from(flag.clone());
        let mut cx = Context::from_waker(&waker);
        let mut f = pin!(f);
        loop {
            if let Poll::Ready(v) = f.as_mut().poll(&mut cx) {
                return v;
            }
            let mut woken = lock(&flag.woken);
            while !*woken {
                woken = match flag.cond.wait(woken) {
                    Ok(g) => g,
                    Err(p) => p.into_inner(),
                };
            }
            *woken = false;
        }
    }
}
