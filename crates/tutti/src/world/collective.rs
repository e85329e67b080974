//! Collectives over all locations: barrier, broadcast, reduce, all-reduce, the
//! collectives built on them (`gather.rs`: gather, scatter, all-to-all, scans,
//! reduce-scatter) and the waves of quiescence detection, hierarchical — the
//! locations of a rank first, then the ranks.
//!
//! # Matching
//!
//! Every location numbers its collective calls: the `k`-th call of every location
//! belongs to collective `k` (the *epoch*), as in MPI. The state of one collective
//! on one rank is a [`Round`], keyed by epoch; frames from other ranks may create
//! it before any local location arrives. A round records its kind, root and value
//! type; a location or rank that disagrees is a programming error that would
//! otherwise hang, so it takes the world down with a message naming both sides.
//!
//! # Algorithm
//!
//! 1. *Within the rank.* Each location stores its value in the round. The last to
//!    arrive (the rank's leader for this epoch) folds the values in location order.
//! 2. *Across ranks* (only with several ranks). The leader starts a *driver*
//!    (a future, not a task) that moves the rank's value by the kind's
//!    [`Shape`], as MPI implementations choose for few ranks:
//!    - *Recursive doubling* (barrier, all-reduce, all-gather): in round `k`
//!      each rank swaps what it has combined with the rank `2^k` away, so all
//!      ranks hold the result after `⌈log2 p⌉` rounds of one message each
//!      way (a tree up and down takes twice the rounds). Blocks of ranks are
//!      combined lower first, so the result is the fold over all locations
//!      in id order and an associative operation need not be commutative.
//!    - *Scan by recursive doubling* (inclusive and exclusive scan): the same
//!      rounds, each rank keeping the folds from below apart ([`ScanOps`]).
//!    - *Binomial trees* (reduce, gather, broadcast, and the quiescence waves
//!      where the transport has no sum of its own): a reduction combines its
//!      children's partial results in rank order and sends the result to its
//!      parent, rank 0 ends up with the fold, which goes on to the root's
//!      rank; a broadcast only travels down a tree rooted at the root's rank.
//!    - *Personalised* (scatter, all-to-all(-v), reduce-scatter): for a
//!      scatter the root's rank cuts its values into one piece per rank
//!      ([`Split`]) and sends each rank its piece; for the others every rank
//!      cuts its value so and sends each other rank its piece (pairwise
//!      exchange), then combines the pieces it got in rank order
//!      (concatenated, or element-wise reduced).
//!
//!    A quiescence wave's sums take a shorter way when the transport has a
//!    sum of its own (MPI): the leader hands them to the engine, which sums
//!    them over the ranks by recursive doubling over point-to-point messages
//!    and stores the result (`Transport::sum_wave`, `Sink::summed`). Every
//!    rank starts its waves in the same order: a location contributes to a
//!    wave only after it has seen the previous wave's result. (A program whose
//!    ranks call their collectives in different orders is reported when a
//!    collective frame meets a round of another kind; a wave's messages carry
//!    no kind, so a rank that runs a collective as the root of its tree while
//!    another rank fences at the same point waits — until the cross-rank stall
//!    check (`stall.rs`) sees every rank stalled and reports both kinds.)
//!    The leader polls the driver once at once (a leaf sends its part up
//!    without waiting); after that it is parked in the round and the rank's
//!    waiting locations poll it while they wait (`drive`), so the frame that
//!    completes a collective is handled by the location that spins on the
//!    engine for it, with no task switch. A frame that arrives while no
//!    location polls it (a non-blocking barrier whose future is not awaited
//!    yet, a rank that takes no result) hands the driver to the runtime as a
//!    task of its own, so no rank waits on another's awaiting.
//! 3. The result is stored in the round and every waiting location of the rank is
//!    woken; each clones it but the last, which takes it. The round is removed
//!    once every location that needs the result has taken it and the driver is
//!    done.
//!
//! Values cross ranks in the message codec's serde format
//! ([`codec::encode`]/[`codec::decode`], guarded against malformed bytes), or
//! by a collective's own [`Wire`] (rows of plain numbers as their bytes);
//! within a rank they move as typed values. A value that fails to encode or decode takes
//! the job down with a message naming the collective and the rank.
//!
//! A location's contribution is made when it calls the collective; the returned
//! future only waits. So `let b = loc.barrier(); …; b.await` is a non-blocking
//! barrier (MPI_Ibarrier), and dropping the future does not withdraw the
//! contribution (the others are not left waiting).

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::{Arc, Weak};
use std::task::{Context, Poll, Waker};

use serde::de::DeserializeOwned;
use serde::Serialize;

use super::frame::{self, CollectiveTag, Phase};
use super::rank::{Local, Shared};
use super::transport::Transport;
use super::Location;
use crate::loom::{lock, AtomicUsize, Mutex, Ordering};
use crate::msg::codec;

/// The kinds of collectives, as sent in frames.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Barrier = 1,
    Broadcast = 2,
    Reduce = 3,
    AllReduce = 4,
    Quiescence = 5,
    Gather = 6,
    AllGather = 7,
    Scatter = 8,
    AllToAll = 9,
    AllToAllV = 10,
    Scan = 11,
    ExclusiveScan = 12,
    ReduceScatter = 13,
}

/// How a collective's values travel (`Driver::run`): every kind is one of the
/// three tree algorithms or one of the two personalised ones, with its own
/// values and operation (`gather.rs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Shape {
    /// Down a binomial tree from the root's rank.
    Broadcast,
    /// Up the tree to rank 0, then to the root's rank.
    Reduce,
    /// Up the tree to rank 0, then down to every rank.
    AllReduce,
    /// Recursive doubling: in round `k` every rank exchanges what it has
    /// combined so far with the rank `2^k` away and combines the two in rank
    /// order, so every rank holds the result after `log2 p` rounds (one
    /// message each way per round, where the tree takes two rounds per level).
    /// With `p` not a power of two the first `2·(p − 2^⌊log2 p⌋)` ranks pair
    /// up first (the even one hands its value to the odd one above it and gets
    /// the result back at the end), as MPICH does.
    Doubling,
    /// The prefix reduction by recursive doubling over the ranks (MPICH's
    /// scan): in round `k` every rank sends the fold of its block of `2^k`
    /// ranks to the rank `2^k` away and keeps what came from below apart, so
    /// after `log2 p` rounds it holds the fold of every rank below it
    /// ([`ScanOps`]).
    Scan,
    /// The root's rank splits its value ([`Split`]) and sends each rank its
    /// piece directly.
    Scatter,
    /// Every rank splits its value and sends each other rank its piece
    /// directly (pairwise exchange); each rank combines the pieces it got in
    /// rank order.
    Exchange,
}

