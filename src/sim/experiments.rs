//! The three experiments of the study: the cost–accuracy frontier of every policy, the
//! effect of "confidently wrong" contamination, and the sample complexity of a learned
//! judge.

use std::collections::BTreeMap;

use indicatif::ProgressBar;

use super::SimError;
use super::policies::{PolicyPoint, first_below, posthoc, raw_signal_rule, score};
use super::report::{ContaminationRow, Params, SampleRow, Slope, Study, log_log_slope};
use super::world::{BeliefPaths, Draws, World};
use crate::competence::law::DEFAULT_LAW_ATOMS;
use crate::competence::{
    Belief, Calibration, DpSpec, FitOptions, LlrLaw, MapKind, Observation, StopCosts, fit, myopic,
    solve,
};

/// Random streams: the main draws, the evaluation set, and one per training set.
const MAIN_STREAM: u64 = 0;
const EVAL_STREAM: u64 = 1;
const TRAIN_STREAM: u64 = 100;

/// What to run.
#[derive(Debug, Clone, PartialEq)]
pub struct StudyOptions {
    pub seed: u64,
    pub queries: usize,
    /// Contamination rates ρ.
    pub rhos: Vec<f64>,
    /// Training-set sizes n of the sample-complexity experiment.
    pub sample_sizes: Vec<usize>,
    /// Test queries of the sample-complexity experiment (at most `queries`).
    pub eval_queries: usize,
    /// Independent training sets per n, averaged (one fit is a noisy measurement).
    pub repeats: usize,
}

impl Default for StudyOptions {
    fn default() -> Self {
        StudyOptions {
            seed: 1,
            queries: 40_000,
            rhos: vec![0.0, 0.1, 0.3],
            sample_sizes: vec![50, 100, 200, 500, 1000, 2000, 5000],
            eval_queries: 10_000,
            repeats: 4,
        }
    }
}

/// The grid of the threshold sweeps (τ and θ from 0 to 1).
fn unit_sweep() -> impl Iterator<Item = f64> {
    (0..=50).map(|i| f64::from(i) / 50.0)
}

/// Losses L swept to trace the frontiers of the cost-aware policies: from "never worth
/// escalating" to "accuracy at almost any price", geometric.
fn loss_sweep(costs: &StopCosts) -> Vec<f64> {
    let low = 0.2 * costs.route.gamma.max(costs.kappa).max(1e-6);
    let high = 500.0 * low;
    let steps = 60;
    (0..=steps)
        .map(|i| low * (high / low).powf(f64::from(i) / f64::from(steps)))
        .collect()
}

/// Histogram bins for a judge fitted on n trajectories: growing like √n, so that the
/// discretisation bias of the histogram shrinks at the same 1/√n rate as its variance
/// (with fixed bins the belief error would stall at the bias of the bins).
pub fn bins_for(n: usize) -> usize {
    ((n as f64).sqrt().round() as usize).clamp(4, 200)
}

/// How the sample-complexity judges are fitted. The identity map, not Platt: this world
/// meets the belief's assumption exactly (signals independent given Y), so the tempered
/// sum is already the posterior, and the error measured is that of the learned
/// likelihoods, which is what the 1/√n claim is about. (Platt's smoothed targets,
/// (N₊+1)/(N₊+2) with N₊ counted in sessions, cap the belief near 1 − 1/N₊ and so add an
/// O(1/n) shrinkage that dominates below a few hundred sessions.)
fn fit_options(n: usize) -> FitOptions {
    FitOptions {
        bins: bins_for(n),
        map: MapKind::Identity,
        ..FitOptions::default()
    }
}

