//! Back-to-back slices that share their clock reads: where one slice is
//! followed at once by the next on the same thread, one reading of the clock
//! ends the first and starts the second.
//!
//! Two places run slices back to back: a worker polling one task after another
//! (its run-next slot and its own queue), and an actor handling one message
//! after another within a poll. Each such slice reads the clock once, when it
//! starts; the previous slice ends there, so its span also covers the step that
//! found the next piece of work (popping a queue: a few nanoseconds). Wherever
//! the step may take longer (a worker looking elsewhere for work or parking, an
//! actor spinning on a message mid-push, leaving its loop), the open slice is
//! closed with a reading of its own first.
//!
//! Why the order stays right: a slice still starts with a reading taken after
//! the work was found (after the pop), so a flow whose message was sent before
//! the pop ends no earlier than it started; a flow that starts inside a slice
//! is read before that slice's end, which is read later still. Slices on one
//! thread never overlap: an open slice ends at the reading that starts the
//! next one, and a nested poll (a worker that runs tasks while its current task
//! waits) is not chained — only a task poll at depth 0 stays open. A
//! `block_on` poll counts as a poll (it ends a task poll left open before it
//! starts, and tasks a worker polls inside it are nested) but never stays
//! open, since its thread may block next.
//!
//! The cost: a task poll left open when recording stops (a worker that had
//! not yet looked for more work) is not in the trace.
//!
//! # Turns share the reading of the turns before them
//!
//! An actor that finds several messages queued runs one turn after another
//! in one poll. A turn must start no earlier than its message's flow, which
//! the sender read before it queued the message. So a turn reads the clock
//! after its pop, and before that reading notes the message queued last in
//! the mailbox (the queue's tail, [`Chain::turn`]'s `mark`): every message up
//! to that one was queued, so its flow read, before the reading. The turns on
//! those messages, as long as they follow at once, of the same actor and
//! message type, take that reading instead of one each: they are one slice
//! (`"args":{"messages":K}` in the file), and each records only where its
//! flow ends (inside that slice, at its start). The first turn past the mark,
//! one of another type, one from the actor's priority lane or a bounded
//! mailbox (which have no such mark), and any turn after the chain closed,
//! read the clock anew. A stream of tells thus costs the receiver one reading
//! per batch the actor finds queued (at most a poll's 64 turns) instead of one
//! per message; what is lost is where each turn of a batch starts and ends
//! within the batch's slice.
//!
//! # Flows share the readings of their slice
//!
//! A message sent from inside a slice (an actor `tell` or `ask`) starts a flow,
//! whose time must lie in the sending slice and before the receiver's turn
//! reads the clock. Any reading taken on the sending thread since the slice
//! started and before the message was queued satisfies both, so flows take
//! the thread's latest reading instead of reading the clock each: the slice's
//! start, or the reading of an earlier flow of the same slice. At most
//! [`FLOWS_PER_READING`] flows share one reading (the next reads anew), so a
//! flow's arrow starts at most that many sends before its own send, always
//! inside the slice that sent it. Every slice start and end on the thread
//! renews or forgets the shared reading, so a flow never takes a reading of an
//! earlier slice; outside every poll (a plain thread) each flow reads.

use std::cell::Cell;

use super::event::{Event, What};
use super::{buffer, now, on};

/// A chain of slices (an actor's turns in one poll): a clock reading starts
/// a slice and ends the previous one; turns may share a slice and its reading
/// (module docs).
pub(crate) struct Chain {
    /// The slice whose end waits for the next reading: start, what, id.
    open: Option<(u64, What, u64)>,
    /// Turns the open slice holds (0: no slice is open).
    turns: u32,
    /// The flow id of the last message known queued before the open turn
    /// slice's reading (0: none): turns up to it may share that reading.
    until: usize,
}

impl Chain {
    /// An empty chain.
    #[inline(always)]
    pub(crate) const fn new() -> Chain {
        Chain {
            open: None,
            turns: 0,
            until: 0,
        }
    }

    /// An actor's turn on the message with flow `id` (of type `message`)
    /// starts, the message popped from its mailbox (`mailbox`; `mark` gives the
    /// flow id of the message queued last there, 0 if unknown) or from
    /// elsewhere. Returns the turn's start. A turn on a
    /// message queued before the open turn slice's reading, of the same actor
    /// and message type, joins that slice: it takes its reading and records
    /// only where its flow ends (module docs); any other reads the clock
    /// (after `mark`), which ends the open slice and starts its own. Called
    /// while recording ([`on`]); else [`off`](Self::off).
    #[inline(always)]
    pub(crate) fn turn(
        &mut self,
        actor: fn() -> &'static str,
        message: fn() -> &'static str,
        id: usize,
        mailbox: bool,
        mark: impl FnOnce() -> usize,
    ) -> u64 {
        if mailbox && self.until != 0 {
            if let Some((
                ts,
                What::Turn {
                    actor: a,
                    message: m,
                },
                _,
            )) = self.open
            {
                if a as usize == actor as usize && m as usize == message as usize {
                    if id == self.until {
                        self.until = 0;
                    }
                    self.turns += 1;
                    flow_in(ts, id as u64);
                    return ts;
                }
            }
        }
        // The mark before the reading: every message up to it was queued
        // before the reading, so its flow started earlier.
        let until = if mailbox { mark() } else { 0 };
        let t = now();
        slice_started(t);
        self.end_open(t);
        self.open = Some((t, What::Turn { actor, message }, id as u64));
        self.turns = 1;
        self.until = if until == id { 0 } else { until };
        t
    }

