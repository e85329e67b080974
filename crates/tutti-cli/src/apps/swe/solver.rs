//! The numerics: an f-wave Riemann solver (Bale, LeVeque, Mitran & Rossmanith
//! 2002, as in the TUM SWE code base's `FWave`) with the bathymetry source
//! term folded into the flux difference, and the unsplit wave-propagation
//! update of one patch.
//!
//! The update of a cell is a fixed expression of the net updates of its four
//! edges, and each edge's net updates depend only on the two cells beside it.
//! So with a fixed time step, any split of the grid into patches (with ghost
//! cells equal to the neighbours' cells) gives the same bits as one patch.

/// Gravity (m/s²).
pub const G: f64 = 9.81;

/// Water shallower than this (m) counts as dry; the scenarios never get there,
/// and a run that does is reported as failed.
pub const DRY: f64 = 1e-3;

/// Floating-point operations of one [`fwave`] call (counted by hand from the
/// code below: 3 divisions, 3 square roots, 3 `abs`/`max`, the rest additions and
/// multiplications; selects not counted), as Pond counts the solver's work.
pub const FLOPS_PER_EDGE: u64 = 65;

/// Floating-point operations of one cell's update from its edges' net updates.
pub const FLOPS_PER_CELL: u64 = 18;

/// The state on one side of an edge, seen from the edge: height, momentum
/// normal to the edge, momentum along it, and bathymetry.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Q {
    pub h: f64,
    pub hn: f64,
    pub ht: f64,
    pub b: f64,
}

/// Net updates of one edge: what the left cell and the right cell get
/// (`A⁻ΔQ` and `A⁺ΔQ` for the height, the normal and the tangential
/// momentum), and the largest wave speed.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Edge {
    pub left_h: f64,
    pub left_hn: f64,
    pub left_ht: f64,
    pub right_h: f64,
    pub right_hn: f64,
    pub right_ht: f64,
    pub speed: f64,
}

/// The f-wave solution of the Riemann problem between `l` and `r`. `None` if
/// either side is dry.
///
/// The flux normal to the edge is `(h·un, h·un² + g·h²/2, h·un·ut)`; its
/// Roe matrix has the waves `un − c` and `un + c` (eigenvectors
/// `[1, un ∓ c, ut]`) and the shear wave `un` (eigenvector `[0, 0, 1]`),
/// which carries the tangential momentum across the edge. Leaving the shear
/// wave out (updating only `h` and the normal momentum, as some teaching codes
/// do) never moves tangential momentum along the flow: the front of a radial
/// wave then runs slower along the diagonals than along the axes, and the
/// difference does not shrink with the cell size.
#[inline]
pub fn fwave(l: Q, r: Q) -> Option<Edge> {
    if l.h < DRY || r.h < DRY {
        return None;
    }
    Some(waves(&Prepared::of(l), &Prepared::of(r)))
}

/// A wet cell seen from an edge, with what every edge beside it needs
/// computed once: `√h` and the velocities normal and along the edge.
#[derive(Clone, Copy, Debug)]
struct Prepared {
    h: f64,
    hn: f64,
    b: f64,
    root: f64,
    un: f64,
    ut: f64,
}

impl Prepared {
    #[inline]
    fn of(q: Q) -> Prepared {
        // One division for both velocities (as `Patch::prepare` does).
        let inv = 1.0 / q.h;
        Prepared {
            h: q.h,
            hn: q.hn,
            b: q.b,
            root: q.h.sqrt(),
            un: q.hn * inv,
            ut: q.ht * inv,
        }
    }
}

