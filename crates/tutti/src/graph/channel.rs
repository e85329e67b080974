//! The ends of a channel: bounded FIFO rings within a location, credits and
//! world messages between locations.
//!
//! # Within a location
//!
//! A channel is a lock-free bounded queue of capacity `n` (crossbeam's
//! `ArrayQueue`) plus two flags, `producer_done` and `consumer_done`, and the
//! wake cells of its two actors. A push notifies the consumer's cell (one swap
//! on the actor's signal word, see `sync/signal.rs`); a pop notifies the
//! producer only if it saw the ring full and asked (`RoomFlag`). A producer that terminates sets `producer_done`
//! (`Release`, after its last push); a consumer reads it (`Acquire`) *before*
//! looking at the queue, so "done and empty" means no token will ever come.
//!
//! # Between locations (two-sided, credit-based)
//!
//! The producer owns `credits`, initially the capacity. Each token costs one
//! credit and travels as one world message to the consumer's location (typed,
//! boxed, between locations of one rank; encoded by the `msg` codec between
//! ranks). The consumer's router pushes it into the consumer's ring — there is
//! always room, because at most `n` credits exist — and each token the consumer
//! takes sends one credit back. So a full channel holds its producer back
//! across ranks (backpressure) without any blocking call. Termination travels
//! as `Close` (producer done) and `Gone` (consumer done) messages.
//!
//! One-sided channels (`onesided.rs`) put a token's bytes into the consumer's
//! window and send a `PUT` signal instead of the token; credits, `Close` and
//! `Gone` are as above.
//!
//! Wire form between ranks: `[kind: u8][channel: u32 LE][payload]`; a `PUT`
//! signal's payload is `[slot: u32 LE][length: u32 LE]`.

use crate::loom::{fence, AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::any::Any;
use std::sync::Arc;

use crossbeam_queue::ArrayQueue;

use super::onesided::Target;
use super::port::Token;
use crate::sync::Signal;
use crate::world::{Location, LocationId};

/// The kinds of world message a graph run exchanges.
pub(crate) const DATA: u8 = 0;
pub(crate) const CREDIT: u8 = 1;
pub(crate) const CLOSE: u8 = 2;
pub(crate) const GONE: u8 = 3;
/// A token was put into a slot of the consumer's window (`onesided.rs`).
pub(crate) const PUT: u8 = 4;

/// A graph message between two locations of one rank (moves as a typed value).
pub(crate) struct Carry {
    pub(crate) channel: u32,
    pub(crate) kind: u8,
    pub(crate) credits: u32,
    pub(crate) value: Option<Box<dyn Any + Send>>,
}

/// What a location's actors share: how many of them are not parked, and the
/// router's signal, notified when that count drops to zero.
pub(crate) struct Activity {
    pub(crate) active: AtomicUsize,
    pub(crate) router: Signal,
    /// Tokens that reached a consumer that had already terminated.
    pub(crate) discarded: AtomicU64,
    /// Tokens put one-sided from here.
    pub(crate) puts: AtomicU64,
    /// Tokens of one-sided channels that did not fit a slot (sent two-sided).
    pub(crate) oversize: AtomicU64,
}

impl Activity {
    pub(crate) fn new(actors: usize) -> Activity {
        Activity {
            active: AtomicUsize::new(actors),
            router: Signal::new(),
            discarded: AtomicU64::new(0),
            puts: AtomicU64::new(0),
            oversize: AtomicU64::new(0),
        }
    }

    /// An actor parked (after its signal recorded the park).
    pub(crate) fn parked(&self) {
        // AcqRel: the router that reads 0 sees everything the actors did.
        if self.active.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.router.notify();
        }
    }

    pub(crate) fn is_idle(&self) -> bool {
        self.active.load(Ordering::Acquire) == 0
    }
}

/// Whether one port of an actor is ready under Pond's firing rule: an input
/// holds a token or has ended, an output has room or its consumer ended.
pub(crate) trait Probe: Send + Sync {
    fn ready(&self) -> bool;
}

