//! The detector: one idle hook for every paradigm. When a runtime is quiet (every
//! worker idle, queues empty, no timer armed that could wake one of its tasks — another
//! runtime's timers and work do not count; `runtime/context.rs`), it asks each
//! contributor (CSP networks, registered by `csp::deadlock`) to check its own waits,
//! and checks the wait-for graph of the nodes (`node.rs`):
//!
//! * a **cycle** of blocked nodes, each waiting for the next (actor A waits for the reply
//!   of B, or for room in B's full mailbox, and B for A…): none can take a message
//!   while it waits, so none of the waits can end;
//! * a **stalled world**: every location of a one-rank world blocked, at least one in a
//!   fence or collective that needs the others, which wait elsewhere (a channel, a
//!   message, an actor) — and the runtime is quiet, so nothing of it can wake them.
//!
//! Both are judged with a double collect of the nodes' state words (`node.rs`): the
//! same words twice, with the runtime quiet before and after, mean the nodes stayed
//! blocked on what they noted, at once.
//!
//! Limits: a plain thread (not a task of the runtime) holding the other end of a
//! channel a location waits on could still act; the runtime cannot see it (as for CSP
//! networks, see `csp::deadlock`). Here a world stall is judged within one rank; a
//! world of several ranks is judged by the world's cross-rank stall check (a
//! contributor's check, `world/stall.rs`), and `sync_rmi` cycles across ranks by the
//! RMI layer's chain, both reported through [`declare`].

use crate::loom::{lock, unmodelled, AtomicU8, Ordering};
use std::sync::{Arc, OnceLock};

use super::mode::{deadlock_mode, detecting, DeadlockMode};
use super::node::{self, Kind, Node, On, BLOCKED, ENDED};
use super::report::{BlockedProcess, Deadlock};

/// A contributor's check, run from the idle hook (at most one scan at a time).
pub(crate) type Check = fn();

static CHECKS: unmodelled::Mutex<Vec<Check>> = unmodelled::Mutex::new(Vec::new());

/// Some check was added (read on every idle round, so without the lock).
static HAS_CHECKS: unmodelled::AtomicBool = unmodelled::AtomicBool::new(false);

/// One detector at a time: `SCAN_IDLE`, `SCANNING`, or `SCAN_AGAIN` (another idle
/// worker asked for a scan meanwhile; the scanning worker repeats). See `serialize`.
fn scanner() -> &'static AtomicU8 {
    #[cfg(not(loom))]
    static SCANNER: AtomicU8 = AtomicU8::new(SCAN_IDLE);
    #[cfg(loom)]
    loom::lazy_static! {
        static ref SCANNER: AtomicU8 = AtomicU8::new(SCAN_IDLE);
    }
    &SCANNER
}
const SCAN_IDLE: u8 = 0;
const SCANNING: u8 = 1;
const SCAN_AGAIN: u8 = 2;

/// Installs the idle hook, and the dump signal's handler (see `signal.rs`), once:
/// when the first thing the diagnosis watches is made (an actor, a location, a
/// CSP network, a wait).
pub(crate) fn install() {
    static ONCE: OnceLock<()> = OnceLock::new();
    ONCE.get_or_init(|| {
        crate::runtime::context::set_idle_hook(on_idle);
        if let Err(e) = super::signal::install() {
            eprintln!("{e}");
        }
    });
}

/// Adds a contributor's check (e.g. the CSP networks' scan). Idempotent.
pub(crate) fn add_check(check: Check) {
    install();
    let mut all = lock(&CHECKS);
    if !all.iter().any(|c| *c as usize == check as usize) {
        all.push(check);
        HAS_CHECKS.store(true, Ordering::Relaxed);
    }
}