/// The net updates of an edge between two wet cells ([`fwave`]'s arithmetic,
/// on prepared cells).
///
/// Written for the divider and the branch predictor, which bound this kernel
/// (a profile of `Patch::step` shows the time at the `divsd`/`sqrtsd` and at
/// the sign tests): the two reciprocals an edge needs, `1 / (√hl + √hr)` for
/// the Roe averages and `1 / (λ3 − λ1)` for the decomposition, come from one
/// division (`r = 1 / (a·b)`, then `1/a = b·r`, `1/b = a·r`: about one unit
/// in the last place from two divisions), and each wave goes to its side by a
/// select, not a branch (the signs of the speeds follow the flow, which
/// changes direction across a wave front).
#[inline(always)]
fn waves(l: &Prepared, r: &Prepared) -> Edge {
    let (ul, ur) = (l.un, r.un);
    let (vl, vr) = (l.ut, r.ut);
    let (sl, sr) = (l.root, r.root);
    let roots = sl + sr;
    // Roe averages (scaled by `roots` until the one division below).
    let us = ul * sl + ur * sr;
    let vs = vl * sl + vr * sr;
    let c = (G * 0.5 * (l.h + r.h)).sqrt();
    // λ3 − λ1 = 2c up to rounding: u cancels out.
    let gap = 2.0 * c;
    let rec = 1.0 / (roots * gap);
    let u = us * (gap * rec);
    let v = vs * (gap * rec);
    let inv = roots * rec;
    let (l1, l3) = (u - c, u + c);
    // Flux difference with the bathymetry source term; grouped so that a lake
    // at rest (h + b equal on both sides, no motion) gives exactly zero.
    let df0 = r.hn - l.hn;
    let df1 = (r.hn * ur - l.hn * ul) + G * 0.5 * (l.h + r.h) * ((r.h - l.h) + (r.b - l.b));
    let df2 = r.hn * vr - l.hn * vl;
    // Decompose onto the eigenvectors.
    let b1 = (l3 * df0 - df1) * inv;
    let b3 = (df1 - l1 * df0) * inv;
    let b2 = df2 - v * df0;
    // Each wave goes to the side its speed points to; a shear wave standing
    // still is split evenly (so mirror-symmetric states stay symmetric).
    let left = |speed: f64, x: f64| if speed < 0.0 { x } else { 0.0 };
    let right = |speed: f64, x: f64| if speed < 0.0 { 0.0 } else { x };
    let shear = if u == 0.0 { 0.5 * b2 } else { b2 };
    Edge {
        left_h: left(l1, b1) + left(l3, b3),
        left_hn: left(l1, b1 * l1) + left(l3, b3 * l3),
        left_ht: left(l1, b1 * v) + left(l3, b3 * v) + if u > 0.0 { 0.0 } else { shear },
        right_h: right(l1, b1) + right(l3, b3),
        right_hn: right(l1, b1 * l1) + right(l3, b3 * l3),
        right_ht: right(l1, b1 * v) + right(l3, b3 * v) + if u < 0.0 { 0.0 } else { shear },
        speed: l1.abs().max(l3.abs()),
    }
}

/// One patch: `nx × ny` cells and a ghost layer around them, row-major with
/// stride `nx + 2`.
#[derive(Clone, Debug, PartialEq)]
pub struct Patch {
    pub nx: usize,
    pub ny: usize,
    pub h: Vec<f64>,
    pub hu: Vec<f64>,
    pub hv: Vec<f64>,
    pub b: Vec<f64>,
    /// Scratch of a step: per cell `√h`, `hu/h`, `hv/h`; the net updates of
    /// one row's x edges (`nx + 1`) and of the y edges below and above it
    /// (`nx` each).
    root: Vec<f64>,
    u: Vec<f64>,
    v: Vec<f64>,
    row: Vec<Edge>,
    south: Vec<Edge>,
    north: Vec<Edge>,
}

/// The direction normal to an edge.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Axis {
    X,
    Y,
}

/// The four sides of a patch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    West,
    East,
    South,
    North,
}

impl Side {
    pub const ALL: [Side; 4] = [Side::West, Side::East, Side::South, Side::North];

    pub fn opposite(self) -> Side {
        match self {
            Side::West => Side::East,
            Side::East => Side::West,
            Side::South => Side::North,
            Side::North => Side::South,
        }
    }
}

