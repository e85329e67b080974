//! `tutti bench codec`: the serde formats that could carry tutti's messages across a
//! process boundary, side by side, and tutti's codec (the chosen format behind
//! `tutti::msg::codec`, with and without its frame, and its plain-old-data fast path).
//!
//! For each format and each representative message (see [`messages`]) it measures the
//! time to append an encoding to a reused buffer, the time to decode an owned value,
//! and the encoded size; then it feeds each decoder hostile input — random bytes and
//! valid encodings with a few bytes overwritten, inserted or cut — and counts panics
//! (caught) and inputs accepted. Every decoded value is checked against the original.
//!
//! The machine may be shared, so the timings are interleaved: each round times every
//! (format, message, direction) case once, in turn, and the report takes the median
//! over the rounds — a burst of outside load then spreads over all formats instead of
//! hitting one.
//!
//! Ratios are tutti ÷ peer: `time_tutti_over_<peer>_<message>` for an encode plus a
//! decode, `size_tutti_over_<peer>_<message>` for the bytes.

mod formats;
mod messages;

use std::hint::black_box;
use std::time::{Duration, Instant};

use clap::Args;
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::measure::{Progress, RunOpts};
use crate::report::{Report, Stats};
use crate::rng::Rng;
use formats::{Bincode1, Bincode2, Bitcode, Format, Postcard, Rmp, Tutti, TuttiFrame};
use messages::{Floats, Named, PodFloats, Shape, Small};

/// Measured runs when `--runs` is not given (shown in `--help`).
pub const RUNS: usize = 7;

/// Arguments of `tutti bench codec`.
#[derive(Args, Debug)]
pub struct CodecArgs {
    /// Length of the `f64` vector of the `floats` message.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..=10_000_000))]
    elements: u64,
    /// Hostile inputs fed to each decoder per message type.
    #[arg(long, default_value_t = 2000, value_parser = clap::value_parser!(u64).range(0..=10_000_000))]
    hostile: u64,
    /// Seed of the messages and of the hostile inputs.
    #[arg(long, default_value_t = 7)]
    seed: u64,
    #[command(flatten)]
    run: RunOpts,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// Wall time one timed run of one case aims at.
const RUN_TARGET: Duration = Duration::from_millis(4);

/// The representative messages, built once from the seed.
struct Inputs {
    small: Small,
    named: Named,
    floats: Floats,
    pod_floats: PodFloats,
    shape: Shape,
}

/// The messages by name, in report order.
const MESSAGES: [&str; 4] = ["small", "named", "floats", "shape"];

/// One timed operation: a format encoding or decoding one message.
struct Case<'a> {
    implementation: &'static str,
    message: &'static str,
    /// `encode` or `decode`.
    direction: &'static str,
    /// Runs the operation `n` times; false if any run failed.
    op: Box<dyn FnMut(u64) -> bool + 'a>,
    /// Operations per timed run.
    iters: u64,
    /// Nanoseconds per operation, one sample per recorded round.
    samples: Vec<f64>,
    ok: bool,
}

/// The encoded size of one message by one format, and whether it round-tripped.
struct Size {
    implementation: &'static str,
    message: &'static str,
    bytes: usize,
    ok: bool,
}

/// `value`'s encoding by `F`, if it decodes back to an equal value.
fn round_trip<F: Format, T>(value: &T) -> Option<Vec<u8>>
where
    T: Serialize + DeserializeOwned + PartialEq,
{
    let mut buf = Vec::new();
    F::encode(value, &mut buf).ok()?;
    F::decode::<T>(&buf)
        .is_ok_and(|v| v == *value)
        .then_some(buf)
}

/// The encode and decode cases of format `F` for `value`, and its size.
fn cases_of<'a, F: Format, T>(
    implementation: &'static str,
    message: &'static str,
    value: &'a T,
    cases: &mut Vec<Case<'a>>,
    sizes: &mut Vec<Size>,
) where
    T: Serialize + DeserializeOwned + PartialEq,
{
    let encoded = round_trip::<F, T>(value);
    sizes.push(Size {
        implementation,
        message,
        bytes: encoded.as_ref().map_or(0, Vec::len),
        ok: encoded.is_some(),
    });
    let Some(encoded) = encoded else {
        return;
    };
    let mut buf = Vec::with_capacity(encoded.len());
    let expected = encoded.clone();
    let encode = move |n: u64| {
        let mut ok = true;
        for _ in 0..n {
            buf.clear();
            ok &= F::encode(black_box(value), &mut buf).is_ok();
            black_box(&buf);
        }
        ok && buf == expected
    };
    let decode = move |n: u64| {
        let mut ok = true;
        for _ in 0..n {
            ok &= F::decode::<T>(black_box(&encoded)).map(black_box).is_ok();
        }
        ok
    };
    for (direction, op) in [
        (
            "encode",
            Box::new(encode) as Box<dyn FnMut(u64) -> bool + 'a>,
        ),
        ("decode", Box::new(decode)),
    ] {
        cases.push(Case {
            implementation,
            message,
            direction,
            op,
            iters: 1,
            samples: Vec::new(),
            ok: true,
        });
    }
}

