//! What the runs of many seeds say together: means with 95 % t intervals.
//!
//! Each seed is an independent replicate of the whole experiment (fresh tuning and scoring
//! draws), so a per-seed quantity is one observation and the interval is the Student t
//! interval of the across-seed mean, mean ± t_{0.975, k−1}·sd/√k over k seeds. Policies
//! are compared at matched cost: each frontier (with the never and always points added,
//! since a per-query coin can mix any policy with either) is read as its upper concave
//! envelope ([`reachable`]) at fixed cost levels, and the comparison is the per-seed
//! difference from the optimal policy at the same level, so the interval is of the paired
//! difference.

use serde::Serialize;

use super::falsify::WorldRun;
use super::scenario::Scenario;
use super::world::World;

/// The statement every interval in the study's JSON carries.
pub const INTERVAL: &str = "95% Student t interval of the across-seed mean (one value per seed)";

/// Cost levels of the matched-cost comparison, as fractions of the way from never
/// escalating (κT) to always escalating at t = 0 (γ).
pub const COST_FRACTIONS: [f64; 3] = [0.25, 0.4, 0.55];

/// A per-seed quantity over k seeds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Spread {
    pub mean: f64,
    /// Sample standard deviation across seeds (0 with one seed).
    pub sd: f64,
    pub seeds: usize,
    /// [lower, upper]; `None` with fewer than two seeds.
    pub ci95: Option<[f64; 2]>,
}

/// t_{0.975, df}: to 3 decimals from the table for df ≤ 9, from the Cornish–Fisher
/// expansion of the t quantile in the normal one beyond (error below 10⁻³ from df = 10,
/// shrinking as df⁻⁴).
pub fn t975(df: usize) -> f64 {
    const TABLE: [f64; 9] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262,
    ];
    if df == 0 {
        return f64::INFINITY;
    }
    if let Some(t) = TABLE.get(df - 1) {
        return *t;
    }
    let z: f64 = 1.959_963_985;
    let v = df as f64;
    let (z3, z5, z7) = (z.powi(3), z.powi(5), z.powi(7));
    z + (z3 + z) / (4.0 * v)
        + (5.0 * z5 + 16.0 * z3 + 3.0 * z) / (96.0 * v * v)
        + (3.0 * z7 + 19.0 * z5 + 17.0 * z3 - 15.0 * z) / (384.0 * v.powi(3))
}

impl Spread {
    /// The spread of `values` (non-finite values are kept out, and counted out of k).
    pub fn of(values: &[f64]) -> Spread {
        let v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
        let k = v.len();
        let mean = if k == 0 {
            f64::NAN
        } else {
            v.iter().sum::<f64>() / k as f64
        };
        let sd = if k < 2 {
            0.0
        } else {
            (v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (k - 1) as f64).sqrt()
        };
        let ci95 = (k >= 2).then(|| {
            let half = t975(k - 1) * sd / (k as f64).sqrt();
            [mean - half, mean + half]
        });
        Spread {
            mean,
            sd,
            seeds: k,
            ci95,
        }
    }
}

/// A policy's accuracy at one cost level, and its difference from the optimal policy's.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct MatchedCost {
    pub cost: f64,
    pub accuracy: Spread,
    pub minus_optimal: Spread,
}

/// One policy in one world, over seeds.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PolicySummary {
    pub name: String,
    /// The fewest distinct operating points strictly between never and always over seeds.
    pub operating_points: usize,
    /// Cost range of the first seed's operating points (`None` without any).
    pub cost_span: Option<[f64; 2]>,
    /// At the configured costs (swept policies at the setting chosen on tuning draws).
    pub accuracy: Spread,
    pub cost: Spread,
    pub escalation_rate: Spread,
    /// Objective (cost + L·wrong, senior loss in expectation) minus the optimal policy's.
    pub objective_minus_optimal: Spread,
    pub matched: Vec<MatchedCost>,
}

/// One world over seeds.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WorldSummary {
    pub name: String,
    pub scenario: Scenario,
    pub policies: Vec<PolicySummary>,
}

/// The falsification study: every world over every seed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Falsification {
    pub seeds: Vec<u64>,
    /// Scoring draws per seed and world.
    pub queries: usize,
    /// Tuning draws per seed and world.
    pub tuning_queries: usize,
    /// How every `ci95` was computed.
    pub interval: String,
    /// The matched-cost levels (compute cost per query).
    pub cost_levels: Vec<f64>,
    pub worlds: Vec<WorldSummary>,
}

/// The cost levels of [`COST_FRACTIONS`] in `world`.
pub fn cost_levels(world: &World) -> Vec<f64> {
    let never = world.costs.kappa * f64::from(world.horizon);
    let always = world.costs.route.gamma;
    COST_FRACTIONS
        .iter()
        .map(|f| never + f * (always - never))
        .collect()
}

