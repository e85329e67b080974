//! The cross-rank stall check: a fence or collective that cannot complete because
//! a location on *another* rank waits forever (on a channel, an ask, a message,
//! a different collective) — or because the ranks run different collectives at
//! the same point, which no frame reveals when one rank is in a quiescence wave
//! summed by the engine (the lost diagnosis, `collective.rs`).
//!
//! Each rank judges only itself: it is *locally stalled* when every location of
//! the world on it is blocked or ended, one at least blocked (`crate::diag` nodes, their state words), its
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
//! 3. **Decide.** Rank 0 (the lowest live rank, see *Dead ranks*) decides once it holds a confirmation from every rank
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
//! # Dead ranks
//!
//! A rank that died (killed or crashed; the transport announces it, as the
//! shared-memory system does, and counts it as an arrival) takes no part: the
//! steps run over the *live* ranks as this rank knows them. Marks go to live
//! ranks only and a confirmation needs the mark of every live rank (a dead
//! rank's counts as 0); the *decider* is the lowest live rank (rank 0 while it
//! lives), and it decides once every live rank's confirmation agrees on the
//! others' seqs — and so on who is dead, since a rank that has not heard of a
//! death yet still lists the dead rank's mark. A rank that hears of a death
//! later sees its arrivals change, so its stall is a new `seq` and it confirms
//! anew, to the new decider. A confirmation may reach a rank that has not
//! heard of the deaths below it yet, so any rank keeps confirmations from
//! higher ranks; a verdict comes only after its receiver confirmed to the
//! decider, so it knows the decider by then. With a rank dead no collective
//! completes (each includes it), and a stall is final — what the dead rank
//! would have sent never comes — so it fails whatever the mode: every wait
//! of every location is failed with the report, which names the dead ranks
//! (a `Location::recv` panics with it, as a fence does). A location still
//! blocked [`FAIL_GRACE`] later waits on something that takes no failure (a
//! channel), and its rank takes the system down with the report: every
//! survivor ends, naming the dead rank, as an MPI job ends when one of its
//! processes dies.
//!
//! # Ended ranks
//!
//! A rank whose world ends (its `Shared` is dropped: no run will follow) hands
//! its last frames over and then sends every live rank an *ended* frame with the
//! number of collectives each of its locations started; then it sits in its
//! transport's shutdown, where it answers nothing. A rank that holds it counts
//! the arrival (a stall seen before is a new one) and leaves the ended rank out
//! of the steps as it leaves out a dead one: no mark is sent to it or needed from
//! it, it never decides, and its confirmation is taken from the frame — every
//! location ended after its count, waiting on nothing. That confirmation is
//! final: the ended frame travels behind every frame its rank sent, and the rank
//! sends nothing after it, so it can wake nobody. The others agree on who ended
//! as they agree on who died: a rank that has not heard of the end yet holds no
//! mark of the ended rank (or an old one where the decider expects none), so its
//! confirmation does not agree until the ended frame reaches it and it confirms
//! anew. Unlike a death, an end fails nothing by itself: a collective every
//! location joined alike (the ended ones before they ended) still completes.
//!
//! Limits (as for the one-rank check, `diag/detect.rs`): a plain thread (not a
//! task of a runtime) or a task of another runtime that feeds a channel a
//! location waits on could still act, unseen. A location whose body has ended
//! counts as stopped (it never starts a collective again) while another location
//! of its rank is blocked; a rank whose locations all ended while its world is
//! still open takes no part (its `World::run` returned, and it may start another
//! run) until its world ends. Nothing of this runs on the
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
use crate::diag::node::{self, Node, On, What, BLOCKED, ENDED};
use crate::diag::{BlockedProcess, Deadlock, DeadlockMode};
use crate::loom::{lock, unmodelled, AtomicBool, AtomicU64, Mutex, Ordering};
use crate::msg::codec;

/// How long a rank must stay stalled, unchanged, before it marks.
pub(crate) const STALL_AGE: Duration = Duration::from_millis(20);
/// How long, with a rank dead, a rank whose waits were failed may stay stalled
/// before it takes the system down.
const FAIL_GRACE: Duration = Duration::from_secs(1);

