//! One seed of one world: every policy, swept and at the configured costs.
//!
//! Two independent sets of draws are made: *tuning* draws, on which each swept baseline's
//! threshold grid is placed ([`Crossing::grid`]) and its best setting for the configured
//! costs is chosen, and *scoring* draws, on which every point is measured. So no baseline
//! is tuned on the queries it is scored on. The belief-based policies read the judge's
//! belief of the scenario, σ(ℓ₀ + Λ̂_t); the DP and myopic schedules are planned once, on
//! the nominal law, whatever the scenario (that is the misspecification being tested).
//!
//! The policies: `never`, `always`, `oracle` (knows Y); swept on thresholds —
//! `posthoc` (finish, then escalate if B_T < τ), `fixed_rule`, `running_mean` and `cumsum`
//! (label-free, [`super::baselines`]), `sprt` (Wald's lower boundary on the judge's summed
//! llr Λ̂_t; the upper boundary, "accept and stop watching", saves nothing here because
//! watching is free, so it is left out), `constant` (B_t < τ); swept on L — `myopic` and
//! `optimal` (the DP schedule τ*_t). `sprt` is `constant` reparameterised (B_t < τ exactly
//! when Λ̂_t < logit τ − ℓ₀), so the two trace the same frontier up to their grids: the best
//! constant threshold *is* Wald's test with one boundary.

use serde::Serialize;

use super::SimError;
use super::baselines::{cumulative_sum, fixed_rule, running_mean};
use super::crossing::Crossing;
use super::policies::{PolicyPoint, first_below, score};
use super::scenario::Scenario;
use super::world::{BeliefPaths, Draws, World};
use crate::competence::calibrator::sigmoid;
use crate::competence::{DpSpec, LlrLaw, StopCosts, myopic, solve};

/// Thresholds per swept baseline beyond "never" (quantiles of its statistic).
pub const GRID_POINTS: usize = 100;
/// Terminal thresholds τ_T = p_S − γ/L the DP and myopic frontiers are traced at (L from
/// τ_T, evenly spaced in (0, p_S)): an even sweep in L leaves the DP's frontier with a few
/// clustered points, because nearly all of its range lies in a narrow band of L.
const SCHEDULE_POINTS: usize = 60;

/// Streams of the two draw sets (apart from the main study's and the training sets').
const TUNING_STREAM: u64 = 2;
const SCORING_STREAM: u64 = 3;

/// The DP and myopic schedules, planned once for all seeds and scenarios.
#[derive(Debug, Clone, PartialEq)]
pub struct Planned {
    /// (L, τ*_t for t = 0..=T) along the sweep.
    pub optimal: Vec<(f64, Vec<f64>)>,
    pub myopic: Vec<(f64, Vec<f64>)>,
    /// At the configured costs.
    pub optimal_at_costs: Vec<f64>,
    pub myopic_at_costs: Vec<f64>,
}

/// The losses of the schedule sweep.
pub fn schedule_losses(costs: &StopCosts) -> Vec<f64> {
    let p = costs.route.p_success;
    (1..SCHEDULE_POINTS)
        .map(|j| {
            let tau_end = p * j as f64 / SCHEDULE_POINTS as f64;
            costs.route.gamma.max(1e-9) / (p - tau_end)
        })
        .collect()
}

/// The optimal schedule τ*_t, t = 0..=T, for the given costs under a per-tick law (every
/// tick a decision tick, as the simulated policies decide).
pub fn optimal_tau(law: &LlrLaw, costs: StopCosts, horizon: u32) -> Result<Vec<f64>, SimError> {
    let spec = DpSpec {
        costs,
        horizon: u64::from(horizon),
        grid_points: 1001,
        stride: 1,
    };
    Ok(solve(law, &spec)
        .map_err(|e| SimError::Invalid(e.to_string()))?
        .tau)
}

impl Planned {
    /// Solves the DP on `law` (the world's nominal law) and the myopic rule along
    /// [`schedule_losses`].
    pub fn new(world: &World, law: &LlrLaw) -> Result<Self, SimError> {
        let solve = |law: &LlrLaw, c: StopCosts| optimal_tau(law, c, world.horizon);
        let h = u64::from(world.horizon);
        let myopic_tau = |c: &StopCosts| (0..=h).map(|t| myopic(c, h, t)).collect::<Vec<_>>();
        let mut optimal = Vec::new();
        let mut myopic_sweep = Vec::new();
        for loss in schedule_losses(&world.costs) {
            let c = StopCosts {
                loss,
                ..world.costs
            };
            optimal.push((loss, solve(law, c)?));
            myopic_sweep.push((loss, myopic_tau(&c)));
        }
        Ok(Planned {
            optimal,
            myopic: myopic_sweep,
            optimal_at_costs: solve(law, world.costs)?,
            myopic_at_costs: myopic_tau(&world.costs),
        })
    }
}

/// One policy of one run: every setting of its sweep, and its point at the configured costs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PolicyRun {
    pub name: String,
    pub sweep: Vec<PolicyPoint>,
    pub at_costs: PolicyPoint,
}

impl PolicyRun {
    /// Distinct (cost, accuracy) points strictly between never and always escalating.
    pub fn operating_points(&self) -> usize {
        let mut seen: Vec<(i64, i64)> = self
            .sweep
            .iter()
            .filter(|p| p.escalation_rate > 0.0 && p.escalation_rate < 1.0)
            .map(|p| {
                (
                    (p.cost * 1e9).round() as i64,
                    (p.accuracy * 1e9).round() as i64,
                )
            })
            .collect();
        seen.sort_unstable();
        seen.dedup();
        seen.len()
    }

