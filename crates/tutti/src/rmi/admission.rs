//! Admission and deferral: the table of representatives, and whether a request
//! may run now. A request runs when its representative is in the table and no
//! earlier request from the same sender waits; otherwise it is *deferred* (in
//! issue order per sender) — unless waiting would deadlock, which is reported.
//! Scoped work keeps no issue order: it waits only for its representative.

use std::any::TypeId;
use std::sync::Arc;

use super::endpoint::State;
use super::request::{decoded, decoded_run, Call, Chain, Rep, Request};
use super::scope::{decoded_scoped, ScopeTag};
use super::{HandlerContext, Rmi};

use crate::loom::Ordering;
use crate::msg::codec::{Frame, FrameKind};
use crate::msg::{Dispatch, MsgId, Object};
use crate::world::LocationId;

/// Decodes the messages of a request frame from another rank into calls on
/// the object type (a `Tell` run: one call per message; an `Ask`: one call,
/// scoped work if the frame before it named its scope).
type DecodeFn = dyn Fn(&Frame<'_>, Option<ScopeTag>, &mut Vec<Box<dyn Call>>) -> Result<(), String>
    + Send
    + Sync;

/// What an object type accepts from other locations (its
/// [`Object::remote`] table), and how to decode it.
pub(super) struct Methods {
    /// Sorted.
    pub(super) accepts: Vec<MsgId>,
    pub(super) decode: Box<DecodeFn>,
}

impl Methods {
    pub(super) fn of<T>() -> Methods
    where
        T: Object,
        T::Context: HandlerContext,
    {
        let mut table = Dispatch::<T>::new();
        if let Err(e) = T::remote(&mut table) {
            panic!(
                "tutti::rmi: register: the message types of `{}` (its Object::remote): {e}",
                std::any::type_name::<T>()
            );
        }
        let accepts: Vec<MsgId> = table.message_types().map(|(id, _)| id).collect();
        let decode =
            move |frame: &Frame<'_>, scoped: Option<ScopeTag>, out: &mut Vec<Box<dyn Call>>| {
                let h = frame.header();
                let name = table.name_of(h.msg).unwrap_or("?");
                if h.kind == FrameKind::Ask {
                    let incoming = table.incoming(frame).map_err(|e| e.to_string())?;
                    out.push(match scoped {
                        Some(tag) => decoded_scoped(incoming, name, tag),
                        None => decoded(incoming, name),
                    });
                    return Ok(());
                }
                let run = crate::call::Run::of(frame).map_err(|e| e.to_string())?;
                let (count, bytes) = run.remaining();
                let (batch, rest, bad) = table
                    .batch(h.msg, bytes, count, frame.max_depth())
                    .map_err(|e| e.to_string())?;
                let mut bad = bad.map(|e| e.to_string());
                if bad.is_none() && !rest.is_empty() {
                    bad = Some(format!(
                        "a run of {count} \"{name}\" messages with {} bytes after them",
                        rest.len()
                    ));
                }
                // The statements before a bad one still run.
                if batch.len > 0 {
                    out.push(decoded_run(batch, name));
                }
                bad.map_or(Ok(()), Err)
            };
        Methods {
            accepts,
            decode: Box::new(decode),
        }
    }

    /// A digest of the accepted ids, compared between locations at registration.
    pub(super) fn digest(&self) -> u64 {
        self.accepts
            .iter()
            .fold(self.accepts.len() as u64, |h, id| {
                (h.rotate_left(23) ^ id.get()).wrapping_mul(0x9e37_79b9_7f4a_7c15)
            })
    }
}

/// A representative's place in its location's table.
pub(super) enum Entry {
    /// Ready for a method or for [`Rmi::local`].
    Here(Rep),
    /// Taken out by a method that has not returned (or by a `Local` guard).
    Busy,
    /// Unregistered.
    Gone,
}

pub(super) struct Slot {
    pub(super) entry: Entry,
    pub(super) type_id: TypeId,
    pub(super) type_name: &'static str,
    pub(super) methods: Arc<Methods>,
}

/// A request that arrived while its object was busy, or behind one from the
/// same sender that did (requests from one sender execute in issue order).
pub(super) struct Deferred {
    pub(super) from: LocationId,
    pub(super) req: Request,
}

/// A request admitted for execution: its representative is taken out of the
/// table and its frame is on the stack (see [`Rmi::enter`]).
pub(super) struct Admitted {
    pub(super) object: u32,
    pub(super) corr: u64,
    pub(super) call: Box<dyn Call>,
    pub(super) rep: Rep,
}

