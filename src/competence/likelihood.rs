//! Per-signal likelihoods f₁, f₀ as smoothed histograms, and their log ratio.
//!
//! The judge never reads raw entropy as a probability: a signal moves the belief by
//! log f₁(v)/f₀(v), where f₁ and f₀ are how often a value in v's bin was seen in sessions
//! that succeeded and failed. Histograms make no shape assumption, which matters because
//! token signals are bimodal and heavy-tailed; additive smoothing keeps empty bins from
//! producing infinite ratios.

use serde::{Deserialize, Serialize};

use super::CompetenceError;

/// A binned likelihood pair for one signal.
///
/// `edges` are the interior cut points, strictly increasing; bin `i` holds values in
/// `[edges[i-1], edges[i])`, the first and last bins are open-ended. `p1[i]` and `p0[i]` are
/// the probabilities of bin `i` given success and failure (each sums to 1, all positive).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "LikelihoodRepr", into = "LikelihoodRepr")]
pub struct Likelihood {
    edges: Vec<f64>,
    p1: Vec<f64>,
    p0: Vec<f64>,
    llr: Vec<f64>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct LikelihoodRepr {
    edges: Vec<f64>,
    p1: Vec<f64>,
    p0: Vec<f64>,
}

impl TryFrom<LikelihoodRepr> for Likelihood {
    type Error = CompetenceError;
    fn try_from(r: LikelihoodRepr) -> Result<Self, Self::Error> {
        Likelihood::new(r.edges, r.p1, r.p0)
    }
}

impl From<Likelihood> for LikelihoodRepr {
    fn from(l: Likelihood) -> Self {
        LikelihoodRepr {
            edges: l.edges,
            p1: l.p1,
            p0: l.p0,
        }
    }
}

fn invalid(what: impl Into<String>) -> CompetenceError {
    CompetenceError::Invalid(what.into())
}

fn normalised(p: &[f64], name: &str) -> Result<Vec<f64>, CompetenceError> {
    if p.iter().any(|x| !x.is_finite() || *x <= 0.0) {
        return Err(invalid(format!(
            "likelihood {name} must be finite and positive in every bin"
        )));
    }
    let total: f64 = p.iter().sum();
    if (total - 1.0).abs() > 1e-6 {
        return Err(invalid(format!("likelihood {name} sums to {total}, not 1")));
    }
    // Renormalise only what is visibly off, so a value read back from JSON is unchanged.
    if (total - 1.0).abs() > 1e-12 {
        Ok(p.iter().map(|x| x / total).collect())
    } else {
        Ok(p.to_vec())
    }
}

impl Likelihood {
    /// A likelihood from cut points and per-bin probabilities (validated: sizes agree,
    /// edges strictly increasing and finite, probabilities positive and summing to 1).
    pub fn new(edges: Vec<f64>, p1: Vec<f64>, p0: Vec<f64>) -> Result<Self, CompetenceError> {
        if p1.len() != edges.len() + 1 || p0.len() != edges.len() + 1 {
            return Err(invalid(format!(
                "likelihood with {} edges needs {} bins, got p1 {} and p0 {}",
                edges.len(),
                edges.len() + 1,
                p1.len(),
                p0.len()
            )));
        }
        if edges.iter().any(|e| !e.is_finite()) || edges.windows(2).any(|w| w[0] >= w[1]) {
            return Err(invalid(
                "likelihood edges must be finite and strictly increasing",
            ));
        }
        let p1 = normalised(&p1, "p1")?;
        let p0 = normalised(&p0, "p0")?;
        let llr = p1.iter().zip(&p0).map(|(a, b)| (a / b).ln()).collect();
        Ok(Likelihood { edges, p1, p0, llr })
    }

    /// A present/absent fact (value 1.0 or 0.0) seen with probability `p1_present` in
    /// successful and `p0_present` in failed sessions, per step.
    pub fn binary(p1_present: f64, p0_present: f64) -> Result<Self, CompetenceError> {
        Likelihood::new(
            vec![0.5],
            vec![1.0 - p1_present, p1_present],
            vec![1.0 - p0_present, p0_present],
        )
    }