/// The wake cell of one actor.
///
/// # The firing rule in the notifier
///
/// An actor with [`Firing::AllReady`](super::Firing::AllReady) has a *gate*:
/// the probes of its connected ports. A notify then wakes it only if every
/// probe reads ready, so a patch with four inputs is woken once per step,
/// not once per arriving halo. No wake-up is lost: ports become ready only
/// through notifies (a push, a close, a pop the producer asked about, a
/// credit), and each notifier makes its port ready, then runs a `SeqCst`
/// fence, then reads every probe. Of two notifiers making two ports ready,
/// at least one sees the other's port ready (the fences order them), so the
/// notify that makes the last port ready sees all of them ready. The actor
/// itself only makes ports less ready (it takes and sends), and it checks the
/// rule before it parks. Modelled in `loom_tests::a_gated_notify_is_never_lost`.
pub(crate) struct Cell {
    pub(crate) signal: Signal,
    activity: Arc<Activity>,
    gate: std::sync::OnceLock<Box<[Arc<dyn Probe>]>>,
}

impl Cell {
    pub(crate) fn new(activity: Arc<Activity>) -> Cell {
        Cell {
            signal: Signal::new(),
            activity,
            gate: std::sync::OnceLock::new(),
        }
    }

    /// Sets the actor's gate (before its task and its neighbours start).
    pub(crate) fn set_gate(&self, probes: Vec<Arc<dyn Probe>>) {
        let _ = self.gate.set(probes.into_boxed_slice());
    }

    /// A port of this actor changed: run its `act()` (again) — if it has a
    /// gate, only when every port is ready (see the type's docs).
    #[inline]
    pub(crate) fn notify(&self) {
        if let Some(gate) = self.gate.get() {
            fence(Ordering::SeqCst);
            if !gate.iter().all(|p| p.ready()) {
                return;
            }
        }
        self.notify_always();
    }

    /// Wakes the actor whatever its ports (the end of a run).
    #[inline]
    pub(crate) fn notify_always(&self) {
        // Counted active before it is woken, so the location is never seen
        // idle while a wake-up is on its way.
        self.signal.notify_then(|| {
            self.activity.active.fetch_add(1, Ordering::AcqRel);
        });
    }
}

/// An input's probe.
struct InSide<T>(Arc<Chan<T>>);

impl<T: Send> Probe for InSide<T> {
    fn ready(&self) -> bool {
        !self.0.q.is_empty() || self.0.producer_done.load(Ordering::Acquire)
    }
}

/// A local output's probe.
struct OutSide<T>(Arc<Chan<T>>);

impl<T: Send> Probe for OutSide<T> {
    fn ready(&self) -> bool {
        !self.0.q.is_full() || self.0.consumer_done.load(Ordering::Acquire)
    }
}

impl Probe for RemoteOut {
    fn ready(&self) -> bool {
        self.credits.load(Ordering::Acquire) > 0 || self.gone.load(Ordering::Acquire)
    }
}

/// A channel's ring and flags (see the module docs).
pub(crate) struct Chan<T> {
    q: ArrayQueue<T>,
    producer_done: AtomicBool,
    consumer_done: AtomicBool,
    /// Set by a producer that saw the ring full; the consumer notifies it
    /// after a pop only then.
    wants_room: RoomFlag,
    /// `None` when the producer is the router (a channel from another location).
    producer: Option<Arc<Cell>>,
    consumer: Arc<Cell>,
}

impl<T> Chan<T> {
    pub(crate) fn new(capacity: usize, producer: Option<Arc<Cell>>, consumer: Arc<Cell>) -> Self {
        Chan {
            q: ArrayQueue::new(capacity),
            producer_done: AtomicBool::new(false),
            consumer_done: AtomicBool::new(false),
            wants_room: RoomFlag::new(),
            producer,
            consumer,
        }
    }
}

/// The producer's request to hear about room (see `arm` and `took`).
///
/// A store-buffering pair: the producer stores the flag and then looks at the
/// ring; the consumer changes the ring and then looks at the flag; a `SeqCst`
/// fence between the two steps on each side means at least one of them sees
/// the other's step — the producer sees the room, or the consumer sees the
/// flag and notifies. So a producer never waits for room that freed
/// unnoticed, and a consumer notifies its producer only when it asked (a
/// notify per token would wake the producer for nothing most of the time).
pub(crate) struct RoomFlag {
    wants: AtomicBool,
}