/// Every case of format `F`: its four messages.
fn format_cases<'a, F: Format>(
    inputs: &'a Inputs,
    cases: &mut Vec<Case<'a>>,
    sizes: &mut Vec<Size>,
) {
    cases_of::<F, _>(F::NAME, "small", &inputs.small, cases, sizes);
    cases_of::<F, _>(F::NAME, "named", &inputs.named, cases, sizes);
    cases_of::<F, _>(F::NAME, "floats", &inputs.floats, cases, sizes);
    cases_of::<F, _>(F::NAME, "shape", &inputs.shape, cases, sizes);
}

/// Operations of `case` that take about [`RUN_TARGET`].
fn calibrate(case: &mut Case<'_>) {
    let mut n = 1u64;
    loop {
        let start = Instant::now();
        case.ok &= (case.op)(n);
        let t = start.elapsed();
        if t >= RUN_TARGET / 8 || n >= 1 << 24 {
            let per = t.as_secs_f64() / n as f64;
            case.iters = ((RUN_TARGET.as_secs_f64() / per.max(1e-10)) as u64).clamp(1, 1 << 26);
            return;
        }
        n *= 2;
    }
}

/// What one decoder did with hostile input.
#[derive(Default, Clone, Copy)]
struct Hostile {
    inputs: u64,
    panics: u64,
    accepted: u64,
    nanos: f64,
}

/// Hostile inputs for format `F` from a valid encoding of `value`: half random bytes,
/// half the valid encoding with one to four bytes overwritten, inserted or cut.
fn hostile_inputs<F: Format, T: Serialize>(value: &T, count: u64, rng: &mut Rng) -> Vec<Vec<u8>> {
    let mut good = Vec::new();
    if F::encode(value, &mut good).is_err() {
        return Vec::new();
    }
    (0..count)
        .map(|i| {
            if i % 2 == 0 {
                let len = rng.below(good.len().min(256) as u64 + 16) as usize;
                (0..len).map(|_| rng.next_u64() as u8).collect()
            } else {
                let mut g = good.clone();
                for _ in 0..1 + rng.below(4) {
                    if g.is_empty() {
                        break;
                    }
                    let k = rng.below(g.len() as u64) as usize;
                    match rng.below(4) {
                        0 => g[k] = rng.next_u64() as u8,
                        1 => g[k] = 0xff,
                        2 => g.truncate(k),
                        _ => g.insert(k, rng.next_u64() as u8),
                    }
                }
                g
            }
        })
        .collect()
}

/// Feeds hostile inputs to `F`'s decoder for `T`, catching panics.
fn attack<F: Format, T: Serialize + DeserializeOwned>(
    value: &T,
    count: u64,
    rng: &mut Rng,
) -> Hostile {
    let inputs = hostile_inputs::<F, T>(value, count, rng);
    let mut h = Hostile {
        inputs: inputs.len() as u64,
        ..Hostile::default()
    };
    let start = Instant::now();
    for input in &inputs {
        match std::panic::catch_unwind(|| F::decode::<T>(input).is_ok()) {
            Err(_) => h.panics += 1,
            Ok(true) => h.accepted += 1,
            Ok(false) => {}
        }
    }
    h.nanos = start.elapsed().as_secs_f64() * 1e9;
    h
}

/// Hostile inputs fed to every format, summed over the four messages.
fn attack_format<F: Format>(inputs: &Inputs, count: u64, seed: u64) -> Hostile {
    let mut rng = Rng::stream(seed, 1);
    let mut h = Hostile::default();
    for one in [
        attack::<F, _>(&inputs.small, count, &mut rng),
        attack::<F, _>(&inputs.named, count, &mut rng),
        attack::<F, _>(&inputs.floats, count, &mut rng),
        attack::<F, _>(&inputs.shape, count, &mut rng),
    ] {
        h.inputs += one.inputs;
        h.panics += one.panics;
        h.accepted += one.accepted;
        h.nanos += one.nanos;
    }
    h
}

