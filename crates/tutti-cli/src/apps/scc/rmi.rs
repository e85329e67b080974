//! Strongly connected components with fine-grain RMI (Saunders 2003 §V.D, after
//! McLendon, Hendrickson, Plimpton and Rauchwerger): trim, pivot and mark
//! rounds over a block-distributed graph, one `async_rmi` per edge
//! operation, `fence` as the termination detection of every cascade.
//!
//! Every live vertex has a *colour*; each colour class is a union of whole
//! components. A round:
//!
//! 1. **count** — for every live vertex, one RMI along each of its edges
//!    tells the other end "a live neighbour of colour c"; each vertex counts
//!    its live same-colour in- and out-neighbours. Fence.
//! 2. **trim** — a vertex without live same-colour in- or out-neighbours is a
//!    component by itself: it is removed and sends one RMI along each edge to
//!    decrement the other end's count, which may remove that vertex in turn
//!    (the cascade runs inside the handlers). Fence.
//! 3. **pivot** — each colour class elects one live vertex, the one with the
//!    largest pseudo-random key of the round: every location proposes its
//!    best vertex per colour to the colour's host location (one RMI per
//!    colour), then the hosts tell the winners. Fence.
//! 4. **mark** — from each pivot, forward marks follow out-edges and backward
//!    marks in-edges, one RMI per edge, within the pivot's colour. Fence.
//!    Vertices marked both ways form the pivot's component and are removed;
//!    the others take a new colour from (colour, forward, backward), which
//!    splits the class into parts that are again unions of components.
//!
//! Rounds repeat until no vertex is live. Two classes that happen to get the
//! same colour stay correct (their union is still a union of components),
//! they only get one pivot between them.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use serde::{Deserialize, Serialize};
use tutti::msg::{Dispatch, Handler, Message, Object, RegistryError, Remote};
use tutti::rmi::{self, Handle, Rmi};

use super::graph::Graph;
use crate::rng::mix64;

/// Which count a message is about: the in-neighbours' or the out-neighbours'.
const IN: u8 = 0;
const OUT: u8 = 1;

/// A location's share of the graph: the vertices `lo..lo + len` and their
/// state (indexed from `lo`).
struct Part {
    g: Arc<Graph>,
    per: usize,
    lo: usize,
    me: Option<Handle<Part>>,
    alive: Vec<bool>,
    color: Vec<u64>,
    label: Vec<u32>,
    count: [Vec<u32>; 2],
    /// Forward mark: the pivot's id + 1 (0: unmarked).
    fw: Vec<u32>,
    bw: Vec<bool>,
    /// Best proposal per colour hosted here: (key, vertex).
    best: HashMap<u64, (u64, u32)>,
    trimmed: u64,
}

impl Part {
    fn owner(&self, v: u32) -> usize {
        v as usize / self.per
    }

    fn me(&self) -> Handle<Part> {
        match self.me {
            Some(h) => h,
            None => unreachable!("the handle is set right after registration"),
        }
    }

    /// Removes live vertex `v` (local index `i`) as a component of its own and
    /// tells its neighbours.
    async fn trim(&mut self, i: usize, ctx: &Rmi) {
        let v = (self.lo + i) as u32;
        self.alive[i] = false;
        self.label[i] = v;
        self.trimmed += 1;
        let color = self.color[i];
        send_trims(ctx, &self.g, self.per, self.me(), v, color).await;
    }
}

/// The decrements a removed vertex `v` sends along its edges.
async fn send_trims(ctx: &Rmi, g: &Graph, per: usize, h: Handle<Part>, v: u32, color: u64) {
    for &w in g.out(v as usize) {
        let m = Trim {
            v: w,
            color,
            dir: IN,
        };
        ctx.async_rmi(w as usize / per, &h, m).await;
    }
    for &u in g.inn(v as usize) {
        let m = Trim {
            v: u,
            color,
            dir: OUT,
        };
        ctx.async_rmi(u as usize / per, &h, m).await;
    }
}

