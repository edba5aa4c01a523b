//! The exact posterior of the correlated world, P(Y = 1 | the tokens so far): the
//! Bayes-optimal judge, calibrated by construction, that a fitted belief can be measured
//! against without label noise.
//!
//! Why: with labels alone, a judge's ECE on a few thousand held-out sessions is mostly the
//! noise of Bernoulli outcomes (the calibrated-null floor), so a residual error of 0.01 is
//! visible only on tens of thousands of sessions. Where the truth is known, E[Y | B] is
//! E[B* | B] (B is a function of the tokens and B* = E[Y | tokens]), so binning the fitted B
//! and comparing it with the mean B* in each bin measures the same calibration error with
//! no Bernoulli noise at all ([`crate::metrics::ece_against`]).
//!
//! How: given θ, the hesitation state is a two-state Markov chain (the world's
//! [`super::CorrelatedWorld::session`]) and a token's entropy is drawn from its state's law;
//! the margin is the entropy's image plus noise that does not depend on the state, so it
//! adds nothing. A scaled forward filter per θ on a grid gives ln P(h₁..h_t | θ) up to a
//! constant shared by every θ, and
//!
//!   logit B*_t = logit π + ln Σ_g w₁(θ_g)·L_t(θ_g) − ln Σ_g w₀(θ_g)·L_t(θ_g)
//!
//! with w_y the Beta law of θ given Y at the grid's midpoints. The grid covers θ ∈ (0, 0.7):
//! both Beta laws put less than 10⁻⁶ of their mass above 0.7 (test
//! `the_grid_matches_brute_force_enumeration` checks the whole computation against a
//! 20,000-point quadrature over (0, 1) and every hidden path). Cost: grid × ticks × 2 states,
//! about 0.3 ms per 1,000 tokens.

use super::beta::{ln_beta, ln_gamma};
use super::correlated::{
    CorrelatedWorld, FLUENT_ENTROPY_MEAN, HESITANT_ENTROPY, THETA_FAILURE, THETA_SUCCESS,
};
use crate::competence::calibrator::sigmoid;
use crate::competence::{SignalKind, Trajectory};

/// Grid points over (0, [`THETA_MAX`]).
pub const GRID: usize = 280;
/// Upper end of the θ grid.
pub const THETA_MAX: f64 = 0.7;

/// ln of the entropy's density in a hesitant (Gamma) and a fluent (exponential) token.
fn ln_emissions(h: f64) -> (f64, f64) {
    let (k, s) = HESITANT_ENTROPY;
    let hesitant = if h > 0.0 {
        (k - 1.0) * h.ln() - h / s - ln_gamma(k) - k * s.ln()
    } else {
        f64::NEG_INFINITY
    };
    let fluent = if h >= 0.0 {
        -(FLUENT_ENTROPY_MEAN.ln()) - h / FLUENT_ENTROPY_MEAN
    } else {
        f64::NEG_INFINITY
    };
    (hesitant, fluent)
}

fn ln_beta_density(theta: f64, (a, b): (f64, f64)) -> f64 {
    (a - 1.0) * theta.ln() + (b - 1.0) * (1.0 - theta).ln() - ln_beta(a, b)
}

fn log_sum_exp(values: impl Iterator<Item = f64>) -> f64 {
    let v: Vec<f64> = values.collect();
    let m = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if !m.is_finite() {
        return m;
    }
    m + v.iter().map(|x| (x - m).exp()).sum::<f64>().ln()
}

