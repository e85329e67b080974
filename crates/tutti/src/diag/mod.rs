//! Seeing inside a running program: a timeline trace of what every worker ran
//! and which message led to what ([`trace`]).

pub mod trace;
