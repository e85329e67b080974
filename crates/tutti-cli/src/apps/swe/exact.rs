//! Exact solutions and error norms: the planar dam break and the lake at rest.
//!
//! **The planar dam break** (`--scenario dam-break-1d`): water 15 m deep for
//! `x < 500 m` and 10 m deep beyond, at rest, released at t = 0 (the depths of
//! the radial dam break). Its exact solution (Stoker's wet–wet Riemann
//! problem) is a rarefaction running left, a plateau of depth `h_m` moving at
//! `u_m`, and a shock running right:
//!
//! ```text
//! h = h_l                      for ξ ≤ −c_l
//! h = (2 c_l − ξ)² / (9 g)     for −c_l < ξ ≤ u_m − c_m      (ξ = (x − 500 m) / t,
//! h = h_m                      for u_m − c_m < ξ ≤ s           c = √(g h))
//! h = h_r                      for s < ξ
//! ```
//!
//! where `u_m = 2 (c_l − c_m)` (the rarefaction's Riemann invariant) equals
//! the shock's `(h_m − h_r) √(g (h_m + h_r) / (2 h_m h_r))`, and
//! `s = h_m u_m / (h_m − h_r)`. The dry-bed case (Ritter's solution) is not
//! offered: the solver refuses cells shallower than [`solver::DRY`], so a
//! run into a dry bed fails with "a cell ran dry" instead.
//!
//! The error of a run is the height's difference from the exact solution's
//! cell averages at the final time: its L1 norm (the mean over the cells),
//! its L∞ norm (the largest), and the L1 norm's parts near the shock (cells
//! within [`SHOCK_WINDOW`] of it), away from it, and in the rarefaction fan
//! (its corners widened by the same window): each part is the sum over its
//! cells divided by all the cells, so near + away = all.
//!
//! **The lake at rest** (`sea-at-rest`): a flat surface over an uneven sea
//! floor stays exactly flat and still. Its error is the largest deviation of
//! the surface `h + b` from its start and the largest momentum.

use super::scenario::{Grid, Scenario, DAM_X};
use super::solver::G;

/// Cells this close to the exact shock (m) are left out of the "away from the
/// shock" norm.
pub const SHOCK_WINDOW: f64 = 50.0;

/// Stoker's solution of the planar dam break between depths `hl` and `hr`.
#[derive(Clone, Copy, Debug)]
pub struct DamBreak {
    pub hl: f64,
    pub hr: f64,
    /// The plateau's depth and speed.
    pub hm: f64,
    pub um: f64,
    /// The shock's speed.
    pub shock: f64,
}

