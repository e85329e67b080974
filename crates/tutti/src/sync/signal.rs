//! A one-waiter wake-up signal: "something you care about changed".
//!
//! Any number of notifiers, one waiting task. The graph layer gives each actor
//! one: a port change (a token pushed into an input, room freed on an output)
//! notifies it, and its task awaits the signal between `act()` calls.
//!
//! # Protocol
//!
//! One atomic word, `state`, in one of three states:
//!
//! | state      | meaning                                                    |
//! |------------|------------------------------------------------------------|
//! | `EMPTY`    | nothing happened since the waiter last looked              |
//! | `NOTIFIED` | something happened; the waiter has not consumed it yet     |
//! | `PARKED`   | the waiter is suspended and its waker is in `waker`        |
//!
//! - `notify` swaps in `NOTIFIED` (`AcqRel`). If it took out `PARKED`, it — and
//!   only it, since it cleared the bit — wakes the stored waker.
//! - The waiter consumes a notification with `swap(EMPTY)` (`Acquire`: the
//!   changes made before the notify are visible to what it then reads).
//! - The waiter parks by storing its waker and then `compare_exchange(EMPTY →
//!   PARKED)` (`Release`, pairing with the notifier's `Acquire` so the notifier
//!   reads the stored waker). If the exchange fails, a notification came in
//!   between: it does not park.
//!
//! *No lost wake-up.* A notify either lands before the park's exchange (the
//! exchange then sees `NOTIFIED` and fails) or after it (the swap sees `PARKED`
//! and wakes).
//!
//! *No data race on the waker.* The waiter writes `waker` only while the state
//! is not `PARKED` and only at its first park (later parks check that the waker
//! would wake the same task and keep the stored one): the task waker of a tutti
//! task is stable, and a notifier reads `waker` only after taking out `PARKED`.
//! A waker that would not wake the same task is swapped in only while no
//! notifier can hold `PARKED` (the state is `EMPTY` and this waiter is the only
//! one that sets `PARKED`), but a notifier from the previous park may still be
//! inside `wake_by_ref`; so a changed waker is not written: the signal instead
//! reports `Poll::Ready` at once (a spurious wake), which is always allowed.
//! The model in `loom_tests` checks both claims.

use std::task::{Context, Waker};

use crate::loom::{AtomicU8, Ordering, UnsafeCell};

const EMPTY: u8 = 0;
const NOTIFIED: u8 = 1;
const PARKED: u8 = 2;

/// A wake-up signal with many notifiers and one waiter (see the module docs).
pub(crate) struct Signal {
    state: AtomicU8,
    /// Written by the waiter once, before its first `PARKED`; read by the notifier
    /// that takes `PARKED` out.
    waker: UnsafeCell<Option<Waker>>,
}

// SAFETY: `waker` is written only by the one waiter before it publishes `PARKED`
// (Release) for the first time, and read only by the notifier that took
// `PARKED` out (Acquire); see the module docs.
unsafe impl Sync for Signal {}
// SAFETY: as above; `Waker` is `Send`.
unsafe impl Send for Signal {}

impl Signal {
    /// A signal with nothing pending.
    pub(crate) fn new() -> Signal {
        Signal {
            state: AtomicU8::new(EMPTY),
            waker: UnsafeCell::new(None),
        }
    }

    /// Tells the waiter something changed, waking it if it is parked.
    #[inline]
    pub(crate) fn notify(&self) {
        self.notify_then(|| {});
    }

    /// [`notify`](Self::notify), running `before_wake` first if this call is
    /// the one that wakes a parked waiter (at most one notifier per park does).
    #[inline]
    pub(crate) fn notify_then(&self, before_wake: impl FnOnce()) {
        if self.state.swap(NOTIFIED, Ordering::AcqRel) == PARKED {
            before_wake();
            self.wake_cold();
        }
    }

    #[cold]
    fn wake_cold(&self) {
        self.waker.with(|w| {
            // SAFETY: we took `PARKED` out, so the waiter stored its waker before
            // it published `PARKED` (our swap acquired that) and never writes it
            // again; other readers only read.
            if let Some(w) = unsafe { &*w } {
                w.wake_by_ref();
            }
        });
    }

    /// Consumes a pending notification; says whether there was one. Only the
    /// waiter calls this.
    #[inline]
    pub(crate) fn take(&self) -> bool {
        self.state.swap(EMPTY, Ordering::Acquire) == NOTIFIED
    }