    /// Ends the open slice at `t` (recording it).
    #[inline(always)]
    fn end_open(&mut self, t: u64) {
        let turns = std::mem::take(&mut self.turns);
        self.until = 0;
        if let Some((ts, what, id)) = self.open.take() {
            let what = if turns > 1 {
                Event::turns_pack(what.pack(), turns)
            } else {
                what.pack()
            };
            end_packed(ts, t, id, what);
        }
    }

    /// A turn starts while nothing is recorded: 0, and the open slice (of a
    /// trace that stopped) is dropped unrecorded.
    #[inline(always)]
    pub(crate) fn off(&mut self) -> u64 {
        self.forget();
        0
    }

    /// Drops the open slice unrecorded (recording stopped).
    #[inline(always)]
    fn forget(&mut self) {
        self.open = None;
        self.turns = 0;
        self.until = 0;
    }

    /// Ends the open slice now (before anything that is not the next slice).
    #[inline(always)]
    pub(crate) fn close(&mut self) {
        if self.open.is_some() {
            slice_ended();
            self.end_open(now());
        }
    }
}

impl Drop for Chain {
    fn drop(&mut self) {
        self.close();
    }
}

fn end_at((ts, what, id): (u64, What, u64), t: u64) {
    end_packed(ts, t, id, what.pack());
}

/// Flow `id` ends inside the current slice, which started at `ts`.
#[cold]
#[inline(never)]
fn flow_in(ts: u64, id: u64) {
    buffer::record(ts, 0, id, What::FlowIn.pack());
}

#[cold]
#[inline(never)]
fn end_packed(ts: u64, t: u64, id: u64, what: (u64, usize, usize)) {
    buffer::record(ts, t.saturating_sub(ts), id, what);
}

/// Flows at most that share one clock reading (module docs).
pub(crate) const FLOWS_PER_READING: u32 = 8;

/// The reading the flows of the current slice share (module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct FlowReading {
    ts: u64,
    /// Flows that may still take `ts` (0: the next flow reads the clock).
    left: u32,
}

impl FlowReading {
    const NONE: FlowReading = FlowReading { ts: 0, left: 0 };

    /// A slice started at `ts`: its flows may share that reading.
    fn started(ts: u64) -> FlowReading {
        FlowReading {
            ts,
            left: FLOWS_PER_READING,
        }
    }

    /// A flow's time: the shared reading if a flow may still take it, else a
    /// new one from `read`, shared by the next flows when `in_poll` (outside
    /// every poll nothing marks where a slice starts or ends, so nothing is
    /// shared).
    fn take(&mut self, in_poll: bool, read: impl FnOnce() -> u64) -> u64 {
        if in_poll && self.left > 0 {
            self.left -= 1;
            return self.ts;
        }
        let t = read();
        *self = if in_poll {
            FlowReading {
                ts: t,
                left: FLOWS_PER_READING - 1,
            }
        } else {
            FlowReading::NONE
        };
        t
    }
}

/// This thread's task polls. A cell per field: each recording site reads and
/// writes only the fields it changes (copying the whole record in and out at
/// every poll's start and end cost about 70 instructions a poll).
struct Polls {
    /// Polls running (a worker polls tasks inside a poll while it waits).
    depth: Cell<u32>,
    /// An outermost poll that has ended, with its end waiting for the next
    /// reading: start, the task (its type or name), the trace generation it
    /// belongs to.
    open: Cell<Option<(u64, What, u64)>>,
    /// The reading flows of the current slice share.
    flow: Cell<FlowReading>,
}

std::thread_local! {
    static POLLS: Polls = const {
        Polls {
            depth: Cell::new(0),
            open: Cell::new(None),
            flow: Cell::new(FlowReading::NONE),
        }
    };
}

/// A slice other than a task poll started at `t` on this thread (an actor
/// turn, a run of RMI requests, a graph `act()`): its flows share `t`.
#[inline]
pub(crate) fn slice_started(t: u64) {
    let _ = POLLS.try_with(|p| p.flow.set(FlowReading::started(t)));
}

/// A slice other than a task poll ends on this thread: later flows do not
/// take its readings.
#[inline]
pub(crate) fn slice_ended() {
    let _ = POLLS.try_with(|p| p.flow.set(FlowReading::NONE));
}

/// A message leaves from inside the current slice: its flow's start time (0
/// if not recording), shared with other flows of the slice (module docs).
#[inline(always)]
pub(crate) fn flow_begin() -> u64 {
    if on() {
        flow_begin_on()
    } else {
        0
    }
}

