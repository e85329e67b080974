//! Running a placed graph on one location: the actors' tasks, the router that
//! feeds channels from other locations, and the end of the run.
//!
//! # Tasks
//!
//! Each actor of this location is one task of the rank's runtime (never a
//! thread). It consumes its signal, runs `act()` if its firing rule allows,
//! and parks on the signal until a port changes. Ports notify the signal
//! (`channel.rs`).
//!
//! # The router and the end of the run
//!
//! The location's own task is the router: it receives the world messages of
//! the graph (tokens, credits, close and gone notices) and hands them to the
//! channels. The location is *idle* when every local actor is parked with no
//! notification pending (`Activity::active == 0`; a notify that wakes an actor
//! counts it active before the wake). Only a running actor or the router can
//! notify a local actor, so an idle location stays idle until the router
//! handles a message.
//!
//! While actors run, the router receives with `recv` and keeps each delivery
//! alive until the location is idle again; when idle, it drops them (they
//! count as handled) and receives with `recv_until_quiet`. So a delivery
//! counts as handled only after every message its tokens caused was sent, and
//! every location inside `recv_until_quiet` is idle: exactly the conditions of
//! the world's quiescence argument (`world/mod.rs`). When the world is
//! quiescent nothing can change any more: if every actor has terminated the
//! run ended; otherwise the graph can no longer progress and the run reports,
//! on every location, which actors wait and on what.

use std::future::{poll_fn, Future};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::pin;
use std::sync::Arc;
use std::task::Poll;

use super::build::{ActorGraph, Dir, Firing};
use super::channel::{
    Activity, Carry, Cell, ErasedIn, ErasedOut, InEnd, Inlet, OutEnd, Refused, RemoteOut, CLOSE,
    CREDIT, DATA, GONE, PUT,
};
use super::onesided::{self, Source, Target};
use super::partition::Placement;
use super::port::{ActorId, InPort, OutPort, SendError, Token};
use crate::loom::{AtomicBool, Ordering};
use crate::sync::Wait;
use crate::world::{Delivery, Location, LocationId};

/// What `act()` tells the runner.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Status {
    /// Run me again when a port changes.
    Continue,
    /// I have terminated: my outputs close (consumers see them end once
    /// drained) and my inputs refuse further tokens.
    Done,
}

/// A graph actor: a state machine whose `act()` runs when its ports change
/// (see [`Firing`]). Closures `FnMut(&mut Ports) -> Status` are actors.
pub trait Actor: Send + 'static {
    /// Takes tokens from inputs, sends tokens to outputs, and says whether the
    /// actor goes on. Must not block: a full output or an empty input is met by
    /// returning and being called again when it changes.
    fn act(&mut self, ports: &mut Ports<'_>) -> Status;

    /// Runs once when the run starts, before any `act()` and whatever the
    /// firing rule: for tokens an actor sends before it has received any
    /// (an [`AllReady`](Firing::AllReady) actor whose neighbours wait for
    /// its first token). The default does nothing.
    fn start(&mut self, ports: &mut Ports<'_>) -> Status {
        let _ = ports;
        Status::Continue
    }
}

impl<F: FnMut(&mut Ports<'_>) -> Status + Send + 'static> Actor for F {
    fn act(&mut self, ports: &mut Ports<'_>) -> Status {
        self(ports)
    }
}

enum Slot {
    In(Option<Box<dyn ErasedIn>>),
    Out(Option<Box<dyn ErasedOut>>),
}

/// An actor's ports during `act()`.
pub struct Ports<'a> {
    me: ActorId,
    name: &'a str,
    slots: &'a mut [Slot],
    loc: &'a Location,
    sent_away: bool,
}

impl std::fmt::Debug for Ports<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ports").field("actor", &self.name).finish()
    }
}

impl<'a> Ports<'a> {
    fn slot(&mut self, actor: ActorId, index: u32) -> &mut Slot {
        if actor != self.me {
            misuse(self.name, "a port of another actor");
        }
        &mut self.slots[index as usize]
    }

