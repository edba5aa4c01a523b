//! The belief recursion and the per-session judge the agent drives.
//!
//! ℓ₀ = logit π₀, ℓ_t = ℓ_{t−1} + c·Σ log f₁(e)/f₀(e), B_t = map(ℓ_t). Every update is a
//! table lookup and an addition: no allocation, no hashing, O(1) per token, so the judge
//! can sit on the streaming path.
//!
//! A calibration with a [`FeatureModel`] keeps running summaries instead
//! ([`super::features`]): ℓ_t is then that model's log-odds at the current tick, and each
//! term's `llr` is how far its observation moved them.

use super::calibration::Calibration;
use super::features::{FeatureModel, FeatureState};
use super::likelihood::Likelihood;
use super::signals::TokenSignals;
use super::threshold::Threshold;
use crate::protocol::{EvidenceTerm, Observation, SignalKind, StepFacts};

/// At most three token terms and nine step terms can land on one tick.
pub const MAX_TERMS_PER_TICK: usize = 12;

/// The log-odds state under one calibration, without a clock or a threshold.
///
/// Used by [`Judge`] live and by scoring when a logged trajectory is replayed.
#[derive(Debug, Clone)]
pub struct Belief {
    calibration: Calibration,
    table: [Option<Likelihood>; SignalKind::ALL.len()],
    prior_log_odds: f64,
    log_odds: f64,
    terms: [EvidenceTerm; MAX_TERMS_PER_TICK],
    n_terms: usize,
    /// The length-robust model and its state, when the calibration has one.
    features: Option<(FeatureModel, FeatureState)>,
}

const NO_TERM: EvidenceTerm = EvidenceTerm {
    signal: SignalKind::Entropy,
    value: 0.0,
    llr: 0.0,
};

impl Belief {
    pub fn new(calibration: Calibration) -> Self {
        let table = SignalKind::ALL.map(|k| calibration.signals.get(&k).cloned());
        let features = calibration.features.clone().map(|m| {
            let state = FeatureState::new(m.half_life);
            (m, state)
        });
        let prior_log_odds = match &features {
            Some((m, s)) => m.log_odds(&s.inputs(), 0.0),
            None => calibration.prior_log_odds(),
        };
        Belief {
            calibration,
            table,
            prior_log_odds,
            log_odds: prior_log_odds,
            terms: [NO_TERM; MAX_TERMS_PER_TICK],
            n_terms: 0,
            features,
        }
    }

    pub fn calibration(&self) -> &Calibration {
        &self.calibration
    }

    /// Back to ℓ₀ (e.g. when control returns from the senior: what the junior does next is
    /// a new trajectory as far as the evidence goes).
    pub fn reset(&mut self) {
        self.log_odds = self.prior_log_odds;
        self.n_terms = 0;
        if let Some((m, s)) = &mut self.features {
            *s = FeatureState::new(m.half_life);
        }
    }

    /// Forget the terms of the previous tick; the log-odds are kept.
    pub fn start_tick(&mut self) {
        self.n_terms = 0;
    }

    /// A new junior token opens a tick: the terms are forgotten and, under a feature
    /// model, the clock its coefficients are read at moves on.
    pub fn start_token(&mut self) {
        self.n_terms = 0;
        if let Some((m, s)) = &mut self.features {
            s.start_token();
            self.log_odds = m.log_odds(&s.inputs(), s.tokens() as f64);
        }
    }

    /// Adds one observation: c·log f₁/f₀ of its value (under a feature model: the change
    /// in the model's log-odds). Returns the term added, or `None` when the value is NaN or
    /// the naive-Bayes calibration has no likelihood for the signal. The
    /// term is also kept in [`Belief::terms`] while there is room on this tick.
    pub fn add(&mut self, obs: Observation) -> Option<EvidenceTerm> {
        if obs.value.is_nan() {
            return None;
        }
        let likelihood = self.table[obs.signal.index()].as_ref();
        if likelihood.is_none() && self.features.is_none() {
            return None;
        }
        let raw = likelihood.map_or(0.0, |l| l.llr(obs.value));
        let llr = match &mut self.features {
            Some((m, s)) => {
                s.observe(obs, raw);
                let next = m.log_odds(&s.inputs(), s.tokens() as f64);
                next - self.log_odds
            }
            None => self.calibration.tempering * raw,
        };
        let term = EvidenceTerm {
            signal: obs.signal,
            value: obs.value,
            llr,
        };
        self.log_odds += term.llr;
        if let Some(slot) = self.terms.get_mut(self.n_terms) {
            *slot = term;
            self.n_terms += 1;
        }
        Some(term)
    }

    /// Adds the token's present signals (none when the server sent no logprobs).
    pub fn add_token(&mut self, signals: &TokenSignals) {
        for obs in signals.observations() {
            self.add(obs);
        }
    }

