//! NetCDF files (feature `netcdf`, on the system's libnetcdf): a run's fields
//! out, a scenario's bathymetry and displacement in.
//!
//! **Output** (`--netcdf FILE.nc`, NetCDF-4, CF-1.8 conventions): the
//! dimensions `x`, `y` and `time` (unlimited), each with a coordinate
//! variable of the same name (`units`, `long_name`, `standard_name`, `axis`);
//! the water depth `h(time, y, x)`, the momenta `hu` and `hv` (m²/s), the sea
//! floor `b(y, x)` and the surface `eta = h + b (time, y, x)`, each with
//! `units` and `long_name`. One record per time: the start, each
//! `--snapshots` time and the end. ParaView, xarray, ncview and `ncdump` read
//! it as it is.
//!
//! **Input** (`--bathymetry`, `--displacement`): a field `z(y, x)` with its
//! coordinate variables `x` and `y` (the TUM SWE teaching code's convention),
//! in any NetCDF format, any numeric type; `_FillValue` cells are refused.

use super::input::Gridded;
use super::Config;

/// One record of a run: its time (s) and every cell's `h`, `hu`, `hv`.
// Without the feature nothing reads a record: a run asked for a file stops
// before it starts (`require`).
#[cfg_attr(not(feature = "netcdf"), allow(dead_code))]
pub struct Record<'a> {
    pub time: f64,
    pub h: &'a [f64],
    pub hu: &'a [f64],
    pub hv: &'a [f64],
}

#[cfg(feature = "netcdf")]
mod io {
    use super::{Config, Gridded, Record};

    /// NetCDF is there.
    pub fn require() -> Result<(), String> {
        Ok(())
    }