    fn input<T: Token>(&mut self, p: InPort<T>) -> Option<&mut InEnd<T>> {
        match self.slot(p.actor, p.index) {
            Slot::In(Some(end)) => end.as_any().downcast_mut::<InEnd<T>>(),
            Slot::In(None) => None,
            Slot::Out(_) => None,
        }
    }

    fn output<T: Token>(&mut self, p: OutPort<T>) -> Option<&mut OutEnd<T>> {
        match self.slot(p.actor, p.index) {
            Slot::Out(Some(end)) => end.as_any().downcast_mut::<OutEnd<T>>(),
            _ => None,
        }
    }

    /// Takes the oldest token of input `p`, if there is one.
    ///
    /// # Panics
    /// If `p` is a port of another actor (a programming error).
    #[inline]
    pub fn recv<T: Token>(&mut self, p: InPort<T>) -> Option<T> {
        let loc = self.loc;
        let mut away = false;
        let v = self.input(p)?.recv(loc, &mut away);
        self.sent_away |= away;
        v
    }

    /// Whether input `p` has ended: its producer terminated and every token it
    /// sent has been taken (an unconnected input has always ended).
    pub fn is_ended<T: Token>(&mut self, p: InPort<T>) -> bool {
        self.input(p).is_none_or(|e| e.is_ended())
    }

    /// Tokens waiting on input `p`.
    pub fn len<T: Token>(&mut self, p: InPort<T>) -> usize {
        self.input(p).map_or(0, |e| ErasedIn::len(e))
    }

    /// Sends `v` on output `p`, or hands it back (full, closed, unconnected).
    ///
    /// # Panics
    /// If `p` is a port of another actor (a programming error).
    #[inline]
    pub fn send<T: Token>(&mut self, p: OutPort<T>, v: T) -> Result<(), SendError<T>> {
        let loc = self.loc;
        let Some(end) = self.output(p) else {
            return Err(SendError::Unconnected(v));
        };
        match end.send(loc, v) {
            Ok(away) => {
                self.sent_away |= away;
                Ok(())
            }
            Err(Refused::Full(v)) => Err(SendError::Full(v)),
            Err(Refused::Closed(v)) => Err(SendError::Closed(v)),
        }
    }

    /// Tokens output `p` can take now (0 if unconnected).
    pub fn room<T: Token>(&mut self, p: OutPort<T>) -> usize {
        self.output(p).map_or(0, |e| e.room())
    }

    /// This actor's id.
    pub fn actor(&self) -> ActorId {
        self.me
    }

    /// This actor's name.
    pub fn name(&self) -> &str {
        self.name
    }

    /// The location this actor runs on.
    pub fn location(&self) -> LocationId {
        self.loc.id()
    }
}

#[cold]
fn misuse(actor: &str, what: &str) -> ! {
    panic!("tutti graph: actor '{actor}' used {what}")
}

/// What a run did on this location.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct RunReport {
    /// Actors that ran here.
    pub actors: usize,
    /// `act()` calls made here.
    pub acts: u64,
    /// Tokens left unconsumed here by actors that terminated with tokens in
    /// their inputs, or that arrived after their consumer terminated.
    pub discarded: u64,
    /// Times an actor's task was woken here to run `act()` (with
    /// [`Firing::AllReady`] only once its ports are all ready, see the
    /// [module docs](super)).
    pub wakeups: u64,
    /// Quiescence waves this location started during the run (each a
    /// world collective: the router starts one whenever its actors are all
    /// parked, e.g. while they wait for tokens from other ranks).
    pub waves: u64,
    /// Tokens put one-sided (`MPI_Put`) from here ([`Scheme::OneSided`](super::Scheme::OneSided)).
    pub puts: u64,
    /// Tokens of one-sided channels sent two-sided from here because their
    /// encoding did not fit a slot.
    pub oversize: u64,
}

