//! handoff: a junior coding agent watched by an external, calibrated judge that hands
//! control to a senior model or the operator when its competence posterior B_t falls
//! below a threshold τ_t. See DESIGN.md for the module walls: `competence` and `metrics`
//! are pure science; everything else is plumbing around one stream of [`event::Event`]s.

pub mod agent;
pub mod competence;
pub mod config;
pub mod demo;
pub mod diffview;
pub mod eval;
pub mod event;
pub mod exec;
pub mod exit;
pub mod instructions;
pub mod interactive;
pub mod llm;
pub mod metrics;
pub mod presets;
pub mod repo;
pub mod router;
pub mod sim;
pub mod trajectory;
pub mod tui;
