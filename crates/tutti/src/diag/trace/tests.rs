use super::clock::{best_offset, Sample};
use super::file::short_type;
use super::per_rank_path;
use std::path::Path;

#[test]
fn type_names_lose_their_paths() {
    let mut s = String::new();
    short_type(
        "app::bench::Pinger<core::option::Option<alloc::string::String>>",
        &mut s,
    );
    assert_eq!(s, "Pinger<Option<String>>");
    s.clear();
    short_type("(u64, my::Msg)", &mut s);
    assert_eq!(s, "(u64, Msg)");
}

#[test]
fn ranks_get_their_own_files() {
    assert_eq!(
        per_rank_path(Path::new("/t/run.json"), None),
        Path::new("/t/run.json")
    );
    assert_eq!(
        per_rank_path(Path::new("/t/run.json"), Some((3, 4))),
        Path::new("/t/run.rank3.json")
    );
    assert_eq!(
        per_rank_path(Path::new("run"), Some((0, 2))),
        Path::new("run.rank0")
    );
}

#[test]
fn the_offset_comes_from_the_shortest_round_trip() {
    // Rank 0's clock is 1000 ns ahead; the slow sample would say otherwise.
    let samples = [
        Sample {
            sent: 100,
            remote: 1900,
            back: 900,
        }, // rtt 800, says 1400
        Sample {
            sent: 2000,
            remote: 3050,
            back: 2100,
        }, // rtt 100, says 1000
        Sample {
            sent: 5000,
            remote: 6600,
            back: 5400,
        }, // rtt 400, says 1400
    ];
    assert_eq!(best_offset(&samples), Some((1000, 100)));
    assert_eq!(best_offset(&[]), None);
}

use super::check::check_value;
use super::merge::{merge, MergeError};
use serde_json::{json, Value};

fn trace(events: Value) -> Value {
    json!({ "traceEvents": events })
}

fn named(pid: u64, tids: &[u64]) -> Vec<Value> {
    let mut v = vec![
        json!({"ph":"M","pid":pid,"tid":0,"name":"process_name","args":{"name":format!("rank {pid}")}}),
    ];
    for t in tids {
        v.push(json!({"ph":"M","pid":pid,"tid":t,"name":"thread_name","args":{"name":format!("worker {t}")}}));
    }
    v
}

fn with_names(mut events: Vec<Value>, pid: u64, tids: &[u64]) -> Value {
    events.extend(named(pid, tids));
    trace(Value::Array(events))
}

#[test]
fn the_checker_accepts_nesting_and_forward_flows() {
    let t = with_names(
        vec![
            json!({"ph":"X","cat":"task","name":"poll","pid":0,"tid":1,"ts":0.0,"dur":10.0}),
            json!({"ph":"X","cat":"actor","name":"turn","pid":0,"tid":1,"ts":2.0,"dur":3.0}),
            json!({"ph":"X","cat":"actor","name":"turn","pid":0,"tid":1,"ts":5.0,"dur":5.0}),
            json!({"ph":"s","id":"a","pid":0,"tid":1,"ts":1.0}),
            json!({"ph":"X","cat":"task","name":"poll","pid":0,"tid":2,"ts":1.5,"dur":1.0}),
            json!({"ph":"f","bp":"e","id":"a","pid":0,"tid":2,"ts":1.5}),
            // The id again, after its first flow ended.
            json!({"ph":"s","id":"a","pid":0,"tid":1,"ts":6.0}),
            json!({"ph":"f","bp":"e","id":"a","pid":0,"tid":1,"ts":9.0}),
        ],
        0,
        &[1, 2],
    );
    let s = check_value(&t).unwrap();
    assert_eq!((s.slices, s.flows, s.cross_process_flows), (4, 2, 0));
    assert_eq!(s.categories["actor"], 2);
}

#[test]
fn the_checker_names_each_defect() {
    let bad = [
        (
            vec![
                json!({"ph":"X","name":"a","pid":0,"tid":1,"ts":0,"dur":10}),
                json!({"ph":"X","name":"b","pid":0,"tid":1,"ts":5,"dur":10}),
            ],
            "overlap without nesting",
        ),
        (
            vec![
                json!({"ph":"X","name":"a","pid":0,"tid":1,"ts":0,"dur":10}),
                json!({"ph":"s","id":"x","pid":0,"tid":1,"ts":1}),
            ],
            "flow x has 1 start(s) and 0 end(s)",
        ),
        (
            vec![
                json!({"ph":"X","name":"a","pid":0,"tid":1,"ts":0,"dur":10}),
                json!({"ph":"s","id":"x","pid":0,"tid":1,"ts":5}),
                json!({"ph":"f","id":"x","pid":0,"tid":1,"ts":4}),
            ],
            "ends (4000 ns, pid 0 tid 1) before it starts",
        ),
        (
            vec![
                json!({"ph":"X","name":"a","pid":0,"tid":1,"ts":0,"dur":10}),
                json!({"ph":"s","id":"x","pid":0,"tid":1,"ts":5}),
                json!({"ph":"f","id":"x","pid":0,"tid":1,"ts":11}),
            ],
            "the end of flow x (11000 ns, pid 0 tid 1) is in no slice",
        ),
        (
            vec![json!({"ph":"X","name":"a","pid":0,"tid":9,"ts":0,"dur":1})],
            "thread 9 of process 0 has events but no thread_name",
        ),
        (
            vec![json!({"ph":"X","name":"a","pid":0,"tid":1,"ts":0})],
            "slice 0 has no \"dur\"",
        ),
    ];
    for (events, want) in bad {
        let err = check_value(&with_names(events, 0, &[1])).unwrap_err();
        assert!(err.contains(want), "{err} should contain {want}");
    }
    let err = check_value(&json!({"events": []})).unwrap_err();
    assert!(err.contains("traceEvents"), "{err}");
}

