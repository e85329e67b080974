//! Directed graphs for `tutti scc`: the edge-list file format, the mesh
//! generator, Tarjan's sequential algorithm and the comparison of two
//! component labellings.
//!
//! **Edge-list format.** UTF-8 text, one edge `u v` (from `u` to `v`) per
//! line: two vertex ids, non-negative integers below [`MAX_VERTICES`],
//! separated by spaces or tabs. `#` starts a comment that runs to the end of
//! the line; blank lines are ignored. The graph has `max id + 1` vertices
//! (ids that appear in no edge are isolated vertices). Self-loops and
//! repeated edges are allowed.
//!
//! ```text
//! # a 3-cycle and a tail
//! 0 1
//! 1 2
//! 2 0
//! 2 3   # 3 is a component of its own
//! ```

use std::fmt::Write as _;

/// Largest vertex count a graph may have (ids are `0..MAX_VERTICES`).
pub const MAX_VERTICES: u64 = 1 << 28;

/// A directed graph with both adjacency directions in compressed rows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Graph {
    n: usize,
    out_start: Vec<usize>,
    out: Vec<u32>,
    in_start: Vec<usize>,
    inn: Vec<u32>,
}

impl Graph {
    /// The graph on `n` vertices with `edges` (each id below `n`).
    pub fn from_edges(n: usize, edges: &[(u32, u32)]) -> Graph {
        let rows = |key: fn(&(u32, u32)) -> (u32, u32)| {
            let mut start = vec![0usize; n + 1];
            for e in edges {
                start[key(e).0 as usize + 1] += 1;
            }
            for i in 0..n {
                start[i + 1] += start[i];
            }
            let mut fill = start.clone();
            let mut adj = vec![0u32; edges.len()];
            for e in edges {
                let (a, b) = key(e);
                adj[fill[a as usize]] = b;
                fill[a as usize] += 1;
            }
            (start, adj)
        };
        let (out_start, out) = rows(|&(u, v)| (u, v));
        let (in_start, inn) = rows(|&(u, v)| (v, u));
        Graph {
            n,
            out_start,
            out,
            in_start,
            inn,
        }
    }

    /// Number of vertices.
    pub fn vertices(&self) -> usize {
        self.n
    }

    /// Number of edges.
    pub fn edges(&self) -> usize {
        self.out.len()
    }

    /// The heads of `v`'s out-edges.
    pub fn out(&self, v: usize) -> &[u32] {
        &self.out[self.out_start[v]..self.out_start[v + 1]]
    }

    /// The tails of `v`'s in-edges.
    pub fn inn(&self, v: usize) -> &[u32] {
        &self.inn[self.in_start[v]..self.in_start[v + 1]]
    }
}

/// Parses an edge list (see the module documentation). Errors name the line.
pub fn parse(text: &str) -> Result<Graph, String> {
    let mut edges = Vec::new();
    let mut max = None::<u32>;
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let content = raw.split('#').next().unwrap_or("");
        let mut fields = content.split_whitespace();
        let Some(a) = fields.next() else { continue };
        let id = |s: &str| -> Result<u32, String> {
            match s.parse::<u64>() {
                Ok(v) if v < MAX_VERTICES => Ok(v as u32),
                Ok(v) => Err(format!(
                    "line {line}: vertex id {v} is too large (ids must be below {MAX_VERTICES})"
                )),
                Err(_) => Err(format!(
                    "line {line}: `{s}` is not a vertex id (a non-negative integer)"
                )),
            }
        };
        let Some(b) = fields.next() else {
            return Err(format!(
                "line {line}: expected an edge `u v`, found only `{}`",
                content.trim()
            ));
        };
        if let Some(extra) = fields.next() {
            return Err(format!(
                "line {line}: expected an edge `u v`, found `{extra}` after it"
            ));
        }
        let (u, v) = (id(a)?, id(b)?);
        max = Some(max.unwrap_or(0).max(u).max(v));
        edges.push((u, v));
    }
    let Some(max) = max else {
        return Err("the graph has no edges (expected lines `u v`)".into());
    };
    Ok(Graph::from_edges(max as usize + 1, &edges))
}

