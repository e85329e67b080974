//! The aggregation sweep of `tutti bench rmi` (Saunders 2003, Figures 8–9):
//! location 0 sends `k` empty `async_rmi` pings to location 1, which answers
//! the `k`-th with one pong; repeated until `--sweep-messages` pings have
//! gone, for every aggregation factor of `--aggregation` (set on both locations
//! with `set_aggregation`) and every `k` of `--pings`. Reported per ping,
//! with each factor's speedup over factor 1 at the same `k`.
//!
//! `tutti bench rmi` runs it on two in-process locations beside the other
//! measurements; `tutti bench rmi --sweep-only` runs only the sweep, on the
//! world the environment gives (under `mpirun -n 2`: locations on two ranks).

use std::time::Instant;

use clap::Args;
use serde::{Deserialize, Serialize};
use tutti::msg::{Dispatch, Handler, Message, Object, RegistryError, Remote};
use tutti::rmi::{self, Handle, Rmi};
use tutti::world::World;

use crate::measure::{repeat, Plan, Progress, Run, RunOpts};
use crate::report::{Report, Stats};

/// The sweep's options (flattened into `tutti bench rmi`).
#[derive(Args, Debug, Clone)]
pub struct SweepArgs {
    /// Aggregation factors of the sweep: requests kept per destination before
    /// they are sent together (comma-separated, 1..=65536).
    #[arg(long = "aggregation", value_delimiter = ',', default_value = "1,4,16,64,256,1024,2048", value_parser = clap::value_parser!(u64).range(1..=65_536))]
    factors: Vec<u64>,
    /// Pings before each pong (comma-separated, 1..=10^6).
    #[arg(long, value_delimiter = ',', default_value = "10,100,1000,10000", value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    pings: Vec<u64>,
    /// Pings per sweep measurement (rounded up to whole rounds of pings).
    #[arg(long, default_value_t = 20_000, value_parser = clap::value_parser!(u64).range(1..=1_000_000_000))]
    sweep_messages: u64,
    /// Run only the sweep, on the environment's world (MPI under mpirun).
    #[arg(long)]
    pub sweep_only: bool,
}

/// A ping (to location 1) or the pong (to location 0).
#[derive(Serialize, Deserialize)]
pub struct Ping;
impl Message for Ping {
    type Reply = ();
}
impl Remote for Ping {
    const NAME: &'static str = "bench.rmi.sweep.Ping";
}

/// The answer to the `k`-th ping.
#[derive(Serialize, Deserialize)]
pub struct Pong;
impl Message for Pong {
    type Reply = ();
}
impl Remote for Pong {
    const NAME: &'static str = "bench.rmi.sweep.Pong";
}

/// Both ends: counts pings and pongs; location 1 answers every `k`-th ping.
struct Player {
    me: Option<Handle<Player>>,
    k: u64,
    pings: u64,
    pongs: u64,
}

impl Object for Player {
    type Context = Rmi;
    fn remote(table: &mut Dispatch<Self>) -> Result<(), RegistryError> {
        table.register::<Ping>()?;
        table.register::<Pong>()?;
        Ok(())
    }
}

impl Handler<Ping> for Player {
    async fn handle(&mut self, _: Ping, ctx: &mut Rmi) {
        self.pings += 1;
        if self.pings.is_multiple_of(self.k) {
            if let Some(h) = self.me {
                ctx.async_rmi(0, &h, Pong).await;
            }
        }
    }
}

impl Handler<Pong> for Player {
    async fn handle(&mut self, _: Pong, _: &mut Rmi) {
        self.pongs += 1;
    }
}

