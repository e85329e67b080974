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
//!
//! The files: this one sets a run up (checks the placement, wires every
//! channel's ends, spawns the tasks) and ends it (the report, or what went
//! wrong on any location); `task.rs` is an actor's task, `route.rs` the router.

mod route;
#[cfg(feature = "fuzzing")]
pub(crate) use route::parse as parse_message;
mod task;

use std::sync::Arc;

use super::actor::{PortActor, Slot};
use super::build::{ActorGraph, Dir, Firing};
use super::channel::{Activity, Cell, Inlet, RemoteOut};
use super::onesided::{self, Source, Target};
use super::partition::Placement;
use super::port::ActorId;
use crate::loom::{AtomicBool, Ordering};
use crate::world::{Location, LocationId};

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
pub(super) struct Local {
    pub(super) id: ActorId,
    pub(super) cell: Arc<Cell>,
    /// Set by the actor's task when it terminates.
    pub(super) done: AtomicBool,
    /// Set by the router when the run ends with the actor still waiting: the
    /// task then exits without calling `act()`.
    pub(super) abandon: AtomicBool,
    /// A description of what the actor waits on, kept for the stall report.
    pub(super) waits: crate::loom::Mutex<String>,
}

/// What the router does with a channel's messages.
pub(super) enum Entry {
    None,
    /// A channel from another location; its slots if it is one-sided.
    In(Box<dyn Inlet>, Option<Source>),
    Out(Arc<RemoteOut>),
}

#[derive(Default, Clone, serde::Serialize, serde::Deserialize)]
pub(super) struct Problems {
    pub(super) stalled: Vec<String>,
    pub(super) panicked: Vec<String>,
    pub(super) bad: Vec<String>,
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
    ///     let total = Arc::new(std::sync::Mutex::new(0u64));
    ///     let t = Arc::clone(&total);
    ///     let loc = Arc::new(loc);
    ///     graph
    ///         .run(&loc, &placement, move |id| -> Box<dyn tutti::graph::PortActor> {
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
    ///                         *t.lock().unwrap() += v;
    ///                     }
    ///                     if ports.is_ended(inp) { Status::Done } else { Status::Continue }
    ///                 })
    ///             }
    ///         })
    ///         .await
    ///         .unwrap();
    ///     let sum = *total.lock().unwrap();
    ///     sum
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
        F: FnMut(ActorId) -> Box<dyn PortActor>,
    {
        let world = loc.world();
        let digest = self.check(loc, placement).await?;
        let me = loc.id();
        let per_rank = world.locations_per_rank();
        let (layout, sizes) = onesided::layout(self, placement, per_rank, world.locations());
        let windows = onesided::open(
            loc,
            layout.iter().any(Option::is_some),
            sizes[me.index()],
            digest,
        )
        .await?;
        let here: Vec<ActorId> = (0..self.actors())
            .map(|a| ActorId(a as u32))
            .filter(|a| placement.location(*a) == me)
            .collect();
        let activity = Arc::new(Activity::new(here.len()));
        let (locals, slots, entries) = self.wire(
            me,
            per_rank,
            placement,
            &here,
            &activity,
            &windows,
            (&layout, &sizes),
        );
        self.set_gates(&locals, &slots);
        let problems = Arc::new(crate::loom::Mutex::new(Problems::default()));
        let mut tasks = Vec::with_capacity(here.len());
        for (local, slots) in locals.iter().zip(slots) {
            let actor = make(local.id);
            let decl = &self.actors[local.id.index()];
            tasks.push(world.runtime().spawn(task::actor_task(
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
        route::route(loc, &activity, &entries, &problems).await;
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
        let mine = self.problems_here(me, &locals, &problems);
        let all = loc.all_reduce(mine, Problems::merge).await;
        drop(entries);
        onesided::close(loc, windows, digest).await;
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

    /// Checks that `placement` fits this graph and world, and that every
    /// location runs the same graph and placement; returns their digest.
    async fn check(&self, loc: &Location, placement: &Placement) -> Result<u64, RunError> {
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
        Ok(d)
    }

    /// Makes the state of the actors placed `here` on location `me`, and
    /// every channel's ends that touch `me`: both ends in the actors' slots
    /// for a channel within `me`; for one between locations, the local end
    /// in the slot and the router's entry (an inlet for an incoming channel,
    /// the producer's credits for an outgoing one), one-sided when the
    /// channel has a slot in the consumer's window (`layout`, `sizes`).
    #[allow(clippy::too_many_arguments)]
    fn wire(
        &self,
        me: LocationId,
        per_rank: usize,
        placement: &Placement,
        here: &[ActorId],
        activity: &Arc<Activity>,
        windows: &Option<onesided::Windows>,
        (layout, sizes): (&[Option<onesided::Slots>], &[usize]),
    ) -> (Vec<Arc<Local>>, Vec<Vec<Slot>>, Vec<Entry>) {
        let mut index = vec![usize::MAX; self.actors()];
        let mut locals = Vec::with_capacity(here.len());
        let mut slots: Vec<Vec<Slot>> = Vec::with_capacity(here.len());
        for (k, &a) in here.iter().enumerate() {
            index[a.index()] = k;
            locals.push(Arc::new(Local {
                id: a,
                cell: Arc::new(Cell::new(Arc::clone(activity))),
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
                let target = match (windows, layout[ch]) {
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
                    Arc::clone(activity),
                    from_loc,
                    ch as u32,
                    same_rank,
                );
                slots[ti][c.to.1 as usize] = Slot::In(Some(i));
                let source = match (windows, layout[ch]) {
                    (Some(w), Some(s)) => {
                        Some(Source::new(Arc::clone(w.of(me.local(per_rank))), s))
                    }
                    _ => None,
                };
                entry = Entry::In(inlet, source);
            }
            entries.push(entry);
        }
        (locals, slots, entries)
    }

    /// Pond's rule in the notifier (see `Cell`): the gates of the actors that
    /// fire when all their ports are ready, set before any task runs.
    fn set_gates(&self, locals: &[Arc<Local>], slots: &[Vec<Slot>]) {
        for (local, slots) in locals.iter().zip(slots) {
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
    }

    /// What went wrong on this location: the problems the tasks and the
    /// router recorded, and every actor here still waiting (a stall).
    fn problems_here(
        &self,
        me: LocationId,
        locals: &[Arc<Local>],
        problems: &crate::loom::Mutex<Problems>,
    ) -> Problems {
        let mut mine = std::mem::take(&mut *crate::loom::lock(problems));
        for l in locals {
            if !l.done.load(Ordering::Acquire) {
                mine.stalled.push(format!(
                    "actor '{}' on {} waits ({})",
                    self.actors[l.id.index()].name,
                    me,
                    &*crate::loom::lock(&l.waits)
                ));
            }
        }
        mine
    }
}
