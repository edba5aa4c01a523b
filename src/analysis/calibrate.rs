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

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;
use sha2::{Digest, Sha256};

use super::rescore::{EvidenceDecoder, TrajectoryFold};
use crate::competence::{
    Calibration, CompetenceError, FitOptions, FitReport, FittedOn, Trajectory, fit,
};
use crate::config::{Config, ThresholdKind};
use crate::judge::SessionJudge;
use crate::log::{LogError, LogReader, ReadWarning, log_files};
use crate::metrics::{
    Binning, Forecast, Interval, ReliabilityBin, aurc, auroc, bootstrap, brier, ece,
    ece_noise_floor, mce, reliability_bins,
};
use crate::protocol::{Actor, Event};

/// Fractions of a trajectory at which held-out beliefs are scored.
pub const FRACTIONS: usize = 10;
/// Ticks at which the threshold schedule is printed (plus the last).
const SCHEDULE_POINTS: u64 = 8;

/// One session as read from a log.
#[derive(Debug, Clone)]
pub struct LoggedSession {
    pub source: PathBuf,
    pub session_id: String,
    /// The task text of `session_started` (empty when the log has none).
    pub task: String,
    /// The junior model `session_started` names.
    pub junior_model: String,
    /// The longest top-logprob list on a junior token.
    pub top_logprobs: usize,
    pub trajectory: Trajectory,
    pub shadow: bool,
    pub censored: bool,
    /// The log reached `session_ended`.
    pub ended: bool,
    /// The probability, given its evidence, that shadow exploration left this session
    /// uncensored (1 when no decision of it was drawn); its fitting weight is the inverse.
    pub propensity: f64,
}

/// What a session's start (and its tokens) say about it.
#[derive(Debug, Default)]
struct Started {
    session_id: String,
    task: String,
    junior_model: String,
    top_logprobs: usize,
}

/// Sessions of one log file, streamed: the reader holds one line at a time and each
/// session only its own trajectory.
pub fn read_sessions(path: &Path) -> Result<(Vec<LoggedSession>, Vec<ReadWarning>), LogError> {
    Ok(fold_sessions(path, LogReader::open(path)?))
}

/// The sessions of a stream of logged events (what [`read_sessions`] reads from a file;
/// a simulator's events in memory), `source` naming where they came from.
pub fn fold_sessions(
    source: &Path,
    items: impl IntoIterator<Item = Result<crate::protocol::Stamped, ReadWarning>>,
) -> (Vec<LoggedSession>, Vec<ReadWarning>) {
    let path = source;
    let mut warnings = Vec::new();
    let mut sessions = Vec::new();
    let mut decoder = EvidenceDecoder::new();
    let mut current: Option<(Started, TrajectoryFold)> = None;
    let mut evidence = Vec::new();
    let finish = |(started, fold): (Started, TrajectoryFold)| LoggedSession {
        source: path.to_path_buf(),
        session_id: started.session_id,
        task: started.task,
        junior_model: started.junior_model,
        top_logprobs: started.top_logprobs,
        trajectory: fold.trajectory,
        shadow: fold.shadow,
        censored: fold.censored,
        ended: fold.ended,
        propensity: fold.propensity,
    };
    for item in items {
        let event = match item {
            Ok(stamped) => stamped.event,
            Err(w) => {
                warnings.push(w);
                continue;
            }
        };
        if let Event::SessionStarted {
            session_id,
            task,
            junior_model,
            ..
        } = &event
        {
            sessions.extend(current.take().map(finish));
            let started = Started {
                session_id: session_id.clone(),
                task: task.clone(),
                junior_model: junior_model.clone(),
                top_logprobs: 0,
            };
            current = Some((started, TrajectoryFold::default()));
        }
        let (started, fold) = current.get_or_insert_with(Default::default);
        if let Event::Token {
            actor: Actor::Junior,
            top,
            ..
        } = &event
        {
            started.top_logprobs = started.top_logprobs.max(top.len());
        }
        evidence.clear();
        decoder.push(&event, &mut evidence);
        for e in &evidence {
            fold.push(e);
        }
    }
    sessions.extend(current.map(finish));
    (sessions, warnings)
}

