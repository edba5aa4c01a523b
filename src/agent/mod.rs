//! The agent: tools over a confined workspace (and, later, the step loop that calls them).

pub mod confine;
pub mod sandbox;
pub mod tools;
