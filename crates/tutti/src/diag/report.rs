//! The deadlock report: who waits on what, and the wait-for cycle when one was found.
//! One type for every paradigm (CSP processes, actors, locations, RMI methods), so a
//! program that mixes them reads one kind of report.

use std::fmt;

/// A set of participants that can no longer progress: CSP processes blocked on
/// channels, barriers and `par`s of their network; actors waiting in a cycle of `ask`s
/// or full mailboxes; locations that cannot finish a fence or collective; RMI methods
/// in a cycle of `sync_rmi` calls. Printed on stderr when detected, and carried by the
/// error of each waiting operation (a `par`'s `Err(Deadlock)`, `AskError::Deadlock`, …)
/// unless [`DeadlockMode::Report`](super::DeadlockMode::Report) is set.
///
/// Its `Display` is the report: each participant (with its rank and location when it
/// has them), what it waits on, and a wait-for cycle when one was found.
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
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Deadlock {
    processes: Vec<BlockedProcess>,
    cycle: Vec<String>,
    dead_ranks: Vec<usize>,
}

/// One participant of a [`Deadlock`] (a CSP process, an actor, a location, an RMI
/// method), and what it waits on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlockedProcess {
    name: String,
    waits: String,
    rank: Option<usize>,
}

/// The participant type under its general name.
pub type Waiter = BlockedProcess;

impl BlockedProcess {
    pub(crate) fn new(name: String, waits: String) -> Self {
        BlockedProcess {
            name,
            waits,
            rank: None,
        }
    }

    pub(crate) fn on_rank(mut self, rank: usize) -> Self {
        self.rank = Some(rank);
        self
    }

    /// Its name: for a CSP process the names (or numbers) given by each enclosing
    /// `par`, outer first, joined with `/`; for an actor `actor #id (Type)` or its
    /// registered name; for a location `location N`.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// What it waits on, e.g. "waits to send on channel `kill`".
    pub fn waits(&self) -> &str {
        &self.waits
    }

    /// The rank it runs on, when the report crosses ranks or comes from a world.
    pub fn rank(&self) -> Option<usize> {
        self.rank
    }
}

impl Deadlock {
    pub(crate) fn new(mut processes: Vec<BlockedProcess>, cycle: Vec<String>) -> Self {
        processes.sort_by(|a, b| a.name.cmp(&b.name));
        Deadlock {
            processes,
            cycle,
            dead_ranks: Vec::new(),
        }
    }

    /// The same report, for a world in which ranks `dead` had died.
    pub(crate) fn with_dead_ranks(mut self, dead: Vec<usize>) -> Self {
        self.dead_ranks = dead;
        self
    }

    /// The ranks of the world that had died (killed or crashed) when the stall
    /// was found: what they would have sent never comes. Empty but for a
    /// world of several processes that lost some.
    ///
    /// ```
    /// use tutti::csp::{channel, run};
    ///
    /// // One process of one process: nobody died.
    /// let err = run(async {
    ///     let (tx, rx) = channel::<u32>();
    ///     tutti::csp::Par::new()
    ///         .process("alone", async move {
    ///             let _ = rx.recv().await; // only it could send
    ///             drop(tx);
    ///         })
    ///         .run()
    ///         .await
    ///         .unwrap();
    /// })
    /// .wait_blocking()
    /// .unwrap_err();
    /// assert!(err.dead_ranks().is_empty());
    /// ```
    pub fn dead_ranks(&self) -> &[usize] {
        &self.dead_ranks
    }

    /// Every participant, blocked.
    pub fn processes(&self) -> &[BlockedProcess] {
        &self.processes
    }

    /// Every participant, blocked (the general name of [`processes`](Self::processes)).
    pub fn waiters(&self) -> &[Waiter] {
        &self.processes
    }

    /// A cycle of participants each waiting for the next (the first repeated at the
    /// end), if one was found; empty otherwise (e.g. a barrier that a blocked process
    /// never reaches, or a fence that a location waiting elsewhere never enters).
    pub fn cycle(&self) -> &[String] {
        &self.cycle
    }
}

impl fmt::Display for Deadlock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.processes.len();
        let csp = self.processes.iter().all(|p| !p.name.contains(' '));
        let noun = match (csp, n) {
            (true, 1) => "process",
            (true, _) => "processes",
            (false, 1) => "participant",
            (false, _) => "participants",
        };
        writeln!(f, "tutti: deadlock: {n} {noun} can no longer progress:")?;
        for p in &self.processes {
            match p.rank {
                Some(r) => writeln!(f, "  [rank {r}] `{}` {}", p.name, p.waits)?,
                None => writeln!(f, "  `{}` {}", p.name, p.waits)?,
            }
        }
        for r in &self.dead_ranks {
            writeln!(
                f,
                "  rank {r} died (killed or crashed): what it would have sent never comes"
            )?;
        }
        if self.cycle.is_empty() {
            write!(f, "  (no wait-for cycle was found)")
        } else {
            let names: Vec<String> = self.cycle.iter().map(|n| format!("`{n}`")).collect();
            write!(f, "  cycle: {}", names.join(" → "))
        }
    }
}

impl std::error::Error for Deadlock {}
