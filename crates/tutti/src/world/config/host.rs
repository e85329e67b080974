//! What the host and the launcher tell: whether an MPI launcher (`mpirun`,
//! `mpiexec`, `srun --mpi`, …) started this process and how many ranks it
//! started here ([`Launch`], from the launcher's environment variables), and
//! how many cores the ranks of this host have ([`Cores`]: this process's, and
//! on Linux its launcher's `Cpus_allowed_list` in `/proc`), which decide the
//! default workers per rank and whether the host is oversubscribed.

use crate::runtime::available_cores;

/// How the process was launched, as far as the environment tells.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Launch {
    /// Processes in the job.
    pub(crate) size: usize,
    /// Processes of the job on this host, if the launcher says.
    pub(crate) local_size: Option<usize>,
    /// The variable that gave it away.
    pub(crate) var: &'static str,
}

/// Environment variables set by MPI launchers: Open MPI's `mpirun`, then the
/// PMI/PMIx ones of MPICH's Hydra, Slurm's `srun --mpi` and others.
const SIZE_VARS: [(&str, Option<&str>); 3] = [
    ("OMPI_COMM_WORLD_SIZE", Some("OMPI_COMM_WORLD_LOCAL_SIZE")),
    ("PMI_SIZE", Some("MPI_LOCALNRANKS")),
    ("PMIX_SIZE", None),
];

/// The cores of this host for the ranks a launcher started here, and whether
/// the launcher bound this rank to cores of its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Cores {
    /// Cores this process may use.
    own: usize,
    /// Cores the launcher shares among its ranks on this host.
    host: usize,
}

impl Cores {
    /// `own` cores for this process, `launcher` (if known) for the process
    /// that started it. A launcher that binds each rank to cores of its own
    /// (Open MPI's default when the ranks fit the cores: `mpirun -n 2` on two
    /// cores gives each rank one) leaves the rank a narrower mask than its
    /// own: the ranks then share the launcher's cores. A rank whose mask is
    /// the launcher's was not bound and sees the host's cores itself.
    pub(super) fn new(own: usize, launcher: Option<usize>) -> Cores {
        Cores {
            own,
            host: launcher.map_or(own, |l| l.max(own)),
        }
    }

    /// The cores of this process and of the ranks on this host: only a
    /// launched rank with others on its host looks at its launcher's cores.
    pub(super) fn of_host(launched: bool, ranks_here: usize) -> Cores {
        Cores::new(
            available_cores(),
            if launched && ranks_here > 1 {
                launcher_cores()
            } else {
                None
            },
        )
    }

    fn bound(self) -> bool {
        self.own < self.host
    }

    /// Default workers for each of `ranks` ranks on this host: a bound rank
    /// uses its cores, an unbound one its share of the host's.
    pub(super) fn workers(self, ranks: usize) -> usize {
        if self.bound() {
            self.own
        } else {
            (self.own / ranks.max(1)).max(1)
        }
    }

    /// More ranks than cores: they take turns on the cores.
    pub(super) fn oversubscribed(self, ranks: usize) -> bool {
        ranks > self.host
    }
}

/// The cores the process that started this one may use (Linux: its
/// `Cpus_allowed_list` in `/proc`), if it can be read.
fn launcher_cores() -> Option<usize> {
    #[cfg(target_os = "linux")]
    {
        let parent = std::os::unix::process::parent_id();
        let status = std::fs::read_to_string(format!("/proc/{parent}/status")).ok()?;
        let list = status
            .lines()
            .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))?;
        count_cpu_list(list.trim())
    }
    #[cfg(not(target_os = "linux"))]
    {
        None
    }
}

/// The number of CPUs in a Linux CPU list such as `0-3,8,10-11`; `None` if it
/// does not parse (or is empty).
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
fn count_cpu_list(list: &str) -> Option<usize> {
    let mut n = 0usize;
    for part in list.split(',') {
        let part = part.trim();
        let (lo, hi) = match part.split_once('-') {
            Some((lo, hi)) => (lo.parse::<usize>().ok()?, hi.parse::<usize>().ok()?),
            None => {
                let c = part.parse::<usize>().ok()?;
                (c, c)
            }
        };
        n = n.checked_add(hi.checked_sub(lo)? + 1)?;
    }
    (n > 0).then_some(n)
}

