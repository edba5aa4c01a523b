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
use crate::metrics::{
    Binning, Forecast, Interval, calibration_slope, calibration_slope_against, ece, ece_against,
    ece_noise_floor,
};

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

/// The same held-out sessions measured against the correlated world's exact posterior B*
/// ([`super::exact_posterior`]) instead of labels: the fitted belief's calibration error
/// with no Bernoulli noise, and what a calibrated judge (B* itself) scores with labels.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct TruthScore {
    pub tick: usize,
    pub n: usize,
    /// Equal-mass ECE of the fitted B against B* (bins by B, |mean B − mean B*| per bin).
    pub ece_vs_truth: Option<f64>,
    /// The calibration slope of the fitted B against B* (soft targets): the slope with no
    /// label noise.
    pub slope_vs_truth: Option<f64>,
    /// Mean |logit B − logit B*|: how far the fitted belief is from the best possible one.
    pub mean_logit_gap: f64,
    /// Equal-mass ECE of B* against the labels, and its calibrated-null floor: a judge
    /// calibrated by construction, scored like the fitted one.
    pub exact_ece: Option<f64>,
    pub exact_floor: Option<Interval>,
    /// The calibration slope of B* on the labels: 1 in expectation, so its spread over
    /// seeds is the noise in the fitted belief's slope.
    pub exact_slope: Option<f64>,
    /// Each tenth of the forecasts (sorted by B): (mean B, mean B*).
    pub tenths: [(f64, f64); 10],
}

/// One held-out session at one tick: the fitted belief, the exact posterior and the label.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TruthCell {
    pub fitted: f64,
    pub exact: f64,
    pub label: bool,
}

/// For each of `ticks`, a [`TruthCell`] per labelled session of `held` still running then,
/// in session order. The posteriors are computed on `threads` threads.
pub fn truth_cells(
    calibration: &Calibration,
    world: &super::CorrelatedWorld,
    held: &[&CorrelatedSession],
    ticks: &[usize],
    threads: usize,
) -> Vec<Vec<TruthCell>> {
    type Cells = Vec<Vec<TruthCell>>;
    let work = |part: &[&CorrelatedSession]| -> Cells {
        let mut cells: Cells = vec![Vec::new(); ticks.len()];
        for s in part {
            let Some(label) = s.trajectory.label else {
                continue;
            };
            let fitted = calibration.score(&s.trajectory);
            let exact = super::exact_posterior::exact_at(world, &s.trajectory, ticks);
            for ((cell, &t), &b) in cells.iter_mut().zip(ticks).zip(&exact) {
                if let Some(&p) = fitted.get(t) {
                    cell.push(TruthCell {
                        fitted: p,
                        exact: b,
                        label,
                    });
                }
            }
        }
        cells
    };
    let chunk = held.len().div_ceil(threads.max(1)).max(1);
    let parts: Vec<Cells> = std::thread::scope(|scope| {
        let handles: Vec<_> = held
            .chunks(chunk)
            .map(|part| scope.spawn(move || work(part)))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
            .collect()
    });
    let mut cells: Cells = vec![Vec::new(); ticks.len()];
    for part in parts {
        for (all, mine) in cells.iter_mut().zip(part) {
            all.extend(mine);
        }
    }
    cells
}

/// Per-tick comparison of `calibration` with the exact posterior of `world` on `held`.
pub fn score_against_truth(
    calibration: &Calibration,
    world: &super::CorrelatedWorld,
    held: &[&CorrelatedSession],
    ticks: &[usize],
    floor_reps: usize,
    threads: usize,
) -> Vec<TruthScore> {
    let cells = truth_cells(calibration, world, held, ticks, threads);
    score_cells(&cells, ticks, floor_reps)
}

/// [`TruthScore`]s of cells (one list per tick of `ticks`).
pub fn score_cells(
    cells: &[Vec<TruthCell>],
    ticks: &[usize],
    floor_reps: usize,
) -> Vec<TruthScore> {
    cells
        .iter()
        .zip(ticks)
        .enumerate()
        .map(|(i, (cell, &tick))| {
            let p: Vec<f64> = cell.iter().map(|c| c.fitted).collect();
            let truth: Vec<f64> = cell.iter().map(|c| c.exact).collect();
            let fitted: Vec<Forecast> = cell
                .iter()
                .map(|c| Forecast::new(c.fitted, c.label))
                .collect();
            let clamp = |x: f64| logit(x.clamp(1e-9, 1.0 - 1e-9));
            let gap = cell
                .iter()
                .map(|c| (clamp(c.fitted) - clamp(c.exact)).abs())
                .sum::<f64>()
                / cell.len().max(1) as f64;
            let exact: Vec<Forecast> = cell
                .iter()
                .map(|c| Forecast::new(c.exact, c.label))
                .collect();
            let mut sorted = cell.clone();
            sorted.sort_by(|a, b| a.fitted.total_cmp(&b.fitted));
            let tenths = std::array::from_fn(|b| {
                let part = &sorted[b * sorted.len() / 10..(b + 1) * sorted.len() / 10];
                let n = part.len().max(1) as f64;
                (
                    part.iter().map(|c| c.fitted).sum::<f64>() / n,
                    part.iter().map(|c| c.exact).sum::<f64>() / n,
                )
            });
            TruthScore {
                tenths,
                tick,
                n: cell.len(),
                ece_vs_truth: ece_against(&fitted, &truth, Binning::MASS_10),
                mean_logit_gap: gap,
                slope_vs_truth: calibration_slope_against(&p, &truth).map(|(_, b)| b),
                exact_ece: ece(&exact, Binning::MASS_10),
                exact_slope: calibration_slope(&exact).map(|(_, b)| b),
                exact_floor: ece_noise_floor(&exact, Binning::MASS_10, floor_reps, 17 + i as u64),
            }
        })
        .collect()
}
