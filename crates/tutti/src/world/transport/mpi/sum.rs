//! The sum of a quiescence wave over the ranks: each rank adds its
//! locations' `(sent, handled)` counts and the ranks combine them by recursive
//! doubling over point-to-point messages on their own communicator (16 bytes
//! per message, [`sum_plan`]), so two ranks sum a wave with one exchange.
//! (Open MPI's `MPI_Iallreduce`, from libnbc, cost about four `MPI_Barrier`s
//! here.) Several waves may be in flight; a message's tag holds its step and
//! its wave modulo 256, so a wave's messages never meet another's receives.
//! The engine (`engine.rs`) starts a wave's sum when a location contributes
//! and advances every sum in each progress round; the total goes to the world
//! (`Sink::summed`).

use mpi::topology::SimpleCommunicator;
use mpi::traits::AsRaw;

use super::raw::{self, Request};
use crate::world::transport::Sink;

/// Two `u64`s as the bytes MPI sends.
fn as_bytes(v: &[u64; 2]) -> &[u8] {
    // SAFETY: 16 initialized bytes of a live array, read-only, no padding.
    unsafe { std::slice::from_raw_parts(v.as_ptr().cast::<u8>(), 16) }
}

/// What one step of a wave's sum does with its partner rank.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SumKind {
    /// Send the partial sum and add the partner's.
    Exchange,
    /// Send the partial sum (the partner folds it into its own, or it is the
    /// total the partner waits for).
    Give,
    /// Add the partner's partial sum.
    Take,
    /// The partner's value is the total.
    Result,
}

/// One step of a wave's sum: with whom, and the step's tag (both partners use
/// the same one).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct SumStep {
    kind: SumKind,
    partner: usize,
    tag: i32,
}

/// Tag of the steps that fold the extra ranks in.
const SUM_TAG_IN: i32 = 0;
/// Tag of the steps that hand the extra ranks the total.
const SUM_TAG_OUT: i32 = 63;

/// The steps of a sum over `ranks` ranks as seen by `rank`: recursive doubling
/// over the largest power of two `q ≤ ranks`, the `ranks - q` extra ranks first
/// folding their value into a neighbour and getting the total back from it at
/// the end (MPICH's allreduce): `log2 q` exchanges, one for two ranks.
fn sum_plan(rank: usize, ranks: usize) -> Vec<SumStep> {
    let step = |kind, partner, tag| SumStep { kind, partner, tag };
    let mut plan = Vec::new();
    if ranks < 2 {
        return plan;
    }
    let q = 1usize << (usize::BITS - 1 - ranks.leading_zeros());
    let rem = ranks - q;
    // Position among the `q` ranks of the doubling (`None`: an extra rank).
    let me = if rank < 2 * rem {
        if rank % 2 == 0 {
            plan.push(step(SumKind::Give, rank + 1, SUM_TAG_IN));
            plan.push(step(SumKind::Result, rank + 1, SUM_TAG_OUT));
            return plan;
        }
        plan.push(step(SumKind::Take, rank - 1, SUM_TAG_IN));
        rank / 2
    } else {
        rank - rem
    };
    let real = |n: usize| if n < rem { 2 * n + 1 } else { n + rem };
    let mut level = 1;
    while (1usize << (level - 1)) < q {
        let partner = real(me ^ (1 << (level - 1)));
        plan.push(step(SumKind::Exchange, partner, level));
        level += 1;
    }
    if rank < 2 * rem {
        plan.push(step(SumKind::Give, rank - 1, SUM_TAG_OUT));
    }
    plan
}

/// A quiescence wave's sum in flight: the plan's next step, its requests, and
/// buffers boxed beside them so that they do not move while MPI uses them.
struct Summing {
    epoch: u64,
    step: usize,
    started: bool,
    /// This step's receive (if it has one) completed.
    received: bool,
    acc: [u64; 2],
    out: Box<[u64; 2]>,
    inc: Box<[u64; 2]>,
    reqs: [Request; 2],
}

/// The sums of this rank's quiescence waves: the plan of steps (the same for
/// every wave) and the waves in flight.
pub(super) struct Sums {
    plan: Vec<SumStep>,
    summing: Vec<Summing>,
    /// Waves summed so far (their totals handed to the sink).
    completed: u64,
}

impl Sums {
    /// No sum in flight, for rank `rank` of `ranks`.
    pub(super) fn new(rank: usize, ranks: usize) -> Sums {
        Sums {
            plan: sum_plan(rank, ranks),
            summing: Vec::new(),
            completed: 0,
        }
    }

    /// How many waves have been summed (their totals handed to the sink).
    pub(super) fn completed(&self) -> u64 {
        self.completed
    }

    /// Whether no wave's sum is in flight.
    pub(super) fn is_empty(&self) -> bool {
        self.summing.is_empty()
    }

    /// Starts the sum of a quiescence wave over the ranks ([`sum_plan`]). Every
    /// rank starts its waves in the same order (a location contributes to a
    /// wave only after it has seen the previous wave's result), and each step's
    /// messages carry the wave and step in their tag. Its messages start at
    /// the next [`advance`](Self::advance).
    pub(super) fn start(&mut self, epoch: u64, value: [u64; 2]) {
        self.summing.push(Summing {
            epoch,
            step: 0,
            started: false,
            received: false,
            acc: value,
            out: Box::new([0; 2]),
            inc: Box::new([0; 2]),
            reqs: [raw::null_request(), raw::null_request()],
        });
    }

