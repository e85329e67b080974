//! Placing a graph's actors on the world's locations.
//!
//! Every rank computes the same placement from the same graph (the algorithms
//! are deterministic), so no placement is ever communicated; the run checks
//! that the ranks agree.

use std::fmt;

use super::build::ActorGraph;
use super::port::ActorId;
use crate::world::LocationId;

/// How to place actors on locations.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Partition {
    /// Contiguous runs of actors in declaration order, as equal as possible.
    Block,
    /// The actors are a `cols × rows` grid declared row by row (actor
    /// `y·cols + x` is cell `(x, y)`); `curve` says how it is cut.
    Grid {
        /// Cells per row.
        cols: usize,
        /// Rows.
        rows: usize,
        /// The cut.
        curve: Curve,
    },
    /// `locations[a]` is the location of actor `a`.
    Explicit(Vec<usize>),
    /// METIS' multilevel k-way partitioning of the channel graph (feature
    /// `metis`; METIS is compiled from source, no system library needed).
    #[cfg(feature = "metis")]
    Metis,
}

/// How a grid is cut over locations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Curve {
    /// Rectangular blocks: the locations form a `px × py` grid as square as
    /// the location count allows.
    Blocks,
    /// Contiguous pieces of the Hilbert curve through the grid.
    Hilbert,
}

/// Where each actor runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Placement {
    pub(crate) of: Vec<u32>,
    locations: usize,
    edge_cut: usize,
}

impl Placement {
    /// The location of actor `a`.
    pub fn location(&self, a: ActorId) -> LocationId {
        LocationId::new(self.of[a.index()])
    }

    /// The number of channels whose two actors are on different locations.
    pub fn edge_cut(&self) -> usize {
        self.edge_cut
    }

    /// Actors per location.
    pub fn loads(&self) -> Vec<usize> {
        let mut l = vec![0; self.locations];
        for &o in &self.of {
            l[o as usize] += 1;
        }
        l
    }
}

/// A partition that cannot be made.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PartitionError {
    /// A grid whose size is not the number of actors.
    GridSize {
        /// `cols × rows`.
        cells: usize,
        /// Actors in the graph.
        actors: usize,
    },
    /// An explicit placement of the wrong length or naming a location that
    /// does not exist.
    Explicit(String),
    /// No locations to place on.
    NoLocations,
    /// METIS refused.
    Metis(String),
}

impl fmt::Display for PartitionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PartitionError::GridSize { cells, actors } => write!(
                f,
                "a grid partition of {cells} cells was asked for a graph of {actors} actors"
            ),
            PartitionError::Explicit(why) => write!(f, "explicit placement: {why}"),
            PartitionError::NoLocations => f.write_str("there are no locations to place on"),
            PartitionError::Metis(why) => write!(f, "METIS: {why}"),
        }
    }
}

impl std::error::Error for PartitionError {}

impl ActorGraph {
    /// Places the actors on `locations` locations.
    ///
    /// ```
    /// use tutti::graph::{ActorGraph, Curve, Partition};
    /// let mut b = ActorGraph::builder();
    /// // A 4 × 4 grid of actors, each sending to its right neighbour.
    /// let mut outs = Vec::new();
    /// for i in 0..16 {
    ///     let a = b.actor(&format!("cell{i}")).unwrap();
    ///     outs.push((b.output::<u8>(a, "right").unwrap(), b.input::<u8>(a, "left").unwrap()));
    /// }
    /// for y in 0..4 {
    ///     for x in 0..3 {
    ///         b.connect(outs[y * 4 + x].0, outs[y * 4 + x + 1].1, 1).unwrap();
    ///     }
    /// }
    /// let g = b.build();
    /// let grid = Partition::Grid { cols: 4, rows: 4, curve: Curve::Blocks };
    /// let p = g.partition(4, &grid).unwrap();
    /// assert_eq!(p.loads(), [4, 4, 4, 4]);
    /// assert_eq!(p.edge_cut(), 4); // one per row crosses the vertical cut
    /// ```
    pub fn partition(
        &self,
        locations: usize,
        how: &Partition,
    ) -> Result<Placement, PartitionError> {
        if locations == 0 {
            return Err(PartitionError::NoLocations);
        }
        let n = self.actors();
        let of: Vec<u32> = match how {
            Partition::Block => (0..n).map(|a| (a * locations / n.max(1)) as u32).collect(),
            Partition::Grid { cols, rows, curve } => {
                if cols * rows != n {
                    return Err(PartitionError::GridSize {
                        cells: cols * rows,
                        actors: n,
                    });
                }
                match curve {
                    Curve::Blocks => grid_blocks(*cols, *rows, locations),
                    Curve::Hilbert => grid_hilbert(*cols, *rows, locations),
                }
            }
            Partition::Explicit(v) => {
                if v.len() != n {
                    return Err(PartitionError::Explicit(format!(
                        "{} locations given for {n} actors",
                        v.len()
                    )));
                }
                if let Some(bad) = v.iter().find(|&&l| l >= locations) {
                    return Err(PartitionError::Explicit(format!(
                        "location {bad} does not exist (there are {locations})"
                    )));
                }
                v.iter().map(|&l| l as u32).collect()
            }
            #[cfg(feature = "metis")]
            Partition::Metis => super::metis::partition(self, locations)?,
        };
        let edge_cut = self
            .edges()
            .filter(|(a, b)| of[a.index()] != of[b.index()])
            .count();
        Ok(Placement {
            of,
            locations,
            edge_cut,
        })
    }
}

