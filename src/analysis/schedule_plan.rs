//! `handoff schedule`: a threshold schedule planned on the process it controls, and its
//! prediction checked against what its policy costs on held-out logs.
//!
//! From junior shadow logs (and, where they exist, the senior's own logs of the same
//! tasks) it
//! 1. reads every session at its decision points ([`super::schedule_paths`]);
//! 2. splits the tasks into folds by a hash of the task id (every session of a task on one
//!    side); for each fold, on the other folds' sessions it estimates the step-clock
//!    process ([`StepProcess`]: kernel of the calibrated belief, hazard of the session's
//!    end, tokens per step, how sessions ended), the route's success rate p and cost γ
//!    from the senior's logged outcomes and tokens (the configured ones without senior
//!    logs), solves the step DP, and picks a constant τ by off-policy evaluation (the
//!    lowest realised cost on the same training sessions), and a second one under a
//!    conformal risk constraint (the cheapest τ among those whose conformal bound on the
//!    share of missed failures — a junior failure reaching the user un-escalated — is at
//!    most α, [`crate::metrics::conformal`]);
//! 3. replays both on the held-out fold's sessions and sets the realised mean cost (95 %
//!    bootstrap interval over tasks) beside the V₀ the process predicted;
//! 4. with a calibration, also replays the token-clock DP `threshold = "optimal"` runs
//!    today (the calibration's histogram law over the token budget), beside its own V₀;
//! 5. fits the process and the schedule once more on every session: the schedule written.

use std::collections::BTreeMap;

use serde::Serialize;
use sha2::{Digest, Sha256};

use super::cascade::SeniorRun;
use super::replay::rescore;
use super::schedule_paths::{BeliefSource, RouteOutcome, SessionPath, realised_cost, session_path};
use crate::competence::{
    CompetenceError, Ending, Judge, ProcessOptions, StepCosts, StepProcess, StepSchedule,
    schedule_value, solve_steps,
};
use crate::config::Config;
use crate::metrics::{Forecast, Interval, bootstrap, risk_controlling};
use crate::protocol::Event;

/// Knobs of [`plan`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PlanOptions {
    /// Task folds for cross-fitting (each fold held out once).
    pub folds: usize,
    pub max_bins: usize,
    pub min_per_bin: usize,
    /// [`ProcessOptions::shrink`].
    pub shrink: f64,
    /// Constant thresholds the off-policy search chooses among.
    pub taus: Vec<f64>,
    /// Senior tokens × this = junior-token equivalents (γ = κ · ratio · senior tokens).
    pub ratio: f64,
    /// α of the conformal constraint: the tolerated share of sessions whose junior failure
    /// reaches the user un-escalated.
    pub risk: f64,
}

impl Default for PlanOptions {
    fn default() -> Self {
        let p = ProcessOptions::default();
        PlanOptions {
            folds: 5,
            max_bins: p.max_bins,
            min_per_bin: p.min_per_bin,
            shrink: p.shrink,
            taus: (0..=100).map(|i| f64::from(i) / 100.0).collect(),
            ratio: 1.54 / 0.49,
            risk: 0.1,
        }
    }
}

/// The route as estimated from training sessions.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct RouteEstimate {
    pub p_success: f64,
    pub gamma: f64,
    /// Tasks with a senior log the estimate rests on (0: the configured p and γ).
    pub senior_tasks: usize,
}

/// One policy's prediction and realisation on held-out sessions.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PolicyScore {
    pub policy: String,
    /// Mean V₀ its plan predicted for the held-out sessions (none for plain baselines).
    pub predicted: Option<f64>,
    /// Mean realised cost, 95 % interval over tasks.
    pub realised: Interval,
    /// Realised − predicted, 95 % interval over tasks.
    pub gap: Option<Interval>,
    pub escalation_rate: f64,
    pub accuracy: f64,
    /// Share of held-out sessions whose junior failure was not escalated (the conformal
    /// constraint's risk).
    pub missed: f64,
}

/// The conformally constrained constant τ and the bound that certified it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct RiskChoice {
    pub alpha: f64,
    /// The cheapest certified τ; the largest candidate when none is certified.
    pub tau: f64,
    /// n/(n+1) · missed share + 1/(n+1) at the smallest certified τ; `None`: no τ is.
    pub bound: Option<f64>,
}