    /// Fits a histogram from values seen in successful (`ones`) and failed (`zeros`)
    /// sessions: at most `bins` bins of equal mass on the pooled values, then additive
    /// (Laplace) smoothing of `alpha` pseudo-counts per bin. Non-finite values are skipped.
    pub fn fit(
        ones: &[f64],
        zeros: &[f64],
        bins: usize,
        alpha: f64,
    ) -> Result<Self, CompetenceError> {
        if !(alpha.is_finite() && alpha > 0.0) {
            return Err(invalid("histogram smoothing must be a positive number"));
        }
        let mut pooled: Vec<f64> = ones
            .iter()
            .chain(zeros)
            .copied()
            .filter(|v| v.is_finite())
            .collect();
        pooled.sort_by(f64::total_cmp);
        let edges = equal_mass_edges(&pooled, bins.max(1));
        Likelihood::fit_with_edges(ones, zeros, edges, alpha)
    }

    /// Like [`Likelihood::fit`] with fixed cut points (e.g. `[0.5]` for present/absent facts).
    pub fn fit_with_edges(
        ones: &[f64],
        zeros: &[f64],
        edges: Vec<f64>,
        alpha: f64,
    ) -> Result<Self, CompetenceError> {
        let unit = |v: &[f64]| v.iter().map(|&x| (x, 1.0)).collect::<Vec<_>>();
        Likelihood::fit_weighted_with_edges(&unit(ones), &unit(zeros), edges, alpha)
    }

    /// [`Likelihood::fit`] on weighted values `(value, weight)`: each value counts `weight`
    /// times in its bin (inverse-propensity weights of a censored corpus). The equal-mass
    /// cut points are taken on the unweighted values: they only choose a partition, and any
    /// fixed partition gives unbiased weighted bin frequencies.
    pub fn fit_weighted(
        ones: &[(f64, f64)],
        zeros: &[(f64, f64)],
        bins: usize,
        alpha: f64,
    ) -> Result<Self, CompetenceError> {
        let mut pooled: Vec<f64> = ones
            .iter()
            .chain(zeros)
            .map(|&(v, _)| v)
            .filter(|v| v.is_finite())
            .collect();
        pooled.sort_by(f64::total_cmp);
        let edges = equal_mass_edges(&pooled, bins.max(1));
        Likelihood::fit_weighted_with_edges(ones, zeros, edges, alpha)
    }

    /// [`Likelihood::fit_with_edges`] on weighted values.
    pub fn fit_weighted_with_edges(
        ones: &[(f64, f64)],
        zeros: &[(f64, f64)],
        edges: Vec<f64>,
        alpha: f64,
    ) -> Result<Self, CompetenceError> {
        if !(alpha.is_finite() && alpha > 0.0) {
            return Err(invalid("histogram smoothing must be a positive number"));
        }
        let counts = |values: &[(f64, f64)]| {
            let mut c = vec![0.0; edges.len() + 1];
            for (v, w) in values
                .iter()
                .filter(|(v, w)| v.is_finite() && w.is_finite() && *w > 0.0)
            {
                c[bin_of(&edges, *v)] += w;
            }
            let total: f64 = c.iter().sum::<f64>() + alpha * c.len() as f64;
            c.iter().map(|x| (x + alpha) / total).collect::<Vec<_>>()
        };
        let p1 = counts(ones);
        let p0 = counts(zeros);
        Likelihood::new(edges, p1, p0)
    }

    /// Index of the bin holding `value` (NaN goes to the first bin; callers skip NaN).
    pub fn bin(&self, value: f64) -> usize {
        bin_of(&self.edges, value)
    }

    /// log f₁(value)/f₀(value), untempered. NaN carries no evidence: 0.
    pub fn llr(&self, value: f64) -> f64 {
        if value.is_nan() {
            0.0
        } else {
            self.llr[self.bin(value)]
        }
    }

