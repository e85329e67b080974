//! The collectives MPI users reach for beyond barrier, broadcast and the
//! reductions: gather, all-gather, scatter, all-to-all(-v), inclusive and
//! exclusive scan, reduce-scatter — on locations (the flat view), in every
//! transport.
//!
//! Each is one of the world's three tree algorithms or two personalised
//! exchanges (`collective.rs`) with its own values and operation, and its own
//! kind in the frames, so a rank that
//! runs another collective (or the same one with another root) at the same
//! point is reported naming that rank, and the cross-rank stall check names it:
//!
//! | collective      | contribution         | operation          | tree       | this location's part |
//! |-----------------|----------------------|--------------------|------------|----------------------|
//! | gather          | `[v]`                | concatenate        | reduce     | all, at the root     |
//! | all_gather      | `[v]`                | concatenate        | all-reduce | all                  |
//! | scatter         | the root's `n` values| —                  | scatter    | value `i`            |
//! | all_to_all(_v)  | `[row]` of `n`       | concatenate        | exchange   | column `i`           |
//! | scan            | `[v]`                | concatenate        | all-reduce | fold of `0..=i`      |
//! | exclusive_scan  | `[v]`                | concatenate        | all-reduce | fold of `0..i`       |
//! | reduce_scatter  | `n` values           | element-wise `op`  | all-reduce | element `i`          |
//!
//! Values are combined in location order, so operations need be associative,
//! not commutative. Arguments that cannot agree with the other locations' (a
//! row of all-to-all or reduce-scatter that does not hold one value per
//! location, a scatter root without one value per location) stop the program
//! with a message naming the location and its rank (under MPI or as a
//! shared-memory system: the whole job, instead of a hang).
//!
//! Scatter and the all-to-alls are personalised: the root's rank sends each
//! rank only its locations' values, and for an all-to-all every rank sends
//! every other rank only the columns of that rank's locations (a pairwise
//! exchange, as MPI's), so a rank's result holds the values of its own
//! locations only. Limit: the scans still gather every contribution on every
//! rank, `n` times the data of MPI's recursive doubling.

use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde::Serialize;

use super::Location;
use crate::world::collective::{self, Collective, Kind, Op, Portion, Reduction, Split};
use crate::world::LocationId;

/// Cuts `values` into consecutive pieces of `per_rank` values: one per rank.
fn chunks<T>(values: Vec<T>, per_rank: usize) -> Vec<Vec<T>> {
    let mut pieces = Vec::with_capacity(values.len().div_ceil(per_rank.max(1)));
    let mut it = values.into_iter().peekable();
    while it.peek().is_some() {
        pieces.push(it.by_ref().take(per_rank).collect());
    }
    pieces
}

/// Appends `b` to `a`: the operation of every gathering collective.
fn concat<T>(mut a: Vec<T>, mut b: Vec<T>) -> Vec<T> {
    a.append(&mut b);
    a
}

impl Location {
    /// Gathers every location's value at the `root` location, in location
    /// order; the others get `None` at once (MPI_Gather).
    ///
    /// ```
    /// use tutti::world::{LocationId, World};
    /// let world = World::builder().locations(3).workers(1).build().unwrap();
    /// let got = world.run(|loc| async move {
    ///     loc.gather(LocationId::new(1), loc.id().index() * 10).await
    /// });
    /// assert_eq!(got, [None, Some(vec![0, 10, 20]), None]);
    /// ```
    pub fn gather<T>(&self, root: LocationId, value: T) -> Reduction<'_, Vec<T>>
    where
        T: Serialize + DeserializeOwned + Clone + Send + 'static,
    {
        self.check_root(root, "gather");
        self.flush();
        let op: Op<Vec<T>> = Arc::new(concat);
        let epoch = collective::arrive(self, Kind::Gather, root.raw(), Some(vec![value]), Some(op));
        Reduction::new((root == self.id()).then(|| Collective::new(self, epoch)))
    }

    /// Gathers every location's value at every location, in location order
    /// (MPI_Allgather).
    ///
    /// ```
    /// use tutti::world::World;
    /// let world = World::builder().locations(3).workers(1).build().unwrap();
    /// let got = world.run(|loc| async move { loc.all_gather(loc.id().index() as u8).await });
    /// assert!(got.iter().all(|v| v == &[0, 1, 2]));
    /// ```
    pub fn all_gather<T>(&self, value: T) -> Collective<'_, Vec<T>>
    where
        T: Serialize + DeserializeOwned + Clone + Send + 'static,
    {
        self.flush();
        let op: Op<Vec<T>> = Arc::new(concat);
        let epoch = collective::arrive(self, Kind::AllGather, 0, Some(vec![value]), Some(op));
        Collective::new(self, epoch)
    }

