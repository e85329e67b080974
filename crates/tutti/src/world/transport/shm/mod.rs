//! The shared-memory transport: the processes of one host form a named
//! *system* (Gingras 2018). The first process to start creates the segment
//! `/dev/shm/tutti-<name>` (exclusive create, mode 0600); the others join it.
//! Each member owns a mailbox, a fixed-slot ring in its own segment
//! (`tutti-<name>+<rank>`) into which every other member writes (`ring.rs`:
//! many producers, one consumer, a futex to sleep on). One receiving thread per
//! process drains the mailbox, reassembles frames that span several slots and
//! hands them to the world, so aggregation, quiescence and collectives are the
//! world's own, as over MPI.
//!
//! Start-up: `TUTTI_SYSTEM=<name>` (or [`WorldBuilder::system`]) selects this
//! transport; `TUTTI_RANKS` (or [`WorldBuilder::processes`]) is the number of
//! processes; `TUTTI_RANK` picks a rank (else the first free one). `tutti
//! launch -n P -- <command>` sets all three; starting the processes by hand
//! with the first two works too. Start-up waits until every rank has joined,
//! then checks that all have the same locations per rank and message registry.
//!
//! Faults: every process looks at the others every [`CHECK_EVERY`] (pid alive
//! and the same start time, so a reused pid does not count; a zombie counts as
//! dead) and writes a heartbeat. An idle process (a worker blocked on its
//! mailbox's futex, nothing received for a while) waits instead on a pidfd
//! per member, which tells a death at once, and looks at the system once a
//! second for what no descriptor tells (`engine/doze.rs`). A member killed with `kill -9` is marked dead,
//! its mailbox segment is removed, messages to it are refused (sends fail with
//! [`SendError::RankDied`](crate::world::SendError::RankDied)) and the others go
//! on. The receiving thread then tells the world (`Sink::rank_died`): questions
//! pending on the dead rank fail (an actor `ask` with
//! [`RemoteError::RankDied`](crate::remote::RemoteError::RankDied), a
//! `sync_rmi` panics naming it), and so does every collective — barriers,
//! reductions, the quiescence waves of a fence — waiting now or started later,
//! since each includes the dead rank (its locations panic naming the rank).
//! Whatever else the survivors wait on (a `Location::recv` for a message
//! only the dead rank would have sent) is found by the world's stall check,
//! which runs over the live ranks (`world/stall.rs`): once every location of
//! every live rank waits, each survivor ends with a report naming the dead
//! rank.
//! A dead member's rank can be taken again: a process started into the
//! system (with `TUTTI_RANK` of the dead rank, or none when no rank is free)
//! claims it as a new *incarnation* ([`World::incarnation`]; `system.rs`)
//! with a mailbox of its own, so nothing sent to the dead process reaches the
//! new one. Each survivor takes it in only after reading every fragment the
//! dead process wrote to it (its unfinished frame is dropped), and the new
//! process sends nothing before every survivor has: a frame a survivor
//! received is the dead process's or the new one's, never a mix. What failed
//! when the rank died stays failed (collectives include every rank); plain
//! messages (`Location::send`, `recv`) between the survivors and the new
//! process go through.
//! A member killed between claiming a slot of a mailbox and committing it
//! would stop that mailbox's reader at the slot: each slot's claim names its
//! producer, and once that producer is known dead the reader reclaims the
//! slot (`Ring::reclaim`), drops the dead rank's unfinished frame, says so,
//! and reads on — everything committed, by anyone, is delivered. A segment left by a crashed run is recognised and removed (`system.rs`),
//! and a live system of another layout version is refused. A ring whose
//! contents make no sense, or a frame that does not parse, takes the system
//! down with a message naming the cause (every process exits), never a crash
//! of the reader.
//!
//! [`WorldBuilder::system`]: crate::world::WorldBuilder::system
//! [`World::incarnation`]: crate::world::World::incarnation
//! [`WorldBuilder::processes`]: crate::world::WorldBuilder::processes

#[cfg_attr(loom, allow(dead_code))]
pub(crate) mod backstop;
mod loan;
mod member;
pub(crate) mod ring;
#[cfg(not(loom))]
mod sys;
#[cfg(not(loom))]
pub(crate) mod system;

#[cfg(not(loom))]
mod engine;
#[cfg(not(loom))]
mod launch;

#[cfg(not(loom))]
pub(crate) use engine::*;
#[cfg(not(loom))]
pub use launch::launch;

#[cfg(all(test, loom))]
mod loom_tests;
#[cfg(all(test, not(loom)))]
mod tests;