    /// A netCDF error, named by its file.
    fn err(path: &str) -> impl Fn(netcdf::Error) -> String + '_ {
        move |e| format!("{path}: {e}")
    }

    /// Writes the run's records as a CF-1.8 NetCDF-4 file.
    pub fn write_run(path: &str, cfg: &Config, records: &[Record<'_>]) -> Result<(), String> {
        let e = err(path);
        let (nx, ny) = (cfg.grid.nx, cfg.grid.ny);
        let mut f = netcdf::create(path).map_err(&e)?;
        f.add_dimension("x", nx).map_err(&e)?;
        f.add_dimension("y", ny).map_err(&e)?;
        f.add_unlimited_dimension("time").map_err(&e)?;
        for (name, value) in [
            ("Conventions", "CF-1.8".to_string()),
            ("title", format!("tutti swe: {}", cfg.scenario.name())),
            (
                "source",
                "tutti swe: finite volumes, f-wave Riemann solver, first order".to_string(),
            ),
            ("scenario", cfg.scenario.name().to_string()),
        ] {
            f.add_attribute(name, value).map_err(&e)?;
        }
        f.add_attribute("cell_size_x", cfg.grid.dx).map_err(&e)?;
        f.add_attribute("cell_size_y", cfg.grid.dy).map_err(&e)?;
        let xs: Vec<f64> = (0..nx).map(|i| cfg.grid.centre(i, 0).0).collect();
        let ys: Vec<f64> = (0..ny).map(|j| cfg.grid.centre(0, j).1).collect();
        let times: Vec<f64> = records.iter().map(|r| r.time).collect();
        for (name, values, dim, long, standard, axis, units) in [
            (
                "x",
                &xs,
                "x",
                "x of the cell centres",
                "projection_x_coordinate",
                "X",
                "m",
            ),
            (
                "y",
                &ys,
                "y",
                "y of the cell centres",
                "projection_y_coordinate",
                "Y",
                "m",
            ),
            (
                "time",
                &times,
                "time",
                "time since the start of the run",
                "time",
                "T",
                "seconds since 1970-01-01 00:00:00",
            ),
        ] {
            let mut v = f.add_variable::<f64>(name, &[dim]).map_err(&e)?;
            v.put_attribute("units", units).map_err(&e)?;
            v.put_attribute("long_name", long).map_err(&e)?;
            v.put_attribute("standard_name", standard).map_err(&e)?;
            v.put_attribute("axis", axis).map_err(&e)?;
            v.put_values(values, 0..values.len()).map_err(&e)?;
        }
        let bed: Vec<f64> = (0..nx * ny)
            .map(|k| cfg.initial(k % nx, k / nx)[3])
            .collect();
        let mut b = f.add_variable::<f64>("b", &["y", "x"]).map_err(&e)?;
        b.put_attribute("units", "m").map_err(&e)?;
        b.put_attribute(
            "long_name",
            "sea floor elevation (negative below the still surface)",
        )
        .map_err(&e)?;
        b.put_values(&bed, (0..ny, 0..nx)).map_err(&e)?;
        let fields: [(&str, &str, &str, Option<&str>); 4] = [
            (
                "h",
                "m",
                "water depth",
                Some("sea_floor_depth_below_sea_surface"),
            ),
            (
                "hu",
                "m2 s-1",
                "momentum along x (depth times x velocity)",
                None,
            ),
            (
                "hv",
                "m2 s-1",
                "momentum along y (depth times y velocity)",
                None,
            ),
            ("eta", "m", "water surface elevation h + b", None),
        ];
        for (name, units, long, standard) in fields {
            let mut v = f
                .add_variable::<f64>(name, &["time", "y", "x"])
                .map_err(&e)?;
            v.put_attribute("units", units).map_err(&e)?;
            v.put_attribute("long_name", long).map_err(&e)?;
            if let Some(s) = standard {
                v.put_attribute("standard_name", s).map_err(&e)?;
            }
            for (k, r) in records.iter().enumerate() {
                let eta: Vec<f64>;
                let data: &[f64] = match name {
                    "h" => r.h,
                    "hu" => r.hu,
                    "hv" => r.hv,
                    _ => {
                        eta = r.h.iter().zip(&bed).map(|(h, b)| h + b).collect();
                        &eta
                    }
                };
                if data.len() != nx * ny {
                    return Err(format!(
                        "{path}: record {k} of `{name}` has {} values for {nx} × {ny} cells",
                        data.len()
                    ));
                }
                v.put_values(data, (k..k + 1, 0..ny, 0..nx)).map_err(&e)?;
            }
        }
        f.close().map_err(&e)
    }

    /// Reads the field `z(y, x)` and its coordinates `x` and `y`.
    pub fn read_gridded(path: &str) -> Result<Gridded, String> {
        let e = err(path);
        let f = netcdf::open(path).map_err(&e)?;
        let var = |name: &str| {
            f.variable(name).ok_or_else(|| {
                format!("{path}: no variable `{name}` (a field needs `x`, `y` and `z(y, x)`)")
            })
        };
        let coords = |name: &str| -> Result<Vec<f64>, String> {
            let v = var(name)?;
            if v.dimensions().len() != 1 {
                return Err(format!("{path}: `{name}` must have one dimension"));
            }
            v.get_values::<f64, _>(..).map_err(&e)
        };
        let (x, y) = (coords("x")?, coords("y")?);
        let z = var("z")?;
        let dims: Vec<usize> = z.dimensions().iter().map(|d| d.len()).collect();
        if dims != [y.len(), x.len()] {
            let names: Vec<String> = z.dimensions().iter().map(|d| d.name()).collect();
            return Err(format!(
                "{path}: `z` has dimensions ({}) of sizes {dims:?}; it must be z(y, x) = [{}, {}]",
                names.join(", "),
                y.len(),
                x.len()
            ));
        }
        let mut values: Vec<f64> = z.get_values::<f64, _>(..).map_err(&e)?;
        if let Some(fill) = fill_value(&z).map_err(&e)? {
            for v in values.iter_mut().filter(|v| **v == fill) {
                *v = f64::NAN;
            }
        }
        Ok(Gridded { x, y, z: values })
    }

    /// The value that marks a missing cell of `v` (its `_FillValue`, or
    /// the format's default for cells never written), as read into f64.
    fn fill_value(v: &netcdf::Variable<'_>) -> netcdf::Result<Option<f64>> {
        use netcdf::types::{FloatType, IntType, NcVariableType as T};
        Ok(match v.vartype() {
            T::Float(FloatType::F64) => v.fill_value::<f64>()?,
            T::Float(FloatType::F32) => v.fill_value::<f32>()?.map(f64::from),
            T::Int(IntType::I32) => v.fill_value::<i32>()?.map(f64::from),
            T::Int(IntType::I16) => v.fill_value::<i16>()?.map(f64::from),
            _ => None,
        })
    }

    /// Writes `g` as a field `z(y, x)` with coordinates `x`, `y` (NetCDF
    /// classic format, 32-bit floats, as the input files of the TUM SWE code).
    pub fn write_gridded(path: &str, g: &Gridded, long_name: &str) -> Result<(), String> {
        let e = err(path);
        let mut f = netcdf::create_with(path, netcdf::Options::_64BIT_OFFSET).map_err(&e)?;
        f.add_dimension("x", g.x.len()).map_err(&e)?;
        f.add_dimension("y", g.y.len()).map_err(&e)?;
        f.add_attribute("Conventions", "CF-1.8").map_err(&e)?;
        f.add_attribute("title", long_name).map_err(&e)?;
        f.add_attribute("source", "tutti swe --write-seamount")
            .map_err(&e)?;
        // A classic file is defined first, then filled.
        for name in ["x", "y"] {
            let mut v = f.add_variable::<f32>(name, &[name]).map_err(&e)?;
            v.put_attribute("units", "m").map_err(&e)?;
            v.put_attribute("axis", name.to_uppercase()).map_err(&e)?;
        }
        let mut z = f.add_variable::<f32>("z", &["y", "x"]).map_err(&e)?;
        z.put_attribute("units", "m").map_err(&e)?;
        z.put_attribute("long_name", long_name).map_err(&e)?;
        f.enddef().map_err(&e)?;
        let narrow = |v: &[f64]| v.iter().map(|&v| v as f32).collect::<Vec<f32>>();
        for (name, values) in [("x", &g.x), ("y", &g.y)] {
            let data = narrow(values);
            let mut v = f
                .variable_mut(name)
                .ok_or_else(|| format!("{path}: `{name}` vanished"))?;
            v.put_values(&data, 0..data.len()).map_err(&e)?;
        }
        let data = narrow(&g.z);
        let mut z = f
            .variable_mut("z")
            .ok_or_else(|| format!("{path}: `z` vanished"))?;
        z.put_values(&data, (0..g.y.len(), 0..g.x.len()))
            .map_err(&e)?;
        f.close().map_err(&e)
    }
}