/// What `handoff schedule` found; `--json` prints exactly this.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PlanReport {
    pub sessions: usize,
    /// Sessions left out: no label, or no decision point.
    pub skipped: usize,
    pub tasks_with_senior: usize,
    pub folds: usize,
    pub kappa: f64,
    pub loss: f64,
    pub policies: Vec<PolicyScore>,
    /// Fitted on every session: what is written.
    pub process: StepProcess,
    pub route: RouteEstimate,
    /// Where p and γ came from.
    pub route_source: String,
    pub costs: StepCosts,
    pub schedule: StepSchedule,
    /// The constant τ the off-policy search picks on every session.
    pub ope_tau: f64,
    /// The same search under the conformal risk constraint, on every session.
    pub risk: RiskChoice,
    pub options: PlanOptions,
}

/// A session with the senior's own run of the same task, when logged.
struct Task {
    id: String,
    session: SessionPath,
    senior: Option<SeniorRun>,
}

fn fold_of(task: &str, folds: usize) -> usize {
    let digest = Sha256::digest(format!("fold\0{task}").as_bytes());
    let mut bytes = [0u8; 8];
    bytes.copy_from_slice(&digest[..8]);
    (u64::from_be_bytes(bytes) % folds.max(1) as u64) as usize
}

fn route_estimate(train: &[&Task], config: &Config, ratio: f64) -> RouteEstimate {
    let seniors: Vec<&SeniorRun> = train.iter().filter_map(|t| t.senior.as_ref()).collect();
    if seniors.is_empty() {
        let c = crate::judge::stop_costs(config);
        return RouteEstimate {
            p_success: c.route.p_success,
            gamma: c.route.gamma,
            senior_tasks: 0,
        };
    }
    let n = seniors.len() as f64;
    RouteEstimate {
        p_success: seniors.iter().filter(|s| s.passed).count() as f64 / n,
        gamma: config.costs.kappa * ratio * seniors.iter().map(|s| s.output as f64).sum::<f64>()
            / n,
        senior_tasks: seniors.len(),
    }
}

/// The route on one task: its own senior run where logged, the estimate otherwise.
fn route_on(task: &Task, estimate: &RouteEstimate, kappa: f64, ratio: f64) -> RouteOutcome {
    match &task.senior {
        Some(s) => RouteOutcome {
            gamma: kappa * ratio * s.output as f64,
            p_success: f64::from(u8::from(s.passed)),
        },
        None => RouteOutcome {
            gamma: estimate.gamma,
            p_success: estimate.p_success,
        },
    }
}

struct Fitted {
    process: StepProcess,
    route: RouteEstimate,
    costs: StepCosts,
    schedule: StepSchedule,
    ope_tau: f64,
    risk: RiskChoice,
}

/// The junior failed and no escalation came first: the loss the conformal constraint bounds.
fn missed_failure(s: &SessionPath, escalated: bool) -> bool {
    !escalated && matches!(s.path.ending, Ending::Finished(false))
}

fn fit(
    train: &[&Task],
    config: &Config,
    options: &PlanOptions,
    fixed_route: Option<RouteEstimate>,
) -> Result<Fitted, CompetenceError> {
    let paths: Vec<_> = train.iter().map(|t| t.session.path.clone()).collect();
    let process = StepProcess::estimate(
        &paths,
        ProcessOptions {
            max_bins: options.max_bins,
            min_per_bin: options.min_per_bin,
            shrink: options.shrink,
        },
    )?;
    let route = fixed_route.unwrap_or_else(|| route_estimate(train, config, options.ratio));
    let (kappa, loss) = (config.costs.kappa, config.costs.loss);
    let costs = StepCosts {
        kappa,
        loss,
        escalate: route.gamma + loss * (1.0 - route.p_success),
    };
    let schedule = solve_steps(&process, &costs)?;
    // (τ, summed cost, sessions whose failure was missed) for every candidate, once.
    let replayed: Vec<(f64, f64, usize)> = options
        .taus
        .iter()
        .map(|&tau| {
            train.iter().fold((tau, 0.0, 0), |(tau, cost, missed), t| {
                let r = route_on(t, &route, kappa, options.ratio);
                let (c, escalated) = realised_cost(&t.session, &[tau], kappa, loss, r);
                let m = usize::from(missed_failure(&t.session, escalated));
                (tau, cost + c, missed + m)
            })
        })
        .collect();
    let cheapest = |from: f64| {
        replayed
            .iter()
            .filter(|r| r.0 >= from)
            .min_by(|a, b| a.1.total_cmp(&b.1))
            .map(|r| r.0)
    };
    let ope_tau = cheapest(f64::NEG_INFINITY).unwrap_or(0.0);
    let n = train.len();
    let missed_share = replayed.iter().map(|r| (r.0, r.2 as f64 / n.max(1) as f64));
    let certified = risk_controlling(missed_share, n, options.risk);
    let largest = options.taus.iter().copied().fold(0.0, f64::max);
    let risk = RiskChoice {
        alpha: options.risk,
        tau: certified
            .and_then(|(from, _)| cheapest(from))
            .unwrap_or(largest),
        bound: certified.map(|(_, b)| b),
    };
    Ok(Fitted {
        process,
        route,
        costs,
        schedule,
        ope_tau,
        risk,
    })
}

