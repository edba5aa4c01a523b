//! Calibration: does B = 0.7 come true 70 % of the time?
//!
//! The regret of a threshold policy run on an estimated posterior is bounded by
//! E|B_t − B̂_t| (the seed paper's regret bound), so these numbers, not accuracy, say
//! whether the judge can be trusted.

use serde::{Deserialize, Serialize};

use super::{Forecast, ascending_order, usable};

/// How forecasts are grouped for ECE, MCE and reliability diagrams.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "bins")]
pub enum Binning {
    /// `n` bins of width 1/n on [0, 1]; bin i holds p with ⌊p·n⌋ = i, and p = 1 joins the
    /// last bin (Naeini, Cooper & Hauskrecht 2015; Guo et al. 2017 use n = 15).
    EqualWidth(usize),
    /// `n` bins of (nearly) equal count: after a stable sort by p, bin b holds sorted
    /// positions ⌊b·N/n⌋ .. ⌊(b+1)·N/n⌋. Equal-width bins leave most of them empty when a
    /// judge is sharp; equal-mass bins do not (Nixon et al. 2019, "adaptive calibration
    /// error"; Kumar, Liang & Ma 2019). Tied forecasts may straddle a bin edge.
    EqualMass(usize),
}

impl Binning {
    /// The customary equal-width ECE: 15 bins (Guo et al. 2017, "On calibration of modern
    /// neural networks").
    pub const WIDTH_15: Binning = Binning::EqualWidth(15);
    /// The equal-mass ECE the design reports for every fitted calibration: 10 bins.
    pub const MASS_10: Binning = Binning::EqualMass(10);

    fn count(self) -> usize {
        match self {
            Binning::EqualWidth(n) | Binning::EqualMass(n) => n,
        }
    }
}

/// One bar of a reliability diagram.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ReliabilityBin {
    /// Equal-width: the bin's edges. Equal-mass: the smallest and largest p in the bin.
    pub lower: f64,
    pub upper: f64,
    pub count: usize,
    /// Mean forecast in the bin.
    pub confidence: f64,
    /// Fraction of successes in the bin.
    pub accuracy: f64,
}

impl ReliabilityBin {
    /// |accuracy − confidence|: the calibration gap of this bin.
    pub fn gap(&self) -> f64 {
        (self.accuracy - self.confidence).abs()
    }
}

/// The members (indices into `data`) of each of the `binning.count()` bins, empty ones
/// included: the one cut that reliability diagrams and both ECEs share.
fn members(data: &[Forecast], binning: Binning) -> Vec<Vec<usize>> {
    let n = binning.count();
    let mut groups: Vec<Vec<usize>> = vec![Vec::new(); n];
    match binning {
        Binning::EqualWidth(_) => {
            for (j, f) in data.iter().enumerate() {
                let p = f.p.clamp(0.0, 1.0);
                // Truncation toward zero is the floor here because p ≥ 0.
                let i = ((p * n as f64) as usize).min(n - 1);
                groups[i].push(j);
            }
        }
        Binning::EqualMass(_) => {
            let order = ascending_order(data);
            let total = data.len();
            for (b, group) in groups.iter_mut().enumerate() {
                let (start, end) = (b * total / n, (b + 1) * total / n);
                group.extend_from_slice(&order[start..end]);
            }
        }
    }
    groups
}

/// The non-empty bins of a reliability diagram, in ascending order of p.
///
/// Forecasts outside [0, 1] are placed as if clamped (their mean is kept as given).
/// `None` for empty input, a non-finite forecast, or zero bins.
pub fn reliability_bins(data: &[Forecast], binning: Binning) -> Option<Vec<ReliabilityBin>> {
    usable(data)?;
    let n = binning.count();
    if n == 0 {
        return None;
    }
    let groups: Vec<Vec<Forecast>> = members(data, binning)
        .iter()
        .map(|g| g.iter().map(|&i| data[i]).collect())
        .collect();
    let edges: Vec<(f64, f64)> = match binning {
        Binning::EqualWidth(_) => (0..n)
            .map(|i| (i as f64 / n as f64, (i + 1) as f64 / n as f64))
            .collect(),
        Binning::EqualMass(_) => groups
            .iter()
            .map(|g| {
                (
                    g.first().map_or(f64::NAN, |f| f.p),
                    g.last().map_or(f64::NAN, |f| f.p),
                )
            })
            .collect(),
    };
    let bins = groups
        .iter()
        .zip(edges)
        .filter(|(g, _)| !g.is_empty())
        .map(|(g, (lower, upper))| {
            let count = g.len();
            let confidence = g.iter().map(|f| f.p).sum::<f64>() / count as f64;
            let accuracy = g.iter().map(|f| f.y()).sum::<f64>() / count as f64;
            ReliabilityBin {
                lower,
                upper,
                count,
                confidence,
                accuracy,
            }
        })
        .collect();
    Some(bins)
}

