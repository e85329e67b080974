//! An actor's task: one task of the rank's runtime per actor (never a
//! thread). It consumes its wake signal, runs `start()` once and then `act()`
//! as its firing rule allows, catches a panic in either (reported for the
//! whole run), closes its ports when it terminates, and parks on its signal
//! until a port changes — or, when the router finds the run over with the
//! actor still waiting, describes what it waits on and ends.

use std::future::poll_fn;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::task::Poll;

use super::{Local, Problems};
use crate::graph::actor::{PortActor, Ports, Slot, Status};
use crate::graph::build::Firing;
use crate::graph::channel::Activity;
use crate::loom::Ordering;
use crate::sync::Wait;
use crate::world::Location;

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
pub(super) async fn actor_task(
    local: Arc<Local>,
    mut actor: Box<dyn PortActor>,
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
            let mut ports = Ports::new(local.id, &name, &mut slots, &loc);
            let traced = crate::diag::trace::begin();
            let r = catch_unwind(AssertUnwindSafe(|| {
                if first {
                    actor.start(&mut ports)
                } else {
                    actor.act(&mut ports)
                }
            }));
            crate::diag::trace::end(traced, crate::diag::trace::What::Act(trace_name), 0);
            let away = ports.sent_away();
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
                    let msg = crate::runtime::payload_text(&*p);
                    crate::loom::lock(&*problems)
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
