//! Pictures of results (`--plot FILE.png`), drawn with plotters.
//!
//! Two kinds, shared by every command that draws:
//!
//! * [`bars`] — a report's results side by side: one panel per metric, one bar
//!   per implementation (tutti's in blue, the peers' in other colours) at the
//!   median, with an error bar from the minimum to the maximum of the runs;
//! * [`speedup`] — speedup curves over worker (or location) counts, with the
//!   ideal line.
//!
//! Text is drawn with an embedded font (DejaVu Sans), so a picture looks the
//! same on every machine and needs no fonts installed.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Once;

use plotters::prelude::*;
use plotters::style::FontStyle;

use crate::report::{Report, Row, Scale};

/// The `--plot` option of the commands that draw a picture.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct PlotOpts {
    /// Also draw the results into this PNG file.
    #[arg(long, value_name = "FILE.png", value_parser = parse_png)]
    pub plot: Option<PathBuf>,
}

/// A `.png` path whose folder exists: checked when the command line is read,
/// not after a long run.
pub fn parse_png(s: &str) -> Result<PathBuf, String> {
    let p = PathBuf::from(s);
    if p.extension().and_then(|e| e.to_str()) != Some("png") {
        return Err(format!(
            "`{s}` does not end in .png (the pictures are PNG files)"
        ));
    }
    if let Some(dir) = p.parent().filter(|d| !d.as_os_str().is_empty()) {
        if !dir.is_dir() {
            return Err(format!("the folder `{}` does not exist", dir.display()));
        }
    }
    Ok(p)
}

/// Whether this process is the first (or only) one of its job: under `mpirun`
/// or `tutti launch` every rank may print a report, and only rank 0 draws it.
pub fn first_rank() -> bool {
    [
        "OMPI_COMM_WORLD_RANK",
        "PMI_RANK",
        "PMIX_RANK",
        "TUTTI_RANK",
    ]
    .iter()
    .filter_map(|v| std::env::var(v).ok())
    .all(|r| r.trim() == "0")
}

/// The font family every picture uses.
pub const FONT: &str = "sans-serif";

/// Registers the embedded font once.
pub fn fonts() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // Failing here means the embedded font does not parse: a broken build.
        let _ = plotters::style::register_font(FONT, FontStyle::Normal, dejavu::sans::regular());
        let _ = plotters::style::register_font(FONT, FontStyle::Bold, dejavu::sans::bold());
    });
}

/// tutti's colour, and the peers' in turn.
const TUTTI: RGBColor = RGBColor(31, 119, 180);
const PEERS: [RGBColor; 6] = [
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
];

/// The colour of implementation `name`: tutti's (any name that starts with
/// `tutti`) is always the same blue; each other family gets its own colour,
/// the same for all its variants (`rayon_w1` and `rayon_w2` are both rayon).
fn colour(name: &str, peers: &mut BTreeMap<String, RGBColor>) -> RGBColor {
    if name.starts_with("tutti") {
        return TUTTI;
    }
    let family = name.split(['_', ' ', ',']).next().unwrap_or(name);
    let n = peers.len();
    *peers
        .entry(family.to_string())
        .or_insert(PEERS[n % PEERS.len()])
}

/// Panels at most (a report with more metrics draws the first ones).
const MAX_PANELS: usize = 24;
/// One panel's size in pixels.
const PANEL: (u32, u32) = (520, 360);

fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

/// Draws `report`'s results into `path`: one panel per metric (in the order
/// the command measured them), one bar per implementation.
pub fn bars(report: &Report, path: &Path) -> Result<(), String> {
    fonts();
    let mut groups: Vec<(String, Vec<&Row>)> = Vec::new();
    for row in report.results() {
        let key = format!("{} ({})", row.metric, row.unit);
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, rows)) => rows.push(row),
            None => groups.push((key, vec![row])),
        }
    }
    if groups.is_empty() {
        return Err(format!("{} has no results to draw", report.name()));
    }
    groups.truncate(MAX_PANELS);
    let cols = groups.len().min(3);
    let rows = groups.len().div_ceil(cols);
    let size = (PANEL.0 * cols as u32, PANEL.1 * rows as u32 + 50);
    let root = BitMapBackend::new(path, size).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let title = format!(
        "tutti {} — median of the runs, bars from min to max",
        report.name()
    );
    let root = root
        .titled(&title, (FONT, 24).into_font().style(FontStyle::Bold))
        .map_err(err)?;
    let mut peers = BTreeMap::new();
    for (area, (_, rows)) in root.split_evenly((rows, cols)).iter().zip(&groups) {
        panel(area, rows, &mut peers)?;
    }
    root.present()
        .map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// One metric: a bar per implementation at the median, an error bar from the