impl Kind {
    pub(crate) fn name(code: u8) -> &'static str {
        match code {
            1 => "barrier",
            2 => "broadcast",
            3 => "reduce",
            4 => "all_reduce",
            5 => "quiescence wave",
            6 => "gather",
            7 => "all_gather",
            8 => "scatter",
            9 => "all_to_all",
            10 => "all_to_all_v",
            11 => "scan",
            12 => "exclusive_scan",
            13 => "reduce_scatter",
            _ => "unknown collective",
        }
    }

    /// The kind's name with its article ("a gather", "an all_reduce").
    pub(crate) fn named(code: u8) -> String {
        let name = Kind::name(code);
        let article = if name.starts_with(['a', 'e', 'i', 'o', 'u']) {
            "an"
        } else {
            "a"
        };
        format!("{article} {name}")
    }

    fn shape(self) -> Shape {
        match self {
            Kind::Broadcast => Shape::Broadcast,
            Kind::Scatter => Shape::Scatter,
            Kind::AllToAll | Kind::AllToAllV => Shape::Exchange,
            Kind::ReduceScatter => Shape::Exchange,
            Kind::Reduce | Kind::Gather => Shape::Reduce,
            Kind::Barrier | Kind::AllReduce | Kind::AllGather => Shape::Doubling,
            Kind::Scan | Kind::ExclusiveScan => Shape::Scan,
            // A wave's sums go through the transport's own sum where it has
            // one (`Transport::sum_wave`); the tree is the fallback.
            Kind::Quiescence => Shape::AllReduce,
        }
    }
}

/// A user's reduction operation.
pub(crate) type Op<T> = Arc<dyn Fn(T, T) -> T + Send + Sync>;

/// Cuts a rank's value into one piece per rank, in rank order, for the
/// personalised collectives ([`Shape::Scatter`], [`Shape::Exchange`]).
pub(crate) type Split<T> = Arc<dyn Fn(T) -> Vec<T> + Send + Sync>;

/// The fold of a scan's locals ([`ScanOps::total`]).
pub(crate) type Total<V> = Box<dyn Fn(&V) -> Option<V> + Send + Sync>;

/// What a scan ([`Shape::Scan`]) does with a rank's value `V`: the values of
/// its locations (`locals`), from which it sends folds and makes each
/// location's result.
pub(crate) struct ScanOps<V> {
    /// The fold of `locals`, or `None` when `locals` is already its own fold
    /// (a single location: sent as it is, without a copy).
    pub(crate) total: Total<V>,
    /// Combines two folds, the lower ranks' first.
    pub(crate) fold: Box<dyn Fn(V, V) -> V + Send + Sync>,
    /// The rank's result from the fold of every rank below it (`None` on
    /// rank 0) and `locals`: each location's part, in location order.
    pub(crate) finish: Box<dyn FnOnce(Option<V>, V) -> V + Send + Sync>,
}

/// How a rank's value travels beyond its shape's defaults: cut per rank
/// (personalised collectives), folded as a scan, and encoded by a
/// [`Wire`] instead of the codec.
pub(crate) struct Plan<V> {
    pub(crate) split: Option<Split<V>>,
    pub(crate) scan: Option<ScanOps<V>>,
    pub(crate) wire: Option<Wire<V>>,
}

impl<V> Plan<V> {
    /// The shape's defaults: no split, no scan, the codec.
    pub(crate) fn plain() -> Plan<V> {
        Plan {
            split: None,
            scan: None,
            wire: None,
        }
    }
}

/// An encoding of a collective's value other than the codec's serde format,
/// for values whose bytes can travel as they are (rows of plain numbers).
pub(crate) struct Wire<V> {
    pub(crate) encode: fn(&V, &mut Vec<u8>),
    /// Never panics: malformed bytes are an error naming what is wrong.
    pub(crate) decode: fn(&[u8]) -> Result<V, String>,
}

/// One collective on this rank; see the module documentation.
struct Round {
    /// Kind code and root, from the first local arrival or remote frame.
    kind: Option<(u8, u32)>,
    /// Who set `kind`: a location of this rank or another rank (for the
    /// message when another disagrees).
    kind_by: Option<By>,
    /// The value type, from the first local arrival.
    ty: Option<(TypeId, &'static str)>,
    arrived: usize,
    values: Vec<Option<Box<dyn Any + Send>>>,
    /// Partial results from child ranks (rank, encoded value).
    up: Vec<(u32, Vec<u8>)>,
    /// The result from the parent rank.
    down: Option<Vec<u8>>,
    result: Option<Box<dyn Any + Send>>,
    /// Local locations that have yet to take the result (known at first arrival).
    takers: Option<usize>,
    driving: bool,
    wakers: Vec<Option<Waker>>,
    /// The task polling the driver, to wake when a frame arrives for it.
    driver: Option<Waker>,
    /// The driver while it waits for a frame between polls (`drive`).
    parked: Option<Parked>,
    /// A frame arrived since the driver was last polled.
    fresh: bool,
}

/// A rank's driver between polls: the waiting locations poll it (`drive`), so
/// a collective costs no task; if a frame arrives while none of them polls,
/// it is spawned on the rank's runtime (`Rounds::incoming`).
struct Parked {
    run: Pin<Box<dyn Future<Output = ()> + Send>>,
    shared: Weak<Shared>,
}

impl Parked {
    /// Hands the driver to the rank's runtime (unless the rank has stopped).
    fn spawn(self) {
        if let Some(shared) = self.shared.upgrade() {
            drop(shared.runtime.spawn(self.run));
        }
    }
}

impl Round {
    fn new(per_rank: usize) -> Round {
        Round {
            kind: None,
            kind_by: None,
            ty: None,
            arrived: 0,
            values: (0..per_rank).map(|_| None).collect(),
            up: Vec::new(),
            down: None,
            result: None,
            takers: None,
            driving: false,
            wakers: (0..per_rank).map(|_| None).collect(),
            driver: None,
            parked: None,
            fresh: false,
        }
    }

    fn finished(&self, per_rank: usize) -> bool {
        self.arrived == per_rank && self.takers == Some(0) && !self.driving
    }

