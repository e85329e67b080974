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
/// code below: 3 divisions, 2 square roots, 3 `abs`/`max`, the rest additions and
/// multiplications), as Pond counts the solver's work.
pub const FLOPS_PER_EDGE: u64 = 44;

/// Floating-point operations of one cell's update from its edges' net updates.
pub const FLOPS_PER_CELL: u64 = 12;

/// Net updates of one edge: what the left cell and the right cell get
/// (`A⁻ΔQ` and `A⁺ΔQ` for the height and the normal momentum), and the
/// largest wave speed.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Edge {
    pub left_h: f64,
    pub left_hu: f64,
    pub right_h: f64,
    pub right_hu: f64,
    pub speed: f64,
}

/// The f-wave solution of the Riemann problem between `(hl, hul, bl)` and
/// `(hr, hur, br)` (normal momentum `hu`). `None` if either side is dry.
#[inline]
pub fn fwave(hl: f64, hul: f64, bl: f64, hr: f64, hur: f64, br: f64) -> Option<Edge> {
    if hl < DRY || hr < DRY {
        return None;
    }
    let ul = hul / hl;
    let ur = hur / hr;
    let (sl, sr) = (hl.sqrt(), hr.sqrt());
    // Roe averages.
    let u = (ul * sl + ur * sr) / (sl + sr);
    let c = (G * 0.5 * (hl + hr)).sqrt();
    let (l1, l2) = (u - c, u + c);
    // Flux difference with the bathymetry source term; grouped so that a lake
    // at rest (h + b equal on both sides, no motion) gives exactly zero.
    let df0 = hur - hul;
    let df1 = (hur * ur - hul * ul) + G * 0.5 * (hl + hr) * ((hr - hl) + (br - bl));
    // Decompose onto the eigenvectors [1, λ1] and [1, λ2].
    let inv = 1.0 / (l2 - l1);
    let b1 = (l2 * df0 - df1) * inv;
    let b2 = (df1 - l1 * df0) * inv;
    let mut e = Edge {
        speed: l1.abs().max(l2.abs()),
        ..Edge::default()
    };
    // Each wave goes to the side its speed points to.
    if l1 < 0.0 {
        e.left_h += b1;
        e.left_hu += b1 * l1;
    } else {
        e.right_h += b1;
        e.right_hu += b1 * l1;
    }
    if l2 < 0.0 {
        e.left_h += b2;
        e.left_hu += b2 * l2;
    } else {
        e.right_h += b2;
        e.right_hu += b2 * l2;
    }
    Some(e)
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
    /// Scratch: net updates of the x edges (`(nx + 1) × ny`) and y edges
    /// (`nx × (ny + 1)`).
    xe: Vec<Edge>,
    ye: Vec<Edge>,
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
            xe: vec![Edge::default(); (nx + 1) * ny],
            ye: vec![Edge::default(); nx * (ny + 1)],
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
    pub fn step(&mut self, dt: f64, dx: f64, dy: f64) -> Option<f64> {
        let (nx, ny) = (self.nx, self.ny);
        let mut speed: f64 = 0.0;
        for y in 0..ny {
            for x in 0..=nx {
                let (l, r) = (self.at(x, y + 1), self.at(x + 1, y + 1));
                let e = fwave(
                    self.h[l], self.hu[l], self.b[l], self.h[r], self.hu[r], self.b[r],
                )?;
                speed = speed.max(e.speed);
                self.xe[y * (nx + 1) + x] = e;
            }
        }
        for y in 0..=ny {
            for x in 0..nx {
                let (l, r) = (self.at(x + 1, y), self.at(x + 1, y + 1));
                let e = fwave(
                    self.h[l], self.hv[l], self.b[l], self.h[r], self.hv[r], self.b[r],
                )?;
                speed = speed.max(e.speed);
                self.ye[y * nx + x] = e;
            }
        }
        let (cx, cy) = (dt / dx, dt / dy);
        for y in 0..ny {
            for x in 0..nx {
                let i = self.at(x + 1, y + 1);
                let (w, e) = (&self.xe[y * (nx + 1) + x], &self.xe[y * (nx + 1) + x + 1]);
                let (s, n) = (&self.ye[y * nx + x], &self.ye[(y + 1) * nx + x]);
                self.h[i] -= cx * (w.right_h + e.left_h) + cy * (s.right_h + n.left_h);
                self.hu[i] -= cx * (w.right_hu + e.left_hu);
                self.hv[i] -= cy * (s.right_hu + n.left_hu);
            }
        }
        Some(speed)
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

    #[test]
    fn a_lake_at_rest_gives_zero_updates() {
        let e = fwave(10.0, 0.0, -10.0, 7.25, 0.0, -7.25).unwrap();
        assert_eq!(
            (e.left_h, e.left_hu, e.right_h, e.right_hu),
            (0.0, 0.0, 0.0, 0.0)
        );
    }

    #[test]
    fn updates_sum_to_the_flux_difference() {
        let (hl, hul, hr, hur) = (3.0, 1.5, 2.0, -0.5);
        let e = fwave(hl, hul, 0.0, hr, hur, 0.0).unwrap();
        let df0 = hur - hul;
        let df1 = hur * hur / hr + 0.5 * G * hr * hr - (hul * hul / hl + 0.5 * G * hl * hl);
        assert!((e.left_h + e.right_h - df0).abs() < 1e-12);
        assert!((e.left_hu + e.right_hu - df1).abs() < 1e-9);
    }

    #[test]
    fn dry_cells_are_refused() {
        assert!(fwave(0.0, 0.0, 0.0, 1.0, 0.0, 0.0).is_none());
    }
}
