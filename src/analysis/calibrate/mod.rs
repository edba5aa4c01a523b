//! `handoff calibrate`: logged sessions in, a fitted judge and honest held-out scores out.
//!
//! Sessions are read one file at a time (each streamed), turned into
//! [`Trajectory`]s from the raw observation values their logs kept, labelled by their
//! outcome, and split into training and held-out sessions by a hash of their *task* (the
//! task text; the session id when a log has none), so every session of one task lands on
//! the same side — several runs of a task (junior alone, with hand-offs, a rerun) never
//! leak from training into the scores — and the split is the same on every run and does
//! not depend on file order. Escalated
//! sessions are censored (the junior's own outcome was never seen) and stay out of the fit
//! unless asked; shadow sessions are unbiased and always in.
//!
//! **Censoring.** Dropping the censored sessions keeps only those the logging judge trusted,
//! so a refit learns from a selected population (mostly successes, and failures that looked
//! like them). Under shadow exploration (`policy.explore`) every live decision to hand off
//! was drawn, and the log records the probability of the path taken; a session left
//! uncensored by an explored decision stands for the censored ones with the same evidence,
//! so the fit weights each training session by 1 / P(uncensored | its evidence), the
//! inverse of the product of its explored decisions' propensities (1 for a session no
//! decision of which was drawn). This inverse-propensity weighting is unbiased for the fit
//! on the uncensored population as long as every hand-off the logging judge made was drawn
//! (ε > 0); hand-offs no gate drew (the junior's own questions, forced ones, faults) are
//! not corrected and stay left out. `--no-ipw` fits unweighted, for comparison.
//!
//! Scores are taken on held-out sessions only, at ten fractions of each trajectory (10 %,
//! 20 %, …, 100 % of its ticks): the judge is used all along a session, not only at its
//! end, and every session weighs the same whatever its length. Each held-out score has a
//! 95 % bootstrap interval over tasks, each ECE the noise floor a calibrated judge would
//! get on the same forecasts, and the built-in prior judge is scored on the same sessions
//! beside the fitted one.
//!
//! The jobs are split by file: [`read`] turns logs into sessions, [`split`] decides which
//! side of the split (or which fold) a session is on, [`score`] scores held-out belief
//! paths, [`schedule`] reads the token-clock schedule a calibration gives, and [`text`]
//! prints the report. This file fits and assesses.

mod cross_fit;
mod read;
mod schedule;
mod score;
mod split;
#[cfg(test)]
mod tests;
mod text;

use std::collections::BTreeMap;

use serde::Serialize;

use crate::competence::{
    Calibration, CompetenceError, FitOptions, FitReport, FittedOn, Trajectory, fit,
};
use crate::config::Config;

use schedule::schedule_refused;
use score::{paths, score};
use split::{distinct_tasks, fold_of, group_key};

pub use cross_fit::{FoldFits, fold_fits};
pub use read::{
    Corpus, LoggedSession, fold_sessions, load, load_in, read_sessions, read_sessions_in,
};
pub use schedule::SchedulePoint;
pub use score::{FIXED_TICKS, FixedTickScore, FractionScore, HoldoutScores, MIN_AT_TICK};
pub use split::is_held_out;

/// Fractions of a trajectory at which held-out beliefs are scored.
pub const FRACTIONS: usize = 10;

/// Knobs of [`calibrate`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CalibrateOptions {
    /// Fraction of labelled sessions held out for scoring (0 ≤ h < 1).
    pub holdout: f64,
    /// Fit on escalated (censored) sessions too.
    pub include_censored: bool,
    /// Cross-validation folds by task (0: one hold-out split of `holdout`). With k ≥ 2
    /// every session is scored by a fit that never saw its task, and the calibration
    /// returned is fitted on all sessions.
    pub folds: usize,
    /// Weight training sessions by their inverse propensity (see the module docs).
    pub ipw: bool,
    pub fit: FitOptions,
}

impl Default for CalibrateOptions {
    fn default() -> Self {
        CalibrateOptions {
            holdout: 0.2,
            include_censored: false,
            folds: 0,
            ipw: true,
            fit: FitOptions::default(),
        }
    }
}

/// Which sessions went where, and why the others were left out.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct SessionCounts {
    pub read: usize,
    /// No `session_ended`: the log was cut off.
    pub incomplete: usize,
    /// Aborted or unlabelled outcomes.
    pub unlabelled: usize,
    /// Escalated, left out (see `--include-censored`).
    pub censored_skipped: usize,
    /// Training sessions left uncensored by a decision drawn to explore.
    pub explored: usize,
    /// Whether training sessions were weighted by their inverse propensity.
    pub ipw: bool,
    /// (Σw)² / Σw² over the training sessions: how many unweighted sessions the weighted
    /// fit is worth.
    pub effective_train: f64,
    pub train: usize,
    pub holdout: usize,
    /// Distinct tasks on each side.
    pub train_tasks: usize,
    pub holdout_tasks: usize,
    /// The split's unit: `task`, or `session` when the sessions share fewer than two tasks
    /// (a simulated corpus logs one task for all).
    pub split: &'static str,
    /// Cross-validation folds (0: one hold-out split; then `train` and `holdout` are the
    /// two sides, else both are every session).
    pub folds: usize,
}