#[inline(never)]
fn flow_begin_on() -> u64 {
    POLLS
        .try_with(|p| {
            let mut flow = p.flow.get();
            let t = flow.take(p.depth.get() > 0, now);
            p.flow.set(flow);
            t
        })
        .unwrap_or_else(|_| now())
}

/// A task poll starts on this thread: its start time (0 if not recording),
/// which also ends the previous poll if it is still open.
#[inline(always)]
pub(crate) fn poll_begin() -> u64 {
    if on() {
        poll_begin_on()
    } else {
        0
    }
}

#[inline(never)]
fn poll_begin_on() -> u64 {
    let t = now();
    let _ = POLLS.try_with(|p| {
        if let Some(open) = p.open.take() {
            end_poll(open, t);
        }
        p.depth.set(p.depth.get() + 1);
        p.flow.set(FlowReading::started(t));
    });
    t
}

/// The poll of a task begun at `ts` (by [`poll_begin`]) returned: an
/// outermost poll stays open until the next reading on this thread (the next
/// poll, or [`poll_gap`]); a nested one ends now. `name` is the name given to
/// the task at spawn if `named`, else the future's type.
#[inline(always)]
pub(crate) fn poll_end(ts: u64, name: &'static str, named: bool) {
    if ts != 0 {
        let what = if named {
            What::NamedTask(name)
        } else {
            What::Task(name)
        };
        poll_end_on(ts, what);
    }
}

/// The poll of a `block_on` future of type `name` begun at `ts` (by
/// [`poll_begin`]: it ends a task poll left open, and polls run inside it are
/// nested) returned: it ends now (its thread may block next).
#[inline(always)]
pub(crate) fn block_on_end(ts: u64, name: &'static str) {
    if ts != 0 {
        poll_end_on(ts, What::BlockOn(name));
    }
}

#[inline(never)]
fn poll_end_on(ts: u64, what: What) {
    let task = !matches!(what, What::BlockOn(_));
    let kept = POLLS.try_with(|p| {
        let depth = p.depth.get().saturating_sub(1);
        p.depth.set(depth);
        p.flow.set(FlowReading::NONE);
        if let Some(open) = p.open.take() {
            // A nested poll left open: it ends before its parent does.
            end_poll(open, now());
        }
        let kept = task && depth == 0;
        if kept {
            p.open.set(Some((ts, what, buffer::generation())));
        }
        kept
    });
    if !matches!(kept, Ok(true)) {
        end_at((ts, what, 0), now());
    }
}

/// The worker looks beyond its own queues or goes idle: the open poll ends
/// now.
#[inline]
pub(crate) fn poll_gap() {
    if on() {
        poll_gap_on();
    }
}

#[cold]
#[inline(never)]
fn poll_gap_on() {
    let _ = POLLS.try_with(|p| {
        p.flow.set(FlowReading::NONE);
        if let Some(open) = p.open.take() {
            end_poll(open, now());
        }
    });
}

/// Records an open poll that ends at `t`, unless it belongs to an earlier
/// trace.
fn end_poll((ts, what, generation): (u64, What, u64), t: u64) {
    if generation == buffer::generation() {
        end_at((ts, what, 0), t);
    }
}

#[cfg(test)]
mod tests {
    use super::{FlowReading, FLOWS_PER_READING};

    /// Reads of a fake clock that ticks by one.
    fn clock() -> impl FnMut() -> u64 {
        let mut t = 1000;
        move || {
            t += 1;
            t
        }
    }

    #[test]
    fn flows_share_their_slices_start_then_read_anew_every_few() {
        let mut read = clock();
        let mut flow = FlowReading::started(500);
        let times: Vec<u64> = (0..2 * FLOWS_PER_READING + 1)
            .map(|_| flow.take(true, &mut read))
            .collect();
        let n = FLOWS_PER_READING as usize;
        // The slice's start, then one reading per `FLOWS_PER_READING` flows.
        assert!(times[..n].iter().all(|&t| t == 500), "{times:?}");
        assert!(times[n..2 * n].iter().all(|&t| t == 1001), "{times:?}");
        assert_eq!(times[2 * n], 1002);
    }

    #[test]
    fn outside_a_poll_every_flow_reads_the_clock() {
        let mut read = clock();
        let mut flow = FlowReading::started(500);
        assert_eq!(flow.take(false, &mut read), 1001);
        assert_eq!(flow.take(false, &mut read), 1002);
        assert_eq!(flow, FlowReading::NONE);
    }

    #[test]
    fn a_slice_boundary_forgets_the_shared_reading() {
        let mut read = clock();
        let mut flow = FlowReading::started(500);
        assert_eq!(flow.take(true, &mut read), 500);
        flow = FlowReading::NONE; // the slice ended
        assert_eq!(flow.take(true, &mut read), 1001);
        flow = FlowReading::started(2000); // the next one started
        assert_eq!(flow.take(true, &mut read), 2000);
    }
}
