//! The vocabulary of evidence the judge understands.
//!
//! Every signal that can move the belief has a name here, so logs, calibration files and
//! the UI all speak of the same things. Token signals arrive once per junior output token;
//! step signals once per finished tool step, at the tick where the step ends.

use serde::{Deserialize, Serialize};

/// A named source of evidence about whether the junior will finish correctly.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SignalKind {
    /// Entropy (nats) of the next-token distribution over the top-k plus the tail bucket.
    Entropy,
    /// Probability gap between the two most likely alternatives.
    Margin,
    /// −log p of the token actually chosen (nats).
    Surprise,
    /// A tool call returned an error.
    ToolError,
    /// `apply_patch` was rejected.
    PatchRejected,
    /// The check command ran and failed.
    CheckFailed,
    /// The same tool call with the same arguments on the same work tree as an earlier step,
    /// or the same reply again; the value is how many times it came before.
    RepeatedAction,
    /// A step that changed nothing in the work tree.
    NoDiff,
    /// The reply tried to call a tool and the call could not be used (not JSON, an unknown
    /// tool, missing or mistyped arguments).
    MalformedCall,
    /// The reply called no tool at all (text only).
    NoToolCall,
    /// A test run after an edit has fewer failing tests than the run before it (or passes
    /// where it failed): progress, the one step fact that raises the belief.
    TestsFixed,
    /// Several steps in a row repeated a call on an unchanged tree: the junior is going round.
    Stuck,
    /// The step tried to change a file the check depends on (`agent.protected`): a file
    /// tool was refused, or a command changed, renamed or deleted one and it was put back.
    /// Rewriting the test instead of the code is how small models fake a pass.
    TouchedProtected,
    /// After this step's edit the code fails at least one example the task states (its
    /// docstrings, its text), run by the harness in the sandbox. Evidence from execution
    /// that needs no grading check: on HumanEval the 0.5B's first reply passing its
    /// examples predicts the hidden verdict at AUROC 0.92 (docs/results/2026-12-07-examples-evidence.md).
    ExamplesFailed,
    /// After this step's edit every example the task states that the harness could run
    /// passed (at least one ran).
    ExamplesPassed,
    /// The junior's first reply was k candidates and at least three quarters of them behave
    /// alike on the task's examples and the inputs derived from them (`agent.candidates`).
    CandidatesAgree,
    /// The junior's k candidates split: no behaviour group holds more than half of them.
    CandidatesSplit,
}

impl SignalKind {
    /// All kinds, in a fixed order (used for tables and calibration files).
    pub const ALL: [SignalKind; 17] = [
        SignalKind::Entropy,
        SignalKind::Margin,
        SignalKind::Surprise,
        SignalKind::ToolError,
        SignalKind::PatchRejected,
        SignalKind::CheckFailed,
        SignalKind::RepeatedAction,
        SignalKind::NoDiff,
        SignalKind::MalformedCall,
        SignalKind::NoToolCall,
        SignalKind::TestsFixed,
        SignalKind::Stuck,
        SignalKind::TouchedProtected,
        SignalKind::ExamplesFailed,
        SignalKind::ExamplesPassed,
        SignalKind::CandidatesAgree,
        SignalKind::CandidatesSplit,
    ];

    /// Token signals are continuous and arrive per token; the others are binary step facts.
    pub fn is_token_signal(self) -> bool {
        matches!(
            self,
            SignalKind::Entropy | SignalKind::Margin | SignalKind::Surprise
        )
    }