/// A method executing on this location: the representative it holds, and
/// who waits for it (its request's chain, for a `sync_rmi`).
pub(super) struct MethodFrame {
    pub(super) object: u32,
    pub(super) waiting: Option<Arc<Chain>>,
}

impl Rmi {
    /// Takes representative `id` out of the table for exclusive use.
    pub(super) fn take(&self, id: u32, what: &str) -> Rep {
        self.with_state(|st| {
            let slot = &mut st.objects[id as usize];
            match std::mem::replace(&mut slot.entry, Entry::Busy) {
                Entry::Here(rep) => rep,
                Entry::Busy => panic!(
                    "tutti::rmi: {what}: object #{id} (`{}`) on location {} is in use by a \
                     method executing there",
                    slot.type_name,
                    self.id()
                ),
                Entry::Gone => {
                    slot.entry = Entry::Gone;
                    panic!(
                        "tutti::rmi: {what}: object #{id} (`{}`) was unregistered on location {}",
                        slot.type_name,
                        self.id()
                    )
                }
            }
        })
    }

    /// Admits `req` (from `from`) for execution, given the state (`st`):
    /// takes its representative and enters its method, or defers it (`None`)
    /// if its object is busy or an earlier request from the same sender waits.
    ///
    /// # Panics
    /// If the request is for an object never registered here, or of another
    /// type, or unregistered; if deferring it would deadlock (see
    /// [`cycle`](Self::cycle)).
    pub(super) fn admit(&self, st: &mut State, from: LocationId, req: Request) -> Option<Admitted> {
        let rep = {
            // Scoped work is not ordered with its sender's other requests
            // (see `ordered`).
            let blocked = ordered(&req)
                && st
                    .deferred
                    .iter()
                    .any(|d| d.from == from && ordered(&d.req));
            let id = req.object as usize;
            let Some(slot) = st.objects.get_mut(id) else {
                panic!(
                    "tutti::rmi: location {} got `{}` for object #{id}, which was never \
                     registered here",
                    self.id(),
                    req.call.message()
                );
            };
            if slot.type_id != req.call.object() {
                let name = slot.type_name;
                panic!(
                    "tutti::rmi: location {} got `{}` for object #{id}, which is a `{name}` here",
                    self.id(),
                    req.call.message()
                );
            }
            match std::mem::replace(&mut slot.entry, Entry::Busy) {
                Entry::Here(rep) if !blocked => rep,
                Entry::Gone => {
                    slot.entry = Entry::Gone;
                    let name = slot.type_name;
                    panic!(
                        "tutti::rmi: location {} got `{}` from {from} for object \
                         #{id} (`{name}`), which was unregistered",
                        self.id(),
                        req.call.message()
                    );
                }
                other => {
                    slot.entry = other;
                    let name = slot.type_name;
                    if !blocked {
                        if let Some(held) = self.cycle(st, id as u32, &req) {
                            let chain = req.chain.as_deref().map(|c| c.to_string());
                            let report = self.chain_report(&req, id, name, from);
                            crate::diag::declare(&report);
                            if crate::diag::deadlock_mode() == crate::diag::DeadlockMode::Fail {
                                panic!(
                                    "tutti::rmi: deadlock: location {} cannot execute `{}` for \
                                     object #{id} (`{name}`) until a method here returns, and \
                                     the method holding object #{held} waits for this request's \
                                     reply (a chain of sync_rmi calls came back to this \
                                     location; chain: {})\n{report}",
                                    self.id(),
                                    req.call.message(),
                                    chain.unwrap_or_default()
                                );
                            }
                        }
                    }
                    st.deferred.push_back(Deferred { from, req });
                    return None;
                }
            }
        };
        Some(self.enter(st, req, rep))
    }