/// Why a run failed. Every location of the world returns the same error.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RunError {
    /// The graph can no longer progress: these actors (with what they wait on)
    /// have not terminated, and nothing is running or in flight.
    Stalled(Vec<String>),
    /// Actors whose `act()` panicked (they count as terminated).
    Panicked(Vec<String>),
    /// Messages that are not the graph's arrived during the run.
    BadMessage(Vec<String>),
    /// The ranks built different graphs or placements (SPMD code must build the
    /// same graph everywhere).
    Mismatch,
    /// The placement does not fit the graph or the world.
    Placement(String),
    /// A channel's [`Scheme`](super::Scheme) cannot run on this world (a
    /// one-sided channel between ranks that MPI does not join).
    Scheme(String),
}

impl std::fmt::Display for RunError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RunError::Stalled(w) => write!(f, "the graph can no longer progress: {}", w.join("; ")),
            RunError::Panicked(w) => write!(f, "actors panicked: {}", w.join("; ")),
            RunError::BadMessage(w) => write!(f, "bad messages: {}", w.join("; ")),
            RunError::Mismatch => f.write_str(
                "the ranks built different graphs or placements (build the same graph on every rank)",
            ),
            RunError::Placement(w) => write!(f, "placement: {w}"),
            RunError::Scheme(w) => write!(f, "scheme: {w}"),
        }
    }
}

impl std::error::Error for RunError {}

/// One local actor's shared state.
struct Local {
    id: ActorId,
    cell: Arc<Cell>,
    /// Set by the actor's task when it terminates.
    done: AtomicBool,
    /// Set by the router when the run ends with the actor still waiting: the
    /// task then exits without calling `act()`.
    abandon: AtomicBool,
    /// A description of what the actor waits on, kept for the stall report.
    waits: crate::loom::Mutex<String>,
}

/// What the router does with a channel's messages.
enum Entry {
    None,
    /// A channel from another location; its slots if it is one-sided.
    In(Box<dyn Inlet>, Option<Source>),
    Out(Arc<RemoteOut>),
}

#[derive(Default, Clone, serde::Serialize, serde::Deserialize)]
struct Problems {
    stalled: Vec<String>,
    panicked: Vec<String>,
    bad: Vec<String>,
}

impl Problems {
    fn merge(mut self, o: Problems) -> Problems {
        self.stalled.extend(o.stalled);
        self.panicked.extend(o.panicked);
        self.bad.extend(o.bad);
        self
    }
}