const MARK: u64 = 1;
const CONFIRM: u64 = 2;
const VERDICT: u64 = 3;
const PRINTED: u64 = 4;
const FAIL: u64 = 5;
const WORLD_ENDED: u64 = 6;

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
    /// The locations of the world it waits for, any one of which could end its
    /// wait (the other ends of the channels it waits on); empty if it waits on
    /// anything else too.
    on: Vec<u32>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
struct Verdict {
    /// Each live rank's confirmed `seq` (0 for a dead rank).
    seqs: Vec<u64>,
    /// (rank, name, what it waits on).
    waiters: Vec<(u32, String, String)>,
    /// The ranks that had died when the decider judged.
    dead: Vec<u32>,
    /// A cycle of locations waiting on one another's channels (indices), if
    /// one was found.
    cycle: Vec<u32>,
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
    /// The locations of the declared stall's cycle of channel waits.
    cycle: Vec<u32>,
    /// Rank 0: the ranks that have printed the declared report.
    printed: Vec<bool>,
    /// Fail the declared stall's waits (rank 0 told so, or is rank 0 and every
    /// rank has printed).
    fail: bool,
    /// When this rank failed the declared stall's waits.
    failed: Option<Instant>,
    /// The ranks whose world has ended (an *ended* frame came): the
    /// collectives each of their locations started, in location order.
    ended: Vec<Option<Vec<u64>>>,
}

