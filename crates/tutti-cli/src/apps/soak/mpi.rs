//! `tutti soak mpi`: runs an `mpirun -n P` job (4 ranks) again and again
//! for `--seconds`; in each, the ranks call each other's objects and enter
//! an RMI fence, and one rank (chosen at random) dies in the middle of it —
//! alternately by `abort()` (a crash, SIGABRT) and by SIGKILL. Open MPI takes
//! the job down when one of its processes dies (the MPI standard promises
//! nothing more without fault-tolerance extensions), so what the soak checks
//! is what a user sees: the job ends, every other rank with it, within
//! [`JOB_BOUND`], with a nonzero status and a message naming the dead rank.
//! A job still running after the bound is a hang (killed, and the soak
//! fails).
//!
//! Needs a build with the `mpi` feature and `mpirun` on the `PATH`.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use clap::Args;
use serde::{Deserialize, Serialize};
use tutti::msg::{Dispatch, Handler, Message, Object, RegistryError, Remote};

use crate::report::{Report, Stats};
use crate::rng::Rng;

/// How long a job may take to end once a rank died.
pub const JOB_BOUND: Duration = Duration::from_secs(30);

/// Arguments of `tutti soak mpi`.
#[derive(Args, Debug)]
pub struct MpiSoakArgs {
    /// How long to run, in seconds (jobs keep starting until then).
    #[arg(long, default_value_t = 120.0, value_parser = crate::parse_seconds)]
    pub seconds: f64,
    /// Ranks per job.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(2..=64))]
    pub processes: u32,
    /// Seed of the victims.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Internal: the role of a child process (`rank`).
    #[arg(long, hide = true)]
    pub role: Option<String>,
    /// Internal: the rank that dies.
    #[arg(long, hide = true)]
    pub victim: Option<usize>,
    /// Internal: how it dies (`abort` or `kill`).
    #[arg(long, hide = true)]
    pub how: Option<String>,
    /// Internal: where rank 0 notes that the fence started.
    #[arg(long, hide = true)]
    pub out: Option<PathBuf>,
}

/// A call between the ranks before the fence.
#[derive(Serialize, Deserialize)]
struct Note;
impl Message for Note {
    type Reply = ();
}
impl Remote for Note {
    const NAME: &'static str = "tutti.soak.mpi.Note";
}

#[derive(Default)]
struct Counter(u64);
impl Object for Counter {
    type Context = tutti::rmi::Rmi;
    fn remote(table: &mut Dispatch<Self>) -> Result<(), RegistryError> {
        table.register::<Note>()?;
        Ok(())
    }
}
impl Handler<Note> for Counter {
    async fn handle(&mut self, _: Note, _: &mut tutti::rmi::Rmi) {
        self.0 += 1;
    }
}

/// Runs the soak (or, with `--role rank`, one rank of a job).
pub fn run(a: &MpiSoakArgs) -> Result<Report, String> {
    match a.role.as_deref() {
        Some("rank") => rank(a),
        Some(other) => Err(format!("unknown role {other:?}")),
        None => supervise(a),
    }
}

/// One rank: a few fences with calls in flight; the victim dies while the
/// others wait in the last one.
fn rank(a: &MpiSoakArgs) -> Result<Report, String> {
    let victim = a.victim.ok_or("a rank needs --victim")?;
    let how = a.how.clone().ok_or("a rank needs --how")?;
    tutti::msg::register::<Note>().map_err(|e| e.to_string())?;
    let world = tutti::world::World::builder()
        .locations(1)
        .build()
        .map_err(|e| format!("cannot start the world: {e}"))?;
    let out = a.out.clone();
    tutti::rmi::run(&world, |loc| {
        let how = how.clone();
        let out = out.clone();
        async move {
            let h = loc.register(Counter::default()).await.unwrap();
            let me = loc.id();
            let n = loc.count();
            for round in 0..3 {
                for to in (0..n).filter(|&t| t != me) {
                    loc.async_rmi(to, &h, Note).await;
                }
                if round == 2 {
                    if me == 0 {
                        if let Some(o) = &out {
                            let _ = std::fs::write(o, b"fence");
                        }
                    }
                    if me == victim {
                        // The others are in the fence (or entering it).
                        tutti::sleep(Duration::from_millis(200)).await;
                        eprintln!("rank {me}: dying in the middle of a fence ({how})");
                        if how == "kill" {
                            let _ = Command::new("kill")
                                .args(["-9", &std::process::id().to_string()])
                                .status();
                            std::thread::sleep(Duration::from_secs(60));
                        }
                        std::process::abort();
                    }
                }
                loc.fence().await;
            }
            unreachable!("a fence completed although rank {victim} died in it");
        }
    });
    Ok(Report::new("soak mpi rank"))
}

