//! `tutti mpi-bench --what collectives`: each collective of tutti's world
//! beside rsmpi's equivalent, in the same run, at 8 B and 64 KiB per location
//! (per pair of locations for the all-to-alls; a block of `u64`s; the scans
//! and reduce-scatter sum element-wise). Both sides verify what they got.
//!
//! | collective     | rsmpi                                  | tutti                      |
//! |----------------|----------------------------------------|----------------------------|
//! | barrier        | `barrier` (no bytes: reported as 0 B)  | `Location::barrier`        |
//! | broadcast      | `broadcast_into`                       | `Location::broadcast`      |
//! | reduce         | `reduce_into_root` / `reduce_into` (sum)| `Location::reduce`        |
//! | all_reduce     | `all_reduce_into` (sum)                | `Location::all_reduce`     |
//! | gather         | `gather_into_root` / `gather_into`     | `Location::gather`         |
//! | all_gather     | `all_gather_into`                      | `Location::all_gather`     |
//! | scatter        | `scatter_into_root` / `scatter_into`   | `Location::scatter`        |
//! | all_to_all     | `all_to_all_into`                      | `Location::all_to_all`     |
//! | all_to_all_v   | `all_to_all_varcount_into`             | `Location::all_to_all_v`   |
//! | scan           | `scan_into` (sum)                      | `Location::scan`           |
//! | exclusive_scan | `exclusive_scan_into` (sum)            | `Location::exclusive_scan` |
//! | reduce_scatter | `reduce_scatter_block_into` (sum)      | `Location::reduce_scatter` |
//!
//! tutti's blocks are `PodVec<u64>` (sent as their bytes), except all-to-all-v,
//! whose rows are plain `Vec<u64>` as its signature asks.

#![cfg_attr(not(feature = "mpi"), allow(dead_code, unused_imports))]

use std::time::{Duration, Instant};

use tutti::msg::codec::PodVec;
use tutti::world::{Location, LocationId};

use crate::measure::Run;

/// The collectives compared.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Coll {
    Barrier,
    Broadcast,
    Reduce,
    AllReduce,
    Gather,
    AllGather,
    Scatter,
    AllToAll,
    AllToAllV,
    Scan,
    ExclusiveScan,
    ReduceScatter,
}

impl Coll {
    pub const ALL: [Coll; 12] = [
        Coll::Barrier,
        Coll::Broadcast,
        Coll::Reduce,
        Coll::AllReduce,
        Coll::Gather,
        Coll::AllGather,
        Coll::Scatter,
        Coll::AllToAll,
        Coll::AllToAllV,
        Coll::Scan,
        Coll::ExclusiveScan,
        Coll::ReduceScatter,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Coll::Barrier => "barrier",
            Coll::Broadcast => "broadcast",
            Coll::Reduce => "reduce",
            Coll::AllReduce => "all_reduce",
            Coll::Gather => "gather",
            Coll::AllGather => "all_gather",
            Coll::Scatter => "scatter",
            Coll::AllToAll => "all_to_all",
            Coll::AllToAllV => "all_to_all_v",
            Coll::Scan => "scan",
            Coll::ExclusiveScan => "exclusive_scan",
            Coll::ReduceScatter => "reduce_scatter",
        }
    }

    /// Bytes per location it is measured at: a barrier carries none.
    pub fn sizes(self, sizes: &[usize]) -> Vec<usize> {
        match self {
            Coll::Barrier => vec![0],
            _ => sizes.to_vec(),
        }
    }
}

/// The first word of the block location `i` sends location `j` (every word
/// of a block is the same).
fn word(i: usize, j: usize, n: usize) -> u64 {
    (i * n + j) as u64
}

/// The first word location `me` must hold after `c` (`None`: nothing to check).
fn expected(c: Coll, me: usize, n: usize, from: usize) -> Option<u64> {
    match c {
        Coll::Barrier => None,
        Coll::Broadcast => Some(word(0, 0, n)),
        Coll::Reduce | Coll::AllReduce => Some((0..n).map(|i| word(i, 0, n)).sum()),
        Coll::Gather | Coll::AllGather => Some(word(from, 0, n)),
        Coll::Scatter => Some(word(0, me, n)),
        Coll::AllToAll | Coll::AllToAllV => Some(word(from, me, n)),
        Coll::Scan => Some((0..=me).map(|i| word(i, 0, n)).sum()),
        Coll::ExclusiveScan => (me > 0).then(|| (0..me).map(|i| word(i, 0, n)).sum()),
        Coll::ReduceScatter => Some((0..n).map(|i| word(i, me, n)).sum()),
    }
}

