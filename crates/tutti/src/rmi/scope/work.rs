//! Scoped work where it runs: the calls a scope's [`spawn`](super::Scope::spawn)
//! sends, which catch their method's panic and answer with it; the
//! cancellation of a scope at the locations that owe it work; and the scoped
//! question as it travels (to the location itself, within the rank, or as the
//! request/reply core's `Ask` after a `Scoped` control frame, aggregated with
//! the other requests for the same destination as statements are).
//!
//! # Answers
//!
//! Every piece of scoped work is a question of its scope's owner and is
//! answered exactly once: with the method's reply, with the panic it raised,
//! or — if its scope was cancelled before it started — as cancelled. Within
//! the rank the answer is a typed `Result<M::Reply, Stop>`; across ranks the
//! encoded [`WireOutcome`] (the reply's own bytes inside), so that a panic or
//! a cancellation never reads as a reply that does not decode.
//!
//! # Cancellation
//!
//! A cancelled scope is named in a process-wide set ([`cancel_here`]); every
//! scoped call checks it when it is about to start (`execute_on`), after it
//! was admitted, so a deferred or queued call is caught as well. Locations of
//! the owner's rank see the set at once. A location of another rank learns of
//! it from a *notice*, a world message with tag [`NOTICE_TAG`] that the owner
//! sends it: before it starts scoped work from another rank, the location
//! takes every notice that has arrived out of its inbox, ahead of the
//! requests queued before them ([`Location::try_recv_matching`]) — so a
//! notice overtakes the work it cancels once it has arrived. Work that
//! already started runs to its end (cancellation is never preemptive). When
//! every piece of a cancelled scope has been answered, nothing of it is left
//! anywhere and the owner removes its name again (a `forget` notice to the
//! other ranks).
//!
//! The set is small (scopes being cancelled); a count beside it lets the
//! common case — nothing cancelled — skip its lock. The count is a hint
//! written under the lock: a check that reads a stale zero runs work that was
//! cancelled a moment earlier, as if the cancellation had come a moment later.
//!
//! [`Location::try_recv_matching`]: crate::world::Location::try_recv_matching

use std::future::{poll_fn, Future};
use std::marker::PhantomData;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::task::{Context, Poll};

use serde::{Deserialize, Serialize};

use crate::call::Link;
use crate::loom::{lock, unmodelled, Ordering};
use crate::msg::codec::{self, CodecError};
use crate::msg::{Handler, Incoming, Message, Object, Remote, Spare, Started};
use crate::rmi::admission::{Admitted, Entry};
use crate::rmi::request::{run_method, Call, Chain, MethodReply, Rep, Request, Returned};
use crate::rmi::wire::{Open, CHAIN, SCOPED, WIRE_BYTES};
use crate::rmi::{HandlerContext, Rmi};
use crate::world::{Delivery, LocationId, Match};

/// The name of one scope, the same on every rank: its owner's location and a
/// number unique in the owner's process.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ScopeTag {
    pub(crate) owner: u32,
    pub(crate) serial: u64,
}

/// The tag of the world messages that cancel (or forget) a scope at a
/// location of another rank.
pub(crate) const NOTICE_TAG: u64 = u64::from_le_bytes(*b"rmiscope");

/// A cancellation notice (or, `forget`, the end of one).
#[derive(Serialize, Deserialize)]
pub(super) struct Notice {
    pub(super) tag: ScopeTag,
    pub(super) forget: bool,
}

/// Why scoped work has no reply, within the rank.
pub(super) enum Stop {
    Panicked(String),
    Cancelled,
}

/// The answer to scoped work from another rank.
#[derive(Serialize, Deserialize)]
pub(super) enum WireOutcome {
    /// The method returned: its reply, encoded.
    Done(Vec<u8>),
    /// The method panicked: the panic's message.
    Panicked(String),
    /// The scope was cancelled before the method started.
    Cancelled,
    /// The method returned, but its reply could not be made (it did not encode).
    NoReply(String),
}

/// Scopes cancelled in this process (see the module docs).
static CANCELLED: unmodelled::Mutex<Vec<ScopeTag>> = unmodelled::Mutex::new(Vec::new());
/// How many `CANCELLED` holds; written under its lock.
static CANCELLED_LEN: unmodelled::AtomicUsize = unmodelled::AtomicUsize::new(0);

/// Names `tag` cancelled in this process.
pub(super) fn cancel_here(tag: ScopeTag) {
    let mut set = lock(&CANCELLED);
    if !set.contains(&tag) {
        set.push(tag);
        // Release: pairs with the Acquire of `is_cancelled` (the set is read
        // under the lock anyway; the count is only the hint to take it).
        CANCELLED_LEN.store(set.len(), Ordering::Release);
    }
}

