//! The collectives MPI users reach for beyond barrier, broadcast and the
//! reductions: gather, all-gather, scatter, all-to-all(-v), inclusive and
//! exclusive scan, reduce-scatter — on locations (the flat view), in every
//! transport.
//!
//! Each is one of the world's algorithms (`collective.rs`) with its own
//! values and operation, and its own kind in the frames, so a rank that
//! runs another collective (or the same one with another root) at the same
//! point is reported naming that rank, and the cross-rank stall check names it:
//!
//! | collective      | contribution         | operation          | across ranks       | this location's part |
//! |-----------------|----------------------|--------------------|--------------------|----------------------|
//! | gather          | `[v]`                | concatenate        | binomial tree      | all, at the root     |
//! | all_gather      | `[v]`                | concatenate        | recursive doubling | all                  |
//! | scatter         | the root's `n` values| —                  | root to each rank  | value `i`            |
//! | all_to_all(_v)  | `[row]` of `n`       | concatenate        | pairwise exchange  | column `i`           |
//! | scan            | `[v]`                | `op`               | doubling scan      | fold of `0..=i`      |
//! | exclusive_scan  | `[v]`                | `op`               | doubling scan      | fold of `0..i`       |
//! | reduce_scatter  | `n` values           | element-wise `op`  | pairwise exchange  | element `i`          |
//!
//! Values are combined in location order, so operations need be associative,
//! not commutative. Arguments that cannot agree with the other locations' (a
//! row of all-to-all or reduce-scatter that does not hold one value per
//! location, a scatter root without one value per location) stop the program
//! with a message naming the location and its rank (under MPI or as a
//! shared-memory system: the whole job, instead of a hang).
//!
//! Scatter, the all-to-alls and reduce-scatter are personalised: the root's
//! rank sends each rank only its locations' values, and for the others every
//! rank sends every other rank only the columns of that rank's locations (a
//! pairwise exchange, as MPI's), so a rank's result holds the values of its
//! own locations only. A scan sends only folds: each rank gets the fold of
//! the ranks below it in `⌈log2 p⌉` rounds and makes its locations' prefixes
//! from it. Rows of `all_to_all_v` whose values are plain numbers (`u8` …
//! `u128`, `i8` … `i128`, `usize`, `isize`, `f32`, `f64`) cross ranks as
//! their bytes, not value by value.

use std::any::{Any, TypeId};
use std::sync::Arc;

use bytemuck::Pod;
use serde::de::DeserializeOwned;
use serde::Serialize;

