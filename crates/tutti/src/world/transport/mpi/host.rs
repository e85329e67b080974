//! The hybrid transport's inside of a host: under `mpirun`, the ranks of one
//! host (found with `MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)`) exchange
//! every frame through the shared-memory rings of `transport::shm` instead of
//! MPI; MPI carries only the frames between hosts (and the sums of the
//! quiescence waves, which stay one `MPI_Iallreduce` over every rank).
//!
//! Start-up, on the MPI thread ([`plan`]): the host's communicator is split
//! off the world's (`TUTTI_HOSTS=h` splits it further into `h` pretend hosts
//! of consecutive ranks, so one machine exercises both paths), its ranks
//! gather their world ranks (the *mates*, in world order: a mate's index is
//! its rank in the host's shared-memory system) and rank 0 of the world
//! broadcasts a token (its pid and clock) that names the job. The system of a
//! host is `mpi-<token>-<lowest world rank of the host>`; its lowest rank
//! creates it (the others wait for it in `Shm::join`). Once every rank has
//! joined its host's system and mapped every mate's mailbox, a world barrier
//! passes and each rank removes the name of its own mailbox, the lowest also
//! the system's ([`forget`]): the mappings stay, and a job that ends in any
//! way — `MPI_Abort`, a rank killed, `mpirun` killing the rest — leaves
//! nothing in `/dev/shm`. Only a rank killed during start-up, before that
//! barrier, can leave its host's segments behind (a later run recognises them
//! as stale only by name, so they stay until removed by hand).
//!
//! Order: frames to one rank always take one path (the rings for a mate, MPI
//! otherwise), each of which keeps the order of the frames handed to it, so
//! frames to one rank arrive in the order they were sent. Shutdown drains the
//! rings first (every mate has said it sent its last frame) and then MPI,
//! whose shutdown waits for every frame of the other hosts.

use std::sync::{Arc, OnceLock};

use mpi::collective::SystemOperation;
use mpi::topology::{Color, Communicator, SimpleCommunicator};
use mpi::traits::{CommunicatorCollectives, Root};

use super::Aborter;
use crate::world::transport::shm::{self, Shm};
use crate::world::transport::{Sink, Transport};

/// What start-up found about this rank's host.
#[derive(Clone, Debug)]
pub(crate) struct Plan {
    /// The host's shared-memory system.
    pub(crate) name: String,
    /// The world ranks of the host's ranks, lowest first (this one included).
    pub(crate) mates: Vec<usize>,
    /// This rank's index in `mates`.
    pub(crate) index: usize,
    /// Hosts (real or pretend) in the job.
    pub(crate) hosts: usize,
}

/// Finds this rank's host mates (a collective over `world`: every rank calls
/// it). `pretend` splits each host into that many hosts of consecutive ranks.
pub(crate) fn plan(world: &SimpleCommunicator, pretend: Option<usize>) -> Plan {
    let me = world.rank();
    let shared = world.split_shared(me);
    let host = match pretend {
        Some(h) if h > 1 => {
            let (i, n) = (shared.rank() as usize, shared.size() as usize);
            let color = (i * h / n) as i32;
            // A color that is not `undefined` always yields a communicator.
            shared
                .split_by_color_with_key(Color::with_value(color), me)
                .unwrap_or(shared)
        }
        _ => shared,
    };
    let mine = me as u64;
    let mut mates = vec![0u64; host.size() as usize];
    host.all_gather_into(&mine, &mut mates[..]);
    let index = host.rank() as usize;
    let lowest = u64::from(index == 0);
    let mut hosts = 0u64;
    world.all_reduce_into(&lowest, &mut hosts, SystemOperation::sum());
    let mut token = if me == 0 { job_token() } else { 0 };
    world.process_at_rank(0).broadcast_into(&mut token);
    Plan {
        name: format!("mpi-{token:016x}-{}", mates[0]),
        mates: mates.into_iter().map(|r| r as usize).collect(),
        index,
        hosts: hosts as usize,
    }
}

/// A number that tells this job from any other on the host: rank 0's pid
/// and the clock.
fn job_token() -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    (u64::from(std::process::id()) << 40) ^ nanos
}

/// Removes the names of this rank's segments (its mailbox; the lowest rank
/// also the system's) once every mate has mapped them: see the module
/// documentation.
pub(crate) fn forget(plan: &Plan) {
    shm::system::forget(&plan.name, plan.index, plan.index == 0);
}