    fn wake_all(&mut self) {
        for w in self.wakers.iter_mut().filter_map(Option::take) {
            w.wake();
        }
    }
}

/// Who started a collective's round on this rank.
#[derive(Clone, Copy, Debug)]
enum By {
    Location(super::LocationId),
    Rank(u32),
}

impl fmt::Display for By {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            By::Location(id) => write!(f, "{id} of this rank"),
            By::Rank(r) => write!(f, "rank {r}"),
        }
    }
}

/// The collectives of one rank, keyed by epoch.
#[cfg_attr(not(feature = "mpi"), allow(dead_code))]
pub(crate) struct Rounds {
    map: Mutex<HashMap<u64, Round>>,
    per_rank: usize,
    /// The first rank that died ([`NONE_LOST`] while none did): every
    /// collective includes it, so none can complete any more.
    lost: AtomicUsize,
}

const NONE_LOST: usize = usize::MAX;

impl fmt::Debug for Rounds {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Rounds").finish_non_exhaustive()
    }
}

impl Rounds {
    pub(crate) fn new(per_rank: usize) -> Rounds {
        Rounds {
            map: Mutex::new(HashMap::new()),
            per_rank,
            lost: AtomicUsize::new(NONE_LOST),
        }
    }

    /// Rank `rank` died: every collective waiting now or started later fails
    /// (its locations panic naming the rank, `poll_result`); the drivers end.
    pub(crate) fn lose(&self, rank: usize) {
        let mut map = lock(&self.map);
        let _ = self
            .lost
            .compare_exchange(NONE_LOST, rank, Ordering::Relaxed, Ordering::Relaxed);
        for round in map.values_mut() {
            round.wake_all();
            if let Some(w) = round.driver.take() {
                w.wake();
            }
        }
    }

    /// The rank whose death stops the collectives, if one died (read under
    /// the map's lock, which `lose` holds while it sets it).
    fn lost(&self) -> Option<usize> {
        let r = self.lost.load(Ordering::Relaxed);
        (r != NONE_LOST).then_some(r)
    }

    /// The kind and root of every collective in progress on this rank, by
    /// epoch (for the cross-rank stall check, `stall.rs`).
    pub(crate) fn kinds(&self) -> Vec<(u64, u8, u32)> {
        let map = lock(&self.map);
        map.iter()
            .filter_map(|(&e, r)| r.kind.map(|(k, root)| (e, k, root)))
            .collect()
    }

    /// Whether no collective is in progress on this rank.
    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        lock(&self.map).is_empty()
    }

    /// A frame of collective `tag.epoch` from another rank.
    #[cfg_attr(not(feature = "mpi"), allow(dead_code))]
    pub(crate) fn incoming(
        &self,
        from_rank: u32,
        tag: CollectiveTag,
        value: Vec<u8>,
    ) -> Result<(), String> {
        let mut map = lock(&self.map);
        let round = map
            .entry(tag.epoch)
            .or_insert_with(|| Round::new(self.per_rank));
        match round.kind {
            None => {
                round.kind = Some((tag.kind, tag.root));
                round.kind_by = Some(By::Rank(from_rank));
            }
            Some(k) if k == (tag.kind, tag.root) => {}
            Some((kind, root)) => {
                let by = round
                    .kind_by
                    .map_or("this rank".to_string(), |b| b.to_string());
                return Err(format!(
                    "collective #{}: rank {from_rank} runs {} (root {}) where {by} runs {} (root {root})",
                    tag.epoch,
                    Kind::named(tag.kind),
                    tag.root,
                    Kind::named(kind)
                ));
            }
        }
        match tag.phase {
            Phase::Up => {
                if round.up.iter().any(|(r, _)| *r == from_rank) {
                    return Err(format!(
                        "collective #{}: rank {from_rank} contributed twice",
                        tag.epoch
                    ));
                }
                round.up.push((from_rank, value));
            }
            Phase::Down => {
                if round.down.is_some() {
                    return Err(format!(
                        "collective #{}: a second result arrived (from rank {from_rank})",
                        tag.epoch
                    ));
                }
                round.down = Some(value);
            }
        }
        round.fresh = true;
        let orphan = match round.driver.take() {
            Some(w) => {
                w.wake();
                None
            }
            // Nobody polls the driver (its locations are busy elsewhere, or
            // this rank takes no result): it runs as a task of its own.
            None => round.parked.take(),
        };
        drop(map);
        if let Some(p) = orphan {
            p.spawn();
        }
        Ok(())
    }
}

/// The binomial tree over `p` ranks, in ranks relative to the root: the children
/// of `rel`, nearest first.
pub(crate) fn children(rel: usize, p: usize) -> impl Iterator<Item = usize> {
    let limit = if rel == 0 {
        usize::BITS
    } else {
        rel.trailing_zeros()
    };
    (0..limit)
        .map(|k| 1usize.checked_shl(k).unwrap_or(usize::MAX))
        .take_while(move |&d| d < p)
        .map(move |d| rel + d)
        .filter(move |&c| c < p)
}

/// The parent of `rel` (not the root) in the binomial tree.
pub(crate) fn parent(rel: usize) -> usize {
    rel & (rel - 1)
}

/// What [`doubling_rounds`] returns: `Err(odd)`, or `Ok((pair, partners))`.
pub(crate) type DoublingRounds = Result<(Option<usize>, Vec<(usize, bool)>), usize>;

/// Rank `me`'s rounds of recursive doubling over `p` ranks
/// ([`Shape::Doubling`]). With `2^m` the largest power of two ≤ `p` and
/// `rem = p − 2^m`, the first `2·rem` ranks pair up: `Err(odd)` for an even
/// one, which hands its value to rank `odd` above it and gets the result
/// back; `Ok((pair, partners))` for the others, which first take the value
/// of rank `pair` below (if any, and send it the result at the end), then
/// swap with each partner in turn, whose block of ranks lies wholly below
/// (`true`) or above this rank's.
pub(crate) fn doubling_rounds(me: usize, p: usize) -> DoublingRounds {
    let pof2 = 1usize << (usize::BITS - 1 - p.max(1).leading_zeros());
    let rem = p - pof2;
    if me < 2 * rem && me % 2 == 0 {
        return Err(me + 1);
    }
    let pair = (me < 2 * rem).then(|| me - 1);
    // This rank's place among the 2^m that double: place `n` stands for
    // ranks 2n and 2n + 1 below 2·rem, and for rank n + rem above.
    let place = if me < 2 * rem { me / 2 } else { me - rem };
    let rank = |n: usize| if n < rem { 2 * n + 1 } else { n + rem };
    let partners = (0..pof2.trailing_zeros())
        .map(|k| place ^ (1 << k))
        .map(|n| (rank(n), n < place))
        .collect();
    Ok((pair, partners))
}

