//! The experiments of the study, over seeds: every policy in every world of the
//! falsification study ([`super::falsify`]), the effect of "confidently wrong"
//! contamination on the optimal policy (first seed), and the sample complexity of a learned
//! judge.

use std::collections::BTreeMap;

use indicatif::ProgressBar;

use super::SimError;
use super::across_seeds::{Falsification, INTERVAL, cost_levels, summarise};
use super::falsify::{Planned, RunSize, WorldRun, optimal_tau, run_world};
use super::policies::{PolicyPoint, first_below, score};
use super::rate::{Rate, log_log_slope, power_fit};
use super::report::{ContaminationRow, Params, SampleRow, Slope, Study};
use super::scenario::Scenario;
use super::world::{BeliefPaths, Draws, World};
use crate::competence::law::DEFAULT_LAW_ATOMS;
use crate::competence::{Belief, Calibration, FitOptions, MapKind, Observation, fit};

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
    /// Seeds `seed`, `seed + 1`, …: every experiment but contamination is repeated on each,
    /// and the study reports across-seed means with t intervals.
    pub seeds: usize,
    /// Draws per seed and world on which swept baselines are tuned (scored on `queries`
    /// fresh ones).
    pub tuning_queries: usize,
    /// The worlds of the falsification study.
    pub scenarios: Vec<Scenario>,
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
            seeds: 1,
            tuning_queries: 10_000,
            scenarios: Scenario::standard(),
        }
    }
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

/// The sample-complexity experiment on one seed: belief error and regret per n.
fn sample_complexity(
    world: &World,
    options: &StudyOptions,
    seed: u64,
    tau: &[f64],
    progress: &ProgressBar,
) -> Result<Vec<SampleRow>, SimError> {
    let eval_n = options.eval_queries.clamp(1, options.queries);
    let eval = world.draw(seed, EVAL_STREAM, eval_n, 0.0)?;
    let eval_paths = eval.true_beliefs(world);
    let truth = score(world, &eval, "optimal", |i| {
        first_below(eval_paths.path(i), |t| tau[t])
    });
    let mut rows = Vec::new();
    let repeats = options.repeats.max(1);
    for (k, &n) in options.sample_sizes.iter().enumerate() {
        let (mut belief_error, mut regret) = (0.0, 0.0);
        for r in 0..repeats {
            let stream = TRAIN_STREAM + (k * 64 + r) as u64;
            let (e, g) = learned_judge(world, n, seed, stream, &eval, &eval_paths)?;
            belief_error += e / repeats as f64;
            regret += (g - truth.objective) / repeats as f64;
        }
        rows.push(SampleRow {
            n,
            belief_error,
            regret,
        });
        progress.inc(1);
    }
    Ok(rows)
}

/// (n, y) pairs of one seed's rows.
fn points(rows: &[SampleRow], f: fn(&SampleRow) -> f64) -> Vec<(f64, f64)> {
    rows.iter().map(|r| (r.n as f64, f(r))).collect()
}

/// The seeds of a run: `seed`, `seed + 1`, … (`seeds` of them, at least one).
pub fn seed_list(options: &StudyOptions) -> Vec<u64> {
    (0..options.seeds.max(1) as u64)
        .map(|k| options.seed.wrapping_add(k))
        .collect()
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
    let law = world.llr_law()?;
    let seeds = seed_list(options);
    let scenarios = &options.scenarios;
    progress.set_length(
        (1 + options.rhos.len() + seeds.len() * (scenarios.len() + options.sample_sizes.len()))
            as u64,
    );
    let planned = Planned::new(world, &law)?;
    progress.inc(1);
    let size = RunSize {
        queries: options.queries,
        tuning_queries: options.tuning_queries,
    };
    let mut runs: Vec<Vec<WorldRun>> = vec![Vec::new(); scenarios.len()];
    let mut samples: Vec<Vec<SampleRow>> = Vec::new();
    for &seed in &seeds {
        for (k, scenario) in scenarios.iter().enumerate() {
            runs[k].push(run_world(world, scenario, &planned, seed, size)?);
            progress.inc(1);
        }
        samples.push(sample_complexity(
            world,
            options,
            seed,
            &planned.optimal_at_costs,
            progress,
        )?);
    }

    // The single-seed tables: the nominal world on the first seed.
    let nominal = runs
        .iter()
        .flatten()
        .find(|r| r.scenario == Scenario::Nominal && r.seed == options.seed);
    let policies = nominal.map_or_else(Vec::new, |r| {
        r.policies.iter().map(|p| p.at_costs.clone()).collect()
    });
    let frontiers: BTreeMap<String, Vec<[f64; 2]>> = nominal.map_or_else(BTreeMap::new, |r| {
        r.policies
            .iter()
            .filter(|p| p.sweep.len() > 1)
            .map(|p| (p.name.clone(), frontier(&p.sweep)))
            .collect()
    });

    let tau = &planned.optimal_at_costs;
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

    let sample_complexity = samples.first().cloned().unwrap_or_default();
    let slope = Slope {
        belief_error: log_log_slope(&points(&sample_complexity, |r| r.belief_error)),
        regret_power: power_fit(&points(&sample_complexity, |r| r.regret)).map(|f| f.exponent),
    };
    let rate = Rate::of(&samples, options.sample_sizes.len());
    let falsification = Falsification {
        seeds: seeds.clone(),
        queries: options.queries,
        tuning_queries: options.tuning_queries,
        interval: INTERVAL.to_string(),
        cost_levels: cost_levels(world),
        worlds: runs.iter().filter_map(|r| summarise(world, r)).collect(),
    };
    Ok(Study {
        params: Params {
            seed: options.seed,
            queries: options.queries,
            world: world.clone(),
            eval_queries: options.eval_queries.clamp(1, options.queries),
        },
        policies,
        frontiers,
        contamination,
        sample_complexity,
        slope,
        falsification,
        rate,
    })
}