impl DamBreak {
    /// The solution for depths `hl > hr > 0`, water at rest on both sides.
    pub fn new(hl: f64, hr: f64) -> DamBreak {
        let cl = (G * hl).sqrt();
        // The rarefaction's speed at the plateau minus the shock's: falls
        // from positive (hm = hr) to negative (hm = hl); bisect its root.
        let gap = |hm: f64| {
            2.0 * (cl - (G * hm).sqrt()) - (hm - hr) * (0.5 * G * (hm + hr) / (hm * hr)).sqrt()
        };
        let (mut lo, mut hi) = (hr, hl);
        for _ in 0..200 {
            let mid = 0.5 * (lo + hi);
            if gap(mid) > 0.0 {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        let hm = 0.5 * (lo + hi);
        let um = 2.0 * (cl - (G * hm).sqrt());
        DamBreak {
            hl,
            hr,
            hm,
            um,
            shock: hm * um / (hm - hr),
        }
    }

    /// The exact height at `x` (m) and time `t > 0` (s).
    pub fn height(&self, x: f64, t: f64) -> f64 {
        let xi = (x - DAM_X) / t;
        let cl = (G * self.hl).sqrt();
        let cm = (G * self.hm).sqrt();
        if xi <= -cl {
            self.hl
        } else if xi <= self.um - cm {
            (2.0 * cl - xi).powi(2) / (9.0 * G)
        } else if xi <= self.shock {
            self.hm
        } else {
            self.hr
        }
    }

    /// The exact height averaged over the cell `[x0, x1]` (16-point midpoint rule).
    pub fn cell_average(&self, x0: f64, x1: f64, t: f64) -> f64 {
        const N: usize = 16;
        let w = (x1 - x0) / N as f64;
        (0..N)
            .map(|k| self.height(x0 + (k as f64 + 0.5) * w, t))
            .sum::<f64>()
            / N as f64
    }

    /// When the first wave reaches a wall of the domain, `2 × DAM_X` long (s):
    /// the exact solution holds until then.
    pub fn wall_time(&self) -> f64 {
        DAM_X / (G * self.hl).sqrt().max(self.shock)
    }

    /// Where the rarefaction fan begins and ends at time `t` (m).
    pub fn rarefaction_at(&self, t: f64) -> (f64, f64) {
        let (cl, cm) = ((G * self.hl).sqrt(), (G * self.hm).sqrt());
        (DAM_X - cl * t, DAM_X + (self.um - cm) * t)
    }

    /// Where the shock is at time `t` (m).
    pub fn shock_at(&self, t: f64) -> f64 {
        DAM_X + self.shock * t
    }
}

/// The planar dam break of [`Scenario::DamBreak1d`].
pub fn dam_break() -> DamBreak {
    let left = Scenario::DamBreak1d.at(0.0, 0.0)[0];
    let right = Scenario::DamBreak1d.at(2.0 * DAM_X, 0.0)[0];
    DamBreak::new(left, right)
}

/// Error norms of a height field against the exact dam break at `t`.
#[derive(Clone, Copy, Debug, serde::Serialize)]
pub struct Errors {
    /// Mean |h − h_exact| over the cells (m).
    pub l1: f64,
    /// Largest |h − h_exact| (m).
    pub linf: f64,
    /// The part of `l1` from the cells within [`SHOCK_WINDOW`] of the shock (m).
    pub l1_near_shock: f64,
    /// The part of `l1` from the other cells (m).
    pub l1_away: f64,
    /// The part of `l1` from the rarefaction fan, widened by [`SHOCK_WINDOW`]
    /// at both ends (m).
    pub l1_rarefaction: f64,
}

/// The error of `h` (row-major over `grid`) against the exact dam break at `t`.
pub fn errors(h: &[f64], grid: &Grid, t: f64) -> Errors {
    let exact = dam_break();
    let shock = exact.shock_at(t);
    let (head, tail) = exact.rarefaction_at(t);
    let columns: Vec<f64> = (0..grid.nx)
        .map(|i| exact.cell_average(i as f64 * grid.dx, (i + 1) as f64 * grid.dx, t))
        .collect();
    let (mut sum, mut max, mut near, mut fan) = (0.0, 0.0_f64, 0.0, 0.0);
    for (k, v) in h.iter().enumerate() {
        let i = k % grid.nx;
        let x = (i as f64 + 0.5) * grid.dx;
        let e = (v - columns[i]).abs();
        sum += e;
        max = max.max(e);
        if (x - shock).abs() <= SHOCK_WINDOW {
            near += e;
        }
        if x >= head - SHOCK_WINDOW && x <= tail + SHOCK_WINDOW {
            fan += e;
        }
    }
    let cells = h.len().max(1) as f64;
    Errors {
        l1: sum / cells,
        linf: if h.iter().all(|v| v.is_finite()) {
            max
        } else {
            f64::NAN
        },
        l1_near_shock: near / cells,
        l1_away: (sum - near) / cells,
        l1_rarefaction: fan / cells,
    }
}

/// The observed order of convergence between two grids of `n0 < n1` cells
/// along x with errors `e0` and `e1`.
pub fn order(n0: usize, e0: f64, n1: usize, e1: f64) -> f64 {
    (e0 / e1).ln() / (n1 as f64 / n0 as f64).ln()
}

/// The least-squares slope of log(error) against log(1 / cells): the order
/// over a whole refinement series.
pub fn fitted_order(series: &[(usize, f64)]) -> f64 {
    let pts: Vec<(f64, f64)> = series
        .iter()
        .map(|&(n, e)| (-(n as f64).ln(), e.ln()))
        .collect();
    let m = pts.len() as f64;
    let (sx, sy) = pts
        .iter()
        .fold((0.0, 0.0), |(a, b), &(x, y)| (a + x, b + y));
    let (mx, my) = (sx / m, sy / m);
    let (num, den) = pts.iter().fold((0.0, 0.0), |(a, b), &(x, y)| {
        (a + (x - mx) * (y - my), b + (x - mx) * (x - mx))
    });
    num / den
}

/// The lake at rest's errors: the largest deviation of the surface `h + b`
/// from its start (m) and the largest momentum (m²/s).
pub fn lake_errors(grid: &Grid, h: &[f64], hu: &[f64], hv: &[f64]) -> (f64, f64) {
    let mut surface = 0.0_f64;
    let mut momentum = 0.0_f64;
    for j in 0..grid.ny {
        for i in 0..grid.nx {
            let k = j * grid.nx + i;
            let [h0, _, _, b] = grid.initial(Scenario::SeaAtRest, i, j);
            surface = surface.max(((h[k] + b) - (h0 + b)).abs());
            momentum = momentum.max(hu[k].abs()).max(hv[k].abs());
        }
    }
    (surface, momentum)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_plateau_joins_the_rarefaction_and_the_shock() {
        let d = DamBreak::new(15.0, 10.0);
        assert!(d.hm > 10.0 && d.hm < 15.0 && d.um > 0.0);
        // Both waves give the plateau the same speed.
        let cl = (G * 15.0).sqrt();
        let cm = (G * d.hm).sqrt();
        let by_shock = (d.hm - 10.0) * (0.5 * G * (d.hm + 10.0) / (d.hm * 10.0)).sqrt();
        assert!((2.0 * (cl - cm) - by_shock).abs() < 1e-9);
        // Mass across the shock: s (h_m − h_r) = h_m u_m.
        assert!((d.shock * (d.hm - 10.0) - d.hm * d.um).abs() < 1e-9);
        // The profile is continuous through the rarefaction and jumps at the shock.
        let t = 10.0;
        let tail = DAM_X + (d.um - cm) * t;
        assert!((d.height(tail - 1e-9, t) - d.hm).abs() < 1e-6);
        assert!((d.height(DAM_X - cl * t, t) - 15.0).abs() < 1e-9);
        assert_eq!(d.height(d.shock_at(t) + 1e-6, t), 10.0);
        assert_eq!(d.height(d.shock_at(t) - 1e-6, t), d.hm);
    }

    #[test]
    fn the_exact_solution_conserves_mass() {
        let d = DamBreak::new(15.0, 10.0);
        let t = 20.0;
        let mass: f64 = (0..1000)
            .map(|i| d.cell_average(i as f64, i as f64 + 1.0, t))
            .sum();
        assert!(
            (mass - (500.0 * 15.0 + 500.0 * 10.0)).abs() < 1e-5 * mass,
            "{mass}"
        );
    }

    #[test]
    fn orders_of_exact_power_laws() {
        assert!((order(100, 1.0, 200, 0.5) - 1.0).abs() < 1e-12);
        let s: Vec<(usize, f64)> = [64, 128, 256]
            .iter()
            .map(|&n| (n, 3.0 / (n as f64).powi(2)))
            .collect();
        assert!((fitted_order(&s) - 2.0).abs() < 1e-12);
    }
}
