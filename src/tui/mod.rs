//! The terminal UI of `handoff run`, `handoff demo` and `handoff replay`.
//!
//! A pure consumer of [`crate::protocol::Stamped`] events that emits [`crate::protocol::Command`]
//! intents (and, in replay, [`ReplayControl`] intents for the log feeder). It knows nothing
//! of HTTP, git or the judge's maths: everything it shows comes out of the event stream, so
//! a live session and a replayed log look the same.
//!
//! Shape (the reducer pattern of ratatui apps such as gitui and the codex-rs TUI):
//! [`state::AppState`] is the only place state changes — [`state::AppState::apply`] for
//! events, [`state::AppState::handle_key`] for keys — and [`ui::draw`] is a pure function
//! of it. Each panel is a component that owns its state, applies the events that change
//! it, handles the keys it consumes and describes its own key hints, so the help overlay
//! is never stale; `apply` and `handle_key` only hand events and keys to the panels. [`run::run`] turns
//! terminal input, agent events and a slow clock into one stream of messages and redraws
//! on demand, coalesced.

pub(crate) mod approval;
pub(crate) mod competence;
pub(crate) mod help;
pub(crate) mod input;
pub(crate) mod intent;
pub(crate) mod keys;
mod notes;
pub(crate) mod patchview;
pub(crate) mod question;
pub(crate) mod run;
pub(crate) mod state;
pub(crate) mod status;
pub(crate) mod steps;
pub(crate) mod terminal;
pub(crate) mod text;
pub(crate) mod transcript;
pub mod ui;

#[cfg(test)]
mod fixture;
#[cfg(test)]
mod key_tests;
#[cfg(test)]
mod perf_tests;
#[cfg(test)]
mod run_tests;
#[cfg(test)]
mod snapshot_tests;

pub use competence::{Counterfactual, CounterfactualPoint};
pub use intent::{Action, ExitReason, ReplayControl, UiOptions};
pub use run::{Shutdown, run};
pub use state::AppState;

/// Why the UI could not keep running.
#[derive(Debug, thiserror::Error)]
pub enum TuiError {
    /// The terminal could not be put into (or drawn in) the mode the UI needs.
    #[error("terminal I/O failed: {0}")]
    Io(#[from] std::io::Error),
    /// Drawing through the backend failed.
    #[error("drawing failed: {0}")]
    Draw(String),
}
