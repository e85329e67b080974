//! Pictures of a run: a PNG of the water surface at each `--snapshots` time
//! and an animated GIF of the whole run (`--animation`).
//!
//! Every picture of a run uses one colour range, the lowest and highest
//! surface over all its frames (the start included), so colours compare
//! across frames; the colour map is viridis (perceptually uniform, readable
//! in grey and by colour-blind readers); each picture carries its scenario,
//! its simulated time and a colour bar in metres.

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::colors::colormaps::ViridisRGB;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::Config;
use crate::plot::{fonts, FONT};

/// One picture: the simulated time and the height of every cell (row-major).
pub struct Frame<'a> {
    pub time: f64,
    pub h: &'a [f64],
}

/// Width of the map's longer side (px).
const MAP: usize = 512;
/// Room for the title above the map and the colour bar beside it (px).
const TOP: u32 = 44;
const RIGHT: u32 = 130;
const MARGIN: u32 = 12;

/// The surface elevation `h + b` (m) of each cell of `h`.
fn surface(cfg: &Config, h: &[f64]) -> Vec<f64> {
    let nx = cfg.grid.nx;
    h.iter()
        .enumerate()
        .map(|(k, v)| v + cfg.initial(k % nx, k / nx)[3])
        .collect()
}

/// The one colour range of a run: the lowest and highest surface over its
/// frames (a flat surface gets a range of ±0.5 m around it).
pub fn range(cfg: &Config, frames: &[Frame<'_>]) -> (f64, f64) {
    let (lo, hi) = frames
        .iter()
        .flat_map(|f| surface(cfg, f.h))
        .filter(|v| v.is_finite())
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
            (a.min(v), b.max(v))
        });
    if !lo.is_finite() {
        (0.0, 1.0)
    } else if hi - lo < 1e-9 {
        (lo - 0.5, hi + 0.5)
    } else {
        (lo, hi)
    }
}

/// The picture's size: the map (cells scaled to about [`MAP`] px on the
/// longer side), the title and the colour bar.
fn size(cfg: &Config) -> (u32, u32, f64) {
    let (nx, ny) = (cfg.grid.nx, cfg.grid.ny);
    let px_per_cell = MAP as f64 / nx.max(ny) as f64;
    let w = (nx as f64 * px_per_cell).round().max(1.0) as u32;
    let h = (ny as f64 * px_per_cell).round().max(1.0) as u32;
    (w, h, px_per_cell)
}

/// Writes one PNG per frame into `dir`; returns the file names.
pub fn write_pngs(
    dir: &str,
    cfg: &Config,
    frames: &[Frame<'_>],
    range: (f64, f64),
) -> Result<Vec<String>, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {dir}: {e}"))?;
    fonts();
    let (w, h, _) = size(cfg);
    let mut files = Vec::new();
    for f in frames {
        let path = format!("{dir}/{}-t{:.2}.png", cfg.scenario.name(), f.time);
        let root = BitMapBackend::new(&path, (w + RIGHT + 2 * MARGIN, h + TOP + MARGIN))
            .into_drawing_area();
        draw(&root, cfg, f, range).map_err(|e| format!("cannot draw {path}: {e}"))?;
        root.present()
            .map_err(|e| format!("cannot write {path}: {e}"))?;
        drop(root);
        files.push(path);
    }
    Ok(files)
}

/// Writes the frames as one animated GIF, `delay_ms` apart, looping.
pub fn write_gif(
    path: &str,
    cfg: &Config,
    frames: &[Frame<'_>],
    range: (f64, f64),
    delay_ms: u32,
) -> Result<(), String> {
    create_parent(path)?;
    fonts();
    let (w, h, _) = size(cfg);
    let root = BitMapBackend::gif(path, (w + RIGHT + 2 * MARGIN, h + TOP + MARGIN), delay_ms)
        .map_err(|e| format!("cannot create {path}: {e}"))?
        .into_drawing_area();
    for f in frames {
        draw(&root, cfg, f, range).map_err(|e| format!("cannot draw {path}: {e}"))?;
        root.present()
            .map_err(|e| format!("cannot write {path}: {e}"))?;
    }
    Ok(())
}

/// Creates the folder `path` is to be written into, if it names one.
pub fn create_parent(path: &str) -> Result<(), String> {
    match std::path::Path::new(path).parent() {
        Some(dir) if !dir.as_os_str().is_empty() => std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display())),
        _ => Ok(()),
    }
}

