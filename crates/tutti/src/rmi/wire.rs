//! How requests and answers travel, on the request/reply core
//! ([`crate::call`]): to this location itself through its own queue, to a
//! location of the same rank as typed values (never serialized), and to
//! another rank as the core's frames through the location's [`Conversation`]
//! — a `Tell` run per `async_rmi`, an `Ask` per `sync_rmi` (after a `Control`
//! frame with the chain of waiting methods, for the deadlock check), answered
//! by a `Reply` or a `Fault`. Every `sync_rmi` is a question in the
//! conversation's pending table, under its correlation ids, whether its answer
//! comes back as a value or as bytes.
//!
//! Bad bytes from another rank follow the core's policy (see
//! [`crate::call`]): the receiving location rejects them, reports them on
//! stderr naming the sender with its rank and the cause, and goes on; the
//! sender is told (a question is refused, anything else answered with a
//! `Rejected` notice), and the *sending* location panics when the refusal or
//! notice reaches it, naming the location and rank that rejected its bytes
//! and the cause.

use std::sync::Arc;

use super::endpoint::State;
use super::request::{invoke, Call, Chain, MethodReply, Request, Response, RunOf};
use super::scope::ScopeTag;
use super::{HandlerContext, Rmi};
use crate::call::serve::refusal;
use crate::call::{CallError, FrameBuf, Link, Received, ReplyBody};
use crate::msg::codec::{self, CodecError, Frame, FrameKind};
use crate::msg::{Handler, MsgId, Remote, Tagged};
use crate::world::{Delivery, LocationId};

/// The message id of RMI's control message with the chain of representatives
/// held by the methods waiting for the `Ask` that follows it.
pub(super) const CHAIN: MsgId = MsgId::from_name("tutti.rmi.Chain");

/// The message id of RMI's control message that makes the `Ask` after it
/// scoped work of the scope it names (see `scope/`).
pub(super) const SCOPED: MsgId = MsgId::from_name("tutti.rmi.Scoped");

/// Statements waiting to go to one destination: the run being built (see
/// [`Rmi::statement`]).
pub(super) enum Open {
    /// To another location of this rank: a typed run (a [`RunOf`]), held by
    /// value.
    Typed {
        object: u32,
        /// The `RunOf<T, M>`, its type erased, so that the next statement
        /// can find its messages (if it has the same message and object
        /// types) by a comparison of type ids.
        run: Tagged,
        /// Makes the run the call it goes as (`seal::<T, M>`).
        seal: fn(Tagged) -> Box<dyn Call>,
    },
    /// To another rank: the core's frames (consecutive statements for one
    /// object and message type share one `Tell` run), and how many.
    Wire { frames: FrameBuf, count: usize },
}

/// Bytes of frames for one rank after which they are sent (within the
/// world's batches towards another rank).
pub(super) const WIRE_BYTES: usize = 16 * 1024;

impl State {
    /// The run of frames being built for `dest`, a location of another rank
    /// (of `n` locations in the world), and how many requests it holds: the
    /// open one, or a new one in a reused frame buffer (and `dest` marked as
    /// having a run to flush).
    pub(super) fn wire_run(&mut self, dest: usize, n: usize) -> (&mut FrameBuf, &mut usize) {
        if self.out.len() <= dest {
            self.out.resize_with(n, || None);
        }
        if self.out[dest].is_none() {
            let frames = self.frames.pop().unwrap_or_default();
            self.out[dest] = Some(Open::Wire { frames, count: 0 });
            self.dirty.push(dest);
        }
        let Some(Open::Wire { frames, count }) = &mut self.out[dest] else {
            unreachable!("a destination of another rank gets frames")
        };
        (frames, count)
    }
}