/// The best accuracy reachable at no more than `cost` by the policies of `frontier` or by
/// a random mixture of two of them (per query, a coin chooses which one decides; the
/// mixture's cost and accuracy are the weighted means): the upper concave envelope of the
/// frontier at `cost`. `None` when every point costs more.
pub fn reachable(frontier: &[[f64; 2]], cost: f64) -> Option<f64> {
    let mut best: Option<f64> = None;
    let mut keep = |a: f64| best = Some(best.map_or(a, |b: f64| b.max(a)));
    for p in frontier {
        if p[0] <= cost + 1e-9 {
            keep(p[1]);
            for q in frontier.iter().filter(|q| q[0] > cost) {
                let w = (cost - p[0]) / (q[0] - p[0]);
                keep(p[1] + w * (q[1] - p[1]));
            }
        }
    }
    best
}

/// How far `point` = (cost, accuracy) is above what `frontier` reaches at no more cost
/// ([`reachable`]): ≤ 0 when the frontier dominates the point; +∞ when nothing is cheap
/// enough.
pub fn shortfall(frontier: &[[f64; 2]], point: [f64; 2]) -> f64 {
    reachable(frontier, point[0]).map_or(f64::INFINITY, |a| point[1] - a)
}

/// Best accuracy of `name` at no more than `cost` in `run`, never and always included.
pub fn accuracy_at(run: &WorldRun, name: &str, cost: f64) -> Option<f64> {
    let mut frontier: Vec<[f64; 2]> = Vec::new();
    for anchor in ["never", "always", name] {
        if let Some(p) = run.policy(anchor) {
            frontier.extend(p.sweep.iter().map(|q| [q.cost, q.accuracy]));
        }
    }
    reachable(&frontier, cost)
}

/// Summarises the runs of one scenario (one per seed, all of the same policies).
pub fn summarise(world: &World, runs: &[WorldRun]) -> Option<WorldSummary> {
    let first = runs.first()?;
    let levels = cost_levels(world);
    let per_seed = |f: &dyn Fn(&WorldRun) -> Option<f64>| {
        Spread::of(
            &runs
                .iter()
                .map(|r| f(r).unwrap_or(f64::NAN))
                .collect::<Vec<_>>(),
        )
    };
    let optimal_objective = |r: &WorldRun| r.policy("optimal").map(|p| p.at_costs.objective);
    let policies = first
        .policies
        .iter()
        .map(|p| {
            let name = p.name.as_str();
            let at = |f: fn(&super::policies::PolicyPoint) -> f64| {
                per_seed(&|r| r.policy(name).map(|q| f(&q.at_costs)))
            };
            let matched = levels
                .iter()
                .map(|&c| MatchedCost {
                    cost: c,
                    accuracy: per_seed(&|r| accuracy_at(r, name, c)),
                    minus_optimal: per_seed(&|r| {
                        Some(accuracy_at(r, name, c)? - accuracy_at(r, "optimal", c)?)
                    }),
                })
                .collect();
            PolicySummary {
                name: name.to_string(),
                operating_points: runs
                    .iter()
                    .filter_map(|r| r.policy(name).map(|q| q.operating_points()))
                    .min()
                    .unwrap_or(0),
                cost_span: p.cost_span(),
                accuracy: at(|q| q.accuracy),
                cost: at(|q| q.cost),
                escalation_rate: at(|q| q.escalation_rate),
                objective_minus_optimal: per_seed(&|r| {
                    Some(r.policy(name)?.at_costs.objective - optimal_objective(r)?)
                }),
                matched,
            }
        })
        .collect();
    Some(WorldSummary {
        name: first.scenario.name(),
        scenario: first.scenario,
        policies,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn t_quantiles_and_intervals() {
        assert!((t975(19) - 2.093).abs() < 1e-3, "{}", t975(19));
        assert!((t975(5) - 2.571).abs() < 1e-3, "{}", t975(5));
        assert!((t975(10) - 2.228).abs() < 1e-3, "{}", t975(10));
        assert!((t975(100) - 1.984).abs() < 1e-3, "{}", t975(100));
        let s = Spread::of(&[1.0, 2.0, 3.0]);
        assert_eq!(s.mean, 2.0);
        assert_eq!(s.sd, 1.0);
        let [lo, hi] = s.ci95.expect("interval");
        assert!((hi - 2.0 - 4.303 / 3f64.sqrt()).abs() < 1e-9 && (lo + hi - 4.0).abs() < 1e-12);
        assert_eq!(Spread::of(&[5.0]).ci95, None);
        assert_eq!(Spread::of(&[5.0, f64::NAN]).seeds, 1);
    }
}