    /// The deadlock report for a `sync_rmi` chain that came back here: every method
    /// of the chain waiting in its `sync_rmi` (innermost first), and the request that
    /// cannot run. Each is named by its location and rank (`crate::diag`).
    #[cold]
    fn chain_report(
        &self,
        req: &Request,
        object: usize,
        type_name: &str,
        from: LocationId,
    ) -> crate::diag::Deadlock {
        let rank_of = |l: usize| {
            self.world()
                .world()
                .rank_of(LocationId::new(l as u32))
                .unwrap_or_default()
        };
        let mut waiters = Vec::new();
        let mut cycle = Vec::new();
        // Innermost first: each method waits for the one it called, the innermost for
        // this request.
        let mut callee = format!("location {}", self.id());
        let mut link = req.chain.as_deref();
        while let Some(c) = link {
            let name = format!("location {} (method of object #{})", c.location, c.object);
            waiters.push(
                crate::diag::BlockedProcess::new(
                    name.clone(),
                    format!("waits in a sync_rmi for its call on {callee} to return"),
                )
                .on_rank(rank_of(c.location)),
            );
            callee = format!("location {}", c.location);
            cycle.push(name);
            link = c.parent.as_deref();
        }
        let here = format!(
            "location {} (request `{}` from location {} for object #{object})",
            self.id(),
            req.call.message(),
            from.index()
        );
        waiters.push(
            crate::diag::BlockedProcess::new(
                here.clone(),
                format!(
                    "cannot run until object #{object} (`{type_name}`) is released by a method \
                     here that waits for this chain"
                ),
            )
            .on_rank(rank_of(self.id())),
        );
        cycle.reverse();
        cycle.insert(0, here.clone());
        cycle.push(here);
        crate::diag::Deadlock::new(waiters, cycle)
    }

    /// Whether deferring `req` (for busy object `object`) would deadlock: a
    /// method on this location waits for its reply, and cannot return before
    /// the method holding `object` does (it is at or above that method's level
    /// on this location's stack). Returns the object the waiting method holds.
    fn cycle(&self, st: &State, object: u32, req: &Request) -> Option<u32> {
        let chain = req.chain.as_deref()?;
        let holder = st.stack.iter().position(|f| f.object == object)?;
        chain.held_on(self.id()).find(|&held| {
            st.stack
                .iter()
                .position(|f| f.object == held)
                .is_some_and(|level| level >= holder)
        })
    }

    /// The first deferred request whose object is free, in order per sender,
    /// admitted.
    pub(super) fn next_deferred(&self) -> Option<(LocationId, Admitted)> {
        self.with_state(|st| {
            let mut blocked: Vec<LocationId> = Vec::new();
            for i in 0..st.deferred.len() {
                let (from, id) = (st.deferred[i].from, st.deferred[i].req.object as usize);
                if ordered(&st.deferred[i].req) && blocked.contains(&from) {
                    continue;
                }
                let slot = &mut st.objects[id];
                match std::mem::replace(&mut slot.entry, Entry::Busy) {
                    Entry::Here(rep) => {
                        let d = st.deferred.remove(i).expect("the index is in range");
                        return Some((d.from, self.enter(st, d.req, rep)));
                    }
                    other => {
                        slot.entry = other;
                        if ordered(&st.deferred[i].req) {
                            blocked.push(from);
                        }
                    }
                }
            }
            None
        })
    }

    /// Enters the method of `req` on `rep` (taken out of slot `req.object`)
    /// one level deeper, given the state (`st`): checks the nesting limit
    /// and pushes its frame (with the chain waiting for it, for a `sync_rmi`).
    pub(super) fn enter(&self, st: &mut State, req: Request, rep: Rep) -> Admitted {
        let Request {
            object,
            corr,
            call,
            chain,
        } = req;
        let depth = self.inner.depth.load(Ordering::Relaxed) + 1;
        let max = self.inner.max_depth.load(Ordering::Relaxed);
        if depth > max {
            panic!(
                "tutti::rmi: location {}: executing `{}` would nest {depth} methods deep, \
                 beyond the maximum of {max} (sync_rmi chains keep returning here; raise \
                 it with set_max_nesting)",
                self.id(),
                call.message()
            );
        }
        self.inner.depth.store(depth, Ordering::Relaxed);
        let waiting = if corr != 0 { chain } else { None };
        st.stack.push(MethodFrame { object, waiting });
        Admitted {
            object,
            corr,
            call,
            rep,
        }
    }
}

/// Whether `req` keeps issue order with the other requests of its sender.
/// Scoped work ([`Rmi::scope`]) does not: pieces of work spawned in a scope
/// run concurrently, as tasks spawned in a scope do, so a spawn neither
/// waits behind an earlier deferred request of its sender nor holds back a
/// later one — it waits only for its representative. Without this, a method
/// waiting in a scope for work it spawned to a location could wait forever
/// behind a request, from the same sender, for a representative held by a
/// method that waits in turn (a ring of such methods over the locations
/// deadlocks).
fn ordered(req: &Request) -> bool {
    req.call.scope().is_none()
}