impl State {
    /// The ranks that take part in the check: alive, and their world not ended.
    fn taking_part(&self, alive: &[bool]) -> Vec<bool> {
        alive
            .iter()
            .zip(&self.ended)
            .map(|(&a, e)| a && e.is_none())
            .collect()
    }
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
                cycle: Vec::new(),
                printed: vec![false; ranks],
                fail: false,
                failed: None,
                ended: vec![None; ranks],
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
    let alive = local.alive();
    let mut ended = false;
    {
        let mut s = lock(&local.stall.state);
        let decider = decider(&s.taking_part(&alive));
        match head.code {
            MARK => s.marks[from] = head.seq,
            // The sender takes this rank for the lowest live one; this rank may
            // not have heard yet of the deaths below it, so a confirmation from
            // any higher rank is kept (and judged only if this rank decides).
            CONFIRM if from > local.rank => {
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
            // A verdict or a failure comes after this rank confirmed to the
            // decider, so it knows of the deaths that made `from` decide.
            VERDICT if from == decider => {
                let v: Verdict = codec::decode(payload).map_err(|e| bad("verdict", &e))?;
                if v.seqs.len() != local.ranks || v.dead.iter().any(|&d| d as usize >= local.ranks)
                {
                    return Err(format!(
                        "a stall-check verdict from rank {from} names {} ranks (of {}) and \
                         dead ranks {:?}",
                        v.seqs.len(),
                        local.ranks,
                        v.dead
                    ));
                }
                s.verdicts.push(v);
            }
            PRINTED if local.rank == decider => {
                let declared = s.declared.as_ref().map(|d| d.0[from]);
                if declared == Some(head.seq) {
                    s.printed[from] = true;
                }
            }
            FAIL if from == decider => {
                let declared = s.declared.as_ref().map(|d| d.0[local.rank]);
                if declared == Some(head.seq) {
                    s.fail = true;
                }
            }
            WORLD_ENDED => {
                let epochs: Vec<u64> = codec::decode(payload).map_err(|e| bad("end", &e))?;
                if epochs.len() != local.per_rank {
                    return Err(format!(
                        "a stall-check end from rank {from} names {} locations (of {} per rank)",
                        epochs.len(),
                        local.per_rank
                    ));
                }
                s.ended[from] = Some(epochs);
                ended = true;
            }
            code => {
                return Err(format!(
                    "a stall-check frame of code {code} from rank {from} to rank {}",
                    local.rank
                ))
            }
        }
    }
    if ended {
        // The ranks taking part changed: a stall seen before is a new one.
        local.stall.arrived();
    }
    local.stall.nudge();
    Ok(())
}

/// This rank's world ends (its last frames are handed over, its transport about
/// to shut down): every other live rank hears how many collectives each of its
/// locations started, and from then on counts them as ended locations of a
/// stall without asking this rank (see *Ended ranks* in the module
/// documentation).
pub(crate) fn end(local: &Local, transport: &dyn Transport) {
    let epochs: Vec<u64> = local.slots.iter().map(|s| s.epochs()).collect();
    let payload = encode(&epochs);
    let alive = local.alive();
    for r in (0..local.ranks).filter(|&r| r != local.rank && alive[r]) {
        let f = frame::stall(
            local.rank as u32,
            r as u32,
            WORLD_ENDED,
            0,
            payload.clone(),
            local.inline_max,
        );
        transport.send(r, f);
    }
    transport.start_sends();
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
    let stopped = |n: &Arc<Node>| matches!(Node::state_of(n.word()), BLOCKED | ENDED);
    if !nodes.iter().all(stopped) || !nodes.iter().any(blocked) || !nodes[0].runtime.is_quiet() {
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
    if !nodes.iter().all(stopped) {
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
        // Blocked, or ended (a location whose body returned never enters a fence
        // or collective again); one blocked at least.
        let blocked = |n: &Arc<Node>| Node::state_of(n.word()) == BLOCKED;
        let stopped = |n: &Arc<Node>| matches!(Node::state_of(n.word()), BLOCKED | ENDED);
        if nodes.len() != local.per_rank || !nodes.iter().any(blocked) || !nodes.iter().all(stopped)
        {
            return;
        }
        nodes.clone()
    };
    let snap = snapshot(local, &nodes);
    let alive = local.alive();
    let bereaved = alive.contains(&false);
    let mut out: Vec<(usize, u64, u64, Vec<u8>)> = Vec::new();
    let mut fail: Option<(Arc<Deadlock>, Vec<u32>)> = None;
    let mut abort: Option<Arc<Deadlock>> = None;
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
        let part = s.taking_part(&alive);
        let decider = decider(&part);
        if s.marked.as_ref() != Some(&snap) {
            match &s.candidate {
                Some((c, at)) if *c == snap && at.elapsed() >= STALL_AGE => {
                    s.candidate = None;
                    s.seq += 1;
                    let seq = s.seq;
                    s.marked = Some(snap.clone());
                    let me = local.rank;
                    s.marks[me] = seq;
                    for r in (0..local.ranks).filter(|&r| r != me && part[r]) {
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
            confirm(local, &nodes, &part, &mut s, &mut out);
            if local.rank == decider {
                if let Some(v) = decide(&mut s, &alive) {
                    for r in (0..local.ranks).filter(|&r| r != decider && part[r]) {
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
                s.cycle = v.cycle.clone();
                let seqs = v.seqs.clone();
                let report = Arc::new(report(v));
                crate::diag::declare(&report);
                // A dead or ended rank prints nothing: it counts as having printed.
                s.printed = part.iter().map(|&p| !p).collect();
                s.printed[decider] = me == decider;
                s.declared = Some((seqs, report));
                s.fail = false;
                s.failed = None;
                if me != decider {
                    out.push((decider, PRINTED, seq, Vec::new()));
                }
            }
            // With a rank dead, a stall is final (what the dead rank would have
            // sent never comes): it fails whatever the mode, as an MPI job
            // ends when one of its processes dies.
            let failing = crate::diag::deadlock_mode() == DeadlockMode::Fail || bereaved;
            if me == decider && failing && !s.fail && s.printed.iter().all(|&p| p) {
                if let Some((seqs, _)) = &s.declared {
                    for (r, &q) in seqs.iter().enumerate() {
                        if r != decider && part[r] {
                            out.push((r, FAIL, q, Vec::new()));
                        }
                    }
                    s.fail = true;
                }
            }
            if s.fail && failing {
                match s.failed {
                    None => {
                        s.failed = Some(Instant::now());
                        fail = s
                            .declared
                            .as_ref()
                            .map(|d| (Arc::clone(&d.1), s.cycle.clone()));
                        nap = bereaved;
                    }
                    // Failed waits end their locations at once; one that is
                    // still blocked waits on something that takes no failure
                    // (a channel, a plain lock): with a rank dead nothing will
                    // wake it, so the rank takes the system down.
                    Some(at) if bereaved && at.elapsed() >= FAIL_GRACE => {
                        abort = s.declared.as_ref().map(|d| Arc::clone(&d.1));
                    }
                    Some(_) => nap = bereaved,
                }
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
    if let Some((report, cycle)) = fail {
        for n in &nodes {
            // With a rank dead, every wait of a location fails (a receive, an
            // ask): none can be satisfied any more; else the world-wide waits
            // and the channel waits of a cycle.
            let fails = |w: node::Wait| {
                matches!(w.on, On::World(_)) || (cycle.contains(&n.index) && w.on != On::Unknown)
            };
            if bereaved || n.wait().is_some_and(fails) {
                n.fail(Arc::clone(&report));
            }
        }
    }
    if let Some(report) = abort {
        if let Some(t) = st.transport.get().and_then(Weak::upgrade) {
            t.abort(&format!(
                "rank {} cannot go on after a rank died:\n{report}",
                local.rank
            ));
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
    part: &[bool],
    s: &mut State,
    out: &mut Vec<(usize, u64, u64, Vec<u8>)>,
) {
    // A dead or ended rank's mark (if it sent one) is 0 here: it takes no part.
    let marks: Vec<u64> = s
        .marks
        .iter()
        .zip(part)
        .map(|(&m, &p)| if p { m } else { 0 })
        .collect();
    let missing = marks.iter().zip(part).any(|(&m, &p)| p && m == 0);
    if missing || s.confirmed.as_ref() == Some(&(s.seq, marks.clone())) {
        return;
    }
    s.confirmed = Some((s.seq, marks.clone()));
    let rounds = local.rounds.kinds();
    let waiting = nodes
        .iter()
        .enumerate()
        .map(|(i, n)| {
            let slot = &local.slots[i];
            // An ended location's last note is stale: it waits on nothing.
            let ended = Node::state_of(n.word()) == ENDED;
            let wait = if ended { None } else { n.wait() };
            let epoch = wait.as_ref().and_then(|w| match (&w.on, &w.what) {
                (On::World(_), What::Fence(e) | What::Collective(e)) => Some(*e),
                _ => None,
            });
            let waits = match (epoch, &wait) {
                (Some(e), Some(w)) => describe_world(e, &rounds, w),
                (_, Some(w)) => w.describe(),
                (_, None) if ended => ended_text(slot.epochs()),
                (_, None) => "is blocked".to_string(),
            };
            let world = n.world;
            let peer = |on: &On| match *on {
                On::Location { world: w, index } if w == world => Some(index),
                _ => None,
            };
            let on = match wait.as_ref().map(|w| &w.on) {
                Some(On::AnyOf(ons)) => ons.iter().map(peer).collect::<Option<Vec<u32>>>(),
                Some(o) => peer(o).map(|p| vec![p]),
                None => None,
            };
            Waiting {
                location: slot.id.index() as u32,
                waits,
                epochs: slot.epochs(),
                epoch,
                on: on.unwrap_or_default(),
            }
        })
        .collect();
    let c = Confirm {
        seq: s.seq,
        marks,
        waiting,
        rounds,
    };
    let decider = decider(part);
    if local.rank == decider {
        s.confirms[decider] = Some(c);
    } else {
        out.push((decider, CONFIRM, c.seq, encode(&c)));
    }
}

/// What a location that has ended after starting `epochs` collectives waits for.
fn ended_text(epochs: u64) -> String {
    format!(
        "has ended (its body returned) after starting {epochs} collective(s) (a fence's \
         waves included): it will never start another"
    )
}

/// The confirmation an ended rank would give, from the collectives its
/// locations started (`epochs`, in location order): every location ended.
fn ended_confirm(rank: usize, epochs: &[u64]) -> Confirm {
    let first = rank * epochs.len();
    Confirm {
        seq: 0,
        marks: Vec::new(),
        waiting: epochs
            .iter()
            .enumerate()
            .map(|(i, &e)| Waiting {
                location: (first + i) as u32,
                waits: ended_text(e),
                epochs: e,
                epoch: None,
                on: Vec::new(),
            })
            .collect(),
        rounds: Vec::new(),
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

/// The rank that decides: the lowest live one.
fn decider(alive: &[bool]) -> usize {
    alive.iter().position(|&a| a).unwrap_or(0)
}

/// The decider: judges the confirmations if every rank taking part has given
/// one, they agree (on each other's seqs, and so on who is dead or ended), and
/// they were not judged yet; the verdict if the world is deadlocked. An ended
/// rank's locations count as ended, after the collectives its end announced.
fn decide(s: &mut State, alive: &[bool]) -> Option<Verdict> {
    let part = s.taking_part(alive);
    let confirming: Vec<(usize, &Confirm)> = s
        .confirms
        .iter()
        .enumerate()
        .filter(|&(r, _)| part[r])
        .map(|(r, c)| c.as_ref().map(|c| (r, c)))
        .collect::<Option<_>>()?;
    let mut seqs = vec![0; alive.len()];
    for &(r, c) in &confirming {
        seqs[r] = c.seq;
    }
    if !confirming.iter().all(|(_, c)| c.marks == seqs) || s.judged.as_ref() == Some(&seqs) {
        return None;
    }
    s.judged = Some(seqs.clone());
    let ended: Vec<(usize, Confirm)> = s
        .ended
        .iter()
        .enumerate()
        .filter(|&(r, _)| alive[r])
        .filter_map(|(r, e)| Some((r, ended_confirm(r, e.as_deref()?))))
        .collect();
    let mut live = confirming;
    live.extend(ended.iter().map(|(r, c)| (*r, c)));
    live.sort_by_key(|&(r, _)| r);
    let dead: Vec<u32> = (0..alive.len())
        .filter(|&r| !alive[r])
        .map(|r| r as u32)
        .collect();
    // (rank, kind, root) of collective `e` on every rank that knows it.
    let kinds_at = |e: u64| -> Vec<(usize, u8, u32)> {
        live.iter()
            .filter_map(|&(r, c)| {
                c.rounds
                    .iter()
                    .find(|k| k.0 == e)
                    .map(|&(_, k, root)| (r, k, root))
            })
            .collect()
    };
    // A collective includes every rank: with one dead, none completes.
    let completes = |e: u64| {
        let joined = live.iter().flat_map(|c| &c.1.waiting).all(|w| w.epochs > e);
        let kinds = kinds_at(e);
        dead.is_empty()
            && joined
            && kinds
                .windows(2)
                .all(|p| (p[0].1, p[0].2) == (p[1].1, p[1].2))
    };
    let waiting = || {
        live.iter()
            .flat_map(|&(r, c)| c.waiting.iter().map(move |w| (r, w)))
    };
    if waiting().any(|(_, w)| w.epoch.is_some_and(completes)) {
        return None;
    }
    let cycle = location_cycle(&waiting().map(|(_, w)| w).collect::<Vec<_>>());
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
    Some(Verdict {
        seqs,
        waiters,
        dead,
        cycle,
    })
}

/// A cycle of locations waiting on one another's channels, among the
/// confirmed waits of every location (empty if none). As on one rank
/// (`diag/detect.rs`), a location waiting in a selection on several is stuck
/// only if all of them are: the stuck set is a fixpoint, and from any of its
/// members the first peer leads into a cycle.
fn location_cycle(waiting: &[&Waiting]) -> Vec<u32> {
    let mut stuck: Vec<&Waiting> = waiting
        .iter()
        .copied()
        .filter(|w| !w.on.is_empty())
        .collect();
    loop {
        let before = stuck.len();
        let ids: Vec<u32> = stuck.iter().map(|w| w.location).collect();
        stuck.retain(|w| w.on.iter().all(|p| ids.contains(p)));
        if stuck.len() == before {
            break;
        }
    }
    let Some(first) = stuck.first() else {
        return Vec::new();
    };
    let mut path = vec![first.location];
    loop {
        let at = path[path.len() - 1];
        let Some(next) = stuck
            .iter()
            .find(|w| w.location == at)
            .and_then(|w| w.on.first().copied())
        else {
            return Vec::new();
        };
        if let Some(p) = path.iter().position(|&q| q == next) {
            return path.split_off(p);
        }
        path.push(next);
    }
}

/// The report of a verdict.
fn report(v: Verdict) -> Deadlock {
    let procs = v
        .waiters
        .into_iter()
        .map(|(rank, name, waits)| BlockedProcess::new(name, waits).on_rank(rank as usize))
        .collect();
    let mut cycle: Vec<String> = v.cycle.iter().map(|l| format!("location {l}")).collect();
    if let Some(first) = cycle.first().cloned() {
        cycle.push(first);
    }
    Deadlock::new(procs, cycle).with_dead_ranks(v.dead.iter().map(|&r| r as usize).collect())
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
            on: Vec::new(),
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
        decide(&mut s, &vec![true; seqs.len()])
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

    fn on(location: u32, peers: &[u32], waits: &str) -> Waiting {
        Waiting {
            on: peers.to_vec(),
            ..waiting(location, 0, None, waits)
        }
    }

    #[test]
    fn channel_waits_across_ranks_in_a_cycle_are_named_in_the_report() {
        let v = judge(vec![
            (
                vec![on(
                    0,
                    &[1],
                    "waits to receive on the channel #0 from location 1",
                )],
                vec![],
            ),
            (
                vec![on(
                    1,
                    &[0],
                    "waits to receive on the channel #0 from location 0",
                )],
                vec![],
            ),
        ])
        .expect("a verdict");
        assert_eq!(v.cycle, [0, 1]);
        let text = report(v).to_string();
        assert!(
            text.contains("cycle: `location 0` → `location 1` → `location 0`"),
            "{text}"
        );
    }

    #[test]
    fn a_selection_is_in_a_cycle_only_if_every_arm_is_stuck() {
        // Location 0 selects over channels from 1 and 2; 1 waits on 0; 2 waits
        // on something else (a message from anyone): 0 could still be woken by 2.
        let w = [
            on(0, &[1, 2], "a selection"),
            on(1, &[0], "from 0"),
            on(2, &[], "a message"),
        ];
        assert!(location_cycle(&w.iter().collect::<Vec<_>>()).is_empty());
        // 2 waits on 1 instead: every arm of 0 is stuck.
        let w = [
            on(0, &[2, 1], "a selection"),
            on(1, &[0], "from 0"),
            on(2, &[1], "from 1"),
        ];
        assert_eq!(location_cycle(&w.iter().collect::<Vec<_>>()), [0, 2, 1]);
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
        let alive = [true, true];
        assert!(decide(&mut s, &alive).is_none());
        s.confirms[1] = Some(c(1, vec![1, 1], waiting(1, 0, None, "waits")));
        assert!(decide(&mut s, &alive).is_some());
        assert!(decide(&mut s, &alive).is_none(), "judged once");
    }

    #[test]
    fn with_rank_0_dead_the_live_ranks_decide_and_the_report_names_it() {
        let stall = Stall::new(3);
        let mut s = lock(&stall.state);
        let alive = [false, true, true];
        let c = |seq, marks: Vec<u64>, location| Confirm {
            seq,
            marks,
            waiting: vec![waiting(location, 0, None, "waits to receive a message")],
            rounds: vec![],
        };
        // Rank 2 confirmed before it heard of rank 0's death: no agreement.
        s.confirms[1] = Some(c(4, vec![0, 4, 7], 1));
        s.confirms[2] = Some(c(7, vec![3, 4, 7], 2));
        assert!(decide(&mut s, &alive).is_none());
        // Both know: the live ranks' confirmations agree.
        s.confirms[2] = Some(c(8, vec![0, 5, 8], 2));
        s.confirms[1] = Some(c(5, vec![0, 5, 8], 1));
        let v = decide(&mut s, &alive).expect("a verdict");
        assert_eq!((v.seqs.clone(), v.dead.clone()), (vec![0, 5, 8], vec![0]));
        let text = report(v).to_string();
        assert!(
            text.contains("[rank 1] `location 1` waits to receive")
                && text.contains("rank 0 died (killed or crashed)"),
            "{text}"
        );
        assert_eq!(decider(&alive), 1);
    }

    #[test]
    fn an_ended_rank_counts_with_the_collectives_it_started() {
        // 4 ranks, one location each: ranks 1 and 2 ended after one fence,
        // ranks 0 and 3 wait in the second.
        let stall = Stall::new(4);
        let mut s = lock(&stall.state);
        let alive = [true; 4];
        s.ended[1] = Some(vec![1]);
        s.ended[2] = Some(vec![1]);
        assert_eq!(s.taking_part(&alive), [true, false, false, true]);
        let c = |seq, location| Confirm {
            seq,
            marks: vec![3, 0, 0, 5],
            waiting: vec![waiting(location, 2, Some(1), FENCE)],
            rounds: vec![(1, Q, 0)],
        };
        s.confirms[0] = Some(c(3, 0));
        // Rank 3 confirmed before it heard of rank 2's end (it held an old mark).
        s.confirms[3] = Some(Confirm {
            marks: vec![3, 0, 1, 5],
            ..c(5, 3)
        });
        assert!(decide(&mut s, &alive).is_none());
        s.confirms[3] = Some(c(5, 3));
        let v = decide(&mut s, &alive).expect("a verdict");
        assert_eq!((v.seqs.clone(), v.dead.clone()), (vec![3, 0, 0, 5], vec![]));
        let text = report(v).to_string();
        for want in [
            "[rank 0] `location 0` waits in a fence",
            "[rank 1] `location 1` has ended (its body returned) after starting 1 collective(s)",
            "[rank 2] `location 2` has ended (its body returned) after starting 1 collective(s)",
            "[rank 3] `location 3` waits in a fence",
        ] {
            assert!(text.contains(want), "missing {want:?} in\n{text}");
        }
        // Had the ended ranks joined the second fence, it would complete.
        s.ended[1] = Some(vec![2]);
        s.ended[2] = Some(vec![2]);
        s.judged = None;
        assert!(decide(&mut s, &alive).is_none());
    }

    #[test]
    fn with_a_rank_dead_no_collective_is_taken_to_complete() {
        let stall = Stall::new(3);
        let mut s = lock(&stall.state);
        let c = |seq, location| Confirm {
            seq,
            marks: vec![1, 2, 0],
            waiting: vec![waiting(location, 4, Some(3), FENCE)],
            rounds: vec![(3, Q, 0)],
        };
        s.confirms[0] = Some(c(1, 0));
        s.confirms[1] = Some(c(2, 1));
        let v = decide(&mut s, &[true, true, false]).expect("a verdict");
        assert_eq!(v.dead, [2]);
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
        // A confirmation goes to a lower rank (the lowest live one, as far as
        // its sender knows), and verdicts come from the decider only.
        let c3 = Confirm {
            seq: 1,
            marks: vec![0, 0, 1],
            waiting: vec![],
            rounds: vec![],
        };
        assert!(deliver(1, 2, 2, CONFIRM, encode(&c3)).starts_with("ok"));
        let e = deliver(2, 1, 1, CONFIRM, encode(&c));
        assert!(e.contains("code 2 from rank 1 to rank 2"), "{e}");
        let v = Verdict {
            seqs: vec![1, 1, 1],
            waiters: vec![],
            dead: vec![],
            cycle: vec![],
        };
        let e = deliver(2, 1, 1, VERDICT, encode(&v));
        assert!(e.contains("code 3 from rank 1 to rank 2"), "{e}");
        assert!(deliver(2, 0, 0, VERDICT, encode(&v)).starts_with("ok"));
        let e = deliver(2, 0, 0, VERDICT, vec![1, 2]);
        assert!(e.contains("verdict from rank 0 does not decode"), "{e}");
        let e = deliver(1, 0, 0, WORLD_ENDED, encode(&vec![1u64, 2]));
        assert!(
            e.contains("end from rank 0 names 2 locations (of 1 per rank)"),
            "{e}"
        );
        let e = deliver(1, 0, 0, WORLD_ENDED, vec![0xff; 3]);
        assert!(
            e.contains("a stall-check end from rank 0 does not decode"),
            "{e}"
        );
        assert!(deliver(1, 0, 0, WORLD_ENDED, encode(&vec![4u64])).starts_with("ok"));
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
