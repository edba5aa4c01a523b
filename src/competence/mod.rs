//! The judge: signals → belief B_t → threshold τ_t. Pure: no I/O, no async, no clocks.
//!
//! - [`signals`]: entropy, margin and surprise of one token from its top-k logprobs;
//! - the names of all evidence, step facts and raw observations live in
//!   [`crate::protocol::evidence`], so logs carry them without this module;
//! - [`facts`]: step facts decided from a step's description (test runs, counts, repeats);
//! - [`features`], [`feature_fit`], [`feature_link`], [`varying_fit`]: the length-robust
//!   belief model, its fit, its link, and the varying-coefficient regression under both;
//! - [`likelihood`]: per-signal smoothed histograms f₁, f₀;
//! - [`calibrator`]: Platt, isotonic and equal-mass maps from log-odds to probability;
//! - [`calibration`]: all of the above in one versioned JSON value, and the built-in prior;
//! - [`belief`]: the O(1) log-odds recursion and the per-session [`Judge`];
//! - [`trajectory`], [`mod@fit`]: labelled sessions, scoring and fitting;
//! - [`threshold`], [`law`], [`dp`]: constant and myopic thresholds, evidence laws, the
//!   optimal schedule;
//! - [`step_process`], [`step_dp`]: the process at junior step ends as logged sessions show
//!   it, and the step-clock schedule solved on it;
//! - [`gate`]: the escalation rule (below τ, cooldown, shadow, once per hand-off).

pub(crate) mod belief;
pub mod calibration;
pub mod calibrator;
pub(crate) mod dp;
pub(crate) mod facts;
pub(crate) mod feature_fit;
pub(crate) mod feature_link;
pub mod features;
pub mod fit;
pub(crate) mod fit_options;
pub(crate) mod gate;
mod histograms;
pub(crate) mod law;
pub(crate) mod likelihood;
mod prior;
pub(crate) mod repeats;
pub(crate) mod schedule;
pub(crate) mod signals;
pub(crate) mod step_dp;
pub(crate) mod step_process;
pub(crate) mod threshold;
pub(crate) mod trajectory;
pub(crate) mod varying_fit;

#[cfg(test)]
mod properties;
#[cfg(test)]
mod synthetic_check;

pub use crate::protocol::{EvidenceTerm, Observation, SignalKind, StepFacts};
pub use belief::{Belief, Judge, Reading};
pub use calibration::{CALIBRATION_VERSION, Calibration, FittedOn};
pub use calibrator::{CalibrationMap, EqualMassBins, Isotonic, MapKind, Platt, ScoreRow};
pub use dp::{DpSpec, OptimalSchedule, solve, solve_visiting};
pub use facts::{
    CommandRun, StepDescription, StepMemory, StepVerdict, TestCounts, TestRunFacts, TestRuns,
    parse_test_counts,
};
pub use features::{Feature, FeatureModel, FeatureState};
pub use fit::{BeliefModel, FitOptions, FitReport, fit};
pub use gate::{Exploration, Gate, Verdict};
pub use law::{LlrAtom, LlrLaw};
pub use likelihood::Likelihood;
pub use prior::PRIOR_SUCCESS_RATE;
pub use signals::{TokenSignals, token_signals};
pub use step_dp::{StepCosts, StepSchedule, schedule_value, solve_steps};
pub use step_process::{DecisionPath, Ending, ProcessOptions, StepProcess};
pub use threshold::{RouteCost, StopCosts, Threshold, myopic};
pub use trajectory::Trajectory;

/// What can go wrong in the judge's pure code: bad inputs, bad files, too little data.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CompetenceError {
    #[error(
        "calibration file has version {found}, this build reads version {supported}; \
         re-run `handoff calibrate` or upgrade handoff"
    )]
    UnsupportedVersion { found: u64, supported: u32 },
    #[error("invalid: {0}")]
    Invalid(String),
    #[error("not enough data: {0}")]
    NotEnoughData(String),
    #[error(
        "threshold = \"optimal\" plans on the per-token law of the naive-Bayes sum, and this \
         calibration is a feature model, whose belief does not move by that law (planned on it \
         anyway, τ* is about 0.002 and the judge would never hand off); plan it on logged \
         shadow sessions instead: `handoff schedule --junior DIR --calibration FILE --write \
         schedule.json` with threshold = \"steps\" and step_schedule = \"schedule.json\", or \
         use threshold = \"myopic\" or \"constant\""
    )]
    NoTokenLaw,
}
