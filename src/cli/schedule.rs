//! `handoff schedule`: plan the step-clock threshold schedule on logged shadow sessions and
//! check its predicted cost against held-out logs.

use std::path::PathBuf;

use anyhow::Context;

use super::args::{Globals, JsonArg};
use super::output::{Shape, emit, warn_all};
use crate::analysis::cascade_sweep;
use crate::analysis::replay::{judge_for, load_events};
use crate::analysis::schedule_paths::BeliefSource;
use crate::analysis::schedule_plan::{PlanOptions, RouteEstimate, TokenClock, plan};
use crate::analysis::schedule_returns::{Returns, session_return, summarise};
use crate::competence::Judge;
use crate::config::{RouteMode, ThresholdKind};
use crate::exit::{Exit, bad_input};
use crate::judge::{load_calibration, token_clock_schedule};
use crate::log::log_files;

#[derive(clap::Args)]
pub struct Args {
    /// Eval output directories (or log directories) of the junior in shadow mode.
    #[arg(long, required = true, num_args = 1..)]
    junior: Vec<PathBuf>,
    /// Eval output directories (or log directories) of the senior alone on the same tasks:
    /// p and γ of the route from its outcomes and tokens (else the configured ones).
    #[arg(long, num_args = 1..)]
    senior: Vec<PathBuf>,
    /// The calibration whose beliefs are planned on (else the config's).
    #[arg(long, value_name = "FILE")]
    calibration: Option<PathBuf>,
    /// Plan on the beliefs the logs show instead of re-scoring them.
    #[arg(long)]
    logged_beliefs: bool,
    /// Task folds for cross-fitting.
    #[arg(long, default_value_t = 5)]
    folds: usize,
    /// Most belief bins of the process (fewer when there are under 25 logged beliefs a bin).
    #[arg(long, default_value_t = 12)]
    bins: usize,
    /// Pseudo-counts pulling the per-step kernel and the per-bin hazard of the end toward
    /// their pooled versions (0: raw counts; a large value: pooled over steps and beliefs).
    #[arg(long, default_value_t = crate::competence::step_process::DEFAULT_SHRINK)]
    shrink: f64,
    /// Senior tokens × this = junior-token equivalents (default 1.54 B / 0.49 B).
    #[arg(long)]
    ratio: Option<f64>,
    /// α of the conformal constraint: the share of sessions whose junior failure may reach
    /// the user un-escalated, in expectation on a new session like the logged ones.
    #[arg(long, default_value_t = 0.1)]
    risk: f64,
    /// Live logs run with `handoff = "step"`: plan with the rate at which sessions whose
    /// senior handed control back ended correct, and the compute they spent from the
    /// hand-off on, instead of the senior alone's.
    #[arg(long, value_name = "DIR", num_args = 1..)]
    returns: Vec<PathBuf>,
    /// Write the schedule fitted on every session (JSON) to this file.
    #[arg(long, value_name = "FILE")]
    write: Option<PathBuf>,
    #[command(flatten)]
    json: JsonArg,
}