/// Everything `calibrate` found; `--json` prints exactly this.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CalibrationReport {
    pub files: usize,
    pub counts: SessionCounts,
    /// The fit's own report; `None` when a given calibration was only scored.
    pub fit: Option<FitReport>,
    /// The calibration file scored as given (`calibrate --score FILE`), when no fit was made.
    pub assessed: Option<String>,
    /// For a fitted feature model, its calibration's `source`: the ridge it chose and the
    /// held-out log loss of each candidate (`None` for other fits and for `--score`).
    pub fitted: Option<String>,
    pub prior: f64,
    pub tempering: f64,
    pub holdout: Option<HoldoutScores>,
    /// The built-in prior judge (no fit) on the same held-out sessions.
    pub builtin: Option<HoldoutScores>,
    pub schedule: Vec<SchedulePoint>,
    /// Why there is no token-clock schedule (a feature model has no per-token law to plan
    /// on; `handoff schedule` plans it on logged sessions), in place of `schedule`.
    pub schedule_refused: Option<String>,
    /// What each raw summary alone says about the outcome, over every eligible session.
    pub discrimination: super::discrimination::Discrimination,
    /// Held-out belief paths (belief per tick) with their labels, for plots; not printed.
    #[serde(skip)]
    pub traces: Vec<(Vec<f64>, bool)>,
    pub warnings: Vec<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum CalibrateError {
    #[error("--holdout must be in [0, 1), got {0}")]
    Holdout(f64),
    #[error("--folds must be 0 (one split) or at least 2, got 1")]
    Folds,
    #[error(
        "fold {fold} of {folds}: {source} (fewer folds, or --holdout, may leave both labels on each side)"
    )]
    Fold {
        fold: usize,
        folds: usize,
        source: CompetenceError,
    },
    #[error(transparent)]
    Fit(#[from] CompetenceError),
    #[error("threshold schedule: {0}")]
    Schedule(String),
}

/// The sessions a fit or a score may use, the counts of the others, and whether the split
/// can be by task (at least two distinct tasks, every session naming one).
fn eligible(
    sessions: &[LoggedSession],
    include_censored: bool,
) -> (SessionCounts, Vec<&LoggedSession>, bool) {
    let mut counts = SessionCounts {
        read: sessions.len(),
        ..SessionCounts::default()
    };
    let mut eligible = Vec::new();
    for s in sessions {
        if !s.ended {
            counts.incomplete += 1;
        } else if s.trajectory.label.is_none() {
            counts.unlabelled += 1;
        } else if s.censored && !s.shadow && !include_censored {
            counts.censored_skipped += 1;
        } else {
            eligible.push(s);
        }
    }
    let by_task = distinct_tasks(&eligible) >= 2 && eligible.iter().all(|s| !s.task.is_empty());
    counts.split = if by_task { "task" } else { "session" };
    (counts, eligible, by_task)
}

/// Scores a calibration as given (no fit) on every eligible session of `corpus`: how a
/// calibration fitted elsewhere — on another junior, another server, last month's logs —
/// does on these sessions, beside the built-in prior.
pub fn assess(
    corpus: &Corpus,
    calibration: &Calibration,
    source: &str,
    include_censored: bool,
    config: &Config,
) -> Result<CalibrationReport, CalibrateError> {
    let (mut counts, eligible, _) = eligible(&corpus.sessions, include_censored);
    counts.holdout = eligible.len();
    counts.holdout_tasks = distinct_tasks(&eligible);
    let (holdout, traces) = score(&paths(calibration, &eligible));
    let (builtin, _) = score(&paths(&Calibration::prior(), &eligible));
    Ok(CalibrationReport {
        files: corpus.files,
        counts,
        fit: None,
        assessed: Some(source.to_string()),
        fitted: None,
        prior: calibration.prior,
        tempering: calibration.tempering,
        holdout,
        builtin,
        schedule: schedule::schedule(calibration, config)?,
        schedule_refused: schedule_refused(calibration),
        discrimination: super::discrimination::discrimination(
            eligible.iter().map(|s| (group_key(s), &s.trajectory)),
        ),
        traces,
        warnings: corpus.warnings.clone(),
    })
}