use super::Location;
use crate::msg::codec;
use crate::world::collective::{
    self, Collective, Kind, Op, Plan, Portion, Reduction, ScanOps, Split, Wire,
};
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
        let plan = Plan {
            split: Some(split),
            ..Plan::plain()
        };
        let epoch = collective::arrive_with(self, Kind::Scatter, root.raw(), values, None, plan);
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
        self.exchange(Kind::AllToAll, values, None)
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
        // Rows of plain numbers cross ranks as their bytes.
        self.exchange(Kind::AllToAllV, values, number_rows::<T>())
    }

    fn exchange<T>(
        &self,
        kind: Kind,
        row: Vec<T>,
        wire: Option<Wire<Vec<Vec<T>>>>,
    ) -> Portion<'_, Vec<Vec<T>>, Vec<T>>
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
        let plan = Plan {
            split: Some(split),
            wire,
            ..Plan::plain()
        };
        let epoch = collective::arrive_with(self, kind, 0, Some(vec![row]), Some(op), plan);
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
        let me = self.local_index();
        self.prefix(Kind::Scan, value, op, move |mine: Vec<T>| {
            mine.into_iter().nth(me).unwrap_or_else(|| missing("scan"))
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
        // The rank's result lacks the part of the world's first location,
        // which has none.
        let (me, first) = (self.local_index(), self.id().index() == 0);
        let skip = usize::from(self.rank() == 0);
        self.prefix(Kind::ExclusiveScan, value, op, move |mine: Vec<T>| {
            (!first).then(|| {
                mine.into_iter()
                    .nth(me - skip)
                    .unwrap_or_else(|| missing("exclusive_scan"))
            })
        })
    }

    /// The scans: every location of a rank contributes `[value]`, the rank's
    /// leader concatenates them (its locals), and the ranks scan over their
    /// folds ([`ScanOps`]); the rank's result holds each location's part in
    /// location order — for the exclusive scan, none for the world's first
    /// location.
    fn prefix<T, F, R>(
        &self,
        kind: Kind,
        value: T,
        op: F,
        part: impl FnOnce(Vec<T>) -> R + Send + 'static,
    ) -> Portion<'_, Vec<T>, R>
    where
        T: Serialize + DeserializeOwned + Clone + Send + 'static,
        F: Fn(T, T) -> T + Send + Sync + 'static,
    {
        self.flush();
        let op = Arc::new(op);
        let inclusive = kind == Kind::Scan;
        let (total_op, fold_op) = (Arc::clone(&op), Arc::clone(&op));
        let scan = ScanOps {
            total: Box::new(move |locals: &Vec<T>| {
                (locals.len() > 1).then(|| {
                    locals
                        .iter()
                        .cloned()
                        .reduce(|a, b| total_op(a, b))
                        .into_iter()
                        .collect()
                })
            }),
            // Folds travel as vectors of one value.
            fold: Box::new(move |a: Vec<T>, b: Vec<T>| {
                match (a.into_iter().next(), b.into_iter().next()) {
                    (Some(x), Some(y)) => vec![fold_op(x, y)],
                    (x, y) => x.or(y).into_iter().collect(),
                }
            }),
            finish: Box::new(move |below: Option<Vec<T>>, locals: Vec<T>| {
                prefixes(
                    below.and_then(|b| b.into_iter().next()),
                    locals,
                    inclusive,
                    &*op,
                )
            }),
        };
        let plan = Plan {
            scan: Some(scan),
            ..Plan::plain()
        };
        let concat: Op<Vec<T>> = Arc::new(concat);
        let epoch = collective::arrive_with(self, kind, 0, Some(vec![value]), Some(concat), plan);
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
        // Each rank sends each other rank only the elements of that rank's
        // locations (a pairwise exchange); each rank combines what it got in
        // rank order.
        let per_rank = self.shared().local.per_rank;
        let split: Split<Vec<T>> = Arc::new(move |all: Vec<T>| chunks(all, per_rank));
        let plan = Plan {
            split: Some(split),
            ..Plan::plain()
        };
        let epoch =
            collective::arrive_with(self, Kind::ReduceScatter, 0, Some(values), Some(op), plan);
        let me = self.local_index();
        Portion::new(Collective::new(self, epoch), move |mine: Vec<T>| {
            mine.into_iter()
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

/// Each location's part of a scan on one rank, from the fold of the ranks
/// below (`below`) and the rank's values in location order: the inclusive
/// prefixes, or the exclusive ones that exist (none for a first location
/// without `below`). The last value moves out; only the others are copied.
fn prefixes<T: Clone>(
    below: Option<T>,
    locals: Vec<T>,
    inclusive: bool,
    op: &dyn Fn(T, T) -> T,
) -> Vec<T> {
    let mut out = Vec::with_capacity(locals.len());
    let mut acc = below;
    let mut it = locals.into_iter().peekable();
    while let Some(v) = it.next() {
        let last = it.peek().is_none();
        if !inclusive {
            if last {
                out.extend(acc.take());
                break;
            }
            out.extend(acc.clone());
        }
        let next = match acc.take() {
            Some(a) => op(a, v),
            None => v,
        };
        if inclusive && !last {
            out.push(next.clone());
        }
        acc = Some(next);
    }
    if inclusive {
        out.extend(acc);
    }
    out
}

/// The rows of an all-to-all-v on one rank: per location of the rank, its
/// row cut to one rank's locations.
type Rows<T> = Vec<Vec<Vec<T>>>;

/// The bytes-as-they-are encoding of rows of `T` when `T` is a plain number
/// type, `None` otherwise (the codec encodes them value by value).
fn number_rows<T: 'static>() -> Option<Wire<Rows<T>>> {
    macro_rules! numbers {
        ($($n:ty),*) => {$(
            if TypeId::of::<T>() == TypeId::of::<$n>() {
                return Some(Wire {
                    encode: encode_rows::<T, $n>,
                    decode: decode_rows::<T, $n>,
                });
            }
        )*};
    }
    numbers!(u8, u16, u32, u64, u128, usize, i8, i16, i32, i64, i128, isize, f32, f64);
    None
}

/// Writes `rows` (of `T`, which is `N`) as: the number of rows, then per row
/// the number of its vectors, then per vector its length in bytes and its
/// bytes; every number a `u64` LE.
fn encode_rows<T: 'static, N: Pod>(rows: &Rows<T>, out: &mut Vec<u8>) {
    let Some(rows) = (rows as &dyn Any).downcast_ref::<Rows<N>>() else {
        number_type_changed()
    };
    let bytes: usize = rows.iter().flatten().map(|v| 8 + size_of_val(&v[..])).sum();
    out.reserve(8 + 8 * rows.len() + bytes);
    out.extend_from_slice(&(rows.len() as u64).to_le_bytes());
    for row in rows {
        out.extend_from_slice(&(row.len() as u64).to_le_bytes());
        for v in row {
            let b = codec::bytes_of(v);
            out.extend_from_slice(&(b.len() as u64).to_le_bytes());
            out.extend_from_slice(b);
        }
    }
}

/// Reads what [`encode_rows`] wrote; trusts no length.
fn decode_rows<T: 'static, N: Pod>(bytes: &[u8]) -> Result<Rows<T>, String> {
    fn number(rest: &mut &[u8], what: &str) -> Result<usize, String> {
        let (n, tail) = rest
            .split_first_chunk::<8>()
            .ok_or_else(|| format!("the rows end before {what}"))?;
        *rest = tail;
        usize::try_from(u64::from_le_bytes(*n)).map_err(|_| format!("{what} too large"))
    }
    let mut rest = bytes;
    let count = number(&mut rest, "the number of rows")?;
    // No capacity beyond what the bytes could describe.
    let mut rows: Rows<N> = Vec::with_capacity(count.min(bytes.len() / 8));
    for _ in 0..count {
        let len = number(&mut rest, "a row's length")?;
        let mut row = Vec::with_capacity(len.min(bytes.len() / 8));
        for _ in 0..len {
            let n = number(&mut rest, "a vector's length")?;
            if n > rest.len() {
                return Err(format!("a vector of {n} bytes where {} remain", rest.len()));
            }
            let (v, tail) = rest.split_at(n);
            rest = tail;
            row.push(
                codec::cast_or_copy::<N>(v)
                    .map_err(|e| e.to_string())?
                    .into_owned(),
            );
        }
        rows.push(row);
    }
    if !rest.is_empty() {
        return Err(format!("{} bytes after the rows", rest.len()));
    }
    let rows: Box<dyn Any> = Box::new(rows);
    match rows.downcast::<Rows<T>>() {
        Ok(rows) => Ok(*rows),
        Err(_) => number_type_changed(),
    }
}

/// [`number_rows`] chose the encoding for `T` by its type id, so `T` is `N`.
#[cold]
fn number_type_changed() -> ! {
    panic!("tutti: all_to_all_v: rows of numbers are not of the type checked (broken invariant)")
}

/// A result without this location's part: every contribution was checked to
/// hold one value per location, so only a broken invariant gets here.
#[cold]
fn missing(what: &str) -> ! {
    panic!("tutti: {what}: the result holds no part for this location (broken invariant)")
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn cat(a: String, b: String) -> String {
        a + &b
    }

    #[test]
    fn prefixes_of_a_rank_with_and_without_ranks_below() {
        let locals = || vec!["a".to_string(), "b".into(), "c".into()];
        let below = || Some("<".to_string());
        assert_eq!(prefixes(None, locals(), true, &cat), ["a", "ab", "abc"]);
        assert_eq!(
            prefixes(below(), locals(), true, &cat),
            ["<a", "<ab", "<abc"]
        );
        // Exclusive: the first location of the world has no part.
        assert_eq!(prefixes(None, locals(), false, &cat), ["a", "ab"]);
        assert_eq!(prefixes(below(), locals(), false, &cat), ["<", "<a", "<ab"]);
        assert_eq!(prefixes(below(), vec!["x".into()], false, &cat), ["<"]);
        assert!(prefixes(None, vec!["x".into()], false, &cat).is_empty());
    }

    #[test]
    fn rows_of_numbers_travel_as_bytes_and_back() {
        let rows: Rows<f32> = vec![vec![vec![1.5, -2.0], vec![]], vec![vec![f32::MAX; 1000]]];
        let wire = number_rows::<f32>().expect("f32 is a number");
        let mut out = Vec::new();
        (wire.encode)(&rows, &mut out);
        // Counts, lengths and the values' own bytes: 4 bytes per value.
        assert_eq!(out.len(), 8 + 2 * 8 + 3 * 8 + 4 * 1002);
        assert_eq!((wire.decode)(&out).unwrap(), rows);
        // Odd offsets inside a received buffer are read by copying.
        let mut shifted = vec![0u8];
        shifted.extend_from_slice(&out);
        assert_eq!((wire.decode)(&shifted[1..]).unwrap(), rows);
        assert!(number_rows::<String>().is_none());
        assert!(number_rows::<(u8, u8)>().is_none());
    }

    #[test]
    fn malformed_rows_are_errors_not_panics() {
        let wire = number_rows::<u64>().unwrap();
        let mut out = Vec::new();
        (wire.encode)(&vec![vec![vec![7u64, 8]]], &mut out);
        for cut in 0..out.len() {
            let err = (wire.decode)(&out[..cut]).unwrap_err();
            assert!(
                err.contains("end") || err.contains("remain"),
                "{cut}: {err}"
            );
        }
        let mut long = out.clone();
        long.push(0);
        assert!((wire.decode)(&long).unwrap_err().contains("after the rows"));
        // A vector whose byte length is not a whole number of values.
        let mut odd = out.clone();
        odd[16] = 15;
        odd.pop();
        assert!((wire.decode)(&odd).is_err());
        // Huge counts claim no memory up front.
        let mut huge = u64::MAX.to_le_bytes().to_vec();
        huge.extend_from_slice(&u64::MAX.to_le_bytes());
        assert!((wire.decode)(&huge).is_err());
    }
}