/// The optimal schedule τ*_t for the given costs under a per-tick law.
fn optimal_tau(law: &LlrLaw, costs: StopCosts, horizon: u32) -> Result<Vec<f64>, SimError> {
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

fn with_loss(costs: StopCosts, loss: f64) -> StopCosts {
    StopCosts { loss, ..costs }
}

/// The policy that minimises the objective among a sweep's points (ties: the first).
fn best(points: &[PolicyPoint]) -> Option<PolicyPoint> {
    points
        .iter()
        .min_by(|a, b| a.objective.total_cmp(&b.objective))
        .cloned()
}

fn frontier(points: &[PolicyPoint]) -> Vec<[f64; 2]> {
    points.iter().map(|p| [p.cost, p.accuracy]).collect()
}

/// Belief paths of `draws` under a fitted calibration (what a learned judge would show).
pub fn learned_beliefs(world: &World, draws: &Draws, calibration: &Calibration) -> BeliefPaths {
    let mut belief = Belief::new(calibration.clone());
    let width = draws.horizon + 1;
    let mut paths = Vec::with_capacity(draws.queries.len() * width);
    for q in &draws.queries {
        belief.reset();
        paths.push(belief.belief());
        for t in 1..=draws.horizon {
            belief.start_tick();
            for (s, v) in world.signals.iter().zip(q.tick(t, draws.signals)) {
                belief.add(Observation {
                    signal: s.signal,
                    value: *v,
                });
            }
            paths.push(belief.belief());
        }
    }
    BeliefPaths::new(width, paths)
}

/// Fits a judge on `n` fresh labelled trajectories and measures it on `eval`: the mean
/// |B̂_t − B_t| over queries and ticks, and the objective of the DP policy it would deploy
/// (its own schedule, solved on its own learned law).
fn learned_judge(
    world: &World,
    n: usize,
    seed: u64,
    stream: u64,
    eval: &Draws,
    truth: &BeliefPaths,
) -> Result<(f64, f64), SimError> {
    let train = world.draw(seed, stream, n, 0.0)?;
    let trajectories: Vec<_> = train.queries.iter().map(|q| q.trajectory(world)).collect();
    let (calibration, _) =
        fit(&trajectories, &fit_options(n)).map_err(|e| SimError::Invalid(e.to_string()))?;
    let learned = learned_beliefs(world, eval, &calibration);
    let mut error = 0.0;
    for i in 0..eval.queries.len() {
        for (a, b) in learned.path(i).iter().zip(truth.path(i)) {
            error += (a - b).abs();
        }
    }
    let belief_error = error / (eval.queries.len() * (eval.horizon + 1)) as f64;
    let tau = optimal_tau(
        &calibration.token_law(DEFAULT_LAW_ATOMS),
        world.costs,
        world.horizon,
    )?;
    let deployed = score(world, eval, "learned", |i| {
        first_below(learned.path(i), |t| tau[t])
    });
    Ok((belief_error, deployed.objective))
}

/// Runs the whole study.
pub fn run(
    world: &World,
    options: &StudyOptions,
    progress: &ProgressBar,
) -> Result<Study, SimError> {
    world.validate()?;
    if options.queries == 0 {
        return Err(SimError::Invalid(
            "the study needs at least one query".into(),
        ));
    }
    let costs = world.costs;
    let law = world.llr_law()?;
    let sweep_len = 2 * 61 + options.rhos.len() + options.sample_sizes.len() + 1;
    progress.set_length(sweep_len as u64);

    let draws = world.draw(options.seed, MAIN_STREAM, options.queries, 0.0)?;
    let paths = draws.true_beliefs(world);
    let y = |i: usize| draws.queries[i].success;
    progress.inc(1);

    let mut policies = vec![
        score(world, &draws, "never", |_| None),
        score(world, &draws, "always", |_| Some(0)),
        score(world, &draws, "oracle", |i| (!y(i)).then_some(0)),
    ];
    let mut frontiers = BTreeMap::new();

    let posthoc_sweep: Vec<PolicyPoint> = unit_sweep()
        .map(|tau| score(world, &draws, "posthoc", |i| posthoc(&paths, i, tau)))
        .collect();
    let fixed_sweep: Vec<PolicyPoint> = unit_sweep()
        .map(|theta| {
            score(world, &draws, "fixed_rule", |i| {
                raw_signal_rule(world, &draws, i, theta)
            })
        })
        .collect();
    let constant_sweep: Vec<PolicyPoint> = unit_sweep()
        .map(|tau| {
            score(world, &draws, "constant", |i| {
                first_below(paths.path(i), |_| tau)
            })
        })
        .collect();
    let mut myopic_sweep = Vec::new();
    let mut optimal_sweep = Vec::new();
    for loss in loss_sweep(&costs) {
        let c = with_loss(costs, loss);
        let h = u64::from(world.horizon);
        myopic_sweep.push(score(world, &draws, "myopic", |i| {
            first_below(paths.path(i), |t| myopic(&c, h, t as u64))
        }));
        progress.inc(1);
        let tau = optimal_tau(&law, c, world.horizon)?;
        optimal_sweep.push(score(world, &draws, "optimal", |i| {
            first_below(paths.path(i), |t| tau[t])
        }));
        progress.inc(1);
    }
    // The swept baselines at their best setting for the configured costs (tuned on the
    // very draws they are scored on: generous to them); myopic and optimal at the
    // configured costs.
    for sweep in [&posthoc_sweep, &fixed_sweep, &constant_sweep] {
        policies.extend(best(sweep));
    }
    let h = u64::from(world.horizon);
    policies.push(score(world, &draws, "myopic", |i| {
        first_below(paths.path(i), |t| myopic(&costs, h, t as u64))
    }));
    let tau = optimal_tau(&law, costs, world.horizon)?;
    policies.push(score(world, &draws, "optimal", |i| {
        first_below(paths.path(i), |t| tau[t])
    }));
    for (name, sweep) in [
        ("posthoc", &posthoc_sweep),
        ("fixed_rule", &fixed_sweep),
        ("constant", &constant_sweep),
        ("myopic", &myopic_sweep),
        ("optimal", &optimal_sweep),
    ] {
        frontiers.insert(name.to_string(), frontier(sweep));
    }

    let mut contamination = Vec::new();
    for &rho in &options.rhos {
        let dirty = world.draw(options.seed, MAIN_STREAM, options.queries, rho)?;
        let dirty_paths = dirty.true_beliefs(world);
        let p = score(world, &dirty, "optimal", |i| {
            first_below(dirty_paths.path(i), |t| tau[t])
        });
        contamination.push(ContaminationRow {
            rho,
            accuracy: p.accuracy,
            escalation_rate: p.escalation_rate,
        });
        progress.inc(1);
    }

    let eval_n = options.eval_queries.clamp(1, options.queries);
    let eval = world.draw(options.seed, EVAL_STREAM, eval_n, 0.0)?;
    let eval_paths = eval.true_beliefs(world);
    let truth = score(world, &eval, "optimal", |i| {
        first_below(eval_paths.path(i), |t| tau[t])
    });
    let mut sample_complexity = Vec::new();
    let repeats = options.repeats.max(1);
    for (k, &n) in options.sample_sizes.iter().enumerate() {
        let (mut belief_error, mut regret) = (0.0, 0.0);
        for r in 0..repeats {
            let stream = TRAIN_STREAM + (k * 64 + r) as u64;
            let (e, g) = learned_judge(world, n, options.seed, stream, &eval, &eval_paths)?;
            belief_error += e / repeats as f64;
            regret += (g - truth.objective) / repeats as f64;
        }
        sample_complexity.push(SampleRow {
            n,
            belief_error,
            regret,
        });
        progress.inc(1);
    }
    let points = |f: fn(&SampleRow) -> f64| -> Vec<(f64, f64)> {
        sample_complexity
            .iter()
            .map(|r| (r.n as f64, f(r)))
            .collect()
    };
    let slope = Slope {
        belief_error: log_log_slope(&points(|r| r.belief_error)),
        regret: log_log_slope(&points(|r| r.regret)),
    };
    Ok(Study {
        params: Params {
            seed: options.seed,
            queries: options.queries,
            world: world.clone(),
            eval_queries: eval_n,
        },
        policies,
        frontiers,
        contamination,
        sample_complexity,
        slope,
    })
}
