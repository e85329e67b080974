//! The readiness of one registered socket, and the wakers of the tasks waiting
//! for it: the meeting point of the I/O driver (which learns of readiness from
//! the OS) and a socket operation (which learns of its absence from
//! `WouldBlock`).
//!
//! # State
//!
//! One atomic word:
//!
//! | bits   | field  | meaning                                                   |
//! |--------|--------|-----------------------------------------------------------|
//! | 0      | `R`    | readable (or read-closed, or an error is pending)          |
//! | 1      | `W`    | writable (or write-closed, or an error is pending)         |
//! | 2      | `RC`   | read-closed or an error: final, never cleared              |
//! | 3      | `WC`   | write-closed or an error: final, never cleared             |
//! | 8..    | `tick` | how many times the driver has set readiness (wrapping)    |
//!
//! Waiting tasks' wakers sit in a list per direction behind one mutex.
//!
//! # Protocol
//!
//! * The driver, for an event: **R1** sets the event's bits and increments
//!   `tick` in one RMW; **R2** locks the waiters, takes the list of each
//!   direction the event made ready, unlocks; **R3** wakes them.
//! * An operation: **O1** loads the word; if its direction's bit is set it
//!   tries the system call. Otherwise **O2** locks the waiters, adds its waker,
//!   loads the word again, unlocks: set now, it goes on as in O1, else it
//!   returns `Pending`. **O3** on `WouldBlock` it clears its bit only if the
//!   word still holds the snapshot (same `tick`) it acted on, and starts over.
//!   A transfer shorter than its buffer may do the same at once (**O3'**,
//!   `Evented::poll_transfer`): it emptied the receive buffer or filled the
//!   send buffer, so the next system call would only say `WouldBlock`.
//!   Neither clears a direction whose closed bit (`RC`/`WC`) the snapshot
//!   holds.
//!
//! # Why no readiness and no wake-up is lost
//!
//! *Clearing.* O3's compare-exchange fails when the driver set readiness after
//! the snapshot (R1 changed `tick`), so a readiness the system call could not
//! have seen is never erased; the operation then tries again. O3' erases a
//! readiness the transfer acted on, which is safe because epoll is
//! edge-triggered: bytes (or room) arriving after the transfer raise a new
//! event, hence a new `tick`. One edge can carry data and the peer's close
//! together, and the close raises no later edge; so a snapshot with `RC`
//! (`WC`) never clears `R` (`W`): every later call meets the end itself.
//!
//! *Waking.* O2 and R2 take the same mutex. If R2 takes it after O2, R2 finds
//! O2's waker and R3 wakes it. If R2 takes it before O2, R1 happened before
//! R2's unlock, which happens before O2's lock, so O2's second load sees the
//! bit and the operation does not wait. `loom_tests::readiness_is_never_lost` checks
//! both under loom.

use std::task::{Context, Poll, Waker};

use crate::loom::{lock, AtomicUsize, Mutex, Ordering};

/// A direction of I/O a task may wait for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Direction {
    /// Reading, accepting, receiving.
    Read,
    /// Writing, connecting, sending.
    Write,
}

impl Direction {
    #[inline]
    fn bit(self) -> usize {
        match self {
            Direction::Read => READABLE,
            Direction::Write => WRITABLE,
        }
    }

    #[inline]
    fn closed_bit(self) -> usize {
        match self {
            Direction::Read => READ_CLOSED,
            Direction::Write => WRITE_CLOSED,
        }
    }
}

pub(crate) const READABLE: usize = 1;
pub(crate) const WRITABLE: usize = 2;
pub(crate) const READ_CLOSED: usize = 4;
pub(crate) const WRITE_CLOSED: usize = 8;
const BITS: usize = 0xff;
const TICK_ONE: usize = 1 << 8;

/// The snapshot of the word an operation acted on (see O3).
#[derive(Clone, Copy, Debug)]
pub(crate) struct ReadyEvent {
    word: usize,
    direction: Direction,
}

#[derive(Default)]
struct Waiters {
    read: Vec<Waker>,
    write: Vec<Waker>,
}

/// Readiness and waiters of one registered socket.
pub(crate) struct ScheduledIo {
    word: AtomicUsize,
    waiters: Mutex<Waiters>,
}

impl ScheduledIo {
    pub(crate) fn new() -> Self {
        ScheduledIo {
            word: AtomicUsize::new(0),
            waiters: Mutex::new(Waiters::default()),
        }
    }

