//! The representative messages of `tutti bench codec`, made from a seed.
//!
//! * [`Small`]: a few scalars, the size of a typical remote call or actor message;
//! * [`Named`]: strings and a vector of strings, e.g. a registry entry;
//! * [`Floats`]: a vector of `f64`, bulk numeric data ([`PodFloats`] is the same data
//!   through tutti's plain-old-data fast path);
//! * [`Shape`]: nested enums, a tree three levels deep.

use serde::{Deserialize, Serialize};

use crate::rng::Rng;

/// A few scalars: a point update.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Small {
    /// Which point.
    pub id: u32,
    /// Its new coordinates.
    pub x: f64,
    /// Its new coordinates.
    pub y: f64,
    /// Whether it is pinned.
    pub pinned: bool,
}

/// Strings: a name with tags and a count.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Named {
    /// A dotted name.
    pub name: String,
    /// Short tags.
    pub tags: Vec<String>,
    /// A count.
    pub count: u64,
}

/// Bulk numeric data through serde's sequence model.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Floats(pub Vec<f64>);

/// The same data through tutti's plain-old-data fast path.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PodFloats(pub tutti::msg::codec::PodVec<f64>);

/// Nested enums: a tree of shapes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Shape {
    /// A circle of radius `r`.
    Circle {
        /// Radius.
        r: f64,
    },
    /// A polygon.
    Poly(Vec<(f32, f32)>),
    /// A labelled group of shapes.
    Group(String, Vec<Shape>),
}

/// A small message.
pub fn small(rng: &mut Rng) -> Small {
    Small {
        id: rng.below(1 << 20) as u32,
        x: rng.unit_f64() * 100.0,
        y: rng.unit_f64() * -100.0,
        pinned: rng.below(2) == 1,
    }
}

/// A message with strings.
pub fn named(rng: &mut Rng) -> Named {
    let word = |rng: &mut Rng, len: u64| -> String {
        (0..len)
            .map(|_| char::from(b'a' + rng.below(26) as u8))
            .collect()
    };
    Named {
        name: format!("{}.{}.{}", word(rng, 4), word(rng, 7), word(rng, 6)),
        tags: (0..4)
            .map(|_| {
                let len = 3 + rng.below(6);
                word(rng, len)
            })
            .collect(),
        count: rng.next_u64() >> rng.below(64),
    }
}

/// `n` floats.
pub fn floats(rng: &mut Rng, n: usize) -> Vec<f64> {
    (0..n).map(|_| rng.unit_f64() * 1e3 - 5e2).collect()
}

/// A shape tree: groups of `fanout` children, `depth` levels of groups.
pub fn shape(rng: &mut Rng, depth: u32, fanout: u32) -> Shape {
    if depth == 0 {
        return if rng.below(2) == 0 {
            Shape::Circle { r: rng.unit_f64() }
        } else {
            let n = 3 + rng.below(4);
            Shape::Poly(
                (0..n)
                    .map(|_| (rng.unit_f64() as f32, rng.unit_f64() as f32))
                    .collect(),
            )
        };
    }
    Shape::Group(
        format!("g{}", rng.below(1000)),
        (0..fanout).map(|_| shape(rng, depth - 1, fanout)).collect(),
    )
}
