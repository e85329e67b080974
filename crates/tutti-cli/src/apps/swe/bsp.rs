//! `--impl bsp`: the same patches on the same locations as the graph, run in
//! bulk-synchronous supersteps (Miguel 2019, §7.3 item 4): every location sends
//! its patches' boundaries, receives its neighbours', updates all its patches,
//! and then the world all-reduces the largest wave speed (the global
//! synchronization of each step, and its CFL check).

use std::sync::Arc;

use tutti::graph::Placement;
use tutti::world::{Location, LocationId};

use super::execute::LocalResult;
use super::solver::{Patch, Side};
use super::Config;

/// Wire form of a boundary: `[patch u32][side u8][f64 LE…]`.
fn encode(patch: usize, side: Side, data: &[f64], out: &mut Vec<u8>) {
    out.clear();
    out.extend_from_slice(&(patch as u32).to_le_bytes());
    out.push(side_index(side) as u8);
    for v in data {
        out.extend_from_slice(&v.to_le_bytes());
    }
}

fn side_index(s: Side) -> usize {
    Side::ALL.iter().position(|t| *t == s).unwrap_or(0)
}

fn decode(b: &[u8]) -> Option<(usize, Side, Vec<f64>)> {
    if b.len() < 5 || !(b.len() - 5).is_multiple_of(8) {
        return None;
    }
    let patch = u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize;
    let side = *Side::ALL.get(b[4] as usize)?;
    let data = b[5..]
        .chunks_exact(8)
        .map(|c| f64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]))
        .collect();
    Some((patch, side, data))
}

pub async fn run(loc: &Arc<Location>, cfg: &Arc<Config>, placement: &Placement) -> LocalResult {
    let me = loc.id();
    let n = cfg.px * cfg.py;
    let owner = |p: usize| placement.location(tutti::graph::ActorId::new(p));
    let mine: Vec<usize> = (0..n).filter(|&p| owner(p) == me).collect();
    let mut patches: Vec<Patch> = mine.iter().map(|&p| cfg.initial_patch(p)).collect();
    let slot_of = |p: usize| mine.iter().position(|&q| q == p);
    let mut res = LocalResult::new();
    // Boundaries this location receives from other locations per step.
    let expected: usize = mine
        .iter()
        .map(|&p| {
            Side::ALL
                .iter()
                .filter(|s| cfg.neighbour(p, **s).is_some_and(|q| owner(q) != me))
                .count()
        })
        .sum();
    let mut buf = Vec::new();
    let mut wire = Vec::new();
    for step in 1..=cfg.steps {
        // 1. Exchange: boundaries of the step's starting state.
        let mut local: Vec<(usize, Side, Vec<f64>)> = Vec::new();
        for (k, &p) in mine.iter().enumerate() {
            for s in Side::ALL {
                match cfg.neighbour(p, s) {
                    Some(q) => {
                        patches[k].boundary(s, &mut buf);
                        let to: LocationId = owner(q);
                        if to == me {
                            local.push((q, s.opposite(), buf.clone()));
                        } else {
                            encode(q, s.opposite(), &buf, &mut wire);
                            if loc.send_slice(to, &wire).is_err() {
                                res.errors.push(format!("{to} does not exist"));
                            }
                        }
                    }
                    None => patches[k].set_wall(s),
                }
            }
        }
        loc.flush();
        for (q, s, data) in local {
            if let Some(k) = slot_of(q) {
                patches[k].set_ghosts(s, &data);
            }
        }
        for _ in 0..expected {
            let d = loc.recv().await;
            match d.bytes().and_then(decode) {
                Some((q, s, data)) => match slot_of(q) {
                    Some(k) if patches[k].set_ghosts(s, &data) => {}
                    _ => res
                        .errors
                        .push(format!("a boundary for patch {q} that is not here")),
                },
                None => res
                    .errors
                    .push(format!("a malformed boundary from {}", d.from())),
            }
        }
        // 2. Compute.
        let mut speed: f64 = 0.0;
        for p in &mut patches {
            match p.step(cfg.dt, cfg.grid.dx, cfg.grid.dy) {
                Some(s) => speed = speed.max(s),
                None => {
                    res.errors.push("a cell ran dry".into());
                    speed = f64::INFINITY;
                }
            }
        }
        // 3. Synchronize: the global largest speed (the step's CFL check).
        let global = loc.all_reduce(speed, f64::max).await;
        if global * cfg.dt > cfg.cfl_limit() {
            res.cfl_ok = false;
        }
        for (k, all) in cfg.captures_at(step) {
            for (slot, &p) in mine.iter().enumerate() {
                res.snapshots.push((k, p, patches[slot].capture(all)));
            }
        }
        if !res.errors.is_empty() {
            break;
        }
    }
    res.patches = mine.into_iter().zip(patches).collect();
    res
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn boundaries_round_trip_and_bad_ones_are_refused() {
        let mut w = Vec::new();
        encode(7, Side::North, &[1.5, -2.0], &mut w);
        assert_eq!(decode(&w), Some((7, Side::North, vec![1.5, -2.0])));
        assert_eq!(decode(&w[..6]), None);
        w[4] = 9;
        assert_eq!(decode(&w), None);
    }
}
