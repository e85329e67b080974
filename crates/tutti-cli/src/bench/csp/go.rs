//! The Go peer programs of `bench/go/`: built with the Go toolchain into the
//! directory of the `tutti` binary (the target directory), run with
//! `GOMAXPROCS` set to the worker count, their JSON lines read back.
//!
//! Go is optional: where it is missing, or the sources cannot be found, every
//! Go measurement is skipped with a message saying why.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde::Deserialize;

/// Where the Go sources are unless `--go-dir` or `TUTTI_GO_DIR` says otherwise:
/// `bench/go` of the workspace this binary was built from.
pub const DEFAULT_GO_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../bench/go");

/// A built Go peer program.
#[derive(Debug)]
pub struct GoPeer {
    bin: PathBuf,
}

/// One line of a Go peer's output.
#[derive(Clone, Debug, Deserialize, PartialEq)]
pub struct GoResult {
    /// The benchmark, e.g. `pingpong` or `hello_v2`.
    pub bench: String,
    /// What was measured, e.g. `time_per_message`.
    pub metric: String,
    /// The measured value.
    pub value: f64,
    /// Its unit, e.g. `ns` or `bytes`.
    pub unit: String,
}

impl GoPeer {
    /// Builds the program in `dir` (with `go build`) next to the running
    /// executable, or says why it cannot be.
    pub fn build(dir: &Path) -> Result<GoPeer, String> {
        if !dir.join("go.mod").is_file() {
            return Err(format!(
                "the Go peer sources are not at {} (set --go-dir or TUTTI_GO_DIR)",
                dir.display()
            ));
        }
        let out_dir = std::env::current_exe()
            .ok()
            .and_then(|p| p.parent().map(Path::to_path_buf))
            .unwrap_or_else(std::env::temp_dir);
        let bin = out_dir.join("tuttibench");
        let built = Command::new("go")
            .arg("build")
            .arg("-o")
            .arg(&bin)
            .arg(".")
            .current_dir(dir)
            .output();
        match built {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(
                "Go is not installed (no `go` on PATH): install Go ≥ 1.22 to run the Go peers"
                    .to_string(),
            ),
            Err(e) => Err(format!("cannot run `go build`: {e}")),
            Ok(o) if !o.status.success() => Err(format!(
                "`go build` in {} failed: {}",
                dir.display(),
                String::from_utf8_lossy(&o.stderr).trim()
            )),
            Ok(_) => Ok(GoPeer { bin }),
        }
    }

    /// Runs `tuttibench <args>` with `GOMAXPROCS=procs` and returns its results.
    pub fn run(&self, procs: usize, args: &[String]) -> Result<Vec<GoResult>, String> {
        let out = Command::new(&self.bin)
            .args(args)
            .env("GOMAXPROCS", procs.to_string())
            .output()
            .map_err(|e| format!("cannot run {}: {e}", self.bin.display()))?;
        if !out.status.success() {
            return Err(format!(
                "the Go peer `tuttibench {}` failed ({}): {}",
                args.join(" "),
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        parse_lines(&String::from_utf8_lossy(&out.stdout))
    }
}

/// Parses the JSON lines a Go peer prints.
fn parse_lines(text: &str) -> Result<Vec<GoResult>, String> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            serde_json::from_str(l).map_err(|e| format!("bad line from the Go peer `{l}`: {e}"))
        })
        .collect()
}

/// The value of `metric` among `results`.
pub fn value_of(results: &[GoResult], metric: &str) -> Option<f64> {
    results.iter().find(|r| r.metric == metric).map(|r| r.value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_result_lines() {
        let text = "{\"bench\":\"hello_v1\",\"impl\":\"go\",\"metric\":\"time_per_message\",\"value\":17.5,\"unit\":\"ns\"}\n\
                    {\"bench\":\"hello_v1\",\"impl\":\"go\",\"metric\":\"peak_rss\",\"value\":1024,\"unit\":\"bytes\"}\n";
        let r = parse_lines(text).unwrap();
        assert_eq!(r.len(), 2);
        assert_eq!(value_of(&r, "time_per_message"), Some(17.5));
        assert_eq!(value_of(&r, "peak_rss"), Some(1024.0));
        assert_eq!(value_of(&r, "other"), None);
        assert!(parse_lines("not json").unwrap_err().contains("not json"));
    }

    #[test]
    fn missing_sources_are_a_clear_error() {
        let e = GoPeer::build(Path::new("/nonexistent/tutti/bench/go")).unwrap_err();
        assert!(e.contains("not at /nonexistent"), "{e}");
    }
}