/// minimum to the maximum.
fn panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    rows: &[&Row],
    peers: &mut BTreeMap<String, RGBColor>,
) -> Result<(), String>
where
    DB::ErrorType: 'static,
{
    let top = rows
        .iter()
        .map(|r| r.max.max(r.value))
        .fold(0.0f64, f64::max);
    let scale = Scale::for_value(top, &rows[0].unit);
    let y_max = if top.is_finite() && top > 0.0 {
        top * scale.factor * 1.15
    } else {
        1.0
    };
    let n = rows.len();
    // Names under their bars, cut to the room a bar has (about 7 px a letter).
    let (label_px, room) = if n > 6 { (11, 6.0) } else { (13, 7.5) };
    let fits = ((PANEL.0 as f64 - 80.0) / n as f64 / room).max(4.0) as usize;
    let names: Vec<String> = rows
        .iter()
        .map(|r| shorten(&r.implementation, fits))
        .collect();
    let mut chart = ChartBuilder::on(area)
        .caption(&rows[0].metric, (FONT, 17))
        .margin(10)
        .x_label_area_size(30)
        .y_label_area_size(62)
        .build_cartesian_2d(-0.5f64..(n as f64 - 0.5), 0.0..y_max)
        .map_err(err)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .light_line_style(WHITE)
        .bold_line_style(BLACK.mix(0.12))
        .x_labels(n * 2 + 1)
        .x_label_formatter(&|x| {
            let i = x.round();
            if (x - i).abs() < 1e-6 && i >= 0.0 && (i as usize) < n {
                names[i as usize].clone()
            } else {
                String::new()
            }
        })
        .x_label_style((FONT, label_px))
        .y_desc(&scale.unit)
        .y_label_style((FONT, 13))
        .axis_desc_style((FONT, 14))
        .draw()
        .map_err(err)?;
    for (i, r) in rows.iter().enumerate() {
        let c = colour(&r.implementation, peers);
        let x = i as f64;
        let v = finite(r.value) * scale.factor;
        chart
            .draw_series(std::iter::once(Rectangle::new(
                [(x - 0.32, 0.0), (x + 0.32, v)],
                c.filled(),
            )))
            .map_err(err)?;
        if r.samples.len() > 1 {
            // The spread of the runs: a line from min to max with short caps.
            let (lo, hi) = (finite(r.min) * scale.factor, finite(r.max) * scale.factor);
            let style = BLACK.stroke_width(2);
            chart
                .draw_series([
                    PathElement::new([(x, lo), (x, hi)], style),
                    PathElement::new([(x - 0.08, lo), (x + 0.08, lo)], style),
                    PathElement::new([(x - 0.08, hi), (x + 0.08, hi)], style),
                ])
                .map_err(err)?;
        }
    }
    Ok(())
}

fn finite(v: f64) -> f64 {
    if v.is_finite() {
        v
    } else {
        0.0
    }
}

/// `s` cut to `max` characters, with an ellipsis.
fn shorten(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(max - 1).collect();
        t.push('…');
        t
    }
}

/// One speedup curve: its name and `(count, speedup)` points.
pub type Curve = (String, Vec<(f64, f64)>);

/// Draws speedup curves over `x_desc` (workers, locations) into `path`, with
/// the ideal (linear) speedup as a dashed line.
pub fn speedup(path: &Path, title: &str, x_desc: &str, curves: &[Curve]) -> Result<(), String> {
    speedup_on(path, title, x_desc, None, curves)
}

