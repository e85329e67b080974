//! Running one implementation on every location of a world, and assembling
//! the grid on location 0; the one-patch sequential reference.

use std::sync::Arc;
use std::time::Instant;

use tutti::graph::{Placement, Scheme};
use tutti::msg::codec::PodVec;
use tutti::world::{Location, LocationId, World};

use super::solver::{Patch, Side};
use super::{actors, bsp, Config, Impl};

/// What one location ends a run with.
#[derive(Debug)]
pub struct LocalResult {
    /// Its patches after the last step.
    pub patches: Vec<(usize, Patch)>,
    /// (snapshot index, patch, `h` of its cells).
    pub snapshots: Vec<(usize, usize, Vec<f64>)>,
    pub cfl_ok: bool,
    pub errors: Vec<String>,
    /// Graph runs: quiescence waves this location started.
    pub waves: u64,
    /// Graph runs: times a patch actor was woken.
    pub wakeups: u64,
}

impl LocalResult {
    pub fn new() -> LocalResult {
        LocalResult {
            patches: Vec::new(),
            snapshots: Vec::new(),
            cfl_ok: true,
            errors: Vec::new(),
            waves: 0,
            wakeups: 0,
        }
    }
}

/// The whole grid, assembled on location 0.
#[derive(Clone, Debug, PartialEq)]
pub struct Field {
    pub h: Vec<f64>,
    pub hu: Vec<f64>,
    pub hv: Vec<f64>,
}

impl Field {
    /// A digest of every bit of the field, for bit-for-bit comparison.
    pub fn digest(&self) -> u64 {
        let mut x: u64 = 0xcbf2_9ce4_8422_2325;
        for v in self.h.iter().chain(&self.hu).chain(&self.hv) {
            x = (x ^ v.to_bits()).wrapping_mul(0x0100_0000_01b3);
        }
        x
    }
}

/// What a run of one implementation gives back on location 0 of rank 0.
#[derive(Debug)]
pub struct Outcome {
    /// Wall time of the steps (the slowest location).
    pub secs: f64,
    pub field: Option<Field>,
    /// The captures, in the order of [`Config::snapshots`]; `hu` and `hv`
    /// are empty where only `h` was captured.
    pub snapshots: Vec<Field>,
    pub cfl_ok: bool,
    pub errors: Vec<String>,
    /// Quiescence waves started, summed over the locations.
    pub waves: u64,
    /// Actor wake-ups, summed over the locations.
    pub wakeups: u64,
}

/// Sends this location's patches (and snapshots) to location 0, which
/// assembles the grid. Returns it on location 0.
async fn gather(loc: &Location, cfg: &Config, res: &LocalResult) -> Option<(Field, Vec<Field>)> {
    let zero = LocationId::new(0);
    let (nx, ny) = (cfg.grid.nx, cfg.grid.ny);
    let place = |field: &mut [f64], p: usize, data: &[f64]| {
        let (ox, oy) = ((p % cfg.px) * cfg.pw, (p / cfg.px) * cfg.ph);
        for y in 0..cfg.ph {
            let row = (oy + y) * nx + ox;
            field[row..row + cfg.pw].copy_from_slice(&data[y * cfg.pw..(y + 1) * cfg.pw]);
        }
    };
    // Kind 0: a patch's h, hu, hv; kind 1: a capture's h (and hu, hv).
    type Piece = (u8, u32, u32, PodVec<f64>);
    let mut pieces: Vec<Piece> = Vec::new();
    for (p, patch) in &res.patches {
        let [h, hu, hv] = patch.interior();
        let mut all = h;
        all.extend(hu);
        all.extend(hv);
        pieces.push((0, *p as u32, 0, PodVec(all)));
    }
    for (k, p, h) in &res.snapshots {
        pieces.push((1, *p as u32, *k as u32, PodVec(h.clone())));
    }
    // Everyone learns how many pieces location 0 is to receive (a failed run
    // may send fewer than a full grid; its errors say why).
    let mine = if loc.id() == zero { 0 } else { pieces.len() };
    let from_others = loc.all_reduce(mine, |a, b| a + b).await;
    if loc.id() != zero {
        for piece in &pieces {
            let mut bytes = Vec::new();
            if tutti::msg::codec::encode(piece, &mut bytes).is_ok() {
                let _ = loc.send_bytes(zero, bytes);
            }
        }
        loc.flush();
        loc.barrier().await;
        return None;
    }
    let n = cfg.px * cfg.py;
    let mut field = Field {
        h: vec![f64::NAN; nx * ny],
        hu: vec![f64::NAN; nx * ny],
        hv: vec![f64::NAN; nx * ny],
    };
    let mut snaps: Vec<Field> = cfg
        .snapshots
        .iter()
        .map(|c| {
            let grid = |on: bool| vec![f64::NAN; if on { nx * ny } else { 0 }];
            Field {
                h: grid(true),
                hu: grid(c.all),
                hv: grid(c.all),
            }
        })
        .collect();
    let cells = cfg.pw * cfg.ph;
    let put = |piece: Piece, field: &mut Field, snaps: &mut Vec<Field>| {
        let (kind, p, k, data) = piece;
        let (p, data) = (p as usize, data.0);
        let whole = |f: &mut Field, data: &[f64]| {
            place(&mut f.h, p, &data[..cells]);
            place(&mut f.hu, p, &data[cells..2 * cells]);
            place(&mut f.hv, p, &data[2 * cells..]);
        };
        if p >= n {
            return;
        }
        match (kind, snaps.get_mut(k as usize)) {
            (0, _) if data.len() == 3 * cells => whole(field, &data),
            (1, Some(f)) if data.len() == 3 * cells && !f.hu.is_empty() => whole(f, &data),
            (1, Some(f)) if data.len() == cells && f.hu.is_empty() => place(&mut f.h, p, &data),
            // A piece of the wrong shape leaves its cells NaN: the checks fail.
            _ => {}
        }
    };
    for piece in pieces {
        put(piece, &mut field, &mut snaps);
    }
    // Cells nobody sent stay NaN and fail the verification.
    for _ in 0..from_others {
        let d = loc.recv().await;
        if let Some(piece) = d
            .bytes()
            .and_then(|b| tutti::msg::codec::decode::<Piece>(b).ok())
        {
            put(piece, &mut field, &mut snaps);
        }
    }
    loc.barrier().await;
    Some((field, snaps))
}