/// B*_t at each of `at` (ascending ticks; those past the end are left out), on a grid of
/// `grid` midpoints over (0, `theta_max`).
pub fn exact_at_on(
    world: &CorrelatedWorld,
    trajectory: &Trajectory,
    at: &[usize],
    grid: usize,
    theta_max: f64,
) -> Vec<f64> {
    let grid = grid.max(1);
    let step = theta_max / grid as f64;
    let thetas: Vec<f64> = (0..grid).map(|g| (g as f64 + 0.5) * step).collect();
    // ln prior weight of each grid point under either label, normalised over the grid so
    // that with no evidence B* is π exactly.
    let weights = |law: (f64, f64)| -> Vec<f64> {
        let w: Vec<f64> = thetas.iter().map(|&t| ln_beta_density(t, law)).collect();
        let total = log_sum_exp(w.iter().copied());
        w.iter().map(|x| x - total).collect()
    };
    let (w1, w0) = (weights(THETA_SUCCESS), weights(THETA_FAILURE));
    let stay = world.stay;
    let enter: Vec<f64> = thetas
        .iter()
        .map(|&t| (t * (1.0 - stay) / (1.0 - t)).clamp(0.0, 1.0))
        .collect();
    // Filtered P(hesitant) before the first token: the chain starts at its stationary rate.
    let mut hes: Vec<f64> = thetas.iter().map(|t| t.clamp(0.0, 1.0)).collect();
    let mut ln_like = vec![0.0; grid];
    // Per-θ products of the scaling constants not yet folded into ln_like. Each constant is
    // at least min(P(enter), 1 − stay) > 0, so 32 of them cannot underflow: one ln per θ
    // every 32 tokens instead of every token.
    let mut scale = vec![1.0; grid];
    let mut pending = 0;
    let prior = world.prior.clamp(1e-12, 1.0 - 1e-12);
    let prior_log_odds = (prior / (1.0 - prior)).ln();
    let mut out = Vec::with_capacity(at.len());
    let mut next = at.iter().copied().peekable();
    for (t, obs) in trajectory.iter_ticks().enumerate() {
        if next.peek().is_none() {
            break;
        }
        if t > 0 {
            let entropy = obs
                .iter()
                .find(|o| o.signal == SignalKind::Entropy && !o.value.is_nan())
                .map(|o| o.value);
            // One step of the chain, then (when the token carries an entropy) its emission,
            // scaled by the larger of the two densities: a constant shared by every θ.
            let (eh, ef) = entropy.map_or((1.0, 1.0), |h| {
                let (lh, lf) = ln_emissions(h);
                let m = lh.max(lf);
                ((lh - m).exp(), (lf - m).exp())
            });
            for g in 0..grid {
                let pred = hes[g] * stay + (1.0 - hes[g]) * enter[g];
                let (jh, jf) = (pred * eh, (1.0 - pred) * ef);
                let c = jh + jf;
                scale[g] *= c;
                hes[g] = if c > 0.0 { jh / c } else { pred };
            }
            pending += 1;
        }
        let wanted = next.peek() == Some(&t);
        if pending == 32 || wanted {
            for (l, s) in ln_like.iter_mut().zip(&mut scale) {
                *l += s.ln();
                *s = 1.0;
            }
            pending = 0;
        }
        while next.peek() == Some(&t) {
            let a = log_sum_exp(w1.iter().zip(&ln_like).map(|(w, l)| w + l));
            let b = log_sum_exp(w0.iter().zip(&ln_like).map(|(w, l)| w + l));
            out.push(sigmoid(prior_log_odds + a - b));
            next.next();
        }
    }
    out
}

