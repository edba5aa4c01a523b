//! Stage 1 of a fit: per-signal likelihood histograms of labelled sessions, used by both
//! the naive-Bayes fit and the feature fit (which reports them beside its own model).

use std::collections::BTreeMap;

use super::CompetenceError;
use super::fit_options::FitOptions;
use super::likelihood::Likelihood;
use super::trajectory::Trajectory;
use crate::protocol::SignalKind;

/// Stage 1: per-signal histograms f₁, f₀ of the given sessions (token signals in equal-mass
/// bins, always-logged facts in their [`SignalKind::step_edges`] bins, facts logged only when present as per-step rates).
pub(crate) fn histograms(
    train: &[(&Trajectory, bool)],
    options: &FitOptions,
) -> Result<BTreeMap<SignalKind, Likelihood>, CompetenceError> {
    // Values with their session's weight (1, or an inverse propensity: see
    // [`Trajectory::weight`]).
    type Weighted = Vec<(f64, f64)>;
    let mut values: BTreeMap<SignalKind, (Weighted, Weighted)> = BTreeMap::new();
    for (t, label) in train {
        let w = t.weight();
        for o in t.observations() {
            let entry = values.entry(o.signal).or_default();
            if *label {
                entry.0.push((o.value, w))
            } else {
                entry.1.push((o.value, w))
            }
        }
    }
    // Steps per label (weighted), for the per-step rates of the facts logged only when
    // present.
    let steps = |want: bool| -> f64 {
        train
            .iter()
            .filter(|(_, l)| *l == want)
            .map(|(t, _)| {
                let n = t
                    .observations()
                    .iter()
                    .filter(|o| o.signal == SignalKind::ToolError)
                    .count();
                n as f64 * t.weight()
            })
            .sum()
    };
    let mass = |v: &Weighted| v.iter().map(|(_, w)| w).sum::<f64>();
    let (steps1, steps0) = (steps(true), steps(false));
    let mut signals = BTreeMap::new();
    for (signal, (ones, zeros)) in values {
        let likelihood = if signal.is_sparse() {
            let a = options.smoothing.max(1e-9);
            let rate = |present: f64, steps: f64| (present + a) / (steps.max(present) + 2.0 * a);
            Likelihood::binary(rate(mass(&ones), steps1), rate(mass(&zeros), steps0))?
        } else if signal.is_token_signal() {
            Likelihood::fit_weighted(&ones, &zeros, options.bins, options.smoothing)?
        } else {
            Likelihood::fit_weighted_with_edges(
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