/// [`speedup`] for counts that may exceed the cores the run had (locations
/// sharing `cores` workers): the ideal line is `min(count, cores)`.
pub fn speedup_on(
    path: &Path,
    title: &str,
    x_desc: &str,
    cores: Option<usize>,
    curves: &[Curve],
) -> Result<(), String> {
    fonts();
    let x_max = curves
        .iter()
        .flat_map(|(_, pts)| pts.iter().map(|p| p.0))
        .fold(1.0f64, f64::max);
    let y_max = curves
        .iter()
        .flat_map(|(_, pts)| pts.iter().map(|p| p.1))
        .filter(|v| v.is_finite())
        .fold(x_max.min(cap(cores)), f64::max)
        * 1.1;
    let root = BitMapBackend::new(path, (900, 620)).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, (FONT, 22).into_font().style(FontStyle::Bold))
        .margin(16)
        .x_label_area_size(48)
        .y_label_area_size(60)
        .build_cartesian_2d(0.0..(x_max + 0.5), 0.0..y_max)
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc(x_desc)
        .y_desc("speedup")
        .x_labels(2 * (x_max as usize + 1) + 1)
        .x_label_formatter(&|x| {
            // Counts are whole: no label between them.
            if (x - x.round()).abs() < 1e-6 {
                format!("{x:.0}")
            } else {
                String::new()
            }
        })
        .label_style((FONT, 14))
        .axis_desc_style((FONT, 16))
        .draw()
        .map_err(err)?;
    let c = cap(cores);
    let ideal = match cores {
        Some(n) => format!("ideal ({n} cores)"),
        None => "ideal".to_string(),
    };
    chart
        .draw_series(DashedLineSeries::new(
            [
                (0.0, 0.0),
                (x_max.min(c), x_max.min(c)),
                (x_max, x_max.min(c)),
            ],
            8,
            6,
            BLACK.mix(0.6).stroke_width(1),
        ))
        .map_err(err)?
        .label(ideal)
        .legend(|(x, y)| PathElement::new([(x, y), (x + 20, y)], BLACK.mix(0.6)));
    let mut others = 0;
    for (name, pts) in curves {
        let c = if name.starts_with("tutti") {
            // Several tutti curves (one per block size): shades of its blue.
            let k = curves
                .iter()
                .take_while(|(n, _)| n != name)
                .filter(|(n, _)| n.starts_with("tutti"))
                .count() as u8;
            RGBColor(
                31u8.saturating_add(k * 60),
                119u8.saturating_add(k * 40),
                180,
            )
        } else {
            others += 1;
            PEERS[(others - 1) % PEERS.len()]
        };
        let style = c.stroke_width(3);
        chart
            .draw_series(LineSeries::new(pts.iter().copied(), style))
            .map_err(err)?
            .label(name.as_str())
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 20, y)], c.stroke_width(3)));
        chart
            .draw_series(pts.iter().map(|&p| Circle::new(p, 5, c.filled())))
            .map_err(err)?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .label_font((FONT, 15))
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK.mix(0.3))
        .draw()
        .map_err(err)?;
    root.present()
        .map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// The speedup no count can pass: the cores, or none.
fn cap(cores: Option<usize>) -> f64 {
    cores.map_or(f64::INFINITY, |n| n as f64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::Stats;

    fn tmp(name: &str) -> PathBuf {
        std::env::temp_dir().join(format!("tutti-plot-{}-{name}.png", std::process::id()))
    }

    #[test]
    fn a_report_draws_one_panel_per_metric() {
        let mut r = Report::new("test");
        r.result("tutti", "time", Stats::of(&[1.0, 2.0, 3.0]).unwrap(), "ms");
        r.result("rayon", "time", Stats::of(&[2.0, 2.5, 4.0]).unwrap(), "ms");
        r.count("tutti", "deadlocks", 1, "count");
        let p = tmp("bars");
        bars(&r, &p).unwrap();
        let png = std::fs::read(&p).unwrap();
        assert_eq!(&png[1..4], b"PNG");
        assert!(png.len() > 1000);
        let _ = std::fs::remove_file(&p);
    }

    #[test]
    fn an_empty_report_is_an_error_not_an_empty_picture() {
        assert!(bars(&Report::new("empty"), &tmp("empty")).is_err());
    }

    #[test]
    fn speedup_curves_draw() {
        let p = tmp("speedup");
        let curves = vec![
            ("tutti".to_string(), vec![(1.0, 1.0), (2.0, 1.9)]),
            ("rayon".to_string(), vec![(2.0, 1.8)]),
        ];
        speedup(&p, "test", "workers", &curves).unwrap();
        assert!(std::fs::metadata(&p).unwrap().len() > 1000);
        let _ = std::fs::remove_file(&p);
    }

    #[test]
    fn only_png_files_in_existing_folders() {
        assert!(parse_png("out.png").is_ok());
        assert!(parse_png("out.svg").is_err());
        assert!(parse_png("/no/such/folder/out.png").is_err());
    }
}
