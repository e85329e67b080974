//! The deadlock report returned by a `par` whose network can no longer progress.

use std::fmt;

/// A process network could no longer progress: every process was blocked on a channel,
/// ALT, barrier or nested `PAR`, waiting for another process of the network, with no
/// timer pending and nobody outside the network able to unblock it. Returned by the
/// `par` (or [`run`](super::super::run)) that owns the network, after its processes were
/// cancelled.
///
/// Its `Display` is the report: each blocked process, what it waits on, and a wait-for
/// cycle when one was found (process A waits to send on a channel whose receiver, B,
/// waits for …).
///
/// ```
/// use tutti::csp::{channel, run};
///
/// // Two processes each wait to send to the other first: a deadlock.
/// let err = run(async {
///     let (to_b, from_a) = channel::<u32>();
///     let (to_a, from_b) = channel::<u32>();
///     tutti::csp::Par::new()
///         .process("a", async move {
///             to_b.send(0).await.unwrap();
///             to_b.send(1).await.unwrap(); // b is sending too: stuck
///             let _ = from_b.recv().await;
///         })
///         .process("b", async move {
///             assert_eq!(from_a.recv().await, Ok(0));
///             to_a.send(2).await.unwrap(); // a is sending too: stuck
///             let _ = from_a.recv().await;
///         })
///         .run()
///         .await
///         .unwrap();
/// })
/// .wait_blocking()
/// .unwrap_err();
/// assert_eq!(err.processes().len(), 3); // a, b and the body of `run` awaiting them
/// assert!(err.to_string().contains("`run/b` waits to send on channel"));
/// // `a` waits for `b` (the last process to receive from a's channel); whom `b` waits
/// // for is unknown, as nobody has received from b's channel yet: no cycle is named.
/// assert!(err.cycle().is_empty());
/// ```
#[derive(Clone, Debug)]
pub struct Deadlock {
    processes: Vec<BlockedProcess>,
    cycle: Vec<String>,
}

/// One blocked process of a [`Deadlock`].
#[derive(Clone, Debug)]
pub struct BlockedProcess {
    name: String,
    waits: String,
}

impl BlockedProcess {
    pub(crate) fn new(name: String, waits: String) -> Self {
        BlockedProcess { name, waits }
    }

    /// The process's name: the names (or numbers) given by each enclosing `par`, outer
    /// first, joined with `/`.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// What it waits on, e.g. "waits to send on channel `kill`".
    pub fn waits(&self) -> &str {
        &self.waits
    }
}

impl Deadlock {
    pub(crate) fn new(mut processes: Vec<BlockedProcess>, cycle: Vec<String>) -> Self {
        processes.sort_by(|a, b| a.name.cmp(&b.name));
        Deadlock { processes, cycle }
    }

    /// Every process of the network, blocked.
    pub fn processes(&self) -> &[BlockedProcess] {
        &self.processes
    }

    /// A cycle of processes each waiting for the next (the first repeated at the end),
    /// if one was found through channel waits; empty otherwise (e.g. a barrier that a
    /// blocked process never reaches).
    pub fn cycle(&self) -> &[String] {
        &self.cycle
    }
}

impl fmt::Display for Deadlock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "tutti: deadlock: {} process{} can no longer progress:",
            self.processes.len(),
            if self.processes.len() == 1 { "" } else { "es" }
        )?;
        for p in &self.processes {
            writeln!(f, "  `{}` {}", p.name, p.waits)?;
        }
        if self.cycle.is_empty() {
            write!(f, "  (no wait-for cycle through channels was found)")
        } else {
            let names: Vec<String> = self.cycle.iter().map(|n| format!("`{n}`")).collect();
            write!(f, "  cycle: {}", names.join(" → "))
        }
    }
}

impl std::error::Error for Deadlock {}
