//! `[policy]`: when the judge hands off, to whom, and how the senior takes over.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ThresholdKind {
    Constant,
    Myopic,
    Optimal,
    /// The step schedule in `policy.step_schedule` (written by `handoff schedule --write`),
    /// decided at junior step ends only.
    Steps,
}

impl ThresholdKind {
    pub fn name(self) -> &'static str {
        match self {
            ThresholdKind::Constant => "constant",
            ThresholdKind::Myopic => "myopic",
            ThresholdKind::Optimal => "optimal",
            ThresholdKind::Steps => "steps",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RouteMode {
    /// Ask the senior whether the blocker is missing information (operator) or capability (senior).
    Triage,
    Senior,
    Operator,
}

/// Which model writes the one question to the operator (the triage call, and the question
/// of `ask_first`): the senior reads the note with more skill, the junior is cheaper and
/// is the one that lacks the detail. On the HumanEval blocker suite neither found the
/// missing detail (0 and 1 of 18 blockers), so the senior stays the default on thin
/// evidence (docs/results/2026-12-06-operator-writers.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum QuestionWriter {
    Senior,
    Junior,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HandoffMode {
    /// The senior does one step, then control returns to the junior.
    Step,
    /// The senior finishes the task from the junior's tree.
    Rest,
    /// The senior finishes from the session's start: the work tree goes back to the first
    /// checkpoint (the junior's tree is kept as the checkpoint `before-restart`) and the
    /// note names the files the junior's attempt touched without showing its code. The
    /// default: on the code lane a 1.5B senior taking over from the 0.5B at its first
    /// failed check solved 0 of 11 tasks in `rest` (it sent the junior's failed code back
    /// in 9 of 11 first replies) and 5 of 11 in `restart`, as many as alone
    /// (docs/results/2026-12-06-takeover.md).
    Restart,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PolicyConfig {
    pub threshold: ThresholdKind,
    /// τ for the `constant` policy.
    pub constant: f64,
    pub route: RouteMode,
    pub handoff: HandoffMode,
    /// Compute and log every decision, never hand off.
    pub shadow: bool,
    /// A calibration JSON written by `handoff calibrate`; `None` uses the built-in prior.
    pub calibration: Option<PathBuf>,
    /// The calibration for a session without `agent.check`, in place of `calibration`: a
    /// judge fitted without the check's facts (`calibrate --no-check`) on sessions that log
    /// the task's examples. A judge fitted with the check learns to wait for it, and a
    /// session without one never gets it; this one decides after the first reply from
    /// what the examples said (docs/results/2026-12-07-judge-reads-examples.md).
    pub calibration_without_check: Option<PathBuf>,
    /// For `threshold = "steps"`: the JSON `handoff schedule --write FILE` wrote (its
    /// `tau`, one τ per junior step end).
    pub step_schedule: Option<PathBuf>,
    /// Steps after a return from the senior during which no new escalation happens.
    pub cooldown_steps: u32,
    /// The optimal schedule is computed every this many ticks and held constant between.
    pub schedule_stride: u32,
    /// Shadow exploration ε: each live decision to hand off is instead explored (the
    /// session goes on in shadow mode, its outcome observed) with this probability, logged
    /// as the decision's propensity, so `calibrate` can weight censored corpora. 0 = off.
    pub explore: f64,
    /// Seed of the exploration draws (mixed with the task text, so sessions of different
    /// tasks draw differently and a session is reproducible).
    pub explore_seed: u64,
    /// Hand off the first time the junior's code fails the task's check (`agent.check`,
    /// code protocol), whatever B_t says: the cascade's "hand off on the first failed
    /// check". With a check, a failed run is the strongest evidence the loop has; on the
    /// real lane the 0.5B's own retries after a failed check rarely recover
    /// (docs/results/2026-12-05-code-protocol.md). Logged with reason `check_failed`.
    pub escalate_on_failed_check: bool,
    /// Hand off the first time the junior's code fails an example the task states (its
    /// docstrings, the task's text; code protocol), whatever B_t says: the hand-off a
    /// session without a check can make. A check that passes the same tree wins (the
    /// session ends a success). Shares `escalate_on_failed_check`'s once-per-session rule;
    /// logged with reason `examples_failed`.
    pub escalate_on_failed_examples: bool,
    /// Who writes the operator's question: the triage call goes to this model.
    pub question_writer: QuestionWriter,
    /// Before the junior's first step, one question to the operator written (by
    /// `question_writer`) from the first message alone: HiL-Bench's "ask once at the start"
    /// baseline, logged with reason `at_start`.
    pub ask_first: bool,
    /// The junior is told it may reply `ASK: <question>` instead of code (`code`
    /// protocol; the tool protocols always offer `ask_operator`). Off by default: a small
    /// model told it may ask tends to ask instead of trying.
    pub junior_may_ask: bool,
}

impl Default for PolicyConfig {
    fn default() -> Self {
        PolicyConfig {
            threshold: ThresholdKind::Optimal,
            constant: 0.5,
            route: RouteMode::Triage,
            handoff: HandoffMode::Restart,
            shadow: false,
            calibration: None,
            calibration_without_check: None,
            step_schedule: None,
            cooldown_steps: 2,
            schedule_stride: 64,
            explore: 0.0,
            explore_seed: 0,
            escalate_on_failed_check: false,
            escalate_on_failed_examples: false,
            question_writer: QuestionWriter::Senior,
            ask_first: false,
            junior_may_ask: false,
        }
    }
}