impl Rmi {
    /// Sends a statement (`async_rmi`, `broadcast_rmi`) for object `object`
    /// of type `T` to `dest`, another location. Statements to one destination
    /// are combined into runs of up to the location's aggregation factor
    /// (ARMI's message aggregation): typed and held by value within the
    /// rank, the core's `Tell` runs across ranks. A run goes when it is full,
    /// when a request of another kind goes to the same destination, and
    /// whenever this location is about to receive, wait or poll
    /// ([`flush_out`](Self::flush_out)) — so it never waits for a run that
    /// was not sent, and quiescence counts every statement.
    #[inline]
    pub(super) fn statement<T, M>(&self, dest: usize, object: u32, msg: M)
    where
        T: Handler<M>,
        T::Context: HandlerContext,
        M: Remote,
    {
        let cap = self.aggregation();
        // The common case: the open run to `dest` continues (its destination,
        // object and message type were checked when it was opened).
        let msg = match self.with_state(|st| extend_run::<T, M>(st, dest, object, msg, cap)) {
            Extended::Kept => return,
            Extended::Full => {
                let full = self.with_state(|st| st.out[dest].take());
                return self.send_open(dest, full, true);
            }
            Extended::NoRun(msg) => msg,
        };
        self.check_dest::<M>(dest);
        let me = self.id();
        if dest != me {
            self.check_accepts(dest, object, M::ID, M::NAME);
        }
        if cap <= 1 {
            if dest == me {
                self.queue_own::<T, M>(object, msg);
            } else {
                self.send_now::<T, M>(dest, object, msg);
            }
            return;
        }
        let typed = dest == me || dest / self.inner.per_rank == self.inner.rank;
        let n = self.count();
        if typed {
            let run = Open::Typed {
                object,
                run: Tagged::new(RunOf::<T, M>::new(msg, cap.min(1024))),
                seal: seal::<T, M>,
            };
            let old = self.with_state(|st| {
                if st.out.len() <= dest {
                    st.out.resize_with(n, || None);
                }
                let old = st.out[dest].replace(run);
                if old.is_none() {
                    st.dirty.push(dest);
                }
                old
            });
            // The earlier run goes first (the new one is only buffered).
            self.send_open(dest, old, false);
            return;
        }
        let ends = self.conv().ends(LocationId::new(dest as u32));
        let opened: Result<Option<Open>, CodecError> = self.with_state(|st| {
            let (frames, count) = st.wire_run(dest, n);
            frames.tell(ends, u64::from(object), M::ID, &msg)?;
            *count += 1;
            let full = *count >= cap || frames.len() >= WIRE_BYTES;
            Ok(if full { st.out[dest].take() } else { None })
        });
        match opened {
            Ok(full @ Some(_)) => self.send_open(dest, full, true),
            Ok(None) => {}
            Err(e) => panic!(
                "tutti::rmi: `{}` for location {dest} cannot be serialized: {e}",
                M::NAME
            ),
        }
    }

    /// Sends every run this location has built (before it receives, waits,
    /// polls or takes part in a collective).
    pub(super) fn flush_out(&self) {
        let runs = self.with_state(|st| {
            if st.dirty.is_empty() {
                return None;
            }
            let dirty = std::mem::take(&mut st.dirty);
            let runs: Vec<(usize, Option<Open>)> =
                dirty.iter().map(|&d| (d, st.out[d].take())).collect();
            st.dirty = dirty;
            st.dirty.clear();
            Some(runs)
        });
        let Some(runs) = runs else {
            return;
        };
        for (dest, open) in runs {
            self.send_open(dest, open, false);
        }
    }

    /// Sends the run built for `dest` now (before a request of another kind
    /// to it).
    pub(super) fn flush_dest(&self, dest: usize) {
        let open = self.with_state(|st| st.out.get_mut(dest).and_then(Option::take));
        self.send_open(dest, open, false);
    }

    /// Sends a run taken out of the outgoing table: to this location itself
    /// into its own queue, else through the world (at once if it is `full`:
    /// the run is the aggregate, the world need not hold it back).
    pub(super) fn send_open(&self, dest: usize, open: Option<Open>, full: bool) {
        let to = LocationId::new(dest as u32);
        match open {
            None => return,
            Some(Open::Typed { object, run, seal }) => {
                let req = Request {
                    object,
                    corr: 0,
                    call: seal(run),
                    chain: None,
                };
                if dest == self.id() {
                    self.with_state(|st| st.own.push_back(req));
                    return;
                }
                if let Err(e) = self.world().send_value(to, req) {
                    panic!("tutti::rmi: cannot send to location {dest}: {e}");
                }
            }
            Some(Open::Wire { mut frames, .. }) => {
                if let Err(e) = self.conv().send(to, &mut frames) {
                    panic!("tutti::rmi: cannot send to location {dest}: {e}");
                }
                // Emptied by the send; its memory serves the next run.
                self.with_state(|st| st.frames.push(frames));
            }
        }
        if full {
            self.world().flush();
        }
    }