impl Patch {
    /// A patch of `nx × ny` cells set by `init(x, y) -> (h, hu, hv, b)` at
    /// its cells' indices (ghosts are set by the boundary exchange).
    pub fn new(nx: usize, ny: usize, mut init: impl FnMut(usize, usize) -> [f64; 4]) -> Patch {
        let n = (nx + 2) * (ny + 2);
        let mut p = Patch {
            nx,
            ny,
            h: vec![0.0; n],
            hu: vec![0.0; n],
            hv: vec![0.0; n],
            b: vec![0.0; n],
            root: vec![0.0; n],
            u: vec![0.0; n],
            v: vec![0.0; n],
            row: vec![Edge::default(); nx + 1],
            south: vec![Edge::default(); nx],
            north: vec![Edge::default(); nx],
        };
        for y in 0..ny {
            for x in 0..nx {
                let i = p.at(x + 1, y + 1);
                let [h, hu, hv, b] = init(x, y);
                (p.h[i], p.hu[i], p.hv[i], p.b[i]) = (h, hu, hv, b);
            }
        }
        p
    }

    #[inline]
    pub fn at(&self, x: usize, y: usize) -> usize {
        y * (self.nx + 2) + x
    }

    /// Cell `i` seen from an edge across `axis`.
    #[cfg(test)]
    fn q(&self, i: usize, axis: Axis) -> Q {
        let (hn, ht) = match axis {
            Axis::X => (self.hu[i], self.hv[i]),
            Axis::Y => (self.hv[i], self.hu[i]),
        };
        Q {
            h: self.h[i],
            hn,
            ht,
            b: self.b[i],
        }
    }

    /// The cells along side `s` (inside the patch), as consecutive
    /// `[h, hu, hv, b]` quadruples, what the neighbour on that side needs.
    pub fn boundary(&self, s: Side, out: &mut Vec<f64>) {
        out.clear();
        let idx: Vec<usize> = match s {
            Side::West => (1..=self.ny).map(|y| self.at(1, y)).collect(),
            Side::East => (1..=self.ny).map(|y| self.at(self.nx, y)).collect(),
            Side::South => (1..=self.nx).map(|x| self.at(x, 1)).collect(),
            Side::North => (1..=self.nx).map(|x| self.at(x, self.ny)).collect(),
        };
        for i in idx {
            out.extend_from_slice(&[self.h[i], self.hu[i], self.hv[i], self.b[i]]);
        }
    }

    fn ghost_indices(&self, s: Side) -> Vec<usize> {
        match s {
            Side::West => (1..=self.ny).map(|y| self.at(0, y)).collect(),
            Side::East => (1..=self.ny).map(|y| self.at(self.nx + 1, y)).collect(),
            Side::South => (1..=self.nx).map(|x| self.at(x, 0)).collect(),
            Side::North => (1..=self.nx).map(|x| self.at(x, self.ny + 1)).collect(),
        }
    }

    /// Sets the ghost layer of side `s` from the neighbour's boundary cells.
    /// Returns false if `data` has the wrong length.
    pub fn set_ghosts(&mut self, s: Side, data: &[f64]) -> bool {
        let idx = self.ghost_indices(s);
        if data.len() != 4 * idx.len() {
            return false;
        }
        for (k, i) in idx.into_iter().enumerate() {
            let q = &data[4 * k..4 * k + 4];
            (self.h[i], self.hu[i], self.hv[i], self.b[i]) = (q[0], q[1], q[2], q[3]);
        }
        true
    }

    /// A reflecting wall on side `s`: the ghost mirrors the boundary cell with
    /// the normal momentum negated.
    pub fn set_wall(&mut self, s: Side) {
        let mut data = Vec::new();
        self.boundary(s, &mut data);
        for q in data.chunks_mut(4) {
            match s {
                Side::West | Side::East => q[1] = -q[1],
                Side::South | Side::North => q[2] = -q[2],
            }
        }
        self.set_ghosts(s, &data);
    }

