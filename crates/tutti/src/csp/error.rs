//! Errors of channel operations: one family per direction, one type per operation form
//! (`send`/`send_blocking` → [`SendError`], `try_send` → [`TrySendError`], `send_timeout`
//! and `send_deadline` → [`SendTimeoutError`]; the same three for receiving).
//!
//! Every type of a family has the same variants where they apply, the same questions
//! (`is_closed`, `is_poisoned`, `is_full`/`is_empty`, `is_timeout`), converts from the
//! plain error into the two others, and says in its message that it comes from a
//! `tutti::csp` channel (tutti's actors and world have send errors of their own). Sending
//! errors carry the value back, so a failed send never loses it. `Closed` means the
//! channel ended for that side: for senders, it was closed (`close()`, or every `Tx`
//! dropped) or every `Rx` is gone; for receivers, it was closed and nothing is left.
//! `Poisoned` means someone called `poison()` on the channel (JCSP-style shutdown of a
//! network).

use std::error::Error;
use std::fmt;

/// Why a [`Tx::send`](super::Tx::send) or [`Tx::send_blocking`](super::Tx::send_blocking)
/// failed. The value comes back in either case.
///
/// ```
/// use tutti::csp::{channel, SendError};
///
/// let (tx, rx) = channel::<u32>();
/// drop(rx);
/// assert_eq!(tx.send_blocking(7), Err(SendError::Closed(7)));
/// assert_eq!(SendError::Closed(7).into_inner(), 7);
/// ```
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum SendError<T> {
    /// Every receiver is gone.
    Closed(T),
    /// The channel is poisoned.
    Poisoned(T),
}

impl<T> SendError<T> {
    /// The value that was not sent.
    ///
    /// ```
    /// let e = tutti::csp::SendError::Poisoned("x");
    /// assert_eq!(e.into_inner(), "x");
    /// ```
    pub fn into_inner(self) -> T {
        match self {
            SendError::Closed(v) | SendError::Poisoned(v) => v,
        }
    }

    /// Whether the channel was poisoned (rather than closed).
    ///
    /// ```
    /// assert!(tutti::csp::SendError::Poisoned(()).is_poisoned());
    /// ```
    pub fn is_poisoned(&self) -> bool {
        matches!(self, SendError::Poisoned(_))
    }

    /// Whether the channel was closed (or lost every receiver).
    ///
    /// ```
    /// assert!(tutti::csp::SendError::Closed(()).is_closed());
    /// ```
    pub fn is_closed(&self) -> bool {
        matches!(self, SendError::Closed(_))
    }
}

/// Why a [`Tx::try_send`](super::Tx::try_send) failed. The value comes back.
///
/// ```
/// use tutti::csp::{buffered, TrySendError};
///
/// let (tx, _rx) = buffered::<u8>(1);
/// tx.try_send(1).unwrap();
/// assert_eq!(tx.try_send(2), Err(TrySendError::Full(2)));
/// ```
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum TrySendError<T> {
    /// The buffer is full or, for a rendezvous channel, no receiver is waiting.
    Full(T),
    /// Every receiver is gone.
    Closed(T),
    /// The channel is poisoned.
    Poisoned(T),
}

impl<T> TrySendError<T> {
    /// The value that was not sent.
    ///
    /// ```
    /// assert_eq!(tutti::csp::TrySendError::Full(3).into_inner(), 3);
    /// ```
    pub fn into_inner(self) -> T {
        match self {
            TrySendError::Full(v) | TrySendError::Closed(v) | TrySendError::Poisoned(v) => v,
        }
    }

    /// Whether the send failed only for lack of room (or of a waiting receiver).
    ///
    /// ```
    /// assert!(tutti::csp::TrySendError::Full(()).is_full());
    /// ```
    pub fn is_full(&self) -> bool {
        matches!(self, TrySendError::Full(_))
    }

    /// Whether the channel was closed (or lost every receiver).
    ///
    /// ```
    /// assert!(tutti::csp::TrySendError::Closed(()).is_closed());
    /// ```
    pub fn is_closed(&self) -> bool {
        matches!(self, TrySendError::Closed(_))
    }

    /// Whether the channel was poisoned.
    ///
    /// ```
    /// assert!(tutti::csp::TrySendError::Poisoned(()).is_poisoned());
    /// ```
    pub fn is_poisoned(&self) -> bool {
        matches!(self, TrySendError::Poisoned(_))
    }
}