/// Rank `me`'s partners, round by round, in the scan by recursive doubling
/// over `p` ranks ([`Shape::Scan`]): the rank `2^k` away in round `k`, where
/// there is one.
pub(crate) fn scan_partners(me: usize, p: usize) -> impl Iterator<Item = usize> {
    (0..usize::BITS)
        .map(|k| 1usize << k)
        .take_while(move |&d| d < p)
        .map(move |d| me ^ d)
        .filter(move |&to| to < p)
}

/// Makes location `local`'s contribution to its next collective and returns the
/// epoch. The last location of the rank to arrive folds and starts the cross-rank
/// part.
pub(crate) fn arrive<T>(
    loc: &Location,
    kind: Kind,
    root: u32,
    value: Option<T>,
    op: Option<Op<T>>,
) -> u64
where
    T: Serialize + DeserializeOwned + Clone + Send + 'static,
{
    arrive_with(loc, kind, root, value, op, Plan::plain())
}

/// [`arrive`] with a [`Plan`]: for the personalised collectives, whose rank's
/// value `plan.split` cuts into one piece per rank (each rank's result holds
/// only the pieces for its locations: on a single rank, the fold of the
/// locations' values); for the scans, whose rank's result `plan.scan` makes.
pub(crate) fn arrive_with<T>(
    loc: &Location,
    kind: Kind,
    root: u32,
    value: Option<T>,
    op: Option<Op<T>>,
    mut plan: Plan<T>,
) -> u64
where
    T: Serialize + DeserializeOwned + Clone + Send + 'static,
{
    let shared = loc.shared();
    let local = &shared.local;
    let per_rank = local.per_rank;
    let me = loc.local_index();
    let epoch = local.slots[me].next_epoch();
    let root_local = (root as usize / per_rank == local.rank).then(|| root as usize % per_rank);
    let values = {
        let mut map = lock(&local.rounds.map);
        let round = map.entry(epoch).or_insert_with(|| Round::new(per_rank));
        let mine = (kind as u8, root);
        match round.kind {
            None => {
                round.kind = Some(mine);
                round.kind_by = Some(By::Location(loc.id()));
            }
            Some(k) if k == mine => {}
            Some((k, r)) => {
                let by = round
                    .kind_by
                    .map_or("another location".to_string(), |b| b.to_string());
                drop(map);
                shared.fail(&format!(
                    "collective #{epoch}: {} (rank {}) runs {} (root {root}) where {by} runs {} (root {r})",
                    loc.id(),
                    local.rank,
                    Kind::named(mine.0),
                    Kind::named(k)
                ))
            }
        }
        let ty = (TypeId::of::<T>(), std::any::type_name::<T>());
        match round.ty {
            None => round.ty = Some(ty),
            Some((id, _)) if id == ty.0 => {}
            Some((_, name)) => {
                drop(map);
                shared.fail(&format!(
                    "collective #{epoch}: {} passes a {} where another location passes a {name}",
                    loc.id(),
                    ty.1
                ))
            }
        }
        if round.takers.is_none() {
            round.takers = Some(match kind.shape() {
                Shape::Reduce => usize::from(root_local.is_some()),
                _ => per_rank,
            });
        }
        round.values[me] = value.map(|v| Box::new(v) as Box<dyn Any + Send>);
        round.arrived += 1;
        if round.arrived < per_rank {
            return epoch;
        }
        round.driving = true;
        std::mem::take(&mut round.values)
    };
    // The leader: fold outside the lock (the operation is user code).
    let mut it = values
        .into_iter()
        .map(|v| v.map(|b| *b.downcast::<T>().unwrap_or_else(|_| unreachable_type())));
    let partial: Option<T> = match kind.shape() {
        Shape::Broadcast | Shape::Scatter => root_local.and_then(|r| it.nth(r).flatten()),
        _ => {
            let op = op.as_ref();
            it.flatten().reduce(|a, b| match op {
                Some(op) => op(a, b),
                None => a,
            })
        }
    };
    if local.ranks == 1 {
        let result = match plan.scan.take() {
            Some(scan) => partial.map(|locals| (scan.finish)(None, locals)),
            None => partial,
        };
        complete(local, epoch, result);
        return epoch;
    }
    if kind == Kind::Quiescence {
        // A wave's sums cross ranks through the transport's own sum when it
        // has one (no driver task, no frames); the result comes back through
        // `Sink::summed`.
        let sums = partial
            .as_ref()
            .and_then(|p| (p as &dyn Any).downcast_ref::<[u64; 2]>());
        if let Some(&sums) = sums {
            if shared.transport.sum_wave(epoch, sums) {
                return epoch;
            }
        }
    }
    let driver = Driver {
        local: Arc::clone(local),
        transport: Arc::clone(&shared.transport),
        epoch,
        kind,
        root,
        op,
        plan,
    };
    start(
        local,
        epoch,
        Parked {
            run: Box::pin(driver.run(partial)),
            shared: Arc::downgrade(shared),
        },
    );
    epoch
}

/// Runs the leader's driver as far as it goes without waiting (a leaf of the
/// tree sends its part at once), then parks it in the round for the waiting
/// locations to poll — or spawns it when this rank has no location that
/// takes the result (a reduction's non-root rank), so none would poll it.
fn start(local: &Local, epoch: u64, mut parked: Parked) {
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        if parked.run.as_mut().poll(&mut cx).is_ready() {
            return;
        }
        let mut map = lock(&local.rounds.map);
        let Some(round) = map.get_mut(&epoch) else {
            drop(map);
            local.fail_invariant("a collective round vanished under its driver");
        };
        // The no-op waker the driver registered wakes nobody.
        round.driver = None;
        if std::mem::take(&mut round.fresh) {
            continue;
        }
        if round.takers == Some(0) {
            drop(map);
            parked.spawn();
        } else {
            round.parked = Some(parked);
        }
        return;
    }
}