/// The idle hook. Returns whether to look again later: some waits formed a cycle or a
/// stalled world that could not be judged now (a runtime of theirs not quiet yet, or a
/// word changing during the scan), and nothing may call the hook again otherwise (the
/// workers of that runtime may all be parked by then).
///
/// The calling worker's runtime not quiet (`quiet`) is such a case too, when anything
/// waits at all: the worker may be the last of its runtime to park while another is
/// still searching for work (each then sees the other busy, and both park), or a timer
/// armed off the workers may be pending; once it is quiet, no worker of it calls the
/// hook by itself. This was how a deadlock went unreported beside busy runtimes.
fn on_idle(quiet: &dyn Fn() -> bool) -> bool {
    if !detecting() {
        return false;
    }
    if !quiet() {
        return node::any_waiting() || HAS_CHECKS.load(Ordering::Relaxed);
    }
    let mut again = false;
    serialize(scanner(), || {
        let checks: Vec<Check> = lock(&CHECKS).clone();
        for c in checks {
            c();
        }
        again = scan_nodes();
    });
    again
}

/// Runs `scan` for the calling idle worker, one scanner at a time, without losing a
/// request: a worker that finds a scan under way leaves `SCAN_AGAIN` and returns; the
/// scanner, before it finishes, sees the request (its compare-and-swap back to
/// `SCAN_IDLE` fails) and scans again. The requester may belong to another runtime than
/// the scanner (each network is judged by its own runtime), so a request is never
/// dropped. Everything a requester did before its request happens-before the repeated
/// scan (AcqRel on `state`). Model-checked in `loom_tests`.
fn serialize(state: &AtomicU8, mut scan: impl FnMut()) {
    let mut now = state.load(Ordering::Acquire);
    loop {
        let (from, to) = match now {
            SCAN_IDLE => (SCAN_IDLE, SCANNING),
            SCANNING => (SCANNING, SCAN_AGAIN),
            _ => return, // a request is pending already
        };
        match state.compare_exchange(from, to, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) if from == SCAN_IDLE => break,
            Ok(_) => return, // the scanner will scan again
            Err(seen) => now = seen,
        }
    }
    loop {
        scan();
        if state
            .compare_exchange(SCANNING, SCAN_IDLE, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
        {
            return;
        }
        // A request came in meanwhile (`SCAN_AGAIN`, read with Acquire).
        state.store(SCANNING, Ordering::Relaxed);
    }
}

/// Declares a deadlock found by any contributor: prints it on stderr and remembers it
/// as the last one ([`last_deadlock`](super::last_deadlock)).
pub(crate) fn declare(report: &Deadlock) {
    // One write: the lines of one report stay together beside other threads'
    // (and under `mpirun --tag-output`, each line keeps its rank's tag).
    let text = format!("{report}\n");
    let _ = std::io::Write::write_all(&mut std::io::stderr().lock(), text.as_bytes());
    *lock(&LAST) = Some(report.clone());
}

static LAST: unmodelled::Mutex<Option<Deadlock>> = unmodelled::Mutex::new(None);

/// The last deadlock declared in this process, if any.
pub(crate) fn last() -> Option<Deadlock> {
    lock(&LAST).clone()
}

