//! The initial conditions (after the TUM-I5 SWE code base's scenarios), on a
//! square domain of 1000 m side (taller or wider if the grid is), walls all
//! round.

use clap::ValueEnum;

/// Side of the domain along its longer axis (m).
pub const DOMAIN: f64 = 1000.0;

/// Where the planar dam stands (m along x).
pub const DAM_X: f64 = DOMAIN / 2.0;

/// The centre of the radial dam break (m).
pub const DAM_CENTRE: (f64, f64) = (DOMAIN / 2.0, DOMAIN / 2.0);

/// Which initial condition.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Scenario {
    /// A cylinder of water 15 m high, 100 m in radius, in the middle of a flat
    /// 10 m deep pool, released at t = 0.
    RadialDamBreak,
    /// A planar dam along x: 15 m deep for x < 500 m, 10 m beyond, released
    /// at t = 0; checked against the exact solution.
    #[value(name = "dam-break-1d")]
    DamBreak1d,
    /// A lake at rest over an uneven sea floor (depth 30–70 m, surface flat):
    /// nothing may move.
    SeaAtRest,
    /// A flat-bottomed pool whose surface is tilted (250 m deep in the middle,
    /// ±5 m along the diagonal), sloshing between the walls.
    SplashingPool,
    /// Read from files (`--bathymetry`, `--displacement`): not a choice of
    /// `--scenario`; its cells' values are in the run's configuration.
    #[value(skip)]
    FromFile,
}

impl Scenario {
    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Scenario::RadialDamBreak => "radial-dam-break",
            Scenario::DamBreak1d => "dam-break-1d",
            Scenario::SeaAtRest => "sea-at-rest",
            Scenario::SplashingPool => "splashing-pool",
            Scenario::FromFile => "from-file",
        }
    }

    /// `[h, hu, hv, b]` at the centre `(x, y)` (m) of a cell.
    pub fn at(self, x: f64, y: f64) -> [f64; 4] {
        match self {
            Scenario::RadialDamBreak => {
                let r = ((x - DAM_CENTRE.0).powi(2) + (y - DAM_CENTRE.1).powi(2)).sqrt();
                [if r < 100.0 { 15.0 } else { 10.0 }, 0.0, 0.0, 0.0]
            }
            Scenario::DamBreak1d => [if x < DAM_X { 15.0 } else { 10.0 }, 0.0, 0.0, 0.0],
            Scenario::SeaAtRest => {
                let k = 2.0 * std::f64::consts::PI / DOMAIN;
                let b = -(50.0 + 20.0 * (k * x).sin() * (k * y).cos());
                // h = -b exactly: the surface h + b is 0 everywhere.
                [-b, 0.0, 0.0, b]
            }
            Scenario::SplashingPool => [250.0 + 5.0 - (x + y) / 200.0, 0.0, 0.0, 0.0],
            // Not a formula: `Config::initial` reads the file's cells. NaN
            // makes any use of this arm fail the run's checks.
            Scenario::FromFile => [f64::NAN; 4],
        }
    }
}

/// The grid: `nx × ny` cells of `dx × dy` metres, its lower-left corner at
/// `(x0, y0)`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Grid {
    pub nx: usize,
    pub ny: usize,
    pub dx: f64,
    pub dy: f64,
    pub x0: f64,
    pub y0: f64,
}

impl Grid {
    /// The grid of the built-in scenarios: square cells, the longer side
    /// [`DOMAIN`] long, the corner at the origin.
    pub fn new(nx: usize, ny: usize) -> Grid {
        let d = DOMAIN / nx.max(ny) as f64;
        Grid {
            nx,
            ny,
            dx: d,
            dy: d,
            x0: 0.0,
            y0: 0.0,
        }
    }

    /// The centre of cell `(i, j)` (m).
    pub fn centre(&self, i: usize, j: usize) -> (f64, f64) {
        (
            self.x0 + (i as f64 + 0.5) * self.dx,
            self.y0 + (j as f64 + 0.5) * self.dy,
        )
    }

    /// The initial `[h, hu, hv, b]` of global cell `(i, j)`.
    pub fn initial(&self, s: Scenario, i: usize, j: usize) -> [f64; 4] {
        let (x, y) = self.centre(i, j);
        s.at(x, y)
    }
}
