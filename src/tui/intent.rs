//! What the UI is told at start and what it asks of the outside world.
//!
//! The UI never acts on a session itself: keys become [`Action`]s, and the run loop sends
//! them where they belong (the agent loop for [`Command`]s, the log feeder for
//! [`ReplayControl`]s). Keeping them as data makes every key testable without a terminal.

use tokio::sync::mpsc::Sender;

use super::competence::Counterfactual;
use crate::protocol::{Command, Outcome};

/// How the UI is started.
#[derive(Debug, Clone, Default)]
pub struct UiOptions {
    /// A mode string shown in the title bar, e.g. `demo: scripted models`.
    pub banner: Option<String>,
    /// Where the session log is written, shown in the status bar.
    pub log_path: Option<String>,
    /// `Some` when the UI is fed from a log: keys then steer the feeder through this channel
    /// instead of steering a live session.
    pub replay: Option<Sender<ReplayControl>>,
    /// A second belief trace (the log re-scored under another calibration or policy),
    /// drawn beside the logged one with the ticks where the decisions differ.
    pub counterfactual: Option<Counterfactual>,
}

/// What the operator asks of the task that feeds a replay.
///
/// The feeder owns the position in the log. To seek backwards it re-sends the log from its
/// `SessionStarted` (which resets the UI's session state) up to the target, unpaced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplayControl {
    /// Stop feeding events until `Resume`.
    Pause,
    Resume,
    /// Feed exactly one more event (while paused).
    StepEvent,
    /// Feed up to and including the next `StepEnded`.
    NextStep,
    /// Go back to the end of the previous step.
    PreviousStep,
}

/// Why the UI returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitReason {
    /// The operator quit; if a session was running, `Command::Quit` was sent first.
    Quit,
    /// The operator closed the UI after the session had ended.
    SessionEnded(Outcome),
    /// SIGINT or SIGTERM; `Command::Quit` was sent if a session was running.
    Signal,
    /// The terminal's input stream ended (stdin closed).
    InputClosed,
}

/// An intent produced by a key; the run loop carries it out.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// For the agent loop.
    Agent(Command),
    /// For the replay feeder.
    Replay(ReplayControl),
    /// Leave the UI.
    Exit(ExitReason),
}