#[cfg(not(feature = "netcdf"))]
mod io {
    use super::{Config, Gridded, Record};

    const MISSING: &str =
        "this tutti was built without NetCDF: rebuild with `--features netcdf` (needs libnetcdf, Debian: libnetcdf-dev)";

    pub fn require() -> Result<(), String> {
        Err(MISSING.into())
    }

    pub fn write_run(_: &str, _: &Config, _: &[Record<'_>]) -> Result<(), String> {
        Err(MISSING.into())
    }

    pub fn read_gridded(_: &str) -> Result<Gridded, String> {
        Err(MISSING.into())
    }

    pub fn write_gridded(_: &str, _: &Gridded, _: &str) -> Result<(), String> {
        Err(MISSING.into())
    }
}

pub use io::{read_gridded, require, write_gridded, write_run};

/// Writes the project's synthetic input into `dir` and reads it back:
/// returns the two files' names, or an error if a value did not survive the
/// round trip (to 32-bit precision).
pub fn write_seamount(dir: &str) -> Result<[String; 2], String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {dir}: {e}"))?;
    let (bathymetry, displacement) = super::input::seamount();
    let files = [
        format!("{dir}/seamount-bathymetry.nc"),
        format!("{dir}/seamount-displacement.nc"),
    ];
    for (path, field, what) in [
        (&files[0], &bathymetry, "bathymetry: a Gaussian seamount"),
        (&files[1], &displacement, "displacement: a Gaussian uplift"),
    ] {
        write_gridded(path, field, what)?;
        let back = read_gridded(path)?;
        if back != rounded(field) {
            return Err(format!(
                "{path}: the values read back differ from those written"
            ));
        }
    }
    Ok(files)
}

