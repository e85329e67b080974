//! Resolving a [`WorldBuilder`] into the [`WorldConfig`] a world runs with.
//! Each setting is one row below: the builder's value wins, then its
//! `TUTTI_*` variable (unless the builder ignores the environment), then the
//! default; a value that does not parse or is out of range is
//! [`WorldError::BadSetting`] naming the variable, the value and what was
//! expected. Two settings depend on the launch: the transport (an MPI
//! launcher selects MPI, or is an error or a warning without the `mpi`
//! feature) and the default workers (the cores of this host shared among its
//! ranks, `host.rs`).

use std::time::Duration;

use super::host::{detect_launch, Cores, Launch};
use super::{
    ProgressMode, TransportKind, WorldBuilder, WorldConfig, DEFAULT_AGGREGATION_BYTES,
    DEFAULT_AGGREGATION_INPROC, DEFAULT_AGGREGATION_MPI, DEFAULT_FLUSH_AFTER,
    MAX_AGGREGATION_BYTES,
};
use crate::world::error::WorldError;

const WHOLE: &str = "a positive whole number";
const BYTES: &str = "a number of bytes from 64 to 61440";

impl WorldBuilder {
    /// Resolves every setting against the environment `var` and the launcher.
    pub(crate) fn resolve(
        &self,
        var: &dyn Fn(&str) -> Option<String>,
    ) -> Result<WorldConfig, WorldError> {
        let env = Env {
            read: self.env,
            var,
        };
        let launch = detect_launch(var);
        let mut warnings = Vec::new();
        let chosen = env.parsed(
            "TUTTI_TRANSPORT",
            self.transport,
            TransportKind::parse,
            TRANSPORTS,
        )?;
        let system = self.system.clone().or_else(|| env.get("TUTTI_SYSTEM"));
        let transport =
            self.decide_transport(chosen, system.is_some(), launch.as_ref(), &mut warnings)?;
        let processes = env.count(
            "TUTTI_RANKS",
            self.processes,
            1,
            "a positive number of processes",
        )?;
        let rank_wanted = env.parsed("TUTTI_RANK", None, |v| v.parse().ok(), "a rank (0, 1, …)")?;
        if transport == TransportKind::Shm && processes.is_none() {
            return Err(WorldError::BadSetting {
                var: "TUTTI_RANKS",
                value: String::new(),
                expected: "the number of processes of the named system (or use `tutti launch`)",
            });
        }
        let ranks_here = match transport {
            TransportKind::Mpi | TransportKind::Hybrid => launch
                .as_ref()
                .map_or(1, |l| l.local_size.unwrap_or(l.size)),
            TransportKind::Shm => processes.unwrap_or(1),
            _ => 1,
        };
        let cores = Cores::of_host(launch.is_some(), ranks_here);
        let workers = env
            .count("TUTTI_WORKERS", self.workers, 1, WHOLE)?
            .unwrap_or_else(|| cores.workers(ranks_here));
        let locations = env
            .count("TUTTI_LOCATIONS", self.locations, 1, WHOLE)?
            .unwrap_or(workers);
        at_most(
            "TUTTI_LOCATIONS",
            locations,
            u32::MAX as usize / 1024,
            "at most 4194303 locations per rank",
        )?;
        let aggregation = env
            .count(
                "TUTTI_AGGREGATION",
                self.aggregation,
                1,
                "a positive whole number of messages",
            )?
            .unwrap_or(match transport {
                TransportKind::Mpi | TransportKind::Hybrid => DEFAULT_AGGREGATION_MPI,
                _ => DEFAULT_AGGREGATION_INPROC,
            });
        let aggregation_bytes = env
            .count("TUTTI_AGGREGATION_BYTES", self.aggregation_bytes, 64, BYTES)?
            .unwrap_or(DEFAULT_AGGREGATION_BYTES);
        at_most(
            "TUTTI_AGGREGATION_BYTES",
            aggregation_bytes,
            MAX_AGGREGATION_BYTES,
            BYTES,
        )?;
        let flush_after = match self.flush_after {
            Some(d) => d,
            None => env
                .count(
                    "TUTTI_FLUSH_US",
                    None,
                    1,
                    "a positive number of microseconds",
                )?
                .map_or(DEFAULT_FLUSH_AFTER, |us| Duration::from_micros(us as u64)),
        };
        let progress = env
            .parsed(
                "TUTTI_PROGRESS",
                self.progress,
                ProgressMode::parse,
                "thread or poll",
            )?
            .unwrap_or_default();
        let pretend_hosts = env.count(
            "TUTTI_HOSTS",
            None,
            1,
            "a positive number of pretend hosts per host",
        )?;
        Ok(WorldConfig {
            transport,
            locations,
            workers,
            // More ranks on this host than cores: the ranks' processes take
            // turns on the cores (see `WorldConfig::oversubscribed`).
            oversubscribed: cores.oversubscribed(ranks_here),
            aggregation,
            aggregation_bytes,
            flush_after,
            progress,
            launch,
            warnings,
            system,
            processes: processes.unwrap_or(1),
            rank_wanted,
            pretend_hosts,
            rank: 0,
            ranks: 1,
            engine: String::new(),
        })
    }