/// The `k × k` mesh with square tiles of side `tile`: vertex `(x, y)` is
/// `y·k + x`; neighbours within a tile are joined both ways, neighbours in
/// different tiles only rightwards and downwards. Each tile is therefore one
/// strongly connected component and the tiles form a DAG: the mesh has
/// [`mesh_components`] components.
pub fn mesh(k: usize, tile: usize) -> Graph {
    let mut edges = Vec::new();
    let id = |x: usize, y: usize| (y * k + x) as u32;
    for y in 0..k {
        for x in 0..k {
            if x + 1 < k {
                edges.push((id(x, y), id(x + 1, y)));
                if x / tile == (x + 1) / tile {
                    edges.push((id(x + 1, y), id(x, y)));
                }
            }
            if y + 1 < k {
                edges.push((id(x, y), id(x, y + 1)));
                if y / tile == (y + 1) / tile {
                    edges.push((id(x, y + 1), id(x, y)));
                }
            }
        }
    }
    Graph::from_edges(k * k, &edges)
}

/// Number of strongly connected components of [`mesh`]`(k, tile)`.
pub fn mesh_components(k: usize, tile: usize) -> usize {
    k.div_ceil(tile).pow(2)
}

/// Tarjan's algorithm (iterative): the component index of every vertex.
pub fn tarjan(g: &Graph) -> Vec<u32> {
    const NONE: u32 = u32::MAX;
    let n = g.vertices();
    let mut index = vec![NONE; n];
    let mut low = vec![0u32; n];
    let mut on_stack = vec![false; n];
    let mut comp = vec![NONE; n];
    let mut stack = Vec::new();
    // (vertex, next out-edge to look at)
    let mut calls: Vec<(usize, usize)> = Vec::new();
    let mut next_index = 0u32;
    let mut next_comp = 0u32;
    for root in 0..n {
        if index[root] != NONE {
            continue;
        }
        calls.push((root, 0));
        index[root] = next_index;
        low[root] = next_index;
        next_index += 1;
        stack.push(root);
        on_stack[root] = true;
        while let Some(&mut (v, ref mut e)) = calls.last_mut() {
            if let Some(&w) = g.out(v).get(*e) {
                *e += 1;
                let w = w as usize;
                if index[w] == NONE {
                    index[w] = next_index;
                    low[w] = next_index;
                    next_index += 1;
                    stack.push(w);
                    on_stack[w] = true;
                    calls.push((w, 0));
                } else if on_stack[w] {
                    low[v] = low[v].min(index[w]);
                }
                continue;
            }
            calls.pop();
            if let Some(&(parent, _)) = calls.last() {
                low[parent] = low[parent].min(low[v]);
            }
            if low[v] == index[v] {
                while let Some(w) = stack.pop() {
                    on_stack[w] = false;
                    comp[w] = next_comp;
                    if w == v {
                        break;
                    }
                }
                next_comp += 1;
            }
        }
    }
    comp
}

/// Relabels a labelling so that each class is named by its smallest vertex:
/// two labellings describe the same partition exactly when their canonical
/// forms are equal. `None` if a label is out of range.
pub fn canonical(labels: &[u32]) -> Option<Vec<u32>> {
    let mut smallest = vec![u32::MAX; labels.len()];
    for (v, &l) in labels.iter().enumerate() {
        let s = smallest.get_mut(l as usize)?;
        *s = (*s).min(v as u32);
    }
    Some(labels.iter().map(|&l| smallest[l as usize]).collect())
}

/// Number of distinct labels.
pub fn count_components(labels: &[u32]) -> usize {
    let mut seen = vec![false; labels.len()];
    let mut count = 0;
    for &l in labels {
        if let Some(s) = seen.get_mut(l as usize) {
            if !*s {
                *s = true;
                count += 1;
            }
        }
    }
    count
}