/// One held-out task under one policy.
#[derive(Debug, Clone, Copy)]
struct Row {
    cost: f64,
    escalated: bool,
    /// The chance the task ended correct.
    correct: f64,
    predicted: Option<f64>,
    missed: bool,
}
type Outcomes = Vec<Row>;

impl Row {
    fn new(
        s: &SessionPath,
        (cost, escalated): (f64, bool),
        route: RouteOutcome,
        predicted: Option<f64>,
    ) -> Row {
        Row {
            cost,
            escalated,
            correct: passes(s, escalated, route),
            predicted,
            missed: missed_failure(s, escalated),
        }
    }
}

/// Today's token-clock plan (`threshold = "optimal"`) for a route (`None`: the configured
/// one): its judge and the V₀ it predicts.
pub type TokenClock<'a> = &'a dyn Fn(Option<&RouteEstimate>) -> Result<(Judge, f64), String>;

/// Cross-fits and scores the schedules over the paired logs; see the module docs.
/// `source` says where beliefs come from; `token_clock` builds today's token-clock plan
/// for comparison; `fixed_route` (the outcomes after a `step` hand-back,
/// [`super::schedule_returns`]) replaces the senior-alone route everywhere when given.
pub fn plan(
    juniors: &BTreeMap<String, Vec<Event>>,
    seniors: &BTreeMap<String, Vec<Event>>,
    config: &Config,
    source: &BeliefSource,
    token_clock: Option<TokenClock>,
    fixed_route: Option<RouteEstimate>,
    options: &PlanOptions,
) -> Result<PlanReport, CompetenceError> {
    let mut tasks = Vec::new();
    let mut skipped = 0;
    for (id, events) in juniors {
        match session_path(events, source) {
            Some(s) if !s.path.beliefs.is_empty() => tasks.push(Task {
                id: id.clone(),
                session: s,
                senior: if fixed_route.is_some() {
                    None
                } else {
                    seniors.get(id).map(SeniorRun::from_events)
                },
            }),
            _ => skipped += 1,
        }
    }
    let folds = options.folds.clamp(2, tasks.len().max(2));
    let (kappa, loss) = (config.costs.kappa, config.costs.loss);
    let conformal = format!("constant τ (conformal, miss ≤ {})", options.risk);
    let names = [
        "step DP (planned on logs)",
        "constant τ (off-policy)",
        conformal.as_str(),
        "never",
        "always",
    ];
    let mut outcomes: Vec<Outcomes> = vec![Vec::new(); names.len() + 2];
    let clock = |r: Option<&RouteEstimate>| -> Result<Option<(Judge, f64)>, CompetenceError> {
        token_clock
            .map(|f| f(r).map_err(CompetenceError::Invalid))
            .transpose()
    };
    let configured = clock(None)?;
    for fold in 0..folds {
        let (held, train): (Vec<&Task>, Vec<&Task>) =
            tasks.iter().partition(|t| fold_of(&t.id, folds) == fold);
        if held.is_empty() || train.is_empty() {
            continue;
        }
        let f = fit(&train, config, options, fixed_route)?;
        let estimated = clock(Some(&f.route))?;
        let ope_predicted = schedule_value(&f.process, &f.costs, &[f.ope_tau])?;
        let risk_predicted = schedule_value(&f.process, &f.costs, &[f.risk.tau])?;
        let plans: [(Vec<f64>, Option<f64>); 5] = [
            (f.schedule.tau.clone(), Some(f.schedule.value)),
            (vec![f.ope_tau], Some(ope_predicted)),
            (vec![f.risk.tau], Some(risk_predicted)),
            (vec![0.0], None),
            (vec![1.0], None),
        ];
        for t in &held {
            let route = route_on(t, &f.route, kappa, options.ratio);
            for (i, (tau, predicted)) in plans.iter().enumerate() {
                let replayed = realised_cost(&t.session, tau, kappa, loss, route);
                outcomes[i].push(Row::new(&t.session, replayed, route, *predicted));
            }
            for (i, c) in [&configured, &estimated].into_iter().enumerate() {
                if let Some((judge, v0)) = c {
                    let replayed =
                        token_clock_cost(juniors, t, judge.clone(), config, kappa, loss, route);
                    outcomes[names.len() + i].push(Row::new(
                        &t.session,
                        replayed,
                        route,
                        Some(*v0),
                    ));
                }
            }
        }
    }
    let mut policies: Vec<PolicyScore> = names
        .iter()
        .zip(&outcomes)
        .map(|(name, o)| score(name, o))
        .collect();
    if token_clock.is_some() {
        policies.push(score(
            "token-clock DP, configured route",
            &outcomes[names.len()],
        ));
        policies.push(score(
            "token-clock DP, route from logs",
            &outcomes[names.len() + 1],
        ));
    }
    let all: Vec<&Task> = tasks.iter().collect();
    let f = fit(&all, config, options, fixed_route)?;
    Ok(PlanReport {
        sessions: tasks.len(),
        skipped,
        tasks_with_senior: tasks.iter().filter(|t| t.senior.is_some()).count(),
        folds,
        kappa,
        loss,
        policies,
        process: f.process,
        route_source: match (fixed_route, f.route.senior_tasks) {
            (Some(_), _) => "outcomes after a step hand-back".to_string(),
            (None, 0) => "as configured".to_string(),
            (None, n) => format!("from {n} senior logs"),
        },
        route: f.route,
        costs: f.costs,
        schedule: f.schedule,
        ope_tau: f.ope_tau,
        risk: f.risk,
        options: options.clone(),
    })
}