    /// One statement, not aggregated (aggregation factor 1).
    fn send_now<T, M>(&self, dest: usize, object: u32, msg: M)
    where
        T: Handler<M>,
        T::Context: HandlerContext,
        M: Remote,
    {
        let to = LocationId::new(dest as u32);
        if dest / self.inner.per_rank == self.inner.rank {
            let req = Request {
                object,
                corr: 0,
                call: invoke::<T, M>(msg),
                chain: None,
            };
            if let Err(e) = self.world().send_value(to, req) {
                panic!("tutti::rmi: cannot send to location {dest}: {e}");
            }
        } else if let Err(e) = self.conv().tell(to, u64::from(object), M::ID, &msg) {
            panic!(
                "tutti::rmi: cannot send `{}` to location {dest}: {e}",
                M::NAME
            );
        }
    }

    #[track_caller]
    pub(super) fn check_dest<M: Remote>(&self, dest: usize) {
        let count = self.count();
        if dest >= count {
            panic!(
                "tutti::rmi: `{}` sent to location {dest}, but the world has {count} locations",
                M::NAME
            );
        }
    }

    /// Queues a statement to this location itself (run by `run_own`).
    pub(super) fn queue_own<T, M>(&self, object: u32, msg: M)
    where
        T: Handler<M>,
        T::Context: HandlerContext,
        M: Remote,
    {
        let req = Request {
            object,
            corr: 0,
            call: invoke::<T, M>(msg),
            chain: None,
        };
        self.with_state(|st| st.own.push_back(req));
    }

    /// Sends a question (`sync_rmi`) for object `object` of type `T` to
    /// `dest` and returns its correlation id in the location's pending table.
    /// To itself into its own queue, within the rank as a typed value, across
    /// ranks as the core's frames (after whatever statements to `dest` are
    /// buffered: issue order).
    pub(super) fn question<T, M>(
        &self,
        dest: usize,
        object: u32,
        chain: Option<Arc<Chain>>,
        msg: M,
    ) -> u64
    where
        T: Handler<M>,
        T::Context: HandlerContext,
        M: Remote,
    {
        self.check_dest::<M>(dest);
        let to = LocationId::new(dest as u32);
        let me = self.id();
        if dest != me {
            self.check_accepts(dest, object, M::ID, M::NAME);
        }
        self.flush_dest(dest);
        if dest == me || dest / self.inner.per_rank == self.inner.rank {
            let corr = self.conv().pending().open(to);
            let req = Request {
                object,
                corr,
                call: invoke::<T, M>(msg),
                chain,
            };
            if dest == me {
                self.with_state(|st| st.own.push_back(req));
            } else if let Err(e) = self.world().send_value(to, req) {
                panic!("tutti::rmi: cannot send to location {dest}: {e}");
            }
            return corr;
        }
        let conv = self.conv();
        let target = u64::from(object);
        let ends = conv.ends(to);
        let sent = conv.ask_with(to, |corr, buf| {
            if let Some(c) = &chain {
                buf.control(ends, CHAIN, 0, &c.links())?;
            }
            buf.ask(ends, target, M::ID, corr, &msg)
        });
        match sent {
            Ok(corr) => corr,
            Err(CallError::Encode(e)) => panic!(
                "tutti::rmi: `{}` for location {dest} cannot be serialized: {e}",
                M::NAME
            ),
            Err(e) => panic!(
                "tutti::rmi: cannot send `{}` to location {dest}: {e}",
                M::NAME
            ),
        }
    }

    /// Panics unless object `object`'s type accepts message `id` from other
    /// locations (requests to other locations must be able to cross ranks, so
    /// that the same program runs in every world shape).
    pub(super) fn check_accepts(&self, dest: usize, object: u32, id: MsgId, name: &str) {
        self.with_state(|st| {
            let Some(slot) = st.objects.get(object as usize) else {
                panic!(
                    "tutti::rmi: `{name}` sent for object #{object}, which was never registered \
                     on location {}",
                    self.id()
                );
            };
            if slot.methods.accepts.binary_search(&id).is_ok() {
                return;
            }
            let tname = slot.type_name;
            panic!(
                "tutti::rmi: location {} sends `{name}` to location {dest}, but `{tname}` does \
                 not accept it from other locations: list it in `{tname}`'s \
                 `Object::remote` (`table.register::<...>()?` for the type named \"{name}\")",
                self.id()
            );
        })
    }

