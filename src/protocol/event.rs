//! The one schema everything shares: what happened in a session.
//!
//! The agent loop is the only producer in a live session; the TUI, the JSONL log writer,
//! `exec --json` and the metrics are consumers. Replay feeds the same consumers from a log,
//! so there is no second vocabulary for the same fact. Variants are named for what
//! happened. Logs carry [`SCHEMA_VERSION`] in their header; adding an optional field is
//! compatible, renaming or removing one needs a new version.

use serde::{Deserialize, Serialize};

use super::evidence::EvidenceTerm;

/// Version of the event schema written in every log header.
pub const SCHEMA_VERSION: u32 = 1;

/// One example run against the code: the call, the value the task states, what the code
/// gave (its `repr`, cut at 200 characters) or the error it raised.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExampleCheck {
    pub call: String,
    pub expected: String,
    pub passed: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub got: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// One of the k candidates of the junior's first reply (`agent.candidates`) and what it did
/// on the probe's inputs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CandidateRun {
    /// The sampling temperature it was drawn at (the first is the endpoint's own).
    pub temperature: f32,
    /// Tokens the reply streamed.
    pub tokens: u64,
    /// Its behaviour group; absent when it wrote no code or its code did not run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<u32>,
    pub examples_passed: u32,
    pub examples_failed: u32,
    /// Why it is in no group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// Which model produced something.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Actor {
    Junior,
    Senior,
}

/// Where control goes when the judge gives up on the junior.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Route {
    /// A frontier model takes over (one step or the rest).
    Senior,
    /// One targeted question goes to the person at the keyboard.
    Operator,
}

/// Why an escalation happened; only `Threshold` is the judge's own decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EscalationReason {
    /// B_t fell below τ_t.
    Threshold,
    /// The operator pressed "force escalate".
    Forced,
    /// The junior called `ask_operator` itself.
    SelfAsk,
    /// The junior's endpoint kept failing; handing off is a fault path, not evidence.
    Fault,
    /// No progress: the same move again and again on an unchanged work tree, or replies
    /// without a usable tool call past `agent.max_repairs`.
    Stuck,
    /// The junior's check failed and `policy.escalate_on_failed_check` is set: the
    /// cascade's "hand off on the first failed check", for tasks that have a check.
    CheckFailed,
    /// The junior's code failed the task's own examples and
    /// `policy.escalate_on_failed_examples` is set: the hand-off a session can make before
    /// (or without) any check.
    ExamplesFailed,
    /// `policy.ask_first`: the one question to the operator before the junior's first
    /// step, whatever B_t says (HiL-Bench's "ask once at the start" baseline).
    AtStart,
}

/// How the session ended, as a label for calibration and scoring.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The check passed (or the operator accepted the result).
    Success,
    /// The check failed (or the operator rejected the result).
    Failure,
    /// The session stopped before a result: quit, fatal fault, budget exhausted.
    Aborted,
    /// Finished, but nothing could say whether the result is correct.
    Unlabelled,
}

/// One alternative from the model's top-k logprobs at a position.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Alternative {
    pub token: String,
    pub logprob: f64,
}

/// Ask-F1 counts of one session (HiL-Bench style; see `metrics`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AskCounts {
    /// Escalations that were needed.
    pub tp: u32,
    /// Escalations that were not needed.
    pub fp: u32,
    /// A failure with no escalation.
    #[serde(rename = "fn")]
    pub fn_: u32,
}