impl ActorGraph {
    /// Runs the graph on this location (call it on every location, SPMD):
    /// `make` creates each actor placed here, then the actors run until every
    /// actor of the graph has terminated. The ports are shared through lock-free
    /// rings within a location and through the world's messages between
    /// locations (see the [module docs](super)).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use tutti::graph::{ActorGraph, Partition, Ports, Status};
    /// use tutti::world::World;
    ///
    /// let world = World::builder().locations(2).workers(2).build().unwrap();
    /// let sums = world.run(|loc| async move {
    ///     let mut b = ActorGraph::builder();
    ///     let p = b.actor("count").unwrap();
    ///     let out = b.output::<u64>(p, "out").unwrap();
    ///     let c = b.actor("sum").unwrap();
    ///     let inp = b.input::<u64>(c, "in").unwrap();
    ///     b.connect(out, inp, 2).unwrap();
    ///     let graph = b.build();
    ///     let placement = graph.partition(2, &Partition::Block).unwrap(); // one each
    ///     let total = Arc::new(std::sync::atomic::AtomicU64::new(0));
    ///     let t = Arc::clone(&total);
    ///     let loc = Arc::new(loc);
    ///     graph
    ///         .run(&loc, &placement, move |id| -> Box<dyn tutti::graph::Actor> {
    ///             if id == p {
    ///                 let mut next = 1;
    ///                 Box::new(move |ports: &mut Ports| {
    ///                     while next <= 100 {
    ///                         match ports.send(out, next) {
    ///                             Ok(()) => next += 1,
    ///                             Err(_) => return Status::Continue, // full: wait for room
    ///                         }
    ///                     }
    ///                     Status::Done
    ///                 })
    ///             } else {
    ///                 let t = Arc::clone(&t);
    ///                 Box::new(move |ports: &mut Ports| {
    ///                     while let Some(v) = ports.recv(inp) {
    ///                         t.fetch_add(v, std::sync::atomic::Ordering::Relaxed);
    ///                     }
    ///                     if ports.is_ended(inp) { Status::Done } else { Status::Continue }
    ///                 })
    ///             }
    ///         })
    ///         .await
    ///         .unwrap();
    ///     total.load(std::sync::atomic::Ordering::Relaxed)
    /// });
    /// assert_eq!(sums, [0, 5050]);
    /// ```
    pub async fn run<F>(
        &self,
        loc: &Arc<Location>,
        placement: &Placement,
        mut make: F,
    ) -> Result<RunReport, RunError>
    where
        F: FnMut(ActorId) -> Box<dyn Actor>,
    {
        let world = loc.world();
        if placement.of.len() != self.actors() {
            return Err(RunError::Placement(format!(
                "the placement is for {} actors, the graph has {}",
                placement.of.len(),
                self.actors()
            )));
        }
        if let Some(&bad) = placement
            .of
            .iter()
            .find(|&&l| l as usize >= world.locations())
        {
            return Err(RunError::Placement(format!(
                "location {bad} does not exist (the world has {})",
                world.locations()
            )));
        }
        let d = self.digest(&placement.of);
        let (lo, hi) = loc
            .all_reduce((d, d), |a, b| (a.0.min(b.0), a.1.max(b.1)))
            .await;
        if lo != hi {
            return Err(RunError::Mismatch);
        }

        let me = loc.id();
        let per_rank = world.locations_per_rank();
        let here: Vec<ActorId> = (0..self.actors())
            .map(|a| ActorId(a as u32))
            .filter(|a| placement.location(*a) == me)
            .collect();
        let (layout, sizes) = onesided::layout(self, placement, per_rank, world.locations());
        let windows = onesided::open(
            loc,
            layout.iter().any(Option::is_some),
            sizes[me.index()],
            d,
        )
        .await?;
        let activity = Arc::new(Activity::new(here.len()));
        let mut index = vec![usize::MAX; self.actors()];
        let mut locals = Vec::with_capacity(here.len());
        let mut slots: Vec<Vec<Slot>> = Vec::with_capacity(here.len());
        for (k, &a) in here.iter().enumerate() {
            index[a.index()] = k;
            locals.push(Arc::new(Local {
                id: a,
                cell: Arc::new(Cell::new(Arc::clone(&activity))),
                done: AtomicBool::new(false),
                abandon: AtomicBool::new(false),
                waits: crate::loom::Mutex::new(String::new()),
            }));
            slots.push(
                self.actors[a.index()]
                    .ports
                    .iter()
                    .map(|p| match p.dir {
                        Dir::In => Slot::In(None),
                        Dir::Out => Slot::Out(None),
                    })
                    .collect(),
            );
        }
        let mut entries: Vec<Entry> = Vec::with_capacity(self.channels());
        for (ch, c) in self.channels.iter().enumerate() {
            let (from_loc, to_loc) = (placement.location(c.from.0), placement.location(c.to.0));
            let maker = &self.actors[c.from.0.index()].ports[c.from.1 as usize].maker;
            let same_rank = from_loc.rank(per_rank) == to_loc.rank(per_rank);
            let (fi, ti) = (index[c.from.0.index()], index[c.to.0.index()]);
            let mut entry = Entry::None;
            if from_loc == me && to_loc == me {
                let (o, i) = maker.local(
                    c.capacity,
                    Arc::clone(&locals[fi].cell),
                    Arc::clone(&locals[ti].cell),
                );
                slots[fi][c.from.1 as usize] = Slot::Out(Some(o));
                slots[ti][c.to.1 as usize] = Slot::In(Some(i));
            } else if from_loc == me {
                let ro = Arc::new(RemoteOut::new(c.capacity, Arc::clone(&locals[fi].cell)));
                let target = match (&windows, layout[ch]) {
                    (Some(w), Some(s)) => Some(Target::new(
                        Arc::clone(w.of(to_loc.local(per_rank))),
                        s,
                        to_loc,
                        per_rank,
                        sizes[to_loc.index()],
                    )),
                    _ => None,
                };
                slots[fi][c.from.1 as usize] = Slot::Out(Some(maker.remote_out(
                    Arc::clone(&ro),
                    to_loc,
                    ch as u32,
                    same_rank,
                    target,
                )));
                entry = Entry::Out(ro);
            } else if to_loc == me {
                let (i, inlet) = maker.remote_in(
                    c.capacity,
                    Arc::clone(&locals[ti].cell),
                    Arc::clone(&activity),
                    from_loc,
                    ch as u32,
                    same_rank,
                );
                slots[ti][c.to.1 as usize] = Slot::In(Some(i));
                let source = match (&windows, layout[ch]) {
                    (Some(w), Some(s)) => {
                        Some(Source::new(Arc::clone(w.of(me.local(per_rank))), s))
                    }
                    _ => None,
                };
                entry = Entry::In(inlet, source);
            }
            entries.push(entry);
        }

        // Pond's rule in the notifier (see `Cell`): gates before any task runs.
        for (local, slots) in locals.iter().zip(&slots) {
            if self.actors[local.id.index()].firing == Firing::AllReady {
                local.cell.set_gate(
                    slots
                        .iter()
                        .filter_map(|s| match s {
                            Slot::In(Some(e)) => Some(e.probe()),
                            Slot::Out(Some(e)) => Some(e.probe()),
                            _ => None,
                        })
                        .collect(),
                );
            }
        }
        let problems = Arc::new(crate::loom::Mutex::new(Problems::default()));
        let mut tasks = Vec::with_capacity(here.len());
        for (local, slots) in locals.iter().zip(slots) {
            let actor = make(local.id);
            let decl = &self.actors[local.id.index()];
            tasks.push(world.runtime().spawn(actor_task(
                Arc::clone(local),
                actor,
                slots,
                decl.name.clone(),
                decl.ports.iter().map(|p| p.name.clone()).collect(),
                decl.firing,
                Arc::clone(loc),
                Arc::clone(&activity),
                Arc::clone(&problems),
            )));
        }

        let slot = &loc.shared().local.slots[loc.local_index()];
        let epochs = slot.epochs();
        route(loc, &activity, &entries, &problems).await;
        let waves = slot.epochs() - epochs;

        // Quiescent: nothing runs or is in flight anywhere. Actors still
        // waiting are abandoned: their tasks describe what they wait on and end.
        for l in &locals {
            if !l.done.load(Ordering::Acquire) {
                l.abandon.store(true, Ordering::Release);
                l.cell.notify_always();
            }
        }
        let mut report = RunReport {
            actors: here.len(),
            acts: 0,
            discarded: activity.discarded.load(Ordering::Relaxed),
            wakeups: 0,
            waves,
            puts: activity.puts.load(Ordering::Relaxed),
            oversize: activity.oversize.load(Ordering::Relaxed),
        };
        for t in tasks {
            let (acts, discarded, wakeups) = t.await;
            report.acts += acts;
            report.wakeups += wakeups;
            report.discarded += discarded;
        }
        let mut mine = std::mem::take(&mut *crate::loom::lock(&problems));
        for l in &locals {
            if !l.done.load(Ordering::Acquire) {
                mine.stalled.push(format!(
                    "actor '{}' on {} waits ({})",
                    self.actors[l.id.index()].name,
                    me,
                    &*crate::loom::lock(&l.waits)
                ));
            }
        }
        let all = loc.all_reduce(mine, Problems::merge).await;
        drop(entries);
        onesided::close(loc, windows, d).await;
        if !all.bad.is_empty() {
            Err(RunError::BadMessage(all.bad))
        } else if !all.panicked.is_empty() {
            Err(RunError::Panicked(all.panicked))
        } else if !all.stalled.is_empty() {
            Err(RunError::Stalled(all.stalled))
        } else {
            Ok(report)
        }
    }
}