/// Looks for cycles and stalled worlds among the nodes (see the module docs); returns
/// whether a candidate could not be judged now (to look again later).
fn scan_nodes() -> bool {
    if !node::any_waiting() {
        return false;
    }
    let nodes = node::all();
    lock(&REPORTED).retain(|&(id, word)| nodes.iter().any(|n| n.id == id && n.word() == word));
    let blocked: Vec<(usize, u64)> = nodes
        .iter()
        .enumerate()
        .filter_map(|(k, n)| {
            let w = n.word();
            (Node::state_of(w) == BLOCKED).then_some((k, w))
        })
        .collect();
    if blocked.is_empty() {
        return false;
    }
    let waits: Vec<(usize, u64, node::Wait)> = blocked
        .iter()
        .filter_map(|&(k, w)| nodes[k].wait().map(|wait| (k, w, wait)))
        .collect();
    // The candidate sets: cycles through `On::Node`, and stalled worlds.
    // (members, how many of them form the cycle: 0 for a stalled world).
    let mut found: Vec<(Vec<usize>, usize)> = Vec::new();
    // Every cycle, not only the first: one that cannot be judged now (its runtime busy
    // or gone) must not hide another.
    found.extend(cycles(&nodes, &waits));
    found.extend(stalled_worlds(&nodes, &waits).into_iter().map(|s| (s, 0)));
    let mut again = false;
    for (members, in_cycle) in found {
        let is_cycle = in_cycle > 0;
        // Double collect: the runtimes quiet, the words unchanged.
        let quiet = || members.iter().all(|&k| nodes[k].runtime.is_quiet());
        if !quiet() {
            again = true;
            continue;
        }
        let same = members.iter().all(|&k| {
            let before = waits.iter().find(|w| w.0 == k).map(|w| w.1);
            // An ended location stays ended.
            before == Some(nodes[k].word()) || Node::state_of(nodes[k].word()) == ENDED
        });
        if !same || !quiet() {
            again = true;
            continue;
        }
        let report = describe(&nodes, &waits, &members, in_cycle);
        declare(&report);
        if deadlock_mode() == DeadlockMode::Fail {
            let report = Arc::new(report);
            for &k in &members {
                // In a cycle every wait fails; in a stalled world, the world-wide ones.
                let fails = is_cycle
                    || waits
                        .iter()
                        .any(|w| w.0 == k && matches!(w.2.on, On::World(_)));
                if fails {
                    nodes[k].fail(Arc::clone(&report));
                }
            }
        } else {
            // Report only: do not report the same waits again.
            let mut r = lock(&REPORTED);
            for &k in &members {
                r.push((nodes[k].id, nodes[k].word()));
            }
        }
    }
    again
}

/// Waits already reported in report-only mode, as (node id, state word): a node that
/// has been polled since (its word changed) may be reported again.
static REPORTED: unmodelled::Mutex<Vec<(u64, u64)>> = unmodelled::Mutex::new(Vec::new());

fn reported(n: &Node) -> bool {
    lock(&REPORTED).contains(&(n.id, n.word()))
}

/// The nodes a blocked node waits for (indices into `nodes`), any one of which
/// could end its wait; `None` if it waits on something the detector cannot
/// follow (a channel of unknown sender, a world-wide wait, a node or location
/// not in this process).
fn successors(nodes: &[Arc<Node>], on: &On) -> Option<Vec<usize>> {
    let one = |on: &On| -> Option<usize> {
        match *on {
            On::Node(id) => nodes.iter().position(|n| n.id == id),
            On::Location { world, index } => nodes
                .iter()
                .position(|n| n.kind == Kind::Location && n.world == world && n.index == index),
            _ => None,
        }
    };
    match on {
        On::AnyOf(ons) => ons.iter().map(one).collect(),
        on => one(on).map(|k| vec![k]),
    }
}