fn rank_file(
    dir: &std::path::Path,
    rank: u64,
    offset_ns: i64,
    events: Vec<Value>,
) -> std::path::PathBuf {
    let mut all = events;
    all.extend(named(rank, &[1]));
    let v = json!({
        "traceEvents": all,
        "otherData": {"tutti_trace": 1, "rank": rank, "ranks": 2, "clock_offset_ns": offset_ns}
    });
    let p = dir.join(format!("t.rank{rank}.json"));
    std::fs::write(&p, v.to_string()).unwrap();
    p
}

fn scratch(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("tutti-trace-unit-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn merging_puts_every_rank_on_rank_0s_clock() {
    let dir = scratch("merge");
    // Rank 1's clock is 5 µs behind rank 0's: its receive at 3 µs (local) is
    // 8 µs on rank 0's clock, after the send at 6 µs.
    let r0 = rank_file(
        &dir,
        0,
        0,
        vec![
            json!({"ph":"X","name":"send","pid":0,"tid":1,"ts":5.0,"dur":2.0}),
            json!({"ph":"s","id":"w0.1.0","pid":0,"tid":1,"ts":6.0}),
        ],
    );
    let r1 = rank_file(
        &dir,
        1,
        5000,
        vec![
            json!({"ph":"X","name":"recv","pid":1,"tid":1,"ts":2.5,"dur":2.0}),
            json!({"ph":"f","bp":"e","id":"w0.1.0","pid":1,"tid":1,"ts":3.0}),
        ],
    );
    let out = dir.join("merged.json");
    let s = merge(&[&r0, &r1], &out).unwrap();
    assert_eq!(s.ranks, [0, 1]);
    assert_eq!(s.offsets_ns, [0, 5000]);
    let c = super::check(&out).unwrap();
    assert_eq!((c.flows, c.cross_process_flows), (1, 1));
    assert_eq!(c.processes.len(), 2);
    // Unshifted, the flow would run backwards.
    let r1_raw = rank_file(
        &dir,
        1,
        0,
        vec![
            json!({"ph":"X","name":"recv","pid":1,"tid":1,"ts":2.5,"dur":2.0}),
            json!({"ph":"f","bp":"e","id":"w0.1.0","pid":1,"tid":1,"ts":3.0}),
        ],
    );
    merge(&[&r0, &r1_raw], &out).unwrap();
    assert!(super::check(&out).unwrap_err().contains("before it starts"));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn merging_bad_inputs_names_the_file_and_the_problem() {
    let dir = scratch("bad");
    let out = dir.join("out.json");
    let none: [&std::path::Path; 0] = [];
    assert!(matches!(merge(&none, &out), Err(MergeError::NoInputs)));
    let missing = dir.join("missing.json");
    let e = merge(&[&missing], &out).unwrap_err().to_string();
    assert!(e.contains("missing.json"), "{e}");
    let garbage = dir.join("garbage.json");
    std::fs::write(&garbage, "{\"traceEvents\":[").unwrap();
    let e = merge(&[&garbage], &out).unwrap_err().to_string();
    assert!(e.contains("garbage.json is not valid JSON"), "{e}");
    let foreign = dir.join("foreign.json");
    std::fs::write(&foreign, "{\"traceEvents\":[]}").unwrap();
    let e = merge(&[&foreign], &out).unwrap_err().to_string();
    assert!(
        e.contains("foreign.json is not a tutti trace: no \"otherData\""),
        "{e}"
    );
    let a = rank_file(&dir, 0, 0, vec![]);
    let e = merge(&[&a, &a], &out).unwrap_err().to_string();
    assert!(e.contains("are both traces of rank 0"), "{e}");
    let merged = dir.join("merged.json");
    merge(&[&a], &merged).unwrap();
    let e = merge(&[&merged], &out).unwrap_err().to_string();
    assert!(e.contains("already a merged trace"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn ticks_convert_between_fixed_anchors() {
    use super::clock::Timebase;
    // 3 ticks per ns up to tick 3000, then 2 ticks per ns.
    let tb = Timebase::with_anchors(vec![(0, 1_000), (3_000, 2_000), (5_000, 3_000)]);
    assert_eq!(tb.ns(0), 1_000);
    assert_eq!(tb.ns(1_500), 1_500);
    assert_eq!(tb.ns(3_000), 2_000);
    assert_eq!(tb.ns(4_000), 2_500);
    assert_eq!(tb.ns(5_000), 3_000);
    // Past the last anchor: the last segment's rate.
    assert_eq!(tb.ns(7_000), 4_000);
    let mut last = 0;
    for tick in (0..8_000).step_by(7) {
        let ns = tb.ns(tick);
        assert!(ns >= last, "{tick} went back to {ns}");
        last = ns;
    }
    // Nanosecond clocks (no anchors) convert to themselves.
    assert_eq!(Timebase::with_anchors(vec![]).ns(12_345), 12_345);
}

#[test]
fn the_trace_clock_reads_close_to_clock_monotonic() {
    use super::clock::{mono, now, Timebase};
    super::clock::choose();
    let mut tb = Timebase::new();
    let (t0, m0) = (now(), mono());
    std::thread::sleep(std::time::Duration::from_millis(20));
    let (t1, m1) = (now(), mono());
    tb.mark();
    let (n0, n1) = (tb.ns(t0), tb.ns(t1));
    assert!(n1 > n0);
    // Within 1 ms of CLOCK_MONOTONIC (a loaded machine may preempt a reading).
    for (n, m) in [(n0, m0), (n1, m1)] {
        assert!(n.abs_diff(m) < 1_000_000, "{n} vs {m}");
    }
}
