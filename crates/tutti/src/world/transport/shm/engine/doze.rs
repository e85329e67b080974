//! How the receiving thread sleeps while its process is idle and a runtime
//! worker blocks on the mailbox's futex (the idle waiter): it has no input to
//! wait for (the worker takes the senders' wake-ups), only the other members'
//! deaths, its own process's shutdown, and the odd look at the system (an
//! abort, a dead rank taken again) that no wake-up announces.
//!
//! Without this, the thread looked at every member every [`CHECK_EVERY`]
//! (reading `/proc/<pid>/stat` for each): a hundred wake-ups a second in an
//! idle world. A *doze* waits instead, in `poll`, on
//!
//! * a pidfd per live member (readable once its process has exited: its
//!   death is noticed at once, sooner than by looking),
//! * this process's *bell*, an eventfd rung by shutdown and by the worker
//!   that leaves the futex (the thread is then the backstop again, see
//!   below),
//!
//! for at most [`DOZE_CHECK`]. A doze starts only once the mailbox has been
//! quiet for [`DOZE_AFTER`] with a worker blocked on the futex, and only
//! when every live member has a pidfd (else the thread naps
//! [`CHECK_EVERY`] as before).
//!
//! The backstop rule holds: while no worker blocks on the futex (all busy),
//! the thread must drain the mailbox within a nap. A dozing thread is told
//! by the bell when the blocked worker leaves (`Waiter::block` rings it; the
//! handshake is `backstop.rs`'s), so it returns to its naps.
//!
//! [`CHECK_EVERY`]: super::CHECK_EVERY

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::time::Duration;

use super::super::sys;
use super::super::system::{JOINING, LEAVING, READY};
use super::Inner;
use crate::loom::Ordering;

/// How long the mailbox stays quiet, with a worker on the futex, before the
/// receiving thread dozes.
pub(super) const DOZE_AFTER: Duration = Duration::from_millis(100);
/// The longest doze: how often an idle process looks at the system for what
/// no descriptor tells (an abort, a dead rank taken again, its heartbeat).
pub(super) const DOZE_CHECK: Duration = Duration::from_secs(1);

/// What the receiving thread dozes on.
pub(super) struct Doze {
    /// Per rank: the incarnation watched and its pidfd.
    watched: Vec<Option<(u64, OwnedFd)>>,
    /// Per rank: an incarnation whose pidfd was readable (gone: not opened
    /// again).
    exited: Vec<u64>,
    /// A live member has no pidfd (the kernel offers none): no dozing.
    blind: bool,
    ready: Vec<bool>,
}

impl Doze {
    pub(super) fn new(ranks: usize) -> Doze {
        Doze {
            watched: (0..ranks).map(|_| None).collect(),
            exited: vec![0; ranks],
            blind: false,
            ready: Vec::new(),
        }
    }

    /// Brings the pidfds up to date with the system: one per running member
    /// (its current incarnation), none for the dead and the departed.
    pub(super) fn refresh(&mut self, inner: &Inner) {
        let h = inner.system.header();
        self.blind = false;
        for r in 0..inner.ranks {
            if r == inner.rank || inner.is_dead(r) {
                self.watched[r] = None;
                continue;
            }
            let m = &h.members[r];
            if !matches!(m.state.get(), READY | LEAVING | JOINING) {
                self.watched[r] = None;
                continue;
            }
            let incarnation = inner.system.incarnation(r);
            if self.watched[r]
                .as_ref()
                .is_some_and(|(i, _)| *i == incarnation)
                || self.exited[r] == incarnation
            {
                continue;
            }
            let pid = m.pid.load(Ordering::Relaxed);
            match sys::pidfd(pid) {
                // Opened after the pid was read: it may name a later process
                // with the same pid; the start time tells.
                Some(fd) if sys::alive(pid, m.start.load(Ordering::Relaxed)) => {
                    self.watched[r] = Some((incarnation, fd));
                }
                // Gone already: the next check buries it.
                Some(_) => self.watched[r] = None,
                None => {
                    self.watched[r] = None;
                    self.blind |= sys::alive(pid, m.start.load(Ordering::Relaxed));
                }
            }
        }
    }

    /// Whether the thread may doze (every running member is watched).
    pub(super) fn possible(&self, inner: &Inner) -> bool {
        !self.blind && inner.bell.is_some()
    }

    /// Dozes up to `max`: until a watched member exits, the bell rings, or
    /// `max` passes. True if a member exited (look at the system now).
    pub(super) fn doze(&mut self, inner: &Inner, max: Duration) -> bool {
        let Some(bell) = inner.bell.as_ref() else {
            std::thread::sleep(max);
            return false;
        };
        let mut fds: Vec<BorrowedFd<'_>> = vec![bell.as_fd()];
        let mut ranks = vec![usize::MAX];
        for (r, w) in self.watched.iter().enumerate() {
            if let Some((_, fd)) = w {
                fds.push(fd.as_fd());
                ranks.push(r);
            }
        }
        self.ready.clear();
        // Not if the worker has left the futex meanwhile (`backstop.rs`).
        inner
            .backstop
            .doze(|| sys::wait_readable(&fds, max, &mut self.ready));
        sys::drain(bell.as_fd());
        let mut exited = false;
        for (i, &r) in ranks.iter().enumerate().skip(1) {
            if self.ready.get(i).copied().unwrap_or(false) {
                exited = true;
                if let Some((incarnation, _)) = self.watched[r].take() {
                    self.exited[r] = incarnation;
                }
            }
        }
        exited
    }
}

/// Rings the bell whatever the thread does (shutdown, after `stop` is set):
/// a doze in progress ends, and one about to start returns at once.
pub(super) fn ring(inner: &Inner) {
    if let Some(bell) = inner.bell.as_ref() {
        sys::ring(bell.as_fd());
    }
}