    /// The answer to question `corr` (a `sync_rmi` of `M` to `dest`), if it
    /// has arrived.
    ///
    /// # Panics
    /// If the question was refused, or its answer is not a value of the
    /// reply type (naming `dest`, its rank and the cause).
    pub(super) fn answer_to<M: Remote>(&self, dest: usize, corr: u64) -> Option<M::Reply> {
        let outcome = self.conv().pending().take(corr)?;
        let to = LocationId::new(dest as u32);
        let why = match outcome {
            Ok(ReplyBody::Value(v)) => match v.downcast::<M::Reply>() {
                Ok(r) => return Some(*r),
                Err(_) => "a reply of another type".to_string(),
            },
            Ok(ReplyBody::Bytes(b)) => match codec::decode::<M::Reply>(&b) {
                Ok(r) => return Some(r),
                Err(e) => format!("a reply that does not decode: {e}"),
            },
            Err(CallError::Refused { refusal, .. }) => format!("refused: {refusal}"),
            Err(e) => e.to_string(),
        };
        panic!(
            "tutti::rmi: location {} (rank {}): the sync_rmi of `{}` to {} got no reply: {why}",
            self.id(),
            self.inner.rank,
            M::NAME,
            self.conv().link().name(to)
        )
    }

    /// Answers question `corr` from `to` with a method's reply: filed at once
    /// for this location itself, a typed value within the rank, a `Reply`
    /// (or `Fault`) frame across ranks.
    pub(super) fn answer(&self, to: LocationId, corr: u64, reply: MethodReply) {
        let me = self.world().id();
        let within_rank = to.index() / self.inner.per_rank == self.inner.rank;
        match reply {
            MethodReply::Value(v) if to == me => {
                self.conv()
                    .pending()
                    .complete(corr, me, Ok(ReplyBody::Value(v)));
            }
            MethodReply::Value(reply) if within_rank => {
                if let Err(e) = self.world().send_value(to, Response { corr, reply }) {
                    panic!("tutti::rmi: cannot answer {to}: {e}");
                }
            }
            MethodReply::Encoded(encoded) => {
                let bytes;
                let answer = match encoded {
                    Ok(b) => {
                        bytes = b;
                        Ok(&bytes[..])
                    }
                    // Representatives go on after a method that did not reply.
                    Err(e) => Err(refusal(e, false)),
                };
                if let Err(e) = self.conv().answer(to, corr, answer) {
                    panic!("tutti::rmi: cannot answer {to}: {e}");
                }
            }
            _ => unreachable!(
                "tutti::rmi: a question's method replies with a value (from this rank) or \
                 encoded (from another)"
            ),
        }
    }

    /// What one delivery brings: the requests it carries, in order (a typed
    /// request; or, from another rank, the requests of its frames); answers
    /// are filed in the pending table on the way. Bytes that break the rules
    /// are rejected under the core's policy (the sender is told) and reported
    /// here; a rejection notice for bytes this location sent panics.
    pub(super) fn arrivals(&self, d: &mut Delivery<'_>, out: &mut Vec<Request>) {
        let from = d.from();
        if d.bytes().is_none() {
            if let Some(req) = d.take::<Request>() {
                out.push(req);
            } else if let Some(resp) = d.take::<Response>() {
                // A typed answer comes from this rank: it cannot be late or
                // from the wrong peer unless the runtime is broken.
                self.conv()
                    .pending()
                    .complete(resp.corr, from, Ok(ReplyBody::Value(resp.reply)));
            } else {
                let bad =
                    self.conv()
                        .reject(from, None, format!("a value that is not an RMI ({d:?})"));
                self.report(&bad.to_string());
            }
            return;
        }
        let Some(bytes) = d.bytes() else { return };
        let mut chain: Option<Arc<Chain>> = None;
        let mut scoped: Option<ScopeTag> = None;
        let mut calls: Vec<Box<dyn Call>> = Vec::new();
        for r in self.conv().receive(from, bytes) {
            match r {
                Received::Request(frame) => {
                    let h = *frame.header();
                    let chain = chain.take().filter(|_| h.kind == FrameKind::Ask);
                    let scoped = scoped.take().filter(|_| h.kind == FrameKind::Ask);
                    match self.decode(&frame, scoped, &mut calls) {
                        Ok(()) => out.extend(calls.drain(..).map(|call| Request {
                            object: h.target as u32,
                            corr: if h.kind == FrameKind::Ask { h.corr } else { 0 },
                            call,
                            chain: chain.clone(),
                        })),
                        Err(why) => {
                            // The messages before the bad one still run.
                            out.extend(calls.drain(..).map(|call| Request {
                                object: h.target as u32,
                                corr: 0,
                                call,
                                chain: None,
                            }));
                            let bad = self.conv().reject(from, Some(&h), why);
                            self.report(&bad.to_string());
                        }
                    }
                }
                Received::Control(frame) if frame.header().msg == CHAIN => {
                    match frame.decode::<Vec<(u32, u32)>>() {
                        Ok(links) => chain = Chain::from_links(&links),
                        Err(e) => {
                            let why = format!("a sync_rmi chain that does not decode: {e}");
                            let bad = self.conv().reject(from, Some(frame.header()), why);
                            self.report(&bad.to_string());
                        }
                    }
                }
                Received::Control(frame) if frame.header().msg == SCOPED => {
                    match frame.decode::<ScopeTag>() {
                        Ok(tag) => scoped = Some(tag),
                        Err(e) => {
                            let why = format!("an rmi scope's tag that does not decode: {e}");
                            let bad = self.conv().reject(from, Some(frame.header()), why);
                            self.report(&bad.to_string());
                        }
                    }
                }
                Received::Control(frame) => {
                    let why = format!(
                        "a control message of another protocol ({})",
                        frame.header().msg
                    );
                    let bad = self.conv().reject(from, Some(frame.header()), why);
                    self.report(&bad.to_string());
                }
                Received::Answered(_) => {}
                Received::Rejected(cause) => panic!(
                    "tutti::rmi: location {} (rank {}): {} rejected what this location sent \
                     it: {cause}",
                    self.id(),
                    self.inner.rank,
                    self.conv().link().name(from)
                ),
                Received::Bad(bad) => self.report(&bad.to_string()),
            }
        }
    }

