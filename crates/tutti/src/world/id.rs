//! Flat location ids (ARMI's flat view of threads × processes).

use std::fmt;

/// The world-wide id of one location: `rank × locations_per_rank + local index`.
///
/// Every rank has the same number of locations, so an id names its rank and its
/// place within the rank without a table, and ids `0..world.locations()` are all
/// the locations there are.
///
/// ```
/// use tutti::world::LocationId;
/// let id = LocationId::new(7);
/// assert_eq!(id.index(), 7);
/// assert_eq!(id.rank(4), 1);
/// assert_eq!(id.local(4), 3);
/// assert_eq!(id.to_string(), "location 7");
/// ```
#[derive(
    Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
pub struct LocationId(u32);

impl LocationId {
    /// The location with flat index `index`.
    pub const fn new(index: u32) -> LocationId {
        LocationId(index)
    }

    /// The flat index.
    pub const fn index(self) -> usize {
        self.0 as usize
    }

    /// The rank this location lives on, for `per_rank` locations per rank.
    pub const fn rank(self, per_rank: usize) -> usize {
        self.0 as usize / per_rank
    }

    /// This location's index within its rank, for `per_rank` locations per rank.
    pub const fn local(self, per_rank: usize) -> usize {
        self.0 as usize % per_rank
    }

    pub(crate) const fn raw(self) -> u32 {
        self.0
    }
}

impl fmt::Debug for LocationId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "L{}", self.0)
    }
}

impl fmt::Display for LocationId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "location {}", self.0)
    }
}