/// Removes `tag` from the cancelled scopes (all its work has been answered).
pub(super) fn forget_here(tag: ScopeTag) {
    let mut set = lock(&CANCELLED);
    set.retain(|t| *t != tag);
    CANCELLED_LEN.store(set.len(), Ordering::Release);
}

/// How many cancelled scopes this process remembers.
pub(super) fn remembered() -> usize {
    lock(&CANCELLED).len()
}

/// Whether `tag` was cancelled (as far as this process knows).
fn is_cancelled(tag: ScopeTag) -> bool {
    if CANCELLED_LEN.load(Ordering::Acquire) == 0 {
        return false;
    }
    lock(&CANCELLED).contains(&tag)
}

/// Polls `fut`, catching a panic: its message instead of its output.
async fn caught<F: Future>(fut: F) -> Result<F::Output, String> {
    let mut fut = std::pin::pin!(fut);
    poll_fn(
        |cx| match catch_unwind(AssertUnwindSafe(|| fut.as_mut().poll(cx))) {
            Ok(Poll::Ready(v)) => Poll::Ready(Ok(v)),
            Ok(Poll::Pending) => Poll::Pending,
            Err(p) => Poll::Ready(Err(crate::runtime::payload_text(&*p).to_string())),
        },
    )
    .await
}

/// Scoped work within the rank: the message, typed.
struct Scoped<T, M> {
    msg: M,
    tag: ScopeTag,
    _object: PhantomData<fn() -> T>,
}

impl<T, M> Call for Scoped<T, M>
where
    T: Handler<M>,
    T::Context: HandlerContext,
    M: Message,
{
    fn object(&self) -> std::any::TypeId {
        std::any::TypeId::of::<T>()
    }

    fn message(&self) -> &'static str {
        std::any::type_name::<M>()
    }

    fn start(
        self: Box<Self>,
        rep: Rep,
        ctx: &Rmi,
        spare: &mut Spare,
        cx: &mut Context<'_>,
    ) -> Started<Returned> {
        let msg = self.msg;
        run_method(
            rep,
            ctx,
            spare,
            cx,
            move |mut obj: Box<T>, mut ctx| async move {
                // The handler borrows the representative, which stays ours
                // when it panics.
                let r = caught(obj.handle(msg, &mut ctx)).await;
                Returned {
                    rep: obj,
                    reply: MethodReply::Value(Box::new(r.map_err(Stop::Panicked))),
                }
            },
        )
    }

    fn scope(&self) -> Option<ScopeTag> {
        Some(self.tag)
    }

    fn cancelled(self: Box<Self>) -> MethodReply {
        MethodReply::Value(Box::new(Err::<M::Reply, Stop>(Stop::Cancelled)))
    }
}

/// Scoped work from another rank, decoded by its object type's table.
struct DecodedScoped<T: Object> {
    incoming: Incoming<T>,
    name: &'static str,
    tag: ScopeTag,
}

/// A scoped question from another rank (an `Ask` after a `Scoped` control
/// frame), as a call.
pub(crate) fn decoded_scoped<T>(
    incoming: Incoming<T>,
    name: &'static str,
    tag: ScopeTag,
) -> Box<dyn Call>
where
    T: Object,
    T::Context: HandlerContext,
{
    Box::new(DecodedScoped {
        incoming,
        name,
        tag,
    })
}

/// `outcome`, encoded (an answer that cannot be encoded reads, at the owner,
/// as one that does not decode).
fn encoded(outcome: &WireOutcome) -> MethodReply {
    let mut out = Vec::new();
    if let Err(e) = codec::encode(outcome, &mut out) {
        out.clear();
        let why = WireOutcome::NoReply(format!("the answer could not be encoded: {e}"));
        if codec::encode(&why, &mut out).is_err() {
            out.clear();
        }
    }
    MethodReply::Encoded(Ok(out))
}

impl<T> Call for DecodedScoped<T>
where
    T: Object,
    T::Context: HandlerContext,
{
    fn object(&self) -> std::any::TypeId {
        std::any::TypeId::of::<T>()
    }

    fn message(&self) -> &'static str {
        self.name
    }

    fn start(
        self: Box<Self>,
        rep: Rep,
        ctx: &Rmi,
        spare: &mut Spare,
        cx: &mut Context<'_>,
    ) -> Started<Returned> {
        let Incoming { envelope, reply } = self.incoming;
        let method = move |mut obj: Box<T>, mut ctx: T::Context| async move {
            let outcome = match caught(envelope.handle(&mut obj, &mut ctx)).await {
                Err(panic) => WireOutcome::Panicked(panic),
                Ok(()) => match reply {
                    Some(r) => match r.await {
                        Ok(bytes) => WireOutcome::Done(bytes),
                        Err(e) => WireOutcome::NoReply(e.to_string()),
                    },
                    None => WireOutcome::NoReply("the request carried no reply slot".into()),
                },
            };
            Returned {
                rep: obj,
                reply: encoded(&outcome),
            }
        };
        run_method(rep, ctx, spare, cx, method)
    }

    fn scope(&self) -> Option<ScopeTag> {
        Some(self.tag)
    }

    fn cancelled(self: Box<Self>) -> MethodReply {
        encoded(&WireOutcome::Cancelled)
    }
}

