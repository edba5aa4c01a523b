//! The study's results as one JSON object and as aligned tables.

use std::collections::BTreeMap;
use std::fmt::Write;

use serde::Serialize;

use super::across_seeds::Falsification;
pub use super::across_seeds::{reachable, shortfall};
use super::policies::PolicyPoint;
use super::rate::Rate;
pub use super::rate::SampleRow;
use super::world::World;

/// Everything `handoff simulate` reports; serialises to the documented JSON object.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Study {
    pub params: Params,
    /// One point per policy at the configured costs, nominal world, first seed (swept policies
    /// at the setting chosen on tuning draws, scored on fresh ones).
    pub policies: Vec<PolicyPoint>,
    /// (cost, accuracy) for every setting of every swept policy, by policy name (nominal
    /// world, first seed).
    pub frontiers: BTreeMap<String, Vec<[f64; 2]>>,
    pub contamination: Vec<ContaminationRow>,
    pub sample_complexity: Vec<SampleRow>,
    pub slope: Slope,
    /// Every policy in every world, over seeds, with intervals.
    pub falsification: Falsification,
    /// The sample-complexity rates over seeds.
    pub rate: Rate,
}

/// The parameters a run used (enough to reproduce it).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Params {
    pub seed: u64,
    pub queries: usize,
    pub world: World,
    /// Queries the learned beliefs are evaluated on in the sample-complexity experiment.
    pub eval_queries: usize,
}

/// The optimal policy (true nominal likelihoods) when a fraction ρ of the failing queries
/// draws its signals from the success law.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ContaminationRow {
    pub rho: f64,
    pub accuracy: f64,
    pub escalation_rate: f64,
}

/// The first seed's rates, every point in: the log–log slope of the belief error, and the
/// exponent of a raw-scale power law fitted to the regret (which can be ≤ 0).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Slope {
    pub belief_error: Option<f64>,
    pub regret_power: Option<f64>,
}

fn optional(v: Option<f64>, digits: usize) -> String {
    v.map_or_else(|| "-".to_string(), |x| format!("{x:.digits$}"))
}

impl Study {
    /// Aligned plain-text tables.
    pub fn to_table(&self) -> String {
        let mut out = String::new();
        let w = &self.params.world;
        let c = &w.costs;
        let _ = writeln!(
            out,
            "world: {} queries, T = {}, π₀ = {}, κ = {}, γ = {}, p_S = {}, L = {}, seed {}\n",
            self.params.queries,
            w.horizon,
            w.prior,
            c.kappa,
            c.route.gamma,
            c.route.p_success,
            c.loss,
            self.params.seed
        );
        let _ = writeln!(
            out,
            "{:<12} {:>9} {:>8} {:>11} {:>15}",
            "policy", "accuracy", "cost", "escalation", "mean esc. tick"
        );
        for p in &self.policies {
            let _ = writeln!(
                out,
                "{:<12} {:>8.1}% {:>8.3} {:>10.1}% {:>15}",
                p.name,
                100.0 * p.accuracy,
                p.cost,
                100.0 * p.escalation_rate,
                optional(p.mean_escalation_tick, 1)
            );
        }
        let _ = writeln!(out, "\ncontamination (optimal policy, nominal likelihoods)");
        let _ = writeln!(out, "{:>6} {:>9} {:>11}", "ρ", "accuracy", "escalation");
        for r in &self.contamination {
            let _ = writeln!(
                out,
                "{:>6.2} {:>8.1}% {:>10.1}%",
                r.rho,
                100.0 * r.accuracy,
                100.0 * r.escalation_rate
            );
        }
        let _ = writeln!(
            out,
            "\nsample complexity (judge fitted on n labelled trajectories, {} test queries)",
            self.params.eval_queries
        );
        let _ = writeln!(out, "{:>6} {:>14} {:>10}", "n", "E|B̂ − B|", "regret");
        for r in &self.sample_complexity {
            let _ = writeln!(
                out,
                "{:>6} {:>14.4} {:>10.4}",
                r.n, r.belief_error, r.regret
            );
        }
        let _ = writeln!(
            out,
            "log–log slope of the belief error {}; raw-scale power exponent of the regret {}",
            optional(self.slope.belief_error, 3),
            optional(self.slope.regret_power, 3)
        );
        out.push_str(&super::seed_tables::falsification(&self.falsification));
        out.push_str(&super::seed_tables::rate(&self.rate));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shortfall_allows_mixtures_but_not_dearer_points() {
        let f = [[1.0, 0.6], [2.0, 0.9], [3.0, 0.95]];
        // At cost 2.5 a half-half mixture of the last two reaches 0.925.
        assert!((shortfall(&f, [2.5, 0.93]) - 0.005).abs() < 1e-12);
        assert!(shortfall(&f, [3.0, 0.95]) <= 0.0);
        // At cost 1.5: mixing (1, 0.6) and (2, 0.9) gives 0.75.
        assert!((reachable(&f, 1.5).expect("reachable") - 0.75).abs() < 1e-12);
        assert_eq!(shortfall(&f, [0.5, 0.1]), f64::INFINITY);
    }
}
