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
//! its [`Trajectory::weight`] in total (1, or an inverse propensity), so long sessions do
//! not drown short ones. The same weights enter π₀ and the histograms, so a corpus
//! weighted by inverse propensities is fitted as if no session had been censored.

use super::CompetenceError;
use super::calibration::{Calibration, MAX_TEMPERING};
use super::calibrator::{CalibrationMap, ScoreRow, sigmoid};
use super::feature_fit::fit_features;
pub use super::fit_options::{BeliefModel, FitOptions, FitReport};
use super::fit_options::{log_loss, sample_ticks};
use super::histograms::histograms;
use super::trajectory::Trajectory;

/// The tempering c ∈ [0, [`MAX_TEMPERING`]] minimising Σ w·logloss(σ(ℓ₀ + c·s), y): convex
/// in c, so a projected Newton iteration with step halving finds it. On separable rows the
/// loss falls without end as c grows; the cap stops it where [`Calibration::validate`]
/// would refuse the result, so a tiny corpus that happens to separate still fits.
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
            let next = (c - step * newton).clamp(0.0, MAX_TEMPERING);
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
    let weight_of = |want: bool| -> f64 {
        labelled
            .iter()
            .filter(|(_, l)| *l == want)
            .map(|(t, _)| t.weight())
            .sum()
    };
    let (mass1, mass0) = (weight_of(true), weight_of(false));
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

    let prior = (mass1 + 1.0) / (mass1 + mass0 + 2.0);
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
        fitted_on: None,
    };

    // Stage 2: tempering on held-out rows of untempered summed evidence.
    let l0 = calibration.prior_log_odds();
    let mut raw_rows = Vec::new();
    for (t, label) in &holdout {
        let path = calibration.score_log_odds(t);
        let picks = sample_ticks(t.ticks(), options.rows_per_trajectory);
        let w = t.weight() / picks.len() as f64;
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
    use crate::competence::calibrator::MapKind;
    use crate::protocol::{Observation, SignalKind, StepFacts};

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

    #[test]
    fn separable_rows_with_tiny_sums_stop_at_the_largest_valid_tempering() {
        // Labels follow the sign of sums of ±0.001: the loss keeps falling as c grows.
        let rows: Vec<(f64, bool, f64)> = (0..6)
            .map(|i| {
                let s = if i % 3 == 0 { -0.001 } else { 0.001 };
                (s, s > 0.0, 1.0)
            })
            .collect();
        let c = fit_tempering(0.0, &rows);
        assert_eq!(c, MAX_TEMPERING);
    }
}
