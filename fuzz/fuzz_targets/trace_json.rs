//! Trace files given to `tutti trace check` and `tutti trace merge`: hostile
//! JSON (one file, or two to merge) is checked or merged, or refused with an
//! error naming the file and the cause; never a panic.
#![no_main]

use std::path::PathBuf;
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use tutti::diag::trace;
use tutti_fuzz::names_a_cause;

/// This process's scratch files (two inputs, one output), in memory if
/// `/dev/shm` exists; removed after every input.
fn paths() -> &'static [PathBuf; 3] {
    static PATHS: OnceLock<[PathBuf; 3]> = OnceLock::new();
    PATHS.get_or_init(|| {
        let dir = PathBuf::from("/dev/shm");
        let dir = if dir.is_dir() {
            dir
        } else {
            std::env::temp_dir()
        };
        let at = |what: &str| {
            dir.join(format!(
                "tutti-fuzz-trace-{}-{what}.json",
                std::process::id()
            ))
        };
        [at("a"), at("b"), at("out")]
    })
}

fuzz_target!(|bytes: &[u8]| {
    // Two files, split at the first NUL (JSON text has none).
    let (a, b) = match bytes.iter().position(|&c| c == 0) {
        Some(i) => (&bytes[..i], Some(&bytes[i + 1..])),
        None => (bytes, None),
    };
    let [pa, pb, out] = paths();
    std::fs::write(pa, a).expect("a scratch file");
    if let Err(e) = trace::check(pa) {
        names_a_cause(&e);
        assert!(
            e.contains(&*pa.to_string_lossy()),
            "{e} does not name the file"
        );
    }
    let merged = match b {
        Some(b) => {
            std::fs::write(pb, b).expect("a scratch file");
            trace::merge(&[pa, pb], out)
        }
        None => trace::merge(&[pa], out),
    };
    match merged {
        Ok(summary) => {
            // A merged trace is one `check` reads.
            let read = std::fs::read(out).expect("the merged trace");
            assert!(!read.is_empty(), "{summary:?} wrote nothing");
        }
        Err(e) => names_a_cause(&e.to_string()),
    }
    // libFuzzer ends the process between inputs (`-max_total_time`) without
    // running destructors: leave nothing behind after each one.
    for p in [pa, pb, out] {
        let _ = std::fs::remove_file(p);
    }
});