    /// Decodes the calls of a request frame with its object type's table.
    fn decode(
        &self,
        frame: &Frame<'_>,
        scoped: Option<ScopeTag>,
        out: &mut Vec<Box<dyn Call>>,
    ) -> Result<(), String> {
        let h = frame.header();
        let methods = self.with_state(|st| {
            let slot = usize::try_from(h.target)
                .ok()
                .and_then(|i| st.objects.get(i));
            slot.map(|slot| Arc::clone(&slot.methods))
        });
        let Some(methods) = methods else {
            return Err(format!(
                "a request (message id {}) for object #{}, which was never registered here",
                h.msg, h.target
            ));
        };
        (methods.decode)(frame, scoped, out)
    }

    /// Reports bytes this location rejected (the sender has been told; this
    /// location goes on).
    fn report(&self, why: &str) {
        eprintln!(
            "tutti::rmi: location {} (rank {}) rejected {why}",
            self.id(),
            self.inner.rank
        );
    }
}

/// What [`extend_run`] did with a statement (small: it is the fast path's
/// result).
enum Extended<M> {
    /// It joined the open run to its destination.
    Kept,
    /// It joined the run, which is now full: to be sent.
    Full,
    /// There is no open run it can join: the statement, given back.
    NoRun(M),
}

/// Adds statement `msg` (for object `object` of type `T`) to the run open to
/// `dest` if there is one for the same object and message type (typed within
/// the rank, the core's `Tell` run across ranks): the fast path of
/// consecutive statements to one destination.
///
/// # Panics
/// If the statement does not encode (for another rank).
#[inline]
fn extend_run<T, M>(st: &mut State, dest: usize, object: u32, msg: M, cap: usize) -> Extended<M>
where
    T: Handler<M>,
    T::Context: HandlerContext,
    M: Remote,
{
    let full = match st.out.get_mut(dest) {
        Some(Some(Open::Typed { object: o, run, .. })) => {
            match run.downcast_mut::<RunOf<T, M>>().filter(|_| *o == object) {
                Some(run) => {
                    run.msgs.push(msg);
                    run.msgs.len() >= cap
                }
                None => return Extended::NoRun(msg),
            }
        }
        Some(Some(Open::Wire { frames, count })) => {
            match frames.extend_run(u64::from(object), M::ID, &msg) {
                Ok(true) => {
                    *count += 1;
                    *count >= cap || frames.len() >= WIRE_BYTES
                }
                Ok(false) => return Extended::NoRun(msg),
                Err(e) => panic!(
                    "tutti::rmi: `{}` for location {dest} cannot be serialized: {e}",
                    M::NAME
                ),
            }
        }
        _ => return Extended::NoRun(msg),
    };
    if full {
        Extended::Full
    } else {
        Extended::Kept
    }
}

/// A typed run (`Open::Typed`) as the call it goes as.
fn seal<T, M>(run: Tagged) -> Box<dyn Call>
where
    T: Handler<M>,
    T::Context: HandlerContext,
    M: Remote,
{
    match run.into_box().downcast::<RunOf<T, M>>() {
        Ok(run) => run,
        Err(_) => unreachable!("a run is sealed by the function of its own type"),
    }
}
