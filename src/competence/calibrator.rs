//! Calibration maps from a raw score (the tempered log-odds ℓ_t) to a probability.
//!
//! Summed evidence from dependent tokens is over-confident even after tempering, and regret
//! is bounded by calibration error (see DESIGN.md), so the last word on B_t belongs to a
//! map fitted on held-out (score, label) rows. Three classic choices, plus identity:
//! - Platt scaling (Platt 1999, with the prior-corrected targets and a Newton solver as in
//!   Lin, Lin & Weng 2007): two parameters, smooth, hard to over-fit;
//! - isotonic regression by pool-adjacent-violators (Zadrozny & Elkan 2002): monotone,
//!   shape-free, needs more data;
//! - equal-mass histogram binning (Zadrozny & Elkan 2001): the baseline the others beat.

use serde::{Deserialize, Serialize};

use super::CompetenceError;
use super::likelihood::equal_mass_edges;

/// One labelled score. `weight` lets each session count once however many rows it gives.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ScoreRow {
    pub score: f64,
    pub label: bool,
    pub weight: f64,
}

impl ScoreRow {
    pub fn new(score: f64, label: bool) -> Self {
        ScoreRow {
            score,
            label,
            weight: 1.0,
        }
    }
}

/// The logistic function, written to stay finite for any input.
pub fn sigmoid(x: f64) -> f64 {
    if x >= 0.0 {
        1.0 / (1.0 + (-x).exp())
    } else {
        let e = x.exp();
        e / (1.0 + e)
    }
}

/// log(p / (1 − p)); ±∞ at 0 and 1.
pub fn logit(p: f64) -> f64 {
    (p / (1.0 - p)).ln()
}

/// Rows with a finite score and a positive finite weight; the rest cannot inform a fit.
fn usable(rows: &[ScoreRow]) -> impl Iterator<Item = &ScoreRow> {
    rows.iter()
        .filter(|r| r.score.is_finite() && r.weight.is_finite() && r.weight > 0.0)
}

fn need_both_labels(rows: &[ScoreRow]) -> Result<(f64, f64), CompetenceError> {
    let (mut pos, mut neg) = (0.0, 0.0);
    for r in usable(rows) {
        if r.label {
            pos += r.weight;
        } else {
            neg += r.weight;
        }
    }
    if pos > 0.0 && neg > 0.0 {
        Ok((pos, neg))
    } else {
        Err(CompetenceError::NotEnoughData(
            "a calibrator needs rows of both labels".into(),
        ))
    }
}

/// Platt scaling: P(Y=1 | s) = σ(a·s + b).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Platt {
    pub a: f64,
    pub b: f64,
}

impl Platt {
    /// Maximum likelihood on Platt's smoothed targets t₊ = (N₊+1)/(N₊+2) and
    /// t₋ = 1/(N₋+2) (N = summed weights), which keep the fit finite on separable data.
    /// Newton's method with step halving; converges in a handful of iterations.
    pub fn fit(rows: &[ScoreRow]) -> Result<Self, CompetenceError> {
        let (pos, neg) = need_both_labels(rows)?;
        let t_pos = (pos + 1.0) / (pos + 2.0);
        let t_neg = 1.0 / (neg + 2.0);
        let data: Vec<(f64, f64, f64)> = usable(rows)
            .map(|r| (r.score, if r.label { t_pos } else { t_neg }, r.weight))
            .collect();
        let loss = |a: f64, b: f64| -> f64 {
            data.iter()
                .map(|&(s, t, w)| {
                    let z = a * s + b;
                    // −[t log σ(z) + (1−t) log(1−σ(z))] = log(1+e^z) − t z, stably.
                    let softplus = if z > 0.0 {
                        z + (-z).exp().ln_1p()
                    } else {
                        z.exp().ln_1p()
                    };
                    w * (softplus - t * z)
                })
                .sum()
        };
        let (mut a, mut b) = (0.0, ((pos + 1.0) / (neg + 1.0)).ln());
        let mut current = loss(a, b);
        for _ in 0..100 {
            let (mut ga, mut gb, mut haa, mut hab, mut hbb) = (0.0, 0.0, 0.0, 0.0, 0.0);
            for &(s, t, w) in &data {
                let p = sigmoid(a * s + b);
                let d = w * (p - t);
                let h = w * p * (1.0 - p);
                ga += d * s;
                gb += d;
                haa += h * s * s;
                hab += h * s;
                hbb += h;
            }
            if ga.abs() < 1e-12 && gb.abs() < 1e-12 {
                break;
            }
            // A tiny ridge keeps the 2×2 solve defined when all scores coincide.
            let (haa, hbb) = (haa + 1e-12, hbb + 1e-12);
            let det = haa * hbb - hab * hab;
            let da = (hbb * ga - hab * gb) / det;
            let db = (haa * gb - hab * ga) / det;
            // Full Newton steps near the optimum; halve only while the loss clearly rises.
            let mut step = 1.0;
            loop {
                let (na, nb) = (a - step * da, b - step * db);
                let l = loss(na, nb);
                if l <= current + 1e-12 * current.abs().max(1.0) || step < 1e-10 {
                    a = na;
                    b = nb;
                    current = l;
                    break;
                }
                step /= 2.0;
            }
            if (step * da).abs().max((step * db).abs()) < 1e-13 {
                break;
            }
        }
        Ok(Platt { a, b })
    }