/// Polls collective `epoch`'s parked driver on behalf of a waiting location
/// (`cx` is its task's, which a frame for the driver then wakes); again while
/// frames arrived during the poll.
fn drive(local: &Local, epoch: u64, cx: &mut Context<'_>) {
    let mut map = lock(&local.rounds.map);
    loop {
        let Some(mut parked) = map.get_mut(&epoch).and_then(|r| r.parked.take()) else {
            return;
        };
        if let Some(round) = map.get_mut(&epoch) {
            round.fresh = false;
        }
        drop(map);
        let done = parked.run.as_mut().poll(cx).is_ready();
        map = lock(&local.rounds.map);
        let Some(round) = map.get_mut(&epoch) else {
            return;
        };
        if done {
            return;
        }
        round.parked = Some(parked);
        if !round.fresh {
            return;
        }
    }
}

#[cold]
fn unreachable_type() -> ! {
    panic!("tutti: a collective value changed type after its type was checked")
}

/// Stores the rank's result and wakes the locations waiting for it.
pub(crate) fn complete<T: Send + 'static>(local: &Local, epoch: u64, result: Option<T>) {
    let mut map = lock(&local.rounds.map);
    let Some(round) = map.get_mut(&epoch) else {
        return;
    };
    round.result = result.map(|v| Box::new(v) as Box<dyn Any + Send>);
    round.driving = false;
    round.wake_all();
    if round.finished(local.per_rank) {
        map.remove(&epoch);
    }
}

/// The cross-rank part of one collective on one rank.
struct Driver<T> {
    local: Arc<Local>,
    transport: Arc<dyn Transport>,
    epoch: u64,
    kind: Kind,
    root: u32,
    op: Option<Op<T>>,
    plan: Plan<T>,
}

