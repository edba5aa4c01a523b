//! Is the belief calibrated at every t? Fit on some tasks, score on the others, per tick.
//!
//! The check the audit asked for: at fixed ticks (100, 1,000, 2,000 tokens) take every
//! held-out session still running, and measure the calibration slope (logit Y on logit B),
//! the equal-mass ECE and, beside it, the ECE a perfectly calibrated judge would score on
//! the same forecasts. Splits are by task, so no task is on both sides.

use serde::Serialize;

use super::correlated::CorrelatedSession;
use crate::competence::calibrator::logit;
use crate::competence::{BeliefModel, Calibration, CompetenceError, FitOptions, fit};
use crate::metrics::{Binning, Forecast, Interval, calibration_slope, ece, ece_noise_floor};

/// Scores of one tick bucket.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct TickScore {
    pub tick: usize,
    /// Held-out sessions that reached this tick.
    pub n: usize,
    pub slope: Option<f64>,
    pub ece_mass10: Option<f64>,
    /// Where 95 % of a calibrated judge's ECE falls on these forecasts.
    pub ece_floor: Option<Interval>,
    /// Spread of logit B: how much the judge says at this tick.
    pub sd_logit: f64,
}

/// (train, held out): every `train_every`-th task trains, the other tasks are held out.
pub fn split_by_task(
    sessions: &[CorrelatedSession],
    train_every: usize,
) -> (Vec<&CorrelatedSession>, Vec<&CorrelatedSession>) {
    sessions
        .iter()
        .partition(|s| s.task % train_every.max(1) == 0)
}

/// Fits the chosen belief model on `train`.
pub fn fit_model(
    train: &[&CorrelatedSession],
    model: BeliefModel,
) -> Result<Calibration, CompetenceError> {
    let data: Vec<_> = train.iter().map(|s| s.trajectory.clone()).collect();
    let options = FitOptions {
        model,
        ..FitOptions::default()
    };
    fit(&data, &options).map(|(c, _)| c)
}

/// Per-tick calibration of `calibration` on `held` (sessions shorter than a tick drop out of
/// that tick's bucket). `floor_reps` draws of the calibrated null per bucket.
pub fn score_at_ticks(
    calibration: &Calibration,
    held: &[&CorrelatedSession],
    ticks: &[usize],
    floor_reps: usize,
) -> Vec<TickScore> {
    let mut buckets: Vec<Vec<Forecast>> = vec![Vec::new(); ticks.len()];
    for s in held {
        let Some(label) = s.trajectory.label else {
            continue;
        };
        let path = calibration.score(&s.trajectory);
        for (bucket, &t) in buckets.iter_mut().zip(ticks) {
            if let Some(&p) = path.get(t) {
                bucket.push(Forecast::new(p, label));
            }
        }
    }
    buckets
        .iter()
        .zip(ticks)
        .enumerate()
        .map(|(i, (f, &tick))| {
            let logits: Vec<f64> = f
                .iter()
                .map(|x| logit(x.p.clamp(1e-9, 1.0 - 1e-9)))
                .collect();
            let n = logits.len().max(1) as f64;
            let mean = logits.iter().sum::<f64>() / n;
            let sd = (logits.iter().map(|l| (l - mean).powi(2)).sum::<f64>() / n).sqrt();
            TickScore {
                tick,
                n: f.len(),
                slope: calibration_slope(f).map(|(_, b)| b),
                ece_mass10: ece(f, Binning::MASS_10),
                ece_floor: ece_noise_floor(f, Binning::MASS_10, floor_reps, 17 + i as u64),
                sd_logit: sd,
            }
        })
        .collect()
}