    /// R1–R3: the driver saw `bits` (a mix of [`READABLE`], [`WRITABLE`] and
    /// the closed bits, which come with the direction they close).
    pub(crate) fn set_readiness(&self, bits: usize) {
        // R1. AcqRel: the bits are published to the operation that reads them
        // (O1/O2), and a clear (O3) that lost the race is ordered before.
        let _ = self
            .word
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |w| {
                Some((w & !BITS).wrapping_add(TICK_ONE) | (w & BITS) | bits)
            });
        // R2.
        let mut woken = Vec::new();
        {
            let mut waiters = lock(&self.waiters);
            if bits & READABLE != 0 {
                woken.append(&mut waiters.read);
            }
            if bits & WRITABLE != 0 {
                woken.append(&mut waiters.write);
            }
        }
        // R3, outside the lock: a woken task may run on this thread at once.
        for w in woken {
            w.wake();
        }
    }

    /// O1–O2: ready in `direction`, or `Pending` with the task's waker kept.
    pub(crate) fn poll_ready(
        &self,
        cx: &mut Context<'_>,
        direction: Direction,
    ) -> Poll<ReadyEvent> {
        let word = self.word.load(Ordering::Acquire);
        if word & direction.bit() != 0 {
            return Poll::Ready(ReadyEvent { word, direction });
        }
        let mut waiters = lock(&self.waiters);
        let list = match direction {
            Direction::Read => &mut waiters.read,
            Direction::Write => &mut waiters.write,
        };
        if !list.iter().any(|w| w.will_wake(cx.waker())) {
            list.push(cx.waker().clone());
        }
        // Under the lock: see "Waking" in the module doc.
        let word = self.word.load(Ordering::Acquire);
        if word & direction.bit() != 0 {
            return Poll::Ready(ReadyEvent { word, direction });
        }
        Poll::Pending
    }

    /// O3 (and O3'): the system call said `WouldBlock` after `event` (or
    /// moved less than its buffer); forget that readiness unless the driver
    /// has set readiness since, or the direction is closed.
    pub(crate) fn clear_readiness(&self, event: ReadyEvent) {
        if event.word & event.direction.closed_bit() != 0 {
            return;
        }
        let _ = self.word.compare_exchange(
            event.word,
            event.word & !event.direction.bit(),
            Ordering::AcqRel,
            Ordering::Relaxed,
        );
    }

    /// Wakes every waiting task (the socket is being closed, or the driver is
    /// gone): each polls again and meets the outcome itself.
    pub(crate) fn wake_all(&self) {
        self.set_readiness(READABLE | WRITABLE);
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use crate::loom::{thread, Arc, AtomicBool};
    use std::task::Wake;

    struct Flag(AtomicBool);
    impl Wake for Flag {
        fn wake(self: std::sync::Arc<Self>) {
            self.0.store(true, Ordering::Release);
        }
    }

    /// A socket's data arrives (the driver sets readiness) while a reader,
    /// whose last read said `WouldBlock`, clears and waits: the reader either
    /// sees the readiness or is woken; its clear never erases the new event.
    #[test]
    fn readiness_is_never_lost() {
        loom::model(|| {
            let io = Arc::new(ScheduledIo::new());
            // The socket was readable once and the reader drained it.
            io.set_readiness(READABLE);
            let data = Arc::new(AtomicBool::new(false));
            let flag = std::sync::Arc::new(Flag(AtomicBool::new(false)));
            let waker = Waker::from(flag.clone());
            let stale = match io.poll_ready(&mut Context::from_waker(&waker), Direction::Read) {
                Poll::Ready(ev) => ev,
                Poll::Pending => unreachable!("readable was set"),
            };
            let driver = {
                let (io, data) = (io.clone(), data.clone());
                thread::spawn(move || {
                    data.store(true, Ordering::Release);
                    io.set_readiness(READABLE);
                })
            };
            // The reader's system call ran before the data came: WouldBlock.
            io.clear_readiness(stale);
            let ready = io
                .poll_ready(&mut Context::from_waker(&waker), Direction::Read)
                .is_ready();
            driver.join().unwrap();
            // Either the reader goes on now, or it was woken.
            assert!(ready || flag.0.load(Ordering::Acquire));
            // And the readiness is still there for its next poll.
            assert!(io
                .poll_ready(&mut Context::from_waker(&waker), Direction::Read)
                .is_ready());
        });
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn ready(io: &ScheduledIo, direction: Direction) -> Option<ReadyEvent> {
        let mut cx = Context::from_waker(Waker::noop());
        match io.poll_ready(&mut cx, direction) {
            Poll::Ready(ev) => Some(ev),
            Poll::Pending => None,
        }
    }

    #[test]
    fn a_clear_forgets_the_readiness_it_acted_on_but_not_a_later_one() {
        let io = ScheduledIo::new();
        io.set_readiness(READABLE);
        let ev = ready(&io, Direction::Read).unwrap();
        io.clear_readiness(ev);
        assert!(ready(&io, Direction::Read).is_none());
        io.set_readiness(READABLE);
        let stale = ready(&io, Direction::Read).unwrap();
        io.set_readiness(READABLE);
        io.clear_readiness(stale);
        assert!(ready(&io, Direction::Read).is_some());
    }

    #[test]
    fn a_closed_direction_stays_ready() {
        let io = ScheduledIo::new();
        // Data and the peer's close in one edge: a short read clears nothing.
        io.set_readiness(READABLE | READ_CLOSED);
        let ev = ready(&io, Direction::Read).unwrap();
        io.clear_readiness(ev);
        assert!(ready(&io, Direction::Read).is_some());
        io.set_readiness(WRITABLE);
        let ev = ready(&io, Direction::Write).unwrap();
        io.clear_readiness(ev);
        assert!(ready(&io, Direction::Write).is_none());
    }
}
