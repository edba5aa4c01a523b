//! Rates of decay, fitted with every point.
//!
//! The belief error is positive, so its rate is the least-squares slope of ln y on ln n.
//! The regret is a difference of two noisy objectives and can be zero or negative; a
//! log–log fit would have to drop those points, which biases the slope toward whatever the
//! positive ones say. So regret (and, for comparison, the belief error) is also fitted on
//! the raw scale: y ≈ a·n^b by least squares over all points, b searched on a grid and
//! refined, a in closed form for each b.

use serde::Serialize;

use super::across_seeds::Spread;

/// A judge fitted on n labelled trajectories, against the truth.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
pub struct SampleRow {
    pub n: usize,
    /// Mean |B̂_t − B_t| over queries and ticks 0..=T.
    pub belief_error: f64,
    /// Mean objective of the DP policy on the learned belief minus that of the DP policy on
    /// the true belief, same queries.
    pub regret: f64,
}

/// Slope of ln y on ln x; `None` when fewer than two points, or when any point has x ≤ 0
/// or y ≤ 0 (no point is ever dropped silently: use [`power_fit`] for such data).
pub fn log_log_slope(points: &[(f64, f64)]) -> Option<f64> {
    if points.len() < 2 || points.iter().any(|(x, y)| *x <= 0.0 || *y <= 0.0) {
        return None;
    }
    let logs: Vec<(f64, f64)> = points.iter().map(|(x, y)| (x.ln(), y.ln())).collect();
    let n = logs.len() as f64;
    let mx = logs.iter().map(|p| p.0).sum::<f64>() / n;
    let my = logs.iter().map(|p| p.1).sum::<f64>() / n;
    let sxy: f64 = logs.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    let sxx: f64 = logs.iter().map(|p| (p.0 - mx).powi(2)).sum();
    (sxx > 0.0).then(|| sxy / sxx)
}

/// y ≈ scale·x^exponent, least squares on the raw scale.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct PowerFit {
    pub scale: f64,
    pub exponent: f64,
}

/// Exponents searched by [`power_fit`].
const EXPONENT_RANGE: (f64, f64) = (-2.0, 1.0);

/// The raw-scale power law through all `points` (x > 0 required; y of any sign). `None`
/// with fewer than two points or when every y is 0.
pub fn power_fit(points: &[(f64, f64)]) -> Option<PowerFit> {
    if points.len() < 2 || points.iter().any(|(x, _)| *x <= 0.0) {
        return None;
    }
    if points.iter().all(|(_, y)| *y == 0.0) {
        return None;
    }
    // For fixed b the best a is Σ y·x^b / Σ x^{2b}, and the residual is
    // Σ y² − (Σ y·x^b)² / Σ x^{2b}; minimise that over b.
    let fit = |b: f64| {
        let (mut sy, mut sx) = (0.0, 0.0);
        for (x, y) in points {
            let p = x.powf(b);
            sy += y * p;
            sx += p * p;
        }
        (sy / sx, -(sy * sy) / sx)
    };
    let (lo, hi) = EXPONENT_RANGE;
    let steps = 300;
    let mut best = lo;
    for i in 0..=steps {
        let b = lo + (hi - lo) * f64::from(i) / f64::from(steps);
        if fit(b).1 < fit(best).1 {
            best = b;
        }
    }
    // Golden-section refinement inside the neighbouring grid cells.
    let h = (hi - lo) / f64::from(steps);
    let (mut a, mut c) = ((best - h).max(lo), (best + h).min(hi));
    let g = (5f64.sqrt() - 1.0) / 2.0;
    for _ in 0..60 {
        let (x1, x2) = (c - g * (c - a), a + g * (c - a));
        if fit(x1).1 <= fit(x2).1 {
            c = x2;
        } else {
            a = x1;
        }
    }
    let exponent = (a + c) / 2.0;
    Some(PowerFit {
        scale: fit(exponent).0,
        exponent,
    })
}

/// A rate fitted on one seed's (n, y) points.
type RateFit = dyn Fn(&[(f64, f64)]) -> Option<f64>;

/// One training-set size over seeds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct RateRow {
    pub n: usize,
    pub belief_error: Spread,
    pub regret: Spread,
}

