//! The one output shape every command shares.
//!
//! A [`Report`] collects a command's parameters, its measured results, the
//! ratios that compare tutti with its peers, and whether the command's own
//! verification passed. It prints either as a readable table or, with
//! `--json`, as exactly one JSON object:
//!
//! ```text
//! {"bench": …, "params": {…},
//!  "results": [{"impl": …, "metric": …, "value": …, "unit": …,
//!               "min": …, "max": …, "samples": [ … ]}, …],
//!  "ratios": {"time_tutti_over_rayon": …}, "verified": bool or null,
//!  "tutti": {"version": …, "commit": …}, "host": {"cores": …, "cpu": …}}
//! ```
//!
//! `verified` is *unknown* (`null`, "unknown" in the table) until the command checks
//! something: a run that never verifies its result says so instead of claiming a pass.
//!
//! A result's `value` is the median of its samples (one per measured run), with
//! their minimum and maximum; a quantity measured once (a count, a size) has
//! one sample, and the table shows it as a single value. The table writes each
//! value in the unit that suits its size (`2.42 µs`, not `2.416e-3 ms`); the
//! JSON keeps the unit the command measured in. Ratio names say which way they
//! divide: times are always ours ÷ peer (`time_tutti_over_rayon`), throughputs
//! say so (`throughput_tutti_over_rayon`).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;
use serde_json::Value;