impl RoomFlag {
    pub(crate) fn new() -> RoomFlag {
        RoomFlag {
            wants: AtomicBool::new(false),
        }
    }

    /// The producer saw the ring full: asks to be notified when a slot
    /// frees; returns `still_full()` as seen after asking.
    pub(crate) fn arm(&self, still_full: impl FnOnce() -> bool) -> bool {
        self.wants.store(true, Ordering::Relaxed);
        fence(Ordering::SeqCst);
        still_full()
    }

    /// The consumer took a token: runs `notify` if the producer asked.
    #[inline]
    pub(crate) fn took(&self, notify: impl FnOnce()) {
        fence(Ordering::SeqCst);
        if self.wants.load(Ordering::Relaxed) && self.wants.swap(false, Ordering::Relaxed) {
            notify();
        }
    }
}

impl<T> Chan<T> {
    fn arm_full(&self) -> bool {
        self.wants_room.arm(|| self.q.is_full())
    }

    #[inline]
    fn took(&self) {
        self.wants_room.took(|| {
            if let Some(p) = &self.producer {
                p.notify();
            }
        });
    }
}

/// Where a taken token's credit goes, for a channel from another location.
struct CreditTo {
    to: LocationId,
    channel: u32,
    same_rank: bool,
}

/// The consuming end, held by the consumer's port slot.
pub(crate) struct InEnd<T> {
    chan: Arc<Chan<T>>,
    credit: Option<CreditTo>,
}

/// Type-erased operations the runner needs on an input.
pub(crate) trait ErasedIn: Send {
    /// A token is waiting, or none ever will (the producer ended).
    fn ready(&self) -> bool;
    /// Tokens waiting.
    fn len(&self) -> usize;
    /// The consumer terminated: refuse further tokens; returns those discarded.
    fn close(&mut self, loc: &Location) -> u64;
    /// This input's probe, for its consumer's gate.
    fn probe(&self) -> Arc<dyn Probe>;
    fn as_any(&mut self) -> &mut dyn Any;
}

impl<T: Token> InEnd<T> {
    /// Takes a token; sets `away` if that sent a credit to another location
    /// (the location is then flushed after `act()`).
    #[inline]
    pub(crate) fn recv(&mut self, loc: &Location, away: &mut bool) -> Option<T> {
        let v = self.chan.q.pop()?;
        match &self.credit {
            None => self.chan.took(),
            Some(c) => {
                send_control(loc, c.to, c.channel, c.same_rank, CREDIT, 1);
                *away = true;
            }
        }
        Some(v)
    }

    pub(crate) fn is_ended(&self) -> bool {
        // Done first (Acquire, after the producer's last push), then empty.
        self.chan.producer_done.load(Ordering::Acquire) && self.chan.q.is_empty()
    }
}

impl<T: Token> ErasedIn for InEnd<T> {
    fn ready(&self) -> bool {
        !self.chan.q.is_empty() || self.chan.producer_done.load(Ordering::Acquire)
    }

    fn len(&self) -> usize {
        self.chan.q.len()
    }

    fn close(&mut self, loc: &Location) -> u64 {
        self.chan.consumer_done.store(true, Ordering::Release);
        let mut dropped = 0;
        while self.chan.q.pop().is_some() {
            dropped += 1;
        }
        match &self.credit {
            None => {
                if let Some(p) = &self.chan.producer {
                    p.notify();
                }
            }
            Some(c) => send_control(loc, c.to, c.channel, c.same_rank, GONE, 0),
        }
        dropped
    }

    fn probe(&self) -> Arc<dyn Probe> {
        Arc::new(InSide(Arc::clone(&self.chan)))
    }

    fn as_any(&mut self) -> &mut dyn Any {
        self
    }
}

/// The producer's side of a channel to another location.
pub(crate) struct RemoteOut {
    credits: AtomicUsize,
    gone: AtomicBool,
    producer: Arc<Cell>,
}