    pub fn apply(&self, score: f64) -> f64 {
        sigmoid(self.a * score + self.b)
    }
}

/// Isotonic regression: a non-decreasing step function of the score, linear between the
/// pooled blocks and flat beyond the ends.
///
/// Knots `x` are strictly increasing, `y` non-decreasing, both the same length.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Isotonic {
    pub x: Vec<f64>,
    pub y: Vec<f64>,
}

impl Isotonic {
    /// Pool-adjacent-violators on rows sorted by score (equal scores pooled first), one
    /// pass with a stack of blocks: O(n log n) for the sort, O(n) for the pooling.
    pub fn fit(rows: &[ScoreRow]) -> Result<Self, CompetenceError> {
        need_both_labels(rows)?;
        let mut sorted: Vec<&ScoreRow> = usable(rows).collect();
        sorted.sort_by(|p, q| p.score.total_cmp(&q.score));
        // Each block: (lowest score, highest score, weighted label sum, weight).
        let mut blocks: Vec<(f64, f64, f64, f64)> = Vec::new();
        for r in sorted {
            let y = if r.label { r.weight } else { 0.0 };
            match blocks.last_mut() {
                Some(last) if last.1 == r.score => {
                    last.2 += y;
                    last.3 += r.weight;
                }
                _ => blocks.push((r.score, r.score, y, r.weight)),
            }
            while blocks.len() >= 2 {
                let n = blocks.len();
                let (prev, last) = (blocks[n - 2], blocks[n - 1]);
                if prev.2 / prev.3 >= last.2 / last.3 {
                    blocks.pop();
                    blocks[n - 2] = (prev.0, last.1, prev.2 + last.2, prev.3 + last.3);
                } else {
                    break;
                }
            }
        }
        let (mut x, mut y) = (Vec::new(), Vec::new());
        for (lo, hi, sum, w) in blocks {
            let v = sum / w;
            x.push(lo);
            y.push(v);
            if hi > lo {
                x.push(hi);
                y.push(v);
            }
        }
        Ok(Isotonic { x, y })
    }

    pub fn apply(&self, score: f64) -> f64 {
        interpolate(&self.x, &self.y, score)
    }

    fn validate(&self) -> Result<(), CompetenceError> {
        let ok = !self.x.is_empty()
            && self.x.len() == self.y.len()
            && self.x.iter().all(|v| v.is_finite())
            && self.x.windows(2).all(|w| w[0] < w[1])
            && self.y.iter().all(|v| (0.0..=1.0).contains(v))
            && self.y.windows(2).all(|w| w[0] <= w[1]);
        if ok {
            Ok(())
        } else {
            Err(CompetenceError::Invalid(
                "isotonic map needs increasing x and non-decreasing y in [0, 1]".into(),
            ))
        }
    }
}

/// Piecewise-linear interpolation through knots, flat outside; NaN maps to the first knot.
fn interpolate(x: &[f64], y: &[f64], s: f64) -> f64 {
    let i = x.partition_point(|v| *v <= s);
    match i {
        0 => y.first().copied().unwrap_or(0.5),
        i if i >= x.len() => y.last().copied().unwrap_or(0.5),
        i => {
            let (x0, x1, y0, y1) = (x[i - 1], x[i], y[i - 1], y[i]);
            y0 + (y1 - y0) * (s - x0) / (x1 - x0)
        }
    }
}