/// The sample-complexity experiment over seeds: per-n means, and the rates fitted on each
/// seed's curve (with every point) summarised across seeds.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Rate {
    pub by_n: Vec<RateRow>,
    /// Per-seed slope of ln E|B̂ − B| on ln n.
    pub belief_error_log_log_slope: Spread,
    /// Per-seed exponent b of E|B̂ − B| ≈ a·n^b fitted on the raw scale.
    pub belief_error_power_exponent: Spread,
    /// Per-seed exponent b of regret ≈ a·n^b fitted on the raw scale (negative regrets in).
    pub regret_power_exponent: Spread,
    /// Per seed and n, how many regrets were ≤ 0 (all of them enter the fits).
    pub non_positive_regrets: usize,
}

impl Rate {
    /// Summarises one `Vec<SampleRow>` per seed (each with the same `sizes` rows).
    pub fn of(per_seed: &[Vec<SampleRow>], sizes: usize) -> Rate {
        let column = |k: usize, f: fn(&SampleRow) -> f64| {
            Spread::of(
                &per_seed
                    .iter()
                    .filter_map(|rows| rows.get(k).map(f))
                    .collect::<Vec<_>>(),
            )
        };
        let by_n = (0..sizes)
            .filter_map(|k| {
                let n = per_seed.first()?.get(k)?.n;
                Some(RateRow {
                    n,
                    belief_error: column(k, |r| r.belief_error),
                    regret: column(k, |r| r.regret),
                })
            })
            .collect();
        let fitted = |f: &RateFit, y: fn(&SampleRow) -> f64| {
            Spread::of(
                &per_seed
                    .iter()
                    .map(|rows| {
                        let pts: Vec<(f64, f64)> =
                            rows.iter().map(|r| (r.n as f64, y(r))).collect();
                        f(&pts).unwrap_or(f64::NAN)
                    })
                    .collect::<Vec<_>>(),
            )
        };
        let exponent = |p: &[(f64, f64)]| power_fit(p).map(|f| f.exponent);
        Rate {
            by_n,
            belief_error_log_log_slope: fitted(&log_log_slope, |r| r.belief_error),
            belief_error_power_exponent: fitted(&exponent, |r| r.belief_error),
            regret_power_exponent: fitted(&exponent, |r| r.regret),
            non_positive_regrets: per_seed
                .iter()
                .flatten()
                .filter(|r| r.regret <= 0.0)
                .count(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slopes_of_power_laws_and_no_dropped_points() {
        let pts: Vec<(f64, f64)> = [50.0, 500.0, 5000.0]
            .iter()
            .map(|n: &f64| (*n, 3.0 * n.powf(-0.5)))
            .collect();
        assert!((log_log_slope(&pts).expect("slope") + 0.5).abs() < 1e-12);
        assert_eq!(log_log_slope(&[(1.0, 1.0)]), None);
        // One non-positive point makes the log–log fit undefined rather than dropped.
        assert_eq!(log_log_slope(&[(1.0, 1.0), (2.0, 0.5), (4.0, -0.1)]), None);
        let fit = power_fit(&pts).expect("fit");
        assert!((fit.exponent + 0.5).abs() < 1e-6, "{fit:?}");
        assert!((fit.scale - 3.0).abs() < 1e-4, "{fit:?}");
    }

    #[test]
    fn the_raw_fit_keeps_negative_points() {
        // 0.1·n^{-0.5} with the largest n pushed below zero: the fit uses it, so the
        // exponent comes out steeper than −0.5, and dropping it would not.
        let mut pts: Vec<(f64, f64)> = [50.0, 200.0, 1000.0, 5000.0]
            .iter()
            .map(|n: &f64| (*n, 0.1 * n.powf(-0.5)))
            .collect();
        pts[3].1 = -0.002;
        let with = power_fit(&pts).expect("fit").exponent;
        let without = power_fit(&pts[..3]).expect("fit").exponent;
        assert!(with < without - 0.01, "{with} vs {without}");
        assert_eq!(power_fit(&[(1.0, 0.0), (2.0, 0.0)]), None);
    }
}