impl RemoteOut {
    pub(crate) fn new(capacity: usize, producer: Arc<Cell>) -> RemoteOut {
        RemoteOut {
            credits: AtomicUsize::new(capacity),
            gone: AtomicBool::new(false),
            producer,
        }
    }

    fn activity(&self) -> &Activity {
        &self.producer.activity
    }

    /// The router received `n` credits.
    pub(crate) fn credit(&self, n: usize) {
        self.credits.fetch_add(n, Ordering::Release);
        self.producer.notify();
    }

    /// The router heard that the consumer terminated.
    pub(crate) fn gone(&self) {
        self.gone.store(true, Ordering::Release);
        self.producer.notify();
    }
}

/// The producing end, held by the producer's port slot.
pub(crate) enum OutEnd<T> {
    Local(Arc<Chan<T>>),
    Remote {
        out: Arc<RemoteOut>,
        to: LocationId,
        channel: u32,
        same_rank: bool,
        scratch: Vec<u8>,
        /// The consumer's window, for a one-sided channel across ranks.
        target: Option<Target>,
    },
}

/// Type-erased operations the runner needs on an output.
pub(crate) trait ErasedOut: Send {
    /// There is room for a token, or the consumer is gone (a send fails at once).
    fn ready(&self) -> bool;
    /// The producer terminated.
    fn close(&mut self, loc: &Location);
    /// This output's probe, for its producer's gate.
    fn probe(&self) -> Arc<dyn Probe>;
    fn as_any(&mut self) -> &mut dyn Any;
}

/// Why a token was not sent (the token handed back).
pub(crate) enum Refused<T> {
    Full(T),
    Closed(T),
}

impl<T: Token> OutEnd<T> {
    /// Sends `v`; `Ok(true)` if it went to another location (the location
    /// should be flushed after `act()`).
    #[inline]
    pub(crate) fn send(&mut self, loc: &Location, v: T) -> Result<bool, Refused<T>> {
        match self {
            OutEnd::Local(chan) => {
                if chan.consumer_done.load(Ordering::Acquire) {
                    return Err(Refused::Closed(v));
                }
                match chan.q.push(v) {
                    Ok(()) => {
                        chan.consumer.notify();
                        Ok(false)
                    }
                    Err(v) => {
                        if chan.arm_full() {
                            return Err(Refused::Full(v));
                        }
                        // A slot freed meanwhile (only this producer pushes).
                        match chan.q.push(v) {
                            Ok(()) => {
                                chan.consumer.notify();
                                Ok(false)
                            }
                            Err(v) => Err(Refused::Full(v)),
                        }
                    }
                }
            }
            OutEnd::Remote {
                out,
                to,
                channel,
                same_rank,
                scratch,
                target,
            } => {
                if out.gone.load(Ordering::Acquire) {
                    return Err(Refused::Closed(v));
                }
                // Only this producer takes credits (the router only adds).
                if out.credits.load(Ordering::Acquire) == 0 {
                    return Err(Refused::Full(v));
                }
                out.credits.fetch_sub(1, Ordering::Relaxed);
                if *same_rank {
                    let carry = Carry {
                        channel: *channel,
                        kind: DATA,
                        credits: 0,
                        value: Some(Box::new(v)),
                    };
                    if loc.send(*to, carry).is_err() {
                        loc.world()
                            .abort("tutti graph: a channel's location vanished");
                    }
                } else {
                    scratch.clear();
                    scratch.push(DATA);
                    scratch.extend_from_slice(&channel.to_le_bytes());
                    if let Err(e) = crate::msg::codec::encode(&v, scratch) {
                        loc.world().abort(&format!(
                            "tutti graph: a token of type {} cannot be encoded: {e}",
                            std::any::type_name::<T>()
                        ));
                    }
                    let sent = match target {
                        Some(t) if t.fits(scratch.len() - 5) => {
                            let len = (scratch.len() - 5) as u32;
                            let k = t.put(loc, scratch, 5);
                            let mut signal = [0u8; 13];
                            signal[0] = PUT;
                            signal[1..5].copy_from_slice(&channel.to_le_bytes());
                            signal[5..9].copy_from_slice(&k.to_le_bytes());
                            signal[9..13].copy_from_slice(&len.to_le_bytes());
                            out.activity().puts.fetch_add(1, Ordering::Relaxed);
                            loc.send_slice(*to, &signal)
                        }
                        Some(_) => {
                            out.activity().oversize.fetch_add(1, Ordering::Relaxed);
                            loc.send_slice(*to, scratch)
                        }
                        None => loc.send_slice(*to, scratch),
                    };
                    if sent.is_err() {
                        loc.world()
                            .abort("tutti graph: a channel's location vanished");
                    }
                }
                Ok(true)
            }
        }
    }