    /// One time step of length `dt` on cells of `dx × dy`. Returns the
    /// largest wave speed seen, or `None` if a dry cell was met.
    ///
    /// Every edge's net updates are those of [`fwave`] bit for bit; the step
    /// only orders the work for speed: `√h` and the velocities once per cell
    /// rather than once per edge, and the cells updated row by row as soon
    /// as the edges around the row are known, so the edges stay in L1.
    pub fn step(&mut self, dt: f64, dx: f64, dy: f64) -> Option<f64> {
        let (nx, ny) = (self.nx, self.ny);
        self.prepare()?;
        let mut speed: f64 = 0.0;
        let (cx, cy) = (dt / dx, dt / dy);
        // The y edges below the first row.
        for x in 0..nx {
            let e = self.edge(self.at(x + 1, 0), self.at(x + 1, 1), Axis::Y);
            speed = speed.max(e.speed);
            self.south[x] = e;
        }
        for y in 1..=ny {
            for x in 0..=nx {
                let e = self.edge(self.at(x, y), self.at(x + 1, y), Axis::X);
                speed = speed.max(e.speed);
                self.row[x] = e;
            }
            for x in 0..nx {
                let e = self.edge(self.at(x + 1, y), self.at(x + 1, y + 1), Axis::Y);
                speed = speed.max(e.speed);
                self.north[x] = e;
            }
            for x in 0..nx {
                let i = self.at(x + 1, y);
                let (w, e) = (&self.row[x], &self.row[x + 1]);
                let (s, n) = (&self.south[x], &self.north[x]);
                self.h[i] -= cx * (w.right_h + e.left_h) + cy * (s.right_h + n.left_h);
                self.hu[i] -= cx * (w.right_hn + e.left_hn) + cy * (s.right_ht + n.left_ht);
                self.hv[i] -= cx * (w.right_ht + e.left_ht) + cy * (s.right_hn + n.left_hn);
            }
            std::mem::swap(&mut self.south, &mut self.north);
        }
        Some(speed)
    }

    /// Fills the per-cell scratch of every cell an edge touches (the cells
    /// and the ghosts beside them, not the corners); `None` if one is dry.
    fn prepare(&mut self) -> Option<()> {
        let (nx, ny) = (self.nx, self.ny);
        let rows = (0..=ny + 1).map(|y| {
            let inner = y == 0 || y == ny + 1;
            (y, if inner { 1..nx + 1 } else { 0..nx + 2 })
        });
        for (y, xs) in rows {
            for x in xs {
                let i = self.at(x, y);
                let h = self.h[i];
                if h < DRY {
                    return None;
                }
                self.root[i] = h.sqrt();
                // One division for both velocities: the divider bounds
                // this kernel (see `waves`).
                let inv = 1.0 / h;
                self.u[i] = self.hu[i] * inv;
                self.v[i] = self.hv[i] * inv;
            }
        }
        Some(())
    }

    /// The net updates of the edge between cells `l` and `r` across `axis`
    /// (both prepared).
    #[inline(always)]
    fn edge(&self, l: usize, r: usize, axis: Axis) -> Edge {
        waves(&self.side(l, axis), &self.side(r, axis))
    }

    /// Prepared cell `i` seen from an edge across `axis`.
    #[inline(always)]
    fn side(&self, i: usize, axis: Axis) -> Prepared {
        let (hn, un, ut) = match axis {
            Axis::X => (self.hu[i], self.u[i], self.v[i]),
            Axis::Y => (self.hv[i], self.v[i], self.u[i]),
        };
        Prepared {
            h: self.h[i],
            hn,
            b: self.b[i],
            root: self.root[i],
            un,
            ut,
        }
    }