impl Object for Part {
    type Context = Rmi;
    fn remote(table: &mut Dispatch<Self>) -> Result<(), RegistryError> {
        table.register::<Count>()?;
        table.register::<Trim>()?;
        table.register::<Propose>()?;
        table.register::<Pivot>()?;
        table.register::<Mark>()?;
        Ok(())
    }
}

/// "`v` has a live neighbour of colour `color`" (on the `dir` side).
#[derive(Serialize, Deserialize)]
pub struct Count {
    v: u32,
    color: u64,
    dir: u8,
}

/// "`v` lost a live neighbour of colour `color`" (on the `dir` side).
#[derive(Serialize, Deserialize)]
pub struct Trim {
    v: u32,
    color: u64,
    dir: u8,
}

/// A location's candidate for pivot of colour `color`.
#[derive(Serialize, Deserialize)]
pub struct Propose {
    color: u64,
    key: u64,
    v: u32,
}

/// "`v` is the pivot of colour `color`".
#[derive(Serialize, Deserialize)]
pub struct Pivot {
    v: u32,
    color: u64,
}

/// "`v` is reachable from (`dir` = OUT: forward) or reaches (IN: backward)
/// the pivot `pivot` of colour `color`".
#[derive(Serialize, Deserialize)]
pub struct Mark {
    v: u32,
    color: u64,
    pivot: u32,
    dir: u8,
}

macro_rules! remote {
    ($($t:ident),*) => {$(
        impl Message for $t {
            type Reply = ();
        }
        impl Remote for $t {
            const NAME: &'static str = concat!("tutti-cli.scc.", stringify!($t));
        }
    )*};
}
remote!(Count, Trim, Propose, Pivot, Mark);

impl Handler<Count> for Part {
    async fn handle(&mut self, m: Count, _: &mut Rmi) {
        let i = m.v as usize - self.lo;
        if self.alive[i] && self.color[i] == m.color {
            self.count[usize::from(m.dir & 1)][i] += 1;
        }
    }
}

impl Handler<Trim> for Part {
    async fn handle(&mut self, m: Trim, ctx: &mut Rmi) {
        let i = m.v as usize - self.lo;
        if !self.alive[i] || self.color[i] != m.color {
            return;
        }
        let c = &mut self.count[usize::from(m.dir & 1)][i];
        *c = c.saturating_sub(1);
        if *c == 0 {
            self.trim(i, ctx).await;
        }
    }
}

impl Handler<Propose> for Part {
    async fn handle(&mut self, m: Propose, _: &mut Rmi) {
        let e = self.best.entry(m.color).or_insert((m.key, m.v));
        if (m.key, m.v) > *e {
            *e = (m.key, m.v);
        }
    }
}

impl Handler<Pivot> for Part {
    async fn handle(&mut self, m: Pivot, ctx: &mut Rmi) {
        for dir in [OUT, IN] {
            let mark = Mark {
                v: m.v,
                color: m.color,
                pivot: m.v,
                dir,
            };
            <Part as Handler<Mark>>::handle(self, mark, ctx).await;
        }
    }
}

impl Handler<Mark> for Part {
    async fn handle(&mut self, m: Mark, ctx: &mut Rmi) {
        let i = m.v as usize - self.lo;
        if !self.alive[i] || self.color[i] != m.color {
            return;
        }
        let g = Arc::clone(&self.g);
        let h = self.me();
        let next = if m.dir == OUT {
            if self.fw[i] != 0 {
                return;
            }
            self.fw[i] = m.pivot + 1;
            g.out(m.v as usize)
        } else {
            if self.bw[i] {
                return;
            }
            self.bw[i] = true;
            g.inn(m.v as usize)
        };
        for &w in next {
            let mark = Mark { v: w, ..m };
            ctx.async_rmi(self.owner(w), &h, mark).await;
        }
    }
}

