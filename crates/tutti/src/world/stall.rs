//! The cross-rank stall check: a fence or collective that cannot complete because
//! a location on *another* rank waits forever (on a channel, an ask, a message,
//! a different collective) — or because the ranks run different collectives at
//! the same point, which no frame reveals when one rank is in a quiescence wave
//! summed by the engine (the lost diagnosis, `collective.rs`).
//!
//! Each rank judges only itself: it is *locally stalled* when every location of
//! the world on it is blocked (`crate::diag` nodes, their state words), its
//! runtime is quiet, and so are the runtimes of the actors the locations wait
//! for — read twice with the same words and the same count of arrivals (frames
//! delivered from other ranks, summed waves, deaths) in between, and again
//! [`STALL_AGE`] later (so a rank waiting a moment in a busy program's fence
//! sends nothing). Only then does it take part, through frames of the world's
//! transport (any transport):
//!
//! 1. **Mark.** The rank numbers the stall (`seq`, per rank) and sends a *mark*
//!    to every other rank.
//! 2. **Confirm.** Once it holds a mark from every other rank, and is still
//!    stalled with the same words and arrivals as when it marked, it sends rank 0
//!    a *confirmation*: its `seq`, the marks it holds, and what each of its
//!    locations waits on (with the kind and root of its collectives).
//! 3. **Decide.** Rank 0 decides once it holds a confirmation from every rank
//!    (its own included) and they agree: each rank's confirmation lists, as the
//!    mark of every other rank, exactly that rank's confirmed `seq`.
//!    If some location waits on a collective that every location of the world
//!    has joined (it has started more collectives than that epoch) with the same
//!    kind and root on every rank, the collective will complete (its messages are
//!    in flight): no report. Otherwise rank 0 sends every rank the *verdict*
//!    (the report), and each rank that is still at that stall prints it and tells
//!    rank 0 so. In [`Fail`](crate::diag::DeadlockMode::Fail) mode, once every
//!    rank has printed it, rank 0 tells every rank to fail, and each fails every
//!    fence and collective of its locations with the report (the location panics
//!    with it; with several ranks the job is then taken down) — printing first
//!    on every rank, so that no rank is taken down before it said what it saw.
//!    [`Report`](crate::diag::DeadlockMode::Report) mode only prints.
//!
//! # Why a busy program is never reported
//!
//! Frames from one rank to another arrive in the order they were handed over
//! (the transport's contract), and a mark travels behind every frame its rank
//! sent before it. Suppose rank 0 decides, and yet some rank `D` runs again after
//! it marked; take the first such run in time. Something woke `D`: not its own
//! locations, actors or timers (it was quiet, none armed), so a frame (or a
//! summed wave) delivered to it. A frame `f` sent by rank `S`: if `S` sent it
//! after marking, `S` ran after its mark earlier — not the first. So `S` sent
//! `f` before its mark, and `f` reached `D` before that mark did. `D` confirmed
//! only after holding that mark, having found the same words and arrivals as
//! when it marked: so `f` arrived before `D` marked, and a wake-up from it would
//! have made `D` not quiet (or changed a word) when it judged itself stalled. A
//! contradiction: no rank runs again. What is left are the engine's own wave
//! messages (the sum of a quiescence wave under MPI travels outside the frames):
//! they complete only a collective every location has joined with the same
//! kind, which the decision rules out. A later stall is a new `seq`, so stale
//! confirmations never agree with new marks.
//!
//! Limits (as for the one-rank check, `diag/detect.rs`): a plain thread (not a
//! task of a runtime) or a task of another runtime that feeds a channel a
//! location waits on could still act, unseen. Locations whose body has ended do
//! not take part (their rank is not stalled). Nothing of this runs on the
//! message path but one count per frame arriving from another rank; the check
//! itself runs from the idle hook of `crate::diag`, and does nothing unless every
//! location of the rank is blocked.

use std::sync::{Arc, OnceLock, Weak};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::collective::Kind;
use super::frame::{self, Frame, StallHead};
use super::rank::Local;
use super::transport::Transport;
use crate::diag::node::{self, Node, On, What, BLOCKED};
use crate::diag::{BlockedProcess, Deadlock, DeadlockMode};
use crate::loom::{lock, unmodelled, AtomicBool, AtomicU64, Mutex, Ordering};
use crate::msg::codec;

/// How long a rank must stay stalled, unchanged, before it marks.
pub(crate) const STALL_AGE: Duration = Duration::from_millis(20);