    /// Moves every wave's sum as far as its messages allow; whether any moved.
    pub(super) fn advance(
        &mut self,
        coll: &SimpleCommunicator,
        sink: &dyn Sink,
    ) -> Result<bool, String> {
        let mut moved = false;
        let mut i = 0;
        while i < self.summing.len() {
            let s = &mut self.summing[i];
            while let Some(&step) = self.plan.get(s.step) {
                // Tags: the step, and the wave (mod 256), so a wave's messages
                // never meet another's receives.
                let tag = step.tag | (((s.epoch & 0xff) as i32) << 6);
                if !s.started {
                    s.started = true;
                    *s.out = s.acc;
                    let p = step.partner;
                    let (send_to, recv_from) = match step.kind {
                        SumKind::Exchange => (Some(p), Some(p)),
                        SumKind::Give => (Some(p), None),
                        SumKind::Take | SumKind::Result => (None, Some(p)),
                    };
                    if let Some(p) = recv_from {
                        // SAFETY: `inc` is boxed in `summing` and neither read
                        // nor freed before this request completes (`test` below;
                        // `shutdown` waits for every sum).
                        s.reqs[1] = unsafe {
                            raw::irecv(
                                s.inc.as_mut_ptr().cast::<u8>(),
                                16,
                                p as i32,
                                tag,
                                coll.as_raw(),
                            )
                        };
                    }
                    if let Some(p) = send_to {
                        // SAFETY: as above, for `out`, which is not written
                        // before the request completes.
                        s.reqs[0] = unsafe { raw::isend(as_bytes(&s.out), p, tag, coll.as_raw()) };
                    }
                }
                // A null request (none started, or completed before) tests
                // complete at once, so only a pending one stops here.
                if raw::test(&mut s.reqs[0]).is_none() {
                    break;
                }
                if !s.received {
                    match raw::test(&mut s.reqs[1]) {
                        None => break,
                        Some(st) => {
                            s.received = true;
                            if step.kind == SumKind::Give {
                                // Nothing was received.
                            } else if st.count != 16 {
                                let (count, from) = (st.count, st.source);
                                return Err(format!(
                                    "a wave's sum of {count} bytes from rank {from} (16 expected)"
                                ));
                            }
                        }
                    }
                }
                match step.kind {
                    SumKind::Exchange | SumKind::Take => {
                        s.acc[0] = s.acc[0].wrapping_add(s.inc[0]);
                        s.acc[1] = s.acc[1].wrapping_add(s.inc[1]);
                    }
                    SumKind::Result => s.acc = *s.inc,
                    SumKind::Give => {}
                }
                s.received = false;
                s.step += 1;
                s.started = false;
                moved = true;
            }
            if s.step >= self.plan.len() {
                let s = self.summing.remove(i);
                self.completed += 1;
                sink.summed(s.epoch, s.acc);
                moved = true;
            } else {
                i += 1;
            }
        }
        Ok(moved)
    }

    /// At shutdown: a wave left unfinished (a location gave up its detection,
    /// and a rank never joined the wave) has its receive cancelled; its send
    /// is 16 bytes, which MPI completes without the peer.
    pub(super) fn abandon(&mut self, rank: usize) {
        if !self.summing.is_empty() {
            crate::world::say(&format!(
                "rank {}: {} quiescence wave(s) left unfinished at shutdown",
                rank,
                self.summing.len()
            ));
        }
        for mut s in std::mem::take(&mut self.summing) {
            raw::cancel(&mut s.reqs[1]);
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(1);
            let mut done = true;
            for req in s.reqs.iter_mut() {
                while raw::test(req).is_none() {
                    if std::time::Instant::now() > deadline {
                        done = false;
                        break;
                    }
                    std::thread::yield_now();
                }
            }
            if !done {
                // MPI may still use the buffers: never free them.
                std::mem::forget(s);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{HashMap, VecDeque};

    use super::*;

    /// Runs every rank's plan against FIFO channels per (sender, receiver,
    /// tag), as MPI matches them, until all are done (or none can move).
    #[test]
    fn every_rank_gets_the_total_for_any_number_of_ranks() {
        for ranks in 1..=33usize {
            let plans: Vec<_> = (0..ranks).map(|r| sum_plan(r, ranks)).collect();
            let mut acc: Vec<u64> = (0..ranks as u64).map(|r| 1 << r).collect();
            let mut at = vec![0usize; ranks];
            let mut sent = vec![false; ranks];
            let mut chan: HashMap<(usize, usize, i32), VecDeque<u64>> = HashMap::new();
            loop {
                let mut moved = false;
                for r in 0..ranks {
                    let Some(&st) = plans[r].get(at[r]) else {
                        continue;
                    };
                    if !sent[r] && matches!(st.kind, SumKind::Exchange | SumKind::Give) {
                        chan.entry((r, st.partner, st.tag))
                            .or_default()
                            .push_back(acc[r]);
                        sent[r] = true;
                        moved = true;
                    }
                    if st.kind == SumKind::Give {
                        at[r] += 1;
                        sent[r] = false;
                        continue;
                    }
                    let Some(v) = chan
                        .get_mut(&(st.partner, r, st.tag))
                        .and_then(VecDeque::pop_front)
                    else {
                        continue;
                    };
                    acc[r] = if st.kind == SumKind::Result {
                        v
                    } else {
                        acc[r] + v
                    };
                    at[r] += 1;
                    sent[r] = false;
                    moved = true;
                }
                if !moved {
                    break;
                }
            }
            let total = (1u64 << ranks) - 1;
            for r in 0..ranks {
                assert_eq!(at[r], plans[r].len(), "{ranks} ranks: rank {r} is stuck");
                assert_eq!(acc[r], total, "{ranks} ranks: rank {r}");
            }
            assert!(chan.values().all(VecDeque::is_empty), "{ranks} ranks");
            let exchanges = plans[0]
                .iter()
                .filter(|s| s.kind == SumKind::Exchange)
                .count();
            assert!(ranks != 2 || exchanges == 1, "two ranks: one exchange");
        }
    }
}