/// Whether an MPI launcher (`mpirun`, `mpiexec`, `srun --mpi`, …) started this
/// process, as its environment tells: the same test [`World::from_env`](crate::world::World::from_env)
/// uses to choose the MPI transport. Programs use it to pick defaults that suit
/// a launched job (e.g. one location per rank).
///
/// ```
/// // One location per rank under mpirun, four threads' worth otherwise.
/// let locations = if tutti::world::launched_by_mpi() { 1 } else { 4 };
/// # let _ = locations;
/// ```
pub fn launched_by_mpi() -> bool {
    detect_launch(|v| std::env::var(v).ok()).is_some()
}

/// Recognises an MPI launcher from `var` (a lookup function, so tests need not touch
/// the process environment).
pub(crate) fn detect_launch(var: impl Fn(&str) -> Option<String>) -> Option<Launch> {
    for (size_var, local_var) in SIZE_VARS {
        if let Some(size) = var(size_var).and_then(|v| v.trim().parse::<usize>().ok()) {
            let local_size = local_var
                .and_then(&var)
                .and_then(|v| v.trim().parse::<usize>().ok())
                .filter(|&n| n > 0);
            return Some(Launch {
                size,
                local_size,
                var: size_var,
            });
        }
    }
    None
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// An environment of `pairs`, for `resolve`'s tests too.
    pub(in crate::world::config) fn env_of(
        pairs: &'static [(&'static str, &'static str)],
    ) -> impl Fn(&str) -> Option<String> {
        move |k| {
            pairs
                .iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn launchers_are_recognised() {
        assert_eq!(detect_launch(env_of(&[])), None);
        let l = detect_launch(env_of(&[
            ("OMPI_COMM_WORLD_SIZE", "4"),
            ("OMPI_COMM_WORLD_LOCAL_SIZE", "2"),
        ]))
        .unwrap();
        assert_eq!(
            (l.size, l.local_size, l.var),
            (4, Some(2), "OMPI_COMM_WORLD_SIZE")
        );
        let l = detect_launch(env_of(&[("PMI_SIZE", "3")])).unwrap();
        assert_eq!((l.size, l.local_size), (3, None));
        assert_eq!(detect_launch(env_of(&[("PMI_SIZE", "x")])), None);
    }

    #[test]
    fn cpu_lists_count_their_cpus() {
        assert_eq!(count_cpu_list("0"), Some(1));
        assert_eq!(count_cpu_list("0-1"), Some(2));
        assert_eq!(count_cpu_list("0-3,8,10-11"), Some(7));
        assert_eq!(count_cpu_list(""), None);
        assert_eq!(count_cpu_list("3-1"), None);
        assert_eq!(count_cpu_list("0-x"), None);
    }

    #[test]
    fn ranks_bound_to_cores_of_their_own_are_not_oversubscribed() {
        // `mpirun -n 2` on two cores: each rank bound to one.
        let bound = Cores::new(1, Some(2));
        assert!(bound.bound());
        assert!(!bound.oversubscribed(2));
        assert_eq!(bound.workers(2), 1);
        // Bound to two of eight cores: two workers.
        assert_eq!(Cores::new(2, Some(8)).workers(4), 2);
        // `mpirun -n 4 --oversubscribe` on two cores: nothing bound.
        let shared = Cores::new(2, Some(2));
        assert!(!shared.bound());
        assert!(shared.oversubscribed(4));
        assert_eq!(shared.workers(4), 1);
        // Four bound ranks sharing two cores.
        assert!(Cores::new(1, Some(2)).oversubscribed(4));
        // No launcher known: this process's cores are the host's.
        let alone = Cores::new(2, None);
        assert!(!alone.oversubscribed(2));
        assert!(alone.oversubscribed(3));
        assert_eq!(alone.workers(2), 1);
    }
}
