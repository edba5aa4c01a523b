//! How sure a score is: bootstrap intervals, the ECE a perfectly calibrated judge would get
//! on the same forecasts (the noise floor), and the calibration slope.
//!
//! An ECE of 0.04 on 425 forecasts says nothing by itself: a judge that is calibrated by
//! construction scores about that much from sampling noise alone. So every ECE is printed
//! beside the distribution of ECE under the calibrated null (labels drawn as Bernoulli(p)
//! from the forecasts themselves), and every score with a percentile-bootstrap interval.
//! Random draws come from a seeded generator, so the numbers are reproducible.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};

use super::calibration::{Binning, ece};
use super::{Forecast, usable};

/// A point estimate with a 95 % interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Interval {
    pub estimate: f64,
    pub lower: f64,
    pub upper: f64,
}

impl Interval {
    pub fn contains(&self, x: f64) -> bool {
        self.lower <= x && x <= self.upper
    }
}

fn quantile(sorted: &[f64], q: f64) -> f64 {
    let pos = q * (sorted.len() - 1) as f64;
    let (i, frac) = (pos.floor() as usize, pos.fract());
    let next = sorted.get(i + 1).copied().unwrap_or(sorted[i]);
    sorted[i] * (1.0 - frac) + next * frac
}

/// The 2.5 % and 97.5 % quantiles of `values` (NaNs dropped), with `estimate` as given.
pub fn percentile_interval(estimate: f64, mut values: Vec<f64>) -> Option<Interval> {
    values.retain(|v| v.is_finite());
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    Some(Interval {
        estimate,
        lower: quantile(&values, 0.025),
        upper: quantile(&values, 0.975),
    })
}

/// Percentile bootstrap over `groups` (e.g. sessions, or tasks: resample whole groups, so
/// dependent forecasts of one session are not counted as independent). `statistic` gets the
/// concatenated forecasts of a resample. `None` when the statistic is undefined on the data.
pub fn bootstrap(
    groups: &[Vec<Forecast>],
    statistic: impl Fn(&[Forecast]) -> Option<f64>,
    reps: usize,
    seed: u64,
) -> Option<Interval> {
    let all: Vec<Forecast> = groups.iter().flatten().copied().collect();
    let mut sample = Vec::with_capacity(all.len());
    let concatenated = |picks: &[usize]| {
        if picks.len() == groups.len() && picks.iter().enumerate().all(|(i, &p)| i == p) {
            return statistic(&all);
        }
        sample.clear();
        for &p in picks {
            sample.extend_from_slice(&groups[p]);
        }
        statistic(&sample)
    };
    bootstrap_picks(groups.len(), concatenated, reps, seed)
}

/// Percentile bootstrap over `n` whole units (sessions, tasks): `statistic` gets the
/// indices of one resample (drawn with replacement); the estimate is its value on
/// `0..n`. One draw order for every caller, so [`bootstrap`] and a per-task score drawn
/// with the same seed resample the same units.
pub fn bootstrap_picks(
    n: usize,
    mut statistic: impl FnMut(&[usize]) -> Option<f64>,
    reps: usize,
    seed: u64,
) -> Option<Interval> {
    let all: Vec<usize> = (0..n).collect();
    let estimate = statistic(&all)?;
    if n == 0 {
        return None;
    }
    let mut rng = StdRng::seed_from_u64(seed);
    let mut values = Vec::with_capacity(reps);
    let mut picks = Vec::with_capacity(n);
    for _ in 0..reps {
        picks.clear();
        picks.extend((0..n).map(|_| rng.random_range(0..n)));
        if let Some(v) = statistic(&picks) {
            values.push(v);
        }
    }
    percentile_interval(estimate, values)
}

/// The ECE of a perfectly calibrated judge making exactly these forecasts: labels redrawn
/// as Bernoulli(p) `reps` times. `estimate` is the mean; the interval is where 95 % of a
/// calibrated judge's ECE falls. An observed ECE inside it is indistinguishable from noise.
pub fn ece_noise_floor(
    data: &[Forecast],
    binning: Binning,
    reps: usize,
    seed: u64,
) -> Option<Interval> {
    usable(data)?;
    let mut rng = StdRng::seed_from_u64(seed);
    let mut values = Vec::with_capacity(reps);
    let mut null: Vec<Forecast> = data.to_vec();
    for _ in 0..reps {
        for f in &mut null {
            f.success = rng.random::<f64>() < f.p.clamp(0.0, 1.0);
        }
        if let Some(e) = ece(&null, binning) {
            values.push(e);
        }
    }
    let mean = values.iter().sum::<f64>() / values.len().max(1) as f64;
    percentile_interval(mean, values)
}

/// Calibration slope and intercept: the logistic regression y ~ σ(a + b·logit p) by
/// maximum likelihood (Cox 1958). b = 1 and a = 0 for a calibrated judge; b > 1 means
/// under-confident (forecasts too close to the base rate), b < 1 over-confident. Forecasts
/// are clamped to [1e-9, 1 − 1e-9]. `None` without both labels or without spread in p.
pub fn calibration_slope(data: &[Forecast]) -> Option<(f64, f64)> {
    usable(data)?;
    let p: Vec<f64> = data.iter().map(|f| f.p).collect();
    let y: Vec<f64> = data.iter().map(|f| f.y()).collect();
    calibration_slope_against(&p, &y)
}

