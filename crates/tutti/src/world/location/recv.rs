//! Receiving at a location: the inbox holds parcels (one message, a batch of
//! local values, or a frame of another rank's messages); the location walks
//! the current parcel with a cursor and hands out one [`Delivery`] at a time,
//! only of phases it has reached (see the phases in [`crate::world`]'s
//! quiescence section). [`Recv`] waits for the next one.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use std::collections::VecDeque;

use super::Location;
use crate::loom::{lock, Ordering};
use crate::world::delivery::{Content, Delivery};
use crate::world::frame::{next_entry, HEADER};
use crate::world::inbox::{Parcel, Payload};
use crate::world::tag::Match;
use crate::world::LocationId;

/// Where the location is in consuming its inbox's current parcel.
pub(super) enum Cursor {
    Idle,
    One(LocationId, Payload),
    Batch(LocationId, std::vec::IntoIter<Payload>),
    Frame {
        from: LocationId,
        head: Arc<[u8]>,
        pos: usize,
        left: u32,
        body: Option<Vec<u8>>,
    },
}

impl Cursor {
    fn of(p: Parcel) -> Cursor {
        match p {
            Parcel::One { from, payload, .. } => Cursor::One(from, payload),
            Parcel::Batch { from, items, .. } => Cursor::Batch(from, items.into_iter()),
            Parcel::Frame {
                from,
                head,
                inline,
                body,
                ..
            } => Cursor::Frame {
                from,
                head,
                pos: HEADER,
                left: inline,
                body,
            },
        }
    }
}

/// A message out of its parcel, its tag taken off, not yet handed out.
pub(super) struct Held {
    from: LocationId,
    phase: u64,
    tag: Option<u64>,
    content: Content,
    /// Counted as handled already: a service's receive passed over it (see
    /// [`Claim`]); its delivery does not count it again.
    counted: bool,
}

/// Which messages a service of the library that serves on a location (RMI)
/// takes: its own traffic, told by its tag and content. Its receives
/// ([`Location::try_recv_claimed`], [`Location::recv_claimed`],
/// [`Location::recv_until_quiet_claimed`]) hand out only the messages it
/// claims; every other message stays held, in arrival order, for the
/// program's own receives — counted as handled at once (it has been delivered
/// to the location; the service's fence must not wait for the program to
/// receive it), so the program's later delivery of it counts nothing.
pub(crate) type Claim = fn(Option<u64>, &Content) -> bool;

/// Which senders a receive takes messages from ([`Location::recv_from`]):
/// a message from any other sender stays queued, in arrival order, for the
/// location's later receives.
pub(crate) type Senders<'a> = &'a (dyn Fn(LocationId) -> bool + Sync);

/// What a receive takes: what a [`Match`] matches, what a [`Claim`] claims,
/// or what comes from the [`Senders`] it takes.
#[derive(Clone, Copy)]
pub(super) enum Filter<'a> {
    Match(Match),
    Claim(Claim),
    From(Senders<'a>),
}

/// The parcel a location is consuming, the phase it was sent in, and the
/// messages a matching receive passed over.
pub(crate) struct Current {
    pub(super) cursor: Cursor,
    pub(super) phase: u64,
    /// Messages taken out of the inbox by a matching receive
    /// ([`Location::recv_matching`]) that did not match, in arrival order:
    /// they come before anything still in the cursor or the inbox.
    pub(super) held: VecDeque<Held>,
}

impl Current {
    /// Whether a message a `claim`'s receive could take waits here (held and
    /// not passed over, or in the current parcel).
    pub(super) fn has_claimable(&self) -> bool {
        self.held.iter().any(|h| !h.counted) || !matches!(self.cursor, Cursor::Idle)
    }

    pub(crate) fn new() -> Current {
        Current {
            cursor: Cursor::Idle,
            phase: 0,
            held: VecDeque::new(),
        }
    }

    pub(super) fn set(&mut self, p: Parcel) {
        self.phase = p.phase();
        self.cursor = Cursor::of(p);
    }

    /// Whether a message waits here (held, or in the current parcel).
    pub(super) fn has_message(&self) -> bool {
        !self.held.is_empty() || !matches!(self.cursor, Cursor::Idle)
    }
}

impl Location {
    /// Whether a message waits in this location's inbox.
    pub(crate) fn has_arrived(&self) -> bool {
        !self.slot().inbox.is_empty()
    }