/// Runs one implementation on every location of `world`.
pub fn run_once(
    world: &World,
    cfg: &Arc<Config>,
    placement: &Arc<Placement>,
    which: Impl,
    scheme: Scheme,
) -> Result<Option<Outcome>, String> {
    let pg = Arc::new(actors::build(cfg, scheme)?);
    let outs = world.run(|loc| {
        let (cfg, placement, pg) = (Arc::clone(cfg), Arc::clone(placement), Arc::clone(&pg));
        async move {
            let loc = Arc::new(loc);
            loc.barrier().await;
            let t0 = Instant::now();
            let res = match which {
                Impl::Graph => actors::run(&loc, &cfg, &pg, &placement).await,
                _ => bsp::run(&loc, &cfg, &placement).await,
            };
            let secs = t0.elapsed().as_secs_f64();
            let secs = loc.all_reduce(secs, f64::max).await;
            let cfl_ok = loc.all_reduce(res.cfl_ok, |a, b| a && b).await;
            let (waves, wakeups) = loc
                .all_reduce((res.waves, res.wakeups), |a, b| (a.0 + b.0, a.1 + b.1))
                .await;
            let errors = loc
                .all_reduce(res.errors.clone(), |mut a, b| {
                    a.extend(b);
                    a
                })
                .await;
            let gathered = gather(&loc, &cfg, &res).await;
            gathered.map(|(field, snapshots)| Outcome {
                secs,
                field: Some(field),
                snapshots,
                cfl_ok,
                errors,
                waves,
                wakeups,
            })
        }
    });
    Ok(outs.into_iter().flatten().next())
}

/// The sequential reference: the whole grid as one patch.
pub fn sequential(cfg: &Config) -> Option<Field> {
    let (nx, ny) = (cfg.grid.nx, cfg.grid.ny);
    let mut p = Patch::new(nx, ny, |i, j| cfg.initial(i, j));
    for _ in 0..cfg.steps {
        for s in Side::ALL {
            p.set_wall(s);
        }
        p.step(cfg.dt, cfg.grid.dx, cfg.grid.dy)?;
    }
    let [h, hu, hv] = p.interior();
    Some(Field { h, hu, hv })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::super::checks::check;
    use super::super::{Placing, Scenario};
    use super::*;

    pub(crate) fn cfg(s: Scenario, n: usize, patch: usize, steps: u64) -> Arc<Config> {
        Arc::new(Config::new(n, n, patch, steps, None, s).unwrap())
    }

    #[test]
    fn both_impls_equal_the_sequential_run_bit_for_bit() {
        for locations in [1, 2, 3] {
            let world = crate::apps::test_world(locations, 1);
            for s in [
                Scenario::RadialDamBreak,
                Scenario::SplashingPool,
                Scenario::SeaAtRest,
            ] {
                let c = cfg(s, 32, 8, 20);
                let reference = sequential(&c);
                let placement = Arc::new(c.placement(locations, Placing::Hilbert).unwrap());
                for which in [Impl::Graph, Impl::Bsp] {
                    let out = run_once(&world, &c, &placement, which, Scheme::TwoSided)
                        .unwrap()
                        .unwrap();
                    let checks = check(&c, &out, &reference);
                    assert!(checks.ok(), "{s:?} {which:?} on {locations}: {checks:?}");
                }
            }
        }
    }
}
