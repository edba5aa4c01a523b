//! What a tool call came back with: its kind (which the judge may read as evidence), its
//! text for the model, and the failures that are the model's to fix.

use serde::{Deserialize, Serialize};

use crate::agent::confine::ConfineError;
use crate::protocol::SignalKind;

/// What kind of result a tool call had; the judge maps some of these to step evidence.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OutcomeKind {
    Ok,
    /// The tool ran and failed (file not found, command exited non-zero, bad regex, ...).
    ToolError,
    /// `apply_patch` did not apply; nothing was changed.
    PatchRejected,
    /// A confinement rule refused the path; nothing was touched.
    Refused,
    /// The arguments were not valid JSON or did not fit the tool's schema.
    BadArguments,
    /// `run` hit its timeout and its process group was killed.
    TimedOut,
    /// `write_file` or `apply_patch` would have changed a protected file
    /// (`agent.protected`); nothing was touched.
    Protected,
    /// `run` failed because the sandbox refused a path outside the writable roots
    /// ([`crate::agent::sandbox::denial`]): a fault of the setup, not the model's.
    SandboxDenied,
}

impl OutcomeKind {
    /// The step signal this outcome is evidence of, if any. A refused path or malformed
    /// arguments are the model's mistakes like any failed call, so they count as tool
    /// errors; a command timing out does too (the model chose the command). A sandbox
    /// denial is none: the setting, not the model, decided it ("faults are not
    /// incompetence").
    pub fn signal(self) -> Option<SignalKind> {
        match self {
            OutcomeKind::Ok | OutcomeKind::SandboxDenied => None,
            OutcomeKind::PatchRejected => Some(SignalKind::PatchRejected),
            OutcomeKind::Protected => Some(SignalKind::TouchedProtected),
            OutcomeKind::ToolError
            | OutcomeKind::Refused
            | OutcomeKind::BadArguments
            | OutcomeKind::TimedOut => Some(SignalKind::ToolError),
        }
    }

    /// Stable snake_case name for logs.
    pub fn name(self) -> &'static str {
        match self {
            OutcomeKind::Ok => "ok",
            OutcomeKind::ToolError => "tool_error",
            OutcomeKind::PatchRejected => "patch_rejected",
            OutcomeKind::Refused => "refused",
            OutcomeKind::BadArguments => "bad_arguments",
            OutcomeKind::TimedOut => "timed_out",
            OutcomeKind::Protected => "protected",
            OutcomeKind::SandboxDenied => "sandbox_denied",
        }
    }
}

/// The result of one tool call, as the loop logs it and the model sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolOutcome {
    pub ok: bool,
    /// What the model sees (already capped).
    pub output: String,
    pub kind: OutcomeKind,
    /// The call may have changed the work tree (a successful write, or any started
    /// command), so the loop knows a checkpoint can differ from the last one.
    pub writes: bool,
    /// Protected paths the call was refused for ([`OutcomeKind::Protected`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub protected: Vec<String>,
    /// A fault of the setup behind the result, for the operator's log
    /// ([`OutcomeKind::SandboxDenied`]'s message).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fault: Option<String>,
}

impl ToolOutcome {
    pub(crate) fn ok(output: String, writes: bool) -> Self {
        ToolOutcome {
            ok: true,
            output,
            kind: OutcomeKind::Ok,
            writes,
            protected: Vec::new(),
            fault: None,
        }
    }

    pub(crate) fn failed(kind: OutcomeKind, output: String) -> Self {
        ToolOutcome {
            ok: false,
            output,
            kind,
            writes: false,
            protected: Vec::new(),
            fault: None,
        }
    }
}

/// Why a file tool failed; converted to a [`ToolOutcome`] at the executor's edge.
#[derive(Debug, thiserror::Error)]
pub enum ToolFailure {
    #[error("bad arguments for {tool}: {message}")]
    BadArguments { tool: String, message: String },
    #[error("refused: {0}")]
    Refused(#[from] ConfineError),
    #[error("{0}")]
    Error(String),
    #[error("{0}")]
    PatchRejected(String),
    /// The paths are protected (`agent.protected`).
    #[error(
        "refused: {} protected (agent.protected): the check depends on it and runs on it as it was at the start, so changing it cannot make the check pass. Fix the code under test instead",
        protected_list(.0)
    )]
    Protected(Vec<String>),
}

fn protected_list(paths: &[String]) -> String {
    let quoted: Vec<String> = paths.iter().map(|p| format!("`{p}`")).collect();
    match quoted.len() {
        1 => format!("{} is", quoted[0]),
        _ => format!("{} are", quoted.join(", ")),
    }
}

impl ToolFailure {
    pub(super) fn into_outcome(self) -> ToolOutcome {
        let kind = match &self {
            ToolFailure::BadArguments { .. } => OutcomeKind::BadArguments,
            ToolFailure::Refused(_) => OutcomeKind::Refused,
            ToolFailure::Error(_) => OutcomeKind::ToolError,
            ToolFailure::PatchRejected(_) => OutcomeKind::PatchRejected,
            ToolFailure::Protected(_) => OutcomeKind::Protected,
        };
        let mut out = ToolOutcome::failed(kind, format!("error: {self}"));
        if let ToolFailure::Protected(paths) = self {
            out.protected = paths;
        }
        out
    }
}
