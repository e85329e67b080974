//! The arguments of `tutti weather`.

use clap::Args;

/// Arguments of `tutti weather`.
#[derive(Args, Clone, Debug)]
pub struct WeatherArgs {
    /// Weather stations.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u64).range(1..=10_000))]
    pub(super) stations: u64,
    /// Clients (at least 2: one of them crashes).
    #[arg(long, default_value_t = 12, value_parser = clap::value_parser!(u64).range(2..=100_000))]
    pub(super) clients: u64,
    /// Length of the run, in seconds.
    #[arg(long, default_value_t = 2.0, value_parser = crate::parse_seconds)]
    pub(super) seconds: f64,
    /// Pause between two broadcasts of a station, in microseconds.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..=10_000_000))]
    pub(super) interval_us: u64,
    /// Worker threads.
    #[arg(long, env = "TUTTI_WORKERS", default_value_t = crate::default_workers(), value_parser = crate::parse_workers)]
    pub(super) workers: usize,
    /// Stations and clients in OS processes of one host: the stations in
    /// one, the clients spread over `P − 1` others; tutti (a shared-memory
    /// system, remote actors) beside the same protocol over Unix domain
    /// sockets.
    #[arg(long, value_parser = clap::value_parser!(u64).range(2..=64))]
    pub(super) processes: Option<u64>,
    #[command(flatten)]
    pub(super) child: crate::apps::ChildOpts,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    pub json: bool,
}
