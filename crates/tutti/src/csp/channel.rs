//! Making channels: [`channel`] (rendezvous), [`buffered`] and [`unbounded`].

use std::borrow::Cow;

use super::chan::Chan;
use super::deadlock::Object;
use super::rx::Rx;
use super::tx::Tx;

/// A synchronous (rendezvous) channel, occam's `CHAN`: a send completes only when a
/// receiver has taken the value, so the sender *knows* the reader has read.
///
/// Both ends can be cloned and used from async tasks and plain threads alike; see
/// [`Tx`] and [`Rx`] for who gets each value.
///
/// ```
/// use tutti::csp::channel;
///
/// let (tx, rx) = channel::<u32>();
/// let producer = tutti::spawn(async move {
///     for i in 0..3 {
///         tx.send(i).await.unwrap(); // resumes only once the consumer has `i`
///     }
/// });
/// let got: Vec<u32> = (0..3).map(|_| rx.recv_blocking().unwrap()).collect();
/// assert_eq!(got, [0, 1, 2]);
/// producer.join();
/// ```
pub fn channel<T>() -> (Tx<T>, Rx<T>) {
    buffered(0)
}

/// A buffered channel holding up to `capacity` values: a send completes at once while
/// there is room (or a receiver waiting), and waits otherwise.
///
/// `buffered(0)` is the same as [`channel`] (a rendezvous), as in Go. A capacity of
/// 2^48 − 1 or more makes an [`unbounded`] channel (its capacity reads `usize::MAX`): the
/// channel keeps its capacity in 48 bits, and no buffer that large could be filled.
///
/// ```
/// use tutti::csp::{buffered, TrySendError};
///
/// let (tx, rx) = buffered::<u8>(2);
/// tx.try_send(1).unwrap();
/// tx.try_send(2).unwrap();
/// assert_eq!(tx.try_send(3), Err(TrySendError::Full(3)));
/// assert_eq!(rx.recv_blocking(), Ok(1));
/// ```
pub fn buffered<T>(capacity: usize) -> (Tx<T>, Rx<T>) {
    make(capacity, None)
}

/// A rendezvous channel with a name, used in deadlock reports and `Debug` output.
///
/// ```
/// let (tx, _rx) = tutti::csp::channel_named::<u8>("kill");
/// assert!(format!("{tx:?}").contains("kill"));
/// ```
pub fn channel_named<T>(name: impl Into<Cow<'static, str>>) -> (Tx<T>, Rx<T>) {
    make(0, Some(name.into()))
}

/// A buffered channel with a name, used in deadlock reports and `Debug` output.
///
/// ```
/// let (tx, rx) = tutti::csp::buffered_named::<u8>(4, "readings");
/// tx.try_send(1).unwrap();
/// assert_eq!(rx.try_recv(), Ok(1));
/// ```
pub fn buffered_named<T>(capacity: usize, name: impl Into<Cow<'static, str>>) -> (Tx<T>, Rx<T>) {
    make(capacity, Some(name.into()))
}

/// The capacity of an unbounded channel: its buffer never runs out of room.
pub(crate) const UNBOUNDED: usize = usize::MAX;

/// An unbounded channel: a send completes at once, buffering the value when no receiver
/// is waiting; receivers wait while it is empty. What `std::sync::mpsc::channel`,
/// `crossbeam_channel::unbounded` and `tokio::sync::mpsc::unbounded_channel` make,
/// except that both ends clone (any-to-any).
///
/// Nothing slows a sender that outpaces its receivers: the buffer grows (and gives the
/// memory back as it drains). Where that is a risk, a [`buffered`] channel makes
/// senders wait instead. [`capacity`](Tx::capacity) reports `usize::MAX`, and
/// `buffered(usize::MAX)` is the same channel.
///
/// ```
/// use tutti::csp::unbounded;
///
/// let (tx, rx) = unbounded::<u32>();
/// for i in 0..1000 {
///     tx.send_blocking(i).unwrap(); // never waits
/// }
/// assert_eq!(rx.len(), 1000);
/// drop(tx);
/// assert_eq!(rx.iter().sum::<u32>(), 999 * 1000 / 2);
/// ```
pub fn unbounded<T>() -> (Tx<T>, Rx<T>) {
    make(UNBOUNDED, None)
}

/// An unbounded channel with a name, used in deadlock reports and `Debug` output.
///
/// ```
/// let (tx, rx) = tutti::csp::unbounded_named::<u8>("events");
/// tx.try_send(1).unwrap();
/// assert!(format!("{rx:?}").contains("events"));
/// ```
pub fn unbounded_named<T>(name: impl Into<Cow<'static, str>>) -> (Tx<T>, Rx<T>) {
    make(UNBOUNDED, Some(name.into()))
}

fn make<T>(capacity: usize, name: Option<Cow<'static, str>>) -> (Tx<T>, Rx<T>) {
    let chan = Chan::allocate(capacity, Object::Channel(capacity), name, 1, false);
    (Tx::from_chan(chan), Rx::from_chan(chan))
}
