//! Ranking: does the judge put the sessions that fail below the ones that succeed?
//!
//! A judge can be calibrated on average and still useless for stopping if it cannot tell
//! sessions apart; these scores measure that separately from calibration.

use super::{Forecast, ascending_order, usable};

/// Area under the ROC curve with success as the positive class: the probability that a
/// random success gets a higher forecast than a random failure, ties counting ½ (the
/// Mann–Whitney U statistic divided by n₁·n₀; Hanley & McNeil 1982, "The meaning and use of
/// the area under a ROC curve").
///
/// Computed from mid-ranks in O(N log N). `None` for empty input, a non-finite forecast or a
/// single class (the area is undefined when one side of the comparison is empty).
pub fn auroc(data: &[Forecast]) -> Option<f64> {
    usable(data)?;
    let positives = data.iter().filter(|f| f.success).count();
    let negatives = data.len() - positives;
    if positives == 0 || negatives == 0 {
        return None;
    }
    let order = ascending_order(data);
    let mut rank_sum_of_positives = 0.0;
    let mut start = 0;
    while start < order.len() {
        let p = data[order[start]].p;
        let end = start
            + order[start..]
                .iter()
                .take_while(|&&i| data[i].p == p)
                .count();
        // Ranks start..end (0-based) share the mid-rank (start + 1 + end) / 2 (1-based).
        let mid_rank = (start + 1 + end) as f64 / 2.0;
        let tied_positives = order[start..end]
            .iter()
            .filter(|&&i| data[i].success)
            .count();
        rank_sum_of_positives += mid_rank * tied_positives as f64;
        start = end;
    }
    let (n1, n0) = (positives as f64, negatives as f64);
    let u = rank_sum_of_positives - n1 * (n1 + 1.0) / 2.0;
    Some(u / (n1 * n0))
}

/// Area under the risk–coverage curve (Geifman & El-Yaniv 2017, "Selective classification
/// for deep neural networks"; Geifman, Uziel & El-Yaniv 2019, "Bias-reduced uncertainty
/// estimation for deep neural classifiers").
///
/// Sessions are accepted in descending order of belief; after accepting k of N, the risk is
/// the fraction of failures among the k; AURC = (1/N)·Σ_k risk(k). Lower is better. Tied
/// beliefs have no order, so ties are broken uniformly at random and the *expected* AURC is
/// returned: within a tied group the expected failures after j of its n_g members are
/// e₀ + j·f_g/n_g. This is the same convention as the ½ for ties in [`auroc`], and it makes
/// the value independent of input order. `None` for empty input or a non-finite forecast.
pub fn aurc(data: &[Forecast]) -> Option<f64> {
    usable(data)?;
    let mut order = ascending_order(data);
    order.reverse();
    let mut sum_of_risks = 0.0;
    let mut failures_before = 0.0;
    let mut start = 0;
    while start < order.len() {
        let p = data[order[start]].p;
        let size = order[start..]
            .iter()
            .take_while(|&&i| data[i].p == p)
            .count();
        let group = &order[start..start + size];
        let group_failures = group.iter().filter(|&&i| !data[i].success).count() as f64;
        let failure_rate = group_failures / size as f64;
        for j in 1..=size {
            let expected_failures = failures_before + j as f64 * failure_rate;
            sum_of_risks += expected_failures / (start + j) as f64;
        }
        failures_before += group_failures;
        start += size;
    }
    Some(sum_of_risks / data.len() as f64)
}

/// The AURC of an oracle that accepts every success before any failure:
/// (1/N)·Σ_{k>S} (k − S)/k with S successes. This is the exact discrete optimum; Geifman et
/// al. (2019) give its continuous approximation r + (1 − r)·ln(1 − r) for failure rate r.
pub fn oracle_aurc(data: &[Forecast]) -> Option<f64> {
    usable(data)?;
    let n = data.len();
    let successes = data.iter().filter(|f| f.success).count();
    let sum: f64 = (successes + 1..=n)
        .map(|k| (k - successes) as f64 / k as f64)
        .sum();
    Some(sum / n as f64)
}

