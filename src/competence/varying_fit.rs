//! Penalised varying-coefficient logistic regression: the fitter under the feature model
//! ([`super::feature_fit`]) and its link ([`super::feature_link`]).
//!
//! The design is the tensor product of the inputs with a hat basis in ln(1+t), so each row
//! touches only the two knots around its t. Inputs are standardised before fitting (so one
//! ridge penalty means the same for every input) and the weights are converted back. Two
//! penalties keep the fit sane on tens of sessions: a ridge on every non-bias weight, and a
//! penalty on the difference between neighbouring knots' weights (coefficients change
//! smoothly with t; knots no row reaches copy their neighbours). Newton's method with step
//! halving on the convex objective.

use super::CompetenceError;
use super::calibrator::sigmoid;
use super::features::{N_FEATURES, knot_position};

/// One row of a varying-coefficient logistic fit: `J` inputs at tick `t`, the session's
/// label, its weight, and a fixed offset added to the log-odds (0 for the feature model;
/// the model's own η for its link, [`super::feature_link`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct VcRow<const J: usize> {
    pub x: [f64; J],
    pub t: f64,
    pub label: bool,
    pub weight: f64,
    pub offset: f64,
}

/// One held-out row of the feature model: its inputs at tick `t`.
pub type FeatureRow = VcRow<N_FEATURES>;

/// The two penalties, in units of one session's total weight. The ridge a fit uses is
/// chosen among [`super::feature_fit::RIDGES`] by held-out log loss
/// ([`super::feature_fit::choose_ridge`]); the default here is
/// what stands when that cannot be measured (fewer than two usable folds). The smoothness
/// was chosen on the correlated world (`sim::correlated`): four times smaller or ten times
/// larger was no better against the exact posterior (docs/results/2026-12-01-feature-model.md).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Penalty {
    pub ridge: f64,
    pub smooth: f64,
}

impl Default for Penalty {
    fn default() -> Self {
        Penalty {
            ridge: 10.0,
            smooth: 20.0,
        }
    }
}

fn softplus(z: f64) -> f64 {
    if z > 0.0 {
        z + (-z).exp().ln_1p()
    } else {
        z.exp().ln_1p()
    }
}

/// Cholesky solve of A·x = b for a symmetric positive-definite A (row-major, n×n).
fn solve_spd(a: &[f64], b: &[f64], n: usize) -> Option<Vec<f64>> {
    let mut l = vec![0.0; n * n];
    for i in 0..n {
        for j in 0..=i {
            let mut s = a[i * n + j];
            for k in 0..j {
                s -= l[i * n + k] * l[j * n + k];
            }
            if i == j {
                if s <= 0.0 {
                    return None;
                }
                l[i * n + i] = s.sqrt();
            } else {
                l[i * n + j] = s / l[j * n + j];
            }
        }
    }
    let mut y = vec![0.0; n];
    for i in 0..n {
        let s: f64 = (0..i).map(|k| l[i * n + k] * y[k]).sum();
        y[i] = (b[i] - s) / l[i * n + i];
    }
    let mut x = vec![0.0; n];
    for i in (0..n).rev() {
        let s: f64 = (i + 1..n).map(|k| l[k * n + i] * x[k]).sum();
        x[i] = (y[i] - s) / l[i * n + i];
    }
    Some(x)
}