    /// The largest wave speed `|u| + √(g h)` over the cells (for the time step).
    pub fn max_speed(&self) -> f64 {
        let mut s: f64 = 0.0;
        for y in 1..=self.ny {
            for x in 1..=self.nx {
                let i = self.at(x, y);
                let c = (G * self.h[i]).sqrt();
                let h = self.h[i].max(DRY);
                s = s
                    .max((self.hu[i] / h).abs() + c)
                    .max((self.hv[i] / h).abs() + c);
            }
        }
        s
    }

    /// The cells' `h` (ghosts left out), row by row, followed by their `hu`
    /// and `hv` if `all`.
    pub fn capture(&self, all: bool) -> Vec<f64> {
        let [mut h, hu, hv] = self.interior();
        if all {
            h.extend(hu);
            h.extend(hv);
        }
        h
    }

    /// The cells' values (ghosts left out), row by row: `h`, `hu`, `hv`.
    pub fn interior(&self) -> [Vec<f64>; 3] {
        let mut out = [Vec::new(), Vec::new(), Vec::new()];
        for y in 1..=self.ny {
            for x in 1..=self.nx {
                let i = self.at(x, y);
                out[0].push(self.h[i]);
                out[1].push(self.hu[i]);
                out[2].push(self.hv[i]);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(h: f64, hn: f64, ht: f64, b: f64) -> Q {
        Q { h, hn, ht, b }
    }

    #[test]
    fn a_lake_at_rest_gives_zero_updates() {
        let e = fwave(q(10.0, 0.0, 0.0, -10.0), q(7.25, 0.0, 0.0, -7.25)).unwrap();
        assert_eq!(
            [e.left_h, e.left_hn, e.left_ht, e.right_h, e.right_hn, e.right_ht],
            [0.0; 6]
        );
    }

    #[test]
    fn updates_sum_to_the_flux_difference() {
        let (l, r) = (q(3.0, 1.5, 0.6, 0.0), q(2.0, -0.5, 1.2, 0.0));
        let e = fwave(l, r).unwrap();
        let flux = |s: Q| {
            let u = s.hn / s.h;
            [s.hn, s.hn * u + 0.5 * G * s.h * s.h, s.hn * s.ht / s.h]
        };
        let (fl, fr) = (flux(l), flux(r));
        assert!((e.left_h + e.right_h - (fr[0] - fl[0])).abs() < 1e-12);
        assert!((e.left_hn + e.right_hn - (fr[1] - fl[1])).abs() < 1e-9);
        assert!((e.left_ht + e.right_ht - (fr[2] - fl[2])).abs() < 1e-12);
    }

    /// A uniform flow along x carrying a band of y-momentum: the band must
    /// move downstream with the flow (the shear wave). Without the shear wave
    /// the y-momentum never moves at all.
    #[test]
    fn tangential_momentum_is_carried_by_the_flow() {
        let (n, u, h) = (40, 2.0, 10.0);
        let band = |x: usize| if (10..15).contains(&x) { 3.0 } else { 0.0 };
        let mut p = Patch::new(n, 1, |x, _| [h, h * u, band(x), 0.0]);
        let (dx, dt) = (1.0, 0.04);
        // 50 steps of dt at u = 2: the band's middle moves 4 cells on.
        for _ in 0..50 {
            // Every ghost copies the cell beside it: inflow and outflow along
            // x, and no change along y.
            let mut ghosts = vec![(p.at(0, 1), p.at(1, 1)), (p.at(n + 1, 1), p.at(n, 1))];
            for x in 1..=n {
                ghosts.push((p.at(x, 0), p.at(x, 1)));
                ghosts.push((p.at(x, 2), p.at(x, 1)));
            }
            for (ghost, from) in ghosts {
                (p.h[ghost], p.hu[ghost], p.hv[ghost]) = (p.h[from], p.hu[from], p.hv[from]);
            }
            p.step(dt, dx, dx).unwrap();
        }
        let [_, _, hv] = p.interior();
        let centre = |f: &[f64]| {
            let m: f64 = f.iter().sum();
            f.iter().enumerate().map(|(i, v)| i as f64 * v).sum::<f64>() / m
        };
        let moved = centre(&hv) - 12.0;
        assert!(
            (moved - 4.0).abs() < 0.2,
            "the band moved {moved} cells, not 4"
        );
        // And the momentum it carries is conserved.
        assert!((hv.iter().sum::<f64>() - 15.0).abs() < 1e-9);
    }

    /// The plain step: every edge by [`fwave`] into whole arrays, then every
    /// cell. [`Patch::step`] must give the same bits.
    fn plain_step(p: &mut Patch, dt: f64, dx: f64, dy: f64) -> Option<f64> {
        let (nx, ny) = (p.nx, p.ny);
        let mut speed: f64 = 0.0;
        let mut xe = vec![Edge::default(); (nx + 1) * ny];
        let mut ye = vec![Edge::default(); nx * (ny + 1)];
        for y in 0..ny {
            for x in 0..=nx {
                let (l, r) = (p.at(x, y + 1), p.at(x + 1, y + 1));
                let e = fwave(p.q(l, Axis::X), p.q(r, Axis::X))?;
                speed = speed.max(e.speed);
                xe[y * (nx + 1) + x] = e;
            }
        }
        for y in 0..=ny {
            for x in 0..nx {
                let (l, r) = (p.at(x + 1, y), p.at(x + 1, y + 1));
                let e = fwave(p.q(l, Axis::Y), p.q(r, Axis::Y))?;
                speed = speed.max(e.speed);
                ye[y * nx + x] = e;
            }
        }
        let (cx, cy) = (dt / dx, dt / dy);
        for y in 0..ny {
            for x in 0..nx {
                let i = p.at(x + 1, y + 1);
                let (w, e) = (&xe[y * (nx + 1) + x], &xe[y * (nx + 1) + x + 1]);
                let (s, n) = (&ye[y * nx + x], &ye[(y + 1) * nx + x]);
                p.h[i] -= cx * (w.right_h + e.left_h) + cy * (s.right_h + n.left_h);
                p.hu[i] -= cx * (w.right_hn + e.left_hn) + cy * (s.right_ht + n.left_ht);
                p.hv[i] -= cx * (w.right_ht + e.left_ht) + cy * (s.right_hn + n.left_hn);
            }
        }
        Some(speed)
    }

    #[test]
    fn the_step_equals_the_plain_step_bit_for_bit() {
        // A rough state with motion both ways and an uneven floor.
        let init = |x: usize, y: usize| {
            let (x, y) = (x as f64, y as f64);
            let b = -20.0 + 3.0 * (0.7 * x).sin() * (0.3 * y).cos();
            let h = 25.0 + 2.0 * (0.5 * x + 0.2 * y).cos() - b - 20.0;
            [h, 3.0 * (0.4 * y).sin(), -2.0 * (0.6 * x).cos(), b]
        };
        let mut fast = Patch::new(13, 9, init);
        let mut plain = fast.clone();
        for _ in 0..20 {
            for p in [&mut fast, &mut plain] {
                for s in Side::ALL {
                    p.set_wall(s);
                }
            }
            let a = fast.step(0.01, 1.0, 1.5).unwrap();
            let b = plain_step(&mut plain, 0.01, 1.0, 1.5).unwrap();
            assert_eq!(a.to_bits(), b.to_bits());
        }
        let bits = |p: &Patch| -> Vec<u64> {
            let [h, hu, hv] = p.interior();
            h.iter()
                .chain(&hu)
                .chain(&hv)
                .map(|v| v.to_bits())
                .collect()
        };
        assert_eq!(bits(&fast), bits(&plain));
        // Both refuse a dry cell.
        let i = fast.at(4, 4);
        fast.h[i] = 0.0;
        assert!(fast.step(0.01, 1.0, 1.5).is_none());
    }

    #[test]
    fn dry_cells_are_refused() {
        assert!(fwave(q(0.0, 0.0, 0.0, 0.0), q(1.0, 0.0, 0.0, 0.0)).is_none());
    }
}