fn supervise(a: &MpiSoakArgs) -> Result<Report, String> {
    if !cfg!(feature = "mpi") {
        return Err("tutti soak mpi needs a tutti built with the `mpi` feature \
             (cargo build --release -p tutti-cli --features mpi)"
            .into());
    }
    let exe = std::env::current_exe().map_err(|e| format!("own path: {e}"))?;
    let p = a.processes as usize;
    let mut rng = Rng::new(a.seed);
    let started = Instant::now();
    let run_for = Duration::from_secs_f64(a.seconds);
    let mut jobs = 0u64;
    let mut named = 0u64;
    let mut times = Vec::new();
    let mut failures: Vec<String> = Vec::new();
    let root = is_root();
    let fence_file = std::env::temp_dir().join(format!("tutti-soak-mpi-{}", std::process::id()));
    while jobs == 0 || started.elapsed() < run_for {
        let victim = rng.below(p as u64) as usize;
        let how = if jobs.is_multiple_of(2) {
            "abort"
        } else {
            "kill"
        };
        let _ = std::fs::remove_file(&fence_file);
        let mut c = Command::new("mpirun");
        c.arg("--oversubscribe");
        if root {
            c.arg("--allow-run-as-root");
        }
        let log =
            std::env::temp_dir().join(format!("tutti-soak-mpi-{}-{jobs}.log", std::process::id()));
        let file = std::fs::File::create(&log).map_err(|e| format!("{}: {e}", log.display()))?;
        c.args(["-n", &p.to_string()])
            .arg(&exe)
            .args(["soak", "mpi", "--role", "rank", "--victim"])
            .arg(victim.to_string())
            .arg("--how")
            .arg(how)
            .arg("--out")
            .arg(&fence_file)
            .stdout(file.try_clone().map_err(|e| e.to_string())?)
            .stderr(file)
            .stdin(Stdio::null());
        let mut child = c.spawn().map_err(|e| format!("cannot start mpirun: {e}"))?;
        jobs += 1;
        let t0 = Instant::now();
        let mut died_at = None;
        let status = loop {
            if died_at.is_none() && fence_file.exists() {
                died_at = Some(Instant::now());
            }
            match child.try_wait() {
                Ok(Some(st)) => break Some(st),
                Ok(None) if t0.elapsed() > JOB_BOUND * 2 => {
                    let _ = child.kill();
                    let _ = child.wait();
                    break None;
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(10)),
                Err(e) => return Err(format!("mpirun: {e}")),
            }
        };
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        let _ = std::fs::remove_file(&log);
        let end = died_at.map(|t| t.elapsed());
        let names = [
            format!("rank {victim} with PID"),
            format!("on rank {victim} "),
            format!("rank {victim}: dying"),
        ];
        let named_by_mpi = text.contains(&names[0]) || text.contains(&names[1]);
        match (status, end) {
            (None, _) => failures.push(format!(
                "job {jobs}: still running {} s after start (rank {victim} died by {how}): a hang\n{text}",
                (JOB_BOUND * 2).as_secs()
            )),
            (Some(st), _) if st.success() => failures.push(format!(
                "job {jobs}: ended successfully although rank {victim} died ({how})\n{text}"
            )),
            (Some(_), None) => failures.push(format!(
                "job {jobs}: ended before its fence (rank {victim}, {how})\n{text}"
            )),
            (Some(_), Some(t)) if t > JOB_BOUND => failures.push(format!(
                "job {jobs}: took {:.1} s to end after rank {victim} died ({how})",
                t.as_secs_f64()
            )),
            (Some(_), Some(t)) => {
                times.push(t.as_secs_f64());
                if named_by_mpi {
                    named += 1;
                } else {
                    failures.push(format!(
                        "job {jobs}: no message names rank {victim} as the one that died \
                         ({how})\n{text}"
                    ));
                }
            }
        }
        if !failures.is_empty() {
            break;
        }
    }
    let _ = std::fs::remove_file(&fence_file);
    let mut report = Report::new("soak mpi");
    report
        .param("seconds", a.seconds)
        .param("processes", p)
        .param("seed", a.seed);
    report.count("tutti", "jobs (one rank dies in a fence)", jobs, "jobs");
    report.count("tutti", "faults injected", jobs, "ranks");
    report.count("tutti", "jobs ended naming the dead rank", named, "jobs");
    if let Some(s) = Stats::of(&times) {
        report.result("tutti", "time from the fence to the job's end", s, "s");
    }
    for f in &failures {
        eprintln!("tutti soak mpi: {f}");
    }
    report.verify(failures.is_empty() && named == jobs);
    Ok(report)
}

/// Whether this process runs as root (mpirun then needs `--allow-run-as-root`).
fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status").is_ok_and(|s| {
        s.lines()
            .find(|l| l.starts_with("Uid:"))
            .and_then(|l| l.split_whitespace().nth(1))
            == Some("0")
    })
}
