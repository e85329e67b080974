//! `tutti bench fib`: the cost of one fork-join, measured two ways where
//! almost all the time is spent in `join` itself:
//!
//! * **fib** — a naive recursive Fibonacci with no sequential cut-off; a
//!   "task" is one `join` call, i.e. one internal node of the call tree:
//!   `fib(n + 1) − 1` of them;
//! * **tree** — the sum of the values of a balanced binary tree of boxed
//!   nodes, one `join` per node (chili's own benchmark): `2^layers − 1`
//!   nodes, and the work per node is one pointer chase and one addition.
//!
//! `tutti::join` on a `tutti::Runtime`, `rayon::join` on a rayon pool and
//! chili's `Scope::join` on a chili pool (heartbeat scheduling: a join is
//! offered to other threads only when a periodic heartbeat asks for it) run
//! for every worker count in `--workers` (a fresh runtime and pools per
//! count), beside plain sequential recursion. A chili pool of `w` threads is
//! the calling thread plus `w − 1` workers, so it computes on `w` threads like
//! the others.
//!
//! Two sequential rows: `seq` runs the first half of each split first, as
//! `tutti::join` and `rayon::join` do; `seq_rev` runs the second half first,
//! as chili's join does when no heartbeat is due. On the tree the order
//! matters by itself: a node's box is allocated after both subtrees, so the
//! second-half-first walk reads memory in nearly descending address order.

use std::num::NonZeroUsize;
use std::time::Duration;

use clap::Args;

use crate::measure::{check_memory, repeat, timed, Measurement, Progress, Run, RunOpts};
use crate::report::{Report, Stats};

/// Measured runs when `--runs` is not given (shown in `--help`).
pub const RUNS: usize = 15;

/// chili's default heartbeat interval (its `Config::default`).
const CHILI_HEARTBEAT: Duration = Duration::from_micros(100);

