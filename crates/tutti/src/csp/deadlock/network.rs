//! A process network: the registry of its members, and the detector that declares it
//! deadlocked.
//!
//! # When the detector runs
//!
//! Only when the runtime is *quiet*: every worker idle with empty queues and no timer
//! armed (`runtime/context.rs`, the idle hook). A network is judged by the quietness of
//! *its own* runtime (the one its root `par` was started on, where all its processes
//! run), whichever runtime's idle worker runs the scan: another runtime being quiet says
//! nothing about this one's queues. Then no task runs or is queued, so every
//! member that is not finished is parked in some future, and nothing inside the runtime
//! can wake it. What can still wake a member: a timer (none is armed), a party outside
//! the runtime's tasks (a plain thread, or a task woken by one), or something the CSP
//! layer cannot see (a foreign future). The detector declares a deadlock only if every
//! member's last poll noted CSP waits, all on objects *internal* to the network
//! (`home.rs`: created by one of its members and never acted on from outside), so that
//! only another member could complete them — and every member is blocked.
//!
//! # Finding the members
//!
//! The network keeps no registry: its processes are tagged tasks of its runtime, and the
//! detector walks that runtime's live list (holding its locks, so that no task starts or
//! stops being live meanwhile), keeping the processes whose `par` belongs to this network.
//! It holds the write side of the scan gate throughout; a process marks itself ended under
//! the read side (`member.rs`), so every member it sees not ended stays readable.
//!
//! # Consistency: double collect
//!
//! Members write their state word themselves, without locks (`member.rs`). The detector
//! reads every member's word twice and also checks the runtime is still quiet and the
//! network's *outside epoch* has not moved. Each poll changes the word (its poll count),
//! so equal reads mean no member was polled in between: at the moment between the two
//! collects, all were blocked at once.
//!
//! # Outside actions
//!
//! An object acted on from outside its network is marked (sticky) and the network's
//! outside epoch is incremented, flag first. A member's first wait of a poll is judged
//! here, by the detector: it reads the object's flag during the scan, between its two
//! reads of the epoch, so an outside action that completed before the second read is
//! seen (the flag, or the epoch moved). The member's further waits of the same poll (an
//! `Alt`'s other guards) are judged when they are noted, and the first of them that is
//! internal records the epoch it read before reading the flag (`member.rs`); a member
//! whose recorded epoch is not the current one may have noted an object as internal
//! just before someone outside touched it, so it counts as not deadlockable until it
//! blocks again. (If the member read the new epoch, it read the flag after it, and saw
//! it set: the increment follows the flag, and the Acquire read of the epoch
//! synchronizes with it.) A poll that judged no wait when it noted it records no epoch:
//! it reads none, which keeps a poll of a process free of the network's word.
//!
//! # After the declaration
//!
//! The report is stored and printed, and every member's task is cancelled: its future is
//! dropped (withdrawing its pending operations, so no value is lost), and the process
//! ends reporting the deadlock. The root `par` then completes with `Err(Deadlock)`.

use crate::loom::{lock, unmodelled, AtomicU32, Ordering};
use std::sync::{Arc, OnceLock, Weak};

use crate::runtime::context::RuntimeRef;
use crate::runtime::task::RawTask;

use super::home::{HomeInner, Object, Side};
use super::member::{self, Member, Snapshot, Wait};
use crate::csp::par::process_name;
use crate::diag::{BlockedProcess, Deadlock};

/// Every root network that may still have members.
static NETWORKS: unmodelled::Mutex<Vec<Weak<Network>>> = unmodelled::Mutex::new(Vec::new());

/// Held (write) by a detector for its whole scan. Objects' records are not freed while it
/// is held (see `HomeInner`'s drop), and processes mark themselves ended under its read
/// side (`member.rs`).
#[cfg(not(loom))]
pub(crate) static SCAN_GATE: unmodelled::RwLock<()> = unmodelled::RwLock::new(());

// Under loom the gate is loom's, made afresh in each model execution (the
// member model takes it from two threads).
#[cfg(loom)]
loom::lazy_static! {
    pub(crate) static ref SCAN_GATE: crate::loom::RwLock<()> = crate::loom::RwLock::new(());
}