/// Excess AURC: [`aurc`] − [`oracle_aurc`] (Geifman et al. 2019). Removes the part of AURC
/// that only reflects how often the junior fails, leaving the judge's ranking quality;
/// 0 for a perfect ranking, never negative.
pub fn e_aurc(data: &[Forecast]) -> Option<f64> {
    Some(aurc(data)? - oracle_aurc(data)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fc(pairs: &[(f64, bool)]) -> Vec<Forecast> {
        pairs.iter().map(|&(p, s)| Forecast::new(p, s)).collect()
    }

    /// Direct definition: the share of (success, failure) pairs ordered right, ties ½.
    fn auroc_by_pairs(data: &[Forecast]) -> f64 {
        let (mut wins, mut pairs) = (0.0, 0.0);
        for a in data.iter().filter(|f| f.success) {
            for b in data.iter().filter(|f| !f.success) {
                pairs += 1.0;
                wins += if a.p > b.p {
                    1.0
                } else if a.p == b.p {
                    0.5
                } else {
                    0.0
                };
            }
        }
        wins / pairs
    }

    /// Per-k AURC of one fixed acceptance order.
    fn aurc_of_order(data: &[Forecast], order: &[usize]) -> f64 {
        let mut failures = 0.0;
        let mut sum = 0.0;
        for (k, &i) in order.iter().enumerate() {
            failures += if data[i].success { 0.0 } else { 1.0 };
            sum += failures / (k + 1) as f64;
        }
        sum / data.len() as f64
    }

    fn permutations(items: &[usize]) -> Vec<Vec<usize>> {
        if items.len() <= 1 {
            return vec![items.to_vec()];
        }
        let mut all = Vec::new();
        for i in 0..items.len() {
            let mut rest = items.to_vec();
            let head = rest.remove(i);
            for mut tail in permutations(&rest) {
                tail.insert(0, head);
                all.push(tail);
            }
        }
        all
    }

    #[test]
    fn auroc_matches_the_pairwise_definition_with_ties() {
        let data = fc(&[
            (0.9, true),
            (0.9, false),
            (0.4, true),
            (0.4, true),
            (0.4, false),
            (0.1, false),
            (0.7, true),
        ]);
        let fast = auroc(&data).expect("two classes");
        assert!((fast - auroc_by_pairs(&data)).abs() < 1e-12, "{fast}");
    }

    #[test]
    fn auroc_of_a_perfect_and_an_inverted_ranking() {
        assert_eq!(auroc(&fc(&[(0.9, true), (0.1, false)])), Some(1.0));
        assert_eq!(auroc(&fc(&[(0.1, true), (0.9, false)])), Some(0.0));
        assert_eq!(auroc(&fc(&[(0.5, true), (0.5, false)])), Some(0.5));
    }

    #[test]
    fn auroc_needs_both_classes() {
        assert_eq!(auroc(&fc(&[(0.9, true), (0.2, true)])), None);
        assert_eq!(auroc(&[]), None);
    }

    #[test]
    fn aurc_without_ties_is_the_mean_risk_over_coverages() {
        // Descending: 0.9 ok, 0.8 fail, 0.3 ok → risks 0, 1/2, 1/3.
        let data = fc(&[(0.3, true), (0.9, true), (0.8, false)]);
        let a = aurc(&data).expect("defined");
        assert!((a - (0.0 + 0.5 + 1.0 / 3.0) / 3.0).abs() < 1e-12, "{a}");
    }

    #[test]
    fn aurc_with_ties_is_the_average_over_all_tie_breaks() {
        let data = fc(&[
            (0.8, true),
            (0.5, false),
            (0.5, true),
            (0.5, false),
            (0.2, true),
        ]);
        let tied: Vec<usize> = vec![1, 2, 3];
        let orders = permutations(&tied);
        let mean = orders
            .iter()
            .map(|mid| {
                let mut order = vec![0];
                order.extend(mid);
                order.push(4);
                aurc_of_order(&data, &order)
            })
            .sum::<f64>()
            / orders.len() as f64;
        let a = aurc(&data).expect("defined");
        assert!((a - mean).abs() < 1e-12, "{a} vs {mean}");
    }

    #[test]
    fn a_perfect_ranking_has_zero_excess_aurc() {
        let data = fc(&[(0.9, true), (0.8, true), (0.3, false), (0.1, false)]);
        let e = e_aurc(&data).expect("defined");
        assert!(e.abs() < 1e-15, "{e}");
        // All tied: worse than the oracle, and AURC is then the failure rate.
        let tied = fc(&[(0.5, true), (0.5, true), (0.5, false), (0.5, false)]);
        assert!((aurc(&tied).expect("defined") - 0.5).abs() < 1e-12);
        assert!(e_aurc(&tied).expect("defined") > 0.0);
    }

    #[test]
    fn aurc_of_empty_input_is_none() {
        assert_eq!(aurc(&[]), None);
        assert_eq!(e_aurc(&fc(&[(f64::INFINITY, true)])), None);
    }
}