/// Runs `tutti bench codec`.
pub fn run(args: &CodecArgs) -> Result<Report, String> {
    let plan = args.run.plan();
    let mut report = Report::new("codec");
    report
        .param("elements", args.elements)
        .param("hostile", args.hostile)
        .param("seed", args.seed)
        .param("runs", plan.runs)
        .param("warmup", plan.warmup);

    let mut rng = Rng::new(args.seed);
    let data = messages::floats(&mut rng, args.elements as usize);
    let inputs = Inputs {
        small: messages::small(&mut rng),
        named: messages::named(&mut rng),
        pod_floats: PodFloats(data.clone().into()),
        floats: Floats(data),
        shape: messages::shape(&mut rng, 3, 3),
    };

    let mut cases = Vec::new();
    let mut sizes = Vec::new();
    format_cases::<Tutti>(&inputs, &mut cases, &mut sizes);
    cases_of::<Tutti, _>(
        "tutti-pod",
        "floats",
        &inputs.pod_floats,
        &mut cases,
        &mut sizes,
    );
    format_cases::<TuttiFrame>(&inputs, &mut cases, &mut sizes);
    format_cases::<Postcard>(&inputs, &mut cases, &mut sizes);
    format_cases::<Bincode1>(&inputs, &mut cases, &mut sizes);
    format_cases::<Bincode2>(&inputs, &mut cases, &mut sizes);
    format_cases::<Bitcode>(&inputs, &mut cases, &mut sizes);
    format_cases::<Rmp>(&inputs, &mut cases, &mut sizes);

    let progress = Progress::new(cases.len() * (plan.total() + 1) + 7, args.json);
    progress.stage("calibrating");
    for case in &mut cases {
        calibrate(case);
        progress.tick();
    }
    for round in 0..plan.total() {
        progress.stage(&format!("round {}/{}", round + 1, plan.total()));
        for case in &mut cases {
            let start = Instant::now();
            case.ok &= (case.op)(case.iters);
            let ns = start.elapsed().as_secs_f64() * 1e9 / case.iters as f64;
            if round >= plan.warmup {
                case.samples.push(ns);
            }
            progress.tick();
        }
    }

    progress.stage("hostile input");
    let previous_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let mut hostile = Vec::new();
    for (name, attack) in [
        (
            "tutti",
            attack_format::<Tutti> as fn(&Inputs, u64, u64) -> Hostile,
        ),
        ("tutti-frame", attack_format::<TuttiFrame>),
        ("postcard", attack_format::<Postcard>),
        ("bincode1", attack_format::<Bincode1>),
        ("bincode2", attack_format::<Bincode2>),
        ("bitcode", attack_format::<Bitcode>),
        ("rmp-serde", attack_format::<Rmp>),
    ] {
        hostile.push((name, attack(&inputs, args.hostile, args.seed)));
        progress.tick();
    }
    std::panic::set_hook(previous_hook);
    progress.finish();

    // Results: per implementation, per message, encode, decode and size.
    let mut implementations: Vec<&'static str> = Vec::new();
    for s in &sizes {
        if !implementations.contains(&s.implementation) {
            implementations.push(s.implementation);
        }
    }
    let median_of = |implementation: &str, message: &str, direction: &str| -> Option<f64> {
        cases
            .iter()
            .find(|c| {
                c.implementation == implementation
                    && c.message == message
                    && c.direction == direction
            })
            .and_then(|c| crate::report::median(&c.samples))
    };
    for &implementation in &implementations {
        for message in MESSAGES {
            for case in cases
                .iter()
                .filter(|c| c.implementation == implementation && c.message == message)
            {
                report.verify(case.ok);
                if let Some(s) = Stats::of(&case.samples) {
                    report.result(
                        implementation,
                        &format!("{message}_{}", case.direction),
                        s,
                        "ns",
                    );
                }
            }
            if let Some(size) = sizes
                .iter()
                .find(|s| s.implementation == implementation && s.message == message)
            {
                report.verify(size.ok);
                report.result(
                    implementation,
                    &format!("{message}_size"),
                    Stats::single(size.bytes as f64),
                    "bytes",
                );
            }
        }
    }
    for (name, h) in &hostile {
        report.result(
            name,
            "hostile_panics",
            Stats::single(h.panics as f64),
            "inputs",
        );
        report.result(
            name,
            "hostile_accepted",
            Stats::single(h.accepted as f64),
            "inputs",
        );
        report.result(
            name,
            "hostile_decode",
            Stats::single(h.nanos / h.inputs.max(1) as f64),
            "ns/input",
        );
        // tutti's decoders must never panic.
        report.verify(h.panics == 0 || !name.starts_with("tutti"));
    }

    let round_trip_time = |implementation: &str, message: &str| -> Option<f64> {
        Some(
            median_of(implementation, message, "encode")?
                + median_of(implementation, message, "decode")?,
        )
    };
    let size_of = |implementation: &str, message: &str| {
        sizes
            .iter()
            .find(|s| s.implementation == implementation && s.message == message)
            .map(|s| s.bytes as f64)
    };
    for peer in ["postcard", "bincode1", "bincode2", "bitcode", "rmp-serde"] {
        for message in MESSAGES {
            if let (Some(ours), Some(theirs)) = (
                round_trip_time("tutti", message),
                round_trip_time(peer, message),
            ) {
                report.ratio(&format!("time_tutti_over_{peer}_{message}"), ours / theirs);
            }
            if let (Some(ours), Some(theirs)) = (size_of("tutti", message), size_of(peer, message))
            {
                report.ratio(&format!("size_tutti_over_{peer}_{message}"), ours / theirs);
            }
        }
    }
    if let (Some(pod), Some(serde)) = (
        round_trip_time("tutti-pod", "floats"),
        round_trip_time("tutti", "floats"),
    ) {
        report.ratio("time_tutti_pod_over_tutti_floats", pod / serde);
    }
    if let (Some(framed), Some(bare)) = (
        round_trip_time("tutti-frame", "small"),
        round_trip_time("tutti", "small"),
    ) {
        report.ratio("time_tutti_frame_over_tutti_small", framed / bare);
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inputs() -> Inputs {
        let mut rng = Rng::new(1);
        let data = messages::floats(&mut rng, 100);
        Inputs {
            small: messages::small(&mut rng),
            named: messages::named(&mut rng),
            pod_floats: PodFloats(data.clone().into()),
            floats: Floats(data),
            shape: messages::shape(&mut rng, 3, 3),
        }
    }

    fn all_round_trip<F: Format>(i: &Inputs) {
        let (mut cases, mut sizes) = (Vec::new(), Vec::new());
        format_cases::<F>(i, &mut cases, &mut sizes);
        assert_eq!((cases.len(), sizes.len()), (8, 4));
        for case in &mut cases {
            assert!(
                (case.op)(2),
                "{} {} {}",
                F::NAME,
                case.message,
                case.direction
            );
        }
        assert!(round_trip::<F, _>(&i.small).is_some(), "{} small", F::NAME);
        assert!(round_trip::<F, _>(&i.named).is_some(), "{} named", F::NAME);
        assert!(
            round_trip::<F, _>(&i.floats).is_some(),
            "{} floats",
            F::NAME
        );
        assert!(round_trip::<F, _>(&i.shape).is_some(), "{} shape", F::NAME);
    }

    #[test]
    fn every_format_round_trips_every_message() {
        let i = inputs();
        all_round_trip::<Tutti>(&i);
        all_round_trip::<TuttiFrame>(&i);
        all_round_trip::<Postcard>(&i);
        all_round_trip::<Bincode1>(&i);
        all_round_trip::<Bincode2>(&i);
        all_round_trip::<Bitcode>(&i);
        all_round_trip::<Rmp>(&i);
        assert!(round_trip::<Tutti, _>(&i.pod_floats).is_some());
    }

    #[test]
    fn tutti_survives_hostile_input() {
        let i = inputs();
        let mut rng = Rng::new(2);
        for h in [
            attack::<Tutti, _>(&i.shape, 500, &mut rng),
            attack::<TuttiFrame, _>(&i.named, 500, &mut rng),
        ] {
            assert_eq!((h.inputs, h.panics), (500, 0));
            assert!(h.accepted < h.inputs);
        }
    }

    #[test]
    fn pod_and_serde_floats_have_the_same_payload_size() {
        let i = inputs();
        let serde = round_trip::<Tutti, _>(&i.floats).unwrap();
        let pod = round_trip::<Tutti, _>(&i.pod_floats).unwrap();
        // A varint length (of elements for serde, of bytes for the pod path), then the
        // same little-endian bytes.
        assert_eq!((serde.len(), pod.len()), (801, 802));
        if cfg!(target_endian = "little") {
            assert_eq!(serde[1..], pod[2..]);
        }
    }
}
