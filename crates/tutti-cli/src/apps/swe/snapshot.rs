//! `--snapshots`: PNG pictures of the water height, drawn with plotters.

use plotters::prelude::*;

use super::Config;

/// Writes one PNG per snapshot into `dir`; returns the file names.
pub fn write_all(
    dir: &str,
    cfg: &Config,
    times: &[f64],
    snaps: &[Vec<f64>],
) -> Result<Vec<String>, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {dir}: {e}"))?;
    let mut files = Vec::new();
    for (k, h) in snaps.iter().enumerate() {
        let t = times.get(k).copied().unwrap_or(0.0);
        let path = format!("{dir}/{}-t{t:.2}.png", cfg.scenario.name());
        draw(&path, cfg, h).map_err(|e| format!("cannot draw {path}: {e}"))?;
        files.push(path);
    }
    Ok(files)
}

/// A height map: blue (low) to white to red (high), scaled to the field's
/// range (plotters is built without fonts, so the picture has no text; the
/// file name says the scenario and time).
fn draw(path: &str, cfg: &Config, h: &[f64]) -> Result<(), Box<dyn std::error::Error>> {
    let (nx, ny) = (cfg.grid.nx, cfg.grid.ny);
    let scale = (512 / nx.max(ny)).max(1);
    let (w, hgt) = ((nx * scale) as u32, (ny * scale) as u32);
    let root = BitMapBackend::new(path, (w, hgt)).into_drawing_area();
    root.fill(&WHITE)?;
    let (lo, hi) = h
        .iter()
        .filter(|v| v.is_finite())
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &v| {
            (a.min(v), b.max(v))
        });
    let span = if hi > lo { hi - lo } else { 1.0 };
    for j in 0..ny {
        for i in 0..nx {
            let v = (h[j * nx + i] - lo) / span;
            let c = if v.is_finite() { color(v) } else { BLACK };
            let (x0, y0) = ((i * scale) as i32, ((ny - 1 - j) * scale) as i32);
            root.draw(&Rectangle::new(
                [(x0, y0), (x0 + scale as i32, y0 + scale as i32)],
                c.filled(),
            ))?;
        }
    }
    root.present()?;
    Ok(())
}

fn color(v: f64) -> RGBColor {
    let v = v.clamp(0.0, 1.0);
    if v < 0.5 {
        let s = v * 2.0;
        RGBColor((255.0 * s) as u8, (255.0 * s) as u8, 255)
    } else {
        let s = (1.0 - v) * 2.0;
        RGBColor(255, (255.0 * s) as u8, (255.0 * s) as u8)
    }
}
