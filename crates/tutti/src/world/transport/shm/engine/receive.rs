//! The receiving side of a process's mailbox: the receiving thread (drain,
//! sleep on the futex, look at the other members every `CHECK_EVERY`), the
//! drain that polling workers share with it under the consumer's lock, the
//! reassembly of frames that span several slots, the reclaiming of a slot a
//! dead producer claimed and never committed, and the idle hook by which a
//! parked worker sleeps on the mailbox's futex itself (the thread then
//! dozes, `doze.rs`).

use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use super::cma::{Descriptor, LENT};
use super::doze::{Doze, DOZE_AFTER, DOZE_CHECK};
use super::{Inner, CHECK_EVERY, PREFIX};
use crate::loom::{lock, spin_hint, Ordering};
use crate::world::transport::shm::ring::Fragment;
use crate::world::transport::Sink;

/// How long the receiving thread spins after the last fragment before it
/// sleeps on its futex (`TUTTI_SHM_SPIN_US`; unpolled mode). Zero by
/// default: on a machine with fewer cores than busy threads a spinning
/// receiver takes the core the woken location needs (`tutti bench shm`).
fn spin_for() -> Duration {
    std::env::var("TUTTI_SHM_SPIN_US")
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .map_or(Duration::ZERO, Duration::from_micros)
}
/// Polled mode: how long after the last traffic the receiving thread
/// starts sleeping on its futex.
const BACKSTOP_AFTER: Duration = Duration::from_millis(2);
/// Polled mode: the receiving thread's nap while traffic is recent.
const BACKSTOP_NAP: Duration = Duration::from_micros(200);
/// Polled mode with the idle waiter: the receiving thread's nap while
/// traffic is recent and no worker sleeps on the futex.
const WAITER_BACKSTOP_NAP: Duration = Duration::from_millis(1);

/// The runtime's idle hook for this process's mailbox: a parked worker
/// sleeps on the ring's futex, so a sender wakes it directly; it then
/// drains the mailbox (the world's poller) and runs the location tasks
/// the frames wake, on its own thread.
pub(super) struct Waiter(pub(super) Arc<Inner>);

impl crate::runtime::sleep::IdleWaiter for Waiter {
    fn block(&self, max: Duration, stay: &dyn Fn() -> bool) {
        let inner = &self.0;
        if inner.stop.load(Ordering::Acquire) {
            return;
        }
        inner.waiter.store(true, Ordering::Relaxed);
        inner.backstop.worker_blocks();
        inner.mine.ring().sleep_unless(max, stay);
        if inner.backstop.worker_leaves() {
            super::doze::ring(inner);
        }
    }

    fn unblock(&self) {
        self.0.mine.ring().nudge();
    }
}

/// The consumer's side of this process's mailbox: frames being
/// reassembled, per sender. Behind a lock: the receiving thread and idle
/// workers (polling) take turns.
pub(super) struct Consumer {
    partial: Vec<Option<Vec<u8>>>,
    scratch: Vec<u8>,
}

impl Consumer {
    /// Drops what was reassembled so far from `rank` (a dead incarnation's
    /// unfinished frame); its length, if there was one.
    pub(super) fn forget(&mut self, rank: usize) -> Option<usize> {
        self.partial[rank].take().map(|b| b.len())
    }

    /// Nothing reassembled yet, from any of `ranks` senders.
    pub(super) fn new(ranks: usize) -> Consumer {
        Consumer {
            partial: vec![None; ranks],
            scratch: Vec::with_capacity(256),
        }
    }
}