/// A process network: the processes of one root `par` and of every `par` nested in them.
pub(crate) struct Network {
    outside_epoch: AtomicU32,
    report: OnceLock<Deadlock>,
    /// Position (in the runtime's live list) where the last scan met a member that was
    /// not blocked: the next scan starts there.
    resume: AtomicU32,
    /// The runtime the network's processes run on.
    runtime: RuntimeRef,
}

impl Network {
    /// A new root network, known to the detector.
    pub(crate) fn new_root() -> Arc<Network> {
        crate::diag::add_check(on_idle);
        crate::diag::add_source(dump_processes);
        let net = Arc::new(Network {
            outside_epoch: AtomicU32::new(0),
            report: OnceLock::new(),
            resume: AtomicU32::new(0),
            runtime: RuntimeRef::current(),
        });
        let mut all = lock(&NETWORKS);
        if all.len() >= 64 && all.len().is_power_of_two() {
            all.retain(|w| w.strong_count() > 0);
        }
        all.push(Arc::downgrade(&net));
        net
    }

    /// A network unknown to the detector, on no runtime, for the loom models.
    #[cfg(all(test, loom))]
    pub(crate) fn for_model() -> Arc<Network> {
        Arc::new(Network {
            outside_epoch: AtomicU32::new(0),
            report: OnceLock::new(),
            resume: AtomicU32::new(0),
            runtime: RuntimeRef::none(),
        })
    }

    /// The deadlock declared for this network, if any.
    pub(crate) fn deadlock(&self) -> Option<&Deadlock> {
        self.report.get()
    }

    #[inline]
    pub(crate) fn outside_epoch(&self) -> u32 {
        self.outside_epoch.load(Ordering::Acquire)
    }

    /// Someone outside the network acted on one of its objects (after marking it).
    pub(crate) fn outside_acted(&self) {
        self.outside_epoch.fetch_add(1, Ordering::SeqCst);
    }

    /// Whether the first wait `m` noted (the detector's job; see `member::note`) is on
    /// an object internal to this network, or on a nested `par`.
    ///
    /// Called with the scan gate held, after reading its state as blocked: the object is
    /// alive (the member's pending future borrows an end of it, a first wait withdrawn in
    /// its poll was forgotten there — `member.rs`, "A withdrawn first wait" — and a
    /// record is not freed while the gate is held).
    fn waits_inside(&self, m: &Member) -> bool {
        let (wait, _, object) = m.wait();
        if wait == Some(Wait::Par) {
            return true;
        }
        // SAFETY: see above.
        unsafe { object.as_ref() }.is_some_and(|h| h.is_internal_to(self))
    }

    /// Declares the deadlock if the network is deadlocked now (see the module docs):
    /// stores the report and cancels every member. Returns the report.
    fn check(&self, quiet: &dyn Fn() -> bool) -> Option<Deadlock> {
        if self.report.get().is_some() {
            return None;
        }
        let gate = SCAN_GATE.write().unwrap_or_else(|e| e.into_inner());
        let declared = self.runtime.with_tagged(|tagged| {
            // Quiet before the first collect too: a member woken since its last poll (its
            // first wait completed, or its barrier's phase) is polled again, resetting its
            // note, before the detector follows that note's object (`member.rs`, "A
            // withdrawn first wait").
            if !quiet() {
                return None;
            }
            let epoch = self.outside_epoch();
            // The members, in live-list order: each is a tagged task whose future starts
            // with its `Member` (the `repr(C)` `Process`).
            let mut all: Vec<(&Member, RawTask)> = Vec::new();
            tagged.for_each(|future, task| {
                // SAFETY: tagged tasks are CSP processes, whose future is a `repr(C)`
                // `Process` starting with its `Member`; the task is live (its future is
                // present) while the live list is locked.
                let m = unsafe { &*future.cast::<Member>() };
                // An ended member may have released its `par`: never look further.
                if m.snapshot().state() != member::ENDED && m.is_in(self) {
                    all.push((m, task));
                }
            });
            if all.is_empty() {
                return None;
            }
            // Collect 1, starting where the last scan stopped.
            let n = all.len();
            let start = (self.resume.load(Ordering::Relaxed) as usize).min(n - 1);
            let mut seen: Vec<Snapshot> = vec![Snapshot { word: 0 }; n];
            for k in (start..n).chain(0..start) {
                let m = all[k].0;
                let s = m.snapshot();
                if s.state() != member::BLOCKED_CSP
                    || s.epoch_read().is_some_and(|e| e != epoch)
                    || !self.waits_inside(m)
                {
                    self.resume.store(k as u32, Ordering::Relaxed);
                    return None;
                }
                seen[k] = s;
            }
            if !quiet() {
                return None;
            }
            // Collect 2.
            if all.iter().zip(&seen).any(|((m, _), s)| m.snapshot() != *s) {
                return None;
            }
            if self.outside_epoch() != epoch || !quiet() {
                return None;
            }
            // Deadlocked. Describe it while everything is still in place, publish the
            // report (the cancelled processes read it), then cancel them.
            let members: Vec<&Member> = all.iter().map(|(m, _)| *m).collect();
            let report = describe(&members);
            if self.report.set(report.clone()).is_err() {
                return None;
            }
            // Report-only: the report is kept (so it is declared once), the processes
            // keep waiting.
            if crate::diag::deadlock_mode() == crate::diag::DeadlockMode::Fail {
                for (_, task) in &all {
                    task.cancel();
                }
            }
            Some(report)
        });
        drop(gate);
        declared.flatten()
    }
}

