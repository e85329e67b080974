//! The two monitors (Welch et al., CPA 2013, "Mutually Assured Destruction"): each waits
//! for a command and, while serving it, races the other monitor to finish.
//!
//! ```text
//! PROC monitor (VAL INT mode, CHAN INT command?, sensor?, CHAN REPORT report!,
//!               CHAN KILL killYou!, killMe?)
//!   WHILE TRUE
//!     PRI ALT
//!       command ? target  -- service requested
//!         service (mode, target, sensor?, report!, killYou!, killMe?)
//!       sensor ? x        -- accept and discard
//!         SKIP
//! ```
//!
//! `service` reads sensor data until its task is complete, listening first
//! (`PRI ALT`) for a kill from the other monitor:
//!
//! * **naive**: on a kill, `report ! she`; on completion `killYou ! kill`,
//!   then `report ! me`. If both complete at about the same time, both try to
//!   kill and neither listens: deadlock.
//! * **revised**: a kill is answered, `killYou ! ack` then `report ! she`; on
//!   completion `PAR (killYou ! kill, killMe ? ack|kill)` and
//!   `report ! me` (ack) or `report ! both` (kill). Every exchange is two-way,
//!   so it cannot deadlock.
//!
//! A monitor ends when its command channel closes (the controller is done).

use tutti::csp::{Alt, Enrollment, Par, RecvError, Rx, SendError, Tx};

use super::{Kill, Verdict};

/// What a monitor's sensor readings measure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Metres driven; the task is to drive a target distance.
    Move,
    /// Ground searched; the task is to cover a target area.
    Search,
}

/// A monitor's channel ends, as in the seed's `PROC monitor` header.
pub struct Ends {
    /// `command?`: the service's target.
    pub command: Rx<u64>,
    /// `sensor?`: readings, each adding to the progress.
    pub sensor: Rx<u64>,
    /// `report!`: the outcome of each service.
    pub report: Tx<Verdict>,
    /// `killYou!`: to the other monitor.
    pub kill_you: Tx<Kill>,
    /// `killMe?`: from the other monitor.
    pub kill_me: Rx<Kill>,
    /// The overlap hold of `--force-overlap`: both monitors sync on it between
    /// finding their task complete and killing, so that each kill window stays
    /// open until the other's is open too.
    pub overlap: Option<Enrollment>,
}

/// Why a monitor stopped serving: a channel ended under it. (Only the
/// controller ending the network does that.)
#[derive(Debug)]
pub struct Ended;

impl<T> From<SendError<T>> for Ended {
    fn from(_: SendError<T>) -> Ended {
        Ended
    }
}

impl From<RecvError> for Ended {
    fn from(_: RecvError) -> Ended {
        Ended
    }
}

/// `PROC monitor`: runs until the controller closes the command channel.
pub async fn monitor(mode: Mode, revised: bool, ends: Ends) {
    let Ends {
        command,
        sensor,
        report,
        kill_you,
        kill_me,
        mut overlap,
    } = ends;
    // PRI ALT: a command before sensor data.
    let mut alt = Alt::new().recv(&command).recv(&sensor);
    loop {
        let sel = alt.pri_select().await;
        let target = match sel.index() {
            0 => match sel.recv(&command) {
                Ok(target) => target,
                Err(_) => return, // the controller is done
            },
            _ => match sel.recv(&sensor) {
                Ok(_) => continue, // accept and discard
                Err(_) => return,
            },
        };
        let served = service(
            mode,
            revised,
            target,
            &sensor,
            &report,
            &kill_you,
            &kill_me,
            overlap.as_mut(),
        )
        .await;
        if served.is_err() {
            return;
        }
    }
}

/// `PROC service`: reads sensor data until the task is complete or the other
/// monitor kills this one.
#[allow(clippy::too_many_arguments)] // the seed's parameter list
async fn service(
    mode: Mode,
    revised: bool,
    target: u64,
    sensor: &Rx<u64>,
    report: &Tx<Verdict>,
    kill_you: &Tx<Kill>,
    kill_me: &Rx<Kill>,
    overlap: Option<&mut Enrollment>,
) -> Result<(), Ended> {
    let mut progress = 0u64;
    // PRI ALT: a kill before sensor data.
    let mut alt = Alt::new().recv(kill_me).recv(sensor);
    loop {
        let sel = alt.pri_select().await;
        if sel.index() == 0 {
            sel.recv(kill_me)?;
            if revised {
                kill_you.send(Kill::Ack).await?;
            }
            report.send(Verdict::She).await?;
            return Ok(());
        }
        let x = sel.recv(sensor)?;
        progress = update(mode, progress, x);
        if progress < target {
            continue;
        }
        // The task is complete: the kill window opens.
        if let Some(hold) = overlap {
            hold.sync().await;
        }
        if revised {
            let heard = kill_and_listen(kill_you, kill_me).await?;
            let verdict = match heard {
                Kill::Ack => Verdict::Me,
                Kill::Kill => Verdict::Both,
            };
            report.send(verdict).await?;
        } else {
            kill_you.send(Kill::Kill).await?;
            report.send(Verdict::Me).await?;
        }
        return Ok(());
    }
}

/// The local state update: both modes add the reading to their progress
/// (metres driven, area covered).
fn update(mode: Mode, progress: u64, x: u64) -> u64 {
    match mode {
        Mode::Move | Mode::Search => progress.saturating_add(x),
    }
}

/// The revised kill: `PAR (killYou ! kill, killMe ? CASE ack | kill)`, as a
/// `PAR` of two processes; returns what was heard.
async fn kill_and_listen(kill_you: &Tx<Kill>, kill_me: &Rx<Kill>) -> Result<Kill, Ended> {
    let (tx, rx) = (kill_you.clone(), kill_me.clone());
    let heard = std::sync::Arc::new(std::sync::Mutex::new(None));
    let sent = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (heard2, sent2) = (heard.clone(), sent.clone());
    let par = Par::new()
        .process("send kill", async move {
            let ok = tx.send(Kill::Kill).await.is_ok();
            sent2.store(ok, std::sync::atomic::Ordering::Relaxed);
        })
        .process("hear", async move {
            let got = rx.recv().await.ok();
            *heard2.lock().unwrap_or_else(|p| p.into_inner()) = got;
        })
        .run();
    par.await.map_err(|_| Ended)?;
    let heard = heard.lock().unwrap_or_else(|p| p.into_inner()).take();
    match heard {
        Some(k) if sent.load(std::sync::atomic::Ordering::Relaxed) => Ok(k),
        _ => Err(Ended),
    }
}