/// The chance the task ended correct: the junior's own result, or the route's (its
/// logged outcome, or its estimated rate where the senior was not logged).
fn passes(s: &SessionPath, escalated: bool, route: RouteOutcome) -> f64 {
    if escalated {
        route.p_success
    } else {
        f64::from(u8::from(matches!(s.path.ending, Ending::Finished(true))))
    }
}

/// The realised cost of the token-clock judge: its first escalation (at any token or step
/// end, as it runs live), or the session's own end.
fn token_clock_cost(
    juniors: &BTreeMap<String, Vec<Event>>,
    task: &Task,
    judge: Judge,
    config: &Config,
    kappa: f64,
    loss: f64,
    route: RouteOutcome,
) -> (f64, bool) {
    let events = juniors.get(&task.id).map_or(&[][..], Vec::as_slice);
    let r = rescore(events.iter(), judge, config.policy.cooldown_steps);
    let s = &task.session;
    let loop_tick = match s.path.ending {
        Ending::HandedOff => s.ticks.last().copied(),
        Ending::Finished(_) => None,
    };
    let first = r.escalations.first().copied();
    match (first, loop_tick) {
        (Some(t), l) if l.is_none_or(|l| t <= l) => (
            kappa * t as f64 + route.gamma + loss * (1.0 - route.p_success),
            true,
        ),
        _ => realised_cost(s, &[0.0], kappa, loss, route),
    }
}

fn score(name: &str, outcomes: &Outcomes) -> PolicyScore {
    let n = outcomes.len().max(1) as f64;
    // Each held-out task is its own group; a Forecast carries one task's number in `p`.
    let groups = |f: &dyn Fn(&Row) -> f64| -> Vec<Vec<Forecast>> {
        outcomes
            .iter()
            .map(|o| vec![Forecast::new(f(o), false)])
            .collect()
    };
    let mean = |fs: &[Forecast]| {
        (!fs.is_empty()).then(|| fs.iter().map(|f| f.p).sum::<f64>() / fs.len() as f64)
    };
    let nan = Interval {
        estimate: f64::NAN,
        lower: f64::NAN,
        upper: f64::NAN,
    };
    let realised = bootstrap(&groups(&|o| o.cost), mean, RESAMPLES, SEED).unwrap_or(nan);
    let predicted_all = outcomes.iter().all(|o| o.predicted.is_some()) && !outcomes.is_empty();
    let predicted =
        predicted_all.then(|| outcomes.iter().filter_map(|o| o.predicted).sum::<f64>() / n);
    let gap = predicted_all
        .then(|| {
            bootstrap(
                &groups(&|o| o.cost - o.predicted.unwrap_or(0.0)),
                mean,
                RESAMPLES,
                SEED,
            )
        })
        .flatten();
    PolicyScore {
        policy: name.to_string(),
        predicted,
        realised,
        gap,
        escalation_rate: outcomes.iter().filter(|o| o.escalated).count() as f64 / n,
        accuracy: outcomes.iter().map(|o| o.correct).sum::<f64>() / n,
        missed: outcomes.iter().filter(|o| o.missed).count() as f64 / n,
    }
}