/// The check `diag`'s idle hook runs (one scan at a time, no request lost: see
/// `diag/detect.rs`): looks for deadlocked networks, each judged by its own runtime's
/// quietness (see `scan`).
fn on_idle() {
    if super::enabled() {
        scan();
    }
}

/// Checks every network once, each by its own runtime's quietness.
fn scan() {
    let nets: Vec<Arc<Network>> = {
        let mut all = lock(&NETWORKS);
        all.retain(|w| w.strong_count() > 0);
        all.iter().filter_map(Weak::upgrade).collect()
    };
    for net in nets {
        if let Some(report) = net.check(&|| net.runtime.is_quiet()) {
            crate::diag::declare(&report);
        }
    }
}

/// `diag`'s dump source: every live process of every network, with its state and (if
/// blocked on CSP operations) what it waits on.
fn dump_processes(out: &mut Vec<crate::diag::Entry>) {
    let nets: Vec<Arc<Network>> = {
        let all = lock(&NETWORKS);
        all.iter().filter_map(Weak::upgrade).collect()
    };
    let rank = crate::diag::rank();
    for net in nets {
        let gate = SCAN_GATE.write().unwrap_or_else(|e| e.into_inner());
        net.runtime.with_tagged(|tagged| {
            let mut blocked: Vec<&Member> = Vec::new();
            let mut others: Vec<(&Member, u64)> = Vec::new();
            tagged.for_each(|future, _| {
                // SAFETY: as in `Network::check`: tagged tasks are processes starting
                // with their `Member`, live while the list is locked.
                let m = unsafe { &*future.cast::<Member>() };
                let state = m.snapshot().state();
                if state != member::ENDED && m.is_in(&net) {
                    if state == member::BLOCKED_CSP {
                        blocked.push(m);
                    } else {
                        others.push((m, state));
                    }
                }
            });
            for p in describe(&blocked).processes() {
                out.push(crate::diag::Entry {
                    kind: "process",
                    name: p.name().to_string(),
                    rank,
                    state: "blocked",
                    waits: Some(p.waits().to_string()),
                });
            }
            for (m, state) in others {
                out.push(crate::diag::Entry {
                    kind: "process",
                    name: m.name(),
                    rank,
                    state: if state == member::RUNNING {
                        "running"
                    } else {
                        "blocked"
                    },
                    waits: (state != member::RUNNING)
                        .then(|| "waits on something outside its network".to_string()),
                });
            }
        });
        drop(gate);
    }
}