/// Expected calibration error: Σ_b (n_b/N)·|acc_b − conf_b| over the bins of `binning`
/// (Naeini et al. 2015, "Obtaining well calibrated probabilities using Bayesian binning").
///
/// `None` when [`reliability_bins`] is `None`.
pub fn ece(data: &[Forecast], binning: Binning) -> Option<f64> {
    let bins = reliability_bins(data, binning)?;
    let total = data.len() as f64;
    Some(bins.iter().map(|b| b.count as f64 / total * b.gap()).sum())
}

/// [`ece`] against known probabilities instead of labels: the same bins of the forecasts,
/// and in each |mean p − mean target|, weighted by the bin's share. Where the true
/// probability of each forecast is known (a simulator's exact posterior), E[Y | p] is
/// E[target | p], so this measures the same calibration error with no Bernoulli noise.
/// `None` as for [`ece`], or when `target` is not one finite value per forecast.
pub fn ece_against(data: &[Forecast], target: &[f64], binning: Binning) -> Option<f64> {
    usable(data)?;
    if binning.count() == 0 || target.len() != data.len() || target.iter().any(|t| !t.is_finite()) {
        return None;
    }
    let gaps: f64 = members(data, binning)
        .iter()
        .map(|g| {
            let p: f64 = g.iter().map(|&i| data[i].p).sum();
            let t: f64 = g.iter().map(|&i| target[i]).sum();
            (p - t).abs()
        })
        .sum();
    Some(gaps / data.len() as f64)
}

/// Maximum calibration error: the largest |acc_b − conf_b| over non-empty bins (Naeini et
/// al. 2015). The worst-case companion of [`ece`]: "confidently wrong" in one region is
/// what hurts a threshold policy that acts exactly in that region.
pub fn mce(data: &[Forecast], binning: Binning) -> Option<f64> {
    let bins = reliability_bins(data, binning)?;
    bins.iter().map(ReliabilityBin::gap).reduce(f64::max)
}