impl Inner {
    /// Drains the mailbox, delivering whole frames; true if anything
    /// moved. `wait` takes the consumer's lock, else it is only tried.
    pub(super) fn drain(&self, sink: &dyn Sink, wait: bool) -> bool {
        let ring = self.mine.ring();
        // A poll that would find nothing takes no lock: a spinning location
        // polls far more often than anything arrives, and the lock's
        // read-modify-write costs more than the look. `ready` reads the
        // consumer's position without the lock, so it may be stale; a stale
        // position never looks empty (its slot was freed for a later lap),
        // so this only skips a drain that would have found the slot at the
        // current position empty too. A dead producer's stalled slot is
        // looked for under the lock, as before.
        if !wait && !ring.ready() && self.dead.load(Ordering::Acquire) == 0 {
            return false;
        }
        let mut c = if wait {
            lock(&self.consumer)
        } else {
            match self.consumer.try_lock() {
                Ok(c) => c,
                Err(_) => return false,
            }
        };
        let mut moved = false;
        // What a delivery sends is never lent from here (`cma.rs`).
        let _draining = super::cma::Draining::start();
        loop {
            let Consumer { partial, scratch } = &mut *c;
            scratch.clear();
            let f = match ring.pop(scratch, self.ranks) {
                Ok(Some(f)) => f,
                Ok(None) => {
                    if self.reclaim(partial) {
                        moved = true;
                        continue;
                    }
                    return moved;
                }
                Err(e) => self.abort(&format!("its mailbox is corrupt: {e}")),
            };
            moved = true;
            let from = f.from;
            let mut fetch = |from: usize, d: Descriptor| self.fetch(sink, from, d);
            let delivered = if f.first && f.last && partial[from].is_none() {
                // A frame in one slot (every small message): delivered from
                // the scratch buffer, which stays for the next one.
                deliver(sink, from, scratch, &mut fetch)
            } else {
                match reassemble(partial, scratch, f, &|m| self.members.rank(m)) {
                    Ok(Some(whole)) => deliver(sink, from, &whole, &mut fetch),
                    Ok(None) => continue,
                    Err(why) => self.abort(&format!("its mailbox is corrupt: {why}")),
                }
            };
            if let Err(why) = delivered {
                self.abort(&why);
            }
        }
    }
}

impl Inner {
    /// The consumer found nothing at its position: if a dead rank
    /// claimed that slot and never committed it (killed mid-write), skip
    /// the slot, drop that rank's unfinished frame, say so, and return
    /// true. What waits on the dead rank fails through the world's death
    /// notice (`announce_deaths`); every committed fragment is read.
    fn reclaim(&self, partial: &mut [Option<Vec<u8>>]) -> bool {
        if self.dead.load(Ordering::Acquire) == 0 {
            return false;
        }
        let ring = self.mine.ring();
        let Some(r) = ring
            .stalled()
            .filter(|&r| r < self.ranks && self.is_dead(r))
        else {
            return false;
        };
        let Some(pos) = ring.reclaim(r) else {
            return false;
        };
        let unfinished = partial[r].take().map_or(0, |b| b.len());
        self.reclaimed.fetch_add(1, Ordering::Relaxed);
        let who = self.members.rank(r);
        crate::world::say(&format!(
            "system {:?}: {}'s mailbox: slot {pos} was claimed by {who}, which died \
             before writing it; the slot is reclaimed{}",
            self.system.name,
            self.members.rank(self.rank),
            if unfinished > 0 {
                format!(
                    " and the unfinished frame from {who} ({unfinished} bytes so far) is dropped"
                )
            } else {
                String::new()
            }
        ));
        true
    }
}

/// The receiving thread: drains this process's mailbox (taking turns with
/// polling workers), sleeps on its futex when it is empty, looks at the
/// other members every [`CHECK_EVERY`]; ends when told to stop and the
/// mailbox is empty.
pub(super) fn receive(inner: Arc<Inner>, sink: Arc<dyn Sink>, polled: bool) {
    let ring = inner.mine.ring();
    let spin = spin_for();
    let backstop_after = std::env::var("TUTTI_SHM_BACKSTOP_US")
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .map_or(BACKSTOP_AFTER, Duration::from_micros);
    let _ = inner.receiving.set(thread::current());
    let mut last = Instant::now();
    let mut checked = Instant::now();
    let mut doze = Doze::new(inner.ranks);
    doze.refresh(&inner);
    let mut look = false;
    // The mailbox's read position as last seen, and since when: quiet
    // means nobody (this thread or a worker) read anything meanwhile.
    let (mut read, mut quiet_since) = (ring.consumed(), Instant::now());
    loop {
        // Polled: never wait for the lock a worker holds (a receiving
        // thread descheduled while holding it would stall the workers).
        let moved = inner.drain(&*sink, !polled || inner.stop.load(Ordering::Acquire));
        let now = Instant::now();
        if moved {
            last = now;
        }
        if look || now.duration_since(checked) >= CHECK_EVERY {
            look = false;
            checked = now;
            inner.check();
            doze.refresh(&inner);
        }
        if moved {
            continue;
        }
        if inner.stop.load(Ordering::Acquire) {
            if !ring.ready() {
                return;
            }
            continue;
        }
        let idle = now.duration_since(last);
        if polled && inner.waiter.load(Ordering::Relaxed) {
            // Idle workers drain the mailbox and block on its futex:
            // this thread is a backstop for when every worker is busy.
            // It never sleeps on the futex itself, so the worker is the
            // only sleeper there and senders wake it, not this thread.
            // Quiet for long with a worker on the futex, it dozes
            // (`doze.rs`).
            let hooked = inner.backstop.hooked();
            let pos = ring.consumed();
            if pos != read {
                (read, quiet_since) = (pos, now);
            }
            let quiet = now.duration_since(quiet_since) >= DOZE_AFTER;
            if hooked && quiet && doze.possible(&inner) {
                look = doze.doze(&inner, DOZE_CHECK);
                continue;
            }
            let busy = !hooked && idle < backstop_after;
            // Naps are parks: a lender waiting for its copy ends them.
            thread::park_timeout(if busy {
                WAITER_BACKSTOP_NAP
            } else {
                CHECK_EVERY
            });
            continue;
        } else if polled {
            // Idle workers drain the mailbox themselves while there is
            // traffic; this thread is the backstop. It stays off the
            // futex (so senders make no system call) until the traffic
            // has stopped for a while.
            if idle < backstop_after {
                thread::park_timeout(BACKSTOP_NAP);
                continue;
            }
        } else if idle < spin {
            spin_hint();
            continue;
        }
        // A sender's wake-up never rests on this timeout (`ring.rs`): the
        // thread wakes every `CHECK_EVERY` only to write its heartbeat and
        // look for dead members (`check`), which no wake-up would tell it.
        ring.sleep(CHECK_EVERY);
    }
}