    /// Tokens that can be sent now.
    pub(crate) fn room(&self) -> usize {
        match self {
            OutEnd::Local(chan) => {
                let room = chan.q.capacity() - chan.q.len();
                if room == 0 && chan.arm_full() {
                    return 0;
                }
                chan.q.capacity() - chan.q.len()
            }
            OutEnd::Remote { out, .. } => out.credits.load(Ordering::Acquire),
        }
    }
}

impl<T: Token> ErasedOut for OutEnd<T> {
    fn ready(&self) -> bool {
        match self {
            OutEnd::Local(chan) => {
                !chan.q.is_full() || !chan.arm_full() || chan.consumer_done.load(Ordering::Acquire)
            }
            OutEnd::Remote { out, .. } => {
                out.credits.load(Ordering::Acquire) > 0 || out.gone.load(Ordering::Acquire)
            }
        }
    }

    fn close(&mut self, loc: &Location) {
        match self {
            OutEnd::Local(chan) => {
                chan.producer_done.store(true, Ordering::Release);
                chan.consumer.notify();
            }
            OutEnd::Remote {
                to,
                channel,
                same_rank,
                ..
            } => send_control(loc, *to, *channel, *same_rank, CLOSE, 0),
        }
    }

    fn probe(&self) -> Arc<dyn Probe> {
        match self {
            OutEnd::Local(chan) => Arc::new(OutSide(Arc::clone(chan))),
            OutEnd::Remote { out, .. } => Arc::clone(out) as Arc<dyn Probe>,
        }
    }

    fn as_any(&mut self) -> &mut dyn Any {
        self
    }
}

/// Sends a credit, close or gone message for `channel` to `to`.
pub(crate) fn send_control(
    loc: &Location,
    to: LocationId,
    channel: u32,
    same_rank: bool,
    kind: u8,
    credits: u32,
) {
    let ok = if same_rank {
        loc.send(
            to,
            Carry {
                channel,
                kind,
                credits,
                value: None,
            },
        )
        .is_ok()
    } else {
        let mut b = [0u8; 9];
        b[0] = kind;
        b[1..5].copy_from_slice(&channel.to_le_bytes());
        b[5..9].copy_from_slice(&credits.to_le_bytes());
        loc.send_slice(to, &b).is_ok()
    };
    if !ok {
        loc.world()
            .abort("tutti graph: a channel's location vanished");
    }
}

/// The router's side of a channel coming in from another location.
pub(crate) trait Inlet: Send + Sync {
    /// A token arrived as bytes (from another rank).
    fn bytes(&self, payload: &[u8]) -> Result<(), String>;
    /// A token arrived as a value (from a location of this rank).
    fn value(&self, v: Box<dyn Any + Send>) -> Result<(), String>;
    /// The producer terminated.
    fn close(&self);
}

pub(crate) struct TypedInlet<T> {
    chan: Arc<Chan<T>>,
    activity: Arc<Activity>,
}

impl<T: Token> TypedInlet<T> {
    fn push(&self, v: T) -> Result<(), String> {
        if self.chan.consumer_done.load(Ordering::Acquire) {
            self.activity.discarded.fetch_add(1, Ordering::Relaxed);
            return Ok(());
        }
        match self.chan.q.push(v) {
            Ok(()) => {
                self.chan.consumer.notify();
                Ok(())
            }
            Err(_) => Err("more tokens arrived than the channel gave credits for".into()),
        }
    }
}