fn add(a: PodVec<u64>, b: PodVec<u64>) -> PodVec<u64> {
    PodVec(
        a.0.iter()
            .zip(b.0.iter())
            .map(|(x, y)| x.wrapping_add(*y))
            .collect(),
    )
}

/// Whether `blocks` (in location order, `words` each) hold what `me` expects.
fn blocks_ok<'a>(c: Coll, me: usize, n: usize, blocks: impl Iterator<Item = &'a [u64]>) -> bool {
    let mut count = 0;
    let all = blocks.enumerate().all(|(from, b)| {
        count += 1;
        let want = expected(c, me, n, from);
        want.is_none_or(|w| b.iter().all(|&x| x == w))
    });
    all && count == n
}

/// tutti: `reps` calls of `c` with blocks of `words` words; rank 0's run.
pub async fn tutti(loc: Location, c: Coll, words: usize, reps: u64) -> Run {
    let n = loc.world().locations();
    let me = loc.id().index();
    let root = LocationId::new(0);
    let block = |i: usize, j: usize| PodVec(vec![word(i, j, n); words]);
    let one = |v: &PodVec<u64>, from: usize| {
        expected(c, me, n, from).is_none_or(|w| v.len() == words && v.iter().all(|&x| x == w))
    };
    loc.barrier().await;
    let start = Instant::now();
    let mut ok = true;
    for r in 0..reps {
        let last = r + 1 == reps;
        match c {
            Coll::Barrier => loc.barrier().await,
            Coll::Broadcast => {
                let got = loc.broadcast(root, (me == 0).then(|| block(0, 0))).await;
                ok &= !last || one(&got, 0);
            }
            Coll::Reduce => {
                let got = loc.reduce(root, block(me, 0), add).await;
                if last {
                    ok &= match got {
                        Some(v) => me == 0 && one(&v, 0),
                        None => me != 0,
                    };
                }
            }
            Coll::AllReduce => {
                let got = loc.all_reduce(block(me, 0), add).await;
                ok &= !last || one(&got, 0);
            }
            Coll::Gather => {
                let got = loc.gather(root, block(me, 0)).await;
                if last {
                    ok &= match got {
                        Some(all) => blocks_ok(c, me, n, all.iter().map(|b| &b.0[..])),
                        None => me != 0,
                    };
                }
            }
            Coll::AllGather => {
                let all = loc.all_gather(block(me, 0)).await;
                ok &= !last || blocks_ok(c, me, n, all.iter().map(|b| &b.0[..]));
            }
            Coll::Scatter => {
                let values = (me == 0).then(|| (0..n).map(|j| block(0, j)).collect());
                let got = loc.scatter(root, values).await;
                ok &= !last || one(&got, 0);
            }
            Coll::AllToAll => {
                let got = loc.all_to_all((0..n).map(|j| block(me, j)).collect()).await;
                ok &= !last || blocks_ok(c, me, n, got.iter().map(|b| &b.0[..]));
            }
            Coll::AllToAllV => {
                let rows = (0..n).map(|j| vec![word(me, j, n); words]).collect();
                let got = loc.all_to_all_v(rows).await;
                ok &= !last || blocks_ok(c, me, n, got.iter().map(|b| &b[..]));
            }
            Coll::Scan => {
                let got = loc.scan(block(me, 0), add).await;
                ok &= !last || one(&got, 0);
            }
            Coll::ExclusiveScan => {
                let got = loc.exclusive_scan(block(me, 0), add).await;
                if last {
                    ok &= match got {
                        Some(v) => me > 0 && one(&v, 0),
                        None => me == 0,
                    };
                }
            }
            Coll::ReduceScatter => {
                let values = (0..n).map(|j| block(me, j)).collect();
                let got = loc.reduce_scatter(values, add).await;
                ok &= !last || one(&got, 0);
            }
        }
    }
    let elapsed = start.elapsed();
    let ok = loc.all_reduce(ok, |a, b| a && b).await;
    Run { elapsed, ok }
}

