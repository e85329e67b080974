//! A scenario read from files: bathymetry and an initial displacement of the
//! sea floor, each a field `z(y, x)` on its own grid of cell centres (the
//! convention of the TUM SWE teaching code's NetCDF scenarios; the files are
//! read in `netcdf.rs`).
//!
//! The domain is the bathymetry's extent (half a spacing beyond its first and
//! last centres). Each cell of the run samples both fields bilinearly at its
//! centre; the water starts at rest with its surface at 0 (`h = −z`), and the
//! displacement (zero outside its own grid) lifts the sea floor and the water
//! on it: `b = z + d`, so the surface starts at `h + b = d`. The solver has no
//! dry cells, so a bathymetry at or above `−`[`MIN_DEPTH`] anywhere in the
//! domain is refused, naming the place.

use super::scenario::Grid;
use super::solver::DRY;

/// The shallowest water (m) a file scenario may start with.
pub const MIN_DEPTH: f64 = 100.0 * DRY;

/// A field on a grid of points: `z[j * x.len() + i]` at `(x[i], y[j])`.
#[derive(Clone, Debug, PartialEq)]
pub struct Gridded {
    pub x: Vec<f64>,
    pub y: Vec<f64>,
    pub z: Vec<f64>,
}

impl Gridded {
    /// Checks the shape: at least two points along each axis, coordinates
    /// strictly increasing and finite, `x.len() × y.len()` finite values.
    /// `what` names the field in the error.
    pub fn check(&self, what: &str) -> Result<(), String> {
        for (name, c) in [("x", &self.x), ("y", &self.y)] {
            if c.len() < 2 {
                return Err(format!(
                    "{what}: `{name}` needs at least 2 points, has {}",
                    c.len()
                ));
            }
            if let Some(k) = c
                .windows(2)
                .position(|w| !(w[0].is_finite() && w[1].is_finite() && w[1] > w[0]))
            {
                return Err(format!(
                    "{what}: `{name}` must increase strictly, but {name}[{}] = {} and {name}[{}] = {}",
                    k,
                    c[k],
                    k + 1,
                    c[k + 1]
                ));
            }
        }
        let want = self.x.len() * self.y.len();
        if self.z.len() != want {
            return Err(format!(
                "{what}: `z` has {} values, not x × y = {} × {}",
                self.z.len(),
                self.x.len(),
                self.y.len()
            ));
        }
        if let Some(k) = self.z.iter().position(|v| !v.is_finite()) {
            let (i, j) = (k % self.x.len(), k / self.x.len());
            return Err(format!(
                "{what}: `z` at x = {}, y = {} is {} (missing values are not allowed)",
                self.x[i], self.y[j], self.z[k]
            ));
        }
        Ok(())
    }

    /// The cells' extent: half a spacing beyond the first and last points.
    pub fn extent(&self) -> ((f64, f64), (f64, f64)) {
        let ends = |c: &[f64]| {
            let n = c.len();
            (
                c[0] - 0.5 * (c[1] - c[0]),
                c[n - 1] + 0.5 * (c[n - 1] - c[n - 2]),
            )
        };
        (ends(&self.x), ends(&self.y))
    }

    /// Whether `(x, y)` lies within the points' hull.
    pub fn covers(&self, x: f64, y: f64) -> bool {
        let inside = |c: &[f64], v: f64| v >= c[0] && v <= c[c.len() - 1];
        inside(&self.x, x) && inside(&self.y, y)
    }

    /// The field at `(x, y)`, bilinear between the four nearest points
    /// (beyond the points, the nearest edge's value).
    pub fn sample(&self, x: f64, y: f64) -> f64 {
        let locate = |c: &[f64], v: f64| {
            let n = c.len();
            let v = v.clamp(c[0], c[n - 1]);
            let i = c.partition_point(|&p| p <= v).clamp(1, n - 1) - 1;
            (i, (v - c[i]) / (c[i + 1] - c[i]))
        };
        let (i, wx) = locate(&self.x, x);
        let (j, wy) = locate(&self.y, y);
        let nx = self.x.len();
        let at = |i: usize, j: usize| self.z[j * nx + i];
        let lo = (1.0 - wx) * at(i, j) + wx * at(i + 1, j);
        let hi = (1.0 - wx) * at(i, j + 1) + wx * at(i + 1, j + 1);
        (1.0 - wy) * lo + wy * hi
    }
}

/// The initial state of every cell (`[h, hu, hv, b]`, row-major) on a grid
/// of `nx` cells along x over the bathymetry's extent, and `ny` along y (or
/// as many as keep the cells nearly square).
pub fn initial(
    bathymetry: &Gridded,
    displacement: Option<&Gridded>,
    nx: usize,
    ny: Option<usize>,
) -> Result<(Grid, Vec<[f64; 4]>), String> {
    bathymetry.check("the bathymetry")?;
    if let Some(d) = displacement {
        d.check("the displacement")?;
    }
    let ((x0, x1), (y0, y1)) = bathymetry.extent();
    let ny = ny.unwrap_or_else(|| ((y1 - y0) / (x1 - x0) * nx as f64).round().max(2.0) as usize);
    let grid = Grid {
        nx,
        ny,
        dx: (x1 - x0) / nx as f64,
        dy: (y1 - y0) / ny as f64,
        x0,
        y0,
    };
    let mut cells = Vec::with_capacity(nx * ny);
    for j in 0..ny {
        for i in 0..nx {
            let (x, y) = grid.centre(i, j);
            let z = bathymetry.sample(x, y);
            if z > -MIN_DEPTH {
                return Err(format!(
                    "the bathymetry at x = {x:.1} m, y = {y:.1} m is {z:.3} m: the solver needs water at least {MIN_DEPTH} m deep everywhere (it has no dry cells)"
                ));
            }
            let d = displacement
                .filter(|d| d.covers(x, y))
                .map_or(0.0, |d| d.sample(x, y));
            cells.push([-z, 0.0, 0.0, z + d]);
        }
    }
    Ok((grid, cells))
}

