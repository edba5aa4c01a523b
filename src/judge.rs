//! The judge as configured: the calibration file, the threshold policy over the token
//! budget and the route's costs, built once here and used live (the agent loop), in
//! replay, `calibrate` and `eval` alike.
//!
//! `competence` is pure and knows nothing of events or files; this is the one place that
//! reads a calibration file, picks the threshold policy from config, turns readings into
//! events, and remembers which evidence moved the belief most in the current step (the
//! "why" of an escalation).

use crate::competence::{
    Calibration, Judge, Observation, OptimalSchedule, Reading, RouteCost, StepFacts, StopCosts,
    Threshold, TokenSignals,
};
use crate::config::{Config, ModelConfig, RouteMode, ThresholdKind};
use crate::protocol::{Alternative, EscalationReason, Event, EvidenceTerm, Route, SignalKind};

#[derive(Debug, thiserror::Error)]
pub enum JudgeError {
    /// A calibration or step schedule file that is missing, not a regular file, too large
    /// or not text (see [`crate::infile`]).
    #[error("{0}")]
    File(#[from] crate::infile::InputFileError),
    #[error("calibration file {path}: {message}")]
    Calibration { path: String, message: String },
    /// Kept typed so a caller can tell "this calibration has no token law" (a feature
    /// model) from a failed solve.
    #[error("cannot solve the optimal threshold schedule: {0}")]
    Schedule(#[source] crate::competence::CompetenceError),
    #[error("step schedule {path}: {message}")]
    StepSchedule { path: String, message: String },
}

/// The largest calibration or step schedule file read (both are a few KB).
pub const MAX_FILE_BYTES: u64 = 16 << 20;

/// The τ_k of the step schedule file `policy.step_schedule` names (`handoff schedule
/// --write`): its `tau` array, each in [0, 1].
pub fn load_step_schedule(config: &Config) -> Result<Vec<f64>, JudgeError> {
    let Some(path) = &config.policy.step_schedule else {
        return Err(JudgeError::StepSchedule {
            path: "(none)".into(),
            message: "threshold = \"steps\" needs policy.step_schedule, the file `handoff schedule --write FILE` writes".into(),
        });
    };
    let shown = path.display().to_string();
    let bad = |message: String| JudgeError::StepSchedule {
        path: shown.clone(),
        message,
    };
    let text = crate::infile::read_text(path, MAX_FILE_BYTES, "a step schedule JSON file")?;
    let value: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| bad(format!("line {}, column {}: {e}", e.line(), e.column())))?;
    let taus = value["tau"]
        .as_array()
        .ok_or_else(|| bad("expected a \"tau\" array of numbers in [0, 1]".into()))?;
    let taus: Vec<f64> = taus
        .iter()
        .enumerate()
        .map(|(i, t)| {
            t.as_f64()
                .filter(|t| (0.0..=1.0).contains(t))
                .ok_or_else(|| bad(format!("tau[{i}] = {t}: expected a number in [0, 1]")))
        })
        .collect::<Result<_, _>>()?;
    if taus.is_empty() {
        return Err(bad(
            "\"tau\" is empty: one τ per junior step end expected".into()
        ));
    }
    Ok(taus)
}

/// Junior tokens per step the schedule plans with (a step ends on a tick with probability
/// 1/100), used to mix step evidence into the per-tick law.
const TOKENS_PER_STEP: f64 = 100.0;

/// The judge of one session, with what the agent needs around it.
#[derive(Debug, Clone)]
pub struct SessionJudge {
    judge: Judge,
    policy: &'static str,
    shadow_route: Route,
    /// Summed llr and last value per signal over the current step.
    step_llr: [f64; SignalKind::ALL.len()],
    step_value: [f64; SignalKind::ALL.len()],
    /// The last step has ended: its terms stay the "why" of a handoff decided right after
    /// it, and are cleared by the next evidence.
    step_ended: bool,
    no_logprobs_noted: bool,
}

impl SessionJudge {
    pub fn new(
        calibration: Calibration,
        threshold: Threshold,
        policy: &'static str,
        shadow_route: Route,
    ) -> SessionJudge {
        SessionJudge {
            judge: Judge::new(calibration, threshold),
            policy,
            shadow_route,
            step_llr: [0.0; SignalKind::ALL.len()],
            step_value: [0.0; SignalKind::ALL.len()],
            step_ended: false,
            no_logprobs_noted: false,
        }
    }

    /// The judge a config asks for: its calibration file (or the built-in prior), and its
    /// threshold policy over the token budget, with the costs of the configured route(s).
    pub fn from_config(config: &Config) -> Result<SessionJudge, JudgeError> {
        SessionJudge::with_calibration(config, load_calibration(config)?)
    }