const MARK: u64 = 1;
const CONFIRM: u64 = 2;
const VERDICT: u64 = 3;
const PRINTED: u64 = 4;
const FAIL: u64 = 5;

/// The worlds of several ranks in this process (one, in practice), for the check.
static WORLDS: unmodelled::Mutex<Vec<Weak<Local>>> = unmodelled::Mutex::new(Vec::new());

/// Makes `local` (a world of several ranks) known to the check, and the check to
/// the detector.
pub(crate) fn register(local: &Arc<Local>, transport: &Arc<dyn Transport>) {
    let _ = local.stall.transport.set(Arc::downgrade(transport));
    {
        let mut all = lock(&WORLDS);
        all.retain(|w| w.strong_count() > 0);
        all.push(Arc::downgrade(local));
    }
    crate::diag::add_check(check);
}

/// One rank's part of the check (held by its [`Local`]).
pub(crate) struct Stall {
    /// Frames delivered from other ranks, summed waves and deaths: what can wake
    /// this rank from outside.
    arrivals: AtomicU64,
    /// The location nodes of the run under way, in location order.
    nodes: Mutex<Vec<Arc<Node>>>,
    state: Mutex<State>,
    transport: OnceLock<Weak<dyn Transport>>,
    /// A nap task (to look again after [`STALL_AGE`]) is pending.
    napping: AtomicBool,
}

/// A collective in progress on a rank: epoch, kind code, root.
type RoundKind = (u64, u8, u32);

/// What a rank's locations wait on, as confirmed to rank 0.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct Confirm {
    seq: u64,
    /// The mark held from every rank (this rank's own `seq` at its index).
    marks: Vec<u64>,
    waiting: Vec<Waiting>,
    /// Kind and root of every collective in progress on the rank, by epoch.
    rounds: Vec<RoundKind>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
struct Waiting {
    location: u32,
    waits: String,
    /// Collectives the location has started.
    epochs: u64,
    /// The collective it waits in, if it waits on the world.
    epoch: Option<u64>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
struct Verdict {
    seqs: Vec<u64>,
    /// (rank, name, what it waits on).
    waiters: Vec<(u32, String, String)>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct Snap {
    words: Vec<u64>,
    arrivals: u64,
}

struct State {
    /// A stall seen first at that time, not yet marked.
    candidate: Option<(Snap, Instant)>,
    seq: u64,
    /// The stall marked with `seq`.
    marked: Option<Snap>,
    marks: Vec<u64>,
    confirmed: Option<(u64, Vec<u64>)>,
    /// Rank 0: the latest confirmation of each rank.
    confirms: Vec<Option<Confirm>>,
    /// Rank 0: the confirmations last judged (by their seqs).
    judged: Option<Vec<u64>>,
    verdicts: Vec<Verdict>,
    /// The report of the verdict declared for the stall `seq` (its seqs).
    declared: Option<(Vec<u64>, Arc<Deadlock>)>,
    /// Rank 0: the ranks that have printed the declared report.
    printed: Vec<bool>,
    /// Fail the declared stall's waits (rank 0 told so, or is rank 0 and every
    /// rank has printed).
    fail: bool,
    failed: bool,
}

impl Stall {
    pub(crate) fn new(ranks: usize) -> Stall {
        Stall {
            arrivals: AtomicU64::new(0),
            nodes: Mutex::new(Vec::new()),
            state: Mutex::new(State {
                candidate: None,
                seq: 0,
                marked: None,
                marks: vec![0; ranks],
                confirmed: None,
                confirms: vec![None; ranks],
                judged: None,
                verdicts: Vec::new(),
                declared: None,
                printed: vec![false; ranks],
                fail: false,
                failed: false,
            }),
            transport: OnceLock::new(),
            napping: AtomicBool::new(false),
        }
    }

    /// Something arrived from outside this rank (the one cost on the message path).
    #[inline]
    pub(crate) fn arrived(&self) {
        self.arrivals.fetch_add(1, Ordering::SeqCst);
    }

    /// The location nodes of a new run (location order).
    pub(crate) fn set_nodes(&self, nodes: Vec<Arc<Node>>) {
        *lock(&self.nodes) = nodes;
    }

