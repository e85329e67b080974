//! The run's configuration: the grid, its split into patches, the time step
//! and the snapshot steps, and where the patches are placed.

use std::sync::Arc;

use tutti::graph::{Curve, Partition, Placement, Scheme};

use super::actors;
use super::scenario::{Grid, Scenario};
use super::solver::{Patch, Side};
use super::Placing;

/// Everything a location needs to run the simulation.
#[derive(Clone, Debug)]
pub struct Config {
    pub grid: Grid,
    pub scenario: Scenario,
    /// Patch size in cells.
    pub pw: usize,
    pub ph: usize,
    /// Patches along x and y.
    pub px: usize,
    pub py: usize,
    pub steps: u64,
    pub dt: f64,
    /// Steps after which the patches' state is captured, in the order of
    /// the run's snapshots and frames.
    pub snapshots: Vec<Capture>,
    /// A scenario from files: every cell's initial `[h, hu, hv, b]`, row-major.
    pub cells: Option<Arc<Vec<[f64; 4]>>>,
}

/// A capture of the patches' state after a step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Capture {
    pub step: u64,
    /// The momenta too (for a file), not only the height (for a picture).
    pub all: bool,
}

impl Config {
    pub fn new(
        nx: usize,
        ny: usize,
        patch: usize,
        steps: u64,
        dt: Option<f64>,
        scenario: Scenario,
    ) -> Result<Config, String> {
        Config::build(Grid::new(nx, ny), None, patch, steps, dt, scenario)
    }

    /// A run from files: `cells` holds the initial `[h, hu, hv, b]` of every
    /// cell of `grid`, row-major.
    pub fn from_cells(
        grid: Grid,
        cells: Vec<[f64; 4]>,
        patch: usize,
        steps: u64,
        dt: Option<f64>,
    ) -> Result<Config, String> {
        if cells.len() != grid.nx * grid.ny {
            return Err(format!(
                "{} initial cells for a grid of {} × {}",
                cells.len(),
                grid.nx,
                grid.ny
            ));
        }
        Config::build(
            grid,
            Some(Arc::new(cells)),
            patch,
            steps,
            dt,
            Scenario::FromFile,
        )
    }

    fn build(
        grid: Grid,
        cells: Option<Arc<Vec<[f64; 4]>>>,
        patch: usize,
        steps: u64,
        dt: Option<f64>,
        scenario: Scenario,
    ) -> Result<Config, String> {
        let (nx, ny) = (grid.nx, grid.ny);
        if !nx.is_multiple_of(patch) || !ny.is_multiple_of(patch) {
            return Err(format!(
                "the patch size {patch} must divide the grid ({nx} × {ny} cells)"
            ));
        }
        let mut cfg = Config {
            grid,
            scenario,
            pw: patch,
            ph: patch,
            px: nx / patch,
            py: ny / patch,
            steps,
            dt: 0.0,
            snapshots: Vec::new(),
            cells,
        };
        cfg.dt = match dt {
            Some(dt) if dt.is_finite() && dt > 0.0 => dt,
            Some(dt) => return Err(format!("the time step must be positive, got {dt}")),
            None => {
                let whole = Patch::new(nx, ny, |i, j| cfg.initial(i, j));
                0.4 * grid.dx.min(grid.dy) / whole.max_speed()
            }
        };
        Ok(cfg)
    }

    /// The initial `[h, hu, hv, b]` of global cell `(i, j)`.
    pub fn initial(&self, i: usize, j: usize) -> [f64; 4] {
        match &self.cells {
            Some(cells) => cells[j * self.grid.nx + i],
            None => self.grid.initial(self.scenario, i, j),
        }
    }

    /// Runs until `t_end` (s) instead: as many steps as it takes with at most
    /// the current time step, shortened so that the last one ends exactly at
    /// `t_end`.
    pub fn until(&mut self, t_end: f64) -> Result<(), String> {
        if !(t_end.is_finite() && t_end > 0.0) {
            return Err(format!("the end time must be positive, got {t_end}"));
        }
        let steps = (t_end / self.dt * (1.0 - 1e-12)).ceil().max(1.0);
        if steps > 1e7 {
            return Err(format!(
                "{t_end} s takes {steps} steps of {:.3e} s: more than 10 million",
                self.dt
            ));
        }
        self.steps = steps as u64;
        self.dt = t_end / steps;
        Ok(())
    }

    /// The simulated time at the end of the run (s).
    pub fn end_time(&self) -> f64 {
        self.steps as f64 * self.dt
    }

    /// The captures after `step`: their indices and whether they take the
    /// momenta too.
    pub fn captures_at(&self, step: u64) -> impl Iterator<Item = (usize, bool)> + '_ {
        self.snapshots
            .iter()
            .enumerate()
            .filter(move |(_, c)| c.step == step)
            .map(|(k, c)| (k, c.all))
    }

    /// The largest `speed × dt` a step may have (CFL number 0.5).
    pub fn cfl_limit(&self) -> f64 {
        0.5 * self.grid.dx.min(self.grid.dy)
    }

    /// The patch on side `s` of patch `p`, if any.
    pub fn neighbour(&self, p: usize, s: Side) -> Option<usize> {
        let (x, y) = (p % self.px, p / self.px);
        match s {
            Side::West => (x > 0).then(|| p - 1),
            Side::East => (x + 1 < self.px).then(|| p + 1),
            Side::South => (y > 0).then(|| p - self.px),
            Side::North => (y + 1 < self.py).then(|| p + self.px),
        }
    }

    /// Patch `p` in its initial state.
    pub fn initial_patch(&self, p: usize) -> Patch {
        let (ox, oy) = ((p % self.px) * self.pw, (p / self.px) * self.ph);
        Patch::new(self.pw, self.ph, |x, y| self.initial(ox + x, oy + y))
    }

    pub fn cells(&self) -> u64 {
        (self.grid.nx * self.grid.ny) as u64
    }

    pub fn placement(&self, locations: usize, placing: Placing) -> Result<Placement, String> {
        let pg = actors::build(self, Scheme::TwoSided)?;
        let grid = |curve| Partition::Grid {
            cols: self.px,
            rows: self.py,
            curve,
        };
        let how = match placing {
            Placing::Blocks => grid(Curve::Blocks),
            Placing::Hilbert => grid(Curve::Hilbert),
            #[cfg(feature = "metis")]
            Placing::Metis => Partition::Metis,
        };
        pg.graph
            .partition(locations, &how)
            .map_err(|e| e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bad_patch_size_is_refused() {
        assert!(Config::new(30, 30, 8, 1, None, Scenario::SeaAtRest).is_err());
        assert!(Config::new(32, 32, 8, 1, Some(-1.0), Scenario::SeaAtRest).is_err());
    }

    #[test]
    fn an_end_time_is_met_by_whole_steps_no_longer_than_the_step() {
        let mut c = Config::new(32, 32, 8, 1, Some(0.3), Scenario::SeaAtRest).unwrap();
        c.until(1.0).unwrap();
        assert_eq!(c.steps, 4);
        assert!((c.end_time() - 1.0).abs() < 1e-12 && c.dt <= 0.3);
        c.until(0.5).unwrap();
        assert_eq!((c.steps, c.dt), (2, 0.25));
        assert!(c.until(-1.0).is_err() && c.until(f64::NAN).is_err());
        assert!(c.until(1e9).is_err());
    }
}