/// [`calibration_slope`] against target probabilities instead of labels (the same
/// likelihood with y ∈ [0, 1]): where the true probability of each forecast is known, as
/// in a simulator, the slope measured with no Bernoulli noise. `None` for unequal or
/// non-finite input, targets all 0 or all 1, or no spread in p.
pub fn calibration_slope_against(p: &[f64], target: &[f64]) -> Option<(f64, f64)> {
    if p.is_empty() || p.len() != target.len() || p.iter().chain(target).any(|v| !v.is_finite()) {
        return None;
    }
    let rows: Vec<(f64, f64)> = p
        .iter()
        .zip(target)
        .map(|(&p, &y)| {
            let p = p.clamp(1e-9, 1.0 - 1e-9);
            ((p / (1.0 - p)).ln(), y.clamp(0.0, 1.0))
        })
        .collect();
    let pos: f64 = rows.iter().map(|r| r.1).sum();
    let n = rows.len() as f64;
    let mean_x = rows.iter().map(|r| r.0).sum::<f64>() / n;
    let var_x = rows.iter().map(|r| (r.0 - mean_x).powi(2)).sum::<f64>() / n;
    if pos == 0.0 || pos == n || var_x < 1e-18 {
        return None;
    }
    let sig = |z: f64| 1.0 / (1.0 + (-z).exp());
    let (mut a, mut b) = ((pos / (n - pos)).ln(), 0.0);
    for _ in 0..100 {
        let (mut ga, mut gb, mut haa, mut hab, mut hbb) = (0.0, 0.0, 0.0, 0.0, 0.0);
        for &(x, y) in &rows {
            let p = sig(a + b * x);
            let w = p * (1.0 - p);
            ga += p - y;
            gb += (p - y) * x;
            haa += w;
            hab += w * x;
            hbb += w * x * x;
        }
        let det = haa * hbb - hab * hab;
        if det.abs() < 1e-300 {
            return None;
        }
        let da = (hbb * ga - hab * gb) / det;
        let db = (haa * gb - hab * ga) / det;
        a -= da;
        b -= db;
        if da.abs() + db.abs() < 1e-10 {
            break;
        }
    }
    (a.is_finite() && b.is_finite()).then_some((a, b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_slope_against_known_probabilities_is_exact() {
        // Targets σ(0.3 + 0.5·logit p) exactly: the soft-label fit recovers (0.3, 0.5).
        let p: Vec<f64> = (1..200).map(|i| f64::from(i) / 200.0).collect();
        let target: Vec<f64> = p
            .iter()
            .map(|&q| 1.0 / (1.0 + (-(0.3 + 0.5 * (q / (1.0 - q)).ln())).exp()))
            .collect();
        let (a, b) = calibration_slope_against(&p, &target).expect("slope");
        assert!((a - 0.3).abs() < 1e-8 && (b - 0.5).abs() < 1e-8, "{a} {b}");
        // Against itself: (0, 1).
        let (a, b) = calibration_slope_against(&p, &p).expect("slope");
        assert!(a.abs() < 1e-8 && (b - 1.0).abs() < 1e-8, "{a} {b}");
        assert_eq!(calibration_slope_against(&p, &p[1..]), None);
        assert_eq!(calibration_slope_against(&[0.5, 0.5], &[0.2, 0.9]), None);
    }

    fn calibrated(n: usize, seed: u64) -> Vec<Forecast> {
        let mut rng = StdRng::seed_from_u64(seed);
        (0..n)
            .map(|_| {
                let p: f64 = rng.random();
                Forecast::new(p, rng.random::<f64>() < p)
            })
            .collect()
    }

    #[test]
    fn a_calibrated_judge_has_slope_one_and_an_ece_inside_its_floor() {
        let data = calibrated(20000, 1);
        let (a, b) = calibration_slope(&data).expect("slope");
        assert!((b - 1.0).abs() < 0.06 && a.abs() < 0.06, "a {a} b {b}");
        let small = calibrated(425, 2);
        let floor = ece_noise_floor(&small, Binning::MASS_10, 400, 3).expect("floor");
        // The audit's figure: about 0.04 at n = 425 for spread beliefs.
        assert!(floor.estimate > 0.025 && floor.estimate < 0.06, "{floor:?}");
        let e = ece(&small, Binning::MASS_10).expect("ece");
        assert!(floor.contains(e), "{e} outside {floor:?}");
    }

    #[test]
    fn over_confidence_shows_as_a_slope_below_one() {
        // Forecasts pushed away from ½: logit doubled.
        let data: Vec<Forecast> = calibrated(20000, 4)
            .into_iter()
            .map(|f| {
                let l = 2.0 * (f.p / (1.0 - f.p)).ln();
                Forecast::new(1.0 / (1.0 + (-l).exp()), f.success)
            })
            .collect();
        let (_, b) = calibration_slope(&data).expect("slope");
        assert!((b - 0.5).abs() < 0.05, "{b}");
        let floor = ece_noise_floor(&data, Binning::MASS_10, 200, 5).expect("floor");
        let e = ece(&data, Binning::MASS_10).expect("ece");
        assert!(!floor.contains(e), "{e} inside {floor:?}");
    }

    #[test]
    fn the_bootstrap_interval_covers_the_estimate_and_shrinks_with_n() {
        let groups =
            |n| -> Vec<Vec<Forecast>> { calibrated(n, 6).into_iter().map(|f| vec![f]).collect() };
        let mean_y = |d: &[Forecast]| Some(d.iter().map(|f| f.y()).sum::<f64>() / d.len() as f64);
        let small = bootstrap(&groups(200), mean_y, 500, 7).expect("ci");
        let large = bootstrap(&groups(5000), mean_y, 500, 7).expect("ci");
        assert!(small.contains(small.estimate) && large.contains(large.estimate));
        let width = |i: Interval| i.upper - i.lower;
        assert!(width(large) < width(small) / 3.0, "{small:?} {large:?}");
        assert!(bootstrap(&[], mean_y, 10, 1).is_none());
    }
}
