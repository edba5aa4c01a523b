//! Fitting a [`FeatureModel`]: penalised varying-coefficient logistic regression
//! ([`super::varying_fit`]) on (inputs, t, label) rows computed out of fold, with its ridge
//! and its link ([`super::feature_link`]) chosen by held-out log loss.

use super::CompetenceError;
use super::calibration::Calibration;
use super::calibrator::{CalibrationMap, sigmoid};
use super::feature_link::choose_link;
use super::features::{DEFAULT_HALF_LIFE, DEFAULT_KNOTS, FeatureModel, FeatureState, N_FEATURES};
use super::fit_options::{FitOptions, FitReport, log_loss, sample_ticks};
use super::histograms::histograms;
use super::trajectory::Trajectory;
use super::varying_fit::fit_varying;
pub use super::varying_fit::{FeatureRow, Penalty};
use crate::protocol::SignalKind;

/// Fits the model's weights on `rows` (both labels needed).
pub fn fit_feature_model(
    rows: &[FeatureRow],
    knots: &[f64],
    half_life: f64,
    penalty: Penalty,
) -> Result<FeatureModel, CompetenceError> {
    let weights = fit_varying(rows, knots, penalty, true)?;
    let model = FeatureModel {
        knots: knots.to_vec(),
        weights,
        half_life,
        link: None,
    };
    model.validate()?;
    Ok(model)
}

/// The model's inputs at ticks `picks` (ascending) of `trajectory`, with the per-token
/// ratios read from `calibration`'s histograms (untempered).
pub fn inputs_at(
    calibration: &Calibration,
    trajectory: &Trajectory,
    half_life: f64,
    picks: &[usize],
) -> Vec<[f64; N_FEATURES]> {
    let table = SignalKind::ALL.map(|k| calibration.signals.get(&k));
    let mut state = FeatureState::new(half_life);
    let mut out = Vec::with_capacity(picks.len());
    let mut next = picks.iter().peekable();
    for (t, obs) in trajectory.iter_ticks().enumerate() {
        if t > 0 {
            state.start_token();
        }
        for o in obs {
            if !o.value.is_nan() {
                let llr = table[o.signal.index()].map_or(0.0, |l| l.llr(o.value));
                state.observe(*o, llr);
            }
        }
        while next.peek().is_some_and(|&&p| p == t) {
            out.push(state.inputs());
            next.next();
        }
        if next.peek().is_none() {
            break;
        }
    }
    out
}

/// Ticks a held-out session contributes rows at: evenly spaced ones (as for the naive
/// fit) and 0, 1, 2, 4, 8, … so that early t, where the belief changes fastest, is covered.
fn row_ticks(ticks: usize, rows: usize) -> Vec<usize> {
    let mut picks = sample_ticks(ticks, rows);
    let mut g = 1;
    picks.push(0);
    while g <= ticks {
        picks.push(g);
        g *= 2;
    }
    picks.sort_unstable();
    picks.dedup();
    picks
}

/// The ridge penalties a fit chooses among, in units of one session's total weight.
///
/// No single value suits every corpus: on the correlated world with 2,000 training
/// sessions a ridge of 10 kept the held-out slope in [0.8, 1.25] where 1 left it at 0.83,
/// but on the real 1.5B (164 sessions, 5-fold) 10 gave ECE 0.068 and AUROC 0.71 against
/// 0.036 and 0.83 for 0.1, and on short independent simulated sessions (600, 40 ticks)
/// ECE 0.083 against 0.023. So the fit measures it.
pub const RIDGES: [f64; 3] = [0.1, 1.0, 10.0];

/// Which ridge was chosen, and the held-out log loss of each candidate.
#[derive(Debug, Clone, PartialEq)]
pub struct RidgeChoice {
    pub ridge: f64,
    /// (ridge, mean log loss on the rows of the fold left out), one per candidate that fit.
    pub losses: Vec<(f64, f64)>,
    /// Each row's η under the chosen ridge's model fitted without the row's fold (NaN where
    /// that fold did not fit): what the link is learned on.
    pub out_of_fold: Vec<f64>,
}

impl RidgeChoice {
    /// "0.1: 0.4012, 1: 0.3990, 10: 0.4051": each candidate's held-out log loss.
    pub fn describe(&self) -> String {
        let each: Vec<String> = self
            .losses
            .iter()
            .map(|(r, l)| format!("{r}: {l:.4}"))
            .collect();
        each.join(", ")
    }
}