/// What one location reports.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// Seconds from the start barrier to the end, the slowest location's.
    pub secs: f64,
    /// Rounds (trim, pivot, mark) until no vertex was left.
    pub rounds: u64,
    /// Vertices removed by trimming.
    pub trimmed: u64,
    /// Every vertex's component label (a vertex of the component).
    pub labels: Vec<u32>,
}

/// Element-wise wrapping sum.
fn add_words(mut a: Vec<u64>, b: Vec<u64>) -> Vec<u64> {
    for (x, y) in a.iter_mut().zip(b) {
        *x = x.wrapping_add(y);
    }
    a
}

/// Finds the components of `g` on `world`; `aggregation` overrides the
/// world's factor. Returns each local location's [`Outcome`] (all equal).
pub fn scc(
    world: &tutti::world::World,
    g: &Arc<Graph>,
    seed: u64,
    aggregation: Option<usize>,
) -> Vec<Outcome> {
    let g = Arc::clone(g);
    rmi::run(world, move |mut loc| {
        let g = Arc::clone(&g);
        async move {
            if let Some(f) = aggregation {
                loc.set_aggregation(f);
            }
            let (me, p, n) = (loc.id(), loc.count(), g.vertices());
            let per = n.div_ceil(p).max(1);
            let lo = (me * per).min(n);
            let len = ((me + 1) * per).min(n) - lo;
            let part = Part {
                g: Arc::clone(&g),
                per,
                lo,
                me: None,
                alive: vec![true; len],
                color: vec![0; len],
                label: vec![u32::MAX; len],
                count: [vec![0; len], vec![0; len]],
                fw: vec![0; len],
                bw: vec![false; len],
                best: HashMap::new(),
                trimmed: 0,
            };
            let h = match loc.register(part).await {
                Ok(h) => h,
                Err(e) => panic!("scc: {e}"),
            };
            loc.local(&h).me = Some(h);
            loc.barrier().await;
            let start = Instant::now();
            let mut rounds = 0u64;
            loop {
                // 1. count (from zero: see the end of the round)
                let (alive, color) = {
                    let part = loc.local(&h);
                    (part.alive.clone(), part.color.clone())
                };
                for i in (0..len).filter(|&i| alive[i]) {
                    let v = lo + i;
                    for &w in g.out(v) {
                        let m = Count {
                            v: w,
                            color: color[i],
                            dir: IN,
                        };
                        loc.async_rmi(w as usize / per, &h, m).await;
                    }
                    for &u in g.inn(v) {
                        let m = Count {
                            v: u,
                            color: color[i],
                            dir: OUT,
                        };
                        loc.async_rmi(u as usize / per, &h, m).await;
                    }
                }
                loc.fence().await;
                // 2. trim
                let dead: Vec<(u32, u64)> = {
                    let mut part = loc.local(&h);
                    let mut dead = Vec::new();
                    for i in 0..len {
                        if part.alive[i] && (part.count[0][i] == 0 || part.count[1][i] == 0) {
                            let v = (lo + i) as u32;
                            part.alive[i] = false;
                            part.label[i] = v;
                            part.trimmed += 1;
                            dead.push((v, part.color[i]));
                        }
                    }
                    dead
                };
                for (v, c) in dead {
                    send_trims(&loc, &g, per, h, v, c).await;
                }
                loc.fence().await;
                let live = loc.local(&h).alive.iter().filter(|&&a| a).count() as u64;
                if loc.world().all_reduce(live, |a, b| a + b).await == 0 {
                    break;
                }
                rounds += 1;
                // 3. pivot: propose, then the hosts name the winners.
                let round_key = mix64(seed ^ mix64(rounds));
                let proposals: Vec<Propose> = {
                    let part = loc.local(&h);
                    let mut best: HashMap<u64, (u64, u32)> = HashMap::new();
                    for i in (0..len).filter(|&i| part.alive[i]) {
                        let v = (lo + i) as u32;
                        let key = mix64(u64::from(v) ^ round_key);
                        let e = best.entry(part.color[i]).or_insert((key, v));
                        if (key, v) > *e {
                            *e = (key, v);
                        }
                    }
                    best.into_iter()
                        .map(|(color, (key, v))| Propose { color, key, v })
                        .collect()
                };
                for m in proposals {
                    let host = (mix64(m.color ^ round_key) % p as u64) as usize;
                    loc.async_rmi(host, &h, m).await;
                }
                loc.fence().await;
                let pivots: Vec<Pivot> = std::mem::take(&mut loc.local(&h).best)
                    .into_iter()
                    .map(|(color, (_, v))| Pivot { v, color })
                    .collect();
                for m in pivots {
                    loc.async_rmi(m.v as usize / per, &h, m).await;
                }
                // 4. mark (the cascades run inside the fence)
                loc.fence().await;
                // Split, and zero the counts for the next round, before anyone
                // sends a count: a fence returns on each location when it sees
                // quiescence, so another may already be in the next round while
                // this one is still inside the fence, executing its requests.
                {
                    let mut part = loc.local(&h);
                    part.count.iter_mut().for_each(|c| c.fill(0));
                    for i in 0..len {
                        if !part.alive[i] {
                            continue;
                        }
                        let (f, b) = (part.fw[i], part.bw[i]);
                        if f != 0 && b {
                            part.alive[i] = false;
                            part.label[i] = f - 1;
                        } else {
                            let class = u64::from(f != 0) * 2 + u64::from(b) + 1;
                            part.color[i] =
                                mix64(part.color[i].wrapping_mul(5).wrapping_add(class));
                        }
                        part.fw[i] = 0;
                        part.bw[i] = false;
                    }
                }
                loc.barrier().await;
            }
            let secs = start.elapsed().as_secs_f64();
            let part = loc.unregister(h);
            let w = loc.world();
            let secs = w.all_reduce(secs, f64::max).await;
            let trimmed = w.all_reduce(part.trimmed, |a, b| a + b).await;
            let mut mine = vec![0u64; n];
            for (i, &l) in part.label.iter().enumerate() {
                mine[lo + i] = u64::from(l) + 1;
            }
            let all = w.all_reduce(mine, add_words).await;
            // 0 (no label) becomes u32::MAX, which the comparison rejects.
            let labels = all.iter().map(|&l| l.wrapping_sub(1) as u32).collect();
            Outcome {
                secs,
                rounds,
                trimmed,
                labels,
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::super::graph::{compare, mesh, random, tarjan};
    use super::*;
    use tutti::world::World;

    fn world(p: usize) -> World {
        crate::apps::test_world(p, tutti::world::DEFAULT_AGGREGATION_INPROC)
    }

    #[test]
    fn finds_tarjans_components() {
        let graphs = [
            random(200, 260, 1),
            random(150, 600, 2),
            random(5, 2, 3),
            mesh(12, 3),
            mesh(9, 1),
        ];
        for (k, g) in graphs.into_iter().enumerate() {
            let g = Arc::new(g);
            let t = tarjan(&g);
            for (p, agg) in [(1, None), (3, Some(16)), (4, Some(1))] {
                let out = scc(&world(p), &g, 7, agg);
                assert_eq!(out.len(), p);
                for o in &out {
                    if let Err(e) = compare(&o.labels, &t) {
                        panic!("graph {k} on {p} locations: {e}");
                    }
                }
            }
        }
    }

    #[test]
    fn more_locations_than_vertices() {
        let g = Arc::new(Graph::from_edges(2, &[(0, 1), (1, 0)]));
        let out = scc(&world(5), &g, 1, None);
        assert!(out.iter().all(|o| o.labels == [o.labels[0]; 2]));
    }
}
