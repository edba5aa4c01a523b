//! The paper's synthetic study, where the truth is known (`handoff simulate`).
//!
//! - [`beta`]: Beta laws, their exact density ratio and distribution function;
//! - [`correlated`]: long sessions with dependent tokens, where naive Bayes loses calibration;
//! - [`exact_posterior`]: the correlated world's Bayes-optimal judge, calibrated by
//!   construction, and a calibration error measured against it instead of labels;
//! - [`world`]: the generative process (Y, signals given Y, contamination) and its draws;
//! - [`scenario`]: worlds where the judge's model is wrong (dependent ticks, style drift,
//!   miscalibrated judges, contamination);
//! - [`policies`]: scoring a policy on draws; [`crossing`]: threshold rules on a statistic;
//!   [`baselines`]: the label-free statistics (fixed rule, running mean, cumulative sum);
//! - [`falsify`]: every policy on one seed of one world; [`across_seeds`]: means, t
//!   intervals and matched-cost comparisons over seeds; [`rate`]: decay rates fitted with
//!   every point;
//! - [`experiments`]: the whole study over seeds;
//! - [`report`]: the results as JSON and tables ([`seed_tables`] for the across-seed ones);
//!   [`plot`]: as SVG;
//! - [`time_calibration`]: per-tick calibration slope and ECE on task-grouped held-out sessions;
//! - [`logs`]: simulated sessions written as ordinary session logs.
//!
//! The simulator builds on `competence` (beliefs, fitting, the DP) and is the one place
//! that knows the truth those are measured against.

pub mod across_seeds;
pub(crate) mod baselines;
pub(crate) mod beta;
pub(crate) mod correlated;
pub(crate) mod crossing;
pub(crate) mod exact_posterior;
pub(crate) mod experiments;
pub mod falsify;
pub(crate) mod logs;
pub(crate) mod plot;
pub(crate) mod policies;
pub(crate) mod rate;
pub mod report;
pub(crate) mod scenario;
pub(crate) mod seed_tables;
pub mod time_calibration;
pub(crate) mod world;

pub use beta::{BetaShape, SignalLaw};
pub use correlated::{CorrelatedSession, CorrelatedWorld};
pub use experiments::{StudyOptions, run};
pub use logs::{LogOptions, LogsWritten, SessionPlan, SimulatedSession, write_logs};
pub use policies::PolicyPoint;
pub use report::Study;
pub use scenario::Scenario;
pub use world::{BeliefPaths, Draws, Query, World};

/// What can stop a simulation: bad parameters, or a log that cannot be written.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    #[error("invalid simulation: {0}")]
    Invalid(String),
    #[error(transparent)]
    Log(#[from] crate::log::LogError),
    #[error("{path}: {source}")]
    Io {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
}

/// A progress bar on stderr when stderr is a terminal, hidden otherwise (pipes and tests
/// get clean output).
pub fn progress_bar(len: u64, what: &str) -> indicatif::ProgressBar {
    use std::io::IsTerminal;
    if !std::io::stderr().is_terminal() {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::new(len);
    if let Ok(style) =
        indicatif::ProgressStyle::with_template("{msg} [{bar:30}] {pos}/{len} ({eta})")
    {
        bar.set_style(style.progress_chars("=> "));
    }
    bar.set_message(what.to_string());
    bar
}