    /// Runs a no-op task on the rank's runtime so that an idle worker calls the
    /// detector's idle hook (and so [`check`]) soon.
    fn nudge(&self) {
        let nodes = lock(&self.nodes);
        if let Some(n) = nodes.first() {
            n.runtime.enter(|| drop(crate::runtime::spawn(async {})));
        }
    }
}

/// A stall-check frame from `from` (the transport's receiving side): stored, and
/// the rank nudged to act on it. An error names what is malformed.
pub(crate) fn incoming(
    local: &Local,
    from: usize,
    head: &StallHead,
    payload: &[u8],
) -> Result<(), String> {
    if head.from_rank as usize != from || from >= local.ranks || from == local.rank {
        return Err(format!(
            "a stall-check frame from rank {from} claims to come from rank {}",
            head.from_rank
        ));
    }
    let bad = |what: &str, e: &dyn std::fmt::Display| {
        format!("a stall-check {what} from rank {from} does not decode: {e}")
    };
    {
        let mut s = lock(&local.stall.state);
        match head.code {
            MARK => s.marks[from] = head.seq,
            CONFIRM if local.rank == 0 => {
                let c: Confirm = codec::decode(payload).map_err(|e| bad("confirmation", &e))?;
                if c.marks.len() != local.ranks || c.seq != head.seq || c.marks[from] != c.seq {
                    return Err(format!(
                        "a stall-check confirmation from rank {from} is inconsistent: seq {} \
                         in a frame of seq {}, marks {:?} for {} ranks",
                        c.seq, head.seq, c.marks, local.ranks
                    ));
                }
                s.confirms[from] = Some(c);
            }
            VERDICT if from == 0 => {
                let v: Verdict = codec::decode(payload).map_err(|e| bad("verdict", &e))?;
                if v.seqs.len() != local.ranks {
                    return Err(format!(
                        "a stall-check verdict from rank 0 names {} ranks (of {})",
                        v.seqs.len(),
                        local.ranks
                    ));
                }
                s.verdicts.push(v);
            }
            PRINTED if local.rank == 0 => {
                let declared = s.declared.as_ref().map(|d| d.0[from]);
                if declared == Some(head.seq) {
                    s.printed[from] = true;
                }
            }
            FAIL if from == 0 => {
                let declared = s.declared.as_ref().map(|d| d.0[local.rank]);
                if declared == Some(head.seq) {
                    s.fail = true;
                }
            }
            code => {
                return Err(format!(
                    "a stall-check frame of code {code} from rank {from} to rank {}",
                    local.rank
                ))
            }
        }
    }
    local.stall.nudge();
    Ok(())
}

/// The detector's check (from an idle hook): every registered world takes a step.
fn check() {
    let worlds: Vec<Arc<Local>> = lock(&WORLDS).iter().filter_map(Weak::upgrade).collect();
    for local in worlds {
        step(&local);
    }
}

/// This rank, if it is stalled: the words of its locations (and of the actors
/// they wait for) and its arrivals, read twice with its runtime quiet around.
fn snapshot(local: &Local, nodes: &[Arc<Node>]) -> Option<Snap> {
    let blocked = |n: &Arc<Node>| Node::state_of(n.word()) == BLOCKED;
    if !nodes.iter().all(blocked) || !nodes[0].runtime.is_quiet() {
        return None;
    }
    let ids: Vec<u64> = nodes
        .iter()
        .filter_map(|n| match n.wait()?.on {
            On::Node(id) => Some(id),
            _ => None,
        })
        .collect();
    let mut watched: Vec<Arc<Node>> = nodes.to_vec();
    if !ids.is_empty() {
        watched.extend(node::all().into_iter().filter(|n| ids.contains(&n.id)));
    }
    let collect = || -> Option<Snap> {
        let arrivals = local.stall.arrivals.load(Ordering::SeqCst);
        let words = watched.iter().map(|n| n.word()).collect();
        watched
            .iter()
            .all(|n| n.runtime.is_quiet())
            .then_some(Snap { words, arrivals })
    };
    let first = collect()?;
    if !nodes.iter().all(blocked) {
        return None;
    }
    (collect()? == first).then_some(first)
}

/// One step of this rank's part (see the module documentation).
fn step(local: &Arc<Local>) {
    let st = &local.stall;
    let nodes = {
        let nodes = lock(&st.nodes);
        // The common case, at once: some location runs or waits for work (a stale
        // candidate is harmless: its words differ from any later snapshot's).
        let blocked = |n: &Arc<Node>| Node::state_of(n.word()) == BLOCKED;
        if nodes.len() != local.per_rank || nodes.is_empty() || !nodes.iter().all(blocked) {
            return;
        }
        nodes.clone()
    };
    let snap = snapshot(local, &nodes);
    let mut out: Vec<(usize, u64, u64, Vec<u8>)> = Vec::new();
    let mut fail: Option<Arc<Deadlock>> = None;
    let mut nap = false;
    {
        let mut s = lock(&st.state);
        let Some(snap) = snap else {
            // Not stalled now (perhaps only for a moment: a nudge's task, a nap's
            // timer). What was marked, confirmed or received stays: it applies only
            // while the words and arrivals are those of the mark.
            s.candidate = None;
            return;
        };
        if s.marked.as_ref() != Some(&snap) {
            match &s.candidate {
                Some((c, at)) if *c == snap && at.elapsed() >= STALL_AGE => {
                    s.candidate = None;
                    s.seq += 1;
                    let seq = s.seq;
                    s.marked = Some(snap.clone());
                    let me = local.rank;
                    s.marks[me] = seq;
                    for r in (0..local.ranks).filter(|&r| r != me) {
                        out.push((r, MARK, seq, Vec::new()));
                    }
                }
                Some((c, _)) if *c == snap => nap = true,
                _ => {
                    s.candidate = Some((snap.clone(), Instant::now()));
                    nap = true;
                }
            }
        }
        if s.marked.as_ref() == Some(&snap) {
            confirm(local, &nodes, &mut s, &mut out);
            if local.rank == 0 {
                if let Some(v) = decide(&mut s) {
                    for r in 1..local.ranks {
                        out.push((r, VERDICT, 0, encode(&v)));
                    }
                    s.verdicts.push(v);
                }
            }
            let seq = s.seq;
            let me = local.rank;
            let verdict = std::mem::take(&mut s.verdicts)
                .into_iter()
                .find(|v| v.seqs[me] == seq);
            if let Some(v) = verdict {
                // Print first, on every rank; fail once every rank has printed
                // (a failing location takes the job down with it).
                let report = Arc::new(report(v.waiters));
                crate::diag::declare(&report);
                s.printed = vec![false; local.ranks];
                s.printed[0] = me == 0;
                s.declared = Some((v.seqs, report));
                s.fail = false;
                s.failed = false;
                if me != 0 {
                    out.push((0, PRINTED, seq, Vec::new()));
                }
            }
            let failing = crate::diag::deadlock_mode() == DeadlockMode::Fail;
            if me == 0 && failing && !s.fail && s.printed.iter().all(|&p| p) {
                if let Some((seqs, _)) = &s.declared {
                    for (r, &q) in seqs.iter().enumerate().skip(1) {
                        out.push((r, FAIL, q, Vec::new()));
                    }
                    s.fail = true;
                }
            }
            if s.fail && !s.failed && failing {
                s.failed = true;
                fail = s.declared.as_ref().map(|d| Arc::clone(&d.1));
            }
        }
    }
    if !out.is_empty() {
        if let Some(t) = st.transport.get().and_then(Weak::upgrade) {
            for (to, code, seq, payload) in out {
                let f: Frame = frame::stall(
                    local.rank as u32,
                    to as u32,
                    code,
                    seq,
                    payload,
                    local.inline_max,
                );
                t.send(to, f);
            }
            t.start_sends();
        }
    }
    if let Some(report) = fail {
        for n in &nodes {
            if n.wait().is_some_and(|w| matches!(w.on, On::World(_))) {
                n.fail(Arc::clone(&report));
            }
        }
    }
    if nap && !st.napping.swap(true, Ordering::AcqRel) {
        let weak = Arc::downgrade(local);
        nodes[0].runtime.enter(|| {
            drop(crate::runtime::spawn(async move {
                crate::runtime::sleep(STALL_AGE).await;
                if let Some(l) = weak.upgrade() {
                    l.stall.napping.store(false, Ordering::Release);
                }
            }))
        });
    }
}

fn encode<T: Serialize>(v: &T) -> Vec<u8> {
    let mut out = Vec::new();
    // Plain structs of integers and strings: encoding cannot fail.
    let _ = codec::encode(v, &mut out);
    out
}

/// Confirms this rank's stall to rank 0 if it holds a mark from every rank and has
/// not confirmed these marks yet.
fn confirm(
    local: &Local,
    nodes: &[Arc<Node>],
    s: &mut State,
    out: &mut Vec<(usize, u64, u64, Vec<u8>)>,
) {
    if s.marks.contains(&0) || s.confirmed.as_ref() == Some(&(s.seq, s.marks.clone())) {
        return;
    }
    s.confirmed = Some((s.seq, s.marks.clone()));
    let rounds = local.rounds.kinds();
    let waiting = nodes
        .iter()
        .enumerate()
        .map(|(i, n)| {
            let slot = &local.slots[i];
            let wait = n.wait();
            let epoch = wait.as_ref().and_then(|w| match (&w.on, &w.what) {
                (On::World(_), What::Fence(e) | What::Collective(e)) => Some(*e),
                _ => None,
            });
            let waits = match (epoch, &wait) {
                (Some(e), Some(w)) => describe_world(e, &rounds, w),
                (_, Some(w)) => w.describe(),
                (_, None) => "is blocked".to_string(),
            };
            Waiting {
                location: slot.id.index() as u32,
                waits,
                epochs: slot.epochs(),
                epoch,
            }
        })
        .collect();
    let c = Confirm {
        seq: s.seq,
        marks: s.marks.clone(),
        waiting,
        rounds,
    };
    if local.rank == 0 {
        s.confirms[0] = Some(c);
    } else {
        out.push((0, CONFIRM, c.seq, encode(&c)));
    }
}

/// What a location waiting in collective `epoch` waits for, with the kind and root
/// this rank runs there.
fn describe_world(epoch: u64, rounds: &[RoundKind], w: &node::Wait) -> String {
    match rounds.iter().find(|r| r.0 == epoch) {
        Some(&(_, kind, root)) if kind != Kind::Quiescence as u8 => {
            format!(
                "waits in collective #{epoch} ({}) for every location to join it",
                kind_text(kind, root)
            )
        }
        _ => w.describe(),
    }
}

fn kind_text(kind: u8, root: u32) -> String {
    let named = Kind::named(kind);
    match kind {
        k if k == Kind::Broadcast as u8 || k == Kind::Scatter as u8 => {
            format!("{named} from location {root}")
        }
        k if k == Kind::Reduce as u8 || k == Kind::Gather as u8 => {
            format!("{named} to location {root}")
        }
        k if k == Kind::Quiescence as u8 => "a fence's quiescence wave".to_string(),
        _ => named,
    }
}

/// Rank 0: judges the confirmations if every rank's is there, they agree, and they
/// were not judged yet; the verdict if the world is deadlocked.
fn decide(s: &mut State) -> Option<Verdict> {
    let all: Vec<&Confirm> = s
        .confirms
        .iter()
        .map(Option::as_ref)
        .collect::<Option<_>>()?;
    let seqs: Vec<u64> = all.iter().map(|c| c.seq).collect();
    if !all.iter().all(|c| c.marks == seqs) || s.judged.as_ref() == Some(&seqs) {
        return None;
    }
    s.judged = Some(seqs.clone());
    // (rank, kind, root) of collective `e` on every rank that knows it.
    let kinds_at = |e: u64| -> Vec<(usize, u8, u32)> {
        all.iter()
            .enumerate()
            .filter_map(|(r, c)| {
                c.rounds
                    .iter()
                    .find(|k| k.0 == e)
                    .map(|&(_, k, root)| (r, k, root))
            })
            .collect()
    };
    let completes = |e: u64| {
        let joined = all.iter().flat_map(|c| &c.waiting).all(|w| w.epochs > e);
        let kinds = kinds_at(e);
        joined
            && kinds
                .windows(2)
                .all(|p| (p[0].1, p[0].2) == (p[1].1, p[1].2))
    };
    let waiting = || {
        all.iter()
            .enumerate()
            .flat_map(|(r, c)| c.waiting.iter().map(move |w| (r, w)))
    };
    if waiting().any(|(_, w)| w.epoch.is_some_and(completes)) {
        return None;
    }
    let waiters = waiting()
        .map(|(r, w)| {
            let mut waits = w.waits.clone();
            if let Some(e) = w.epoch {
                let kinds = kinds_at(e);
                let mine = kinds.iter().find(|k| k.0 == r).map(|k| (k.1, k.2));
                let mut others: Vec<((u8, u32), Vec<usize>)> = Vec::new();
                for &(other, k, root) in &kinds {
                    if other != r && Some((k, root)) != mine {
                        match others.iter_mut().find(|o| o.0 == (k, root)) {
                            Some(o) => o.1.push(other),
                            None => others.push(((k, root), vec![other])),
                        }
                    }
                }
                for ((k, root), ranks) in others {
                    let names: Vec<String> = ranks.iter().map(usize::to_string).collect();
                    let (who, runs, its) = if ranks.len() == 1 {
                        ("rank", "runs", "its")
                    } else {
                        ("ranks", "run", "their")
                    };
                    waits.push_str(&format!(
                        ", but {who} {} {runs} {} as {its} collective #{e}",
                        names.join(", "),
                        kind_text(k, root)
                    ));
                }
            }
            (r as u32, format!("location {}", w.location), waits)
        })
        .collect();
    Some(Verdict { seqs, waiters })
}

/// The report of a verdict.
fn report(waiters: Vec<(u32, String, String)>) -> Deadlock {
    let procs = waiters
        .into_iter()
        .map(|(rank, name, waits)| BlockedProcess::new(name, waits).on_rank(rank as usize))
        .collect();
    Deadlock::new(procs, Vec::new())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_name_every_collective_and_its_root() {
        assert_eq!(kind_text(Kind::Gather as u8, 3), "a gather to location 3");
        assert_eq!(
            kind_text(Kind::Scatter as u8, 1),
            "a scatter from location 1"
        );
        assert_eq!(kind_text(Kind::AllToAllV as u8, 0), "an all_to_all_v");
        assert_eq!(kind_text(Kind::ExclusiveScan as u8, 0), "an exclusive_scan");
        assert_eq!(kind_text(Kind::ReduceScatter as u8, 0), "a reduce_scatter");
    }

    fn waiting(location: u32, epochs: u64, epoch: Option<u64>, waits: &str) -> Waiting {
        Waiting {
            location,
            waits: waits.to_string(),
            epochs,
            epoch,
        }
    }

    /// Rank 0 holding the confirmations `c` (every rank's), each confirming the
    /// others' seqs unless `marks` says otherwise.
    fn judge(c: Vec<(Vec<Waiting>, Vec<RoundKind>)>) -> Option<Verdict> {
        let stall = Stall::new(c.len());
        let mut s = lock(&stall.state);
        let seqs: Vec<u64> = (1..=c.len() as u64).collect();
        for (r, (waiting, rounds)) in c.into_iter().enumerate() {
            s.confirms[r] = Some(Confirm {
                seq: seqs[r],
                marks: seqs.clone(),
                waiting,
                rounds,
            });
        }
        decide(&mut s)
    }

    const FENCE: &str = "waits in a fence";
    const Q: u8 = Kind::Quiescence as u8;

    #[test]
    fn a_fence_against_a_channel_on_another_rank_is_a_deadlock() {
        let v = judge(vec![
            (vec![waiting(0, 1, Some(0), FENCE)], vec![(0, Q, 0)]),
            (vec![waiting(1, 0, None, "waits on channel `jobs`")], vec![]),
        ])
        .expect("a verdict");
        assert_eq!(v.seqs, [1, 2]);
        assert_eq!(
            v.waiters,
            [
                (0, "location 0".to_string(), FENCE.to_string()),
                (
                    1,
                    "location 1".to_string(),
                    "waits on channel `jobs`".to_string()
                ),
            ]
        );
    }

    #[test]
    fn a_collective_every_location_joined_alike_will_complete() {
        // Both in wave #3 (its sums in flight).
        assert!(judge(vec![
            (vec![waiting(0, 4, Some(3), FENCE)], vec![(3, Q, 0)]),
            (vec![waiting(1, 4, Some(3), FENCE)], vec![(3, Q, 0)]),
        ])
        .is_none());
        // Rank 0 saw #2 complete and waits in #3; rank 1 still waits for #2's
        // result (in flight): #2 completes, so no verdict.
        assert!(judge(vec![
            (vec![waiting(0, 4, Some(3), FENCE)], vec![(3, Q, 0)]),
            (vec![waiting(1, 3, Some(2), FENCE)], vec![(2, Q, 0)]),
        ])
        .is_none());
    }

    #[test]
    fn different_collectives_at_one_epoch_never_complete() {
        let reduce = (0, Kind::Reduce as u8, 0);
        let v = judge(vec![
            (
                vec![waiting(0, 1, Some(0), "waits in a reduce")],
                vec![reduce],
            ),
            (vec![waiting(1, 1, Some(0), FENCE)], vec![(0, Q, 0)]),
            (vec![waiting(2, 1, Some(0), FENCE)], vec![(0, Q, 0)]),
        ])
        .expect("a verdict");
        assert_eq!(
            v.waiters[0].2,
            "waits in a reduce, but ranks 1, 2 run a fence's quiescence wave as their \
             collective #0"
        );
        assert_eq!(
            v.waiters[1].2,
            "waits in a fence, but rank 0 runs a reduce to location 0 as its collective #0"
        );
    }

    #[test]
    fn confirmations_of_other_stalls_or_judged_ones_give_no_verdict() {
        let stall = Stall::new(2);
        let mut s = lock(&stall.state);
        let c = |seq, marks: Vec<u64>, w| Confirm {
            seq,
            marks,
            waiting: vec![w],
            rounds: vec![],
        };
        s.confirms[0] = Some(c(1, vec![1, 1], waiting(0, 1, Some(0), FENCE)));
        // Rank 1 confirmed while holding an older mark of rank 0.
        s.confirms[1] = Some(c(1, vec![0, 1], waiting(1, 0, None, "waits")));
        assert!(decide(&mut s).is_none());
        s.confirms[1] = Some(c(1, vec![1, 1], waiting(1, 0, None, "waits")));
        assert!(decide(&mut s).is_some());
        assert!(decide(&mut s).is_none(), "judged once");
    }

    /// What rank `to` of 3 says of a stall frame `code`/`seq` with `payload` from
    /// rank `from`, claiming to come from `claimed`.
    fn deliver(to: usize, from: usize, claimed: u32, code: u64, payload: Vec<u8>) -> String {
        use super::super::transport::Sink;
        let local = Local::new(to, 3, 1, 64);
        let f = frame::stall(claimed, to as u32, code, 1, payload, 64);
        match local.deliver(from, f.head.into(), f.body) {
            Ok(()) => format!("ok, marks {:?}", lock(&local.stall.state).marks),
            Err(e) => e,
        }
    }

    #[test]
    fn malformed_stall_frames_are_errors_naming_the_problem() {
        assert_eq!(deliver(0, 2, 2, MARK, vec![]), "ok, marks [0, 0, 1]");
        let e = deliver(0, 2, 1, MARK, vec![]);
        assert!(e.contains("from rank 2 claims to come from rank 1"), "{e}");
        let e = deliver(0, 1, 1, CONFIRM, vec![0xff; 3]);
        assert!(
            e.contains("a stall-check confirmation from rank 1 does not decode"),
            "{e}"
        );
        let c = Confirm {
            seq: 1,
            marks: vec![1, 1],
            waiting: vec![],
            rounds: vec![],
        };
        let e = deliver(0, 1, 1, CONFIRM, encode(&c));
        assert!(
            e.contains("inconsistent") && e.contains("for 3 ranks"),
            "{e}"
        );
        // Only rank 0 takes confirmations, and verdicts only from rank 0.
        let e = deliver(2, 1, 1, CONFIRM, encode(&c));
        assert!(e.contains("code 2 from rank 1 to rank 2"), "{e}");
        let v = Verdict {
            seqs: vec![1, 1, 1],
            waiters: vec![],
        };
        let e = deliver(2, 1, 1, VERDICT, encode(&v));
        assert!(e.contains("code 3 from rank 1 to rank 2"), "{e}");
        assert!(deliver(2, 0, 0, VERDICT, encode(&v)).starts_with("ok"));
        let e = deliver(2, 0, 0, VERDICT, vec![1, 2]);
        assert!(e.contains("verdict from rank 0 does not decode"), "{e}");
        let e = deliver(1, 0, 0, 9, vec![]);
        assert!(e.contains("code 9 from rank 0 to rank 1"), "{e}");
    }

    #[test]
    fn stall_frames_round_trip_inline_and_as_body() {
        for (payload, inline_max) in [(vec![1, 2, 3], 16), (vec![7; 40], 16), (vec![], 16)] {
            let f = frame::stall(1, 0, CONFIRM, 9, payload.clone(), inline_max);
            let frame::Parsed::Stall(h) = frame::parse(&f.head, f.body.is_some()).unwrap() else {
                panic!("not a stall frame")
            };
            assert_eq!((h.from_rank, h.code, h.seq), (1, CONFIRM, 9));
            let got = f.body.unwrap_or_else(|| f.head[h.inline].to_vec());
            assert_eq!(got, payload);
        }
    }
}