    /// The transport: `chosen` (the builder's choice, else `TUTTI_TRANSPORT`),
    /// else `auto`, which is shared memory with a named system, hybrid (MPI
    /// between hosts, shared memory within one) under a launcher, and
    /// in-process otherwise. A launch of several processes
    /// without the `mpi` feature is an error (each would run alone); a launch
    /// of one, or an in-process world chosen by the environment under a
    /// launcher, is a warning.
    fn decide_transport(
        &self,
        chosen: Option<TransportKind>,
        system: bool,
        launch: Option<&Launch>,
        warnings: &mut Vec<String>,
    ) -> Result<TransportKind, WorldError> {
        let chosen = match (chosen.unwrap_or_default(), system) {
            (TransportKind::Auto, true) => TransportKind::Shm,
            (t, _) => t,
        };
        Ok(match (chosen, launch) {
            (TransportKind::Auto, Some(_)) if cfg!(feature = "mpi") => TransportKind::Hybrid,
            (TransportKind::Auto, Some(l)) if l.size > 1 => {
                return Err(WorldError::MpiNotBuilt {
                    size: l.size,
                    var: l.var,
                })
            }
            (TransportKind::Auto, Some(l)) => {
                warnings.push(format!(
                    "launched by an MPI launcher ({}={}) but built without the `mpi` feature: \
                     running as a single in-process world",
                    l.var, l.size
                ));
                TransportKind::InProcess
            }
            (TransportKind::Auto, None) => TransportKind::InProcess,
            (TransportKind::Mpi | TransportKind::Hybrid, _) if !cfg!(feature = "mpi") => {
                return Err(WorldError::MpiNotBuilt {
                    size: launch.map_or(1, |l| l.size),
                    var: "TUTTI_TRANSPORT",
                })
            }
            (TransportKind::InProcess, Some(l)) if l.size > 1 && self.transport.is_none() => {
                warnings.push(format!(
                    "launched as one of {} MPI processes ({}) but the in-process transport was \
                     chosen: every process runs its own independent world",
                    l.size, l.var
                ));
                TransportKind::InProcess
            }
            (t, _) => t,
        })
    }
}

const TRANSPORTS: &str = "auto, inproc, mpi, hybrid or shm";

/// The environment as the builder sees it: nothing when it ignores it.
struct Env<'a> {
    read: bool,
    var: &'a dyn Fn(&str) -> Option<String>,
}

impl Env<'_> {
    fn get(&self, name: &str) -> Option<String> {
        if self.read {
            (self.var)(name)
        } else {
            None
        }
    }

    /// `given`, else variable `name` parsed by `parse`, else `None`; a
    /// variable that does not parse is an error naming it.
    fn parsed<T>(
        &self,
        name: &'static str,
        given: Option<T>,
        parse: impl Fn(&str) -> Option<T>,
        expected: &'static str,
    ) -> Result<Option<T>, WorldError> {
        if given.is_some() {
            return Ok(given);
        }
        match self.get(name) {
            None => Ok(None),
            Some(v) => match parse(v.trim()) {
                Some(t) => Ok(Some(t)),
                None => Err(WorldError::BadSetting {
                    var: name,
                    value: v,
                    expected,
                }),
            },
        }
    }

    /// A whole number of at least `min`: `given`, else variable `name`, else
    /// `None`; one below `min` or that does not parse is an error naming it.
    fn count(
        &self,
        name: &'static str,
        given: Option<usize>,
        min: usize,
        expected: &'static str,
    ) -> Result<Option<usize>, WorldError> {
        if let Some(n) = given {
            if n < min {
                return Err(WorldError::BadSetting {
                    var: name,
                    value: n.to_string(),
                    expected,
                });
            }
            return Ok(Some(n));
        }
        let at_least = |v: &str| v.parse::<usize>().ok().filter(|&n| n >= min);
        self.parsed(name, None, at_least, expected)
    }
}

