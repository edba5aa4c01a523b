//! Fitting a [`Calibration`] from labelled trajectories.
//!
//! Three stages, each on the data it should see:
//! 1. per-signal histograms f₁, f₀ with additive smoothing, on the training sessions;
//! 2. the tempering factor c, minimising the log loss of σ(logit π₀ + c·Σ llr) on held-out
//!    sessions (the sum over dependent tokens is over-confident; c shrinks it);
//! 3. the calibration map (Platt, isotonic, equal-mass or identity) on the same held-out
//!    (tempered log-odds, label) rows.
//!
//! Rows are sampled at evenly spaced ticks of each held-out session, each session weighing
//! 1 in total, so long sessions do not drown short ones.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::CompetenceError;
use super::calibration::Calibration;
use super::calibrator::{CalibrationMap, MapKind, ScoreRow, sigmoid};
use super::evidence::SignalKind;
use super::feature_fit::fit_features;
use super::likelihood::Likelihood;
use super::trajectory::Trajectory;

/// Which belief a fit produces.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BeliefModel {
    /// ℓ₀ + c·Σ llr through a map: the naive-Bayes sum with one tempering factor. It
    /// cannot be calibrated at every t when tokens are dependent (on the correlated world
    /// its held-out slope runs 5.8 → 0.67 from tick 100 to 2,000), but it stays the default
    /// for now: on short independent sessions (30 ticks, 600 sessions) it is calibrated
    /// (ECE < 0.04) where the feature model, at its default penalty, is not (0.09).
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

/// The tempering c ≥ 0 minimising Σ w·logloss(σ(ℓ₀ + c·s), y): convex in c, so a projected
/// Newton iteration with step halving finds it.
fn fit_tempering(prior_log_odds: f64, rows: &[(f64, bool, f64)]) -> f64 {
    let loss = |c: f64| -> f64 {
        rows.iter()
            .map(|&(s, y, w)| w * log_loss(sigmoid(prior_log_odds + c * s), y))
            .sum()
    };
    if rows.iter().all(|r| r.0 == 0.0) {
        return 1.0;
    }
    let mut c = 1.0;
    let mut current = loss(c);
    for _ in 0..100 {
        let (mut g, mut h) = (0.0, 0.0);
        for &(s, y, w) in rows {
            let p = sigmoid(prior_log_odds + c * s);
            g += w * (p - if y { 1.0 } else { 0.0 }) * s;
            h += w * p * (1.0 - p) * s * s;
        }
        if g.abs() < 1e-12 {
            break;
        }
        let newton = if h > 1e-300 { g / h } else { g.signum() };
        let mut step = 1.0;
        let mut moved = false;
        while step > 1e-12 {
            let next = (c - step * newton).max(0.0);
            let l = loss(next);
            if l < current {
                moved = (next - c).abs() > 1e-15;
                c = next;
                current = l;
                break;
            }
            step /= 2.0;
        }
        if !moved {
            break;
        }
    }
    c
}

/// Stage 1: per-signal histograms f₁, f₀ of the given sessions (token signals in equal-mass
/// bins, always-logged facts in their [`SignalKind::step_edges`] bins, facts logged only when present as per-step rates).
pub(crate) fn histograms(
    train: &[(&Trajectory, bool)],
    options: &FitOptions,
) -> Result<BTreeMap<SignalKind, Likelihood>, CompetenceError> {
    let mut values: BTreeMap<SignalKind, (Vec<f64>, Vec<f64>)> = BTreeMap::new();
    for (t, label) in train {
        for o in t.observations() {
            let entry = values.entry(o.signal).or_default();
            if *label {
                entry.0.push(o.value)
            } else {
                entry.1.push(o.value)
            }
        }
    }
    // Steps per label, for the per-step rates of the facts logged only when present.
    let steps = |want: bool| -> f64 {
        let n = train
            .iter()
            .filter(|(_, l)| *l == want)
            .flat_map(|(t, _)| t.observations())
            .filter(|o| o.signal == SignalKind::ToolError)
            .count();
        n as f64
    };
    let (steps1, steps0) = (steps(true), steps(false));
    let mut signals = BTreeMap::new();
    for (signal, (ones, zeros)) in values {
        let likelihood = if signal.is_sparse() {
            let a = options.smoothing.max(1e-9);
            let rate = |present: usize, steps: f64| {
                (present as f64 + a) / (steps.max(present as f64) + 2.0 * a)
            };
            Likelihood::binary(rate(ones.len(), steps1), rate(zeros.len(), steps0))?
        } else if signal.is_token_signal() {
            Likelihood::fit(&ones, &zeros, options.bins, options.smoothing)?
        } else {
            Likelihood::fit_with_edges(
                &ones,
                &zeros,
                signal.step_edges().to_vec(),
                options.smoothing,
            )?
        };
        signals.insert(signal, likelihood);
    }
    Ok(signals)
}