    /// Adds all five step facts, present or absent.
    pub fn add_step(&mut self, facts: &StepFacts) {
        for obs in facts.observations() {
            self.add(obs);
        }
    }

    /// ℓ_t: the tempered log-odds before the calibration map.
    pub fn log_odds(&self) -> f64 {
        self.log_odds
    }

    /// B_t: the calibrated belief that the junior finishes correctly.
    pub fn belief(&self) -> f64 {
        self.calibration.map.apply(self.log_odds)
    }

    /// The terms added since the tick started (what moved the belief just now).
    pub fn terms(&self) -> &[EvidenceTerm] {
        &self.terms[..self.n_terms]
    }
}

/// What the judge says at one tick; plain numbers for events and the UI.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Reading {
    pub tick: u64,
    pub belief: f64,
    pub log_odds: f64,
    pub threshold: f64,
    /// B_t < τ_t.
    pub below: bool,
}

/// The per-session judge: a belief, a clock counting junior output tokens, and a threshold.
#[derive(Debug, Clone)]
pub struct Judge {
    belief: Belief,
    threshold: Threshold,
    tick: u64,
    /// Junior steps ended so far, and whether the last evidence was a step's end (the
    /// moment a step schedule decides).
    steps: u64,
    at_step_end: bool,
}

impl Judge {
    pub fn new(calibration: Calibration, threshold: Threshold) -> Self {
        Judge {
            belief: Belief::new(calibration),
            threshold,
            tick: 0,
            steps: 0,
            at_step_end: false,
        }
    }

    /// One junior output token: advances the clock, then adds its signals. A token without
    /// logprobs still costs compute, so the clock moves even when no evidence arrives.
    pub fn observe_token(&mut self, signals: &TokenSignals) {
        self.tick += 1;
        self.at_step_end = false;
        self.belief.start_token();
        self.belief.add_token(signals);
    }

    /// The facts of a finished step, at the current tick (the step's last token).
    ///
    /// The terms then hold only this step's evidence, so a log records every step's facts
    /// even when several steps end on one tick (a reply that is only a tool call has no
    /// content tokens and does not advance the clock).
    pub fn observe_step(&mut self, facts: &StepFacts) {
        self.belief.start_tick();
        self.belief.add_step(facts);
        self.end_step();
    }

    /// A junior step has ended (its facts already added one by one, as a re-scorer adds
    /// logged terms): the moment a step schedule decides.
    pub fn end_step(&mut self) {
        self.steps += 1;
        self.at_step_end = true;
    }

    /// One raw observation at the current tick (e.g. replaying a logged term's value under
    /// another calibration). Returns the term added, if the calibration knows the signal.
    pub fn observe(&mut self, observation: Observation) -> Option<EvidenceTerm> {
        self.belief.add(observation)
    }

    /// Back to the prior, keeping the clock (compute already spent stays spent) and the
    /// step count. No decision is due until new evidence arrives.
    pub fn reset(&mut self) {
        self.belief.reset();
        self.at_step_end = false;
    }

    pub fn tick(&self) -> u64 {
        self.tick
    }
    pub fn belief(&self) -> f64 {
        self.belief.belief()
    }
    pub fn log_odds(&self) -> f64 {
        self.belief.log_odds()
    }
    /// τ now: τ_t at the current tick, or a step schedule's τ_k right after step k ended
    /// (0 in between: it does not decide mid-step).
    pub fn threshold(&self) -> f64 {
        if self.at_step_end {
            self.threshold.at_step_end(self.steps, self.tick)
        } else {
            self.threshold.at(self.tick)
        }
    }
    /// The evidence added at the current tick. Step facts appear present (value 1.0) and
    /// absent (value 0.0); absent ones move ℓ very little and a UI may leave them out.
    pub fn terms(&self) -> &[EvidenceTerm] {
        self.belief.terms()
    }
    /// B_t < τ_t: the judge would hand off now.
    pub fn should_escalate(&self) -> bool {
        self.belief() < self.threshold()
    }
    pub fn calibration(&self) -> &Calibration {
        self.belief.calibration()
    }