/// Builds the report: each blocked process, what it waits on, and a wait-for cycle.
fn describe(members: &[&Member]) -> Deadlock {
    let mut objects: Vec<*const HomeInner> = Vec::new();
    let mut object_name = |h: &HomeInner| -> String {
        let p: *const HomeInner = h;
        let k = match objects.iter().position(|&o| std::ptr::eq(o, p)) {
            Some(k) => k,
            None => {
                objects.push(p);
                objects.len() - 1
            }
        };
        let what = match h.object {
            Object::Channel(0) => "channel",
            Object::Channel(crate::csp::channel::UNBOUNDED) => "unbounded channel",
            Object::Channel(_) => "buffered channel",
            Object::Barrier => "barrier",
            Object::Timer => "timer channel",
        };
        match &h.name {
            Some(n) => format!("{what} `{n}`"),
            None => format!("{what} #{}", k + 1),
        }
    };

    let mut processes = Vec::with_capacity(members.len());
    let mut next: Vec<Option<usize>> = Vec::with_capacity(members.len());
    for m in members {
        let (wait, count, object) = m.wait();
        // SAFETY: the member is blocked on `object` (its pending future borrows an end of
        // it; a withdrawn first wait is forgotten, `member.rs`), and records are not freed
        // while we hold the scan gate.
        let object = unsafe { object.as_ref() };
        let target = match (wait, object) {
            (Some(Wait::Par), _) => "for its PAR (nested processes) to end".to_string(),
            (Some(w), Some(h)) => {
                let name = object_name(h);
                match w {
                    Wait::Send => format!("to send on {name}"),
                    Wait::Recv => format!("to receive from {name}"),
                    Wait::AltRecv if count > 1 => {
                        format!("in an ALT over {count} guards (receive from {name}, …)")
                    }
                    Wait::AltRecv => format!("in an ALT (receive from {name})"),
                    Wait::AltSend if count > 1 => {
                        format!("in an ALT over {count} guards (send on {name}, …)")
                    }
                    Wait::AltSend => format!("in an ALT (send on {name})"),
                    Wait::Barrier => format!("at {name}"),
                    Wait::Par => unreachable!(),
                }
            }
            _ => "on a CSP operation".to_string(),
        };
        let peer_side = match wait {
            Some(Wait::Send | Wait::AltSend) => Some(Side::Recv),
            Some(Wait::Recv | Wait::AltRecv) => Some(Side::Send),
            _ => None,
        };
        let peer = peer_side
            .zip(object)
            .and_then(|(side, h)| h.last(side))
            .and_then(|id| members.iter().position(|q| q.id() == id));
        next.push(peer);
        processes.push(BlockedProcess::new(m.name(), format!("waits {target}")));
    }
    let cycle = find_cycle(&next)
        .into_iter()
        .map(|k| processes[k].name().to_string())
        .collect();
    Deadlock::new(processes, cycle)
}

/// A cycle in the functional graph `next` (each node has at most one successor), as the
/// node sequence with the first node repeated at the end; empty if there is none.
fn find_cycle(next: &[Option<usize>]) -> Vec<usize> {
    let n = next.len();
    let mut color = vec![0u8; n]; // 0 new, 1 on the current path, 2 done
    for s in 0..n {
        let mut path = Vec::new();
        let mut v = Some(s);
        while let Some(u) = v {
            match color[u] {
                0 => {
                    color[u] = 1;
                    path.push(u);
                    v = next[u];
                }
                1 => {
                    let from = path.iter().position(|&p| p == u).unwrap_or(0);
                    let mut cycle = path[from..].to_vec();
                    cycle.push(u);
                    return cycle;
                }
                _ => break,
            }
        }
        for p in path {
            color[p] = 2;
        }
    }
    Vec::new()
}

impl Member {
    /// The member's process name, as the `par`s that started it name it.
    fn name(&self) -> String {
        process_name(self.par(), self.index())
    }
}

impl Drop for HomeInner {
    fn drop(&mut self) {
        // A first wait on the object noted in the poll that frees it is forgotten, so that
        // no member seen blocked keeps a pointer to a freed record (`member.rs`).
        member::freed(self);
        // Wait for a detector that may be reading this record (see `Network::check`).
        drop(SCAN_GATE.read().unwrap_or_else(|e| e.into_inner()));
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::find_cycle;

    #[test]
    fn cycles_in_functional_graphs() {
        assert_eq!(find_cycle(&[Some(1), Some(0)]), vec![0, 1, 0]);
        assert_eq!(find_cycle(&[Some(1), Some(2), Some(1)]), vec![1, 2, 1]);
        assert_eq!(find_cycle(&[Some(1), None]), Vec::<usize>::new());
        assert_eq!(find_cycle(&[Some(0)]), vec![0, 0]);
        assert_eq!(
            find_cycle(&[None, Some(2), Some(3), Some(1)]),
            vec![1, 2, 3, 1]
        );
    }
}
