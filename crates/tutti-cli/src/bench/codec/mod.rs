//! `tutti bench codec`: the serde formats that could carry tutti's messages across a
//! process boundary, side by side, and tutti's codec (the chosen format behind
//! `tutti::msg`, with its plain-old-data fast path).
//!
//! For each format and each representative message (see [`messages`]) it measures the
//! time to append an encoding to a reused buffer, the time to decode an owned value,
//! and the encoded size; then it feeds each decoder hostile input — random bytes and
//! valid encodings with a few bytes overwritten, inserted or cut — and counts panics
//! (caught) and inputs accepted. Every decoded value is checked against the original.
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

use crate::measure::{repeat, Measurement, Plan, Progress, Run, RunOpts};
use crate::report::{Report, Stats};
use crate::rng::Rng;
use formats::{Bincode1, Bincode2, Bitcode, Format, Postcard, Rmp, Tutti, TuttiFrame};
use messages::{Floats, Named, PodFloats, Shape, Small};

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

/// Wall time a measured run aims at: long enough to dwarf the clock, short enough
/// that the whole comparison stays within a minute.
const RUN_TARGET: Duration = Duration::from_millis(10);

/// The representative messages, built once from the seed.
struct Inputs {
    small: Small,
    named: Named,
    floats: Floats,
    pod_floats: PodFloats,
    shape: Shape,
}

/// What one format did with one message.
#[derive(Default)]
struct Figures {
    /// Encoded size in bytes.
    size: usize,
    /// Nanoseconds per encode, per run.
    encode: Vec<f64>,
    /// Nanoseconds per decode, per run.
    decode: Vec<f64>,
    /// Round trips and decoded values matched the original.
    ok: bool,
}

/// What one decoder did with hostile input.
#[derive(Default, Clone, Copy)]
struct Hostile {
    inputs: u64,
    panics: u64,
    accepted: u64,
    nanos: f64,
}

/// Times `op` over `iters` iterations per run; nanoseconds per iteration, per run.
fn time_per_op(
    plan: Plan,
    progress: &Progress,
    iters: u64,
    mut op: impl FnMut() -> bool,
) -> (Vec<f64>, bool) {
    let m: Measurement = repeat(plan, progress, || {
        let start = Instant::now();
        let mut ok = true;
        for _ in 0..iters {
            ok &= op();
        }
        Run {
            elapsed: start.elapsed(),
            ok,
        }
    });
    (m.map(|s| s * 1e9 / iters as f64), m.ok)
}