/// Sessions read from logs, and what had to be skipped on the way.
#[derive(Debug, Default)]
pub struct Corpus {
    pub files: usize,
    pub sessions: Vec<LoggedSession>,
    /// Unreadable files and skipped lines, each naming file (and line).
    pub warnings: Vec<String>,
}

/// Every session of the logs named by `inputs` (files or directories of `*.jsonl`). With
/// `progress`, a bar on stderr when it is a terminal and there are many files.
pub fn load(inputs: &[PathBuf], progress: bool) -> Corpus {
    let (files, errors) = log_files(inputs);
    let bar = progress.then(|| progress_bar(files.len())).flatten();
    let mut corpus = Corpus {
        files: files.len(),
        warnings: errors.iter().map(ToString::to_string).collect(),
        ..Corpus::default()
    };
    for file in &files {
        match read_sessions(file) {
            Ok((s, w)) => {
                corpus.sessions.extend(s);
                corpus.warnings.extend(w.iter().map(ToString::to_string));
            }
            Err(e) => corpus.warnings.push(e.to_string()),
        }
        if let Some(b) = &bar {
            b.inc(1);
        }
    }
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    corpus
}

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

/// Whether a session is held out: a hash of its task (of its id, or its log's path, when
/// it has none, or when `by_task` is off), so all sessions of a task fall on one side, the
/// split is stable across
/// runs, independent of the order files are found in, and a session copied into two places
/// lands on one side only.
pub fn is_held_out(session: &LoggedSession, holdout: f64, by_task: bool) -> bool {
    split_point(session, by_task) < holdout
}

/// The session's place in [0, 1) by the hash [`is_held_out`] describes; cross-validation
/// folds cut the same line into equal parts, so fold membership has the same properties.
fn split_point(session: &LoggedSession, by_task: bool) -> f64 {
    let mut h = Sha256::new();
    if by_task && !session.task.is_empty() {
        h.update(b"task\0");
        h.update(session.task.as_bytes());
    } else if session.session_id.is_empty() {
        h.update(session.source.to_string_lossy().as_bytes());
    } else {
        h.update(session.session_id.as_bytes());
    }
    let digest = h.finalize();
    let mut bytes = [0u8; 8];
    bytes.copy_from_slice(&digest[..8]);
    u64::from_be_bytes(bytes) as f64 / (u64::MAX as f64 + 1.0)
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

/// Calibration scores at one fraction of the trajectory (time-resolved ECE).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct FractionScore {
    pub fraction: f64,
    pub ece_mass10: Option<f64>,
    pub ece_width15: Option<f64>,
    pub brier: Option<f64>,
    pub auroc: Option<f64>,
    /// 95 % bootstrap interval of `auroc` over tasks.
    pub auroc_ci: Option<Interval>,
}

/// Scores at one fixed tick among the held-out sessions still running there: what a live
/// judge, which knows t but not how long the session will be, is asked at that tick.
/// Fractions of the trajectory condition on each session's final length, which a live
/// judge does not know and which can carry the label (on the real 1.5B successes are
/// short).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct FixedTickScore {
    pub tick: usize,
    /// Held-out sessions still running at this tick, and how many of them succeeded.
    pub sessions: usize,
    pub successes: usize,
    pub ece_mass10: Option<f64>,
    pub brier: Option<f64>,
    pub auroc: Option<f64>,
    /// 95 % bootstrap interval of `auroc` over tasks.
    pub auroc_ci: Option<Interval>,
}

/// The fixed ticks scored: powers of two from 8, as far as at least [`MIN_AT_TICK`]
/// held-out sessions of both labels are still running.
pub const FIXED_TICKS: [usize; 11] = [8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192];

/// Fewest sessions still running, and fewest of each label, for a fixed tick to be scored.
pub const MIN_AT_TICK: usize = 5;

/// Held-out scores of the fitted judge.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HoldoutScores {
    pub sessions: usize,
    pub forecasts: usize,
    pub ece_width15: Option<f64>,
    pub ece_mass10: Option<f64>,
    pub mce_width15: Option<f64>,
    pub brier: Option<f64>,
    /// Brier of the constant prior π₀ on the same forecasts: what the evidence bought.
    pub brier_prior: Option<f64>,
    pub auroc: Option<f64>,
    pub aurc: Option<f64>,
    /// 95 % bootstrap intervals over held-out tasks (whole tasks resampled).
    pub ece_mass10_ci: Option<Interval>,
    pub brier_ci: Option<Interval>,
    pub auroc_ci: Option<Interval>,
    /// Where a calibrated judge's ECE (10 equal-mass bins) falls on these forecasts.
    pub ece_mass10_noise: Option<Interval>,
    pub by_fraction: Vec<FractionScore>,
    pub by_tick: Vec<FixedTickScore>,
    pub reliability: Vec<ReliabilityBin>,
}