/// Penalised varying-coefficient logistic regression: one weight row per knot, in the
/// inputs' own units. Input 0 is the constant 1; with `free_bias` its weight is all but
/// unpenalised (the feature model's base rate), otherwise it is ridged like the rest (a
/// link's shift, pulled toward none).
pub(crate) fn fit_varying<const J: usize>(
    rows: &[VcRow<J>],
    knots: &[f64],
    penalty: Penalty,
    free_bias: bool,
) -> Result<Vec<Vec<f64>>, CompetenceError> {
    let rows: Vec<&VcRow<J>> = rows
        .iter()
        .filter(|r| {
            r.weight > 0.0
                && r.weight.is_finite()
                && r.offset.is_finite()
                && r.x.iter().all(|v| v.is_finite())
        })
        .collect();
    if !(rows.iter().any(|r| r.label) && rows.iter().any(|r| !r.label)) {
        return Err(CompetenceError::NotEnoughData(
            "the feature model needs rows of both labels".into(),
        ));
    }
    let (kn, j) = (knots.len(), J);
    let p = kn * j;
    // Standardise the inputs (the bias stays 1).
    let total: f64 = rows.iter().map(|r| r.weight).sum();
    let mut mu = [0.0; J];
    let mut sd = [1.0; J];
    for f in 1..j {
        let m = rows.iter().map(|r| r.weight * r.x[f]).sum::<f64>() / total;
        let v = rows
            .iter()
            .map(|r| r.weight * (r.x[f] - m).powi(2))
            .sum::<f64>()
            / total;
        mu[f] = m;
        sd[f] = if v > 1e-18 { v.sqrt() } else { 0.0 };
    }
    let z = |r: &VcRow<J>, f: usize| -> f64 {
        if f == 0 {
            1.0
        } else if sd[f] == 0.0 {
            0.0
        } else {
            (r.x[f] - mu[f]) / sd[f]
        }
    };
    let place: Vec<(usize, f64)> = rows.iter().map(|r| knot_position(knots, r.t)).collect();
    let eta = |theta: &[f64], i: usize| -> f64 {
        let (k, lam) = place[i];
        rows[i].offset
            + (0..j)
                .map(|f| {
                    z(rows[i], f) * ((1.0 - lam) * theta[k * j + f] + lam * theta[(k + 1) * j + f])
                })
                .sum::<f64>()
    };
    let bias_ridge = if free_bias { 1e-6 } else { penalty.ridge };
    let penalty_of = |theta: &[f64]| -> f64 {
        let mut s = 0.0;
        for k in 0..kn {
            for f in 0..j {
                let w = theta[k * j + f];
                s += if f == 0 { bias_ridge } else { penalty.ridge } * w * w;
                if k + 1 < kn {
                    s += penalty.smooth * (theta[(k + 1) * j + f] - w).powi(2);
                }
            }
        }
        0.5 * s
    };
    let objective = |theta: &[f64]| -> f64 {
        let data: f64 = (0..rows.len())
            .map(|i| {
                let e = eta(theta, i);
                rows[i].weight * (softplus(e) - if rows[i].label { e } else { 0.0 })
            })
            .sum();
        data + penalty_of(theta)
    };
    let pos: f64 = rows.iter().filter(|r| r.label).map(|r| r.weight).sum();
    let mut theta = vec![0.0; p];
    if free_bias {
        let base = (pos / (total - pos)).ln();
        for k in 0..kn {
            theta[k * j] = base;
        }
    }
    let mut current = objective(&theta);
    for _ in 0..50 {
        let mut g = vec![0.0; p];
        let mut h = vec![0.0; p * p];
        let mut idx = Vec::with_capacity(2 * j);
        for i in 0..rows.len() {
            let (k, lam) = place[i];
            let e = eta(&theta, i);
            let pr = sigmoid(e);
            let w = rows[i].weight;
            let d = w * (pr - if rows[i].label { 1.0 } else { 0.0 });
            let c = w * pr * (1.0 - pr);
            idx.clear();
            for f in 0..j {
                let v = z(rows[i], f);
                if v != 0.0 {
                    idx.push((k * j + f, (1.0 - lam) * v));
                    idx.push(((k + 1) * j + f, lam * v));
                }
            }
            for &(a, va) in &idx {
                g[a] += d * va;
                for &(b, vb) in &idx {
                    h[a * p + b] += c * va * vb;
                }
            }
        }
        for k in 0..kn {
            for f in 0..j {
                let a = k * j + f;
                let r = if f == 0 { bias_ridge } else { penalty.ridge };
                g[a] += r * theta[a];
                h[a * p + a] += r;
                if k + 1 < kn {
                    let b = (k + 1) * j + f;
                    let diff = theta[b] - theta[a];
                    g[a] -= penalty.smooth * diff;
                    g[b] += penalty.smooth * diff;
                    h[a * p + a] += penalty.smooth;
                    h[b * p + b] += penalty.smooth;
                    h[a * p + b] -= penalty.smooth;
                    h[b * p + a] -= penalty.smooth;
                }
            }
        }
        if g.iter().map(|x| x * x).sum::<f64>().sqrt() < 1e-9 * total.max(1.0) {
            break;
        }
        let Some(step) = solve_spd(&h, &g, p) else {
            break;
        };
        let mut scale = 1.0;
        let mut moved = false;
        while scale > 1e-10 {
            let next: Vec<f64> = theta
                .iter()
                .zip(&step)
                .map(|(t, s)| t - scale * s)
                .collect();
            let o = objective(&next);
            if o <= current {
                moved = current - o > 1e-12 * current.abs().max(1.0);
                theta = next;
                current = o;
                break;
            }
            scale /= 2.0;
        }
        if !moved {
            break;
        }
    }
    // Back to the inputs' own scale: w = θ/σ, bias absorbs −θ·μ/σ.
    let weights = (0..kn)
        .map(|k| {
            let row = &theta[k * j..(k + 1) * j];
            let mut w = vec![0.0; j];
            w[0] = row[0];
            for f in 1..j {
                if sd[f] > 0.0 {
                    w[f] = row[f] / sd[f];
                    w[0] -= row[f] * mu[f] / sd[f];
                }
            }
            w
        })
        .collect();
    Ok(weights)
}
