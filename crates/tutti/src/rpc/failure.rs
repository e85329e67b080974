//! The failure manager (Blip's `FailureManager`): callbacks registered for URL
//! patterns, called when a connection to a matching host fails or ends.

use std::sync::Arc;

use super::url::matches;
use crate::loom::{lock, Mutex};

/// A connection that failed or ended, as given to failure callbacks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failure {
    /// The other end, `tcp://ip:port`: the host called (for a connection this
    /// endpoint opened) or the client (for one it accepted).
    pub host: String,
    /// Whether this endpoint had opened the connection (to call `host`).
    pub outgoing: bool,
    /// What happened.
    pub why: String,
    /// Calls that were waiting on the connection and failed with
    /// [`RpcError::ConnectionLost`](super::RpcError::ConnectionLost).
    pub failed_calls: usize,
}

type Callback = Arc<dyn Fn(&Failure) + Send + Sync>;

/// The registered callbacks: (pattern, callback), in registration order.
#[derive(Default)]
pub(crate) struct Callbacks {
    list: Mutex<Vec<(String, Callback)>>,
}

impl Callbacks {
    pub(crate) fn add(&self, pattern: &str, f: Callback) {
        lock(&self.list).push((pattern.to_string(), f));
    }

    /// The callbacks whose pattern matches `host`.
    pub(crate) fn matching(&self, host: &str) -> Vec<Callback> {
        lock(&self.list)
            .iter()
            .filter(|(p, _)| matches(p, host))
            .map(|(_, f)| Arc::clone(f))
            .collect()
    }
}
