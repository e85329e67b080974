//! The actor loop: the one async task that runs an actor.
//!
//! # Lifecycle state machine
//!
//! ```text
//!            first poll                     stop request / ctx.stop / last address
//!  New ──────────────────▶ Live ───────────────────────────────────────────────▶ Done
//!   │   (publish waker,     │  ▲  turn: system events, then up to BATCH         ▲
//!   │    run `started`)     │  │  messages (priority lane first), then          │
//!   │                       ▼  │  idle (Pending) or yield (re-queued)           │
//!   │                   Handling ── handler returns Pending: AWAITING, Pending  │
//!   │                       │      (messages queue; a stop request cancels it)  │
//!   │                       └── handler panics ──▶ Done (Panicked)              │
//!   └── task dropped before its first poll (runtime shutdown) ──▶ Done (no hooks)
//! ```
//!
//! *Done* runs the stop sequence once, from `finish`: close the mailbox and drop what
//! is queued (askers get `Stopped`); mark the actor finished and take its priority
//! lane, watchers, links, names and stop waiters; run `stopped` and drop the state (if
//! `started` ran); remove its names; send `Down` to watchers and exit signals to links
//! (if abnormal); leave the system; wake whoever waits for the stop. If the runtime
//! drops the task before it finished (runtime shutdown), `Drop` runs the same sequence
//! with [`StopReason::Shutdown`].
//!
//! # One message at a time
//!
//! The loop moves a handler's future into the turn's spare block and polls it there at
//! once (`Envelope::run`); most handlers complete on that poll
//! and leave the block for the next message. One that returns `Pending` becomes the
//! loop's current handler, polled in place whenever the task is woken. While a handler
//! is suspended, the loop touches neither the actor's state nor
//! its context — only the state word, the aux lock (for an interrupting stop request)
//! and the handler's future — so the handler's `&mut` borrows stay exclusive. New
//! messages queue behind it; priority-lane messages and system events wait too, except
//! a stop request, which drops the suspended handler (its asker gets `Stopped`) and
//! stops the actor.
//!
//! # Fairness
//!
//! A turn handles at most [`BATCH`] messages, then re-queues the task at the back of
//! its worker's FIFO (like `yield_now`), so a flooded actor cannot starve other tasks.

use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context as TaskContext, Poll};

use super::cell::{Cell, Next};
use super::lifecycle::panic_text;
use super::monitor::Down;
use super::{registry, system, Actor, StopReason};
use crate::loom::lock;
use crate::msg::{Batch, NoReply, Running};

/// Messages handled per turn before the actor yields its worker.
pub(crate) const BATCH: u32 = 64;
/// Spins on a half-done push before yielding instead.
const BUSY_SPINS: u32 = 32;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Phase {
    New,
    Live,
    Done,
}

/// The loop's own state, kept in the cell (consumer only) so that the task's
/// future is a single pointer: what an idle actor costs is the cell and a
/// minimal task.
pub(crate) struct RunState {
    /// The handler being run, if any.
    current: Option<Running>,
    /// The actor's slot in its system's member table.
    pub(crate) slot: u32,
    phase: Phase,
    /// `started` ran (so `stopped` must).
    started: bool,
    /// `AWAITING` is set in the state word.
    awaiting: bool,
}

impl RunState {
    pub(crate) fn new() -> RunState {
        RunState {
            current: None,
            slot: u32::MAX,
            phase: Phase::New,
            started: false,
            awaiting: false,
        }
    }
}

/// The actor's task.
pub(crate) struct ActorRun<A: Actor> {
    cell: Arc<Cell<A>>,
}

impl<A: Actor> ActorRun<A> {
    pub(crate) fn new(cell: Arc<Cell<A>>) -> Self {
        ActorRun { cell }
    }

    /// The loop state.
    #[allow(clippy::mut_from_ref)]
    fn st(&self) -> &mut RunState {
        // SAFETY: only this task touches the run state, one poll (or its drop) at a
        // time, and no borrow of it outlives the method using it.
        unsafe { &mut *self.cell.run_ptr() }
    }

    /// First poll: publish the waker, run `started` (even if a stop is already
    /// pending: the hooks always come in pairs; the stop is seen right after).
    fn begin(&mut self, cx: &mut TaskContext<'_>) -> Option<Poll<()>> {
        self.cell.publish_waker(cx.waker());
        let st = self.st();
        st.phase = Phase::Live;
        let ctx = self.cell.ctx_ptr();
        st.started = true;
        let actor = self.cell.actor_ptr();
        // SAFETY: consumer, no handler exists; the state is present until `finish`.
        let r = catch_unwind(AssertUnwindSafe(|| unsafe { (*actor).started(&mut *ctx) }));
        if let Err(p) = r {
            return Some(self.finish(StopReason::Panicked(panic_text(&*p))));
        }
        None
    }