    /// Hands value `i` of the `root` location's values to location `i`
    /// (MPI_Scatter). The root passes `Some` of one value per location; the
    /// others' `values` are ignored.
    ///
    /// # Panics
    /// If `root` is not a location, or the root passes `None` or a number of
    /// values other than the world's locations (under MPI the job is taken
    /// down naming the root and its rank).
    ///
    /// ```
    /// use tutti::world::{LocationId, World};
    /// let world = World::builder().locations(3).workers(1).build().unwrap();
    /// let got = world.run(|loc| async move {
    ///     let mine = (loc.id().index() == 0).then(|| vec!["a", "b", "c"].into_iter().map(String::from).collect());
    ///     loc.scatter(LocationId::new(0), mine).await
    /// });
    /// assert_eq!(got, ["a", "b", "c"]);
    /// ```
    pub fn scatter<T>(&self, root: LocationId, values: Option<Vec<T>>) -> Portion<'_, Vec<T>, T>
    where
        T: Serialize + DeserializeOwned + Clone + Send + 'static,
    {
        self.check_root(root, "scatter");
        let values = if root == self.id() {
            let n = values.as_ref().map(Vec::len);
            if n != Some(self.world.locations()) {
                self.shared().fail(&format!(
                    "scatter: the root {root} (rank {}) passes {} for a world of {} locations",
                    self.rank(),
                    n.map_or("no values".to_string(), |n| format!("{n} values")),
                    self.world.locations()
                ));
            }
            values
        } else {
            None
        };
        self.flush();
        let per_rank = self.shared().local.per_rank;
        let split: Split<Vec<T>> = Arc::new(move |all: Vec<T>| chunks(all, per_rank));
        let epoch =
            collective::arrive_split(self, Kind::Scatter, root.raw(), values, None, Some(split));
        // The rank's result: the values of its locations.
        let me = self.local_index();
        Portion::new(Collective::new(self, epoch), move |mine: Vec<T>| {
            mine.into_iter()
                .nth(me)
                .unwrap_or_else(|| missing("scatter"))
        })
    }

    /// Sends `values[j]` to location `j` and returns, in location order, the
    /// value every location sent this one (MPI_Alltoall). Every location passes
    /// exactly one value per location.
    ///
    /// # Panics
    /// If `values` does not hold one value per location (under MPI the job is
    /// taken down naming the location and its rank).
    ///
    /// ```
    /// use tutti::world::World;
    /// let world = World::builder().locations(3).workers(1).build().unwrap();
    /// let got = world.run(|loc| async move {
    ///     let me = loc.id().index();
    ///     loc.all_to_all((0..3).map(|to| (me, to)).collect()).await
    /// });
    /// assert_eq!(got[2], [(0, 2), (1, 2), (2, 2)]);
    /// ```
    pub fn all_to_all<T>(&self, values: Vec<T>) -> Portion<'_, Vec<Vec<T>>, Vec<T>>
    where
        T: Serialize + DeserializeOwned + Clone + Send + 'static,
    {
        self.exchange(Kind::AllToAll, values)
    }

    /// Sends the vector `values[j]` — of any length, each its own — to location
    /// `j`, and returns the vectors every location sent this one, in location
    /// order (MPI_Alltoallv: the lengths travel with the values, so no counts
    /// are passed).
    ///
    /// # Panics
    /// If `values` does not hold one vector per location (under MPI the job is
    /// taken down naming the location and its rank).
    ///
    /// ```
    /// use tutti::world::World;
    /// let world = World::builder().locations(2).workers(1).build().unwrap();
    /// let got = world.run(|loc| async move {
    ///     let me = loc.id().index() as u32;
    ///     // Location i sends i + j copies of its id to location j.
    ///     loc.all_to_all_v((0..2).map(|j| vec![me; (me + j) as usize]).collect()).await
    /// });
    /// assert_eq!(got[1], [vec![0], vec![1, 1]]);
    /// ```
    pub fn all_to_all_v<T>(&self, values: Vec<Vec<T>>) -> Portion<'_, Vec<Vec<Vec<T>>>, Vec<Vec<T>>>
    where
        T: Serialize + DeserializeOwned + Clone + Send + 'static,
    {
        self.exchange(Kind::AllToAllV, values)
    }

    fn exchange<T>(&self, kind: Kind, row: Vec<T>) -> Portion<'_, Vec<Vec<T>>, Vec<T>>
    where
        T: Serialize + DeserializeOwned + Clone + Send + 'static,
    {
        self.check_row(Kind::name(kind as u8), row.len());
        self.flush();
        let op: Op<Vec<Vec<T>>> = Arc::new(concat);
        let per_rank = self.shared().local.per_rank;
        let split: Split<Vec<Vec<T>>> = Arc::new(move |rows: Vec<Vec<T>>| {
            // Rank `r`'s piece: every row of this rank, cut to the values
            // for `r`'s locations.
            let mut pieces: Vec<Vec<Vec<T>>> = Vec::new();
            for (i, row) in rows.into_iter().enumerate() {
                for (r, part) in chunks(row, per_rank).into_iter().enumerate() {
                    if i == 0 {
                        pieces.push(Vec::new());
                    }
                    pieces[r].push(part);
                }
            }
            pieces
        });
        let epoch = collective::arrive_split(self, kind, 0, Some(vec![row]), Some(op), Some(split));
        // The rank's result: every location's row, cut to this rank's
        // locations, in location order.
        let me = self.local_index();
        Portion::new(Collective::new(self, epoch), move |rows: Vec<Vec<T>>| {
            rows.into_iter()
                .map(|row| {
                    row.into_iter()
                        .nth(me)
                        .unwrap_or_else(|| missing("all_to_all"))
                })
                .collect()
        })
    }

