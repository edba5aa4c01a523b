//! handoff: a junior coding agent watched by an external, calibrated judge that hands
//! control to a senior model or the operator when its competence posterior B_t falls
//! below a threshold τ_t. The module walls are in ARCHITECTURE.md: `competence` and `metrics`
//! are pure science; everything else is plumbing around one stream of [`protocol::Event`]s.
//!
//! A module is `pub` only when something outside the crate (the binary's `cli`, tests,
//! benches, examples) uses it; the others are crate-private so the dead-code lint sees into
//! them (`.ci/run` denies dead code in the library).

pub mod agent;
pub mod analysis;
pub mod app;
pub(crate) mod beneath;
pub(crate) mod chain;
pub mod cli;
pub(crate) mod code;
pub mod competence;
pub mod config;
pub mod demo;
pub mod diffview;
pub mod eval;
pub mod exit;
pub(crate) mod ignorewalk;
pub(crate) mod infile;
pub(crate) mod instructions;
pub mod judge;
pub mod llm;
pub mod log;
pub mod metrics;
pub mod presets;
pub mod protocol;
pub mod repo;
pub(crate) mod router;
pub mod sim;
pub(crate) mod treefiles;
pub mod tui;