    /// The bin edges of a step signal's likelihood: present/absent for a fact, and for a
    /// repeat count 0, 1, 2 and 3 or more, so a move made again and again weighs more each
    /// time.
    pub fn step_edges(self) -> &'static [f64] {
        match self {
            SignalKind::RepeatedAction => &[0.5, 1.5, 2.5],
            _ => &[0.5],
        }
    }

    /// Step facts logged only when present (the seven of [`StepFacts`] are logged on every
    /// step, present or absent). Their likelihoods are per-step rates, not histograms.
    pub fn is_sparse(self) -> bool {
        matches!(
            self,
            SignalKind::TestsFixed
                | SignalKind::Stuck
                | SignalKind::TouchedProtected
                | SignalKind::ExamplesFailed
                | SignalKind::ExamplesPassed
                | SignalKind::CandidatesAgree
                | SignalKind::CandidatesSplit
        )
    }

    /// Position in [`SignalKind::ALL`], so per-signal tables are plain arrays (no hashing
    /// on the per-token path).
    pub fn index(self) -> usize {
        self as usize
    }

    /// Stable snake_case name, as in logs and calibration files.
    pub fn name(self) -> &'static str {
        match self {
            SignalKind::Entropy => "entropy",
            SignalKind::Margin => "margin",
            SignalKind::Surprise => "surprise",
            SignalKind::ToolError => "tool_error",
            SignalKind::PatchRejected => "patch_rejected",
            SignalKind::CheckFailed => "check_failed",
            SignalKind::RepeatedAction => "repeated_action",
            SignalKind::NoDiff => "no_diff",
            SignalKind::MalformedCall => "malformed_call",
            SignalKind::NoToolCall => "no_tool_call",
            SignalKind::TestsFixed => "tests_fixed",
            SignalKind::Stuck => "stuck",
            SignalKind::TouchedProtected => "touched_protected",
            SignalKind::ExamplesFailed => "examples_failed",
            SignalKind::ExamplesPassed => "examples_passed",
            SignalKind::CandidatesAgree => "candidates_agree",
            SignalKind::CandidatesSplit => "candidates_split",
        }
    }
}

/// One piece of evidence and how far it moved the log-odds.
///
/// `value` is the raw observation (nats, a probability gap, or 1.0 for a step fact), kept so
/// a log can be re-scored later under another calibration; `llr` is the tempered
/// log-likelihood ratio log f₁(value)/f₀(value) that was added to the belief.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct EvidenceTerm {
    pub signal: SignalKind,
    pub value: f64,
    pub llr: f64,
}

impl EvidenceTerm {
    /// The raw observation behind this term, to be judged again under another calibration.
    pub fn observation(&self) -> Observation {
        Observation {
            signal: self.signal,
            value: self.value,
        }
    }
}

/// One raw observation of a signal, before any calibration turns it into a log-likelihood
/// ratio. Trajectories store these so a session can be re-scored under another calibration.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Observation {
    pub signal: SignalKind,
    pub value: f64,
}

/// What the agent found out about one finished step.
///
/// The caller detects these facts (it owns tools and the repository); the judge only turns
/// them into evidence. Every step reports all seven, present or absent, because a step that
/// went well is also (weak) evidence once a calibration has learned it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepFacts {
    pub tool_error: bool,
    pub patch_rejected: bool,
    pub check_failed: bool,
    /// How many earlier steps made this same move (0: a new one); see [`SignalKind::RepeatedAction`].
    pub repeats: u32,
    pub no_diff: bool,
    pub malformed_call: bool,
    pub no_tool_call: bool,
}

impl StepFacts {
    /// The step signals in [`SignalKind::ALL`] order, each 1.0 when present and 0.0 when absent.
    pub fn observations(&self) -> [Observation; 7] {
        let obs = |signal, present: bool| Observation {
            signal,
            value: if present { 1.0 } else { 0.0 },
        };
        let repeats = Observation {
            signal: SignalKind::RepeatedAction,
            value: f64::from(self.repeats),
        };
        [
            obs(SignalKind::ToolError, self.tool_error),
            obs(SignalKind::PatchRejected, self.patch_rejected),
            obs(SignalKind::CheckFailed, self.check_failed),
            repeats,
            obs(SignalKind::NoDiff, self.no_diff),
            obs(SignalKind::MalformedCall, self.malformed_call),
            obs(SignalKind::NoToolCall, self.no_tool_call),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn index_matches_the_position_in_all() {
        for (i, kind) in SignalKind::ALL.iter().enumerate() {
            assert_eq!(kind.index(), i);
        }
    }

    #[test]
    fn step_observations_mark_exactly_the_present_facts() {
        let facts = StepFacts {
            patch_rejected: true,
            no_diff: true,
            ..StepFacts::default()
        };
        let present: Vec<SignalKind> = facts
            .observations()
            .iter()
            .filter(|o| o.value == 1.0)
            .map(|o| o.signal)
            .collect();
        assert_eq!(present, vec![SignalKind::PatchRejected, SignalKind::NoDiff]);
        assert!(
            facts
                .observations()
                .iter()
                .all(|o| !o.signal.is_token_signal())
        );
    }
}