/// Bootstrap resamples of every interval, and their seed.
pub const RESAMPLES: usize = 2000;
pub const SEED: u64 = 15;

impl PlanReport {
    /// The report as plain text for a terminal.
    pub fn to_text(&self) -> String {
        use std::fmt::Write as _;
        let mut s = String::new();
        let p = &self.process;
        let _ = writeln!(
            s,
            "{} sessions ({} left out: no label or no decision point), {} with the senior's own \
             log; {} task folds; κ {}, L {}",
            self.sessions, self.skipped, self.tasks_with_senior, self.folds, self.kappa, self.loss
        );
        let _ = writeln!(
            s,
            "process on every session: {} belief bins, {} transitions, horizon {} decision \
             points, mean tokens per step {:.1}",
            p.centres.len(),
            p.transitions,
            p.horizon(),
            p.tokens.iter().sum::<f64>() / p.tokens.len().max(1) as f64
        );
        let _ = writeln!(
            s,
            "route: p {:.3}, γ {:.4} ({}); E = γ + L(1 − p) = {:.4}",
            self.route.p_success, self.route.gamma, self.route_source, self.costs.escalate
        );
        let hazard: Vec<String> = p.hazard.iter().map(|h| format!("{h:.2}")).collect();
        let _ = writeln!(s, "hazard of the end h_k: {}", hazard.join(" "));
        let by_bin: Vec<String> = p
            .centres
            .iter()
            .zip(&p.end_rate)
            .map(|(c, r)| format!("{c:.2}:{r:.2}"))
            .collect();
        let _ = writeln!(
            s,
            "share of decision points that were the last, by belief bin (centre:share): {}",
            by_bin.join(" ")
        );
        let tau: Vec<String> = self
            .schedule
            .tau
            .iter()
            .map(|t| format!("{t:.3}"))
            .collect();
        let _ = writeln!(
            s,
            "step schedule τ_k: {}  (V₀ {:.4}; off-policy constant τ {:.2}; {} decision points \
             with a non-interval escalation set)",
            tau.join(" "),
            self.schedule.value,
            self.ope_tau,
            self.schedule.not_interval
        );
        let r = &self.risk;
        let _ = match r.bound {
            Some(b) => writeln!(
                s,
                "conformal constraint (missed failures ≤ α {}): τ {:.2}, bound {:.4} on {} sessions",
                r.alpha, r.tau, b, self.sessions
            ),
            None => writeln!(
                s,
                "conformal constraint (missed failures ≤ α {}): no τ certified on {} sessions \
                 (the bound needs n ≥ 1/α − 1 and a τ that misses few enough); τ {:.2}, the largest",
                r.alpha, self.sessions, r.tau
            ),
        };
        let _ = writeln!(
            s,
            "\nheld out (each task once, planned on the other folds):\n  {:<38} {:>9}  {:>26}  \
             {:>26}  {:>6}  {:>6}  {:>6}",
            "policy",
            "predicted",
            "realised [95% CI]",
            "realised − predicted",
            "esc.",
            "acc.",
            "miss"
        );
        let ci = |i: &Interval| format!("{:.4} [{:.4}, {:.4}]", i.estimate, i.lower, i.upper);
        for q in &self.policies {
            let _ = writeln!(
                s,
                "  {:<38} {:>9}  {:>26}  {:>26}  {:>5.0}%  {:>6.3}  {:>6.3}",
                q.policy,
                q.predicted.map_or("-".into(), |v| format!("{v:.4}")),
                ci(&q.realised),
                q.gap.as_ref().map_or("-".into(), ci),
                100.0 * q.escalation_rate,
                q.accuracy,
                q.missed
            );
        }
        s
    }
}

#[cfg(test)]
#[path = "schedule_plan_tests.rs"]
mod tests;
