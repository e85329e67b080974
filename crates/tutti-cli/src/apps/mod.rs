//! The seed applications: real computations that verify their own results.

pub mod gauss;
pub mod hello;
pub mod sort;
