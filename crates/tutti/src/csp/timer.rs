//! Timer channels (crossbeam's `after`, `at`, `tick`, `never`): receivers that the
//! runtime's timer feeds, usable wherever a receiver is — `recv().await`,
//! `recv_blocking`, an [`Alt`](super::Alt) input guard or a [`select!`](crate::select).
//!
//! Each is a channel whose only sender is a small task of the current runtime: it sleeps
//! on the runtime's timer and sends the instant it woke at (`after`/`at`: into a buffer
//! of one; `tick`: a rendezvous, so at most one tick waits).
//! The channel never closes (its sender does not close it when done), so a receive on a
//! timer that has delivered everything waits for ever — an `after` guard fires once.
//! A `tick` sender waits while a tick is still unreceived, so ticks are dropped, not
//! queued, when the receiver is slow; it stops once the receiver is gone. An `after`
//! sender sleeps until its instant even if the receiver is dropped first.
//!
//! The deadlock detector knows a wait on a timer channel always ends.

use std::time::{Duration, Instant};

use super::chan::Chan;
use super::deadlock::Object;
use super::rx::Rx;
use super::tx::Tx;

/// A fed channel of `capacity`: its receiver, and the sender the feeding task keeps.
fn timer_channel(capacity: usize) -> (Tx<Instant>, Rx<Instant>) {
    let chan = Chan::allocate(capacity, Object::Timer, None, 1, true);
    (Tx::from_chan(chan), Rx::from_chan(chan))
}

/// A receiver that gets one message, the current instant, once `duration` has passed.
///
/// ```
/// use std::time::{Duration, Instant};
/// use tutti::csp::{after, channel, Alt};
///
/// let (_tx, requests) = channel::<u32>();
/// let start = Instant::now();
/// let timeout = after(Duration::from_millis(5));
/// let mut alt = Alt::new().recv(&requests).recv(&timeout);
/// let sel = alt.select_blocking();
/// assert_eq!(sel.index(), 1);
/// assert!(sel.recv(&timeout).unwrap() >= start + Duration::from_millis(5));
/// ```
pub fn after(duration: Duration) -> Rx<Instant> {
    match Instant::now().checked_add(duration) {
        Some(when) => at(when),
        None => never(),
    }
}

/// A receiver that gets one message, the current instant, at `when` (at once if it has
/// passed).
///
/// ```
/// use std::time::Instant;
///
/// let rx = tutti::csp::at(Instant::now());
/// assert!(rx.recv_blocking().is_ok());
/// ```
pub fn at(when: Instant) -> Rx<Instant> {
    let (tx, rx) = timer_channel(1);
    if when <= Instant::now() {
        let _ = tx.try_send(Instant::now());
    } else {
        crate::runtime::spawn(async move {
            crate::runtime::sleep_until(when).await;
            // Fails only if every receiver is gone: then nobody waits for it.
            let _ = tx.try_send(Instant::now());
        })
        .detach();
    }
    rx
}

/// A receiver that gets the current instant every `period`. A tick the receiver has not
/// taken by the next one is not followed by a second: ticks are dropped, not queued.
///
/// ```
/// use std::time::Duration;
///
/// let start = std::time::Instant::now();
/// let ticks = tutti::csp::tick(Duration::from_millis(1));
/// let first = ticks.recv_blocking().unwrap();
/// let second = ticks.recv_blocking().unwrap();
/// assert!(first >= start + Duration::from_millis(1) && second > first);
/// ```
pub fn tick(period: Duration) -> Rx<Instant> {
    // A rendezvous: the one tick not yet taken waits with its sender, so a slow receiver
    // finds one tick, not a backlog.
    let (tx, rx) = timer_channel(0);
    crate::runtime::spawn(async move {
        let mut next = Instant::now() + period;
        loop {
            crate::runtime::sleep_until(next).await;
            // Waits while the last tick is unreceived; fails once the receivers are gone.
            if tx.send(Instant::now()).await.is_err() {
                return;
            }
            next += period;
            let now = Instant::now();
            if next < now {
                // The receiver was slow: skip the ticks it missed.
                next = now + period;
            }
        }
    })
    .detach();
    rx
}

/// A receiver that never gets a message (and never closes): an `Alt` guard that never
/// fires, e.g. to switch a guard off by choosing the channel.
///
/// ```
/// use tutti::csp::{never, Alt};
///
/// let rx = never::<u8>();
/// let mut alt = Alt::new().recv(&rx).skip();
/// assert_eq!(alt.pri_select_blocking().index(), 1);
/// assert!(rx.try_recv().is_err());
/// ```
pub fn never<T>() -> Rx<T> {
    // No sender at all: nobody can send, and nobody closes it.
    Rx::from_chan(Chan::allocate(0, Object::Channel(0), None, 0, true))
}