/// Every cycle of blocked nodes through waits that name whom they wait for
/// (indices into `nodes`), each with the nodes stuck behind it.
///
/// A node stuck in a selection waits on any of several ([`On::AnyOf`]): it can
/// no longer progress only if every one of them cannot. So the *stuck* set is
/// found first, as a fixpoint: the blocked nodes with followable waits, less,
/// repeatedly, any whose wait has a successor outside the set. Every node left
/// has all its successors in the set, so following the first one from any of
/// them ends in a cycle; the report is that cycle, and its members are the
/// cycle and the stuck nodes it reaches (the double collect watches them all:
/// any of them running again could wake the cycle).
fn cycles(nodes: &[Arc<Node>], waits: &[(usize, u64, node::Wait)]) -> Vec<(Vec<usize>, usize)> {
    let mut stuck: Vec<(usize, Vec<usize>)> = waits
        .iter()
        .filter_map(|(k, _, w)| successors(nodes, &w.on).map(|s| (*k, s)))
        .collect();
    loop {
        let before = stuck.len();
        let ks: Vec<usize> = stuck.iter().map(|s| s.0).collect();
        stuck.retain(|(_, succ)| succ.iter().all(|u| ks.contains(u)));
        if stuck.len() == before {
            break;
        }
    }
    let next = |k: usize| -> &[usize] {
        stuck
            .iter()
            .find(|s| s.0 == k)
            .map_or(&[][..], |s| s.1.as_slice())
    };
    let mut found: Vec<(Vec<usize>, usize)> = Vec::new();
    for &(start, _) in &stuck {
        if found.iter().any(|c| c.0.contains(&start)) {
            continue;
        }
        let mut path = vec![start];
        let mut v = next(start).first().copied();
        while let Some(u) = v {
            if let Some(p) = path.iter().position(|&q| q == u) {
                let mut c = path[p..].to_vec();
                let in_cycle = c.len();
                // The stuck nodes the cycle reaches (through any arm).
                let mut i = 0;
                while i < c.len() {
                    for &w in next(c[i]) {
                        if !c.contains(&w) {
                            c.push(w);
                        }
                    }
                    i += 1;
                }
                let overlaps = found.iter().any(|f| f.0.iter().any(|k| c.contains(k)));
                if !c.iter().any(|&k| reported(&nodes[k])) && !overlaps {
                    found.push((c, in_cycle));
                }
                break;
            }
            if path.len() > nodes.len() {
                break;
            }
            path.push(u);
            v = next(u).first().copied();
        }
    }
    found
}

/// Worlds whose every local location is blocked or has ended, one at least blocked on
/// a world-wide wait, on a world of one rank (indices of its locations); each of its
/// locations must have a node (a world whose run is still starting is not judged:
/// a location without a node yet is about to run, not stopped). A location
/// whose body returned never enters a fence or collective again: one that waits in a
/// fence the others already left (it fenced once more than they did) waits forever.
fn stalled_worlds(nodes: &[Arc<Node>], waits: &[(usize, u64, node::Wait)]) -> Vec<Vec<usize>> {
    let mut out = Vec::new();
    for (waiter, _, w) in waits {
        let On::World(world) = w.on else { continue };
        if out
            .iter()
            .any(|s: &Vec<usize>| s.iter().any(|&k| nodes[k].world == world))
        {
            continue;
        }
        let locs: Vec<usize> = (0..nodes.len())
            .filter(|&k| nodes[k].kind == Kind::Location && nodes[k].world == world)
            .collect();
        let single_rank = locs.iter().all(|&k| nodes[k].ranks == 1);
        // A node for every location of the world: one missing is a location whose
        // run has not started yet (it will, and may join the wait), not a stopped one.
        // (Counted by the waiter's world: a node left over from an earlier world at
        // the same address does not make this one incomplete.)
        let complete =
            (0..nodes[*waiter].locations).all(|i| locs.iter().any(|&k| nodes[k].index == i));
        let all_blocked = locs
            .iter()
            .all(|&k| waits.iter().any(|w| w.0 == k) || Node::state_of(nodes[k].word()) == ENDED);
        let reported = locs.iter().any(|&k| reported(&nodes[k]));
        if single_rank && complete && all_blocked && !reported && !locs.is_empty() {
            out.push(locs);
        }
    }
    out
}

/// What an ended location of a stalled world does.
pub(crate) const ENDED_TEXT: &str =
    "has ended (its body returned): it will never enter a fence or collective again";