/// Fits a calibration on the training sessions of `corpus` and scores it on the held-out
/// ones; the threshold schedule is solved for `config`'s costs and token budget.
pub fn calibrate(
    corpus: &Corpus,
    options: &CalibrateOptions,
    config: &Config,
) -> Result<(Calibration, CalibrationReport), CalibrateError> {
    let sessions = &corpus.sessions;
    if !(0.0..1.0).contains(&options.holdout) {
        return Err(CalibrateError::Holdout(options.holdout));
    }
    if options.folds == 1 {
        return Err(CalibrateError::Folds);
    }
    let (mut counts, eligible, by_task) = eligible(sessions, options.include_censored);
    let folds = options.folds;
    let (held, train): (Vec<&LoggedSession>, Vec<&LoggedSession>) = if folds >= 2 {
        (eligible.clone(), eligible.clone())
    } else {
        eligible
            .iter()
            .copied()
            .partition(|s| is_held_out(s, options.holdout, by_task))
    };
    counts.train = train.len();
    counts.holdout = held.len();
    counts.folds = folds;
    counts.train_tasks = distinct_tasks(&train);
    counts.holdout_tasks = distinct_tasks(&held);
    counts.ipw = options.ipw;
    counts.explored = train.iter().filter(|s| s.propensity < 1.0).count();
    let train_set = weighted(&train, options.ipw);
    let (sum, squares) = train_set.iter().fold((0.0, 0.0), |(a, b), t| {
        (a + t.weight(), b + t.weight() * t.weight())
    });
    counts.effective_train = if squares > 0.0 {
        sum * sum / squares
    } else {
        0.0
    };
    let fit_on = |side: &[&LoggedSession]| fit(&weighted(side, options.ipw), &options.fit);
    let (mut calibration, fit_report) = fit(&train_set, &options.fit)?;
    calibration.fitted_on = Some(fitted_on(&train));
    let scored = if folds >= 2 {
        // Out-of-fold: each fold's sessions scored by the fit on the other folds.
        let fold = |s: &LoggedSession| fold_of(s, by_task, folds);
        let mut scored = Vec::with_capacity(eligible.len());
        for k in 0..folds {
            let (inside, outside): (Vec<&LoggedSession>, Vec<&LoggedSession>) =
                eligible.iter().copied().partition(|s| fold(s) == k);
            if inside.is_empty() {
                continue;
            }
            let (fold_calibration, _) =
                fit_on(&outside).map_err(|source| CalibrateError::Fold {
                    fold: k + 1,
                    folds,
                    source,
                })?;
            scored.extend(paths(&fold_calibration, &inside));
        }
        scored
    } else {
        paths(&calibration, &held)
    };
    let (holdout, traces) = score(&scored);
    let (builtin, _) = score(&paths(&Calibration::prior(), &held));
    let schedule = schedule::schedule(&calibration, config)?;
    // Every eligible session once (under cross-validation both sides are all of them).
    let discrimination = super::discrimination::discrimination(
        eligible.iter().map(|s| (group_key(s), &s.trajectory)),
    );
    let report = CalibrationReport {
        files: corpus.files,
        counts,
        prior: calibration.prior,
        tempering: calibration.tempering,
        fit: Some(fit_report),
        assessed: None,
        fitted: calibration
            .features
            .is_some()
            .then(|| calibration.source.clone()),
        holdout,
        builtin,
        schedule,
        schedule_refused: schedule_refused(&calibration),
        discrimination,
        traces,
        warnings: corpus.warnings.clone(),
    };
    Ok((calibration, report))
}

/// The sessions' trajectories as fitted: with `ipw`, sessions left uncensored by exploration
/// stand for the censored ones like them (weight 1 / propensity).
fn weighted(side: &[&LoggedSession], ipw: bool) -> Vec<Trajectory> {
    side.iter()
        .map(|s| {
            let w = if ipw { 1.0 / s.propensity } else { 1.0 };
            s.trajectory.clone().with_weight(w)
        })
        .collect()
}

/// The junior the training sessions ran: the most common model name, the longest top list.
fn fitted_on(train: &[&LoggedSession]) -> FittedOn {
    let mut models: BTreeMap<&str, usize> = BTreeMap::new();
    for s in train {
        *models.entry(s.junior_model.as_str()).or_default() += 1;
    }
    let model = models
        .iter()
        .max_by_key(|(_, n)| **n)
        .map(|(m, _)| (*m).to_string())
        .unwrap_or_default();
    FittedOn {
        model,
        top_logprobs: train.iter().map(|s| s.top_logprobs).max().unwrap_or(0),
        sessions: train.len(),
        successes: train
            .iter()
            .filter(|s| s.trajectory.label == Some(true))
            .count(),
    }
}