/// Something that happened in a session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    /// The first event of every session.
    SessionStarted {
        session_id: String,
        task: String,
        repo: String,
        /// Commit id of HEAD when the session began, if the repository has one.
        head: Option<String>,
        /// SHA-256 of the effective configuration (secrets are never part of it).
        config_digest: String,
        junior_model: String,
        senior_model: String,
        /// Name of the threshold policy (`constant`, `myopic`, `optimal`).
        policy: String,
        shadow: bool,
        /// T: the junior token budget the threshold schedule was built for.
        token_budget: u64,
        /// π₀: the belief before any evidence.
        prior: f64,
    },
    StepStarted {
        step: u32,
        actor: Actor,
        /// Junior output tokens so far (the judge's clock).
        tick: u64,
    },
    /// One output token with its logprob and the top-k alternatives.
    ///
    /// Junior tokens advance the tick; senior tokens are logged at the current tick.
    Token {
        actor: Actor,
        tick: u64,
        text: String,
        logprob: Option<f64>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        top: Vec<Alternative>,
    },
    /// The judge's belief after new evidence.
    BeliefUpdated {
        tick: u64,
        /// B_t, calibrated.
        belief: f64,
        /// ℓ_t, the raw (tempered) log-odds before the calibration map.
        log_odds: f64,
        /// τ_t at this tick.
        threshold: f64,
        policy: String,
        /// The evidence added at this tick.
        terms: Vec<EvidenceTerm>,
    },
    ToolCalled {
        step: u32,
        actor: Actor,
        call_id: String,
        name: String,
        arguments: serde_json::Value,
    },
    /// A tool call waits for the operator's yes or no (answered by `Command::Approve`).
    ApprovalRequested {
        step: u32,
        call_id: String,
        name: String,
        /// What the call would do, whole: a `run`'s full command; for a patch a first
        /// line, then one line per file it creates, deletes, renames or changes.
        summary: String,
    },
    /// Approval given or refused for a tool call, by the operator or the policy.
    ApprovalDecided {
        step: u32,
        call_id: String,
        approved: bool,
        /// `operator`, `policy` or `flag`.
        by: String,
    },
    ToolResulted {
        step: u32,
        call_id: String,
        name: String,
        ok: bool,
        /// What the model sees (capped).
        output: String,
    },
    StepEnded {
        step: u32,
        actor: Actor,
        tick: u64,
        tool: Option<String>,
        ok: bool,
        /// B_t at the end of the step.
        belief: f64,
        /// Step evidence added at this tick.
        terms: Vec<EvidenceTerm>,
        /// Git tree id of the checkpoint taken after the step.
        checkpoint: Option<String>,
    },
    /// Control left the junior (or, in shadow mode, would have).
    Escalated {
        step: u32,
        tick: u64,
        route: Route,
        reason: EscalationReason,
        belief: f64,
        threshold: f64,
        /// The evidence that moved the belief most in the current step (why).
        why: Vec<EvidenceTerm>,
        /// True when nothing was handed off because the session is in shadow mode.
        shadow: bool,
        /// Under shadow exploration (`policy.explore`), the probability with which this
        /// decision went the way it did: 1 − ε for a hand-off, ε for an explored one
        /// (`shadow` true). Absent when the decision was not drawn (and in older logs).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        propensity: Option<f64>,
    },
    OperatorAsked {
        step: u32,
        question: String,
        #[serde(default)]
        options: Vec<String>,
        /// What the junior would assume without an answer.
        default_assumption: Option<String>,
        self_initiated: bool,
        /// The detail the question is about, in the writer's words (the operator's modal
        /// names it); `None` for the junior's own questions and older logs.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        topic: Option<String>,
    },
    OperatorAnswered {
        step: u32,
        answer: String,
        /// The operator's mark: was this question needed? `None` when not given.
        needed: Option<bool>,
        /// The operator chose "let the senior decide".
        deferred_to_senior: bool,
    },
    SeniorTookOver {
        step: u32,
        tick: u64,
        /// `step` or `rest`.
        mode: String,
        /// Size of the distilled handoff context, in characters.
        context_chars: u64,
    },
    SeniorReturned {
        step: u32,
        tick: u64,
    },
    /// Tokens and money of one model request.
    CostIncurred {
        actor: Actor,
        model: String,
        input_tokens: u64,
        output_tokens: u64,
        usd: f64,
        /// True when the server sent no usage and the tokens were counted locally.
        estimated: bool,
    },
    CheckRan {
        command: String,
        exit_code: Option<i32>,
        passed: bool,
        output_tail: String,
    },
    /// The task's own examples (docstrings, the task text) ran against the tree a step left:
    /// evidence the harness gets before any grading check, never the check itself.
    ExamplesRan {
        step: u32,
        actor: Actor,
        /// The files whose examples ran.
        files: Vec<String>,
        passed: u32,
        failed: u32,
        /// Lines that looked like examples and could not be read as one.
        unread: u32,
        results: Vec<ExampleCheck>,
        /// Why nothing could be judged (the module did not import, the run was stopped).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        note: Option<String>,
    },
    /// The junior's first reply was k samples: each ran on the same inputs (the examples'
    /// calls, then inputs derived from them) in the sandbox, and the candidate the evidence
    /// ranks first is the one placed.
    CandidatesRan {
        step: u32,
        /// The file whose module the candidates were run as.
        file: String,
        /// The inputs every candidate ran on, the examples' calls first.
        probes: Vec<String>,
        candidates: Vec<CandidateRun>,
        /// Members per behaviour group.
        groups: Vec<u32>,
        /// The candidate placed (an index into `candidates`).
        chosen: u32,
        /// Why the candidates could not be compared.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        note: Option<String>,
    },
    /// A fault of the infrastructure (network, server, timeout). Never evidence.
    Fault {
        actor: Actor,
        /// Machine-readable class: `connect`, `rate_limited`, `server`, `protocol`, ...
        kind: String,
        message: String,
        retryable: bool,
        /// The request's attempt; 0 for a fault of a tool's setup (`sandbox_denied`: the
        /// sandbox refused a path a command needed), which no retry changes.
        attempt: u32,
    },
    /// The session's control state after a `Pause`, `Resume` or `SetShadow` command: every
    /// such command is answered by one, so the screen shows what the session does and a
    /// replay applies a shadow toggle at the decision where it happened live.
    ControlChanged {
        /// The session stops before its next step until `Resume`.
        paused: bool,
        /// Decisions are logged, not acted on.
        shadow: bool,
    },
    /// A step tried to change files the check depends on (`agent.protected`), or its
    /// command changed git metadata (`git`). Logged once
    /// per step in which it happened, after the step's tool result; the step's facts carry
    /// `touched_protected`. The label stays honest either way: the check runs on the files
    /// as they were at the session's start.
    ProtectedTouched {
        step: u32,
        /// Repository paths a file tool refused to change (nothing was written).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        refused: Vec<String>,
        /// Paths a command changed, renamed away or deleted, put back as they were.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        restored: Vec<String>,
        /// Paths that could not be put back, each with why; the check then does not run
        /// and the session is labelled a failure.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        unrestored: Vec<String>,
        /// Git metadata a `run` command changed — the repository's `.git` where it was not
        /// mounted read-only, a `.git` or gitfile below the root, index flags — one line
        /// each saying what handoff undid or could not. Any makes the session exit 5
        /// ([`crate::exit::Exit::Repaired`]); absent in logs written before the field.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        git: Vec<String>,
    },
    /// Something the operator should know that is not a fault (e.g. no logprobs).
    Warning {
        kind: String,
        message: String,
    },
    SessionEnded {
        outcome: Outcome,
        /// Escalated sessions never show the junior's own outcome: censored for calibration.
        censored: bool,
        steps: u32,
        /// Junior output tokens.
        ticks: u64,
        usd: f64,
        ask: AskCounts,
    },
}