impl<T: Serialize + DeserializeOwned + Clone + Send + 'static> Driver<T> {
    fn send(&self, to_rank: usize, phase: Phase, value: Vec<u8>) {
        let tag = CollectiveTag {
            epoch: self.epoch,
            phase,
            kind: self.kind as u8,
            root: self.root,
        };
        let f = frame::collective(
            self.local.rank as u32,
            to_rank as u32,
            tag,
            value,
            self.local.inline_max,
        );
        self.transport.send(to_rank, f);
    }

    /// The value's bytes in the codec's format; a value that cannot be encoded
    /// (its `Serialize` implementation fails) takes the job down.
    fn encode(&self, value: &T) -> Vec<u8> {
        let mut out = Vec::new();
        if let Some(wire) = &self.plan.wire {
            (wire.encode)(value, &mut out);
            return out;
        }
        match codec::encode(value, &mut out) {
            Ok(()) => out,
            Err(e) => self.transport.abort(&format!(
                "collective #{} on rank {}: {e}",
                self.epoch, self.local.rank
            )),
        }
    }

    /// [`decode`](Self::decode) of bytes this driver keeps no longer: a
    /// large buffer goes back to the rank's pool for the next body.
    fn decode_owned(&self, from: &dyn fmt::Display, bytes: Vec<u8>) -> T {
        let v = self.decode(from, &bytes);
        self.local.pool.put(bytes);
        v
    }

    /// The value in `bytes`, which came from `from` (named only if they do
    /// not decode: formatting costs nothing otherwise); bytes that do not
    /// decode take the job down.
    fn decode(&self, from: &dyn fmt::Display, bytes: &[u8]) -> T {
        let decoded = match &self.plan.wire {
            Some(wire) => (wire.decode)(bytes),
            None => codec::decode::<T>(bytes).map_err(|e| e.to_string()),
        };
        match decoded {
            Ok(v) => v,
            Err(e) => self.transport.abort(&format!(
                "collective #{}: the value from {from} does not decode as {}: {e}",
                self.epoch,
                std::any::type_name::<T>()
            )),
        }
    }

    fn combine(&self, a: T, b: T) -> T {
        match &self.op {
            Some(op) => op(a, b),
            None => a,
        }
    }

    /// The rank's value cut into one piece per rank (`Split`).
    fn split(&self, value: T) -> Vec<Option<T>> {
        let Some(split) = &self.plan.split else {
            self.transport.abort(&format!(
                "collective #{}: {} without its split (broken invariant)",
                self.epoch,
                Kind::named(self.kind as u8)
            ))
        };
        let pieces = split(value);
        if pieces.len() != self.local.ranks {
            self.transport.abort(&format!(
                "collective #{}: {} split into {} pieces for {} ranks (broken invariant)",
                self.epoch,
                Kind::named(self.kind as u8),
                pieces.len(),
                self.local.ranks
            ));
        }
        pieces.into_iter().map(Some).collect()
    }

    /// [`Shape::Doubling`]: this rank's value combined with every other
    /// rank's, in rank order; `None` if a rank died.
    async fn doubling(&self, mut acc: T) -> Option<T> {
        let (pair, partners) = match doubling_rounds(self.local.rank, self.local.ranks) {
            Err(odd) => {
                // Hand the value to the odd rank above; it sends the result back.
                self.send(odd, Phase::Up, self.encode(&acc));
                let b = Message::down(&self.local, self.epoch).await?;
                return Some(self.decode_owned(&format_args!("rank {odd}"), b));
            }
            Ok(rounds) => rounds,
        };
        if let Some(even) = pair {
            let b = Message::up(&self.local, self.epoch, even as u32).await?;
            let lower = self.decode_owned(&format_args!("rank {even}"), b);
            acc = self.combine(lower, acc);
        }
        for (to, below) in partners {
            self.send(to, Phase::Up, self.encode(&acc));
            let b = Message::up(&self.local, self.epoch, to as u32).await?;
            let theirs = self.decode_owned(&format_args!("rank {to}"), b);
            acc = if below {
                self.combine(theirs, acc)
            } else {
                self.combine(acc, theirs)
            };
        }
        if let Some(even) = pair {
            self.send(even, Phase::Down, self.encode(&acc));
        }
        Some(acc)
    }

    /// [`Shape::Scan`]: the fold of every rank below this one (`None` on
    /// rank 0), and `locals` back; `None` if a rank died.
    ///
    /// Invariant: after round `k` this rank's block of `2^(k+1)` ranks (cut
    /// at `p`) folds to `below ⊕ total ⊕ above`, where `total` folds this
    /// rank's locals, `below` the block's ranks under this one and `above`
    /// those over it.
    async fn scan(&self, ops: &ScanOps<T>, locals: T) -> Option<(Option<T>, T)> {
        let me = self.local.rank;
        let total = (ops.total)(&locals);
        let mut below: Option<T> = None;
        let mut above: Option<T> = None;
        for to in scan_partners(me, self.local.ranks) {
            let bytes = self.encode_block(ops, total.as_ref().unwrap_or(&locals), &below, &above);
            self.send(to, Phase::Up, bytes);
            let b = Message::up(&self.local, self.epoch, to as u32).await?;
            let theirs = self.decode_owned(&format_args!("rank {to}"), b);
            if to < me {
                below = Some(match below {
                    Some(b) => (ops.fold)(theirs, b),
                    None => theirs,
                });
            } else {
                above = Some(match above {
                    Some(a) => (ops.fold)(a, theirs),
                    None => theirs,
                });
            }
        }
        Some((below, locals))
    }

    /// The bytes of `below ⊕ total ⊕ above` (copies only when there is
    /// something to fold).
    fn encode_block(
        &self,
        ops: &ScanOps<T>,
        total: &T,
        below: &Option<T>,
        above: &Option<T>,
    ) -> Vec<u8> {
        if below.is_none() && above.is_none() {
            return self.encode(total);
        }
        let mut block = total.clone();
        if let Some(b) = below {
            block = (ops.fold)(b.clone(), block);
        }
        if let Some(a) = above {
            block = (ops.fold)(block, a.clone());
        }
        self.encode(&block)
    }

    async fn run(mut self, partial: Option<T>) {
        let p = self.local.ranks;
        let me = self.local.rank;
        let root_rank = self.root as usize / self.local.per_rank;
        let result: Option<T> = match self.kind.shape() {
            Shape::Scatter => {
                if me == root_rank {
                    let Some(whole) = partial else {
                        self.transport
                            .abort("a scatter without the root's values (broken invariant)")
                    };
                    let mut pieces = self.split(whole);
                    for k in 1..p {
                        let to = (me + k) % p;
                        if let Some(piece) = pieces[to].take() {
                            self.send(to, Phase::Down, self.encode(&piece));
                        }
                    }
                    pieces[me].take()
                } else {
                    let Some(b) = Message::down(&self.local, self.epoch).await else {
                        return;
                    };
                    Some(self.decode_owned(&format_args!("rank {root_rank}"), b))
                }
            }
            Shape::Exchange => {
                let Some(whole) = partial else {
                    self.transport
                        .abort("an exchange on a rank without locations (broken invariant)")
                };
                let mut pieces = self.split(whole);
                // Each rank starts with its next neighbour, so no rank is
                // everyone's first destination.
                for k in 1..p {
                    let to = (me + k) % p;
                    if let Some(piece) = pieces[to].take() {
                        self.send(to, Phase::Up, self.encode(&piece));
                    }
                }
                let mut acc: Option<T> = None;
                for r in 0..p {
                    let v = if r == me {
                        pieces[me].take()
                    } else {
                        let Some(b) = Message::up(&self.local, self.epoch, r as u32).await else {
                            return;
                        };
                        Some(self.decode_owned(&format_args!("rank {r}"), b))
                    };
                    acc = match (acc, v) {
                        (Some(a), Some(b)) => Some(self.combine(a, b)),
                        (a, b) => a.or(b),
                    };
                }
                acc
            }
            Shape::Doubling => {
                let Some(acc) = partial else {
                    self.transport
                        .abort("a reduction on a rank without locations (broken invariant)")
                };
                let Some(v) = self.doubling(acc).await else {
                    return;
                };
                Some(v)
            }
            Shape::Scan => {
                let Some(locals) = partial else {
                    self.transport
                        .abort("a scan on a rank without locations (broken invariant)")
                };
                let Some(scan) = self.plan.scan.take() else {
                    self.transport.abort(&format!(
                        "collective #{}: {} without its scan (broken invariant)",
                        self.epoch,
                        Kind::named(self.kind as u8)
                    ))
                };
                let Some((below, locals)) = self.scan(&scan, locals).await else {
                    return;
                };
                Some((scan.finish)(below, locals))
            }
            Shape::Broadcast => {
                let rel = (me + p - root_rank) % p;
                let (value, bytes) = match partial {
                    Some(v) if rel == 0 => {
                        let b = self.encode(&v);
                        (v, b)
                    }
                    _ => {
                        let Some(b) = Message::down(&self.local, self.epoch).await else {
                            return;
                        };
                        (self.decode(&"the parent rank", &b), b)
                    }
                };
                for c in children(rel, p) {
                    self.send((c + root_rank) % p, Phase::Down, bytes.clone());
                }
                Some(value)
            }
            _ => {
                let Some(mut acc) = partial else {
                    self.transport
                        .abort("a reduction on a rank without locations (broken invariant)")
                };
                for c in children(me, p) {
                    let Some(b) = Message::up(&self.local, self.epoch, c as u32).await else {
                        return;
                    };
                    let v = self.decode_owned(&format_args!("rank {c}"), b);
                    acc = self.combine(acc, v);
                }
                if me != 0 {
                    self.send(parent(me), Phase::Up, self.encode(&acc));
                }
                match self.kind.shape() {
                    Shape::Reduce => {
                        if me == 0 && root_rank == 0 {
                            Some(acc)
                        } else if me == 0 {
                            self.send(root_rank, Phase::Down, self.encode(&acc));
                            None
                        } else if me == root_rank {
                            let Some(b) = Message::down(&self.local, self.epoch).await else {
                                return;
                            };
                            Some(self.decode_owned(&"rank 0", b))
                        } else {
                            None
                        }
                    }
                    _ => {
                        let (value, bytes) = if me == 0 {
                            let b = self.encode(&acc);
                            (acc, b)
                        } else {
                            let Some(b) = Message::down(&self.local, self.epoch).await else {
                                return;
                            };
                            (self.decode(&"the parent rank", &b), b)
                        };
                        for c in children(me, p) {
                            self.send(c, Phase::Down, bytes.clone());
                        }
                        Some(value)
                    }
                }
            }
        };
        complete(&self.local, self.epoch, result);
    }
}

/// Waits for a frame of one collective from another rank.
struct Message<'a> {
    local: &'a Local,
    epoch: u64,
    /// `Some(rank)`: the partial result from child `rank`; `None`: the result.
    up_from: Option<u32>,
}