/// Chooses among [`RIDGES`] by the log loss of each fold's rows under a model fitted on
/// the other folds' rows (folds of sessions, as dealt by [`fit_features`]). The rows of
/// the other folds were computed under histograms that saw the held-out fold, a small
/// leak that does not favour one penalty over another. Ties keep the larger ridge; with
/// fewer than two usable folds the default ridge stands.
pub fn choose_ridge(
    rows: &[FeatureRow],
    fold_of: &[usize],
    folds: usize,
) -> Result<RidgeChoice, CompetenceError> {
    let default = Penalty::default().ridge;
    // Per candidate: (weighted loss, weight, folds scored). Each fold's training rows are
    // gathered once and serve every candidate.
    let mut sums = [(0.0, 0.0, 0usize); RIDGES.len()];
    let mut out_of_fold = vec![vec![f64::NAN; rows.len()]; RIDGES.len()];
    for f in 0..folds {
        let train: Vec<FeatureRow> = rows
            .iter()
            .zip(fold_of)
            .filter(|(_, g)| **g != f)
            .map(|(r, _)| *r)
            .collect();
        for ((ridge, sum), oof) in RIDGES.iter().zip(&mut sums).zip(&mut out_of_fold) {
            let penalty = Penalty {
                ridge: *ridge,
                ..Penalty::default()
            };
            let Ok(model) = fit_feature_model(&train, &DEFAULT_KNOTS, DEFAULT_HALF_LIFE, penalty)
            else {
                continue;
            };
            sum.2 += 1;
            for (i, r) in rows.iter().enumerate().filter(|(i, _)| fold_of[*i] == f) {
                let eta = model.eta(&r.x, r.t);
                oof[i] = eta;
                sum.0 += r.weight * log_loss(sigmoid(eta), r.label);
                sum.1 += r.weight;
            }
        }
    }
    let losses: Vec<(f64, f64)> = RIDGES
        .iter()
        .zip(sums)
        .filter(|(_, (_, weight, scored))| *scored >= 2 && *weight > 0.0)
        .map(|(ridge, (loss, weight, _))| (*ridge, loss / weight))
        .collect();
    let ridge = losses
        .iter()
        .rev()
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .map_or(default, |(r, _)| *r);
    let out_of_fold = RIDGES.iter().position(|r| *r == ridge).map_or_else(
        || vec![f64::NAN; rows.len()],
        |i| out_of_fold.swap_remove(i),
    );
    Ok(RidgeChoice {
        ridge,
        losses,
        out_of_fold,
    })
}