/// One run: `rounds` rounds of `k` pings and a pong at factor `factor`.
/// Returns the time and whether every ping and pong arrived.
fn one(world: &World, factor: usize, k: u64, rounds: u64) -> Run {
    let out = rmi::run(world, move |mut loc| async move {
        loc.set_aggregation(factor);
        let Ok(h) = loc
            .register(Player {
                me: None,
                k,
                pings: 0,
                pongs: 0,
            })
            .await
        else {
            return (0.0, false);
        };
        loc.local(&h).me = Some(h);
        loc.barrier().await;
        let start = Instant::now();
        match loc.id() {
            0 => {
                for r in 0..rounds {
                    for _ in 0..k {
                        loc.async_rmi(1, &h, Ping).await;
                    }
                    while loc.local(&h).pongs <= r {
                        loc.wait().await;
                    }
                }
            }
            1 => {
                while loc.local(&h).pings < rounds * k {
                    loc.wait().await;
                }
            }
            _ => {}
        }
        let secs = start.elapsed().as_secs_f64();
        loc.fence().await;
        let p = loc.unregister(h);
        let ok = match loc.id() {
            0 => p.pongs == rounds && p.pings == 0,
            1 => p.pings == rounds * k && p.pongs == 0,
            _ => p.pings == 0 && p.pongs == 0,
        };
        (secs, ok)
    });
    // Location 0's clock on the rank that has it, else the slowest local one.
    let secs = out.iter().map(|o| o.0).fold(0.0, f64::max);
    Run {
        elapsed: std::time::Duration::from_secs_f64(secs),
        ok: !out.is_empty() && out.iter().all(|o| o.1),
    }
}

/// Number of measurements [`sweep`] makes (for progress bars).
pub fn steps(a: &SweepArgs, plan: Plan) -> usize {
    a.factors.len() * a.pings.len() * plan.total()
}

/// Runs the sweep on `world` (which needs at least two locations) and adds
/// its rows and ratios to `report`; returns whether every run verified.
pub fn sweep(
    a: &SweepArgs,
    world: &World,
    plan: Plan,
    progress: &Progress,
    report: &mut Report,
) -> Result<bool, String> {
    if world.locations() < 2 {
        return Err("the aggregation sweep needs at least two locations".into());
    }
    report
        .param("sweep_aggregation", &a.factors)
        .param("sweep_pings", &a.pings)
        .param("sweep_messages", a.sweep_messages)
        .param("sweep_transport", world.config().transport().to_string());
    let mut ok = true;
    for &k in &a.pings {
        let rounds = a.sweep_messages.div_ceil(k);
        let mut base = None;
        let mut best: Option<(u64, f64)> = None;
        for &f in &a.factors {
            progress.stage(&format!("aggregation sweep: factor {f}, {k} pings"));
            let m = repeat(plan, progress, || one(world, f as usize, k, rounds));
            ok &= m.ok;
            let per_ping = m.map(|s| s * 1e9 / (rounds * k) as f64);
            let Some(stats) = Stats::of(&per_ping) else {
                continue;
            };
            report.result(
                &format!("tutti async_rmi, factor {f}"),
                &format!("{k} pings per pong"),
                stats.clone(),
                "ns/ping",
            );
            let t = stats.median;
            if f == 1 {
                base = Some(t);
            }
            if best.is_none_or(|(_, b)| t < b) {
                best = Some((f, t));
            }
        }
        if let (Some(b), Some((f, t))) = (base, best) {
            report.param(&format!("sweep_best_factor_{k}_pings"), f);
            report.ratio(
                &format!("speedup_best_factor_over_factor_1_{k}_pings"),
                b / t,
            );
        }
    }
    Ok(ok)
}

/// `tutti bench rmi --sweep-only`: the sweep on the environment's world (two
/// in-process locations unless `TUTTI_*` or mpirun say otherwise).
pub fn run_only(a: &SweepArgs, run: &RunOpts, json: bool) -> Result<Report, String> {
    let plan = run.plan();
    let mut b = World::builder();
    if std::env::var_os("TUTTI_LOCATIONS").is_none() {
        b = b.locations(1);
    }
    let mut world = b.build().map_err(|e| e.to_string())?;
    if world.locations() < 2 && world.config().transport() == tutti::world::TransportKind::InProcess
    {
        // One process: two locations on it.
        drop(world);
        world = World::builder()
            .locations(2)
            .build()
            .map_err(|e| e.to_string())?;
    }
    let progress = Progress::new(steps(a, plan), json || world.rank() != 0);
    let mut report = Report::new("bench rmi");
    report
        .param("ranks", world.ranks())
        .param("locations", world.locations())
        .param("workers", world.config().workers())
        .param("runs", plan.runs);
    let ok = sweep(a, &world, plan, &progress, &mut report)?;
    progress.finish();
    report.verify(ok);
    Ok(report)
}
