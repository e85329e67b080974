//! The controller: issues a command to both monitors, feeds them randomized
//! sensor data at randomized times until the trial is decided, collects both
//! reports and judges them.
//!
//! The seed's environment (commands in, sensor data in, reports out) is one
//! process here. It never sends to a monitor it knows to be finished with the
//! trial, and it collects the reports with a `PRI ALT` once it has nothing
//! left to feed; the report channels hold one report each (the seed's
//! environment is always ready to take a report), so that a monitor that has
//! reported is back in its loop, accepting (and discarding) sensor data.
//!
//! With `--force-overlap` the controller brings both monitors just short of
//! their targets, then hands the completing reading to the move monitor and
//! then to the search monitor; the monitors' overlap hold keeps the first one
//! from killing until the second has its reading too.

use std::sync::{Arc, Mutex};

use tutti::csp::{Alt, Rx, Tx};

use super::{Tally, Verdict};
use crate::rng::Rng;

/// The largest sensor reading; readings are uniform in `1..=MAX_READING`.
const MAX_READING: u64 = 10;

/// How the controller runs the trials.
#[derive(Clone, Copy, Debug)]
pub struct Config {
    /// The revised monitors (they may report `both`).
    pub revised: bool,
    /// Trials to run.
    pub trials: u64,
    /// Make both kill windows coincide in every trial.
    pub force_overlap: bool,
    /// Seed of the readings, targets and delays.
    pub seed: u64,
    /// Average sensor readings per service.
    pub readings: u64,
    /// Largest random pause before a reading, in spin-loop iterations.
    pub jitter: u64,
}

/// The controller's channel ends; index 0 is the move monitor, 1 the search
/// monitor.
pub struct Ends {
    /// Commands (targets) to the monitors.
    pub commands: [Tx<u64>; 2],
    /// Sensor data to the monitors.
    pub sensors: [Tx<u64>; 2],
    /// The monitors' reports.
    pub reports: [Rx<Verdict>; 2],
}

/// A service's target: uniform, so that a service takes `readings` readings
/// on average.
fn target(rng: &mut Rng, readings: u64) -> u64 {
    1 + rng.below(readings.max(1) * (MAX_READING + 1))
}

/// A random pause: a short spin, now and then a yield to the scheduler.
async fn pause(rng: &mut Rng, jitter: u64) {
    if jitter == 0 {
        return;
    }
    if rng.below(8) == 0 {
        tutti::runtime::yield_now().await;
    }
    for _ in 0..rng.below(jitter) {
        std::hint::spin_loop();
    }
}

/// Judges one trial from the two reports and which monitors were fed up to
/// their target.
pub fn judge(verdicts: [Verdict; 2], complete: [bool; 2], revised: bool) -> Option<Winner> {
    match verdicts {
        [Verdict::Me, Verdict::She] if complete[0] => Some(Winner::Move),
        [Verdict::She, Verdict::Me] if complete[1] => Some(Winner::Search),
        [Verdict::Both, Verdict::Both] if revised && complete[0] && complete[1] => {
            Some(Winner::Both)
        }
        _ => None,
    }
}

/// Who finished a trial.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Winner {
    /// The move monitor killed the search monitor.
    Move,
    /// The search monitor killed the move monitor.
    Search,
    /// Both finished and killed each other (revised only).
    Both,
}

/// The controller process. Records every finished trial in `tally`; ends
/// (closing the monitors' command channels) after the last trial.
pub async fn controller(cfg: Config, ends: Ends, tally: Arc<Mutex<Tally>>) {
    let Ends {
        commands,
        sensors,
        reports,
    } = ends;
    let mut rng = Rng::new(cfg.seed);
    let mut alt = Alt::new().recv(&reports[0]).recv(&reports[1]);
    for _ in 0..cfg.trials {
        let targets = [
            target(&mut rng, cfg.readings),
            target(&mut rng, cfg.readings),
        ];
        for (command, &t) in commands.iter().zip(&targets) {
            if command.send(t).await.is_err() {
                return;
            }
        }
        let mut fed = [0u64; 2];
        let mut verdicts: [Option<Verdict>; 2] = [None; 2];
        if cfg.force_overlap {
            // Just short of both targets, in random order ...
            while let Some(k) = pick(&mut rng, |k| fed[k] + 1 < targets[k]) {
                pause(&mut rng, cfg.jitter).await;
                let x = (1 + rng.below(MAX_READING)).min(targets[k] - 1 - fed[k]);
                if sensors[k].send(x).await.is_err() {
                    return;
                }
                fed[k] += x;
            }
            // ... then the completing readings: move, then search.
            for k in 0..2 {
                if sensors[k].send(targets[k] - fed[k]).await.is_err() {
                    return;
                }
                fed[k] = targets[k];
            }
        } else {
            loop {
                for k in 0..2 {
                    if verdicts[k].is_none() {
                        verdicts[k] = reports[k].try_recv().ok();
                    }
                }
                let Some(k) = pick(&mut rng, |k| verdicts[k].is_none() && fed[k] < targets[k])
                else {
                    break;
                };
                pause(&mut rng, cfg.jitter).await;
                let x = 1 + rng.below(MAX_READING);
                if sensors[k].send(x).await.is_err() {
                    return;
                }
                fed[k] += x;
            }
        }
        // PRI ALT over the reports still to come.
        while verdicts.iter().any(Option::is_none) {
            alt.set_when(0, verdicts[0].is_none());
            alt.set_when(1, verdicts[1].is_none());
            let sel = alt.pri_select().await;
            let k = sel.index();
            match sel.recv(&reports[k]) {
                Ok(v) => verdicts[k] = Some(v),
                Err(_) => return,
            }
        }
        let verdicts = verdicts.map(|v| v.unwrap_or(Verdict::She));
        let complete = [fed[0] >= targets[0], fed[1] >= targets[1]];
        let winner = judge(verdicts, complete, cfg.revised);
        tally
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .record(winner);
    }
}

/// A random monitor among those `open` says may be fed, if any.
fn pick(rng: &mut Rng, open: impl Fn(usize) -> bool) -> Option<usize> {
    match (open(0), open(1)) {
        (true, true) => Some(rng.below(2) as usize),
        (true, false) => Some(0),
        (false, true) => Some(1),
        (false, false) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn judging() {
        use Verdict::*;
        assert_eq!(judge([Me, She], [true, false], false), Some(Winner::Move));
        assert_eq!(judge([Me, She], [true, true], false), Some(Winner::Move));
        assert_eq!(judge([She, Me], [true, true], true), Some(Winner::Search));
        assert_eq!(judge([Both, Both], [true, true], true), Some(Winner::Both));
        // A monitor cannot finish a task it was not fed to the end of ...
        assert_eq!(judge([Me, She], [false, true], false), None);
        // ... nor can both win, or both lose, or the naive ones report `both`.
        assert_eq!(judge([Me, Me], [true, true], true), None);
        assert_eq!(judge([She, She], [true, true], true), None);
        assert_eq!(judge([Both, Both], [true, true], false), None);
        assert_eq!(judge([Both, She], [true, true], true), None);
    }

    #[test]
    fn targets_average_the_readings() {
        let mut rng = Rng::new(5);
        let n = 20_000;
        let mean = (0..n).map(|_| target(&mut rng, 8)).sum::<u64>() as f64 / n as f64;
        // Readings average (1 + MAX_READING) / 2, so 8 readings ≈ 44.
        assert!((40.0..48.0).contains(&mean), "{mean}");
        assert!((0..1000).all(|_| target(&mut rng, 1) >= 1));
    }
}