    pub fn reading(&self) -> Reading {
        let belief = self.belief();
        let threshold = self.threshold();
        Reading {
            tick: self.tick,
            belief,
            log_odds: self.log_odds(),
            threshold,
            below: belief < threshold,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::competence::calibrator::{CalibrationMap, Platt, logit, sigmoid};

    /// A calibration with one entropy histogram and one binary fact, numbers easy by hand.
    fn small() -> Calibration {
        let mut signals = BTreeMap::new();
        signals.insert(
            SignalKind::Entropy,
            Likelihood::new(vec![1.0], vec![0.8, 0.2], vec![0.4, 0.6]).expect("valid"),
        );
        signals.insert(
            SignalKind::ToolError,
            Likelihood::binary(0.1, 0.3).expect("valid"),
        );
        Calibration {
            prior: 0.6,
            tempering: 0.5,
            signals,
            map: CalibrationMap::Identity,
            source: "test".into(),
            features: None,
            fitted_on: None,
        }
    }

    fn entropy(v: f64) -> TokenSignals {
        TokenSignals {
            entropy: Some(v),
            margin: Some(0.5),
            surprise: Some(0.1),
        }
    }

    #[test]
    fn a_belief_update_by_hand() {
        let mut j = Judge::new(small(), Threshold::Constant(0.5));
        assert_eq!(j.tick(), 0);
        assert!((j.belief() - 0.6).abs() < 1e-12);
        // A high-entropy token: 0.5·ln(0.2/0.6); margin and surprise have no table.
        j.observe_token(&entropy(2.0));
        let l1 = logit(0.6) + 0.5 * (0.2f64 / 0.6).ln();
        assert!((j.log_odds() - l1).abs() < 1e-12);
        assert_eq!(j.tick(), 1);
        assert_eq!(j.terms().len(), 1);
        // A tool error at the same tick: 0.5·ln(0.1/0.3).
        j.observe_step(&StepFacts {
            tool_error: true,
            ..StepFacts::default()
        });
        let l2 = l1 + 0.5 * (0.1f64 / 0.3).ln();
        assert!((j.log_odds() - l2).abs() < 1e-12);
        assert!((j.belief() - sigmoid(l2)).abs() < 1e-12);
        // By hand: prior odds 1.5, times (1/3)^½ for the token and (1/3)^½ for the tool
        // error = 0.5, so B = 1/3.
        assert!((j.belief() - 1.0 / 3.0).abs() < 1e-12);
        // The step's terms are its own: the token's term is not repeated.
        assert_eq!(j.terms().len(), 1);
        assert_eq!(j.terms()[0].signal, SignalKind::ToolError);
        assert!(j.should_escalate());
        let r = j.reading();
        assert!(r.below && r.tick == 1 && r.threshold == 0.5);
    }

    #[test]
    fn reset_returns_to_the_prior_and_keeps_the_clock() {
        let mut j = Judge::new(small(), Threshold::Constant(0.5));
        for _ in 0..5 {
            j.observe_token(&entropy(3.0));
        }
        j.reset();
        assert_eq!(j.tick(), 5);
        assert!((j.belief() - 0.6).abs() < 1e-12);
        assert!(j.terms().is_empty());
    }

    #[test]
    fn missing_logprobs_advance_the_clock_only() {
        let mut j = Judge::new(small(), Threshold::Constant(0.5));
        let s = TokenSignals::from_alternatives("x", None, &[]);
        j.observe_token(&s);
        assert!(s.is_empty());
        assert_eq!(j.tick(), 1);
        assert!((j.belief() - 0.6).abs() < 1e-12);
        assert!(j.terms().is_empty());
    }

    #[test]
    fn the_map_applies_on_top_of_the_log_odds() {
        let mut c = small();
        c.map = CalibrationMap::Platt(Platt { a: 2.0, b: -1.0 });
        let j = Judge::new(c, Threshold::Constant(0.5));
        assert!((j.belief() - sigmoid(2.0 * logit(0.6) - 1.0)).abs() < 1e-12);
        assert!((j.log_odds() - logit(0.6)).abs() < 1e-12);
    }

    #[test]
    fn the_prior_survives_a_thousand_ordinary_confident_tokens() {
        let confident = TokenSignals {
            entropy: Some(0.02),
            margin: Some(0.97),
            surprise: Some(0.01),
        };
        let medium = TokenSignals {
            entropy: Some(0.8),
            margin: Some(0.4),
            surprise: Some(0.7),
        };
        let uncertain = TokenSignals {
            entropy: Some(2.2),
            margin: Some(0.05),
            surprise: Some(3.0),
        };
        let mut j = Judge::new(Calibration::prior(), Threshold::Constant(0.5));
        let prior = j.belief();
        for i in 0..1000 {
            let s = match i % 20 {
                0 => &uncertain,
                1 | 2 => &medium,
                _ => &confident,
            };
            j.observe_token(s);
            if i % 100 == 99 {
                j.observe_step(&StepFacts::default());
            }
        }
        let after = j.belief();
        // Ordinary text neither collapses the belief nor saturates it: confident tokens are
        // weak evidence of success (the prior's likelihoods are normalised), uncertain ones
        // weak evidence of failure.
        assert!(after > prior - 0.05 && after < 0.9, "{prior} → {after}");
        // …while a long stretch of uncertain tokens and failed steps does move it.
        for _ in 0..400 {
            j.observe_token(&uncertain);
        }
        let facts = StepFacts {
            tool_error: true,
            check_failed: true,
            ..StepFacts::default()
        };
        j.observe_step(&facts);
        j.observe_step(&facts);
        assert!(j.belief() < prior - 0.15, "{prior} → {}", j.belief());
    }
}