/// Draws one frame: title and time, the map, the colour bar.
fn draw<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    cfg: &Config,
    f: &Frame<'_>,
    (lo, hi): (f64, f64),
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    root.fill(&WHITE)?;
    let (w, h, ppc) = size(cfg);
    let (nx, ny) = (cfg.grid.nx, cfg.grid.ny);
    let title = format!(
        "{}   {} × {} cells   t = {:.2} s",
        cfg.scenario.name(),
        nx,
        ny,
        f.time
    );
    root.draw(&Text::new(
        title,
        (MARGIN as i32, 12),
        (FONT, 20).into_font().color(&BLACK),
    ))?;
    // The map: each pixel shows the cell under it (y grows upwards).
    let eta = surface(cfg, f.h);
    let span = hi - lo;
    let (x0, y0) = (MARGIN as i32, TOP as i32);
    for py in 0..h {
        let j = ny - 1 - ((py as f64 + 0.5) / ppc).floor().min((ny - 1) as f64) as usize;
        for px in 0..w {
            let i = ((px as f64 + 0.5) / ppc).floor().min((nx - 1) as f64) as usize;
            let v = eta[j * nx + i];
            let c = if v.is_finite() {
                ViridisRGB.get_color(((v - lo) / span).clamp(0.0, 1.0) as f32)
            } else {
                RED
            };
            root.draw_pixel((x0 + px as i32, y0 + py as i32), &c)?;
        }
    }
    root.draw(&Rectangle::new(
        [(x0 - 1, y0 - 1), (x0 + w as i32, y0 + h as i32)],
        BLACK.stroke_width(1),
    ))?;
    // The colour bar: lowest at the bottom, five labelled ticks.
    let bx = x0 + w as i32 + 24;
    let bar_w = 18;
    for py in 0..h {
        let v = 1.0 - py as f64 / (h.max(2) - 1) as f64;
        let c = ViridisRGB.get_color(v as f32);
        root.draw(&PathElement::new(
            [(bx, y0 + py as i32), (bx + bar_w, y0 + py as i32)],
            c,
        ))?;
    }
    root.draw(&Rectangle::new(
        [(bx - 1, y0 - 1), (bx + bar_w, y0 + h as i32)],
        BLACK.stroke_width(1),
    ))?;
    let label = (FONT, 15)
        .into_font()
        .color(&BLACK)
        .pos(Pos::new(HPos::Left, VPos::Center));
    let (values, decimals) = ticks(lo, hi);
    for v in values {
        let s = (v - lo) / span;
        let y = y0 + ((1.0 - s) * (h.max(2) - 1) as f64).round() as i32;
        root.draw(&PathElement::new(
            [(bx + bar_w, y), (bx + bar_w + 5, y)],
            BLACK,
        ))?;
        root.draw(&Text::new(
            format!("{v:.decimals$}"),
            (bx + bar_w + 8, y),
            label.clone(),
        ))?;
    }
    root.draw(&Text::new(
        "h + b (m)",
        (bx - 6, TOP as i32 - 20),
        (FONT, 15).into_font().color(&BLACK),
    ))?;
    Ok(())
}

/// Round tick values inside `[lo, hi]` (steps of 1, 2, 2.5 or 5 times a
/// power of ten, four to ten of them) and the decimals their labels need.
fn ticks(lo: f64, hi: f64) -> (Vec<f64>, usize) {
    let raw = (hi - lo) / 5.0;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|&s| s >= raw)
        .unwrap_or(10.0 * mag);
    let mut decimals = (-step.log10().floor()).max(0.0) as usize;
    if (step / 10f64.powi(-(decimals as i32)) - 2.5).abs() < 1e-9 {
        decimals += 1;
    }
    let first = (lo / step - 1e-9).ceil() as i64;
    let last = (hi / step + 1e-9).floor() as i64;
    ((first..=last).map(|k| k as f64 * step).collect(), decimals)
}

#[cfg(test)]
mod tests {
    use super::super::Scenario;
    use super::*;

    #[test]
    fn one_range_covers_every_frame_and_a_flat_one_is_widened() {
        let cfg = Config::new(4, 4, 4, 1, None, Scenario::RadialDamBreak).unwrap();
        let a = vec![10.0; 16];
        let mut b = vec![10.0; 16];
        b[5] = 12.5;
        b[6] = 9.0;
        let frames = [Frame { time: 0.0, h: &a }, Frame { time: 1.0, h: &b }];
        assert_eq!(range(&cfg, &frames), (9.0, 12.5));
        assert_eq!(range(&cfg, &frames[..1]), (9.5, 10.5));
    }

    #[test]
    fn ticks_are_round_and_inside_the_range() {
        assert_eq!(ticks(6.3, 15.0), (vec![8.0, 10.0, 12.0, 14.0], 0));
        assert_eq!(ticks(-0.5, 0.5).0, vec![-0.4, -0.2, 0.0, 0.2, 0.4]);
        assert_eq!(ticks(-0.5, 0.5).1, 1);
        let (t, d) = ticks(9.99, 10.01);
        assert!(t.len() >= 4 && d == 3, "{t:?} {d}");
    }

    #[test]
    fn pictures_and_an_animation_are_written() {
        let cfg = Config::new(16, 16, 8, 1, None, Scenario::RadialDamBreak).unwrap();
        let h: Vec<f64> = (0..256).map(|k| 10.0 + (k % 7) as f64).collect();
        let frames = [Frame { time: 0.0, h: &h }, Frame { time: 2.5, h: &h }];
        let dir = std::env::temp_dir().join(format!("tutti-swe-pics-{}", std::process::id()));
        let dir = dir.to_str().unwrap();
        let files = write_pngs(dir, &cfg, &frames, range(&cfg, &frames)).unwrap();
        assert_eq!(files.len(), 2);
        assert!(files[1].ends_with("radial-dam-break-t2.50.png"));
        let gif = format!("{dir}/run.gif");
        write_gif(&gif, &cfg, &frames, range(&cfg, &frames), 100).unwrap();
        let bytes = std::fs::read(&gif).unwrap();
        assert!(bytes.starts_with(b"GIF89a"));
        std::fs::remove_dir_all(dir).unwrap();
    }
}