impl Event {
    /// The snake_case tag of this event, as written in the `type` field.
    /// The judge's clock where the event says it happened, for the events that carry it.
    pub fn tick(&self) -> Option<u64> {
        match self {
            Event::StepStarted { tick, .. }
            | Event::Token { tick, .. }
            | Event::BeliefUpdated { tick, .. }
            | Event::StepEnded { tick, .. }
            | Event::Escalated { tick, .. }
            | Event::SeniorTookOver { tick, .. }
            | Event::SeniorReturned { tick, .. } => Some(*tick),
            _ => None,
        }
    }

    pub fn kind(&self) -> &'static str {
        match self {
            Event::SessionStarted { .. } => "session_started",
            Event::StepStarted { .. } => "step_started",
            Event::Token { .. } => "token",
            Event::BeliefUpdated { .. } => "belief_updated",
            Event::ToolCalled { .. } => "tool_called",
            Event::ApprovalRequested { .. } => "approval_requested",
            Event::ApprovalDecided { .. } => "approval_decided",
            Event::ToolResulted { .. } => "tool_resulted",
            Event::StepEnded { .. } => "step_ended",
            Event::Escalated { .. } => "escalated",
            Event::OperatorAsked { .. } => "operator_asked",
            Event::OperatorAnswered { .. } => "operator_answered",
            Event::SeniorTookOver { .. } => "senior_took_over",
            Event::SeniorReturned { .. } => "senior_returned",
            Event::CostIncurred { .. } => "cost_incurred",
            Event::CheckRan { .. } => "check_ran",
            Event::ExamplesRan { .. } => "examples_ran",
            Event::CandidatesRan { .. } => "candidates_ran",
            Event::Fault { .. } => "fault",
            Event::ControlChanged { .. } => "control_changed",
            Event::ProtectedTouched { .. } => "protected_touched",
            Event::Warning { .. } => "warning",
            Event::SessionEnded { .. } => "session_ended",
        }
    }

    /// Events at which the log is synced to disk (a step or the session is complete).
    pub fn is_durability_point(&self) -> bool {
        matches!(self, Event::StepEnded { .. } | Event::SessionEnded { .. })
    }
}

/// What the operator (through the TUI or `exec`) asks of a running session.
///
/// Intents go in, [`Event`]s come out: the agent loop is the only place that acts on these.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Command {
    Pause,
    Resume,
    /// Hand off now, whatever the belief says.
    ForceEscalate,
    /// Switch shadow mode on or off from the next decision on.
    SetShadow {
        on: bool,
    },
    /// The answer to the pending operator question.
    Answer {
        answer: String,
        /// The operator's mark: was the question needed?
        needed: Option<bool>,
    },
    /// "Let the senior decide" instead of answering.
    DeferToSenior,
    /// The answer to a pending approval request.
    Approve {
        call_id: String,
        approved: bool,
    },
    /// Stop the session (it ends as `aborted`; the log is flushed).
    Quit,
}

/// An event with the time it happened, as written to logs and `exec --json`.
///
/// `t_ms` is milliseconds since the session started; replay uses it to pace itself.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Stamped {
    pub t_ms: u64,
    #[serde(flatten)]
    pub event: Event,
}

#[cfg(test)]
#[path = "event_tests.rs"]
mod tests;