impl<T: Token> Inlet for TypedInlet<T> {
    fn bytes(&self, payload: &[u8]) -> Result<(), String> {
        let v: T = crate::msg::codec::decode(payload).map_err(|e| {
            format!(
                "a token of type {} does not decode: {e}",
                std::any::type_name::<T>()
            )
        })?;
        self.push(v)
    }

    fn value(&self, v: Box<dyn Any + Send>) -> Result<(), String> {
        match v.downcast::<T>() {
            Ok(v) => self.push(*v),
            Err(_) => Err(format!(
                "a token is not of the channel's type {}",
                std::any::type_name::<T>()
            )),
        }
    }

    fn close(&self) {
        self.chan.producer_done.store(true, Ordering::Release);
        self.chan.consumer.notify();
    }
}

/// Makes the ends of a channel carrying `T` (kept type-erased by the builder).
pub(crate) trait Maker: Send + Sync {
    fn local(
        &self,
        capacity: usize,
        producer: Arc<Cell>,
        consumer: Arc<Cell>,
    ) -> (Box<dyn ErasedOut>, Box<dyn ErasedIn>);
    fn remote_out(
        &self,
        out: Arc<RemoteOut>,
        to: LocationId,
        channel: u32,
        same_rank: bool,
        target: Option<Target>,
    ) -> Box<dyn ErasedOut>;
    fn remote_in(
        &self,
        capacity: usize,
        consumer: Arc<Cell>,
        activity: Arc<Activity>,
        from: LocationId,
        channel: u32,
        same_rank: bool,
    ) -> (Box<dyn ErasedIn>, Box<dyn Inlet>);
}

pub(crate) struct TypedMaker<T>(std::marker::PhantomData<fn(T) -> T>);

impl<T> TypedMaker<T> {
    pub(crate) fn new() -> Self {
        TypedMaker(std::marker::PhantomData)
    }
}

impl<T: Token> Maker for TypedMaker<T> {
    fn local(
        &self,
        capacity: usize,
        producer: Arc<Cell>,
        consumer: Arc<Cell>,
    ) -> (Box<dyn ErasedOut>, Box<dyn ErasedIn>) {
        let chan = Arc::new(Chan::<T>::new(capacity, Some(producer), consumer));
        (
            Box::new(OutEnd::Local(Arc::clone(&chan))),
            Box::new(InEnd { chan, credit: None }),
        )
    }

    fn remote_out(
        &self,
        out: Arc<RemoteOut>,
        to: LocationId,
        channel: u32,
        same_rank: bool,
        target: Option<Target>,
    ) -> Box<dyn ErasedOut> {
        Box::new(OutEnd::<T>::Remote {
            out,
            to,
            channel,
            same_rank,
            scratch: Vec::new(),
            target,
        })
    }

