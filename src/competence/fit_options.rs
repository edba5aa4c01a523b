//! What a fit is asked to do and what it reports, shared by the naive-Bayes fit
//! ([`super::fit`]) and the feature fit ([`super::feature_fit`]) so neither imports the
//! other.

use serde::{Deserialize, Serialize};

use super::calibrator::MapKind;

/// Which belief a fit produces.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BeliefModel {
    /// ℓ₀ + c·Σ llr through a map: the naive-Bayes sum with one tempering factor. It
    /// cannot be calibrated at every t when tokens are dependent (on the correlated world
    /// its held-out slope runs 5.8 → 0.67 from tick 100 to 2,000), but it stays the default:
    /// the feature model is better on every pooled count on the real 1.5B and ranks as well
    /// or better at every fixed tick (docs/results/2026-12-01-real-corpus-and-fits.md), but the default threshold
    /// (`optimal`, the token-clock DP) plans on this model's per-token law, which a feature
    /// model does not have ([`super::CompetenceError::NoTokenLaw`]): a feature calibration
    /// runs under the step schedule `handoff schedule` plans on logs, or `myopic`.
    #[default]
    NaiveBayes,
    /// The length-robust varying-coefficient model of [`super::features`]: slope within
    /// [0.8, 1.25] at ticks 100, 1,000 and 2,000 on the correlated world
    /// (`tests/sim/time_calibration.rs`).
    Features,
}

/// Knobs of [`fit`]; the defaults suit tens to hundreds of sessions.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct FitOptions {
    /// Equal-mass bins per token signal (step facts always have two).
    pub bins: usize,
    /// Laplace pseudo-count per bin.
    pub smoothing: f64,
    pub map: MapKind,
    /// Every `holdout_every`-th labelled session is held out for stages 2 and 3; 0 fits
    /// everything on all sessions. Falls back to all sessions when a side lacks a label.
    pub holdout_every: usize,
    /// Ticks sampled per held-out session (the last tick is always one of them).
    pub rows_per_trajectory: usize,
    #[serde(default)]
    pub model: BeliefModel,
}

impl Default for FitOptions {
    fn default() -> Self {
        FitOptions {
            bins: 10,
            smoothing: 1.0,
            map: MapKind::Platt,
            holdout_every: 3,
            rows_per_trajectory: 32,
            model: BeliefModel::default(),
        }
    }
}

/// What a fit used and how much it helped (log loss on the held-out rows).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FitReport {
    pub labelled: usize,
    pub successes: usize,
    pub train: usize,
    pub holdout: usize,
    pub tempering: f64,
    /// Log loss of the constant prior π₀ on the held-out rows.
    pub log_loss_prior: f64,
    /// Log loss of the fitted calibration on the same rows.
    pub log_loss_fitted: f64,
}

/// Rows (tick index) sampled from a trajectory of `ticks` ticks: evenly spaced, last included.
pub(crate) fn sample_ticks(ticks: usize, rows: usize) -> Vec<usize> {
    let rows = rows.max(1);
    if ticks < rows {
        return (0..=ticks).collect();
    }
    let mut out: Vec<usize> = (1..=rows).map(|k| k * ticks / rows).collect();
    out.dedup();
    out
}

pub(crate) fn log_loss(p: f64, label: bool) -> f64 {
    let p = p.clamp(1e-12, 1.0 - 1e-12);
    if label { -p.ln() } else { -(1.0 - p).ln() }
}