/// Arguments of `tutti bench fib`.
#[derive(Args, Debug)]
pub struct FibArgs {
    /// Which Fibonacci number to compute.
    #[arg(long, default_value_t = 32, value_parser = clap::value_parser!(u32).range(1..=45))]
    n: u32,
    /// Layers of the balanced binary tree of the tree-sum case (`2^layers − 1`
    /// nodes, about 40 bytes each); 0 skips the case.
    #[arg(long, default_value_t = 22, value_parser = clap::value_parser!(u32).range(0..=28))]
    tree_layers: u32,
    /// Worker counts to measure: one (`2`), a list (`1,2,4`) or a range (`1..4`).
    #[arg(long, default_value = "1,2", value_parser = crate::args::parse_worker_counts)]
    workers: crate::args::Counts,
    #[command(flatten)]
    run: RunOpts,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// `fib(n)` by iteration, the reference value.
fn fib_iter(n: u32) -> u64 {
    let (mut a, mut b) = (0u64, 1u64);
    for _ in 0..n {
        (a, b) = (b, a + b);
    }
    a
}

/// Number of `join` calls of the recursive computation of `fib(n)`.
fn joins(n: u32) -> u64 {
    if n < 2 {
        0
    } else {
        fib_iter(n + 1) - 1
    }
}

fn fib_seq(n: u32) -> u64 {
    if n < 2 {
        return u64::from(n);
    }
    fib_seq(n - 1) + fib_seq(n - 2)
}

/// [`fib_seq`] computing the second term first.
fn fib_seq_rev(n: u32) -> u64 {
    if n < 2 {
        return u64::from(n);
    }
    let b = fib_seq_rev(n - 2);
    b + fib_seq_rev(n - 1)
}

fn fib_tutti(n: u32) -> u64 {
    if n < 2 {
        return u64::from(n);
    }
    let (a, b) = tutti::join(|| fib_tutti(n - 1), || fib_tutti(n - 2));
    a + b
}

fn fib_rayon(n: u32) -> u64 {
    if n < 2 {
        return u64::from(n);
    }
    let (a, b) = rayon::join(|| fib_rayon(n - 1), || fib_rayon(n - 2));
    a + b
}

fn fib_chili(n: u32, s: &mut chili::Scope<'_>) -> u64 {
    if n < 2 {
        return u64::from(n);
    }
    let (a, b) = s.join(|s| fib_chili(n - 1, s), |s| fib_chili(n - 2, s));
    a + b
}

/// A node of the tree-sum case.
struct Node {
    value: u64,
    left: Option<Box<Node>>,
    right: Option<Box<Node>>,
}

impl Node {
    /// A balanced tree of `layers` layers (at least one); node values count
    /// 1, 2, 3, … in pre-order from `first`, so that the sum checks that every
    /// node was visited once.
    fn tree(layers: u32, first: u64) -> Node {
        let child = |first| (layers > 1).then(|| Box::new(Node::tree(layers - 1, first)));
        let half = (1u64 << (layers - 1)) - 1;
        Node {
            value: first,
            left: child(first + 1),
            right: child(first + 1 + half),
        }
    }
}

/// Nodes of a balanced tree of `layers` layers.
fn tree_nodes(layers: u32) -> u64 {
    (1u64 << layers) - 1
}

/// The sum of the values 1..=nodes.
fn tree_expected(layers: u32) -> u64 {
    let nodes = tree_nodes(layers);
    nodes * (nodes + 1) / 2
}

fn sum_seq(node: &Node) -> u64 {
    let left = node.left.as_deref().map(sum_seq).unwrap_or_default();
    let right = node.right.as_deref().map(sum_seq).unwrap_or_default();
    node.value + left + right
}

/// [`sum_seq`] visiting the right subtree first.
fn sum_seq_rev(node: &Node) -> u64 {
    let right = node.right.as_deref().map(sum_seq_rev).unwrap_or_default();
    let left = node.left.as_deref().map(sum_seq_rev).unwrap_or_default();
    node.value + left + right
}

fn sum_tutti(node: &Node) -> u64 {
    let (left, right) = tutti::join(
        || node.left.as_deref().map(sum_tutti).unwrap_or_default(),
        || node.right.as_deref().map(sum_tutti).unwrap_or_default(),
    );
    node.value + left + right
}

fn sum_rayon(node: &Node) -> u64 {
    let (left, right) = rayon::join(
        || node.left.as_deref().map(sum_rayon).unwrap_or_default(),
        || node.right.as_deref().map(sum_rayon).unwrap_or_default(),
    );
    node.value + left + right
}

fn sum_chili(node: &Node, s: &mut chili::Scope<'_>) -> u64 {
    let (left, right) = s.join(
        |s| {
            node.left
                .as_deref()
                .map(|n| sum_chili(n, s))
                .unwrap_or_default()
        },
        |s| {
            node.right
                .as_deref()
                .map(|n| sum_chili(n, s))
                .unwrap_or_default()
        },
    );
    node.value + left + right
}

/// One case: its name in the report (empty for fib, whose rows and ratios keep
/// their historical names), what a "task" is, and the four ways to compute it.
struct Case<'a> {
    /// Prefix of the metrics (`tree_time`) and suffix of the ratios (`_tree_w2`).
    name: &'static str,
    /// The per-task metric and how many tasks one run does.
    per_task: &'static str,
    tasks: u64,
    expected: u64,
    seq: Box<dyn Fn() -> u64 + 'a>,
    /// Sequential, second half first.
    seq_rev: Box<dyn Fn() -> u64 + 'a>,
    tutti: Box<dyn Fn() -> u64 + Sync + 'a>,
    rayon: Box<dyn Fn() -> u64 + Sync + 'a>,
    chili: Box<dyn Fn(&mut chili::Scope<'_>) -> u64 + 'a>,
}

/// Runs `tutti bench fib`.
pub fn run(args: &FibArgs) -> Result<Report, String> {
    let n = args.n;
    let layers = args.tree_layers;
    let plan = args.run.plan();
    let lists = args.workers.0.clone();

    let mut report = Report::new("fib");
    report
        .param("n", n)
        .param("tree_layers", layers)
        .param("workers", args.workers.to_string())
        .param("tasks", joins(n))
        .param(
            "tree_nodes",
            if layers > 0 { tree_nodes(layers) } else { 0 },
        )
        .param("runs", plan.runs)
        .param("warmup", plan.warmup);

    let tree = if layers > 0 {
        // A node is 24 bytes; the allocator rounds it up to 32 and keeps a
        // word of its own.
        check_memory(u128::from(tree_nodes(layers)) * 40, "the tree-sum case")?;
        Some(Node::tree(layers, 1))
    } else {
        None
    };
    let mut cases = vec![Case {
        name: "",
        per_task: "time_per_task",
        tasks: joins(n),
        expected: fib_iter(n),
        seq: Box::new(move || fib_seq(std::hint::black_box(n))),
        seq_rev: Box::new(move || fib_seq_rev(std::hint::black_box(n))),
        tutti: Box::new(move || fib_tutti(std::hint::black_box(n))),
        rayon: Box::new(move || fib_rayon(std::hint::black_box(n))),
        chili: Box::new(move |s| fib_chili(std::hint::black_box(n), s)),
    }];
    if let Some(tree) = &tree {
        cases.push(Case {
            name: "tree",
            per_task: "tree_time_per_node",
            tasks: tree_nodes(layers),
            expected: tree_expected(layers),
            seq: Box::new(|| sum_seq(std::hint::black_box(tree))),
            seq_rev: Box::new(|| sum_seq_rev(std::hint::black_box(tree))),
            tutti: Box::new(|| sum_tutti(std::hint::black_box(tree))),
            rayon: Box::new(|| sum_rayon(std::hint::black_box(tree))),
            chili: Box::new(|s| sum_chili(std::hint::black_box(tree), s)),
        });
    }

    let progress = Progress::new(
        cases.len() * (2 + 3 * lists.len()) * plan.total(),
        args.json,
    );
    let measure = |expected: u64, f: &dyn Fn() -> u64| -> Measurement {
        repeat(plan, &progress, || {
            let (value, elapsed) = timed(f);
            Run {
                elapsed,
                ok: value == expected,
            }
        })
    };

    let mut rows: Vec<(&Case, String, Measurement)> = Vec::new();
    for case in &cases {
        let label = if case.name.is_empty() {
            "fib"
        } else {
            case.name
        };
        progress.stage(&format!("{label}: sequential"));
        let seq = measure(case.expected, &*case.seq);
        rows.push((case, "seq".to_string(), seq.clone()));
        progress.stage(&format!("{label}: sequential, second half first"));
        rows.push((
            case,
            "seq_rev".to_string(),
            measure(case.expected, &*case.seq_rev),
        ));
        for &w in &lists {
            progress.stage(&format!("{label}: tutti, {w} workers"));
            let rt = tutti::Runtime::builder()
                .workers(w)
                .build()
                .map_err(|e| format!("cannot build a tutti runtime with {w} workers: {e}"))?;
            let tutti_m = measure(case.expected, &|| rt.install(&*case.tutti));
            drop(rt);

            progress.stage(&format!("{label}: rayon, {w} threads"));
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(w)
                .build()
                .map_err(|e| format!("cannot build a rayon pool with {w} threads: {e}"))?;
            let rayon_m = measure(case.expected, &|| pool.install(&*case.rayon));
            drop(pool);

            progress.stage(&format!("{label}: chili, {w} threads"));
            let threads = NonZeroUsize::new(w).ok_or("a chili pool needs at least one thread")?;
            let pool = chili::ThreadPool::with_config(chili::Config {
                thread_count: Some(threads),
                heartbeat_interval: CHILI_HEARTBEAT,
            });
            let chili_m = measure(case.expected, &|| (case.chili)(&mut pool.scope()));
            drop(pool);

            let suffix = if case.name.is_empty() {
                format!("w{w}")
            } else {
                format!("{}_w{w}", case.name)
            };
            let tutti_s = tutti_m.median_secs();
            report.ratio(
                &format!("time_tutti_over_rayon_{suffix}"),
                tutti_s / rayon_m.median_secs(),
            );
            report.ratio(
                &format!("time_tutti_over_chili_{suffix}"),
                tutti_s / chili_m.median_secs(),
            );
            report.ratio(
                &format!("time_tutti_over_seq_{suffix}"),
                tutti_s / seq.median_secs(),
            );
            rows.push((case, format!("tutti_w{w}"), tutti_m));
            rows.push((case, format!("rayon_w{w}"), rayon_m));
            rows.push((case, format!("chili_w{w}"), chili_m));
        }
    }
    progress.finish();

    for (case, name, m) in &rows {
        report.verify(m.ok);
        let time = if case.name.is_empty() {
            "time".to_string()
        } else {
            format!("{}_time", case.name)
        };
        if let Some(t) = Stats::of(&m.map(|s| s * 1e3)) {
            report.result(name, &time, t, "ms");
        }
        if let Some(t) = Stats::of(&m.map(|s| s * 1e9 / case.tasks.max(1) as f64)) {
            report.result(name, case.per_task, t, "ns");
        }
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reference_values() {
        assert_eq!(fib_iter(0), 0);
        assert_eq!(fib_iter(1), 1);
        assert_eq!(fib_iter(10), 55);
        assert_eq!(fib_iter(32), 2_178_309);
        assert_eq!(fib_seq(15), fib_iter(15));
        assert_eq!(fib_seq_rev(15), fib_iter(15));
    }

    #[test]
    fn joins_count_internal_nodes() {
        fn count(n: u32) -> u64 {
            if n < 2 {
                0
            } else {
                1 + count(n - 1) + count(n - 2)
            }
        }
        for n in 0..20 {
            assert_eq!(joins(n), count(n), "n={n}");
        }
    }

    #[test]
    fn parallel_versions_agree() {
        let rt = tutti::Runtime::builder().workers(2).build().unwrap();
        assert_eq!(rt.install(|| fib_tutti(18)), fib_iter(18));
        assert_eq!(fib_rayon(18), fib_iter(18));
        let pool = chili::ThreadPool::with_config(chili::Config {
            thread_count: NonZeroUsize::new(2),
            heartbeat_interval: CHILI_HEARTBEAT,
        });
        assert_eq!(fib_chili(18, &mut pool.scope()), fib_iter(18));
    }

    #[test]
    fn tree_sums_agree() {
        for layers in 1..12 {
            let tree = Node::tree(layers, 1);
            assert_eq!(sum_seq(&tree), tree_expected(layers), "layers={layers}");
            assert_eq!(sum_seq_rev(&tree), tree_expected(layers), "layers={layers}");
        }
        let tree = Node::tree(12, 1);
        let rt = tutti::Runtime::builder().workers(2).build().unwrap();
        assert_eq!(rt.install(|| sum_tutti(&tree)), tree_expected(12));
        assert_eq!(sum_rayon(&tree), tree_expected(12));
        let pool = chili::ThreadPool::with_config(chili::Config {
            thread_count: NonZeroUsize::new(2),
            heartbeat_interval: CHILI_HEARTBEAT,
        });
        assert_eq!(sum_chili(&tree, &mut pool.scope()), tree_expected(12));
    }
}