    fn remote_in(
        &self,
        capacity: usize,
        consumer: Arc<Cell>,
        activity: Arc<Activity>,
        from: LocationId,
        channel: u32,
        same_rank: bool,
    ) -> (Box<dyn ErasedIn>, Box<dyn Inlet>) {
        let chan = Arc::new(Chan::<T>::new(capacity, None, consumer));
        (
            Box::new(InEnd {
                chan: Arc::clone(&chan),
                credit: Some(CreditTo {
                    to: from,
                    channel,
                    same_rank,
                }),
            }),
            Box::new(TypedInlet { chan, activity }),
        )
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    use std::future::poll_fn;
    use std::task::Poll;

    use std::sync::Arc;

    use super::{Activity, Cell};
    use crate::loom::{thread, AtomicBool, Ordering};
    use crate::sync::Wait;
    use crate::test_util::loom::block_on;

    /// A producer that finds the ring full and a consumer taking the last
    /// token: the producer either sees the room or is notified (a lost
    /// notification leaves it waiting for ever, which loom reports).
    #[test]
    fn room_is_never_missed() {
        use super::RoomFlag;
        use crate::loom::AtomicUsize;
        loom::model(|| {
            let activity = Arc::new(Activity::new(1));
            let cell = Arc::new(Cell::new(Arc::clone(&activity)));
            let flag = Arc::new(RoomFlag::new());
            let len = Arc::new(AtomicUsize::new(1)); // capacity 1, full
            let consumer = {
                let (cell, flag, len) = (Arc::clone(&cell), Arc::clone(&flag), Arc::clone(&len));
                thread::spawn(move || {
                    len.fetch_sub(1, Ordering::AcqRel);
                    flag.took(|| cell.notify());
                })
            };
            // The producer: full, so it asks, and waits until there is room.
            block_on(poll_fn(|cx| loop {
                if !flag.arm(|| len.load(Ordering::Acquire) == 1) {
                    return Poll::Ready(());
                }
                match cell.signal.poll_wait(cx) {
                    Wait::Notified => continue,
                    Wait::Parked | Wait::StillParked => return Poll::Pending,
                }
            }));
            consumer.join().unwrap();
        });
    }

    /// A probe over one loom flag (a port that became ready).
    struct Flag(Arc<AtomicBool>);

    impl super::Probe for Flag {
        fn ready(&self) -> bool {
            self.0.load(Ordering::Acquire)
        }
    }

    /// Pond's rule in the notifier: two ports made ready by two notifiers at
    /// once; the actor, parked until both are ready, is woken (a notify
    /// skipped by both gates would leave it parked for ever, which loom
    /// reports).
    #[test]
    fn a_gated_notify_is_never_lost() {
        loom::model(|| {
            let activity = Arc::new(Activity::new(1));
            let cell = Arc::new(Cell::new(Arc::clone(&activity)));
            let ports = [
                Arc::new(AtomicBool::new(false)),
                Arc::new(AtomicBool::new(false)),
            ];
            cell.set_gate(
                ports
                    .iter()
                    .map(|p| Arc::new(Flag(Arc::clone(p))) as Arc<dyn super::Probe>)
                    .collect(),
            );
            let notifiers: Vec<_> = ports
                .iter()
                .map(|p| {
                    let (cell, p) = (Arc::clone(&cell), Arc::clone(p));
                    thread::spawn(move || {
                        p.store(true, Ordering::Release);
                        cell.notify();
                    })
                })
                .collect();
            // The actor: runs when both are ready, else parks.
            block_on(poll_fn(|cx| loop {
                cell.signal.take();
                if ports.iter().all(|p| p.load(Ordering::Acquire)) {
                    return Poll::Ready(());
                }
                match cell.signal.poll_wait(cx) {
                    Wait::Notified => continue,
                    Wait::Parked | Wait::StillParked => return Poll::Pending,
                }
            }));
            for n in notifiers {
                n.join().unwrap();
            }
        });
    }

    /// The idle detection the end of a run rests on: once a notify of an actor
    /// has returned, its location is not seen idle until that actor has run
    /// (else the router could end a run with a token unhandled).
    #[test]
    fn idle_is_never_seen_before_a_notified_actor_ran() {
        loom::model(|| {
            let activity = Arc::new(Activity::new(1));
            let cell = Arc::new(Cell::new(Arc::clone(&activity)));
            let acted = Arc::new(AtomicBool::new(false));
            let actor = {
                let (activity, cell, acted) =
                    (Arc::clone(&activity), Arc::clone(&cell), Arc::clone(&acted));
                thread::spawn(move || {
                    // Active from the start; waits for one notification.
                    block_on(poll_fn(|cx| match cell.signal.poll_wait(cx) {
                        Wait::Notified => Poll::Ready(()),
                        Wait::Parked => {
                            activity.parked();
                            Poll::Pending
                        }
                        Wait::StillParked => Poll::Pending,
                    }));
                    acted.store(true, Ordering::Release);
                    activity.parked(); // terminates
                })
            };
            let notifier = {
                let cell = Arc::clone(&cell);
                thread::spawn(move || cell.notify())
            };
            notifier.join().unwrap();
            block_on(poll_fn(|cx| loop {
                if activity.is_idle() {
                    return Poll::Ready(());
                }
                match activity.router.poll_wait(cx) {
                    Wait::Notified => continue,
                    Wait::Parked | Wait::StillParked => return Poll::Pending,
                }
            }));
            assert!(
                acted.load(Ordering::Acquire),
                "idle before the notified actor ran"
            );
            actor.join().unwrap();
        });
    }
}
