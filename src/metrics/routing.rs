//! What escalation buys: accuracy per unit of money, against the two trivial policies
//! "junior only" and "senior only".
//!
//! The performance-gap-recovered quantities follow RouteLLM (Ong et al. 2024, "RouteLLM:
//! Learning to route LLMs with preference data", arXiv:2406.18665). RouteLLM's cost axis is
//! the share of calls sent to the strong model; ours is money, normalised so that junior
//! only is 0 and senior only is 1, because a mid-trajectory handoff pays for both models
//! and a share of calls does not capture that.

use serde::{Deserialize, Serialize};

/// One policy's mean cost per session and its accuracy (share of sessions that succeed).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CostAccuracyPoint {
    /// What produced the point, e.g. `optimal τ`, `constant 0.4`, `junior only`.
    pub label: String,
    pub cost: f64,
    pub accuracy: f64,
}

impl CostAccuracyPoint {
    pub fn new(label: impl Into<String>, cost: f64, accuracy: f64) -> Self {
        CostAccuracyPoint {
            label: label.into(),
            cost,
            accuracy,
        }
    }
}

/// Points sorted for plotting, and the ones worth choosing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CostAccuracyCurve {
    /// Every finite point, by ascending cost, then descending accuracy.
    pub points: Vec<CostAccuracyPoint>,
    /// The Pareto frontier: points that no other point beats on accuracy at no more cost.
    /// Ascending in both cost and accuracy; of equal points the first in `points` stays.
    pub frontier: Vec<CostAccuracyPoint>,
}

/// Sorts the points and extracts their Pareto frontier. Points with a non-finite cost or
/// accuracy are dropped (they cannot be placed on the axes).
pub fn cost_accuracy_curve(points: Vec<CostAccuracyPoint>) -> CostAccuracyCurve {
    let mut points: Vec<CostAccuracyPoint> = points
        .into_iter()
        .filter(|p| p.cost.is_finite() && p.accuracy.is_finite())
        .collect();
    points.sort_by(|a, b| {
        a.cost
            .total_cmp(&b.cost)
            .then(b.accuracy.total_cmp(&a.accuracy))
    });
    let mut frontier: Vec<CostAccuracyPoint> = Vec::new();
    for p in &points {
        if frontier
            .last()
            .is_none_or(|best| p.accuracy > best.accuracy)
        {
            frontier.push(p.clone());
        }
    }
    CostAccuracyCurve { points, frontier }
}

/// Performance gap recovered as a function of normalised cost, piecewise linear.
///
/// PGR(policy) = (acc − acc_junior) / (acc_senior − acc_junior); normalised cost
/// x = (cost − cost_junior) / (cost_senior − cost_junior). The knots are the policies'
/// points with x in [0, 1], plus the two endpoints (0, 0) and (1, 1): "never escalate" and
/// "always escalate" are members of every threshold family. At equal x the best PGR is
/// kept. Points cheaper than junior only or dearer than senior only are off the axis and
/// are ignored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PgrCurve {
    /// (normalised cost, PGR), ascending in cost; first (0, ·), last (1, ·).
    pub knots: Vec<(f64, f64)>,
    pub junior: CostAccuracyPoint,
    pub senior: CostAccuracyPoint,
}

impl PgrCurve {
    /// `None` when the two baselines cost the same or score the same (no gap to recover, or
    /// no axis to integrate over), or when a baseline is not finite.
    pub fn new(
        junior: CostAccuracyPoint,
        senior: CostAccuracyPoint,
        policies: &[CostAccuracyPoint],
    ) -> Option<PgrCurve> {
        let finite = [junior.cost, junior.accuracy, senior.cost, senior.accuracy]
            .iter()
            .all(|v| v.is_finite());
        let cost_span = senior.cost - junior.cost;
        let gap = senior.accuracy - junior.accuracy;
        if !finite || cost_span == 0.0 || gap == 0.0 {
            return None;
        }
        let mut knots: Vec<(f64, f64)> = policies
            .iter()
            .map(|p| {
                (
                    (p.cost - junior.cost) / cost_span,
                    (p.accuracy - junior.accuracy) / gap,
                )
            })
            .filter(|(x, g)| (0.0..=1.0).contains(x) && g.is_finite())
            .chain([(0.0, 0.0), (1.0, 1.0)])
            .collect();
        knots.sort_by(|a, b| a.0.total_cmp(&b.0).then(b.1.total_cmp(&a.1)));
        knots.dedup_by(|later, kept| later.0 == kept.0);
        Some(PgrCurve {
            knots,
            junior,
            senior,
        })
    }

    /// APGR: ∫₀¹ PGR(x) dx by the trapezoid rule over the knots (RouteLLM's "average
    /// performance gap recovered", there approximated on a grid of call shares). 0.5 for
    /// the straight line between the baselines, i.e. for random mixing of the two.
    pub fn apgr(&self) -> f64 {
        self.knots
            .windows(2)
            .map(|w| (w[1].0 - w[0].0) * (w[0].1 + w[1].1) / 2.0)
            .sum()
    }