/// τ*_t of the optimal policy under the fitted calibration and the configured costs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct SchedulePoint {
    pub tick: u64,
    pub tau: f64,
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
        schedule: schedule(calibration, config)?,
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
    // Sessions left uncensored by exploration stand for the censored ones like them.
    let weighted = |side: &[&LoggedSession]| -> Vec<Trajectory> {
        side.iter()
            .map(|s| {
                let w = if options.ipw { 1.0 / s.propensity } else { 1.0 };
                s.trajectory.clone().with_weight(w)
            })
            .collect()
    };
    let train_set = weighted(&train);
    let (sum, squares) = train_set.iter().fold((0.0, 0.0), |(a, b), t| {
        (a + t.weight(), b + t.weight() * t.weight())
    });
    counts.effective_train = if squares > 0.0 {
        sum * sum / squares
    } else {
        0.0
    };
    let fit_on = |side: &[&LoggedSession]| fit(&weighted(side), &options.fit);
    let (mut calibration, fit_report) = fit(&train_set, &options.fit)?;
    calibration.fitted_on = Some(fitted_on(&train));
    let scored = if folds >= 2 {
        // Out-of-fold: each fold's sessions scored by the fit on the other folds.
        let fold =
            |s: &LoggedSession| ((split_point(s, by_task) * folds as f64) as usize).min(folds - 1);
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
    let schedule = schedule(&calibration, config)?;
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

/// Tick index at fraction `k / FRACTIONS` of a trajectory of `ticks` ticks.
fn tick_at(k: usize, ticks: usize) -> usize {
    (k * ticks).div_ceil(FRACTIONS)
}

type Traces = Vec<(Vec<f64>, bool)>;

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

/// How many tasks (groups of [`group_key`]) the sessions span.
fn distinct_tasks(sessions: &[&LoggedSession]) -> usize {
    sessions
        .iter()
        .map(|s| group_key(s))
        .collect::<std::collections::BTreeSet<_>>()
        .len()
}

/// What ties a session's forecasts together for the bootstrap and the split: its task.
fn group_key(s: &LoggedSession) -> &str {
    if s.task.is_empty() {
        &s.session_id
    } else {
        &s.task
    }
}

/// Bootstrap resamples and the seed of every interval (fixed: the numbers are reproducible).
const BOOTSTRAP_REPS: usize = 1000;
const BOOTSTRAP_SEED: u64 = 0x5eed_ca1b;

/// Each labelled session of `held` with its belief path under `calibration`.
fn paths<'a>(calibration: &Calibration, held: &[&'a LoggedSession]) -> Vec<Scored<'a>> {
    held.iter()
        .filter(|s| s.trajectory.label.is_some())
        .map(|s| Scored {
            session: s,
            path: calibration.score(&s.trajectory),
            prior: calibration.prior,
        })
        .collect()
}

/// One held-out session's belief path, and the π₀ of the calibration that made it.
struct Scored<'a> {
    session: &'a LoggedSession,
    path: Vec<f64>,
    prior: f64,
}

/// One bucket's forecasts as the bootstrap resamples them (one list per task) and pooled.
fn tasks_and_all(bucket: &BTreeMap<&str, Vec<Forecast>>) -> (Vec<Vec<Forecast>>, Vec<Forecast>) {
    let tasks: Vec<Vec<Forecast>> = bucket.values().cloned().collect();
    let all = tasks.iter().flatten().copied().collect();
    (tasks, all)
}