/// Whether the firing rule lets `act()` run.
fn may_fire(firing: Firing, slots: &[Slot]) -> bool {
    match firing {
        Firing::OnChange => true,
        Firing::AllReady => slots.iter().all(|s| match s {
            Slot::In(Some(e)) => e.ready(),
            Slot::Out(Some(e)) => e.ready(),
            _ => true,
        }),
    }
}

/// What an actor waits on, for a stall report.
fn describe(ports: &[String], slots: &[Slot]) -> String {
    let mut parts = Vec::new();
    for (name, s) in ports.iter().zip(slots) {
        match s {
            Slot::In(Some(e)) => parts.push(format!("input '{name}' holds {}", e.len())),
            Slot::Out(Some(e)) if !e.ready() => parts.push(format!("output '{name}' is full")),
            Slot::Out(Some(_)) => parts.push(format!("output '{name}' has room")),
            _ => {}
        }
    }
    if parts.is_empty() {
        "no connected ports".into()
    } else {
        parts.join(", ")
    }
}

#[allow(clippy::too_many_arguments)]
async fn actor_task(
    local: Arc<Local>,
    mut actor: Box<dyn Actor>,
    mut slots: Vec<Slot>,
    name: String,
    port_names: Vec<String>,
    firing: Firing,
    loc: Arc<Location>,
    activity: Arc<Activity>,
    problems: Arc<crate::loom::Mutex<Problems>>,
) -> (u64, u64, u64) {
    let mut acts = 0u64;
    let mut discarded = 0u64;
    // A trace names slices with `'static` strings: the actor's name is kept
    // for the rest of the process (once per actor, only while tracing).
    let trace_name: &'static str = if crate::diag::trace::on() {
        Box::leak(name.clone().into_boxed_str())
    } else {
        ""
    };
    let mut wakeups = 0u64;
    let mut started = false;
    loop {
        if started {
            wakeups += 1;
        }
        local.cell.signal.take();
        if local.abandon.load(Ordering::Acquire) {
            // The run ended with this actor waiting: say on what (read only
            // now, not at every park: a stall report is rare, parks are not).
            *crate::loom::lock(&local.waits) = describe(&port_names, &slots);
            break;
        }
        let mut finished = false;
        // `start` once, then `act()` as the firing rule allows: OnChange once
        // per change, AllReady again while it holds.
        let mut first = !started;
        started = true;
        while first || may_fire(firing, &slots) {
            let mut ports = Ports {
                me: local.id,
                name: &name,
                slots: &mut slots,
                loc: &loc,
                sent_away: false,
            };
            let traced = crate::diag::trace::begin();
            let r = catch_unwind(AssertUnwindSafe(|| {
                if first {
                    actor.start(&mut ports)
                } else {
                    actor.act(&mut ports)
                }
            }));
            crate::diag::trace::end(traced, crate::diag::trace::What::Act(trace_name), 0);
            let away = ports.sent_away;
            if !first {
                acts += 1;
            }
            if away {
                loc.flush();
            }
            match r {
                Ok(Status::Continue) => {}
                Ok(Status::Done) => finished = true,
                Err(p) => {
                    let msg = crate::runtime::payload_text(&p);
                    crate::loom::lock(&problems)
                        .panicked
                        .push(format!("actor '{name}' on {} panicked: {msg}", loc.id()));
                    finished = true;
                }
            }
            if finished || (firing == Firing::OnChange && !first) {
                break;
            }
            first = false;
        }
        if finished {
            for s in &mut slots {
                match s {
                    Slot::In(Some(e)) => discarded += e.close(&loc),
                    Slot::Out(Some(e)) => e.close(&loc),
                    _ => {}
                }
            }
            loc.flush();
            local.done.store(true, Ordering::Release);
            activity.parked();
            return (acts, discarded, wakeups);
        }
        let cell = &local.cell;
        poll_fn(|cx| match cell.signal.poll_wait(cx) {
            Wait::Notified => Poll::Ready(()),
            Wait::Parked => {
                activity.parked();
                Poll::Pending
            }
            Wait::StillParked => Poll::Pending,
        })
        .await;
    }
    // Abandoned: the run ended with this actor waiting (reported as a stall).
    (acts, discarded, wakeups)
}

