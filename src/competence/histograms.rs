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