/// Why a [`Tx::send_timeout`](super::Tx::send_timeout) failed. The value comes back.
///
/// ```
/// use std::time::Duration;
/// use tutti::csp::{channel, SendTimeoutError};
///
/// let (tx, _rx) = channel::<u8>();
/// let r = tx.send_timeout(5, Duration::from_millis(1));
/// assert_eq!(r, Err(SendTimeoutError::Timeout(5)));
/// ```
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum SendTimeoutError<T> {
    /// No receiver took the value in time.
    Timeout(T),
    /// Every receiver is gone.
    Closed(T),
    /// The channel is poisoned.
    Poisoned(T),
}

impl<T> SendTimeoutError<T> {
    /// The value that was not sent.
    ///
    /// ```
    /// assert_eq!(tutti::csp::SendTimeoutError::Timeout('a').into_inner(), 'a');
    /// ```
    pub fn into_inner(self) -> T {
        match self {
            SendTimeoutError::Timeout(v)
            | SendTimeoutError::Closed(v)
            | SendTimeoutError::Poisoned(v) => v,
        }
    }

    /// Whether the send timed out.
    ///
    /// ```
    /// assert!(tutti::csp::SendTimeoutError::Timeout(()).is_timeout());
    /// ```
    pub fn is_timeout(&self) -> bool {
        matches!(self, SendTimeoutError::Timeout(_))
    }

    /// Whether the channel was closed (or lost every receiver).
    ///
    /// ```
    /// assert!(tutti::csp::SendTimeoutError::Closed(()).is_closed());
    /// ```
    pub fn is_closed(&self) -> bool {
        matches!(self, SendTimeoutError::Closed(_))
    }

    /// Whether the channel was poisoned.
    ///
    /// ```
    /// assert!(tutti::csp::SendTimeoutError::Poisoned(()).is_poisoned());
    /// ```
    pub fn is_poisoned(&self) -> bool {
        matches!(self, SendTimeoutError::Poisoned(_))
    }
}

impl<T> From<SendError<T>> for TrySendError<T> {
    /// ```
    /// use tutti::csp::{SendError, TrySendError};
    /// assert_eq!(TrySendError::from(SendError::Closed(1)), TrySendError::Closed(1));
    /// ```
    fn from(e: SendError<T>) -> Self {
        match e {
            SendError::Closed(v) => TrySendError::Closed(v),
            SendError::Poisoned(v) => TrySendError::Poisoned(v),
        }
    }
}

impl<T> From<SendError<T>> for SendTimeoutError<T> {
    /// ```
    /// use tutti::csp::{SendError, SendTimeoutError};
    /// let e = SendTimeoutError::from(SendError::Poisoned(1));
    /// assert_eq!(e, SendTimeoutError::Poisoned(1));
    /// ```
    fn from(e: SendError<T>) -> Self {
        match e {
            SendError::Closed(v) => SendTimeoutError::Closed(v),
            SendError::Poisoned(v) => SendTimeoutError::Poisoned(v),
        }
    }
}

/// Why a [`Rx::recv`](super::Rx::recv) or [`Rx::recv_blocking`](super::Rx::recv_blocking)
/// failed.
///
/// ```
/// use tutti::csp::{channel, RecvError};
///
/// let (tx, rx) = channel::<u32>();
/// drop(tx);
/// assert_eq!(rx.recv_blocking(), Err(RecvError::Closed));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RecvError {
    /// Every sender is gone and every sent value has been received.
    Closed,
    /// The channel is poisoned.
    Poisoned,
}

/// Why a [`Rx::try_recv`](super::Rx::try_recv) failed.
///
/// ```
/// use tutti::csp::{channel, TryRecvError};
///
/// let (_tx, rx) = channel::<u32>();
/// assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TryRecvError {
    /// Nothing to receive yet (no buffered value, and no sender waiting).
    Empty,
    /// Every sender is gone and every sent value has been received.
    Closed,
    /// The channel is poisoned.
    Poisoned,
}

/// Why a [`Rx::recv_timeout`](super::Rx::recv_timeout) failed.
///
/// ```
/// use std::time::Duration;
/// use tutti::csp::{channel, RecvTimeoutError};
///
/// let (_tx, rx) = channel::<u32>();
/// assert_eq!(rx.recv_timeout(Duration::from_millis(1)), Err(RecvTimeoutError::Timeout));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RecvTimeoutError {
    /// Nothing arrived in time.
    Timeout,
    /// Every sender is gone and every sent value has been received.
    Closed,
    /// The channel is poisoned.
    Poisoned,
}

