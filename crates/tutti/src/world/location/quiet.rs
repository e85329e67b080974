//! The fence: [`Location::recv_until_quiet`] hands out messages until the
//! whole world is quiescent. A location with nothing to receive contributes its
//! sent and handled counts to a wave (an all-reduce); the detection ends when a
//! wave's sent total equals the previous wave's handled total. The proof that
//! it cannot end early, and how phases separate, are in [`crate::world`]'s
//! module documentation.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use super::recv::Claim;
use super::Location;
use crate::loom::{lock, Ordering};
use crate::world::collective::{self, Kind, Op};
use crate::world::delivery::Delivery;

/// The wave this location has contributed to and not yet seen complete.
#[derive(Clone, Copy, Default)]
pub(super) struct Quiet {
    wave: Option<u64>,
}

impl Location {
    /// Receives the next message, or returns `None` once the whole world is
    /// **quiescent**: every message sent anywhere has been received and handled,
    /// and nothing is left in any buffer. Every location must call it (it is a
    /// collective, ARMI's `rmi_fence`), typically as
    ///
    /// ```
    /// use tutti::world::{LocationId, World};
    /// let world = World::builder().locations(3).workers(2).build().unwrap();
    /// let handled = world.run(|loc| async move {
    ///     let n = loc.world().locations() as u32;
    ///     // Start a chain: each message is passed on, one hop at a time.
    ///     if loc.id().index() == 0 {
    ///         loc.send(LocationId::new(1), 10u32).unwrap();
    ///     }
    ///     let mut handled = 0;
    ///     while let Some(mut d) = loc.recv_until_quiet().await {
    ///         let hops = d.take::<u32>().unwrap();
    ///         if hops > 0 {
    ///             let next = LocationId::new((loc.id().index() as u32 + 1) % n);
    ///             loc.send(next, hops - 1).unwrap();
    ///         }
    ///         handled += 1;
    ///     } // `d` is dropped here: handled
    ///     handled
    /// });
    /// assert_eq!(handled.iter().sum::<u32>(), 11);
    /// ```
    ///
    /// Messages may only be sent while handling a delivery (or before the first
    /// call); see the `quiescence` section of the module documentation for the
    /// algorithm and why it cannot end early.
    ///
    /// It also separates phases: a message sent after the sender's
    /// `recv_until_quiet` returned `None` is handed out by the receiver only
    /// after its own `recv_until_quiet` has returned `None` (no barrier is
    /// needed). A detection after a phase that sent nothing costs one wave (one
    /// all-reduce), else two once everything is handled.
    pub fn recv_until_quiet(&self) -> UntilQuiet<'_> {
        UntilQuiet {
            loc: self,
            claim: None,
        }
    }

    /// [`recv_until_quiet`](Self::recv_until_quiet) for a service of the
    /// library (RMI's fence): hands out only the messages `claim` claims; the
    /// others stay for the program's own receives, counted as handled (see
    /// [`Claim`]), so the detection does not wait for the program.
    pub(crate) fn recv_until_quiet_claimed(&self, claim: Claim) -> UntilQuiet<'_> {
        UntilQuiet {
            loc: self,
            claim: Some(claim),
        }
    }

    /// [`recv_until_quiet`](Self::recv_until_quiet) for plain threads.
    pub fn recv_until_quiet_blocking(&self) -> Option<Delivery<'_>> {
        crate::runtime::block_on(self.recv_until_quiet())
    }

    fn poll_until_quiet(
        &self,
        claim: Option<Claim>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Delivery<'_>>> {
        let slot = self.slot();
        let phase = slot.phase.load(Ordering::Relaxed);
        loop {
            // Only this phase's messages: a later phase's were sent by a
            // location that saw this detection end, so its last wave has
            // completed and its result is about to be seen here.
            let next = match claim {
                None => self.next(phase),
                Some(c) => self.next_claimed(phase, c),
            };
            if let Some(d) = next {
                return Poll::Ready(Some(d));
            }
            self.flush();
            let mut q = *lock(&self.quiet);
            let epoch = match q.wave {
                Some(e) => e,
                None => {
                    // Handled first (Acquire), then sent: a handled message's
                    // onward sends are then counted too (see `delivery.rs`).
                    let handled = slot.handled.load(Ordering::Acquire);
                    let sent = slot.sent.load(Ordering::Relaxed);
                    let sum: Op<[u64; 2]> =
                        Arc::new(|a, b| [a[0].wrapping_add(b[0]), a[1].wrapping_add(b[1])]);
                    let e = collective::arrive(
                        self,
                        Kind::Quiescence,
                        0,
                        Some([sent, handled]),
                        Some(sum),
                    );
                    q.wave = Some(e);
                    *lock(&self.quiet) = q;
                    e
                }
            };
            match collective::poll_result::<[u64; 2]>(self, epoch, cx) {
                Poll::Ready(r) => {
                    let Some([sent, handled]) = r else {
                        self.shared()
                            .local
                            .fail_invariant("a quiescence wave completed without its sums");
                    };
                    *lock(&self.quiet) = Quiet { wave: None };
                    let before = slot.last_handled.swap(handled, Ordering::Relaxed);
                    if sent == before {
                        // Quiescent. Nothing is buffered (every message sent
                        // was handled), so the next phase starts here.
                        slot.phase.store(phase + 1, Ordering::Relaxed);
                        lock(&slot.outbox).set_phase(phase + 1);
                        return Poll::Ready(None);
                    }
                }
                Poll::Pending => {
                    let waiting = {
                        let cur = lock(&self.slot().cursor);
                        match claim {
                            None => cur.has_message(),
                            // The held messages passed over are the program's.
                            Some(_) => cur.has_claimable(),
                        }
                    };
                    if waiting {
                        // A later phase's parcel is waiting: only the wave's
                        // result (its waker is registered) can move this on.
                        if self.spin_until(|| collective::is_done(self, epoch)) {
                            continue;
                        }
                        self.wait_for_world(crate::diag::node::What::Fence(epoch), cx);
                        return Poll::Pending;
                    }
                    if self
                        .spin_until(|| collective::is_done(self, epoch) || !slot.inbox.is_empty())
                    {
                        continue;
                    }
                    match slot.inbox.pop_or_register(cx.waker()) {
                        Some(p) => lock(&self.slot().cursor).set(p),
                        None => {
                            self.wait_for_world(crate::diag::node::What::Fence(epoch), cx);
                            return Poll::Pending;
                        }
                    }
                }
            }
        }
    }
}

/// Future of [`Location::recv_until_quiet`].
#[must_use = "futures do nothing unless polled"]
#[derive(Debug)]
pub struct UntilQuiet<'a> {
    loc: &'a Location,
    claim: Option<Claim>,
}

impl<'a> Future for UntilQuiet<'a> {
    type Output = Option<Delivery<'a>>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Delivery<'a>>> {
        let loc: &'a Location = self.loc;
        loc.poll_until_quiet(self.claim, cx)
    }
}