    /// The next message, if one has arrived (no flush, no waiting).
    pub fn try_recv(&self) -> Option<Delivery<'_>> {
        self.next(u64::MAX)
    }

    /// The next message sent in a phase up to `phase`, if one has arrived; a
    /// later phase's parcel stays where it is.
    pub(super) fn next(&self, phase: u64) -> Option<Delivery<'_>> {
        let mut cur = lock(&self.slot().cursor);
        let held = match cur.held.front() {
            Some(h) if h.phase > phase => return None,
            Some(_) => cur.held.pop_front(),
            None => self.next_held(&mut cur, phase),
        };
        drop(cur);
        held.map(|h| self.hand_out(h))
    }

    /// The next message that `m` matches, if one has arrived (no flush, no
    /// waiting); the messages before it that do not match stay queued, in
    /// their order, for later receives.
    ///
    /// ```
    /// use tutti::world::{Match, World};
    /// let world = World::builder().locations(1).workers(1).build().unwrap();
    /// let loc = world.location(0).unwrap();
    /// loc.send_tagged(loc.id(), 1, "first").unwrap();
    /// loc.send_tagged(loc.id(), 2, "second").unwrap();
    /// let mut d = loc.try_recv_matching(Match::any().tag(2)).unwrap();
    /// assert_eq!(d.take::<&str>().unwrap(), "second");
    /// assert!(loc.try_recv_matching(Match::any().tag(2)).is_none());
    /// assert_eq!(loc.try_recv().unwrap().tag(), Some(1));
    /// ```
    pub fn try_recv_matching(&self, m: Match) -> Option<Delivery<'_>> {
        self.take_first(|h| m.matches(h.from, h.tag))
    }

    /// The next message from a sender that `take` takes, if one has arrived
    /// (no flush, no waiting); the messages before it from other senders stay
    /// queued, in their order, for later receives.
    pub(crate) fn try_recv_from(&self, take: Senders<'_>) -> Option<Delivery<'_>> {
        self.take_first(|h| take(h.from))
    }

    /// The first message `wanted` wants, held or newly arrived; the ones
    /// before it that it does not want are held, in arrival order.
    fn take_first(&self, wanted: impl Fn(&Held) -> bool) -> Option<Delivery<'_>> {
        let mut cur = lock(&self.slot().cursor);
        let found = match cur.held.iter().position(&wanted) {
            Some(i) => cur.held.remove(i),
            None => loop {
                let h = self.next_held(&mut cur, u64::MAX)?;
                if wanted(&h) {
                    break Some(h);
                }
                cur.held.push_back(h);
            },
        };
        drop(cur);
        found.map(|h| self.hand_out(h))
    }

    /// The next message `claim` claims that was sent in a phase up to
    /// `phase`, if one has arrived; the messages before it that it does not
    /// claim are held for the program, counted as handled (see [`Claim`]). A
    /// message of a later phase stops the search, as in [`next`](Self::next).
    pub(super) fn next_claimed(&self, phase: u64, claim: Claim) -> Option<Delivery<'_>> {
        let handled = &self.slot().handled;
        let mut cur = lock(&self.slot().cursor);
        let mut found = None;
        for (i, h) in cur.held.iter_mut().enumerate() {
            if h.counted {
                continue;
            }
            if h.phase > phase {
                return None;
            }
            if claim(h.tag, &h.content) {
                found = Some(i);
                break;
            }
            h.counted = true;
            handled.fetch_add(1, Ordering::Release);
        }
        let found = match found {
            Some(i) => cur.held.remove(i),
            None => loop {
                let mut h = self.next_held(&mut cur, phase)?;
                if claim(h.tag, &h.content) {
                    break Some(h);
                }
                h.counted = true;
                // Release, as a delivery's drop: the wave that reads this
                // count with Acquire sees what the location sent before.
                handled.fetch_add(1, Ordering::Release);
                cur.held.push_back(h);
            },
        };
        drop(cur);
        found.map(|h| self.hand_out(h))
    }

    /// The next message `claim` claims, if one has arrived (no flush, no
    /// waiting); what it does not claim stays for the program (see [`Claim`]).
    pub(crate) fn try_recv_claimed(&self, claim: Claim) -> Option<Delivery<'_>> {
        self.next_claimed(u64::MAX, claim)
    }

    /// Receives the next message `claim` claims, waiting (without holding a
    /// worker) until one arrives; what it does not claim stays for the program
    /// (see [`Claim`]). Otherwise as [`recv`](Self::recv).
    pub(crate) fn recv_claimed(&self, claim: Claim) -> RecvMatching<'_> {
        RecvMatching {
            loc: self,
            filter: Filter::Claim(claim),
        }
    }

    fn try_take(&self, f: Filter<'_>) -> Option<Delivery<'_>> {
        match f {
            Filter::Match(m) => self.try_recv_matching(m),
            Filter::Claim(c) => self.try_recv_claimed(c),
            Filter::From(take) => self.try_recv_from(take),
        }
    }

    fn hand_out(&self, h: Held) -> Delivery<'_> {
        if crate::diag::trace::on() {
            if let Some(pairs) = &self.slot().trace {
                pairs.got(h.from.index() as u32, self.id().index() as u32);
            }
        }
        Delivery::new(
            h.from,
            h.tag,
            h.content,
            (!h.counted).then_some(&self.slot().handled),
            &self.shared().local.pool,
        )
    }

    /// The next message of the current parcel or the inbox (not the held
    /// ones) sent in a phase up to `phase`.
    fn next_held(&self, cur: &mut Current, phase: u64) -> Option<Held> {
        loop {
            if cur.phase > phase && !matches!(cur.cursor, Cursor::Idle) {
                return None;
            }
            let held = |from, content| {
                let (tag, content) = crate::world::tag::untag(content);
                Some(Held {
                    from,
                    phase: cur.phase,
                    tag,
                    content,
                    counted: false,
                })
            };
            match std::mem::replace(&mut cur.cursor, Cursor::Idle) {
                Cursor::Idle => cur.set(self.slot().inbox.pop()?),
                Cursor::One(from, p) => return held(from, content_of(p)),
                Cursor::Batch(from, mut items) => {
                    if let Some(p) = items.next() {
                        cur.cursor = Cursor::Batch(from, items);
                        return held(from, content_of(p));
                    }
                }
                Cursor::Frame {
                    from,
                    head,
                    mut pos,
                    left,
                    mut body,
                } => {
                    if left > 0 {
                        let Some(r) = next_entry(&head, &mut pos) else {
                            self.shared()
                                .local
                                .fail_invariant("a validated frame ran out of messages");
                        };
                        let content = Content::Shared(Arc::clone(&head), r);
                        let h = held(from, content);
                        cur.cursor = Cursor::Frame {
                            from,
                            head,
                            pos,
                            left: left - 1,
                            body,
                        };
                        return h;
                    }
                    if let Some(b) = body.take() {
                        return held(from, Content::Bytes(b));
                    }
                }
            }
        }
    }

    /// Receives the next message, waiting (without holding a worker) until one
    /// arrives. Flushes this location's buffers first: a location that waits has
    /// nothing buffered.
    ///
    /// # Panics
    /// When the world finds that no message can ever come: every location of
    /// every live rank waits, and a rank that could have sent one died (killed
    /// or crashed). The panic names the dead rank; with several ranks it takes
    /// the job down, as any location's panic.
    pub fn recv(&self) -> Recv<'_> {
        Recv { loc: self }
    }

    /// [`recv`](Self::recv) for plain threads (on a worker, outside an async
    /// task, the worker keeps executing other work meanwhile).
    ///
    /// # Panics
    /// Inside an async task (use `recv().await`); and, as `recv`, when the
    /// world finds that no message can ever come (every location of every
    /// live rank waits, and a rank that could have sent one died).
    pub fn recv_blocking(&self) -> Delivery<'_> {
        crate::runtime::block_on(self.recv())
    }

    /// Receives the next message that `m` matches (from a given source, with
    /// a given tag, or both: MPI's `source`/`tag` matching), waiting as
    /// [`recv`](Self::recv) does. The messages that arrive before it and do
    /// not match stay queued, in arrival order, for the next receives, so
    /// none is lost and the messages of one sender with one tag arrive in the
    /// order they were sent.
    ///
    /// ```
    /// use tutti::world::{LocationId, Match, World};
    /// let world = World::builder().locations(3).workers(2).build().unwrap();
    /// let got = world.run(|loc| async move {
    ///     let me = loc.id().index();
    ///     if me > 0 {
    ///         loc.send_tagged(LocationId::new(0), me as u64, me * 100).unwrap();
    ///         return Vec::new();
    ///     }
    ///     // Location 2's message first, whenever it comes; then location 1's.
    ///     let mut out = Vec::new();
    ///     for from in [2, 1] {
    ///         let mut d = loc.recv_matching(Match::any().source(LocationId::new(from))).await;
    ///         out.push((d.tag(), d.typed::<usize>().unwrap()));
    ///     }
    ///     out
    /// });
    /// assert_eq!(got[0], [(Some(2), 200), (Some(1), 100)]);
    /// ```
    ///
    /// # Panics
    /// As [`recv`](Self::recv), when the world finds that no message can ever
    /// come.
    pub fn recv_matching(&self, m: Match) -> RecvMatching<'_> {
        RecvMatching {
            loc: self,
            filter: Filter::Match(m),
        }
    }

    /// [`recv_matching`](Self::recv_matching) for plain threads (on a worker,
    /// outside an async task, the worker keeps executing other work meanwhile).
    ///
    /// # Panics
    /// Inside an async task (use `recv_matching(m).await`); and, as `recv`,
    /// when the world finds that no message can ever come.
    pub fn recv_matching_blocking(&self, m: Match) -> Delivery<'_> {
        crate::runtime::block_on(self.recv_matching(m))
    }

    /// Receives the next message from a sender that `take` takes, waiting as
    /// [`recv`](Self::recv) does; the messages of other senders stay queued,
    /// in arrival order, for the location's later receives. (An actor node
    /// receives so: what the node of another location sends after its own
    /// node has finished with this one is for this location's next node.)
    pub(crate) fn recv_from<'a>(&'a self, take: Senders<'a>) -> RecvMatching<'a> {
        RecvMatching {
            loc: self,
            filter: Filter::From(take),
        }
    }

    fn poll_recv(&self, f: Filter<'_>, cx: &mut Context<'_>) -> Poll<Delivery<'_>> {
        if let Some(d) = self.try_take(f) {
            return Poll::Ready(d);
        }
        self.flush();
        if self.spin_until(|| !self.slot().inbox.is_empty()) {
            if let Some(d) = self.try_take(f) {
                return Poll::Ready(d);
            }
        }
        // Register, then look at what arrived meanwhile, until the inbox is
        // empty with the waker in place (a parcel that does not match is
        // held, and the next one looked at).
        while let Some(p) = self.slot().inbox.pop_or_register(cx.waker()) {
            // `try_recv_matching` found nothing, so it left the cursor idle.
            lock(&self.slot().cursor).set(p);
            if let Some(d) = self.try_take(f) {
                return Poll::Ready(d);
            }
        }
        let what = if matches!(f, Filter::Match(m) if m == Match::any()) {
            "waits to receive a message (`Location::recv`)"
        } else {
            "waits to receive a matching message (`Location::recv_matching`)"
        };
        if let Some(d) = crate::diag::node::take_failure() {
            // The cross-rank stall check found that nothing can come (a rank
            // that could send died): the location ends with its report.
            panic!(
                "tutti::world: location {} cannot finish: it {what} that can never come\n{d}",
                self.id().index()
            );
        }
        crate::diag::node::note(
            || crate::diag::node::Wait {
                on: crate::diag::node::On::Unknown,
                what: crate::diag::node::What::Text(what),
            },
            Some(cx.waker()),
        );
        Poll::Pending
    }
}