    /// The inclusive prefix reduction: location `i` gets the values of
    /// locations `0..=i` combined with `op` in location order (MPI_Scan; `op`
    /// associative).
    ///
    /// ```
    /// use tutti::world::World;
    /// let world = World::builder().locations(4).workers(1).build().unwrap();
    /// let got = world.run(|loc| async move { loc.scan(loc.id().index() + 1, |a, b| a + b).await });
    /// assert_eq!(got, [1, 3, 6, 10]);
    /// ```
    pub fn scan<T, F>(&self, value: T, op: F) -> Portion<'_, Vec<T>, T>
    where
        T: Serialize + DeserializeOwned + Clone + Send + 'static,
        F: Fn(T, T) -> T + Send + Sync + 'static,
    {
        let me = self.id().index();
        self.prefix(Kind::Scan, value, move |all: Vec<T>| {
            all.into_iter()
                .take(me + 1)
                .reduce(&op)
                .unwrap_or_else(|| missing("scan"))
        })
    }

    /// The exclusive prefix reduction: location `i` gets the values of
    /// locations `0..i` combined with `op` in location order, location 0 gets
    /// `None` (MPI_Exscan).
    ///
    /// ```
    /// use tutti::world::World;
    /// let world = World::builder().locations(4).workers(1).build().unwrap();
    /// let got = world.run(|loc| async move {
    ///     loc.exclusive_scan(loc.id().index() + 1, |a, b| a * b).await
    /// });
    /// assert_eq!(got, [None, Some(1), Some(2), Some(6)]);
    /// ```
    pub fn exclusive_scan<T, F>(&self, value: T, op: F) -> Portion<'_, Vec<T>, Option<T>>
    where
        T: Serialize + DeserializeOwned + Clone + Send + 'static,
        F: Fn(T, T) -> T + Send + Sync + 'static,
    {
        let me = self.id().index();
        self.prefix(Kind::ExclusiveScan, value, move |all: Vec<T>| {
            all.into_iter().take(me).reduce(&op)
        })
    }

    fn prefix<T, R>(
        &self,
        kind: Kind,
        value: T,
        part: impl FnOnce(Vec<T>) -> R + Send + 'static,
    ) -> Portion<'_, Vec<T>, R>
    where
        T: Serialize + DeserializeOwned + Clone + Send + 'static,
    {
        self.flush();
        let op: Op<Vec<T>> = Arc::new(concat);
        let epoch = collective::arrive(self, kind, 0, Some(vec![value]), Some(op));
        Portion::new(Collective::new(self, epoch), part)
    }

    /// Combines the locations' `values` element by element with `op` (in
    /// location order) and gives location `i` element `i` of the result
    /// (MPI_Reduce_scatter_block with one element per location; make `T` a
    /// vector for blocks). Every location passes one value per location.
    ///
    /// # Panics
    /// If `values` does not hold one value per location (under MPI the job is
    /// taken down naming the location and its rank).
    ///
    /// ```
    /// use tutti::world::World;
    /// let world = World::builder().locations(3).workers(1).build().unwrap();
    /// let got = world.run(|loc| async move {
    ///     let me = loc.id().index() as u64;
    ///     loc.reduce_scatter(vec![me, 10 * me, 100 * me], |a, b| a + b).await
    /// });
    /// assert_eq!(got, [3, 30, 300]);
    /// ```
    pub fn reduce_scatter<T, F>(&self, values: Vec<T>, op: F) -> Portion<'_, Vec<T>, T>
    where
        T: Serialize + DeserializeOwned + Clone + Send + 'static,
        F: Fn(T, T) -> T + Send + Sync + 'static,
    {
        self.check_row("reduce_scatter", values.len());
        self.flush();
        let op: Op<Vec<T>> = Arc::new(move |a: Vec<T>, b: Vec<T>| {
            a.into_iter().zip(b).map(|(x, y)| op(x, y)).collect()
        });
        let epoch = collective::arrive(self, Kind::ReduceScatter, 0, Some(values), Some(op));
        let me = self.id().index();
        Portion::new(Collective::new(self, epoch), move |all: Vec<T>| {
            all.into_iter()
                .nth(me)
                .unwrap_or_else(|| missing("reduce_scatter"))
        })
    }

    /// Stops the program unless `len` is one value per location.
    fn check_row(&self, what: &str, len: usize) {
        let n = self.world.locations();
        if len != n {
            self.shared().fail(&format!(
                "{what}: {} (rank {}) passes {len} values for a world of {n} locations \
                 (one per location)",
                self.id(),
                self.rank()
            ));
        }
    }
}

/// A result without this location's part: every contribution was checked to
/// hold one value per location, so only a broken invariant gets here.
#[cold]
fn missing(what: &str) -> ! {
    panic!("tutti: {what}: the result holds no part for this location (broken invariant)")
}
