//! Held-out scores of belief paths: at ten fractions of each trajectory, at fixed ticks,
//! and pooled, each with a bootstrap interval over tasks and the calibrated-null floor.

use std::collections::BTreeMap;

use serde::Serialize;

use super::split::group_key;
use super::{FRACTIONS, LoggedSession};
use crate::competence::Calibration;
use crate::metrics::{
    Binning, Forecast, Interval, ReliabilityBin, aurc, auroc, bootstrap, brier, ece,
    ece_noise_floor, mce, reliability_bins,
};

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

/// Tick index at fraction `k / FRACTIONS` of a trajectory of `ticks` ticks.
pub(super) fn tick_at(k: usize, ticks: usize) -> usize {
    (k * ticks).div_ceil(FRACTIONS)
}

pub(super) type Traces = Vec<(Vec<f64>, bool)>;

/// Bootstrap resamples and the seed of every interval (fixed: the numbers are reproducible).
const BOOTSTRAP_REPS: usize = 1000;
const BOOTSTRAP_SEED: u64 = 0x5eed_ca1b;

/// Each labelled session of `held` with its belief path under `calibration`.
pub(super) fn paths<'a>(calibration: &Calibration, held: &[&'a LoggedSession]) -> Vec<Scored<'a>> {
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
pub(super) struct Scored<'a> {
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
pub(super) fn score(scored: &[Scored<'_>]) -> (Option<HoldoutScores>, Traces) {
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