/// The rings to this rank's host mates.
pub(crate) struct Mates {
    shm: Shm,
    ranks: Arc<WorldRanks>,
    /// Per world rank, its index in the host's system if it is a mate.
    index_of: Vec<Option<usize>>,
    mates: usize,
    hosts: usize,
}

impl Mates {
    /// Joins the host's system and starts its receiving thread, delivering
    /// to `sink` under world ranks.
    pub(crate) fn start(
        plan: &Plan,
        ranks: usize,
        locations: usize,
        sink: Arc<dyn Sink>,
    ) -> Result<Mates, crate::world::error::WorldError> {
        let ranks_sink = Arc::new(WorldRanks {
            sink,
            mates: plan.mates.clone(),
            abort: OnceLock::new(),
        });
        let pending = Shm::join(
            &plan.name,
            plan.mates.len(),
            Some(plan.index),
            locations,
            shm::Members::Mates(plan.mates.clone()),
        )?;
        let shm = pending.attach(Arc::clone(&ranks_sink) as Arc<dyn Sink>)?;
        let mut index_of = vec![None; ranks];
        for (i, &r) in plan.mates.iter().enumerate() {
            if let Some(slot) = index_of.get_mut(r) {
                *slot = Some(i);
            }
        }
        Ok(Mates {
            shm,
            ranks: ranks_sink,
            index_of,
            mates: plan.mates.len(),
            hosts: plan.hosts,
        })
    }

    /// The rings, if world rank `to` is a host mate (never this rank).
    #[inline]
    pub(crate) fn route(&self, to: usize) -> Option<(&Shm, usize)> {
        match self.index_of.get(to) {
            Some(&Some(i)) => Some((&self.shm, i)),
            _ => None,
        }
    }

    /// Whether the job has one host (`TUTTI_HOSTS` pretend hosts count as
    /// hosts): every other rank is a host mate, and MPI carries no frames.
    #[inline]
    pub(crate) fn one_host(&self) -> bool {
        self.hosts == 1
    }

    pub(crate) fn shm(&self) -> &Shm {
        &self.shm
    }

    /// From now on a frame from a mate that the world rejects takes the job
    /// down through MPI (before, through the shared-memory system: every
    /// rank of the host exits, and `mpirun` ends the rest).
    pub(crate) fn abort_with(&self, aborter: Aborter) {
        let _ = self.ranks.abort.set(aborter);
    }

    pub(crate) fn describe(&self) -> String {
        format!(
            "hybrid: {} host(s), {} between the {} ranks of this host, MPI between hosts",
            self.hosts,
            self.shm.describe(),
            self.mates
        )
    }
}

/// The world's sink as the host's system sees it: the system numbers its
/// members 0.., the world by world rank.
struct WorldRanks {
    sink: Arc<dyn Sink>,
    mates: Vec<usize>,
    /// How a rejected frame takes the job down, once MPI is attached.
    abort: OnceLock<Aborter>,
}

impl WorldRanks {
    /// `r`, or the job taken down with its error through MPI.
    fn checked(&self, r: Result<(), String>) -> Result<(), String> {
        match (r, self.abort.get()) {
            (Err(why), Some(a)) => a.abort(&why),
            (r, _) => r,
        }
    }

    fn world_rank(&self, member: usize) -> Result<usize, String> {
        self.mates.get(member).copied().ok_or_else(|| {
            format!(
                "a frame from member {member} of a host system of {} ranks",
                self.mates.len()
            )
        })
    }
}

impl Sink for WorldRanks {
    fn deliver(
        &self,
        from_rank: usize,
        head: Arc<[u8]>,
        body: Option<Vec<u8>>,
    ) -> Result<(), String> {
        let r = self.world_rank(from_rank)?;
        self.checked(self.sink.deliver(r, head, body))
    }

    fn deliver_head(&self, from_rank: usize, head: &[u8]) -> Result<(), String> {
        let r = self.world_rank(from_rank)?;
        self.checked(self.sink.deliver_head(r, head))
    }

    fn body_buffer(&self, len: usize) -> Option<Vec<u8>> {
        self.sink.body_buffer(len)
    }

    fn recycle(&self, buffer: Vec<u8>) {
        self.sink.recycle(buffer);
    }

    fn summed(&self, epoch: u64, sums: [u64; 2]) {
        self.sink.summed(epoch, sums);
    }

    fn rank_died(&self, rank: usize) {
        if let Ok(r) = self.world_rank(rank) {
            self.sink.rank_died(r);
        }
    }

    fn rank_revived(&self, rank: usize) {
        if let Ok(r) = self.world_rank(rank) {
            self.sink.rank_revived(r);
        }
    }
}