impl<'a> Message<'a> {
    fn up(local: &'a Local, epoch: u64, from: u32) -> Message<'a> {
        Message {
            local,
            epoch,
            up_from: Some(from),
        }
    }

    fn down(local: &'a Local, epoch: u64) -> Message<'a> {
        Message {
            local,
            epoch,
            up_from: None,
        }
    }
}

impl Future for Message<'_> {
    /// `None`: a rank died, the collective cannot complete.
    type Output = Option<Vec<u8>>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Vec<u8>>> {
        let mut map = lock(&self.local.rounds.map);
        let Some(round) = map.get_mut(&self.epoch) else {
            // The leader created the round before spawning its driver, and the
            // round outlives the driver.
            drop(map);
            self.local
                .fail_invariant("a collective round vanished under its driver");
        };
        let got = match self.up_from {
            Some(r) => round
                .up
                .iter()
                .position(|(from, _)| *from == r)
                .map(|i| round.up.swap_remove(i).1),
            None => round.down.take(),
        };
        match got {
            Some(v) => Poll::Ready(Some(v)),
            None if self.local.rounds.lost().is_some() => Poll::Ready(None),
            None => {
                round.driver = Some(cx.waker().clone());
                Poll::Pending
            }
        }
    }
}

/// Polls for the result of collective `epoch` on behalf of location `loc`, which
/// takes it: `Ready(None)` only if the collective completed without a result for
/// this rank, which the callers' kinds rule out.
pub(crate) fn poll_result<T: Clone + 'static>(
    loc: &Location,
    epoch: u64,
    cx: &mut Context<'_>,
) -> Poll<Option<T>> {
    let local = &loc.shared().local;
    let me = loc.local_index();
    drive(local, epoch, cx);
    let mut map = lock(&local.rounds.map);
    let Some(round) = map.get_mut(&epoch) else {
        drop(map);
        local.fail_invariant("a collective round vanished before its result was taken");
    };
    // A location that takes the result only finds `None` while the collective
    // is still running (only non-takers complete with `None`).
    if round.result.is_none() && (round.driving || round.arrived < local.per_rank) {
        if let Some(dead) = local.rounds.lost() {
            let kind = round.kind.map_or("collective", |(k, _)| Kind::name(k));
            drop(map);
            panic!(
                "tutti: {}: collective #{epoch} (a {kind}) cannot complete: rank {dead} of \
                 the world died",
                loc.id()
            );
        }
        round.wakers[me] = Some(cx.waker().clone());
        return Poll::Pending;
    }
    // The last location to take the result takes it as it is; the others
    // take a copy.
    let value = if round.takers == Some(1) {
        round
            .result
            .take()
            .and_then(|r| r.downcast::<T>().ok())
            .map(|b| *b)
    } else {
        round
            .result
            .as_ref()
            .and_then(|r| r.downcast_ref::<T>())
            .cloned()
    };
    if let Some(t) = round.takers.as_mut() {
        *t = t.saturating_sub(1);
    }
    if round.finished(local.per_rank) {
        map.remove(&epoch);
    }
    Poll::Ready(value)
}

/// Whether collective `epoch`'s result is there for `loc` to take, or a frame
/// for its parked driver arrived (a peek that registers nothing, for a
/// location spinning on the engine).
pub(crate) fn is_done(loc: &Location, epoch: u64) -> bool {
    let local = &loc.shared().local;
    let map = lock(&local.rounds.map);
    local.rounds.lost().is_some()
        || map.get(&epoch).is_none_or(|round| {
            round.result.is_some()
                || !(round.driving || round.arrived < local.per_rank)
                || (round.fresh && round.parked.is_some())
        })
}

/// Location `loc` gives up waiting for collective `epoch`'s result.
pub(crate) fn abandon(loc: &Location, epoch: u64) {
    let local = &loc.shared().local;
    let mut map = lock(&local.rounds.map);
    let mut orphan = None;
    if let Some(round) = map.get_mut(&epoch) {
        round.wakers[loc.local_index()] = None;
        if let Some(t) = round.takers.as_mut() {
            *t = t.saturating_sub(1);
        }
        // This location may have been the one polling the driver.
        round.driver = None;
        orphan = round.parked.take();
        if round.finished(local.per_rank) {
            map.remove(&epoch);
        }
    }
    drop(map);
    if let Some(p) = orphan {
        p.spawn();
    }
}

/// Spins of a waiting location between polls of its collective (`Collective`).
const SPIN_ROUNDS: u32 = 16;

/// Waits for the result of a collective this location has already contributed
/// to; see the [module documentation](crate::world). `.await` it, or call
/// [`wait`](Self::wait) on a plain thread.
#[must_use = "the contribution is made; the future only waits for the result"]
pub struct Collective<'a, T> {
    loc: &'a Location,
    epoch: u64,
    /// `false` once the result was taken.
    pending: bool,
    _value: PhantomData<fn() -> T>,
}

impl<'a, T: Clone + Send + 'static> Collective<'a, T> {
    pub(crate) fn new(loc: &'a Location, epoch: u64) -> Self {
        Collective {
            loc,
            epoch,
            pending: true,
            _value: PhantomData,
        }
    }

    /// Blocks until the collective completes (on a worker, outside an async task,
    /// the worker keeps executing other work meanwhile).
    ///
    /// # Panics
    /// Inside an async task (use `.await`).
    pub fn wait(self) -> T {
        crate::runtime::block_on(self)
    }
}

impl<T: Clone + Send + 'static> Future for Collective<'_, T> {
    type Output = T;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T> {
        assert!(
            self.pending,
            "tutti: a collective future polled after it completed"
        );
        let mut polled = poll_result::<T>(self.loc, self.epoch, cx);
        // Spin while neither the result, a frame for the driver nor a message
        // (which a caller serving requests while it waits would handle) has
        // arrived; a driver takes one frame per tree level, so a few rounds.
        let mut rounds = 0;
        while polled.is_pending()
            && rounds < SPIN_ROUNDS
            && self
                .loc
                .spin_until(|| is_done(self.loc, self.epoch) || self.loc.has_arrived())
        {
            polled = poll_result::<T>(self.loc, self.epoch, cx);
            rounds += 1;
        }
        match polled {
            Poll::Pending => {
                let epoch = self.epoch;
                self.loc
                    .wait_for_world(crate::diag::node::What::Collective(epoch), cx);
                Poll::Pending
            }
            Poll::Ready(v) => {
                self.pending = false;
                match v {
                    Some(v) => Poll::Ready(v),
                    None => self
                        .loc
                        .shared()
                        .local
                        .fail_invariant("a collective completed without its result"),
                }
            }
        }
    }
}

impl<T> Drop for Collective<'_, T> {
    fn drop(&mut self) {
        if self.pending {
            // Given up before the result: stop counting this location as a taker
            // so the round can still be removed.
            abandon(self.loc, self.epoch);
        }
    }
}

impl<T> fmt::Debug for Collective<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Collective")
            .field("epoch", &self.epoch)
            .field("pending", &self.pending)
            .finish()
    }
}