    /// The judge a config asks for, under a calibration already in hand (`calibrate` has
    /// just fitted one; `replay` re-scores a log under one).
    pub fn with_calibration(
        config: &Config,
        calibration: Calibration,
    ) -> Result<SessionJudge, JudgeError> {
        let costs = stop_costs(config);
        let horizon = config.agent.token_budget;
        let threshold = match config.policy.threshold {
            ThresholdKind::Constant => Threshold::Constant(config.policy.constant),
            ThresholdKind::Myopic => Threshold::Myopic { costs, horizon },
            ThresholdKind::Optimal => token_clock_schedule(config, &calibration)?.into_threshold(),
            ThresholdKind::Steps => Threshold::Steps(load_step_schedule(config)?),
        };
        let shadow_route = match config.policy.route {
            RouteMode::Operator => Route::Operator,
            _ => Route::Senior,
        };
        Ok(SessionJudge::new(
            calibration,
            threshold,
            config.policy.threshold.name(),
            shadow_route,
        ))
    }

    /// The judge itself, for re-scoring logged evidence with exactly the live rules.
    pub fn judge(&self) -> &Judge {
        &self.judge
    }

    pub fn policy_name(&self) -> &'static str {
        self.policy
    }

    /// [`calibration_mismatch`] of this judge's calibration.
    pub fn calibration_mismatch(&self, junior: &ModelConfig) -> Option<String> {
        calibration_mismatch(self.judge.calibration(), junior)
    }

    pub fn prior(&self) -> f64 {
        self.judge.calibration().prior
    }
    pub fn tick(&self) -> u64 {
        self.judge.tick()
    }
    pub fn belief(&self) -> f64 {
        self.judge.belief()
    }
    pub fn threshold(&self) -> f64 {
        self.judge.threshold()
    }
    /// The evidence terms added by the last observation.
    pub fn last_terms(&self) -> &[EvidenceTerm] {
        self.judge.terms()
    }

    /// One junior output token.
    pub fn token(&mut self, text: &str, logprob: Option<f64>, top: &[Alternative]) -> Reading {
        let signals = TokenSignals::from_alternatives(text, logprob, top);
        self.new_step_if_ended();
        self.judge.observe_token(&signals);
        self.remember_terms();
        self.judge.reading()
    }

    /// The facts of a finished junior step — the always-logged ones and the present sparse
    /// ones (`sparse`, see [`SignalKind::is_sparse`]); the step's "why" starts afresh with
    /// the next evidence (an escalation decided on this step still names them).
    pub fn step(&mut self, facts: &StepFacts, sparse: &[SignalKind]) -> Reading {
        self.new_step_if_ended();
        self.judge.observe_step(facts);
        for &signal in sparse.iter().filter(|s| s.is_sparse()) {
            self.judge.observe(Observation { signal, value: 1.0 });
        }
        self.remember_terms();
        self.step_ended = true;
        self.judge.reading()
    }

    fn new_step_if_ended(&mut self) {
        if self.step_ended {
            self.step_llr = [0.0; SignalKind::ALL.len()];
            self.step_ended = false;
        }
    }

    /// Back to the prior (new information, or after the senior's step); the clock runs on.
    pub fn reset(&mut self) {
        self.judge.reset();
        self.step_llr = [0.0; SignalKind::ALL.len()];
        self.step_ended = false;
    }

    /// The server sends no logprobs: token evidence is absent, step evidence remains.
    pub fn note_no_logprobs(&mut self) {
        self.no_logprobs_noted = true;
    }

    /// Up to three signals that pulled the belief down most in the current step.
    pub fn why(&self) -> Vec<EvidenceTerm> {
        let mut terms: Vec<EvidenceTerm> = SignalKind::ALL
            .iter()
            .enumerate()
            .filter(|(i, _)| self.step_llr[*i] < 0.0)
            .map(|(i, s)| EvidenceTerm {
                signal: *s,
                value: self.step_value[i],
                llr: self.step_llr[i],
            })
            .collect();
        terms.sort_by(|a, b| a.llr.total_cmp(&b.llr));
        terms.truncate(3);
        terms
    }

    /// The `BeliefUpdated` event for a reading, with the terms just added.
    pub fn belief_event(&self, reading: &Reading) -> Event {
        Event::BeliefUpdated {
            tick: reading.tick,
            belief: reading.belief,
            log_odds: reading.log_odds,
            threshold: reading.threshold,
            policy: self.policy.to_string(),
            terms: self.judge.terms().to_vec(),
        }
    }