    /// Waits for a notification. Only the waiter calls this. A spurious poll
    /// while parked changes nothing ([`Wait::StillParked`]).
    pub(crate) fn poll_wait(&self, cx: &mut Context<'_>) -> Wait {
        // Only this waiter sets PARKED, so PARKED here means no notify came
        // since (the notifier that clears it also wakes us again).
        if self.state.load(Ordering::Acquire) == PARKED {
            return Wait::StillParked;
        }
        if self.take() {
            return Wait::Notified;
        }
        // The state is EMPTY and only we set PARKED, but a notifier from an
        // earlier park may still be inside `wake_by_ref`: so the stored waker
        // is written only the first time.
        // Reads may overlap a notifier's read (both shared); the one write
        // happens at the first park, before `PARKED` was ever published, so
        // no notifier reads then.
        // SAFETY: a shared read (see above).
        let first = self.waker.with(|w| unsafe { (*w).is_none() });
        let stable = if first {
            // SAFETY: the first park: no notifier can be reading (see above).
            self.waker
                .with_mut(|w| unsafe { *w = Some(cx.waker().clone()) });
            true
        } else {
            // SAFETY: a shared read (see above).
            self.waker
                .with(|w| unsafe { (*w).as_ref().is_some_and(|old| old.will_wake(cx.waker())) })
        };
        if !stable {
            return Wait::Notified;
        }
        match self
            .state
            .compare_exchange(EMPTY, PARKED, Ordering::Release, Ordering::Acquire)
        {
            Ok(_) => Wait::Parked,
            Err(_) => {
                // A notification came in: consume it (a swap, so it reads the
                // latest notify and acquires what it published).
                self.state.swap(EMPTY, Ordering::Acquire);
                Wait::Notified
            }
        }
    }
}

/// The outcome of [`Signal::poll_wait`].
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Wait {
    /// A notification was pending and is now consumed.
    Notified,
    /// The waiter parked now; a notify will wake it.
    Parked,
    /// A spurious poll: the waiter was parked and still is.
    StillParked,
}

impl std::fmt::Debug for Signal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Signal")
            .field("state", &self.state.load(Ordering::Relaxed))
            .finish()
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    use std::future::Future;
    use std::pin::Pin;
    use std::task::{Context, Poll};

    use super::{Signal, Wait};
    use crate::loom::{thread, Arc, AtomicUsize, Ordering};
    use crate::test_util::loom::block_on;

    /// Waits until `count` reaches `want`, through the signal.
    struct Until<'a>(&'a Signal, &'a AtomicUsize, usize);

    impl Future for Until<'_> {
        type Output = ();
        fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
            loop {
                if self.1.load(Ordering::Acquire) >= self.2 {
                    return Poll::Ready(());
                }
                match self.0.poll_wait(cx) {
                    Wait::Notified => continue,
                    Wait::Parked | Wait::StillParked => return Poll::Pending,
                }
            }
        }
    }

    /// Two notifiers each make a change and notify; the waiter sees both changes
    /// (loom reports a deadlock if a wake-up were lost). Three threads: bounded
    /// preemptions keep the search finite in CI time.
    #[test]
    fn no_change_is_missed() {
        let mut model = loom::model::Builder::new();
        model.preemption_bound = Some(3);
        model.check(|| {
            let sig = Arc::new(Signal::new());
            let count = Arc::new(AtomicUsize::new(0));
            let hs: Vec<_> = (0..2)
                .map(|_| {
                    let (s, c) = (Arc::clone(&sig), Arc::clone(&count));
                    thread::spawn(move || {
                        c.fetch_add(1, Ordering::Release);
                        s.notify();
                    })
                })
                .collect();
            block_on(Until(&sig, &count, 2));
            for h in hs {
                h.join().unwrap();
            }
        });
    }

    /// The waiter parks twice (one change each time): the second park must not
    /// race the first wake-up's read of the waker.
    #[test]
    fn repeated_parks_do_not_race_a_wake() {
        loom::model(|| {
            let sig = Arc::new(Signal::new());
            let count = Arc::new(AtomicUsize::new(0));
            let (s, c) = (Arc::clone(&sig), Arc::clone(&count));
            let h = thread::spawn(move || {
                for _ in 0..2 {
                    c.fetch_add(1, Ordering::Release);
                    s.notify();
                }
            });
            // One task (one waker) waits twice.
            block_on(async {
                Until(&sig, &count, 1).await;
                Until(&sig, &count, 2).await;
            });
            h.join().unwrap();
        });
    }
}