/// Held-out scores of belief paths, whatever calibrations made them (one, or one per
/// cross-validation fold); the constant to beat is each path's own π₀.
fn score(scored: &[Scored<'_>]) -> (Option<HoldoutScores>, Traces) {
    // Forecasts per fraction, per task (the bootstrap resamples whole tasks).
    let mut by_fraction: Vec<BTreeMap<&str, Vec<Forecast>>> = vec![BTreeMap::new(); FRACTIONS];
    let mut by_tick: Vec<BTreeMap<&str, Vec<Forecast>>> = vec![BTreeMap::new(); FIXED_TICKS.len()];
    let mut traces = Vec::with_capacity(scored.len());
    // The constant π₀ at every forecast (the Brier to beat; order does not matter).
    let mut prior = Vec::with_capacity(scored.len() * FRACTIONS);
    for Scored {
        session: s,
        path,
        prior: pi0,
    } in scored
    {
        let Some(label) = s.trajectory.label else {
            continue;
        };
        let path = path.clone();
        for (k, bucket) in by_fraction.iter_mut().enumerate() {
            let i = tick_at(k + 1, s.trajectory.ticks()).min(path.len().saturating_sub(1));
            if let Some(&p) = path.get(i) {
                bucket
                    .entry(group_key(s))
                    .or_default()
                    .push(Forecast::new(p, label));
                prior.push(Forecast::new(*pi0, label));
            }
        }
        for (bucket, &t) in by_tick.iter_mut().zip(&FIXED_TICKS) {
            if let Some(&p) = path.get(t) {
                bucket
                    .entry(group_key(s))
                    .or_default()
                    .push(Forecast::new(p, label));
            }
        }
        traces.push((path, label));
    }
    let mut groups: BTreeMap<&str, Vec<Forecast>> = BTreeMap::new();
    for bucket in &by_fraction {
        for (task, f) in bucket {
            groups.entry(task).or_default().extend_from_slice(f);
        }
    }
    let groups: Vec<Vec<Forecast>> = groups.into_values().collect();
    let all: Vec<Forecast> = groups.iter().flatten().copied().collect();
    if all.is_empty() {
        return (None, traces);
    }
    let ci = |groups: &[Vec<Forecast>], stat: fn(&[Forecast]) -> Option<f64>| {
        bootstrap(groups, stat, BOOTSTRAP_REPS, BOOTSTRAP_SEED)
    };
    let scores = HoldoutScores {
        sessions: traces.len(),
        forecasts: all.len(),
        ece_width15: ece(&all, Binning::WIDTH_15),
        ece_mass10: ece(&all, Binning::MASS_10),
        mce_width15: mce(&all, Binning::WIDTH_15),
        brier: brier(&all),
        brier_prior: brier(&prior),
        auroc: auroc(&all),
        aurc: aurc(&all),
        ece_mass10_ci: ci(&groups, |f| ece(f, Binning::MASS_10)),
        brier_ci: ci(&groups, brier),
        auroc_ci: ci(&groups, auroc),
        ece_mass10_noise: ece_noise_floor(&all, Binning::MASS_10, BOOTSTRAP_REPS, BOOTSTRAP_SEED),
        by_fraction: by_fraction
            .iter()
            .enumerate()
            .map(|(k, bucket)| {
                let (tasks, f) = tasks_and_all(bucket);
                FractionScore {
                    fraction: (k + 1) as f64 / FRACTIONS as f64,
                    ece_mass10: ece(&f, Binning::MASS_10),
                    ece_width15: ece(&f, Binning::WIDTH_15),
                    brier: brier(&f),
                    auroc: auroc(&f),
                    auroc_ci: ci(&tasks, auroc),
                }
            })
            .collect(),
        by_tick: by_tick
            .iter()
            .zip(FIXED_TICKS)
            .map_while(|(bucket, tick)| {
                let (tasks, f) = tasks_and_all(bucket);
                let successes = f.iter().filter(|x| x.success).count();
                let enough = successes >= MIN_AT_TICK && f.len() - successes >= MIN_AT_TICK;
                enough.then(|| FixedTickScore {
                    tick,
                    sessions: f.len(),
                    successes,
                    ece_mass10: ece(&f, Binning::MASS_10),
                    brier: brier(&f),
                    auroc: auroc(&f),
                    auroc_ci: ci(&tasks, auroc),
                })
            })
            .collect(),
        reliability: reliability_bins(&all, Binning::MASS_10).unwrap_or_default(),
    };
    (Some(scores), traces)
}

/// The optimal schedule the agent would build from this calibration and `config`'s costs,
/// read at a few ticks (it is held constant between decision ticks anyway).
fn schedule(
    calibration: &Calibration,
    config: &Config,
) -> Result<Vec<SchedulePoint>, CalibrateError> {
    if schedule_refused(calibration).is_some() {
        return Ok(Vec::new());
    }
    let mut config = config.clone();
    config.policy.threshold = ThresholdKind::Optimal;
    let watch = SessionJudge::with_calibration(&config, calibration.clone())
        .map_err(|e| CalibrateError::Schedule(e.to_string()))?;
    let mut judge = watch.judge().clone();
    let horizon = config.agent.token_budget;
    let every = (horizon / SCHEDULE_POINTS).max(1);
    let mut points = Vec::new();
    for t in 0..=horizon {
        if t % every == 0 || t == horizon {
            points.push(SchedulePoint {
                tick: t,
                tau: judge.threshold(),
            });
        }
        judge.observe_token(&crate::competence::TokenSignals::default());
    }
    Ok(points)
}

/// Why the token-clock schedule cannot be solved for this calibration, if it cannot.
fn schedule_refused(calibration: &Calibration) -> Option<String> {
    calibration.token_clock_refusal().map(|e| e.to_string())
}

fn num(v: Option<f64>) -> String {
    v.map_or_else(|| "-".to_string(), |v| format!("{v:.4}"))
}

/// `[0.512, 0.733]`, or nothing when there is no interval.
fn span(ci: Option<Interval>) -> String {
    ci.map_or_else(String::new, |c| {
        format!(" [{:.3}, {:.3}]", c.lower, c.upper)
    })
}

impl CalibrationReport {
    /// The report as plain text for a terminal.
    pub fn to_text(&self) -> String {
        let c = &self.counts;
        let left_out = format!(
            "({} censored left out, {} unlabelled, {} incomplete)",
            c.censored_skipped, c.unlabelled, c.incomplete
        );
        let mut out = if self.assessed.is_some() {
            format!(
                "{} sessions from {} files: {} scored ({} tasks) {}\n",
                c.read, self.files, c.holdout, c.holdout_tasks, left_out
            )
        } else if c.folds >= 2 {
            format!(
                "{} sessions from {} files: {} labelled ({} tasks), {}-fold cross-validation by \
                 {}: each scored by a fit without its {}; the calibration is fitted on all {}\n",
                c.read, self.files, c.train, c.train_tasks, c.folds, c.split, c.split, left_out
            )
        } else {
            format!(
                "{} sessions from {} files: {} train ({} tasks), {} held out ({} tasks; split by \
                 {}) {}\n",
                c.read,
                self.files,
                c.train,
                c.train_tasks,
                c.holdout,
                c.holdout_tasks,
                c.split,
                left_out
            )
        };
        if self.fit.is_some() && (c.explored > 0 || !c.ipw) {
            out.push_str(&format!(
                "censoring: {} training sessions uncensored by exploration; {} (effective \
                 sample {:.0} of {})\n",
                c.explored,
                if c.ipw {
                    "weighted by inverse propensity"
                } else {
                    "unweighted (--no-ipw)"
                },
                c.effective_train,
                c.train
            ));
        }
        match (&self.fit, &self.assessed) {
            (Some(f), _) => out.push_str(&format!(
                "fit: π₀ {:.3}, tempering c {:.4}, log loss {:.4} → {:.4} (prior → fitted, inner hold-out){}\n",
                self.prior,
                self.tempering,
                f.log_loss_prior,
                f.log_loss_fitted,
                self.fitted
                    .as_deref()
                    .map_or(String::new(), |s| format!("\n  {s}"))
            )),
            (None, Some(source)) => out.push_str(&format!(
                "scored as given, no fit: {source} (π₀ {:.3}, tempering c {:.4}); every session held out\n",
                self.prior, self.tempering
            )),
            (None, None) => {}
        }
        match &self.holdout {
            None => out.push_str("held-out scores: no held-out sessions (use --holdout)\n"),
            Some(h) => {
                out.push_str(&format!(
                    "\nheld out: {} sessions, {} forecasts (beliefs at 10 %, 20 %, …, 100 % of each)\n",
                    h.sessions, h.forecasts
                ));
                out.push_str(&format!(
                    "  ECE (10 equal-mass) {}{} (a calibrated judge: {}{})   ECE (15 equal-width) {}   MCE {}\n",
                    num(h.ece_mass10),
                    span(h.ece_mass10_ci),
                    num(h.ece_mass10_noise.map(|n| n.estimate)),
                    span(h.ece_mass10_noise),
                    num(h.ece_width15),
                    num(h.mce_width15)
                ));
                out.push_str(&format!(
                    "  Brier {}{} (prior alone {})   AUROC {}{}   AURC {}\n",
                    num(h.brier),
                    span(h.brier_ci),
                    num(h.brier_prior),
                    num(h.auroc),
                    span(h.auroc_ci),
                    num(h.aurc)
                ));
                if let Some(b) = &self.builtin {
                    out.push_str(&format!(
                        "  built-in prior judge on the same sessions: ECE {}{}   Brier {}{}   AUROC {}{}\n",
                        num(b.ece_mass10),
                        span(b.ece_mass10_ci),
                        num(b.brier),
                        span(b.brier_ci),
                        num(b.auroc),
                        span(b.auroc_ci)
                    ));
                }
                out.push_str(
                    "\n  fraction  ECE mass-10  ECE width-15   Brier   AUROC [95% over tasks]\n",
                );
                for s in &h.by_fraction {
                    out.push_str(&format!(
                        "  {:>7.0}%  {:>11}  {:>12}  {:>6}  {}{}\n",
                        s.fraction * 100.0,
                        num(s.ece_mass10),
                        num(s.ece_width15),
                        num(s.brier),
                        num(s.auroc),
                        span(s.auroc_ci)
                    ));
                }
                if !h.by_tick.is_empty() {
                    out.push_str(
                        "\n  at a fixed tick, the sessions still running (what a live judge sees):\n      \
                         tick  sessions (succeeded)  ECE mass-10   Brier   AUROC [95% over tasks]\n",
                    );
                    for s in &h.by_tick {
                        out.push_str(&format!(
                            "  {:>8}  {:>8} ({:>9})  {:>11}  {:>6}  {}{}\n",
                            s.tick,
                            s.sessions,
                            s.successes,
                            num(s.ece_mass10),
                            num(s.brier),
                            num(s.auroc),
                            span(s.auroc_ci)
                        ));
                    }
                }
            }
        }
        if !self.schedule.is_empty() {
            out.push_str("\noptimal threshold τ*_t for the configured costs:\n  tick ");
            for p in &self.schedule {
                out.push_str(&format!("{:>7}", p.tick));
            }
            out.push_str("\n  τ*   ");
            for p in &self.schedule {
                out.push_str(&format!("{:>7.3}", p.tau));
            }
            out.push('\n');
        }
        if let Some(why) = &self.schedule_refused {
            out.push_str(&format!("\noptimal threshold τ*_t: not solved: {why}\n"));
        }
        out.push_str(&self.discrimination.to_text());
        if !self.warnings.is_empty() {
            out.push_str(&format!("\n{} warnings:\n", self.warnings.len()));
            for w in &self.warnings {
                out.push_str(&format!("  {w}\n"));
            }
        }
        out
    }
}

/// A progress bar on stderr when it is a terminal and there are many files to read.
fn progress_bar(files: usize) -> Option<indicatif::ProgressBar> {
    use std::io::IsTerminal;
    if files < 20 || !std::io::stderr().is_terminal() {
        return None;
    }
    let bar = indicatif::ProgressBar::new(files as u64);
    if let Ok(style) =
        indicatif::ProgressStyle::with_template("reading logs {bar:40} {pos}/{len} {eta}")
    {
        bar.set_style(style);
    }
    Some(bar)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `n` sessions of distinct tasks whose entropy separates the labels, every third a success.
    fn separable(n: usize) -> Corpus {
        let sessions = (0..n)
            .map(|i| {
                let success = i % 3 == 0;
                let mut trajectory = Trajectory::new(Some(success));
                for k in 0..40 {
                    let wobble = 0.05 * ((i * 7 + k) % 5) as f64;
                    trajectory.push_token(&crate::competence::TokenSignals {
                        entropy: Some(if success { 0.3 } else { 1.2 } + wobble),
                        margin: Some(0.4 + wobble),
                        surprise: Some(0.5 + wobble),
                    });
                }
                LoggedSession {
                    source: PathBuf::from(format!("logs/{i}.jsonl")),
                    session_id: format!("s{i}"),
                    task: format!("task {i}"),
                    junior_model: "m".into(),
                    top_logprobs: 5,
                    trajectory,
                    shadow: true,
                    censored: false,
                    ended: true,
                    propensity: 1.0,
                }
            })
            .collect();
        Corpus {
            files: n,
            sessions,
            warnings: Vec::new(),
        }
    }

    #[test]
    fn cross_validation_scores_every_session_out_of_fold_and_assess_scores_a_given_fit() {
        let corpus = separable(60);
        let config = Config::default();
        let options = CalibrateOptions {
            folds: 5,
            ..CalibrateOptions::default()
        };
        let (calibration, report) = calibrate(&corpus, &options, &config).expect("fit");
        assert_eq!((report.counts.folds, report.counts.holdout), (5, 60));
        let held = report.holdout.as_ref().expect("scores");
        assert_eq!(held.sessions, 60);
        assert!(held.auroc.is_some_and(|a| a > 0.9), "{:?}", held.auroc);
        assert!(report.to_text().contains("5-fold cross-validation by task"));
        assert_eq!(
            report.discrimination.sessions, 60,
            "each session counted once"
        );
        // One split scores only its held-out side.
        let (_, single) = calibrate(&corpus, &CalibrateOptions::default(), &config).expect("fit");
        assert!(single.holdout.as_ref().expect("scores").sessions < 30);
        // The fit scored as given on the same logs: every session, no fit report.
        let given = assess(&corpus, &calibration, "cal.json", false, &config).expect("assess");
        assert_eq!(given.holdout.as_ref().expect("scores").sessions, 60);
        assert!(given.fit.is_none());
        assert!(
            given
                .to_text()
                .contains("scored as given, no fit: cal.json")
        );
        assert!(matches!(
            calibrate(
                &corpus,
                &CalibrateOptions {
                    folds: 1,
                    ..CalibrateOptions::default()
                },
                &config
            ),
            Err(CalibrateError::Folds)
        ));
    }

    #[test]
    fn a_fold_without_both_labels_is_named() {
        let mut corpus = separable(30);
        // One success in all: the fold holding it leaves the others without one.
        for (i, s) in corpus.sessions.iter_mut().enumerate() {
            s.trajectory.label = Some(i == 0);
        }
        let options = CalibrateOptions {
            folds: 3,
            ..CalibrateOptions::default()
        };
        let err = calibrate(&corpus, &options, &Config::default()).expect_err("no success");
        assert!(err.to_string().starts_with("fold "), "{err}");
    }

    #[test]
    fn fractions_pick_ticks_up_to_the_last() {
        assert_eq!(tick_at(10, 37), 37);
        assert_eq!(tick_at(1, 37), 4);
        assert_eq!(tick_at(5, 0), 0);
    }

    #[test]
    fn the_split_is_stable_and_near_the_asked_fraction() {
        let s = |i: usize| LoggedSession {
            source: PathBuf::from(format!("logs/{i}.jsonl")),
            session_id: format!("s{i}"),
            task: format!("task {}", i / 3),
            junior_model: "m".into(),
            top_logprobs: 5,
            trajectory: Trajectory::new(Some(true)),
            shadow: false,
            censored: false,
            ended: true,
            propensity: 1.0,
        };
        let held = (0..2000).filter(|&i| is_held_out(&s(i), 0.2, true)).count();
        assert!((340..460).contains(&held), "{held} of 2000");
        assert!((0..50).all(|i| is_held_out(&s(i), 0.2, true) == is_held_out(&s(i), 0.2, true)));
        assert_eq!(
            (0..100).filter(|&i| is_held_out(&s(i), 0.0, true)).count(),
            0
        );
        // The three sessions of a task fall on one side.
        for t in 0..300 {
            let sides: Vec<bool> = (3 * t..3 * t + 3)
                .map(|i| is_held_out(&s(i), 0.2, true))
                .collect();
            assert!(sides.iter().all(|&x| x == sides[0]), "task {t}: {sides:?}");
        }
    }
}