/// Adds fragment `f`, just read into `scratch`, to its sender's frame in
/// `partial`: the whole frame once `f` is its last fragment. A fragment out
/// of order is an error naming the sender (as `name` names members).
pub(super) fn reassemble(
    partial: &mut [Option<Vec<u8>>],
    scratch: &mut Vec<u8>,
    f: Fragment,
    name: &dyn Fn(usize) -> String,
) -> Result<Option<Vec<u8>>, String> {
    let from = f.from;
    match (f.first, partial[from].take()) {
        (true, None) if f.last => Ok(Some(std::mem::replace(scratch, Vec::with_capacity(256)))),
        (true, None) => {
            partial[from] = Some(std::mem::take(scratch));
            Ok(None)
        }
        (false, Some(mut buf)) => {
            buf.extend_from_slice(scratch);
            if f.last {
                Ok(Some(buf))
            } else {
                partial[from] = Some(buf);
                Ok(None)
            }
        }
        (true, Some(_)) => Err(format!(
            "a frame from {} began before the previous one ended",
            name(from)
        )),
        (false, None) => Err(format!(
            "a continuation from {} without a start",
            name(from)
        )),
    }
}

/// How [`deliver`] gets a lent body (`cma.rs`): the body, or `None` if it
/// could not be read (the frame is then dropped: the sender sends it again).
pub(super) type Fetch<'a> = dyn FnMut(usize, Descriptor) -> Result<Option<Vec<u8>>, String> + 'a;

/// Splits a reassembled frame into head and body (from `fetch` if the body
/// is lent) and hands it over.
pub(super) fn deliver(
    sink: &dyn Sink,
    from: usize,
    whole: &[u8],
    fetch: &mut Fetch<'_>,
) -> Result<(), String> {
    if whole.len() < PREFIX {
        return Err(format!("{} bytes, shorter than its prefix", whole.len()));
    }
    let head_len = u32::from_le_bytes([whole[0], whole[1], whole[2], whole[3]]) as usize;
    let has_body = match whole[4] {
        0 => false,
        1 | LENT => true,
        b => return Err(format!("body flag {b}")),
    };
    let Some(end) = PREFIX.checked_add(head_len).filter(|&e| e <= whole.len()) else {
        return Err(format!(
            "a head of {head_len} bytes in a frame of {}",
            whole.len()
        ));
    };
    let head = &whole[PREFIX..end];
    let body = if whole[4] == LENT {
        match fetch(from, Descriptor::parse(&whole[end..])?)? {
            Some(b) => b,
            None => return Ok(()),
        }
    } else if has_body {
        whole[end..].to_vec()
    } else if end != whole.len() {
        return Err(format!("{} bytes after a bodiless head", whole.len() - end));
    } else {
        // The sink copies out only what it keeps (one message: its bytes).
        return sink.deliver_head(from, head);
    };
    sink.deliver(from, Arc::from(head), Some(body))
}