/// Equal-mass histogram binning: each bin's value is the (weighted) success rate in it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EqualMassBins {
    /// Interior cut points, strictly increasing; `values.len() == edges.len() + 1`.
    pub edges: Vec<f64>,
    pub values: Vec<f64>,
}

impl EqualMassBins {
    /// At most `bins` bins of equal row count (ties kept together); a bin's value is its
    /// weighted mean label.
    pub fn fit(rows: &[ScoreRow], bins: usize) -> Result<Self, CompetenceError> {
        need_both_labels(rows)?;
        let mut scores: Vec<f64> = usable(rows).map(|r| r.score).collect();
        scores.sort_by(f64::total_cmp);
        let edges = equal_mass_edges(&scores, bins.max(1));
        let mut sum = vec![0.0; edges.len() + 1];
        let mut weight = vec![0.0; edges.len() + 1];
        for r in usable(rows) {
            let i = edges.partition_point(|e| *e <= r.score);
            weight[i] += r.weight;
            if r.label {
                sum[i] += r.weight;
            }
        }
        let values = sum.iter().zip(&weight).map(|(s, w)| s / w).collect();
        Ok(EqualMassBins { edges, values })
    }

    pub fn apply(&self, score: f64) -> f64 {
        let i = self.edges.partition_point(|e| *e <= score);
        self.values.get(i).copied().unwrap_or(0.5)
    }

    fn validate(&self) -> Result<(), CompetenceError> {
        let ok = self.values.len() == self.edges.len() + 1
            && self.edges.iter().all(|v| v.is_finite())
            && self.edges.windows(2).all(|w| w[0] < w[1])
            && self.values.iter().all(|v| (0.0..=1.0).contains(v));
        if ok {
            Ok(())
        } else {
            Err(CompetenceError::Invalid(
                "equal-mass map needs increasing edges and one value in [0, 1] per bin".into(),
            ))
        }
    }
}

/// The final map from tempered log-odds to the calibrated belief B_t.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum CalibrationMap {
    /// B = σ(ℓ): trust the tempered log-odds as they are (the built-in prior does).
    Identity,
    Platt(Platt),
    Isotonic(Isotonic),
    EqualMass(EqualMassBins),
}

/// Which map to fit; see [`CalibrationMap`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MapKind {
    Identity,
    Platt,
    Isotonic,
    /// Equal-mass binning with this many bins.
    EqualMass(usize),
}

impl CalibrationMap {
    /// Fits the chosen kind of map to (log-odds, label) rows.
    pub fn fit(kind: MapKind, rows: &[ScoreRow]) -> Result<Self, CompetenceError> {
        Ok(match kind {
            MapKind::Identity => CalibrationMap::Identity,
            MapKind::Platt => CalibrationMap::Platt(Platt::fit(rows)?),
            MapKind::Isotonic => CalibrationMap::Isotonic(Isotonic::fit(rows)?),
            MapKind::EqualMass(bins) => CalibrationMap::EqualMass(EqualMassBins::fit(rows, bins)?),
        })
    }

    /// B_t from ℓ_t.
    pub fn apply(&self, log_odds: f64) -> f64 {
        match self {
            CalibrationMap::Identity => sigmoid(log_odds),
            CalibrationMap::Platt(p) => p.apply(log_odds),
            CalibrationMap::Isotonic(i) => i.apply(log_odds),
            CalibrationMap::EqualMass(h) => h.apply(log_odds),
        }
    }

    /// How much one unit of ℓ moves the calibrated log-odds, where the map says (Platt's
    /// slope; 1 otherwise). Used to turn raw evidence laws into belief-scale laws for the DP.
    pub fn slope(&self) -> f64 {
        match self {
            CalibrationMap::Platt(p) => p.a,
            _ => 1.0,
        }
    }