fn describe(
    nodes: &[Arc<Node>],
    waits: &[(usize, u64, node::Wait)],
    members: &[usize],
    in_cycle: usize,
) -> Deadlock {
    let procs = members
        .iter()
        .map(|&k| {
            let what = waits.iter().find(|w| w.0 == k).map_or_else(
                || {
                    if Node::state_of(nodes[k].word()) == ENDED {
                        ENDED_TEXT.to_string()
                    } else {
                        String::new()
                    }
                },
                |w| w.2.describe(),
            );
            BlockedProcess::new(nodes[k].name.clone(), what).on_rank(nodes[k].rank)
        })
        .collect();
    let cycle = if in_cycle > 0 {
        let mut c: Vec<String> = members[..in_cycle]
            .iter()
            .map(|&k| nodes[k].name.clone())
            .collect();
        c.push(nodes[members[0]].name.clone());
        c
    } else {
        Vec::new()
    };
    Deadlock::new(procs, cycle)
}

#[cfg(all(test, loom))]
mod loom_tests {
    use super::{serialize, SCAN_IDLE};
    use crate::loom::{thread, Arc, AtomicBool, AtomicU8, Mutex, Ordering};

    /// Two idle workers each publish a change and ask for a scan: some scan sees both
    /// changes (no request is lost while another scan runs).
    #[test]
    fn no_scan_request_is_lost() {
        loom::model(|| {
            let state = Arc::new(AtomicU8::new(SCAN_IDLE));
            let flags = Arc::new([AtomicBool::new(false), AtomicBool::new(false)]);
            let seen = Arc::new(Mutex::new(Vec::new()));
            let workers: Vec<_> = (0..2)
                .map(|i| {
                    let (state, flags, seen) = (state.clone(), flags.clone(), seen.clone());
                    thread::spawn(move || {
                        flags[i].store(true, Ordering::Relaxed);
                        serialize(&state, || {
                            let both = flags[0].load(Ordering::Relaxed)
                                && flags[1].load(Ordering::Relaxed);
                            seen.lock().unwrap().push(both);
                        });
                    })
                })
                .collect();
            for w in workers {
                w.join().unwrap();
            }
            assert!(seen.lock().unwrap().contains(&true));
            assert_eq!(state.load(Ordering::Relaxed), SCAN_IDLE);
        });
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::stalled_worlds;
    use crate::diag::node::{Kind, Node, On, Wait, What};
    use std::sync::Arc;

    /// A world's id no real world has (a real one is an address, aligned).
    const WORLD: u64 = 0x7777_0001;

    /// The location nodes `indices` of a one-rank world of three locations.
    fn locations(indices: &[u32]) -> Vec<Arc<Node>> {
        indices
            .iter()
            .map(|&i| Node::new(Kind::Location, format!("location {i}"), 0, WORLD, 1, i, 3))
            .collect()
    }

    /// Every node of `nodes` blocked in collective #49.
    fn in_collective(nodes: &[Arc<Node>]) -> Vec<(usize, u64, Wait)> {
        (0..nodes.len())
            .map(|k| {
                let wait = Wait {
                    on: On::World(WORLD),
                    what: What::Collective(49),
                };
                (k, nodes[k].word(), wait)
            })
            .collect()
    }

    /// A location blocked in a collective while the others of its world have no
    /// node yet (their run is still starting) is not a stalled world: they will
    /// join it. (The false report this prevents named location 0 alone.)
    #[test]
    fn a_world_with_locations_not_started_is_not_judged() {
        let first = locations(&[0]);
        assert_eq!(
            stalled_worlds(&first, &in_collective(&first)),
            Vec::<Vec<usize>>::new()
        );
        let two = locations(&[0, 2]);
        assert_eq!(
            stalled_worlds(&two, &in_collective(&two)),
            Vec::<Vec<usize>>::new()
        );
    }

    /// With a node for each location, all blocked, the world is judged stalled.
    #[test]
    fn a_world_with_every_location_blocked_is_judged() {
        let all = locations(&[0, 1, 2]);
        assert_eq!(
            stalled_worlds(&all, &in_collective(&all)),
            vec![vec![0, 1, 2]]
        );
    }
}