/// `n` (of setting `name`) if it is at most `max`, else an error naming it.
fn at_most(
    name: &'static str,
    n: usize,
    max: usize,
    expected: &'static str,
) -> Result<(), WorldError> {
    if n > max {
        return Err(WorldError::BadSetting {
            var: name,
            value: n.to_string(),
            expected,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::super::host::tests::env_of;
    use super::super::{ProgressMode, TransportKind, WorldBuilder};
    use crate::world::error::WorldError;

    #[test]
    fn environment_settings_apply_and_bad_ones_are_named() {
        let c = WorldBuilder::new()
            .resolve(&env_of(&[
                ("TUTTI_LOCATIONS", "3"),
                ("TUTTI_WORKERS", "2"),
                ("TUTTI_AGGREGATION", "16"),
                ("TUTTI_FLUSH_US", "70"),
                ("TUTTI_PROGRESS", "poll"),
            ]))
            .unwrap();
        assert_eq!(c.locations(), 3);
        assert_eq!(c.workers(), 2);
        assert_eq!(c.aggregation(), 16);
        assert_eq!(c.flush_after(), Duration::from_micros(70));
        assert_eq!(c.progress(), ProgressMode::Poll);
        assert_eq!(c.transport(), TransportKind::InProcess);

        // The builder wins over the environment.
        let c = WorldBuilder::new()
            .locations(5)
            .resolve(&env_of(&[("TUTTI_LOCATIONS", "3")]))
            .unwrap();
        assert_eq!(c.locations(), 5);
        // ignore_env ignores it entirely.
        let c = WorldBuilder::new()
            .ignore_env()
            .workers(1)
            .resolve(&env_of(&[("TUTTI_LOCATIONS", "3")]))
            .unwrap();
        assert_eq!(c.locations(), 1);

        for (var, value) in [
            ("TUTTI_LOCATIONS", "0"),
            ("TUTTI_WORKERS", "many"),
            ("TUTTI_AGGREGATION", "-1"),
            ("TUTTI_AGGREGATION_BYTES", "10"),
            ("TUTTI_AGGREGATION_BYTES", "61441"),
            ("TUTTI_TRANSPORT", "carrier-pigeon"),
            ("TUTTI_PROGRESS", "sometimes"),
            ("TUTTI_HOSTS", "0"),
        ] {
            let pairs: &'static [(&'static str, &'static str)] =
                Box::leak(vec![(var, value)].into_boxed_slice());
            let e = WorldBuilder::new().resolve(&env_of(pairs)).unwrap_err();
            let text = e.to_string();
            assert!(text.contains(var) && text.contains(value), "{text}");
        }
        let e = WorldBuilder::new()
            .locations(0)
            .resolve(&env_of(&[]))
            .unwrap_err();
        assert!(e.to_string().contains("TUTTI_LOCATIONS"), "{e}");
    }

    #[test]
    fn a_launch_without_the_feature_is_an_error_or_a_warning() {
        let launched = env_of(&[("OMPI_COMM_WORLD_SIZE", "2")]);
        let r = WorldBuilder::new().resolve(&launched);
        if cfg!(feature = "mpi") {
            assert_eq!(r.unwrap().transport(), TransportKind::Hybrid);
            let c = WorldBuilder::new()
                .resolve(&env_of(&[
                    ("OMPI_COMM_WORLD_SIZE", "2"),
                    ("TUTTI_TRANSPORT", "mpi"),
                ]))
                .unwrap();
            assert_eq!(c.transport(), TransportKind::Mpi);
            let c = WorldBuilder::new()
                .resolve(&env_of(&[
                    ("OMPI_COMM_WORLD_SIZE", "4"),
                    ("TUTTI_TRANSPORT", "hybrid"),
                    ("TUTTI_HOSTS", "2"),
                ]))
                .unwrap();
            assert_eq!(c.transport(), TransportKind::Hybrid);
            assert_eq!(c.pretend_hosts(), Some(2));
        } else {
            let e = r.unwrap_err();
            assert!(matches!(e, WorldError::MpiNotBuilt { size: 2, .. }), "{e}");
            assert!(e.to_string().contains("--features mpi"), "{e}");
            // One process: it works, with a warning.
            let c = WorldBuilder::new()
                .resolve(&env_of(&[("OMPI_COMM_WORLD_SIZE", "1")]))
                .unwrap();
            assert_eq!(c.transport(), TransportKind::InProcess);
            assert_eq!(c.warnings().len(), 1);
            let e = WorldBuilder::new()
                .transport(TransportKind::Mpi)
                .resolve(&env_of(&[]))
                .unwrap_err();
            assert!(matches!(e, WorldError::MpiNotBuilt { .. }), "{e}");
        }
        // Choosing in-process by the environment under a launcher warns that the
        // processes are separate; the builder's explicit choice does not.
        let c = WorldBuilder::new()
            .resolve(&env_of(&[
                ("OMPI_COMM_WORLD_SIZE", "2"),
                ("TUTTI_TRANSPORT", "inproc"),
            ]))
            .unwrap();
        assert_eq!(c.transport(), TransportKind::InProcess);
        assert!(
            c.warnings()[0].contains("independent"),
            "{:?}",
            c.warnings()
        );
        let c = WorldBuilder::new()
            .transport(TransportKind::InProcess)
            .resolve(&launched)
            .unwrap();
        assert!(c.warnings().is_empty(), "{:?}", c.warnings());
    }

    #[test]
    fn display_names_every_setting() {
        let c = WorldBuilder::new()
            .ignore_env()
            .locations(2)
            .workers(1)
            .resolve(&env_of(&[]))
            .unwrap();
        let text = c.to_string();
        for needle in [
            "rank 0 of 1",
            "in-process",
            "locations per rank: 2",
            "workers per rank: 1",
            "aggregation: 1 messages",
        ] {
            assert!(text.contains(needle), "{needle:?} missing from\n{text}");
        }
    }
}
