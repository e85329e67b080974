//! What a run writes besides its report: the snapshots' pictures and the
//! animation.

use super::execute::Outcome;
use super::snapshot::{self, Frame};
use super::{Config, SweArgs};
use crate::report::Report;

/// Writes the pictures `a` asks for from the captures of `out` (location 0
/// of rank 0 only: the others have none), naming the files in the report.
pub fn write(a: &SweArgs, cfg: &Config, out: &Outcome, report: &mut Report) -> Result<(), String> {
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