    /// The route a shadow session names for the escalation it would have made.
    pub fn shadow_route(&self) -> Route {
        self.shadow_route
    }

    /// The one way an `Escalated` event is built: the judge's state now, and the why;
    /// `propensity` is the gate's when the decision was drawn ([`crate::competence::Gate::propensity`]).
    pub fn escalated(
        &self,
        step: u32,
        route: Route,
        reason: EscalationReason,
        shadow: bool,
        propensity: Option<f64>,
    ) -> Event {
        let why = if reason == EscalationReason::SelfAsk {
            Vec::new()
        } else {
            self.why()
        };
        Event::Escalated {
            step,
            tick: self.tick(),
            route,
            reason,
            belief: self.belief(),
            threshold: self.threshold(),
            why,
            shadow,
            propensity,
        }
    }

    fn remember_terms(&mut self) {
        for t in self.judge.terms() {
            let i = t.signal.index();
            self.step_llr[i] += t.llr;
            self.step_value[i] = t.value;
        }
    }
}

/// The stopping problem's costs as configured: κ, L and the route in force (the cheaper
/// of the two under triage).
pub fn stop_costs(config: &Config) -> StopCosts {
    let c = &config.costs;
    let senior = RouteCost {
        gamma: c.gamma_senior,
        p_success: c.p_senior,
    };
    let operator = RouteCost {
        gamma: c.gamma_operator,
        p_success: c.p_operator,
    };
    match config.policy.route {
        RouteMode::Senior => StopCosts {
            kappa: c.kappa,
            loss: c.loss,
            route: senior,
        },
        RouteMode::Operator => StopCosts {
            kappa: c.kappa,
            loss: c.loss,
            route: operator,
        },
        RouteMode::Triage => StopCosts::triage(c.kappa, c.loss, senior, operator),
    }
}

/// The token-clock optimal schedule `threshold = "optimal"` runs: the calibration's own
/// per-tick law over the token budget, solved every `policy.schedule_stride` ticks. Its
/// V₀ is what that plan predicts a session costs (`handoff schedule` sets it beside the
/// cost its policy realises on logs).
pub fn token_clock_schedule(
    config: &Config,
    calibration: &Calibration,
) -> Result<OptimalSchedule, JudgeError> {
    let stride = u64::from(config.policy.schedule_stride);
    calibration
        .optimal_schedule(
            stop_costs(config),
            config.agent.token_budget,
            stride,
            TOKENS_PER_STEP,
        )
        .map_err(JudgeError::Schedule)
}

/// The calibration file a session with this config uses: `policy.calibration_without_check`
/// when there is no `agent.check` and it is set, else `policy.calibration`.
fn calibration_path(config: &Config) -> Option<&std::path::Path> {
    let without = config
        .policy
        .calibration_without_check
        .as_deref()
        .filter(|_| config.agent.check.is_none());
    without.or(config.policy.calibration.as_deref())
}

/// The calibration the config names (its file) for this session, or the built-in prior.
/// `doctor` reads it without building a judge (no threshold schedule to solve).
pub fn load_calibration(config: &Config) -> Result<Calibration, JudgeError> {
    let Some(path) = calibration_path(config) else {
        return Ok(Calibration::prior());
    };
    let p = path.display().to_string();
    let text = crate::infile::read_text(path, MAX_FILE_BYTES, "a calibration JSON file")?;
    Calibration::from_json(&text).map_err(|e| JudgeError::Calibration {
        path: p,
        message: e.to_string(),
    })
}

/// Why `calibration` does not fit `junior`, when it was fitted on another model or another
/// `top_logprobs` (a calibration without a record of its fit, such as the built-in prior,
/// never mismatches): the session goes on, and the log, the TUI and `doctor` say so.
pub fn calibration_mismatch(calibration: &Calibration, junior: &ModelConfig) -> Option<String> {
    let fitted = calibration.fitted_on.as_ref()?;
    let top = if junior.logprobs {
        usize::from(junior.top_logprobs)
    } else {
        0
    };
    let mut differences = Vec::new();
    if fitted.model != junior.model {
        differences.push(format!(
            "model {} (this junior: {})",
            fitted.model, junior.model
        ));
    }
    if fitted.top_logprobs != top {
        differences.push(format!(
            "top_logprobs {} (this junior: {top})",
            fitted.top_logprobs
        ));
    }
    (!differences.is_empty()).then(|| {
        format!(
            "the calibration was fitted on {}; its beliefs may be off for this junior \
             (fit one with `handoff calibrate` on its own sessions)",
            differences.join(" and ")
        )
    })
}