/// B*_t at each of `at` on the default grid.
pub fn exact_at(world: &CorrelatedWorld, trajectory: &Trajectory, at: &[usize]) -> Vec<f64> {
    exact_at_on(world, trajectory, at, GRID, THETA_MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::competence::Observation;

    fn trajectory(entropies: &[f64]) -> Trajectory {
        let mut t = Trajectory::new(None);
        for &h in entropies {
            t.push_tick(&[Observation {
                signal: SignalKind::Entropy,
                value: h,
            }]);
        }
        t
    }

    /// P(Y=1 | h) by summing every hidden path s₀..s_T and integrating θ over (0, 1)
    /// with 20,000 midpoints: no filter, no truncation.
    fn brute_force(world: &CorrelatedWorld, h: &[f64]) -> f64 {
        let n = 20_000;
        let (mut num, mut den) = (0.0, 0.0);
        for g in 0..n {
            let theta = (g as f64 + 0.5) / n as f64;
            let enter = (theta * (1.0 - world.stay) / (1.0 - theta)).clamp(0.0, 1.0);
            let mut like = 0.0;
            for path in 0..(1u32 << (h.len() + 1)) {
                let state = |i: usize| path >> i & 1 == 1;
                let mut p = if state(0) { theta } else { 1.0 - theta };
                for (i, &x) in h.iter().enumerate() {
                    let (from, to) = (state(i), state(i + 1));
                    let go = if from { world.stay } else { enter };
                    p *= if to { go } else { 1.0 - go };
                    let (lh, lf) = ln_emissions(x);
                    p *= if to { lh.exp() } else { lf.exp() };
                }
                like += p;
            }
            let f1 = ln_beta_density(theta, THETA_SUCCESS).exp();
            let f0 = ln_beta_density(theta, THETA_FAILURE).exp();
            num += world.prior * f1 * like;
            den += world.prior * f1 * like + (1.0 - world.prior) * f0 * like;
        }
        num / den
    }

    #[test]
    fn the_grid_matches_brute_force_enumeration() {
        let world = CorrelatedWorld::default();
        for h in [
            vec![0.01, 0.05, 2.5, 1.8, 0.02],
            vec![3.0, 2.0, 2.2, 1.5, 4.0],
            vec![0.1, 0.02, 0.03, 0.001, 0.2],
        ] {
            let all: Vec<usize> = (0..=h.len() + 3).collect();
            let path = exact_at(&world, &trajectory(&h), &all);
            assert_eq!(path.len(), h.len() + 1, "ticks past the end are left out");
            assert!((path[0] - world.prior).abs() < 1e-12, "no evidence: π");
            let want = brute_force(&world, &h);
            // The filter is exact: on the brute force's own grid it agrees to rounding.
            let same_grid = exact_at_on(&world, &trajectory(&h), &[h.len()], 20_000, 1.0);
            let got = same_grid[0];
            assert!((got - want).abs() < 1e-7, "{h:?}: {got} vs {want}");
            // The default grid (280 points on (0, 0.7)) is within 10⁻⁴.
            let got = path[h.len()];
            assert!((got - want).abs() < 1e-4, "{h:?}: {got} vs {want}");
        }
    }

    #[test]
    fn the_exact_posterior_is_calibrated_on_draws() {
        // Mean B* equals the share of successes (E[Y] = E[B*]) in each half of the
        // forecasts, within 3.5 standard errors, at tick 300 on 3,000 sessions.
        let world = CorrelatedWorld {
            max_ticks: 301,
            ..CorrelatedWorld::default()
        };
        let sessions = world.sessions(3000, 11);
        let mut rows: Vec<(f64, bool)> = sessions
            .iter()
            .map(|s| {
                let b = exact_at(&world, &s.trajectory, &[300]);
                (b[0], s.trajectory.label == Some(true))
            })
            .collect();
        rows.sort_by(|a, b| a.0.total_cmp(&b.0));
        for half in rows.chunks(rows.len() / 2) {
            let n = half.len() as f64;
            let p = half.iter().map(|r| r.0).sum::<f64>() / n;
            let y = half.iter().filter(|r| r.1).count() as f64 / n;
            let se = (half.iter().map(|r| r.0 * (1.0 - r.0)).sum::<f64>()).sqrt() / n;
            assert!(
                (p - y).abs() < 3.5 * se,
                "mean B* {p} vs share {y} (se {se})"
            );
        }
        // And it says something: the halves differ.
        let lo = rows[..1500].iter().map(|r| r.0).sum::<f64>() / 1500.0;
        let hi = rows[1500..].iter().map(|r| r.0).sum::<f64>() / 1500.0;
        assert!(hi - lo > 0.1, "{lo} vs {hi}");
    }
}