/// The project's synthetic input: a Gaussian seamount rising from a 2000 m
/// deep sea floor to 500 m below the surface in the middle of a 10 km square
/// (64 × 64 points), and a Gaussian uplift of the sea floor, 2 m high, west
/// of it (its own 33 × 33 points over 4 km).
pub fn seamount() -> (Gridded, Gridded) {
    let axis = |from: f64, to: f64, n: usize| -> Vec<f64> {
        let step = (to - from) / n as f64;
        (0..n).map(|k| from + (k as f64 + 0.5) * step).collect()
    };
    let field = |x: &[f64], y: &[f64], f: &dyn Fn(f64, f64) -> f64| {
        y.iter()
            .flat_map(|&yv| x.iter().map(move |&xv| (xv, yv)))
            .map(|(xv, yv)| f(xv, yv))
            .collect()
    };
    let gauss = |x: f64, y: f64, cx: f64, cy: f64, sigma: f64| {
        (-((x - cx).powi(2) + (y - cy).powi(2)) / (2.0 * sigma * sigma)).exp()
    };
    let (bx, by) = (axis(0.0, 10_000.0, 64), axis(0.0, 10_000.0, 64));
    let bz = field(&bx, &by, &|x, y| {
        -2000.0 + 1500.0 * gauss(x, y, 5000.0, 5000.0, 1000.0)
    });
    let (dx, dy) = (axis(1000.0, 5000.0, 33), axis(3000.0, 7000.0, 33));
    let dz = field(&dx, &dy, &|x, y| 2.0 * gauss(x, y, 3000.0, 5000.0, 600.0));
    (
        Gridded {
            x: bx,
            y: by,
            z: bz,
        },
        Gridded {
            x: dx,
            y: dy,
            z: dz,
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sampling_hits_the_points_and_interpolates_between_them() {
        let g = Gridded {
            x: vec![0.0, 10.0, 30.0],
            y: vec![0.0, 10.0],
            z: vec![1.0, 2.0, 4.0, 3.0, 4.0, 6.0],
        };
        g.check("g").unwrap();
        assert_eq!(g.sample(10.0, 0.0), 2.0);
        assert_eq!(g.sample(20.0, 0.0), 3.0);
        assert_eq!(g.sample(5.0, 5.0), 2.5);
        // Beyond the points: the edge.
        assert_eq!(g.sample(-5.0, 20.0), 3.0);
        assert_eq!(g.extent(), ((-5.0, 40.0), (-5.0, 15.0)));
    }

    #[test]
    fn bad_fields_are_refused_with_their_place() {
        let mut g = Gridded {
            x: vec![0.0, 1.0],
            y: vec![0.0, 1.0],
            z: vec![-5.0; 4],
        };
        g.z[3] = f64::NAN;
        assert!(g.check("b").unwrap_err().contains("x = 1, y = 1"));
        g.z[3] = -5.0;
        g.x = vec![1.0, 0.0];
        assert!(g.check("b").unwrap_err().contains("increase"));
        g.x = vec![0.0, 1.0];
        g.z.pop();
        assert!(g.check("b").unwrap_err().contains("3 values"));
    }

    #[test]
    fn the_seamount_starts_at_rest_with_the_displacement_on_the_surface() {
        let (b, d) = seamount();
        let (grid, cells) = initial(&b, Some(&d), 40, None).unwrap();
        assert_eq!((grid.nx, grid.ny), (40, 40));
        assert!((grid.dx - 250.0).abs() < 1e-9 && grid.x0 == 0.0);
        // Far from the uplift the surface is exactly 0; over it, the uplift.
        let at = |i: usize, j: usize| cells[j * grid.nx + i];
        let [h, _, _, bed] = at(39, 39);
        assert_eq!(h + bed, 0.0);
        let (i, j) = ((3000.0 / 250.0) as usize, (5000.0 / 250.0) as usize);
        let [h, hu, hv, bed] = at(i, j);
        // (the cell's centre is 177 m from the top of the 2 m Gaussian, σ = 600 m)
        assert!(
            (h + bed - 2.0 * (-0.0434_f64).exp()).abs() < 0.01,
            "{}",
            h + bed
        );
        assert!(hu == 0.0 && hv == 0.0);
        // The seamount's top is in the middle, 500 m deep.
        let [h, _, _, _] = at(20, 20);
        assert!((h - 500.0).abs() < 40.0, "{h}");
    }

    #[test]
    fn land_is_refused_naming_the_place() {
        let (mut b, _) = seamount();
        b.z[64 * 10 + 7] = 3.0;
        let e = initial(&b, None, 64, None).unwrap_err();
        assert!(
            e.contains("no dry cells") && e.contains("x = 1171.9 m"),
            "{e}"
        );
    }
}