/// Future of [`Location::recv_matching`] (and of the runtime's own receives
/// of what it claimed, `recv_claimed`, and from chosen senders, `recv_from`).
#[must_use = "futures do nothing unless polled"]
pub struct RecvMatching<'a> {
    loc: &'a Location,
    filter: Filter<'a>,
}

impl std::fmt::Debug for RecvMatching<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut d = f.debug_struct("RecvMatching");
        d.field("loc", &self.loc);
        match self.filter {
            Filter::Match(m) => d.field("matching", &m),
            Filter::Claim(c) => d.field("claimed", &c),
            Filter::From(_) => d.field("from", &"chosen senders"),
        };
        d.finish()
    }
}

impl<'a> Future for RecvMatching<'a> {
    type Output = Delivery<'a>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Delivery<'a>> {
        let loc: &'a Location = self.loc;
        loc.poll_recv(self.filter, cx)
    }
}

/// Future of [`Location::recv`].
#[must_use = "futures do nothing unless polled"]
#[derive(Debug)]
pub struct Recv<'a> {
    loc: &'a Location,
}

impl<'a> Future for Recv<'a> {
    type Output = Delivery<'a>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Delivery<'a>> {
        let loc: &'a Location = self.loc;
        loc.poll_recv(Filter::Match(Match::any()), cx)
    }
}

/// A message's content as a delivery holds it.
fn content_of(p: Payload) -> Content {
    match p {
        Payload::Value(v, name) => Content::Value(v, name),
        Payload::Bytes(b) => Content::Bytes(b),
    }
}