/// Median, minimum and maximum of a set of samples, and the samples.
#[derive(Clone, Debug, PartialEq)]
pub struct Stats {
    /// The median (mean of the two middle samples for an even count).
    pub median: f64,
    /// The smallest sample.
    pub min: f64,
    /// The largest sample.
    pub max: f64,
    /// The samples, in the order they were taken.
    pub samples: Vec<f64>,
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
            samples: samples.to_vec(),
        })
    }

    /// A single value, for results that are measured once (a count, a size,
    /// a rate over the whole run).
    pub fn single(value: f64) -> Stats {
        Stats {
            median: value,
            min: value,
            max: value,
            samples: vec![value],
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
    /// The smallest sample.
    pub min: f64,
    /// The largest sample.
    pub max: f64,
    /// Every sample (one per measured run; one for a quantity measured once).
    pub samples: Vec<f64>,
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
    /// This program: version and git commit.
    tutti: Build,
    /// The machine it ran on.
    host: Host,
}

/// The program that produced a report.
#[derive(Clone, Debug, Serialize)]
pub struct Build {
    /// The crate version.
    pub version: &'static str,
    /// The git commit the binary was built from ("unknown" outside a checkout).
    pub commit: &'static str,
}

impl Build {
    /// This binary.
    pub fn current() -> Build {
        Build {
            version: env!("CARGO_PKG_VERSION"),
            commit: env!("TUTTI_GIT_COMMIT"),
        }
    }
}

/// The machine a report was made on.
#[derive(Clone, Debug, Serialize)]
pub struct Host {
    /// Cores this process may run on.
    pub cores: usize,
    /// The CPU model (`model name` of `/proc/cpuinfo`), or "unknown".
    pub cpu: String,
}

impl Host {
    /// This machine.
    pub fn current() -> Host {
        let cpu = std::fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|info| {
                info.lines()
                    .find(|l| l.starts_with("model name"))
                    .and_then(|l| l.split_once(':'))
                    .map(|(_, v)| v.trim().to_string())
            })
            .unwrap_or_else(|| "unknown".to_string());
        Host {
            cores: crate::default_workers(),
            cpu,
        }
    }
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
            tutti: Build::current(),
            host: Host::current(),
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
            samples: stats.samples,
        });
    }

    /// Records a count (measured once, shown as a whole number).
    pub fn count(&mut self, implementation: &str, metric: &str, n: u64, unit: &str) {
        self.result(implementation, metric, Stats::single(n as f64), unit);
    }

    /// The results recorded so far.
    pub fn results(&self) -> &[Row] {
        &self.results
    }

    /// The command's name.
    pub fn name(&self) -> &str {
        &self.bench
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
        // One scale per metric and unit, so that the rows compared stand in
        // the same unit (the largest median chooses it).
        let mut largest: BTreeMap<(&str, &str), f64> = BTreeMap::new();
        for r in &self.results {
            let m = largest.entry((&r.metric, &r.unit)).or_insert(0.0);
            if r.value.is_finite() {
                *m = m.max(r.value.abs());
            }
        }
        let rows: Vec<[String; 6]> = self
            .results
            .iter()
            .map(|r| {
                let scale =
                    Scale::for_value(largest[&(r.metric.as_str(), r.unit.as_str())], &r.unit);
                // One sample (a count, a size): one value, no spread.
                let (min, max) = if r.samples.len() <= 1 {
                    (String::new(), String::new())
                } else {
                    (scale.number(r.min), scale.number(r.max))
                };
                [
                    r.implementation.clone(),
                    r.metric.clone(),
                    scale.number(r.value),
                    min,
                    max,
                    scale.unit,
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
                // Names align left, numbers right, the unit last. (`{:>w$}`
                // counts chars, so `µ` pads right.)
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

/// How a row's numbers are written: its unit, rescaled to suit the median
/// (times to ns, µs, ms or s; rates and counts with k, M, G; bytes to KiB, MiB,
/// GiB), and the factor that takes a value there.
#[derive(Clone, Debug, PartialEq)]
pub struct Scale {
    /// The unit the numbers are written in.
    pub unit: String,
    /// Multiply a value in the row's unit by this.
    pub factor: f64,
    /// Whether the numbers are whole (counts): written without decimals.
    whole: bool,
}

impl Scale {
    /// The scale for a row whose median is `v`, measured in `unit`.
    pub fn for_value(v: f64, unit: &str) -> Scale {
        let keep = |whole| Scale {
            unit: unit.to_string(),
            factor: 1.0,
            whole,
        };
        let a = v.abs();
        if !v.is_finite() || a == 0.0 {
            return keep(false);
        }
        // `ns/message`, `bytes/actor`: the head scales, the tail stays.
        let (head, tail) = match unit.split_once('/') {
            Some((h, t)) if t != "s" => (h, format!("/{t}")),
            _ => (unit, String::new()),
        };
        // Times: to the unit that puts the median in [1, 1000).
        let ns_per: Option<f64> = match head {
            "ns" => Some(1.0),
            "us" | "µs" => Some(1e3),
            "ms" => Some(1e6),
            "s" => Some(1e9),
            _ => None,
        };
        if let Some(per) = ns_per {
            let ns = a * per;
            let (to, per_to) = if ns < 1e3 {
                ("ns", 1.0)
            } else if ns < 1e6 {
                ("µs", 1e3)
            } else if ns < 1e9 {
                ("ms", 1e6)
            } else {
                ("s", 1e9)
            };
            return Scale {
                unit: format!("{to}{tail}"),
                factor: per / per_to,
                whole: false,
            };
        }
        if head == "bytes" || head == "B" {
            let (to, div) = if a < 1024.0 {
                ("bytes", 1.0)
            } else if a < 1024.0 * 1024.0 {
                ("KiB", 1024.0)
            } else if a < 1024.0 * 1024.0 * 1024.0 {
                ("MiB", 1024.0 * 1024.0)
            } else {
                ("GiB", 1024.0 * 1024.0 * 1024.0)
            };
            return Scale {
                unit: format!("{to}{tail}"),
                factor: 1.0 / div,
                whole: div == 1.0 && v.fract() == 0.0,
            };
        }
        // Rates of things per second: a decimal prefix before the unit.
        let rate = unit.ends_with("/s") && unit.chars().next().is_some_and(|c| c.is_lowercase());
        if rate && a >= 1e4 {
            let (p, div) = if a < 1e6 {
                ("k", 1e3)
            } else if a < 1e9 {
                ("M", 1e6)
            } else {
                ("G", 1e9)
            };
            return Scale {
                unit: format!("{p} {unit}"),
                factor: 1.0 / div,
                whole: false,
            };
        }
        keep(v.fract() == 0.0 && a < 1e15)
    }

    /// `v` (in the row's unit) written in this scale.
    pub fn number(&self, v: f64) -> String {
        if self.whole && v.fract() == 0.0 {
            return group_thousands(v as i64);
        }
        number(v * self.factor)
    }
}

/// `1234567` as `1 234 567` (thin groups, as in the rest of the output).
fn group_thousands(n: i64) -> String {
    let digits = n.unsigned_abs().to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(' ');
        }
        out.push(c);
    }
    if n < 0 {
        format!("-{out}")
    } else {
        out
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
    } else if a >= 100.0 {
        format!("{v:.1}")
    } else if a >= 10.0 {
        format!("{v:.2}")
    } else if a >= 1.0 {
        format!("{v:.3}")
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
                max: 9.0,
                samples: vec![2.0, 9.0, 1.0, 5.0, 3.0],
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
        assert_eq!(
            keys,
            ["bench", "host", "params", "ratios", "results", "tutti", "verified"]
        );
        assert_eq!(v["tutti"]["version"], env!("CARGO_PKG_VERSION"));
        assert!(!v["tutti"]["commit"].as_str().unwrap().is_empty());
        assert!(v["host"]["cores"].as_u64().unwrap() >= 1);
        assert!(v["host"]["cpu"].is_string());
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
        assert_eq!(
            row_keys,
            ["impl", "max", "metric", "min", "samples", "unit", "value"]
        );
        assert_eq!(results[0]["impl"], "tutti");
        assert_eq!(results[0]["value"], 2.0);
        assert_eq!(results[0]["min"], 1.0);
        assert_eq!(results[0]["max"], 3.0);
        assert_eq!(results[0]["samples"], serde_json::json!([1.0, 2.0, 3.0]));
        assert_eq!(results[1]["samples"], serde_json::json!([4.0]));
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
    fn numbers_are_written_in_the_unit_that_suits_them() {
        let w = |v: f64, unit: &str| {
            let s = Scale::for_value(v, unit);
            format!("{} {}", s.number(v), s.unit)
        };
        assert_eq!(w(2.416e-3, "ms"), "2.416 µs");
        assert_eq!(w(0.5, "ns"), "0.5000 ns");
        assert_eq!(w(1500.0, "ns"), "1.500 µs");
        assert_eq!(w(81.0, "ms"), "81.00 ms");
        assert_eq!(w(2500.0, "ms"), "2.500 s");
        assert_eq!(w(4.9e6, "messages/s"), "4.900 M messages/s");
        assert_eq!(w(148_000.0, "requests/s"), "148.0 k requests/s");
        assert_eq!(w(232.0, "bytes"), "232 bytes");
        assert_eq!(w(3.0 * 1024.0 * 1024.0, "bytes"), "3.000 MiB");
        assert_eq!(w(1.0, "count"), "1 count");
        assert_eq!(w(1_234_567.0, "count"), "1 234 567 count");
        assert_eq!(w(0.95, "fraction hidden"), "0.9500 fraction hidden");
        assert_eq!(w(2416.0, "ns/message"), "2.416 µs/message");
        assert_eq!(w(232.5, "bytes/actor"), "232.5 bytes/actor");
        assert_eq!(w(5.0e6, "msg/s"), "5.000 M msg/s");
    }

    #[test]
    fn a_count_is_one_value_not_a_spread() {
        let mut r = Report::new("mad");
        r.count("tutti", "deadlocks", 1, "count");
        r.result("tutti", "time", Stats::of(&[1.0, 2.0, 3.0]).unwrap(), "us");
        let t = r.to_table();
        let line = t.lines().find(|l| l.contains("deadlocks")).unwrap();
        assert_eq!(
            line.split_whitespace().collect::<Vec<_>>(),
            ["tutti", "deadlocks", "1", "count"]
        );
        let line = t.lines().find(|l| l.contains("time")).unwrap();
        assert_eq!(
            line.split_whitespace().collect::<Vec<_>>(),
            ["tutti", "time", "2.000", "1.000", "3.000", "µs"]
        );
    }

    #[test]
    fn rows_of_one_metric_share_a_unit() {
        let mut r = Report::new("x");
        r.result("tutti", "latency", Stats::single(900.0), "ns");
        r.result("peer", "latency", Stats::single(1200.0), "ns");
        let t = r.to_table();
        assert!(t.contains("0.9000") && t.contains("1.200"), "{t}");
        assert_eq!(t.matches("µs").count(), 2, "{t}");
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