/// [`super::fit`] for [`super::BeliefModel::Features`], cross-fitted: the labelled
/// sessions are dealt into `holdout_every` folds (at least 2); each fold's rows are computed
/// under histograms fitted on the other folds, so every session serves the regression
/// without its own label leaking through the histograms. The ridge is chosen on those rows
/// ([`choose_ridge`]) and named in the calibration's `source`. The final histograms use
/// every session. `train` is the size of one side, for the report.
pub(crate) fn fit_features(
    prior: f64,
    labelled: &[(&Trajectory, bool)],
    options: &FitOptions,
    train: usize,
) -> Result<(Calibration, FitReport), CompetenceError> {
    let folds = options.holdout_every.max(2);
    let mut rows = Vec::new();
    // The fold each row's session was dealt into (for the choice of the ridge).
    let mut fold_of = Vec::new();
    for f in 0..folds {
        let (mine, others): (Vec<_>, Vec<_>) = labelled
            .iter()
            .enumerate()
            .partition(|(i, _)| i % folds == f);
        let others: Vec<(&Trajectory, bool)> = others.into_iter().map(|(_, x)| *x).collect();
        if !(others.iter().any(|x| x.1) && others.iter().any(|x| !x.1)) {
            continue;
        }
        let fold = Calibration {
            prior,
            tempering: 1.0,
            signals: histograms(&others, options)?,
            map: CalibrationMap::Identity,
            source: String::new(),
            features: None,
            fitted_on: None,
        };
        for (_, (t, label)) in mine {
            let picks = row_ticks(t.ticks(), options.rows_per_trajectory);
            let w = t.weight() / picks.len() as f64;
            let inputs = inputs_at(&fold, t, DEFAULT_HALF_LIFE, &picks);
            for (x, tick) in inputs.into_iter().zip(&picks) {
                rows.push(FeatureRow {
                    x,
                    t: *tick as f64,
                    label: *label,
                    weight: w,
                    offset: 0.0,
                });
                fold_of.push(f);
            }
        }
    }
    let choice = choose_ridge(&rows, &fold_of, folds)?;
    let penalty = Penalty {
        ridge: choice.ridge,
        ..Penalty::default()
    };
    let mut model = fit_feature_model(&rows, &DEFAULT_KNOTS, DEFAULT_HALF_LIFE, penalty)?;
    let link = choose_link(&choice.out_of_fold, &rows, &fold_of, folds, &DEFAULT_KNOTS);
    model.link = link.link.clone();
    model.validate()?;
    let total: f64 = rows.iter().map(|r| r.weight).sum();
    let mean =
        |f: &dyn Fn(&FeatureRow) -> f64| rows.iter().map(|r| r.weight * f(r)).sum::<f64>() / total;
    let successes = labelled.iter().filter(|x| x.1).count();
    let report = FitReport {
        labelled: labelled.len(),
        successes,
        train,
        holdout: labelled.len(),
        tempering: 1.0,
        log_loss_prior: mean(&|r| log_loss(prior, r.label)),
        log_loss_fitted: mean(&|r| log_loss(sigmoid(model.log_odds(&r.x, r.t)), r.label)),
    };
    let calibration = Calibration {
        prior,
        tempering: 1.0,
        signals: histograms(labelled, options)?,
        map: CalibrationMap::Identity,
        source: format!(
            "feature model fit on {} labelled sessions ({successes} successes, {folds}-fold \
             cross-fitted; ridge {} chosen by held-out log loss: {}; link {})",
            labelled.len(),
            choice.ridge,
            choice.describe(),
            link.describe()
        ),
        features: Some(model),
        fitted_on: None,
    };
    calibration.validate()?;
    Ok((calibration, report))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    #[test]
    fn a_known_time_varying_logistic_law_is_recovered() {
        // P(Y | x, t) = σ(0.3 + β(t)·x), β rising from 0.5 at t = 0 to 2 at t ≥ 1000.
        let knots = [0.0, 1000.0, 10000.0];
        let beta = |t: f64| 0.5 + 1.5 * (t.ln_1p() / 1000f64.ln_1p()).min(1.0);
        let mut rng = StdRng::seed_from_u64(7);
        let rows: Vec<FeatureRow> = (0..20000)
            .map(|_| {
                let t = (rng.random::<f64>() * 2000f64.ln()).exp() - 1.0;
                let mut x = [0.0; N_FEATURES];
                x[0] = 1.0;
                x[1] = rng.random::<f64>() * 2.0 - 1.0;
                let label = rng.random::<f64>() < sigmoid(0.3 + beta(t) * x[1]);
                FeatureRow {
                    x,
                    t,
                    label,
                    weight: 1.0,
                    offset: 0.0,
                }
            })
            .collect();
        let penalty = Penalty {
            ridge: 0.1,
            smooth: 0.1,
        };
        let m = fit_feature_model(&rows, &knots, 64.0, penalty).expect("fit");
        let (b0, b1) = (m.weights[0][1], m.weights[1][1]);
        assert!((b0 - 0.5).abs() < 0.2, "β(0) = {b0}");
        assert!((b1 - 2.0).abs() < 0.25, "β(1000) = {b1}");
        assert!((m.weights[1][0] - 0.3).abs() < 0.15, "{:?}", m.weights[1]);
        // Inputs that never vary get no weight.
        assert!(m.weights.iter().all(|w| w[10] == 0.0));
    }

    /// Rows of `sessions` sessions of 30 rows each (weight 1/30 a row, so one session
    /// weighs 1), labels drawn as σ(signal·x₁) with nine more inputs of pure noise.
    fn rows_of(sessions: usize, signal: f64, seed: u64) -> (Vec<FeatureRow>, Vec<usize>) {
        let mut rng = StdRng::seed_from_u64(seed);
        let mut rows = Vec::new();
        let mut folds = Vec::new();
        for s in 0..sessions {
            for k in 0..30 {
                let mut x = [0.0; N_FEATURES];
                x[0] = 1.0;
                for v in x.iter_mut().skip(1).take(10) {
                    *v = rng.random::<f64>() * 2.0 - 1.0;
                }
                let label = rng.random::<f64>() < sigmoid(signal * x[1]);
                rows.push(FeatureRow {
                    x,
                    t: f64::from(k) * 50.0,
                    label,
                    weight: 1.0 / 30.0,
                    offset: 0.0,
                });
                folds.push(s % 3);
            }
        }
        (rows, folds)
    }

    #[test]
    fn the_ridge_is_chosen_by_held_out_log_loss() {
        // A strong signal and plenty of rows: a light penalty predicts held-out rows best.
        let (rows, folds) = rows_of(200, 4.0, 3);
        let strong = choose_ridge(&rows, &folds, 3).expect("choice");
        assert_eq!(strong.losses.len(), RIDGES.len());
        assert!(strong.ridge < 10.0, "{strong:?}");
        // Noise only, few sessions: the heaviest penalty overfits least.
        let (rows, folds) = rows_of(12, 0.0, 4);
        let noise = choose_ridge(&rows, &folds, 3).expect("choice");
        assert_eq!(noise.ridge, 10.0, "{noise:?}");
        assert!(
            noise.describe().starts_with("0.1: "),
            "{}",
            noise.describe()
        );
        // The chosen one has the lowest loss.
        let best = noise
            .losses
            .iter()
            .map(|l| l.1)
            .fold(f64::INFINITY, f64::min);
        assert!(
            noise
                .losses
                .iter()
                .any(|&(r, l)| r == noise.ridge && l == best)
        );
    }

    #[test]
    fn one_label_is_not_enough() {
        let row = FeatureRow {
            x: [1.0; N_FEATURES],
            t: 1.0,
            label: true,
            weight: 1.0,
            offset: 0.0,
        };
        assert!(fit_feature_model(&[row], &[0.0, 1.0], 64.0, Penalty::default()).is_err());
    }
}