/// The router (see the module docs): returns when the world is quiescent.
async fn route(
    loc: &Location,
    activity: &Activity,
    entries: &[Entry],
    problems: &crate::loom::Mutex<Problems>,
) {
    let mut held: Vec<Delivery<'_>> = Vec::new();
    let mut scratch = Vec::new();
    loop {
        // Actors run: hand messages on, keep the deliveries until idle.
        loop {
            let next = poll_fn(|cx| loop {
                if let Poll::Ready(d) = pin!(loc.recv()).poll(cx) {
                    return Poll::Ready(Some(d));
                }
                if activity.is_idle() {
                    return Poll::Ready(None);
                }
                match activity.router.poll_wait(cx) {
                    Wait::Notified => continue,
                    Wait::Parked | Wait::StillParked => return Poll::Pending,
                }
            })
            .await;
            match next {
                Some(mut d) => {
                    handle(loc, &mut d, entries, problems, &mut scratch);
                    held.push(d);
                }
                None => break,
            }
        }
        // Idle: what was received has had all its effects.
        held.clear();
        match loc.recv_until_quiet().await {
            Some(mut d) => {
                handle(loc, &mut d, entries, problems, &mut scratch);
                held.push(d);
            }
            None => return,
        }
    }
}

fn handle(
    loc: &Location,
    d: &mut Delivery<'_>,
    entries: &[Entry],
    problems: &crate::loom::Mutex<Problems>,
    scratch: &mut Vec<u8>,
) {
    let from = d.from();
    let r = if let Some(c) = d.take::<Carry>() {
        dispatch(
            loc,
            scratch,
            entries,
            c.kind,
            c.channel,
            c.credits,
            Payload::Value(c.value),
        )
    } else if let Some(b) = d.bytes() {
        if b.len() < 5 {
            Err(format!("a graph message of {} bytes is too short", b.len()))
        } else {
            let kind = b[0];
            let ch = u32::from_le_bytes([b[1], b[2], b[3], b[4]]);
            let rest = &b[5..];
            let credits = if kind == CREDIT && rest.len() >= 4 {
                u32::from_le_bytes([rest[0], rest[1], rest[2], rest[3]])
            } else {
                0
            };
            dispatch(
                loc,
                scratch,
                entries,
                kind,
                ch,
                credits,
                Payload::Bytes(rest),
            )
        }
    } else {
        Err("a message that is not the graph's".to_string())
    };
    if let Err(why) = r {
        crate::loom::lock(problems)
            .bad
            .push(format!("from {from}: {why}"));
    }
}

