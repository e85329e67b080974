//! Receiving at a location: the inbox holds parcels (one message, a batch of
//! local values, or a frame of another rank's messages); the location walks
//! the current parcel with a cursor and hands out one [`Delivery`] at a time,
//! only of phases it has reached (see the phases in [`crate::world`]'s
//! quiescence section). [`Recv`] waits for the next one.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use super::Location;
use crate::loom::lock;
use crate::world::delivery::{Content, Delivery};
use crate::world::frame::{next_entry, HEADER};
use crate::world::inbox::{Parcel, Payload};
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

/// The parcel a location is consuming, and the phase it was sent in.
pub(super) struct Current {
    pub(super) cursor: Cursor,
    pub(super) phase: u64,
}

impl Current {
    pub(super) fn set(&mut self, p: Parcel) {
        self.phase = p.phase();
        self.cursor = Cursor::of(p);
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
        let d = self.next_parcel(phase);
        if crate::diag::trace::on() {
            if let (Some(d), Some(pairs)) = (&d, &self.slot().trace) {
                pairs.got(d.from().index() as u32, self.id().index() as u32);
            }
        }
        d
    }

    fn next_parcel(&self, phase: u64) -> Option<Delivery<'_>> {
        let mut cur = lock(&self.cursor);
        loop {
            if cur.phase > phase && !matches!(cur.cursor, Cursor::Idle) {
                return None;
            }
            match std::mem::replace(&mut cur.cursor, Cursor::Idle) {
                Cursor::Idle => cur.set(self.slot().inbox.pop()?),
                Cursor::One(from, p) => return Some(self.delivery(from, p)),
                Cursor::Batch(from, mut items) => {
                    if let Some(p) = items.next() {
                        cur.cursor = Cursor::Batch(from, items);
                        return Some(self.delivery(from, p));
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
                        cur.cursor = Cursor::Frame {
                            from,
                            head,
                            pos,
                            left: left - 1,
                            body,
                        };
                        return Some(Delivery::new(
                            from,
                            content,
                            &self.slot().handled,
                            &self.shared().local.pool,
                        ));
                    }
                    if let Some(b) = body.take() {
                        return Some(Delivery::new(
                            from,
                            Content::Bytes(b),
                            &self.slot().handled,
                            &self.shared().local.pool,
                        ));
                    }
                }
            }
        }
    }

    fn delivery(&self, from: LocationId, p: Payload) -> Delivery<'_> {
        let content = match p {
            Payload::Value(v, name) => Content::Value(v, name),
            Payload::Bytes(b) => Content::Bytes(b),
        };
        Delivery::new(
            from,
            content,
            &self.slot().handled,
            &self.shared().local.pool,
        )
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

    fn poll_recv(&self, cx: &mut Context<'_>) -> Poll<Delivery<'_>> {
        if let Some(d) = self.try_recv() {
            return Poll::Ready(d);
        }
        self.flush();
        if self.spin_until(|| !self.slot().inbox.is_empty()) {
            if let Some(d) = self.try_recv() {
                return Poll::Ready(d);
            }
        }
        if let Some(p) = self.slot().inbox.pop_or_register(cx.waker()) {
            lock(&self.cursor).set(p);
            if let Some(d) = self.try_recv() {
                return Poll::Ready(d);
            }
            // An empty batch: look again (after re-registering).
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        if let Some(d) = crate::diag::node::take_failure() {
            // The cross-rank stall check found that nothing can come (a rank
            // that could send died): the location ends with its report.
            panic!(
                "tutti::world: location {} cannot finish: it waits to receive a message \
                 (`Location::recv`) that can never come\n{d}",
                self.id().index()
            );
        }
        crate::diag::node::note(
            || crate::diag::node::Wait {
                on: crate::diag::node::On::Unknown,
                what: crate::diag::node::What::Text(
                    "waits to receive a message (`Location::recv`)",
                ),
            },
            Some(cx.waker()),
        );
        Poll::Pending
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
        loc.poll_recv(cx)
    }
}