    /// The cheapest and dearest of those points: how much of the cost axis the sweep
    /// itself covers (the rest is reached only by mixing with never or always).
    pub fn cost_span(&self) -> Option<[f64; 2]> {
        let costs = self
            .sweep
            .iter()
            .filter(|p| p.escalation_rate > 0.0 && p.escalation_rate < 1.0)
            .map(|p| p.cost);
        let lo = costs.clone().fold(f64::INFINITY, f64::min);
        let hi = costs.fold(f64::NEG_INFINITY, f64::max);
        (lo <= hi).then_some([lo, hi])
    }
}

/// Every policy on one seed of one scenario.
#[derive(Debug, Clone, PartialEq)]
pub struct WorldRun {
    pub scenario: Scenario,
    pub seed: u64,
    /// `never`, `always`, `oracle`, then the swept policies in report order.
    pub policies: Vec<PolicyRun>,
}

impl WorldRun {
    pub fn policy(&self, name: &str) -> Option<&PolicyRun> {
        self.policies.iter().find(|p| p.name == name)
    }
}

/// What a run is made of.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RunSize {
    pub queries: usize,
    pub tuning_queries: usize,
}

/// The statistics of one set of draws that the swept baselines threshold.
struct Statistics {
    beliefs: BeliefPaths,
    rules: Vec<(&'static str, Crossing)>,
}

fn statistics(world: &World, scenario: &Scenario, draws: &Draws) -> Statistics {
    let llr = scenario.judge_llr(world, draws);
    let l0 = world.prior_log_odds();
    let n = draws.queries.len();
    let h = draws.horizon;
    // Thresholds on the belief are placed on its log-odds ℓ₀ + Λ̂_t, the same rule
    // (σ is increasing) without the ties of beliefs that round to exactly 0 or 1.
    let log_odds = |q: usize, t: usize| l0 + llr.path(q)[t];
    let rules = vec![
        ("posthoc", Crossing::new(n, h, h, log_odds)),
        ("fixed_rule", fixed_rule(world, draws)),
        ("running_mean", running_mean(world, draws)),
        ("cumsum", cumulative_sum(world, draws)),
        ("sprt", Crossing::new(n, 0, h, |q, t| llr.path(q)[t])),
        ("constant", Crossing::new(n, 0, h, log_odds)),
    ];
    let mut paths = Vec::with_capacity(n * (h + 1));
    for q in 0..n {
        paths.extend(llr.path(q).iter().map(|l| sigmoid(l0 + l)));
    }
    Statistics {
        beliefs: BeliefPaths::new(h + 1, paths),
        rules,
    }
}

/// Runs every policy on `seed` of `scenario`.
pub fn run_world(
    world: &World,
    scenario: &Scenario,
    planned: &Planned,
    seed: u64,
    size: RunSize,
) -> Result<WorldRun, SimError> {
    let tune = scenario.draw(world, seed, TUNING_STREAM, size.tuning_queries.max(1))?;
    let main = scenario.draw(world, seed, SCORING_STREAM, size.queries.max(1))?;
    let tune_stats = statistics(world, scenario, &tune);
    let main_stats = statistics(world, scenario, &main);
    let y = |i: usize| main.queries[i].success;
    let fixed = |name: &str, decide: &dyn Fn(usize) -> Option<usize>| {
        let p = score(world, &main, name, decide);
        PolicyRun {
            name: name.to_string(),
            sweep: vec![p.clone()],
            at_costs: p,
        }
    };
    let mut policies = vec![
        fixed("never", &|_| None),
        fixed("always", &|_| Some(0)),
        fixed("oracle", &|i| (!y(i)).then_some(0)),
    ];
    for ((name, tuned), (_, scored)) in tune_stats.rules.iter().zip(&main_stats.rules) {
        let grid = tuned.grid(GRID_POINTS);
        let sweep: Vec<PolicyPoint> = grid
            .iter()
            .map(|&theta| score(world, &main, name, |i| scored.tick(i, theta)))
            .collect();
        let best = grid
            .iter()
            .map(|&theta| {
                let p = score(world, &tune, name, |i| tuned.tick(i, theta));
                (theta, p.objective)
            })
            .min_by(|a, b| a.1.total_cmp(&b.1))
            .map_or(f64::NEG_INFINITY, |(theta, _)| theta);
        policies.push(PolicyRun {
            name: name.to_string(),
            sweep,
            at_costs: score(world, &main, name, |i| scored.tick(i, best)),
        });
    }
    let beliefs = &main_stats.beliefs;
    for (name, sweep, at_costs) in [
        ("myopic", &planned.myopic, &planned.myopic_at_costs),
        ("optimal", &planned.optimal, &planned.optimal_at_costs),
    ] {
        let run = |tau: &[f64]| {
            score(world, &main, name, |i| {
                first_below(beliefs.path(i), |t| {
                    crate::competence::threshold::schedule_at(tau, t)
                })
            })
        };
        policies.push(PolicyRun {
            name: name.to_string(),
            sweep: sweep.iter().map(|(_, tau)| run(tau)).collect(),
            at_costs: run(at_costs),
        });
    }
    Ok(WorldRun {
        scenario: *scenario,
        seed,
        policies,
    })
}