impl Rmi {
    /// Sends scoped work — `msg` for object `object` of type `T` — to `dest`
    /// and returns its correlation id in the location's pending table; as
    /// [`question`](Rmi::question), with the scope's tag.
    pub(super) fn scoped_question<T, M>(
        &self,
        dest: usize,
        object: u32,
        chain: Option<Arc<Chain>>,
        msg: M,
        tag: ScopeTag,
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
        if dest == me || dest / self.inner.per_rank == self.inner.rank {
            // The statements buffered for `dest` go first.
            self.flush_dest(dest);
            let corr = self.conv().pending().open(to);
            let req = Request {
                object,
                corr,
                call: Box::new(Scoped::<T, M> {
                    msg,
                    tag,
                    _object: PhantomData,
                }),
                chain,
            };
            if dest == me {
                self.with_state(|st| st.own.push_back(req));
            } else if let Err(e) = self.world().send_value(to, req) {
                panic!("tutti::rmi: cannot send to location {dest}: {e}");
            }
            return corr;
        }
        // Across ranks the question rides the run of frames being built for
        // `dest`, as statements do (`Rmi::statement`): it goes when the run
        // is full, or when this location is about to receive, wait or poll —
        // so a scope waiting for its work has sent it (`Scope::join` flushes).
        let corr = self.conv().pending().open(to);
        let ends = self.conv().ends(to);
        let (cap, n) = (self.aggregation(), self.count());
        let written: Result<Option<Open>, CodecError> = self.with_state(|st| {
            let (frames, count) = st.wire_run(dest, n);
            let mark = frames.mark();
            let wrote = (|| {
                if let Some(c) = &chain {
                    frames.control(ends, CHAIN, 0, &c.links())?;
                }
                frames.control(ends, SCOPED, 0, &tag)?;
                frames.ask(ends, u64::from(object), M::ID, corr, &msg)
            })();
            if let Err(e) = wrote {
                frames.rewind(mark);
                return Err(e);
            }
            *count += 1;
            let full = *count >= cap || frames.len() >= WIRE_BYTES;
            Ok(if full { st.out[dest].take() } else { None })
        });
        match written {
            Ok(full @ Some(_)) => self.send_open(dest, full, true),
            Ok(None) => {}
            Err(e) => {
                self.conv().pending().forget(corr);
                panic!(
                    "tutti::rmi: `{}` for location {dest} cannot be serialized: {e}",
                    M::NAME
                )
            }
        }
        corr
    }

    /// Whether the scope of `tag` was cancelled; for work from another rank,
    /// after taking the notices that have arrived.
    pub(in crate::rmi) fn scope_cancelled(&self, tag: ScopeTag) -> bool {
        if tag.owner as usize / self.inner.per_rank != self.inner.rank {
            while let Some(d) = self.world().try_recv_matching(Match::any().tag(NOTICE_TAG)) {
                self.notice(d);
            }
        }
        is_cancelled(tag)
    }

    /// Takes a cancellation notice (or the end of one) from another rank.
    /// One that does not decode is reported and dropped: at worst, work of
    /// that scope runs although it was cancelled.
    pub(in crate::rmi) fn notice(&self, mut d: Delivery<'_>) {
        match d.typed::<Notice>() {
            Ok(Notice { tag, forget: false }) => cancel_here(tag),
            Ok(Notice { tag, forget: true }) => forget_here(tag),
            Err(e) => eprintln!(
                "tutti::rmi: location {} (rank {}) rejected a scope notice from {}: {e}",
                self.id(),
                self.inner.rank,
                self.conv().link().name(d.from())
            ),
        }
    }

    /// Answers admitted scoped work of a cancelled scope without running it:
    /// undoes its admission and answers it as cancelled. Returns whether
    /// requests are deferred.
    pub(in crate::rmi) fn skip_cancelled(&self, from: LocationId, a: Admitted) -> bool {
        let Admitted {
            object,
            corr,
            call,
            rep,
        } = a;
        let deferred = self.with_state(|st| {
            st.stack.pop();
            st.objects[object as usize].entry = Entry::Here(rep);
            !st.deferred.is_empty()
        });
        let depth = self.inner.depth.load(Ordering::Relaxed);
        self.inner.depth.store(depth - 1, Ordering::Relaxed);
        if corr != 0 {
            self.answer(from, corr, call.cancelled());
        }
        deferred
    }
}