    pub fn edges(&self) -> &[f64] {
        &self.edges
    }
    pub fn p1(&self) -> &[f64] {
        &self.p1
    }
    pub fn p0(&self) -> &[f64] {
        &self.p0
    }
    /// log p1/p0 per bin.
    pub fn llrs(&self) -> &[f64] {
        &self.llr
    }
}

/// Bin of `value` under interior cut points `edges` (binary search: O(log bins), no alloc).
fn bin_of(edges: &[f64], value: f64) -> usize {
    edges.partition_point(|e| *e <= value)
}

/// Interior cut points splitting sorted `values` into `bins` groups of about equal count.
/// Cuts fall midway between neighbouring distinct values; ties never straddle a cut, so
/// heavily tied data (many tokens of entropy ≈ 0) yields fewer, not empty, bins.
pub(crate) fn equal_mass_edges(sorted: &[f64], bins: usize) -> Vec<f64> {
    let n = sorted.len();
    let mut edges: Vec<f64> = Vec::new();
    for k in 1..bins {
        // The first boundary between distinct values at or after the k-th quantile.
        let Some(i) = (((k * n) / bins).max(1)..n).find(|&i| sorted[i - 1] < sorted[i]) else {
            break;
        };
        let (lo, hi) = (sorted[i - 1], sorted[i]);
        let cut = lo + (hi - lo) / 2.0;
        if edges.last().is_none_or(|last| *last < cut) {
            edges.push(cut);
        }
    }
    edges
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bins_are_half_open_and_open_ended() {
        let l = Likelihood::new(vec![1.0, 2.0], vec![0.2, 0.3, 0.5], vec![0.5, 0.3, 0.2])
            .expect("valid");
        assert_eq!(l.bin(-100.0), 0);
        assert_eq!(l.bin(1.0), 1);
        assert_eq!(l.bin(1.999), 1);
        assert_eq!(l.bin(2.0), 2);
        assert_eq!(l.bin(1e300), 2);
        assert!((l.llr(5.0) - (0.5f64 / 0.2).ln()).abs() < 1e-12);
        assert!((l.llr(1.5)).abs() < 1e-12);
        assert_eq!(l.llr(f64::NAN), 0.0);
    }

    #[test]
    fn fit_smooths_counts_by_hand() {
        // Pooled sorted: 0,0,1,1,2,3 → 2 bins, cut at index 3 between 1 and 1 (tied: no cut)…
        // use distinct values instead: ones = [0,1,2], zeros = [3,4,5] → cut at 2.5.
        let l = Likelihood::fit(&[0.0, 1.0, 2.0], &[3.0, 4.0, 5.0], 2, 1.0).expect("fit");
        assert_eq!(l.edges(), &[2.5]);
        // ones: counts [3, 0] → (3+1)/5, (0+1)/5; zeros: [0, 3] → 1/5, 4/5.
        assert!((l.p1()[0] - 0.8).abs() < 1e-12);
        assert!((l.p0()[0] - 0.2).abs() < 1e-12);
        assert!((l.llr(0.0) - 4f64.ln()).abs() < 1e-12);
        assert!((l.llr(9.0) + 4f64.ln()).abs() < 1e-12);
    }

    #[test]
    fn ties_never_straddle_a_cut() {
        let sorted = [0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 2.0, 3.0];
        let edges = equal_mass_edges(&sorted, 4);
        assert_eq!(edges, vec![0.5, 1.5]);
    }

    #[test]
    fn invalid_shapes_are_errors() {
        assert!(Likelihood::new(vec![1.0], vec![1.0], vec![0.5, 0.5]).is_err());
        assert!(Likelihood::new(vec![2.0, 1.0], vec![0.3; 3], vec![0.3; 3]).is_err());
        assert!(Likelihood::new(vec![], vec![0.0], vec![1.0]).is_err());
        assert!(Likelihood::binary(0.0, 0.1).is_err());
    }

    #[test]
    fn json_round_trip_recomputes_the_ratios() {
        let l = Likelihood::binary(0.05, 0.2).expect("valid");
        let json = serde_json::to_string(&l).expect("ser");
        assert!(!json.contains("llr"));
        let back: Likelihood = serde_json::from_str(&json).expect("de");
        assert_eq!(back, l);
        assert!((back.llr(1.0) - (0.25f64).ln()).abs() < 1e-12);
    }
}