pub fn run(args: Args, globals: &Globals) -> anyhow::Result<Exit> {
    let mut config = globals.load()?;
    if let Some(path) = &args.calibration {
        config.policy.calibration = Some(path.clone());
    }
    if args.bins == 0 {
        return Err(bad_input(anyhow::anyhow!("--bins must be at least 1")));
    }
    if args.shrink.is_nan() || args.shrink < 0.0 {
        return Err(bad_input(anyhow::anyhow!(
            "--shrink must be 0 or more, got {}",
            args.shrink
        )));
    }
    let mut options = PlanOptions {
        folds: args.folds,
        max_bins: args.bins,
        shrink: args.shrink,
        ..PlanOptions::default()
    };
    if let Some(r) = args.ratio {
        if !(r.is_finite() && r > 0.0) {
            return Err(bad_input(anyhow::anyhow!(
                "--ratio must be a positive number, got {r}"
            )));
        }
        options.ratio = r;
    }
    if !(args.risk > 0.0 && args.risk < 1.0) {
        return Err(bad_input(anyhow::anyhow!(
            "--risk must be in (0, 1), got {}",
            args.risk
        )));
    }
    options.risk = args.risk;
    if args.folds < 2 {
        return Err(bad_input(anyhow::anyhow!(
            "--folds must be at least 2, got {}",
            args.folds
        )));
    }
    let (juniors, junior_skipped) = cascade_sweep::load_logs(&args.junior).map_err(bad_input)?;
    let (seniors, senior_skipped) = if args.senior.is_empty() {
        Default::default()
    } else {
        cascade_sweep::load_logs(&args.senior).map_err(bad_input)?
    };
    warn_all(&junior_skipped);
    warn_all(&senior_skipped);
    let returns = returns_summary(&args.returns)?;
    let fixed_route = returns.as_ref().map(|r| RouteEstimate {
        p_success: r.passed.estimate,
        gamma: config.costs.kappa
            * (r.mean_junior_tokens_after + options.ratio * r.mean_senior_tokens_after),
        senior_tasks: 0,
    });
    if let Some(r) = &returns {
        eprintln!(
            "after a step hand-back: {} sessions, {:.3} [{:.3}, {:.3}] passed, {:.1} junior steps \
             after it on average, {} handed off again",
            r.sessions,
            r.passed.estimate,
            r.passed.lower,
            r.passed.upper,
            r.mean_junior_steps_after,
            r.escalated_again
        );
    }
    let calibration = if args.logged_beliefs {
        None
    } else {
        Some(load_calibration(&config).map_err(bad_input)?)
    };
    let source = match &calibration {
        None => BeliefSource::Logged,
        Some(_) => {
            let mut plain = config.clone();
            plain.policy.threshold = ThresholdKind::Constant;
            BeliefSource::Rescored(Box::new(judge_for(&plain).map_err(bad_input)?))
        }
    };
    let clock = |route: Option<&RouteEstimate>| -> Result<(Judge, f64), String> {
        let calibration = calibration
            .as_ref()
            .ok_or_else(|| "no calibration".to_string())?;
        let mut optimal = config.clone();
        optimal.policy.threshold = ThresholdKind::Optimal;
        if let Some(r) = route {
            optimal.policy.route = RouteMode::Senior;
            optimal.costs.p_senior = r.p_success;
            optimal.costs.gamma_senior = r.gamma;
        }
        let v0 = token_clock_schedule(&optimal, calibration)
            .map_err(|e| e.to_string())?
            .value_at(calibration.prior);
        let judge = judge_for(&optimal).map_err(|e| e.to_string())?;
        Ok((judge, v0))
    };
    // A calibration the token clock cannot plan for (a feature model) gets no token-clock
    // plan beside the step DP.
    let token_clock: Option<TokenClock> = calibration
        .as_ref()
        .is_some_and(|c| c.token_clock_refusal().is_none())
        .then_some(&clock as TokenClock);
    let report = plan(
        &juniors,
        &seniors,
        &config,
        &source,
        token_clock,
        fixed_route,
        &options,
    )
    .map_err(bad_input)?;
    if let Some(path) = &args.write {
        let json = serde_json::to_string_pretty(&serde_json::json!({
            "clock": "junior step ends",
            "tau": report.schedule.tau,
            "predicted_v0": report.schedule.value,
            "off_policy_tau": report.ope_tau,
            "conformal": report.risk,
            "costs": report.costs,
            "route": report.route,
            "process": report.process,
        }))
        .context("encoding the schedule")?;
        std::fs::write(path, json + "\n").with_context(|| format!("writing {}", path.display()))?;
    }
    emit(args.json.json, Shape::Document, &report, || {
        report.to_text()
    })?;
    Ok(Exit::Success)
}

/// The outcomes after a step hand-back in the live logs under `inputs` (none given: none).
fn returns_summary(inputs: &[PathBuf]) -> anyhow::Result<Option<Returns>> {
    if inputs.is_empty() {
        return Ok(None);
    }
    let (files, errors) = log_files(inputs);
    warn_all(&errors.iter().map(ToString::to_string).collect::<Vec<_>>());
    let mut returns = Vec::new();
    for file in files {
        let (events, warnings) = load_events(&file).map_err(bad_input)?;
        warn_all(&warnings.iter().map(ToString::to_string).collect::<Vec<_>>());
        let events: Vec<_> = events.into_iter().map(|s| s.event).collect();
        returns.extend(session_return(&events));
    }
    match summarise(&returns) {
        Some(r) => Ok(Some(r)),
        None => Err(bad_input(anyhow::anyhow!(
            "--returns: no labelled session in which the senior handed control back"
        ))),
    }
}
