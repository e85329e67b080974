//! What the process versions (tutti's system, Unix sockets) share: the
//! host's one clock for delivery latency, a client's tally as it travels back
//! ([`Seen`]), and the verification of a whole run ([`verify`]).

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::station::{ClientTally, StationSummary};

/// `CLOCK_MONOTONIC` in nanoseconds: the same clock in every process.
pub(super) fn now_ns() -> u64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `t` is a valid, writable timespec; CLOCK_MONOTONIC always exists
    // on Linux, so the call cannot fail.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut t) };
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

/// A client's tally, its delivery latencies and why it could not subscribe.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub(super) struct Seen {
    pub(super) tally: ClientTally,
    pub(super) latency_sum_ns: u64,
    pub(super) latency_max_ns: u64,
    pub(super) join_error: Option<String>,
}

impl Seen {
    /// Counts one reading, received now.
    pub(super) fn count(&mut self, station: u32, seq: u64, celsius: f32, sent_ns: u64, mine: u32) {
        self.tally.count(station, seq, celsius, mine);
        let lat = now_ns().saturating_sub(sent_ns);
        self.latency_sum_ns += lat;
        self.latency_max_ns = self.latency_max_ns.max(lat);
    }
}

/// What a station did: the clients it dropped with the reason of their
/// `RemoteDown`.
pub(super) type Summary = StationSummary<u32, (u32, String)>;

/// What rank 0 (or the Unix-socket server) found: the figures and every
/// problem of the verification.
#[derive(Debug, Default, Serialize, Deserialize)]
pub(super) struct Outcome {
    pub(super) elapsed_ns: u64,
    pub(super) delivered: u64,
    pub(super) latency_sum_ns: u64,
    pub(super) latency_max_ns: u64,
    pub(super) dropped: usize,
    pub(super) problems: Vec<String>,
}

/// Checks the stations' summaries and the clients' tallies (`None`: the
/// client did not answer) as the threaded run does, and that the victim was
/// dropped for a reason containing `notice`; sums the figures.
pub(super) fn verify(
    summaries: &[Summary],
    seen: &[Option<Seen>],
    victim: usize,
    elapsed: Duration,
    notice: &str,
) -> Outcome {
    let stations = summaries.len();
    let mut o = Outcome {
        elapsed_ns: elapsed.as_nanos() as u64,
        ..Outcome::default()
    };
    for (c, s) in seen.iter().enumerate() {
        let summary = &summaries[c % stations];
        match (c == victim, s) {
            (true, Some(_)) => o.problems.push(format!("crashed client {c} still answers")),
            (true, None) => {}
            (false, None) => o.problems.push(format!("live client {c} did not answer")),
            (false, Some(s)) => {
                if let Some(e) = &s.join_error {
                    o.problems
                        .push(format!("client {c} could not subscribe: {e}"));
                }
                o.problems.extend(s.tally.check(c, summary.broadcasts));
                o.delivered += s.tally.received;
                o.latency_sum_ns += s.latency_sum_ns;
                o.latency_max_ns = o.latency_max_ns.max(s.latency_max_ns);
            }
        }
    }
    let dropped: Vec<&(u32, String)> = summaries.iter().flat_map(|s| &s.dropped).collect();
    o.dropped = dropped.len();
    let noticed = matches!(dropped[..], [(c, why)] if *c as usize == victim && why.contains(notice))
        && !summaries[victim % stations]
            .subscribers
            .contains(&(victim as u32));
    if !noticed {
        o.problems.push(format!(
            "the crashed client was not dropped through its notice: {dropped:?}"
        ));
    }
    let subscribed: usize = summaries.iter().map(|s| s.subscribers.len()).sum();
    if subscribed != seen.len() - 1 {
        o.problems.push(format!(
            "{subscribed} subscribers at the end, expected {}",
            seen.len() - 1
        ));
    }
    o
}
