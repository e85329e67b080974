//! What can go wrong with a remote procedure call, each case named.

use std::fmt;
use std::time::Duration;

/// Why an RPC operation failed.
///
/// ```
/// use tutti::rpc::RpcError;
/// let e = RpcError::NoObject { url: "tcp://127.0.0.1:1/a".into() };
/// assert_eq!(e.to_string(), "no object is published at tcp://127.0.0.1:1/a");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum RpcError {
    /// The URL or path is malformed, or its host does not resolve.
    BadUrl(String),
    /// The host could not be reached (connection refused, no route, …).
    Connect {
        /// The host, `tcp://host:port`.
        host: String,
        /// What the system said.
        why: String,
    },
    /// The host refused the connection at the handshake (a wrong cookie, another
    /// protocol version) or answered it with something else than a handshake.
    Refused {
        /// The host.
        host: String,
        /// Its reason.
        why: String,
    },
    /// The connection to the host failed while the call waited (or when it was
    /// sent); the next call connects again.
    ConnectionLost {
        /// The host.
        host: String,
        /// What happened.
        why: String,
    },
    /// No answer within the call's deadline.
    Timeout {
        /// The object called.
        url: String,
        /// The deadline that passed.
        after: Duration,
    },
    /// Nothing is published at the URL (or it was withdrawn), or the actor
    /// published there has stopped (also while the call waited in its
    /// mailbox).
    NoObject {
        /// The object's URL.
        url: String,
    },
    /// The object at the URL is of another type than the proxy's.
    WrongType {
        /// The object's URL.
        url: String,
        /// The published object's type.
        published: &'static str,
    },
    /// The object could not serve the call: a method it does not publish, a
    /// message the server could not decode, a handler that panicked or never
    /// replied, a reply that did not encode. The server's explanation.
    Fault {
        /// The object's URL.
        url: String,
        /// What went wrong there.
        why: String,
    },
    /// An answer arrived but is not a reply of the expected type.
    BadAnswer {
        /// The object's URL.
        url: String,
        /// What is wrong.
        why: String,
    },
    /// The call's message could not be encoded (nothing was sent).
    Encode(String),
    /// A path is already published on this endpoint.
    Taken(String),
    /// The object's message table is inconsistent (two message types with one id).
    Publish(String),
    /// The endpoint could not start (its address could not be bound) or is closed.
    Endpoint(String),
}

impl fmt::Display for RpcError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RpcError::BadUrl(why) => write!(f, "bad URL: {why}"),
            RpcError::Connect { host, why } => write!(f, "cannot connect to {host}: {why}"),
            RpcError::Refused { host, why } => write!(f, "{host} refused the connection: {why}"),
            RpcError::ConnectionLost { host, why } => {
                write!(f, "the connection to {host} was lost: {why}")
            }
            RpcError::Timeout { url, after } => {
                write!(f, "no answer from {url} within {after:?}")
            }
            RpcError::NoObject { url } => write!(f, "no object is published at {url}"),
            RpcError::WrongType { url, published } => {
                write!(
                    f,
                    "the object at {url} is a `{published}`, not the proxy's type"
                )
            }
            RpcError::Fault { url, why } => write!(f, "{url} could not serve the call: {why}"),
            RpcError::BadAnswer { url, why } => write!(f, "a bad answer from {url}: {why}"),
            RpcError::Encode(why) => write!(f, "the call could not be encoded: {why}"),
            RpcError::Taken(path) => write!(f, "`{path}` is already published here"),
            RpcError::Publish(why) => write!(f, "cannot publish: {why}"),
            RpcError::Endpoint(why) => write!(f, "RPC endpoint: {why}"),
        }
    }
}

impl std::error::Error for RpcError {}