enum Payload<'a> {
    Value(Option<Box<dyn std::any::Any + Send>>),
    Bytes(&'a [u8]),
}

fn dispatch(
    loc: &Location,
    scratch: &mut Vec<u8>,
    entries: &[Entry],
    kind: u8,
    ch: u32,
    credits: u32,
    payload: Payload<'_>,
) -> Result<(), String> {
    let entry = entries
        .get(ch as usize)
        .ok_or_else(|| format!("channel {ch} does not exist"))?;
    match (kind, entry) {
        (PUT, Entry::In(inlet, Some(source))) => match payload {
            Payload::Bytes(b) if b.len() == 8 => {
                let k = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
                let len = u32::from_le_bytes([b[4], b[5], b[6], b[7]]);
                source.take(loc, k, len, scratch)?;
                inlet.bytes(scratch)
            }
            _ => Err(format!("a malformed one-sided signal for channel {ch}")),
        },
        (DATA, Entry::In(inlet, _)) => match payload {
            Payload::Value(Some(v)) => inlet.value(v),
            Payload::Bytes(b) => inlet.bytes(b),
            Payload::Value(None) => Err(format!("a token for channel {ch} without a value")),
        },
        (CLOSE, Entry::In(inlet, _)) => {
            inlet.close();
            Ok(())
        }
        (CREDIT, Entry::Out(out)) => {
            out.credit(credits as usize);
            Ok(())
        }
        (GONE, Entry::Out(out)) => {
            out.gone();
            Ok(())
        }
        _ => Err(format!(
            "message kind {kind} for channel {ch}, which does not take it here"
        )),
    }
}