#[cfg(feature = "mpi")]
pub use raw::rsmpi;

#[cfg(feature = "mpi")]
mod raw {
    use super::*;
    use mpi::collective::SystemOperation;
    use mpi::datatype::{Partition, PartitionMut};
    use mpi::topology::SimpleCommunicator;
    use mpi::traits::*;
    use mpi::Count;

    /// rsmpi: `reps` calls of `c` with blocks of `words` words; this rank's run.
    pub fn rsmpi(comm: &SimpleCommunicator, c: Coll, words: usize, reps: u64) -> Run {
        let n = comm.size() as usize;
        let me = comm.rank() as usize;
        let root = comm.process_at_rank(0);
        let send_one = vec![word(me, 0, n); words];
        let send_all: Vec<u64> = (0..n)
            .flat_map(|j| std::iter::repeat_n(word(me, j, n), words))
            .collect();
        let mut recv_all = vec![0u64; n * words];
        let mut recv_one = vec![0u64; words];
        let mut bcast = if me == 0 {
            send_one.clone()
        } else {
            vec![0u64; words]
        };
        let counts = vec![words as Count; n];
        let displs: Vec<Count> = (0..n).map(|j| (j * words) as Count).collect();
        comm.barrier();
        let start = Instant::now();
        for _ in 0..reps {
            match c {
                Coll::Barrier => comm.barrier(),
                Coll::Broadcast => root.broadcast_into(&mut bcast[..]),
                Coll::Reduce if me == 0 => {
                    root.reduce_into_root(&send_one[..], &mut recv_one[..], SystemOperation::sum())
                }
                Coll::Reduce => root.reduce_into(&send_one[..], SystemOperation::sum()),
                Coll::AllReduce => {
                    comm.all_reduce_into(&send_one[..], &mut recv_one[..], SystemOperation::sum())
                }
                Coll::Gather if me == 0 => root.gather_into_root(&send_one[..], &mut recv_all[..]),
                Coll::Gather => root.gather_into(&send_one[..]),
                Coll::AllGather => comm.all_gather_into(&send_one[..], &mut recv_all[..]),
                Coll::Scatter if me == 0 => {
                    root.scatter_into_root(&send_all[..], &mut recv_one[..])
                }
                Coll::Scatter => root.scatter_into(&mut recv_one[..]),
                Coll::AllToAll => comm.all_to_all_into(&send_all[..], &mut recv_all[..]),
                Coll::AllToAllV => {
                    let s = Partition::new(&send_all[..], &counts[..], &displs[..]);
                    let mut r = PartitionMut::new(&mut recv_all[..], &counts[..], &displs[..]);
                    comm.all_to_all_varcount_into(&s, &mut r);
                }
                Coll::Scan => {
                    comm.scan_into(&send_one[..], &mut recv_one[..], SystemOperation::sum())
                }
                Coll::ExclusiveScan => comm.exclusive_scan_into(
                    &send_one[..],
                    &mut recv_one[..],
                    SystemOperation::sum(),
                ),
                Coll::ReduceScatter => comm.reduce_scatter_block_into(
                    &send_all[..],
                    &mut recv_one[..],
                    SystemOperation::sum(),
                ),
            }
        }
        let elapsed: Duration = start.elapsed();
        let ok = match c {
            Coll::Barrier => true,
            Coll::Broadcast => bcast.iter().all(|&x| x == word(0, 0, n)),
            Coll::Gather | Coll::Reduce if me != 0 => true,
            Coll::Gather | Coll::AllGather | Coll::AllToAll | Coll::AllToAllV => {
                blocks_ok(c, me, n, recv_all.chunks(words.max(1)))
            }
            _ => expected(c, me, n, 0).is_none_or(|w| recv_one.iter().all(|&x| x == w)),
        };
        let mut all_ok = false;
        comm.all_reduce_into(&ok, &mut all_ok, SystemOperation::logical_and());
        Run {
            elapsed,
            ok: all_ok,
        }
    }
}
