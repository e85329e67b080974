//! `tutti trace merge out.json in...` and `tutti trace check file.json`: the
//! per-rank timeline traces of a job (`TUTTI_TRACE=file.json` under mpirun)
//! joined on rank 0's clock, and a trace checked for what a viewer needs.

use std::path::PathBuf;

use clap::{Args, Subcommand};

use crate::report::{Report, Stats};
use tutti::diag::trace::{self, CheckSummary};

/// `tutti trace …`.
#[derive(Subcommand, Debug)]
pub enum TraceCommand {
    /// Merge per-rank trace files into one, on rank 0's clock, and check it.
    Merge(MergeArgs),
    /// Check a trace file: nesting, flows, names.
    Check(CheckArgs),
}

impl TraceCommand {
    /// Whether `--json` was given.
    pub fn json(&self) -> bool {
        match self {
            TraceCommand::Merge(a) => a.json,
            TraceCommand::Check(a) => a.expect.json,
        }
    }

    /// Runs the command.
    pub fn run(&self) -> Result<Report, String> {
        match self {
            TraceCommand::Merge(a) => merge(a),
            TraceCommand::Check(a) => {
                let mut report = Report::new("trace-check");
                report.param("file", a.file.display().to_string());
                let s = trace::check(&a.file)?;
                a.expect.judge(&s, &mut report);
                Ok(report)
            }
        }
    }
}

/// Arguments of `tutti trace merge`.
#[derive(Args, Debug)]
pub struct MergeArgs {
    /// The merged file to write.
    pub out: PathBuf,
    /// The per-rank files (`file.rank0.json file.rank1.json …`).
    #[arg(required = true, num_args = 1..)]
    pub inputs: Vec<PathBuf>,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `tutti trace check`.
#[derive(Args, Debug)]
pub struct CheckArgs {
    /// The trace file.
    pub file: PathBuf,
    #[command(flatten)]
    pub expect: Expect,
}

/// What a checked trace must also show.
#[derive(Args, Debug)]
pub struct Expect {
    /// Require exactly this many processes (ranks).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    pub ranks: Option<u64>,
    /// Require at least one flow between ranks.
    #[arg(long)]
    pub cross_rank_flows: bool,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    pub json: bool,
}

impl Expect {
    fn judge(&self, s: &CheckSummary, report: &mut Report) {
        let one = |v: usize| Stats::single(v as f64);
        report.result("trace", "events", one(s.events), "events");
        report.result("trace", "slices", one(s.slices), "slices");
        report.result("trace", "flows", one(s.flows), "flows");
        report.result(
            "trace",
            "flows between ranks",
            one(s.cross_process_flows),
            "flows",
        );
        report.result("trace", "ranks", one(s.processes.len()), "ranks");
        for (cat, n) in &s.categories {
            report.result("trace", &format!("{cat} slices"), one(*n), "slices");
        }
        // Well-formed (or `check` would have failed) …
        report.verify(true);
        // … and what was asked for.
        if let Some(r) = self.ranks {
            let ok = s.processes.len() as u64 == r;
            if !ok {
                eprintln!(
                    "tutti trace: expected {r} ranks, found {}",
                    s.processes.len()
                );
            }
            report.verify(ok);
        }
        if self.cross_rank_flows {
            let ok = s.cross_process_flows > 0;
            if !ok {
                eprintln!("tutti trace: expected flows between ranks, found none");
            }
            report.verify(ok);
        }
    }
}

fn merge(a: &MergeArgs) -> Result<Report, String> {
    let summary = trace::merge(&a.inputs, &a.out).map_err(|e| e.to_string())?;
    let mut report = Report::new("trace-merge");
    report
        .param("out", a.out.display().to_string())
        .param(
            "inputs",
            a.inputs
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>(),
        )
        .param("ranks", &summary.ranks)
        .param("clock_offsets_ns", &summary.offsets_ns);
    let s = trace::check(&a.out)?;
    Expect {
        ranks: Some(summary.ranks.len() as u64),
        cross_rank_flows: false,
        json: a.json,
    }
    .judge(&s, &mut report);
    Ok(report)
}