    /// One turn; see the module documentation.
    fn turn(&mut self, cx: &mut TaskContext<'_>) -> Poll<()> {
        let cell = Arc::clone(&self.cell);
        let ctx = cell.ctx_ptr();
        let actor = cell.actor_ptr();
        let mut budget = BATCH;
        // The block of a handler that completed, for the next one, and the envelope
        // frees of this turn (see `msg::Batch`).
        let mut batch = Batch::default();
        // The trace's turn slices: back to back, one clock reading each (see
        // `diag::trace::Chain`); closed before anything that is not the next turn.
        let mut turns = crate::diag::trace::Chain::new();
        let st = self.st();
        loop {
            if let Some(run) = st.current.as_mut() {
                // Handling: only the state word, the aux lock and the future.
                if cell.mailbox.state.has_system() {
                    if let Some(reason) = take_stop_request(&cell) {
                        return self.finish(reason);
                    }
                }
                match catch_unwind(AssertUnwindSafe(|| run.poll(cx))) {
                    Ok(Poll::Pending) => return suspend(st, &cell, cx),
                    Ok(Poll::Ready(())) => {
                        if let Some(done) = st.current.take() {
                            done.recycle(&mut batch.spare);
                        }
                        if st.awaiting {
                            st.awaiting = false;
                            cell.mailbox.state.clear_awaiting();
                        }
                    }
                    Err(p) => {
                        let reason = StopReason::Panicked(panic_text(&*p));
                        return self.finish(reason);
                    }
                }
            }
            // No handler exists: the context and the state are ours.
            // SAFETY: consumer; no borrow of the context is alive.
            let c = unsafe { &mut *ctx };
            if cell.mailbox.state.has_system() {
                c.sync_system();
            }
            if c.stopping() {
                if let Some(reason) = c.take_stop() {
                    turns.close();
                    return self.finish(reason);
                }
            }
            if c.dropped > 0 {
                turns.close();
                let n = u64::from(std::mem::take(&mut c.dropped));
                // SAFETY: consumer; no borrow of the state or context is alive.
                let r = catch_unwind(AssertUnwindSafe(|| unsafe {
                    (*actor).messages_dropped(n, &mut *ctx)
                }));
                if let Err(p) = r {
                    return self.finish(StopReason::Panicked(panic_text(&*p)));
                }
                continue;
            }
            if budget == 0 {
                turns.close();
                return match cell.retire() {
                    super::mailbox::state::Retired::Idle => self.idle(),
                    super::mailbox::state::Retired::More => {
                        cx.waker().wake_by_ref();
                        Poll::Pending
                    }
                };
            }
            let (next, lane) = if c.lane() {
                match c.pop_lane() {
                    Some(e) => (Next::Env(e), true),
                    None => (c.pop_mailbox(), false),
                }
            } else {
                (c.pop_mailbox(), false)
            };
            let next = match next {
                Next::Busy => {
                    turns.close();
                    spin_pop(c)
                }
                other => other,
            };
            match next {
                Next::Env(env) => {
                    budget -= 1;
                    // A turn reads the clock when it starts, after the pop (a
                    // reading from before it would put a flow's end before its
                    // start when the message was sent meanwhile), unless its
                    // message was queued before the reading of the turns just
                    // before it, which it shares; a reading ends the previous
                    // turns (`diag::trace::Chain::turn`).
                    if crate::diag::trace::on() {
                        turns.turn(
                            std::any::type_name::<A>,
                            env.message_type_fn(),
                            env.trace_id(),
                            !lane,
                            || cell.trace_mark(),
                        );
                    } else {
                        turns.off();
                    }
                    // SAFETY: consumer; `actor` and `ctx` stay valid and unborrowed by
                    // the loop until the placed future completes or is dropped (see
                    // the module documentation); the state is present until `finish`.
                    // The handler runs at once, in place; only one that awaits is kept.
                    let r = catch_unwind(AssertUnwindSafe(|| unsafe {
                        env.run(actor, ctx, &mut batch, cx)
                    }));
                    match r {
                        Ok(None) => {}
                        Ok(Some(run)) => {
                            turns.close();
                            st.current = Some(run);
                            return suspend(st, &cell, cx);
                        }
                        Err(p) => {
                            turns.close();
                            return self.finish(StopReason::Panicked(panic_text(&*p)));
                        }
                    }
                }
                Next::Empty => {
                    turns.close();
                    match cell.retire() {
                        super::mailbox::state::Retired::Idle => return self.idle(),
                        super::mailbox::state::Retired::More => {}
                    }
                }
                Next::Busy => {
                    // A producer is mid-push; come back after others ran.
                    cx.waker().wake_by_ref();
                    return Poll::Pending;
                }
            }
        }
    }

    /// The mailbox is empty and the actor idle: stop if no address remains.
    fn idle(&mut self) -> Poll<()> {
        if self.cell.addrs() == 0 {
            return self.finish(StopReason::NoAddrs);
        }
        Poll::Pending
    }