/// Brier score: mean of (p − y)² (Brier 1950, "Verification of forecasts expressed in terms
/// of probability"). A proper score: it rewards calibration and sharpness together.
pub fn brier(data: &[Forecast]) -> Option<f64> {
    usable(data)?;
    let sum: f64 = data.iter().map(|f| (f.p - f.y()).powi(2)).sum();
    Some(sum / data.len() as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fc(pairs: &[(f64, bool)]) -> Vec<Forecast> {
        pairs.iter().map(|&(p, s)| Forecast::new(p, s)).collect()
    }

    #[test]
    fn ece_against_known_probabilities_is_zero_for_them_and_the_gap_otherwise() {
        let truth = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95];
        let at =
            |p: &[f64]| -> Vec<Forecast> { p.iter().map(|&p| Forecast::new(p, false)).collect() };
        assert_eq!(
            ece_against(&at(&truth), &truth, Binning::MASS_10),
            Some(0.0)
        );
        let shifted: Vec<f64> = truth.iter().map(|t| t - 0.05).collect();
        let e = ece_against(&at(&shifted), &truth, Binning::MASS_10).expect("ece");
        assert!((e - 0.05).abs() < 1e-12, "{e}");
        // Over-confidence that averages out within one bin is invisible to binning.
        let e = ece_against(&at(&[0.0, 1.0]), &[0.5, 0.5], Binning::EqualMass(1)).expect("ece");
        assert!(e.abs() < 1e-12);
        // With labels as targets it is the ECE.
        let data = fc(&[(0.9, true), (0.9, false), (0.1, false)]);
        let labels: Vec<f64> = data.iter().map(|f| f.y()).collect();
        assert_eq!(
            ece_against(&data, &labels, Binning::WIDTH_15),
            ece(&data, Binning::WIDTH_15)
        );
        assert_eq!(ece_against(&[], &[], Binning::MASS_10), None);
        assert_eq!(ece_against(&at(&[0.5]), &[], Binning::MASS_10), None);
    }

    #[test]
    fn a_perfectly_calibrated_set_has_zero_ece() {
        // In the bin of 0.25 one of four succeeds; in the bin of 0.75 three of four.
        let data = fc(&[
            (0.25, true),
            (0.25, false),
            (0.25, false),
            (0.25, false),
            (0.75, true),
            (0.75, true),
            (0.75, true),
            (0.75, false),
        ]);
        assert_eq!(ece(&data, Binning::WIDTH_15), Some(0.0));
        assert_eq!(mce(&data, Binning::WIDTH_15), Some(0.0));
    }

    #[test]
    fn ece_weights_each_bin_by_its_share() {
        // Bin of 0.9: 2 forecasts, 1 success → gap 0.4, weight 2/3.
        // Bin of 0.1: 1 forecast, 0 successes → gap 0.1, weight 1/3.
        let data = fc(&[(0.9, true), (0.9, false), (0.1, false)]);
        let e = ece(&data, Binning::WIDTH_15).expect("defined");
        assert!(
            (e - (2.0 / 3.0 * 0.4 + 1.0 / 3.0 * 0.1)).abs() < 1e-12,
            "{e}"
        );
        let m = mce(&data, Binning::WIDTH_15).expect("defined");
        assert!((m - 0.4).abs() < 1e-12);
    }

    #[test]
    fn one_lands_in_the_last_equal_width_bin_and_zero_in_the_first() {
        let bins = reliability_bins(&fc(&[(1.0, true), (0.0, false)]), Binning::WIDTH_15)
            .expect("defined");
        assert_eq!(bins.len(), 2);
        assert_eq!(bins[0].lower, 0.0);
        assert_eq!(bins[1].upper, 1.0);
        assert_eq!(bins[1].count, 1);
    }

    #[test]
    fn equal_mass_bins_split_sorted_positions_evenly() {
        let data = fc(&[
            (0.9, true),
            (0.1, false),
            (0.5, true),
            (0.3, false),
            (0.7, true),
        ]);
        let bins = reliability_bins(&data, Binning::EqualMass(2)).expect("defined");
        // ⌊0·5/2⌋..⌊1·5/2⌋ = 0..2 and 2..5.
        assert_eq!(bins.iter().map(|b| b.count).collect::<Vec<_>>(), [2, 3]);
        assert_eq!((bins[0].lower, bins[0].upper), (0.1, 0.3));
        assert_eq!((bins[1].lower, bins[1].upper), (0.5, 0.9));
        assert_eq!(bins[1].accuracy, 1.0);
    }

    #[test]
    fn fewer_forecasts_than_bins_leaves_no_empty_bin() {
        let data = fc(&[(0.2, false), (0.8, true)]);
        let bins = reliability_bins(&data, Binning::MASS_10).expect("defined");
        assert_eq!(bins.len(), 2);
        assert!(bins.iter().all(|b| b.count == 1));
    }

    #[test]
    fn undefined_inputs_give_none() {
        assert_eq!(ece(&[], Binning::WIDTH_15), None);
        assert_eq!(brier(&[]), None);
        assert_eq!(mce(&fc(&[(f64::NAN, true)]), Binning::MASS_10), None);
        assert_eq!(ece(&fc(&[(0.5, true)]), Binning::EqualWidth(0)), None);
    }

    #[test]
    fn brier_of_certain_right_and_wrong_forecasts() {
        assert_eq!(brier(&fc(&[(1.0, true), (0.0, false)])), Some(0.0));
        assert_eq!(brier(&fc(&[(1.0, false), (0.0, true)])), Some(1.0));
        assert_eq!(brier(&fc(&[(0.5, false), (0.5, true)])), Some(0.25));
    }
}