/// Iterations of `op` that take about [`RUN_TARGET`].
fn calibrate(mut op: impl FnMut() -> bool) -> u64 {
    let mut iters = 1u64;
    loop {
        let start = Instant::now();
        for _ in 0..iters {
            black_box(op());
        }
        let t = start.elapsed();
        if t >= RUN_TARGET / 8 || iters >= 1 << 24 {
            let per = t.as_secs_f64() / iters as f64;
            return ((RUN_TARGET.as_secs_f64() / per.max(1e-10)) as u64).clamp(1, 1 << 26);
        }
        iters *= 2;
    }
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

/// Measures format `F` on `value`.
fn measure<F: Format, T>(plan: Plan, progress: &Progress, value: &T) -> Figures
where
    T: Serialize + DeserializeOwned + PartialEq,
{
    let Some(encoded) = round_trip::<F, T>(value) else {
        return Figures::default();
    };
    let mut buf = Vec::new();

    let mut encode = || {
        buf.clear();
        let ok = F::encode(black_box(value), &mut buf).is_ok();
        black_box(&buf);
        ok
    };
    let iters = calibrate(&mut encode);
    let (enc, enc_ok) = time_per_op(plan, progress, iters, &mut encode);

    let mut decode = || F::decode::<T>(black_box(&encoded)).map(black_box).is_ok();
    let iters = calibrate(&mut decode);
    let (dec, dec_ok) = time_per_op(plan, progress, iters, &mut decode);

    Figures {
        size: encoded.len(),
        encode: enc,
        decode: dec,
        ok: enc_ok && dec_ok && buf == encoded,
    }
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

/// Every measurement of one format.
struct FormatFigures {
    name: &'static str,
    small: Figures,
    named: Figures,
    floats: Figures,
    shape: Figures,
    hostile: Hostile,
}

fn measure_format<F: Format>(
    plan: Plan,
    progress: &Progress,
    inputs: &Inputs,
    hostile: u64,
    seed: u64,
) -> FormatFigures {
    progress.stage(F::NAME);
    let mut rng = Rng::stream(seed, 1);
    let mut h = Hostile::default();
    for one in [
        attack::<F, _>(&inputs.small, hostile, &mut rng),
        attack::<F, _>(&inputs.named, hostile, &mut rng),
        attack::<F, _>(&inputs.floats, hostile, &mut rng),
        attack::<F, _>(&inputs.shape, hostile, &mut rng),
    ] {
        h.inputs += one.inputs;
        h.panics += one.panics;
        h.accepted += one.accepted;
        h.nanos += one.nanos;
    }
    FormatFigures {
        name: F::NAME,
        small: measure::<F, _>(plan, progress, &inputs.small),
        named: measure::<F, _>(plan, progress, &inputs.named),
        floats: measure::<F, _>(plan, progress, &inputs.floats),
        shape: measure::<F, _>(plan, progress, &inputs.shape),
        hostile: h,
    }
}

fn median(v: &[f64]) -> f64 {
    crate::report::median(v).unwrap_or(f64::NAN)
}

fn record(report: &mut Report, name: &str, message: &str, f: &Figures) {
    report.verify(f.ok);
    if let Some(s) = Stats::of(&f.encode) {
        report.result(name, &format!("{message}_encode"), s, "ns");
    }
    if let Some(s) = Stats::of(&f.decode) {
        report.result(name, &format!("{message}_decode"), s, "ns");
    }
    report.result(
        name,
        &format!("{message}_size"),
        Stats::single(f.size as f64),
        "bytes",
    );
}

/// Runs `tutti bench codec`.
pub fn run(args: &CodecArgs) -> Result<Report, String> {
    let plan = args.run.plan(5);
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

    // 7 formats x 4 messages x 2 timings, plus the pod path's 2.
    let progress = Progress::new((7 * 4 * 2 + 2) * plan.total(), args.json);
    let previous_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let all = [
        measure_format::<Tutti>(plan, &progress, &inputs, args.hostile, args.seed),
        measure_format::<TuttiFrame>(plan, &progress, &inputs, args.hostile, args.seed),
        measure_format::<Postcard>(plan, &progress, &inputs, args.hostile, args.seed),
        measure_format::<Bincode1>(plan, &progress, &inputs, args.hostile, args.seed),
        measure_format::<Bincode2>(plan, &progress, &inputs, args.hostile, args.seed),
        measure_format::<Bitcode>(plan, &progress, &inputs, args.hostile, args.seed),
        measure_format::<Rmp>(plan, &progress, &inputs, args.hostile, args.seed),
    ];
    progress.stage("tutti pod");
    let pod = measure::<Tutti, _>(plan, &progress, &inputs.pod_floats);
    std::panic::set_hook(previous_hook);
    progress.finish();

    for f in &all {
        record(&mut report, f.name, "small", &f.small);
        record(&mut report, f.name, "named", &f.named);
        record(&mut report, f.name, "floats", &f.floats);
        record(&mut report, f.name, "shape", &f.shape);
    }
    record(&mut report, "tutti-pod", "floats", &pod);
    for f in &all {
        let h = f.hostile;
        report.result(
            f.name,
            "hostile_panics",
            Stats::single(h.panics as f64),
            "inputs",
        );
        report.result(
            f.name,
            "hostile_accepted",
            Stats::single(h.accepted as f64),
            "inputs",
        );
        report.result(
            f.name,
            "hostile_decode",
            Stats::single(h.nanos / h.inputs.max(1) as f64),
            "ns/input",
        );
        // tutti's decoders must never panic.
        report.verify(h.panics == 0 || !f.name.starts_with("tutti"));
    }

    let tutti = &all[0];
    for peer in &all[2..] {
        for (message, ours, theirs) in [
            ("small", &tutti.small, &peer.small),
            ("named", &tutti.named, &peer.named),
            ("floats", &tutti.floats, &peer.floats),
            ("shape", &tutti.shape, &peer.shape),
        ] {
            let t = |f: &Figures| median(&f.encode) + median(&f.decode);
            report.ratio(
                &format!("time_tutti_over_{}_{message}", peer.name),
                t(ours) / t(theirs),
            );
            report.ratio(
                &format!("size_tutti_over_{}_{message}", peer.name),
                ours.size as f64 / theirs.size as f64,
            );
        }
    }
    let t = |f: &Figures| median(&f.encode) + median(&f.decode);
    report.ratio(
        "time_tutti_pod_over_tutti_floats",
        t(&pod) / t(&tutti.floats),
    );
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
