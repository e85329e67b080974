//! The one output shape every command shares.
//!
//! A [`Report`] collects a command's parameters, its measured results, the
//! ratios that compare tutti with its peers, and whether the command's own
//! verification passed. It prints either as a readable table or, with
//! `--json`, as exactly one JSON object:
//!
//! ```text
//! {"bench": …, "params": {…},
//!  "results": [{"impl": …, "metric": …, "value": …, "unit": …}, …],
//!  "ratios": {"time_tutti_over_rayon": …}, "verified": bool or null}
//! ```
//!
//! `verified` is *unknown* (`null`, "unknown" in the table) until the command checks
//! something: a run that never verifies its result says so instead of claiming a pass.
//!
//! A result's `value` is the median of its runs; the table also shows the
//! minimum and maximum, which the JSON leaves out to keep its shape fixed.
//! Ratio names say which way they divide: times are always ours ÷ peer
//! (`time_tutti_over_rayon`), throughputs say so (`throughput_tutti_over_rayon`).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;
use serde_json::Value;

/// Median, minimum and maximum of a set of samples.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Stats {
    /// The median (mean of the two middle samples for an even count).
    pub median: f64,
    /// The smallest sample.
    pub min: f64,
    /// The largest sample.
    pub max: f64,
}

impl Stats {
    /// Summarizes `samples`; `None` when there are none. NaN samples sort
    /// last, so a stray NaN cannot make the median panic.
    pub fn of(samples: &[f64]) -> Option<Stats> {
        let mut sorted = samples.to_vec();
        sorted.sort_by(f64::total_cmp);
        Some(Stats {
            median: median_of_sorted(&sorted)?,
            min: *sorted.first()?,
            max: *sorted.last()?,
        })
    }

    /// A single value, for results that are measured once.
    pub fn single(value: f64) -> Stats {
        Stats {
            median: value,
            min: value,
            max: value,
        }
    }
}

/// The median of `samples` (mean of the two middle values for an even
/// count); `None` for an empty slice.
pub fn median(samples: &[f64]) -> Option<f64> {
    let mut sorted = samples.to_vec();
    sorted.sort_by(f64::total_cmp);
    median_of_sorted(&sorted)
}

fn median_of_sorted(sorted: &[f64]) -> Option<f64> {
    let n = sorted.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(sorted[n / 2]),
        _ => Some((sorted[n / 2 - 1] + sorted[n / 2]) / 2.0),
    }
}

/// One measured quantity of one implementation.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    /// Which implementation: `tutti`, `rayon`, `tokio`, `std`, `seq`, ….
    #[serde(rename = "impl")]
    pub implementation: String,
    /// What was measured, e.g. `time` or `throughput`.
    pub metric: String,
    /// The median over the runs.
    pub value: f64,
    /// The unit of `value`, e.g. `ms` or `elements/s`.
    pub unit: String,
    /// Smallest run (table only).
    #[serde(skip)]
    pub min: f64,
    /// Largest run (table only).
    #[serde(skip)]
    pub max: f64,
}

/// The report of one command run.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    bench: String,
    params: serde_json::Map<String, Value>,
    results: Vec<Row>,
    ratios: BTreeMap<String, f64>,
    /// `None` until the first [`Report::verify`]: nothing was checked.
    verified: Option<bool>,
}

impl Report {
    /// An empty report for the command `bench`; `verified` starts unknown, the first
    /// [`Report::verify`] makes it known, and later ones can only lower it.
    pub fn new(bench: &str) -> Report {
        Report {
            bench: bench.to_string(),
            params: serde_json::Map::new(),
            results: Vec::new(),
            ratios: BTreeMap::new(),
            verified: None,
        }
    }

    /// Records a parameter of the run.
    pub fn param(&mut self, name: &str, value: impl Serialize) -> &mut Self {
        let value = serde_json::to_value(value).unwrap_or(Value::Null);
        self.params.insert(name.to_string(), value);
        self
    }

    /// Records a result: `stats.median` becomes the reported value.
    pub fn result(&mut self, implementation: &str, metric: &str, stats: Stats, unit: &str) {
        self.results.push(Row {
            implementation: implementation.to_string(),
            metric: metric.to_string(),
            value: stats.median,
            unit: unit.to_string(),
            min: stats.min,
            max: stats.max,
        });
    }

    /// Records a ratio; the name must say which way it divides.
    pub fn ratio(&mut self, name: &str, value: f64) {
        self.ratios.insert(name.to_string(), value);
    }

    /// Folds one verification outcome into the report.
    pub fn verify(&mut self, ok: bool) {
        self.verified = Some(self.verified.unwrap_or(true) && ok);
    }

    /// Whether every verification passed: `None` if nothing was verified.
    pub fn verified(&self) -> Option<bool> {
        self.verified
    }

    /// The report as one JSON value.
    pub fn to_json(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }

    /// The readable table.
    pub fn to_table(&self) -> String {
        let mut out = String::new();
        let params: Vec<String> = self
            .params
            .iter()
            .map(|(k, v)| format!("{k}={}", compact(v)))
            .collect();
        if params.is_empty() {
            let _ = writeln!(out, "{}", self.bench);
        } else {
            let _ = writeln!(out, "{}  ({})", self.bench, params.join(", "));
        }

        let header = ["impl", "metric", "median", "min", "max", "unit"];
        let rows: Vec<[String; 6]> = self
            .results
            .iter()
            .map(|r| {
                [
                    r.implementation.clone(),
                    r.metric.clone(),
                    number(r.value),
                    number(r.min),
                    number(r.max),
                    r.unit.clone(),
                ]
            })
            .collect();
        let mut width = header.map(str::len);
        for row in &rows {
            for (w, cell) in width.iter_mut().zip(row) {
                *w = (*w).max(cell.chars().count());
            }
        }
        let line = |cells: [&str; 6]| {
            let mut s = String::new();
            for (i, (cell, w)) in cells.iter().zip(width).enumerate() {
                // Names align left, numbers right, the unit last.
                if i < 2 || i == 5 {
                    let _ = write!(s, "{cell:<w$}  ");
                } else {
                    let _ = write!(s, "{cell:>w$}  ");
                }
            }
            s.trim_end().to_string()
        };
        // A command without measurements (a demo) prints no empty table.
        if !rows.is_empty() {
            let _ = writeln!(out, "{}", line(header));
            let total: usize = width.iter().sum::<usize>() + 2 * (width.len() - 1);
            let _ = writeln!(out, "{}", "-".repeat(total));
        }
        for row in &rows {
            let _ = writeln!(out, "{}", line(row.each_ref().map(String::as_str)));
        }
        if !self.ratios.is_empty() {
            let _ = writeln!(out, "ratios:");
            let w = self.ratios.keys().map(String::len).max().unwrap_or(0);
            for (name, value) in &self.ratios {
                let _ = writeln!(out, "  {name:<w$}  {}", number(*value));
            }
        }
        let _ = writeln!(
            out,
            "verified: {}",
            match self.verified {
                Some(true) => "yes",
                Some(false) => "NO",
                None => "unknown (nothing was checked)",
            }
        );
        out
    }

    /// Prints the report to stdout: the table, or one JSON object.
    pub fn print(&self, json: bool) {
        if json {
            println!("{}", self.to_json());
        } else {
            print!("{}", self.to_table());
        }
    }
}

/// A number with about four significant digits, without exponent noise
/// for the usual magnitudes.
fn number(v: f64) -> String {
    if !v.is_finite() {
        return format!("{v}");
    }
    let a = v.abs();
    if a == 0.0 {
        "0".to_string()
    } else if a >= 1e9 {
        format!("{v:.3e}")
    } else if a >= 1000.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.2}")
    } else if a >= 0.01 {
        format!("{v:.4}")
    } else {
        format!("{v:.3e}")
    }
}

fn compact(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_and_even_counts() {
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[3.0]), Some(3.0));
        assert_eq!(median(&[5.0, 1.0, 3.0]), Some(3.0));
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
    }

    #[test]
    fn median_tolerates_nan() {
        assert_eq!(median(&[1.0, f64::NAN, 2.0]), Some(2.0));
    }

    #[test]
    fn stats_min_max() {
        let s = Stats::of(&[2.0, 9.0, 1.0, 5.0, 3.0]).unwrap();
        assert_eq!(
            s,
            Stats {
                median: 3.0,
                min: 1.0,
                max: 9.0
            }
        );
        assert!(Stats::of(&[]).is_none());
    }

    #[test]
    fn json_has_the_fixed_shape() {
        let mut r = Report::new("sort");
        r.param("n", 10).param("dist", "uniform");
        r.result("tutti", "time", Stats::of(&[1.0, 2.0, 3.0]).unwrap(), "ms");
        r.result("rayon", "time", Stats::single(4.0), "ms");
        r.ratio("time_tutti_over_rayon", 0.5);
        r.verify(true);
        let v = r.to_json();
        let obj = v.as_object().unwrap();
        let mut keys: Vec<&str> = obj.keys().map(String::as_str).collect();
        keys.sort_unstable();
        assert_eq!(keys, ["bench", "params", "ratios", "results", "verified"]);
        assert_eq!(v["bench"], "sort");
        assert_eq!(v["params"]["n"], 10);
        assert_eq!(v["params"]["dist"], "uniform");
        let results = v["results"].as_array().unwrap();
        assert_eq!(results.len(), 2);
        let mut row_keys: Vec<&str> = results[0]
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        row_keys.sort_unstable();
        assert_eq!(row_keys, ["impl", "metric", "unit", "value"]);
        assert_eq!(results[0]["impl"], "tutti");
        assert_eq!(results[0]["value"], 2.0);
        assert_eq!(v["ratios"]["time_tutti_over_rayon"], 0.5);
        assert_eq!(v["verified"], true);
        // One object on one line.
        assert!(!v.to_string().contains('\n'));
    }

    #[test]
    fn a_failed_check_sticks() {
        let mut r = Report::new("x");
        r.verify(false);
        r.verify(true);
        assert_eq!(r.verified(), Some(false));
        assert_eq!(r.to_json()["verified"], false);
    }

    #[test]
    fn a_report_without_results_has_no_table() {
        let mut r = Report::new("demo");
        r.verify(true);
        assert_eq!(r.to_table(), "demo\nverified: yes\n");
    }

    #[test]
    fn verified_starts_unknown() {
        let mut r = Report::new("x");
        r.result("tutti", "time", Stats::single(1.0), "ms");
        assert_eq!(r.verified(), None);
        assert_eq!(r.to_json()["verified"], Value::Null);
        assert!(r.to_table().contains("verified: unknown"));
        r.verify(true);
        assert_eq!(r.verified(), Some(true));
        assert_eq!(r.to_json()["verified"], true);
    }

    #[test]
    fn table_lists_rows_and_ratios() {
        let mut r = Report::new("fib");
        r.param("n", 32);
        r.result("tutti", "time", Stats::single(12.5), "ms");
        r.ratio("time_tutti_over_rayon_w1", 0.8);
        r.verify(true);
        let t = r.to_table();
        assert!(t.starts_with("fib  (n=32)"));
        assert!(t.contains("tutti"));
        assert!(t.contains("12.50"));
        assert!(t.contains("time_tutti_over_rayon_w1"));
        assert!(t.contains("verified: yes"));
    }
}
