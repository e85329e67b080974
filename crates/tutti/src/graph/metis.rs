//! `Partition::Metis`: METIS' multilevel k-way partitioning of the channel
//! graph (undirected; an edge's weight is the number of channels between its
//! two actors), through the `metis` crate.

use std::collections::BTreeMap;

use super::build::ActorGraph;
use super::partition::PartitionError;

pub(crate) fn partition(g: &ActorGraph, parts: usize) -> Result<Vec<u32>, PartitionError> {
    let n = g.actors();
    if parts == 1 || n == 0 {
        return Ok(vec![0; n]);
    }
    if parts > n {
        return Err(PartitionError::Metis(format!(
            "{parts} parts asked for a graph of {n} actors"
        )));
    }
    let mut adj: Vec<BTreeMap<usize, metis::Idx>> = vec![BTreeMap::new(); n];
    for (a, b) in g.edges() {
        let (a, b) = (a.index(), b.index());
        if a != b {
            *adj[a].entry(b).or_insert(0) += 1;
            *adj[b].entry(a).or_insert(0) += 1;
        }
    }
    let mut xadj: Vec<metis::Idx> = Vec::with_capacity(n + 1);
    let mut adjncy = Vec::new();
    let mut adjwgt = Vec::new();
    xadj.push(0);
    for row in &adj {
        for (&v, &w) in row {
            adjncy.push(v as metis::Idx);
            adjwgt.push(w);
        }
        xadj.push(adjncy.len() as metis::Idx);
    }
    let mut part: Vec<metis::Idx> = vec![0; n];
    metis::Graph::new(1, parts as metis::Idx, &xadj, &adjncy)
        .map_err(|e| PartitionError::Metis(format!("{e:?}")))?
        .set_adjwgt(&adjwgt)
        .part_kway(&mut part)
        .map_err(|e| PartitionError::Metis(format!("{e:?}")))?;
    Ok(part.into_iter().map(|p| p as u32).collect())
}
