//! The seed applications: real computations that verify their own results.

pub mod csp_demo;
pub mod db;
pub mod gauss;
pub mod hello;
pub mod mad;
pub mod sort;
pub mod weather;