/// Compares a labelling with Tarjan's: `Ok(())` when they are the same
/// partition, else what differs first.
pub fn compare(ours: &[u32], tarjan: &[u32]) -> Result<(), String> {
    if ours.len() != tarjan.len() {
        return Err(format!(
            "{} labels for {} vertices",
            ours.len(),
            tarjan.len()
        ));
    }
    let Some(a) = canonical(ours) else {
        return Err("a vertex has no component".into());
    };
    let b = canonical(tarjan).ok_or("Tarjan's labels are out of range")?;
    if let Some(v) = (0..a.len()).find(|&v| a[v] != b[v]) {
        let mut msg = String::new();
        let _ = write!(
            msg,
            "vertex {v} is with vertex {} but Tarjan puts it with vertex {}",
            a[v], b[v]
        );
        return Err(msg);
    }
    Ok(())
}

/// A random graph: `n` vertices, `m` edges, from `seed` (for tests).
#[cfg(test)]
pub fn random(n: usize, m: usize, seed: u64) -> Graph {
    let mut r = crate::rng::Rng::new(seed);
    let edges: Vec<(u32, u32)> = (0..m)
        .map(|_| (r.below(n as u64) as u32, r.below(n as u64) as u32))
        .collect();
    Graph::from_edges(n, &edges)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_documented_example() {
        let g = parse("# a 3-cycle and a tail\n0 1\n1 2\n2 0\n\n2 3   # own\n").unwrap();
        assert_eq!((g.vertices(), g.edges()), (4, 4));
        assert_eq!(g.out(2), [0, 3]);
        assert_eq!(g.inn(0), [2]);
        let c = tarjan(&g);
        assert_eq!(count_components(&c), 2);
        assert_eq!(c[0], c[1]);
        assert_ne!(c[0], c[3]);
    }

    #[test]
    fn malformed_lines_are_named() {
        for (text, want) in [
            ("0 1\n1\n", "line 2: expected an edge `u v`, found only `1`"),
            (
                "0 1 2\n",
                "line 1: expected an edge `u v`, found `2` after it",
            ),
            ("# c\n0 x\n", "line 2: `x` is not a vertex id"),
            ("-1 2\n", "line 1: `-1` is not a vertex id"),
            (
                "0 1\n\n3 99999999999\n",
                "line 3: vertex id 99999999999 is too large",
            ),
            ("0 1.5\n", "line 1: `1.5` is not a vertex id"),
            ("# nothing\n\n", "the graph has no edges"),
        ] {
            match parse(text) {
                Ok(_) => panic!("{text:?} parsed"),
                Err(e) => assert!(e.starts_with(want), "{text:?}: {e}"),
            }
        }
    }

    #[test]
    fn mesh_has_its_known_components() {
        for (k, tile) in [(10, 3), (7, 1), (8, 8), (12, 5)] {
            let g = mesh(k, tile);
            let c = tarjan(&g);
            assert_eq!(count_components(&c), mesh_components(k, tile), "{k} {tile}");
            // Vertices of one tile are together.
            assert_eq!(c[0], c[(tile - 1).min(k - 1)]);
        }
    }

    #[test]
    fn tarjan_agrees_with_reachability() {
        let g = random(60, 90, 3);
        let c = tarjan(&g);
        let reach = |s: usize| {
            let mut seen = vec![false; g.vertices()];
            let mut todo = vec![s];
            seen[s] = true;
            while let Some(v) = todo.pop() {
                for &w in g.out(v) {
                    if !seen[w as usize] {
                        seen[w as usize] = true;
                        todo.push(w as usize);
                    }
                }
            }
            seen
        };
        let all: Vec<Vec<bool>> = (0..g.vertices()).map(reach).collect();
        for u in 0..g.vertices() {
            for v in 0..g.vertices() {
                assert_eq!(c[u] == c[v], all[u][v] && all[v][u], "{u} {v}");
            }
        }
    }

    #[test]
    fn compare_detects_wrong_partitions() {
        let t = [0, 0, 1, 2];
        assert!(compare(&[1, 1, 2, 3], &t).is_ok());
        assert!(compare(&[0, 1, 2, 3], &t).is_err()); // split
        assert!(compare(&[0, 0, 0, 3], &t).is_err()); // merged
        assert!(compare(&[0, 0, 9, 3], &t).is_err()); // out of range
        assert!(compare(&[0, 0, 2], &t).is_err());
    }
}