/// The factorization `px × py = p` whose blocks are closest to square.
fn factor(cols: usize, rows: usize, p: usize) -> (usize, usize) {
    let mut best = (p, 1);
    let mut best_score = f64::INFINITY;
    for px in 1..=p {
        if p % px != 0 {
            continue;
        }
        let py = p / px;
        let (w, h) = (cols as f64 / px as f64, rows as f64 / py as f64);
        // Perimeter of a block: what crosses its border.
        let score = w + h + if px > cols || py > rows { 1e9 } else { 0.0 };
        if score < best_score {
            best_score = score;
            best = (px, py);
        }
    }
    best
}

fn grid_blocks(cols: usize, rows: usize, p: usize) -> Vec<u32> {
    let (px, py) = factor(cols, rows, p);
    let mut of = Vec::with_capacity(cols * rows);
    for y in 0..rows {
        for x in 0..cols {
            let bx = x * px / cols;
            let by = y * py / rows;
            of.push((by * px + bx) as u32);
        }
    }
    of
}

/// The index of `(x, y)` along the Hilbert curve of a `side × side` square
/// (`side` a power of two).
fn hilbert(side: usize, mut x: usize, mut y: usize) -> usize {
    let mut d = 0;
    let mut s = side / 2;
    while s > 0 {
        let rx = usize::from(x & s > 0);
        let ry = usize::from(y & s > 0);
        d += s * s * ((3 * rx) ^ ry);
        if ry == 0 {
            if rx == 1 {
                x = side - 1 - x;
                y = side - 1 - y;
            }
            std::mem::swap(&mut x, &mut y);
        }
        s /= 2;
    }
    d
}

fn grid_hilbert(cols: usize, rows: usize, p: usize) -> Vec<u32> {
    let side = cols.max(rows).next_power_of_two();
    let mut order: Vec<(usize, usize)> = (0..rows)
        .flat_map(|y| (0..cols).map(move |x| (hilbert(side, x, y), y * cols + x)))
        .collect();
    order.sort_unstable();
    let n = order.len();
    let mut of = vec![0u32; n];
    for (k, &(_, a)) in order.iter().enumerate() {
        of[a] = (k * p / n) as u32;
    }
    of
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(feature = "metis")]
    #[test]
    fn metis_cuts_a_grid_no_worse_than_blocks() {
        let mut b = ActorGraph::builder();
        let (w, h) = (8, 8);
        let mut ports = Vec::new();
        for i in 0..w * h {
            let a = b.actor(&format!("c{i}")).unwrap();
            ports.push((
                b.output::<u8>(a, "e").unwrap(),
                b.input::<u8>(a, "w").unwrap(),
                b.output::<u8>(a, "s").unwrap(),
                b.input::<u8>(a, "n").unwrap(),
            ));
        }
        for y in 0..h {
            for x in 0..w {
                let i = y * w + x;
                if x + 1 < w {
                    b.connect(ports[i].0, ports[i + 1].1, 1).unwrap();
                }
                if y + 1 < h {
                    b.connect(ports[i].2, ports[i + w].3, 1).unwrap();
                }
            }
        }
        let g = b.build();
        let m = g.partition(4, &Partition::Metis).unwrap();
        let blocks = g
            .partition(
                4,
                &Partition::Grid {
                    cols: w,
                    rows: h,
                    curve: Curve::Blocks,
                },
            )
            .unwrap();
        assert_eq!(blocks.edge_cut(), 16);
        assert!(m.edge_cut() <= 20, "METIS cut {}", m.edge_cut());
        assert!(
            m.loads().iter().all(|&l| (12..=20).contains(&l)),
            "{:?}",
            m.loads()
        );
        assert!(g.partition(100, &Partition::Metis).is_err());
    }

    #[test]
    fn hilbert_visits_each_cell_once_and_steps_to_neighbours() {
        let side = 8;
        let mut cells: Vec<(usize, usize, usize)> = (0..side)
            .flat_map(|y| (0..side).map(move |x| (hilbert(side, x, y), x, y)))
            .collect();
        cells.sort_unstable();
        for (k, w) in cells.windows(2).enumerate() {
            assert_eq!(w[0].0, k);
            let dist = w[0].1.abs_diff(w[1].1) + w[0].2.abs_diff(w[1].2);
            assert_eq!(dist, 1, "step {k}");
        }
    }

    #[test]
    fn blocks_are_square_when_they_can_be() {
        assert_eq!(factor(8, 8, 4), (2, 2));
        assert_eq!(factor(16, 4, 4), (4, 1));
        let of = grid_blocks(4, 4, 4);
        assert_eq!(&of[..4], &[0, 0, 1, 1]);
        assert_eq!(&of[12..], &[2, 2, 3, 3]);
        let h = grid_hilbert(4, 4, 4);
        let mut loads = [0; 4];
        for l in h {
            loads[l as usize] += 1;
        }
        assert_eq!(loads, [4; 4]);
    }
}