/// Fits a calibration from labelled trajectories (unlabelled ones are skipped).
pub fn fit(
    trajectories: &[Trajectory],
    options: &FitOptions,
) -> Result<(Calibration, FitReport), CompetenceError> {
    let labelled: Vec<(&Trajectory, bool)> = trajectories
        .iter()
        .filter_map(|t| t.label.map(|l| (t, l)))
        .collect();
    let successes = labelled.iter().filter(|(_, l)| *l).count();
    if successes == 0 || successes == labelled.len() {
        return Err(CompetenceError::NotEnoughData(format!(
            "fitting needs successful and failed sessions; got {successes} of {} labelled",
            labelled.len()
        )));
    }
    let both =
        |set: &[(&Trajectory, bool)]| set.iter().any(|(_, l)| *l) && set.iter().any(|(_, l)| !*l);
    let k = options.holdout_every;
    let (mut train, mut holdout) = (Vec::new(), Vec::new());
    for (i, item) in labelled.iter().enumerate() {
        if k > 0 && i % k == k - 1 {
            holdout.push(*item);
        } else {
            train.push(*item);
        }
    }
    if !both(&train) || !both(&holdout) {
        train = labelled.clone();
        holdout = labelled.clone();
    }

    let prior = (successes as f64 + 1.0) / (labelled.len() as f64 + 2.0);
    if options.model == BeliefModel::Features {
        return fit_features(prior, &labelled, options, train.len());
    }

    // Stage 1: histograms on the training sessions.
    let signals = histograms(&train, options)?;
    let mut calibration = Calibration {
        prior,
        tempering: 1.0,
        signals,
        map: CalibrationMap::Identity,
        source: format!(
            "fit on {} labelled sessions ({successes} successes)",
            labelled.len()
        ),
        features: None,
    };

    // Stage 2: tempering on held-out rows of untempered summed evidence.
    let l0 = calibration.prior_log_odds();
    let mut raw_rows = Vec::new();
    for (t, label) in &holdout {
        let path = calibration.score_log_odds(t);
        let picks = sample_ticks(t.ticks(), options.rows_per_trajectory);
        let w = 1.0 / picks.len() as f64;
        for i in picks {
            raw_rows.push((path[i] - l0, *label, w));
        }
    }
    let tempering = fit_tempering(l0, &raw_rows);
    calibration.tempering = tempering;

    // Stage 3: the map on the tempered log-odds of the same rows.
    let rows: Vec<ScoreRow> = raw_rows
        .iter()
        .map(|&(s, label, weight)| ScoreRow {
            score: l0 + tempering * s,
            label,
            weight,
        })
        .collect();
    calibration.map = CalibrationMap::fit(options.map, &rows)?;
    calibration.validate()?;

    let total_w: f64 = rows.iter().map(|r| r.weight).sum();
    let mean =
        |f: &dyn Fn(&ScoreRow) -> f64| rows.iter().map(|r| r.weight * f(r)).sum::<f64>() / total_w;
    let report = FitReport {
        labelled: labelled.len(),
        successes,
        train: train.len(),
        holdout: holdout.len(),
        tempering,
        log_loss_prior: mean(&|r| log_loss(prior, r.label)),
        log_loss_fitted: mean(&|r| log_loss(calibration.map.apply(r.score), r.label)),
    };
    Ok((calibration, report))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::competence::evidence::{Observation, StepFacts};

    /// Sessions whose entropy is drawn from a label-dependent pattern, deterministic.
    fn sessions(n: usize) -> Vec<Trajectory> {
        (0..n)
            .map(|i| {
                let label = i % 5 < 3;
                let mut t = Trajectory::new(Some(label));
                for k in 0..60 {
                    // Failures see high entropy on every 3rd token, successes on every 12th.
                    let noisy = if label { k % 12 == 0 } else { k % 3 == 0 };
                    let e = if noisy {
                        2.0 + (k % 5) as f64 * 0.1
                    } else {
                        0.1 + (i % 4) as f64 * 0.01
                    };
                    t.push_tick(&[Observation {
                        signal: SignalKind::Entropy,
                        value: e,
                    }]);
                    if k % 20 == 19 {
                        t.push_step(&StepFacts {
                            tool_error: !label && k == 39,
                            ..StepFacts::default()
                        });
                    }
                }
                t
            })
            .collect()
    }

    #[test]
    fn sampled_ticks_are_even_and_end_at_the_last() {
        assert_eq!(sample_ticks(3, 10), vec![0, 1, 2, 3]);
        assert_eq!(sample_ticks(100, 4), vec![25, 50, 75, 100]);
    }

    #[test]
    fn a_fit_separates_the_labels_and_beats_the_prior() {
        let data = sessions(30);
        let (cal, report) = fit(&data, &FitOptions::default()).expect("fit");
        assert_eq!(report.labelled, 30);
        assert_eq!(report.successes, 18);
        assert_eq!(report.holdout, 10);
        assert!((cal.prior - 19.0 / 32.0).abs() < 1e-12);
        assert!(report.log_loss_fitted < report.log_loss_prior, "{report:?}");
        assert!(cal.signals[&SignalKind::Entropy].llr(2.2) < 0.0);
        assert!(cal.signals[&SignalKind::ToolError].llr(1.0) < 0.0);
        let end = |t: &Trajectory| *cal.score(t).last().expect("ticks");
        assert!(end(&data[0]) > end(&data[3]));
        // The fitted file reads back unchanged.
        let back = Calibration::from_json(&cal.to_json()).expect("parse");
        crate::competence::calibration::assert_same(&back, &cal);
    }

    #[test]
    fn every_map_kind_fits() {
        let data = sessions(24);
        for map in [
            MapKind::Identity,
            MapKind::Platt,
            MapKind::Isotonic,
            MapKind::EqualMass(5),
        ] {
            let opts = FitOptions {
                map,
                ..FitOptions::default()
            };
            let (cal, _) = fit(&data, &opts).expect("fit");
            let b = cal.score(&data[0]);
            assert!(b.iter().all(|p| (0.0..=1.0).contains(p)), "{map:?}");
        }
    }

    #[test]
    fn one_sided_data_is_not_enough() {
        let data: Vec<Trajectory> = (0..5).map(|_| Trajectory::new(Some(true))).collect();
        assert!(matches!(
            fit(&data, &FitOptions::default()),
            Err(CompetenceError::NotEnoughData(_))
        ));
        let none: Vec<Trajectory> = (0..5).map(|_| Trajectory::new(None)).collect();
        assert!(fit(&none, &FitOptions::default()).is_err());
    }

    #[test]
    fn tempering_shrinks_overconfident_sums() {
        // Scores ±10 with labels only 60% aligned: the best c is far below 1.
        let mut rows = Vec::new();
        for i in 0..10 {
            let s = if i % 2 == 0 { 10.0 } else { -10.0 };
            let aligned = i < 6;
            rows.push((s, (s > 0.0) == aligned, 1.0));
        }
        let c = fit_tempering(0.0, &rows);
        assert!(c > 0.0 && c < 0.1, "{c}");
        // Gradient zero at the optimum: Σ (p − y)·s = 0.
        let g: f64 = rows
            .iter()
            .map(|&(s, y, _)| (sigmoid(c * s) - if y { 1.0 } else { 0.0 }) * s)
            .sum();
        assert!(g.abs() < 1e-9, "{g}");
    }
}
