//! What a run writes besides its report: the snapshots' pictures, the
//! animation and the NetCDF file.

use super::execute::Outcome;
use super::netcdf::{self, Record};
use super::snapshot::{self, Frame};
use super::{Config, SweArgs};
use crate::report::Report;

/// Writes the pictures and the file `a` asks for from the captures of `out`
/// (on location 0 of rank 0: the others have nothing to write), naming the
/// files in the report.
pub fn write(a: &SweArgs, cfg: &Config, out: &Outcome, report: &mut Report) -> Result<(), String> {
    if let (Some(path), Some(end)) = (&a.netcdf, &out.field) {
        let nx = cfg.grid.nx;
        let cells = cfg.cells() as usize;
        let start: [Vec<f64>; 3] =
            std::array::from_fn(|q| (0..cells).map(|k| cfg.initial(k % nx, k / nx)[q]).collect());
        let mut records = vec![Record {
            time: 0.0,
            h: &start[0],
            hu: &start[1],
            hv: &start[2],
        }];
        for (k, snap) in out.snapshots.iter().enumerate().take(a.snapshots.len()) {
            records.push(Record {
                time: cfg.snapshots[k].step as f64 * cfg.dt,
                h: &snap.h,
                hu: &snap.hu,
                hv: &snap.hv,
            });
        }
        if records.iter().all(|r| r.time < cfg.end_time()) {
            records.push(Record {
                time: cfg.end_time(),
                h: &end.h,
                hu: &end.hu,
                hv: &end.hv,
            });
        }
        records.sort_by(|x, y| x.time.total_cmp(&y.time));
        records.dedup_by(|x, y| x.time == y.time);
        snapshot::create_parent(path)?;
        netcdf::write_run(path, cfg, &records)?;
        report.param("netcdf_file", path);
        report.param(
            "netcdf_times",
            records.iter().map(|r| r.time).collect::<Vec<_>>(),
        );
    }
    if out.snapshots.is_empty() {
        return Ok(());
    }
    let time = |k: usize| cfg.snapshots[k].step as f64 * cfg.dt;
    let pictures: Vec<Frame<'_>> = (0..a.snapshots.len())
        .map(|k| Frame {
            time: time(k),
            h: &out.snapshots[k].h,
        })
        .collect();
    let start: Vec<f64> = (0..cfg.cells() as usize)
        .map(|k| cfg.initial(k % cfg.grid.nx, k / cfg.grid.nx)[0])
        .collect();
    let mut movie = Vec::new();
    if a.animation.is_some() {
        movie.push(Frame {
            time: 0.0,
            h: &start,
        });
        movie.extend((a.snapshots.len()..cfg.snapshots.len()).map(|k| Frame {
            time: time(k),
            h: &out.snapshots[k].h,
        }));
    }
    // One colour range for every picture of the run, the start included.
    let mut all: Vec<Frame<'_>> = vec![Frame {
        time: 0.0,
        h: &start,
    }];
    all.extend(pictures.iter().chain(&movie).map(|f| Frame {
        time: f.time,
        h: f.h,
    }));
    let range = snapshot::range(cfg, &all);
    report.param("picture_range_m", [range.0, range.1]);
    if !pictures.is_empty() {
        let files = snapshot::write_pngs(&a.out_dir, cfg, &pictures, range)?;
        report.param("snapshot_files", files);
    }
    if let Some(path) = &a.animation {
        // About four seconds for the whole run, whatever the frame count.
        let delay = (4000 / movie.len().max(1) as u32).clamp(40, 500);
        snapshot::write_gif(path, cfg, &movie, range, delay)?;
        report.param("animation_file", path);
    }
    Ok(())
}
