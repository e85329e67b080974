//! `--impl graph`: one actor per patch; ghost layers travel through ports
//! (Miguel 2019, ch. 7, Pond). A patch steps as soon as its four neighbours'
//! boundaries for that step have arrived: no global synchronization. The
//! patches fire under Pond's rule (`Firing::AllReady`), evaluated where the
//! halos arrive, so a patch is woken once per step, not once per halo.

use std::sync::{Arc, Mutex};

use tutti::graph::{
    ActorGraph, Firing, InPort, OutPort, Placement, PortActor, Ports, Scheme, Status,
};
use tutti::msg::codec::PodVec;
use tutti::world::Location;

use super::execute::LocalResult;
use super::solver::{Patch, Side};
use super::Config;

type Halo = PodVec<f64>;

/// A patch's ports, per side (`Side::ALL` order), if it has a neighbour there.
pub type SidePorts = [Option<(InPort<Halo>, OutPort<Halo>)>; 4];

/// The graph: a `px × py` grid of patch actors, each joined to its neighbours
/// in both directions by channels of capacity 2 (a patch may be one step
/// ahead of its neighbour).
pub struct PatchGraph {
    pub graph: ActorGraph,
    /// Per patch, per side (`Side::ALL` order): the input and output port if
    /// there is a neighbour on that side.
    pub ports: Vec<SidePorts>,
}

pub fn build(cfg: &Config, scheme: Scheme) -> Result<PatchGraph, String> {
    let mut b = ActorGraph::builder();
    b.scheme(scheme).map_err(|e| e.to_string())?;
    let n = cfg.px * cfg.py;
    let mut ports: Vec<SidePorts> = Vec::with_capacity(n);
    for p in 0..n {
        let a = b
            .actor_firing(
                &format!("patch{}_{}", p % cfg.px, p / cfg.px),
                Firing::AllReady,
            )
            .map_err(|e| e.to_string())?;
        let mut sides = [None; 4];
        for (k, s) in Side::ALL.iter().enumerate() {
            if cfg.neighbour(p, *s).is_some() {
                let i = b
                    .input::<Halo>(a, &format!("in_{s:?}"))
                    .map_err(|e| e.to_string())?;
                let o = b
                    .output::<Halo>(a, &format!("out_{s:?}"))
                    .map_err(|e| e.to_string())?;
                sides[k] = Some((i, o));
            }
        }
        ports.push(sides);
    }
    for p in 0..n {
        for (k, s) in Side::ALL.iter().enumerate() {
            if let Some(q) = cfg.neighbour(p, *s) {
                let back = Side::ALL
                    .iter()
                    .position(|t| *t == s.opposite())
                    .unwrap_or(0);
                let (Some((_, out)), Some((inp, _))) = (ports[p][k], ports[q][back]) else {
                    return Err("a neighbour without the matching port".into());
                };
                b.connect(out, inp, 2).map_err(|e| e.to_string())?;
            }
        }
    }
    Ok(PatchGraph {
        graph: b.build(),
        ports,
    })
}

/// The actor of one patch.
struct PatchActor {
    id: usize,
    patch: Patch,
    ports: SidePorts,
    cfg: Arc<Config>,
    step: u64,
    scratch: Vec<f64>,
    out: Arc<Mutex<LocalResult>>,
}

impl PortActor for PatchActor {
    /// Step 0's boundaries, before anything arrived.
    fn start(&mut self, p: &mut Ports<'_>) -> Status {
        self.send_boundaries(p)
    }

    /// Pond's rule (`Firing::AllReady`): every neighbour's boundary for this
    /// step has arrived and every neighbour has room for the next one.
    fn act(&mut self, p: &mut Ports<'_>) -> Status {
        for (k, s) in Side::ALL.iter().enumerate() {
            match self.ports[k] {
                Some((i, _)) => {
                    let Some(halo) = p.recv(i) else {
                        return self.fail("a neighbour ended early");
                    };
                    if !self.patch.set_ghosts(*s, &halo.0) {
                        return self.fail("a halo of the wrong length");
                    }
                }
                None => self.patch.set_wall(*s),
            }
        }
        match self
            .patch
            .step(self.cfg.dt, self.cfg.grid.dx, self.cfg.grid.dy)
        {
            Some(speed) => {
                if speed * self.cfg.dt > self.cfg.cfl_limit() {
                    self.out.lock().unwrap_or_else(|e| e.into_inner()).cfl_ok = false;
                }
            }
            None => return self.fail("a cell ran dry"),
        }
        self.step += 1;
        for (k, all) in self.cfg.captures_at(self.step) {
            let data = self.patch.capture(all);
            self.out
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .snapshots
                .push((k, self.id, data));
        }
        self.send_boundaries(p)
    }
}

impl PatchActor {
    /// Sends this step's boundaries (the firing rule left room), or ends
    /// after the last step.
    fn send_boundaries(&mut self, p: &mut Ports<'_>) -> Status {
        if self.step == self.cfg.steps {
            let mut out = self.out.lock().unwrap_or_else(|e| e.into_inner());
            out.patches.push((self.id, self.patch.clone()));
            return Status::Done;
        }
        for (k, s) in Side::ALL.iter().enumerate() {
            if let Some((_, o)) = self.ports[k] {
                self.patch.boundary(*s, &mut self.scratch);
                if p.send(o, PodVec(self.scratch.clone())).is_err() {
                    return self.fail("a neighbour ended early or had no room");
                }
            }
        }
        Status::Continue
    }
    fn fail(&mut self, why: &str) -> Status {
        let mut out = self.out.lock().unwrap_or_else(|e| e.into_inner());
        out.errors.push(format!("patch {}: {why}", self.id));
        Status::Done
    }
}

/// Runs the graph on this location; returns its patches after the last step.
pub async fn run(
    loc: &Arc<Location>,
    cfg: &Arc<Config>,
    pg: &PatchGraph,
    placement: &Placement,
) -> LocalResult {
    let out = Arc::new(Mutex::new(LocalResult::new()));
    let o2 = Arc::clone(&out);
    let cfg2 = Arc::clone(cfg);
    let ports = pg.ports.clone();
    let r = pg
        .graph
        .run(loc, placement, move |id| -> Box<dyn PortActor> {
            let p = id.index();
            Box::new(PatchActor {
                id: p,
                patch: cfg2.initial_patch(p),
                ports: ports[p],
                cfg: Arc::clone(&cfg2),
                step: 0,
                scratch: Vec::new(),
                out: Arc::clone(&o2),
            })
        })
        .await;
    let mut res = std::mem::replace(
        &mut *out.lock().unwrap_or_else(|e| e.into_inner()),
        LocalResult::new(),
    );
    match r {
        Ok(report) => {
            res.waves = report.waves;
            res.wakeups = report.wakeups;
        }
        Err(e) => res.errors.push(format!("graph run: {e}")),
    }
    res
}