/// The result of [`Location::reduce`]: `Some` at the root, `None` elsewhere (at
/// once: only the root waits).
#[must_use = "the contribution is made; the future only waits for the result"]
#[derive(Debug)]
pub struct Reduction<'a, T>(Option<Collective<'a, T>>);

impl<'a, T: Clone + Send + 'static> Reduction<'a, T> {
    pub(crate) fn new(at_root: Option<Collective<'a, T>>) -> Self {
        Reduction(at_root)
    }

    /// Blocks until the reduction completes (the root) or returns `None` at once.
    pub fn wait(self) -> Option<T> {
        crate::runtime::block_on(self)
    }
}

impl<T: Clone + Send + 'static> Future for Reduction<'_, T> {
    type Output = Option<T>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<T>> {
        match &mut self.0 {
            None => Poll::Ready(None),
            Some(c) => Pin::new(c).poll(cx).map(Some),
        }
    }
}

/// A location's part of a collective's result: what
/// [`Location::scatter`], [`all_to_all`](Location::all_to_all),
/// [`scan`](Location::scan) and the like return. The contribution is made when
/// the method is called; `.await` it, or call [`wait`](Self::wait) on a plain
/// thread.
#[must_use = "the contribution is made; the future only waits for the result"]
pub struct Portion<'a, A, T> {
    whole: Collective<'a, A>,
    /// Cuts this location's part out of the whole result (taken when it is ready).
    part: Option<Box<dyn FnOnce(A) -> T + Send + 'a>>,
}

impl<'a, A: Clone + Send + 'static, T> Portion<'a, A, T> {
    pub(crate) fn new(whole: Collective<'a, A>, part: impl FnOnce(A) -> T + Send + 'a) -> Self {
        Portion {
            whole,
            part: Some(Box::new(part)),
        }
    }

    /// Blocks until the collective completes (on a worker, outside an async task,
    /// the worker keeps executing other work meanwhile).
    ///
    /// # Panics
    /// Inside an async task (use `.await`).
    pub fn wait(self) -> T {
        crate::runtime::block_on(self)
    }
}

impl<A: Clone + Send + 'static, T> Future for Portion<'_, A, T> {
    type Output = T;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T> {
        let this = &mut *self;
        let whole = std::task::ready!(Pin::new(&mut this.whole).poll(cx));
        let Some(part) = this.part.take() else {
            panic!("tutti: a collective future polled after it completed")
        };
        Poll::Ready(part(whole))
    }
}

impl<A, T> fmt::Debug for Portion<'_, A, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Portion")
            .field("epoch", &self.whole.epoch)
            .field("pending", &self.whole.pending)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binomial_trees_cover_every_rank_once_in_order() {
        for p in 1..40 {
            let mut seen = vec![0; p];
            seen[0] += 1;
            for r in 0..p {
                for c in children(r, p) {
                    assert_eq!(parent(c), r, "p={p} c={c}");
                    seen[c] += 1;
                }
                // A node's subtree is the contiguous range [r, r + lowbit(r)).
                let kids: Vec<_> = children(r, p).collect();
                assert!(kids.windows(2).all(|w| w[0] < w[1]));
            }
            assert!(seen.iter().all(|&s| s == 1), "p={p}: {seen:?}");
        }
    }

    /// Runs the doubling rounds of every rank in lock step, on strings
    /// concatenated (not commutative): every rank must end with "0,1,…".
    #[test]
    fn recursive_doubling_folds_every_rank_in_order() {
        for p in 1..70 {
            let plans: Vec<_> = (0..p).map(|r| doubling_rounds(r, p)).collect();
            let mut acc: Vec<String> = (0..p).map(|r| format!("{r},")).collect();
            // The pairs: each even rank's value goes to the odd one above.
            for (r, plan) in plans.iter().enumerate() {
                if let Ok((Some(even), _)) = plan {
                    assert_eq!(plans[*even], Err(r), "p={p}");
                    acc[r] = format!("{}{}", acc[*even], acc[r]);
                }
            }
            let rounds = plans
                .iter()
                .filter_map(|x| x.as_ref().ok())
                .map(|x| x.1.len());
            let rounds = rounds.max().unwrap_or(0);
            for k in 0..rounds {
                let before = acc.clone();
                for (r, plan) in plans.iter().enumerate() {
                    let Ok((_, partners)) = plan else { continue };
                    let (to, below) = partners[k];
                    // Partners name each other in the same round.
                    let Ok((_, theirs)) = &plans[to] else {
                        panic!("p={p}: rank {r} swaps with a rank that hands")
                    };
                    assert_eq!(theirs[k], (r, !below), "p={p} k={k}");
                    acc[r] = if below {
                        format!("{}{}", before[to], before[r])
                    } else {
                        format!("{}{}", before[r], before[to])
                    };
                }
            }
            for (r, plan) in plans.iter().enumerate() {
                if let Err(odd) = plan {
                    acc[r] = acc[*odd].clone();
                }
            }
            let want: String = (0..p).map(|r| format!("{r},")).collect();
            assert!(acc.iter().all(|a| *a == want), "p={p}: {acc:?}");
        }
    }

    /// The scan's rounds in lock step, as the driver keeps `below` and
    /// `above`: every rank must end with the ranks below it, in order.
    #[test]
    fn doubling_scan_gives_each_rank_the_ranks_below_in_order() {
        for p in 1..70 {
            let mut below: Vec<String> = vec![String::new(); p];
            let mut above: Vec<String> = vec![String::new(); p];
            let partners: Vec<Vec<usize>> = (0..p).map(|r| scan_partners(r, p).collect()).collect();
            for k in 0..usize::BITS as usize {
                let d = 1usize << k;
                if d >= p {
                    break;
                }
                let block: Vec<String> = (0..p)
                    .map(|r| format!("{}{r},{}", below[r], above[r]))
                    .collect();
                for r in 0..p {
                    let to = r ^ d;
                    if to >= p {
                        assert!(!partners[r].contains(&to));
                        continue;
                    }
                    assert!(partners[r].contains(&to) && partners[to].contains(&r));
                    if to < r {
                        below[r] = format!("{}{}", block[to], below[r]);
                    } else {
                        above[r] = format!("{}{}", above[r], block[to]);
                    }
                }
            }
            for (r, b) in below.iter().enumerate() {
                let want: String = (0..r).map(|i| format!("{i},")).collect();
                assert_eq!(*b, want, "p={p} rank {r}");
            }
        }
    }
}