    /// CPT(target): the normalised cost at which PGR first reaches `target`, walking up the
    /// cost axis and interpolating linearly inside the crossing segment (RouteLLM's
    /// "call-performance threshold"; "first" because the curve need not be monotone).
    /// `None` when PGR never reaches `target` or `target` is NaN.
    pub fn cpt(&self, target: f64) -> Option<f64> {
        let first = self.knots.first()?;
        if first.1 >= target {
            return Some(first.0);
        }
        self.knots.windows(2).find_map(|w| {
            let ((x0, g0), (x1, g1)) = (w[0], w[1]);
            (g1 >= target).then(|| x0 + (target - g0) / (g1 - g0) * (x1 - x0))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pt(cost: f64, accuracy: f64) -> CostAccuracyPoint {
        CostAccuracyPoint::new(format!("{cost}/{accuracy}"), cost, accuracy)
    }

    #[test]
    fn the_frontier_drops_dominated_points() {
        let curve = cost_accuracy_curve(vec![
            pt(3.0, 0.9),
            pt(1.0, 0.5),
            pt(2.0, 0.4),
            pt(2.0, 0.7),
            pt(f64::NAN, 1.0),
            pt(4.0, 0.9),
        ]);
        let costs: Vec<(f64, f64)> = curve.points.iter().map(|p| (p.cost, p.accuracy)).collect();
        assert_eq!(
            costs,
            [(1.0, 0.5), (2.0, 0.7), (2.0, 0.4), (3.0, 0.9), (4.0, 0.9)]
        );
        let front: Vec<(f64, f64)> = curve
            .frontier
            .iter()
            .map(|p| (p.cost, p.accuracy))
            .collect();
        assert_eq!(front, [(1.0, 0.5), (2.0, 0.7), (3.0, 0.9)]);
    }

    #[test]
    fn apgr_of_the_straight_line_is_one_half() {
        let curve = PgrCurve::new(pt(1.0, 0.4), pt(3.0, 0.8), &[pt(2.0, 0.6)]).expect("gap");
        assert!((curve.apgr() - 0.5).abs() < 1e-12);
        assert!((curve.cpt(0.5).expect("reached") - 0.5).abs() < 1e-12);
    }

    #[test]
    fn a_router_that_recovers_the_gap_early_scores_high() {
        // At a quarter of the cost span it already has 80 % of the gap.
        let curve = PgrCurve::new(pt(0.0, 0.5), pt(4.0, 0.9), &[pt(1.0, 0.82)]).expect("gap");
        // Area: ½·0.25·0.8 + 0.75·(0.8 + 1)/2.
        let expected = 0.5 * 0.25 * 0.8 + 0.75 * 1.8 / 2.0;
        assert!((curve.apgr() - expected).abs() < 1e-12);
        // PGR 0.5 is crossed inside the first segment: x = 0.25·0.5/0.8.
        assert!((curve.cpt(0.5).expect("reached") - 0.25 * 0.5 / 0.8).abs() < 1e-12);
        // PGR 0.9 inside the second: 0.25 + 0.75·(0.9 − 0.8)/0.2.
        assert!((curve.cpt(0.9).expect("reached") - (0.25 + 0.75 * 0.5)).abs() < 1e-12);
        assert_eq!(curve.cpt(1.5), None);
        assert_eq!(curve.cpt(0.0), Some(0.0));
    }

    #[test]
    fn cpt_takes_the_first_crossing_of_a_non_monotone_curve() {
        let curve = PgrCurve::new(
            pt(0.0, 0.0),
            pt(10.0, 1.0),
            &[pt(2.0, 0.6), pt(5.0, 0.3), pt(8.0, 0.7)],
        )
        .expect("gap");
        // 0.5 is first reached between x = 0 and x = 0.2.
        assert!((curve.cpt(0.5).expect("reached") - 0.2 * 0.5 / 0.6).abs() < 1e-12);
    }

    #[test]
    fn points_off_the_axis_are_ignored_and_equal_costs_keep_the_best() {
        let curve = PgrCurve::new(
            pt(1.0, 0.0),
            pt(2.0, 1.0),
            &[pt(0.5, 0.9), pt(2.5, 1.0), pt(1.5, 0.2), pt(1.5, 0.6)],
        )
        .expect("gap");
        assert_eq!(curve.knots, [(0.0, 0.0), (0.5, 0.6), (1.0, 1.0)]);
    }

    #[test]
    fn no_gap_or_no_cost_span_is_undefined() {
        assert!(PgrCurve::new(pt(1.0, 0.5), pt(2.0, 0.5), &[]).is_none());
        assert!(PgrCurve::new(pt(1.0, 0.5), pt(1.0, 0.9), &[]).is_none());
        assert!(PgrCurve::new(pt(f64::NAN, 0.5), pt(1.0, 0.9), &[]).is_none());
    }
}