/// The questions every receive error answers.
macro_rules! recv_questions {
    ($ty:ident { $($extra:tt)* }) => {
        impl $ty {
            /// Whether the channel was closed and nothing is left.
            ///
            /// ```
            #[doc = concat!("assert!(tutti::csp::", stringify!($ty), "::Closed.is_closed());")]
            /// ```
            pub fn is_closed(&self) -> bool {
                matches!(self, $ty::Closed)
            }

            /// Whether the channel was poisoned.
            ///
            /// ```
            #[doc = concat!("assert!(tutti::csp::", stringify!($ty), "::Poisoned.is_poisoned());")]
            /// ```
            pub fn is_poisoned(&self) -> bool {
                matches!(self, $ty::Poisoned)
            }

            $($extra)*
        }
    };
}

recv_questions!(RecvError {});
recv_questions!(TryRecvError {
    /// Whether there was nothing to receive yet (the channel did not end).
    ///
    /// ```
    /// assert!(tutti::csp::TryRecvError::Empty.is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        matches!(self, TryRecvError::Empty)
    }
});
recv_questions!(RecvTimeoutError {
    /// Whether nothing arrived in time (the channel did not end).
    ///
    /// ```
    /// assert!(tutti::csp::RecvTimeoutError::Timeout.is_timeout());
    /// ```
    pub fn is_timeout(&self) -> bool {
        matches!(self, RecvTimeoutError::Timeout)
    }
});

impl From<RecvError> for TryRecvError {
    /// ```
    /// use tutti::csp::{RecvError, TryRecvError};
    /// assert_eq!(TryRecvError::from(RecvError::Poisoned), TryRecvError::Poisoned);
    /// ```
    fn from(e: RecvError) -> Self {
        match e {
            RecvError::Closed => TryRecvError::Closed,
            RecvError::Poisoned => TryRecvError::Poisoned,
        }
    }
}

impl From<RecvError> for RecvTimeoutError {
    /// ```
    /// use tutti::csp::{RecvError, RecvTimeoutError};
    /// assert_eq!(RecvTimeoutError::from(RecvError::Closed), RecvTimeoutError::Closed);
    /// ```
    fn from(e: RecvError) -> Self {
        match e {
            RecvError::Closed => RecvTimeoutError::Closed,
            RecvError::Poisoned => RecvTimeoutError::Poisoned,
        }
    }
}

/// Debug without requiring `T: Debug`, so `unwrap()` works for any value type.
macro_rules! debug_without_value {
    ($ty:ident { $($variant:ident),* }) => {
        impl<T> fmt::Debug for $ty<T> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                match self {
                    $($ty::$variant(_) => f.write_str(concat!(stringify!($variant), "(..)")),)*
                }
            }
        }
    };
}

debug_without_value!(SendError { Closed, Poisoned });
debug_without_value!(TrySendError {
    Full,
    Closed,
    Poisoned
});
debug_without_value!(SendTimeoutError {
    Timeout,
    Closed,
    Poisoned
});

const CLOSED_TX: &str =
    "tutti::csp: the channel is closed for sending (closed, or every receiver is gone)";
const POISONED: &str = "tutti::csp: the channel is poisoned";
const CLOSED_RX: &str = "tutti::csp: the channel is closed and empty";

impl<T> fmt::Display for SendError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SendError::Closed(_) => CLOSED_TX,
            SendError::Poisoned(_) => POISONED,
        })
    }
}

impl<T> fmt::Display for TrySendError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TrySendError::Full(_) => {
                "tutti::csp: the channel is full (or, for a rendezvous, no receiver is waiting)"
            }
            TrySendError::Closed(_) => CLOSED_TX,
            TrySendError::Poisoned(_) => POISONED,
        })
    }
}

impl<T> fmt::Display for SendTimeoutError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SendTimeoutError::Timeout(_) => {
                "tutti::csp: timed out waiting for a receiver (or for room)"
            }
            SendTimeoutError::Closed(_) => CLOSED_TX,
            SendTimeoutError::Poisoned(_) => POISONED,
        })
    }
}

impl fmt::Display for RecvError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            RecvError::Closed => CLOSED_RX,
            RecvError::Poisoned => POISONED,
        })
    }
}

impl fmt::Display for TryRecvError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TryRecvError::Empty => "tutti::csp: the channel is empty (and no sender is waiting)",
            TryRecvError::Closed => CLOSED_RX,
            TryRecvError::Poisoned => POISONED,
        })
    }
}

impl fmt::Display for RecvTimeoutError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            RecvTimeoutError::Timeout => "tutti::csp: timed out waiting for a value",
            RecvTimeoutError::Closed => CLOSED_RX,
            RecvTimeoutError::Poisoned => POISONED,
        })
    }
}

impl<T> Error for SendError<T> {}
impl<T> Error for TrySendError<T> {}
impl<T> Error for SendTimeoutError<T> {}
impl Error for RecvError {}
impl Error for TryRecvError {}
impl Error for RecvTimeoutError {}