    pub(crate) fn validate(&self) -> Result<(), CompetenceError> {
        match self {
            CalibrationMap::Identity => Ok(()),
            CalibrationMap::Platt(p) if p.a.is_finite() && p.b.is_finite() => Ok(()),
            CalibrationMap::Platt(_) => Err(CompetenceError::Invalid(
                "Platt parameters must be finite".into(),
            )),
            CalibrationMap::Isotonic(i) => i.validate(),
            CalibrationMap::EqualMass(h) => h.validate(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(data: &[(f64, bool)]) -> Vec<ScoreRow> {
        data.iter().map(|&(s, l)| ScoreRow::new(s, l)).collect()
    }

    #[test]
    fn platt_on_two_score_values_matches_the_hand_solution() {
        // N₊ = N₋ = 4 → t₊ = 5/6, t₋ = 1/6. At s = −1: one positive, three negatives →
        // mean target 1/3; at s = +1: 2/3. Two points, two parameters: σ(−a+b) = 1/3 and
        // σ(a+b) = 2/3, so b = 0 and a = ln 2.
        let r = rows(&[
            (-1.0, true),
            (-1.0, false),
            (-1.0, false),
            (-1.0, false),
            (1.0, true),
            (1.0, true),
            (1.0, true),
            (1.0, false),
        ]);
        let p = Platt::fit(&r).expect("fit");
        assert!((p.a - 2f64.ln()).abs() < 1e-9, "{p:?}");
        assert!(p.b.abs() < 1e-9, "{p:?}");
    }

    #[test]
    fn platt_stays_finite_on_separable_data() {
        let r = rows(&[(-2.0, false), (-1.0, false), (1.0, true), (2.0, true)]);
        let p = Platt::fit(&r).expect("fit");
        assert!(p.a.is_finite() && p.a > 0.0 && p.b.is_finite());
        assert!(p.apply(2.0) < 1.0 && p.apply(2.0) > 0.5);
    }

    #[test]
    fn platt_needs_both_labels() {
        assert!(Platt::fit(&rows(&[(0.0, true), (1.0, true)])).is_err());
    }

    #[test]
    fn pav_pools_violators_by_hand() {
        // Labels 1,0,1,1 at scores 1..4: the first two violate → pooled to 0.5.
        let iso = Isotonic::fit(&rows(&[
            (1.0, true),
            (2.0, false),
            (3.0, true),
            (4.0, true),
        ]))
        .expect("fit");
        assert_eq!(iso.x, vec![1.0, 2.0, 3.0, 4.0]);
        assert_eq!(iso.y, vec![0.5, 0.5, 1.0, 1.0]);
        assert!((iso.apply(2.5) - 0.75).abs() < 1e-12);
        assert_eq!(iso.apply(-9.0), 0.5);
        assert_eq!(iso.apply(9.0), 1.0);
    }

    #[test]
    fn pav_pools_ties_and_cascades() {
        // Scores 1,1,2,3 with labels 1,0,0,0 plus a weighted row: (1: 1/2), (2: 0), (3: 0)
        // → cascade pools all into 1/4; the weight-3 positive at 4 stays 1.
        let mut r = rows(&[(1.0, true), (1.0, false), (2.0, false), (3.0, false)]);
        r.push(ScoreRow {
            score: 4.0,
            label: true,
            weight: 3.0,
        });
        let iso = Isotonic::fit(&r).expect("fit");
        assert_eq!(iso.x, vec![1.0, 3.0, 4.0]);
        assert_eq!(iso.y, vec![0.25, 0.25, 1.0]);
    }

    #[test]
    fn equal_mass_bins_average_labels_per_bin() {
        let r = rows(&[
            (0.0, false),
            (1.0, false),
            (2.0, true),
            (3.0, false),
            (4.0, true),
            (5.0, true),
        ]);
        let h = EqualMassBins::fit(&r, 2).expect("fit");
        assert_eq!(h.edges, vec![2.5]);
        assert!((h.values[0] - 1.0 / 3.0).abs() < 1e-12);
        assert!((h.values[1] - 2.0 / 3.0).abs() < 1e-12);
        assert_eq!(h.apply(2.4), h.values[0]);
    }

    #[test]
    fn sigmoid_and_logit_are_inverse_and_finite() {
        for x in [-800.0, -3.0, 0.0, 2.5, 800.0] {
            let p = sigmoid(x);
            assert!(p.is_finite() && (0.0..=1.0).contains(&p));
        }
        assert!((logit(sigmoid(1.25)) - 1.25).abs() < 1e-12);
    }
}