    /// The stop sequence; see the module documentation.
    #[cold]
    fn finish(&mut self, reason: StopReason) -> Poll<()> {
        let st = self.st();
        st.phase = Phase::Done;
        if let Some(run) = st.current.take() {
            quietly("a cancelled handler's destructor", || drop(run));
        }
        let cell = Arc::clone(&self.cell);
        if st.awaiting {
            st.awaiting = false;
            cell.mailbox.state.clear_awaiting();
        }
        // SAFETY: consumer; the handler (if any) was dropped, so nothing borrows these.
        let ctx = unsafe { &mut *cell.ctx_ptr() };

        // 1. Close the mailbox; drop what is queued (askers learn `Stopped`).
        for e in cell.close_mailbox() {
            quietly("a dropped message's destructor", || {
                e.discard(NoReply::Dropped)
            });
        }

        // 2. Finished, as seen by monitors, links and stop waiters from now on.
        let (lane, watchers, links, names) = {
            let mut g = lock(&cell.aux().inner);
            g.finished = Some(reason.clone());
            g.stop = None;
            g.stop_interrupts = false;
            g.trap = None;
            (
                std::mem::take(&mut g.lane),
                std::mem::take(&mut g.watchers),
                std::mem::take(&mut g.links),
                std::mem::take(&mut g.names),
            )
        };
        for e in lane {
            quietly("a dropped message's destructor", || {
                e.discard(NoReply::Dropped)
            });
        }

        // 3. The stop hook and the state.
        if ctx.take_live() {
            // SAFETY: `LIVE` was set: the state is initialised; we move it out once.
            let mut a = unsafe { cell.actor_ptr().read() };
            if st.started {
                quietly("an actor's `stopped` hook", || a.stopped(&reason));
            }
            quietly("an actor's destructor", || drop(a));
        }

        // 4. Names vanish with the actor.
        for n in &names {
            registry::remove_if(n, cell.id);
        }

        // 5. Tell monitors and links.
        for (_, sink) in watchers {
            sink.down(Down {
                id: cell.id,
                reason: reason.clone(),
                link: false,
            });
        }
        for l in links {
            if reason.is_abnormal() {
                l.exit_signal(cell.id, &reason);
            } else {
                l.unlink(cell.id);
            }
        }

        // 6. Leave the system; 7. mark the stop complete and wake those waiting
        // for it. Waiters registered at any point before this see the flag or
        // are in the list taken under the same lock.
        cell.system.leave(cell.id, st.slot);
        let waiters = {
            let mut g = lock(&cell.aux().inner);
            g.stop_complete = true;
            std::mem::take(&mut g.stop_waiters)
        };
        for w in waiters {
            w.wake();
        }
        Poll::Ready(())
    }
}

/// The handler is waiting at an `.await`: the task waits too, with `AWAITING` set (so
/// that a stop request wakes it).
fn suspend<A: Actor>(st: &mut RunState, cell: &Cell<A>, cx: &mut TaskContext<'_>) -> Poll<()> {
    if !st.awaiting {
        st.awaiting = true;
        // Retire what was taken, so that the count shows only what waits behind the
        // handler (`mailbox_len`, `has_messages`). At worst a sender now sees zero and
        // wakes us needlessly.
        let _ = cell.retire();
        if cell.mailbox.state.set_awaiting() {
            // An event came before `AWAITING`: look at it now.
            cx.waker().wake_by_ref();
        }
    }
    Poll::Pending
}

/// A producer is mid-push: spin a little for its message.
#[cold]
fn spin_pop<A: Actor>(c: &mut super::Context<A>) -> Next<A> {
    for _ in 0..BUSY_SPINS {
        crate::loom::spin_hint();
        match c.pop_mailbox() {
            Next::Busy => {}
            other => return other,
        }
    }
    Next::Busy
}

/// Takes a pending stop request while a handler is suspended (touching only the aux
/// lock). The `SYSTEM` bit stays set for the other events.
fn take_stop_request<A: Actor>(cell: &Cell<A>) -> Option<StopReason> {
    let aux = cell.aux_if_any()?;
    let mut g = lock(&aux.inner);
    if !g.stop_interrupts {
        return None; // the actor's own stop waits for its handler
    }
    g.stop_interrupts = false;
    g.stop.take()
}

/// Runs user code whose panic must not disturb the stop sequence.
fn quietly(what: &str, f: impl FnOnce()) {
    if let Err(p) = catch_unwind(AssertUnwindSafe(f)) {
        eprintln!("tutti: {what} panicked: {}", panic_text(&*p));
    }
}

impl<A: Actor> Future for ActorRun<A> {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<()> {
        let this = &mut *self;
        let phase = this.st().phase;
        if phase == Phase::Done {
            return Poll::Ready(());
        }
        let _current = system::enter(&this.cell.system);
        let node = Arc::clone(&this.cell.node);
        let entered = node.enter();
        if phase == Phase::New {
            if let Some(p) = this.begin(cx) {
                entered.leave(p.is_pending());
                return p;
            }
        }
        let p = this.turn(cx);
        entered.leave(p.is_pending());
        p
    }
}

impl<A: Actor> Drop for ActorRun<A> {
    fn drop(&mut self) {
        if self.st().phase != Phase::Done {
            // The runtime dropped the task (shutdown) before the actor finished.
            let _current = system::enter(&self.cell.system);
            let _ = self.finish(StopReason::Shutdown);
        }
    }
}
