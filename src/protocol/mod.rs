//! The ground floor: the vocabulary every other module speaks, and nothing else.
//!
//! [`event`] is the schema of logs, the UI and `exec --json` (facts out, [`Command`]
//! intents in); [`evidence`] names the judge's evidence, so a log records it without the
//! judge's code; [`visible`] is how text from outside reaches a person who reads it;
//! [`diffline`] says what a line of a diff is, for the screen and the CLI alike.
//! Serde only: this module imports nothing from the crate, so a log's shape changes only
//! when these files do, and `tests/golden/` says when that happens.

pub(crate) mod diffline;
pub(crate) mod event;
pub(crate) mod evidence;
#[cfg(any(test, feature = "testkit"))]
mod samples;
pub(crate) mod visible;
mod words;

pub use event::*;
pub use evidence::{EvidenceTerm, Observation, SignalKind, StepFacts};
pub use words::{
    candidates_line, candidates_summary, examples_line, examples_summary, protected_touched,
};