/// `g` with every number rounded to 32 bits, as the input files store it.
pub fn rounded(g: &Gridded) -> Gridded {
    let r = |v: &[f64]| v.iter().map(|&v| v as f32 as f64).collect();
    Gridded {
        x: r(&g.x),
        y: r(&g.y),
        z: r(&g.z),
    }
}

#[cfg(all(test, feature = "netcdf"))]
mod tests {
    use super::super::input::{self, seamount};
    use super::*;

    fn temp(name: &str) -> String {
        let dir = std::env::temp_dir().join(format!("tutti-nc-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir.to_str().unwrap().to_string()
    }

    /// The files shipped in `crates/tutti-cli/data/` are exactly what
    /// `--write-seamount` makes.
    #[test]
    fn the_shipped_input_is_the_seamount() {
        let data = concat!(env!("CARGO_MANIFEST_DIR"), "/data");
        let (b, d) = seamount();
        assert_eq!(
            read_gridded(&format!("{data}/seamount-bathymetry.nc")).unwrap(),
            rounded(&b)
        );
        assert_eq!(
            read_gridded(&format!("{data}/seamount-displacement.nc")).unwrap(),
            rounded(&d)
        );
    }

    #[test]
    fn the_seamount_round_trips() {
        let dir = temp("seamount");
        write_seamount(&dir).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_run_round_trips_through_its_file() {
        let (b, d) = seamount();
        let (grid, cells) = input::initial(&rounded(&b), Some(&rounded(&d)), 16, None).unwrap();
        let cfg = Config::from_cells(grid, cells, 8, 5, None).unwrap();
        let end = super::super::execute::sequential(&cfg).unwrap();
        let start: Vec<f64> = (0..256).map(|k| cfg.initial(k % 16, k / 16)[0]).collect();
        let zero = vec![0.0; 256];
        let records = [
            Record {
                time: 0.0,
                h: &start,
                hu: &zero,
                hv: &zero,
            },
            Record {
                time: cfg.end_time(),
                h: &end.h,
                hu: &end.hu,
                hv: &end.hv,
            },
        ];
        let dir = temp("run");
        let path = format!("{dir}/run.nc");
        write_run(&path, &cfg, &records).unwrap();
        let f = netcdf::open(&path).unwrap();
        let get = |name: &str, k: usize| -> Vec<f64> {
            f.variable(name)
                .unwrap()
                .get_values::<f64, _>((k, .., ..))
                .unwrap()
        };
        assert_eq!(get("h", 1), end.h);
        assert_eq!(get("hu", 1), end.hu);
        assert_eq!(get("hv", 0), zero);
        let times: Vec<f64> = f.variable("time").unwrap().get_values(..).unwrap();
        assert_eq!(times, [0.0, cfg.end_time()]);
        let units = f
            .variable("h")
            .unwrap()
            .attribute_value("units")
            .unwrap()
            .unwrap();
        assert_eq!(units, netcdf::AttributeValue::Str("m".into()));
        // The surface at the start is the displacement (0 far from it).
        let eta = get("eta", 0);
        assert_eq!(eta[255], 0.0);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_file_without_z_is_refused_by_name() {
        let dir = temp("bad");
        let path = format!("{dir}/bad.nc");
        let mut f = netcdf::create(&path).unwrap();
        f.add_dimension("x", 2).unwrap();
        f.add_variable::<f64>("x", &["x"]).unwrap();
        f.add_dimension("y", 2).unwrap();
        f.add_variable::<f64>("y", &["y"]).unwrap();
        f.close().unwrap();
        let e = read_gridded(&path).unwrap_err();
        assert!(e.contains("no variable `z`"), "{e}");
        assert!(read_gridded(&format!("{dir}/missing.nc")).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
