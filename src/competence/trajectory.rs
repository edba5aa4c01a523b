//! Labelled trajectories: the raw evidence of one session, tick by tick, and its outcome.
//!
//! Raw observations (not log-likelihood ratios) are kept so the same session can be
//! scored under any calibration: fitting, replay with another calibration, the simulator.

use super::belief::Belief;
use super::calibration::Calibration;
use super::signals::TokenSignals;
use crate::protocol::{Observation, StepFacts};

/// One session's evidence. Tick 0 is before the first junior token (step facts can land
/// there); each junior token opens the next tick; step facts land on the current tick.
#[derive(Debug, Clone, PartialEq)]
pub struct Trajectory {
    /// Did the junior's own work turn out correct? `None` when unknown or censored.
    pub label: Option<bool>,
    observations: Vec<Observation>,
    /// `tick_ends[t]` is the end (exclusive) of tick t's observations.
    tick_ends: Vec<usize>,
    /// How many sessions this one stands for in a fit: 1, or the inverse of the
    /// probability that it stayed uncensored (inverse-propensity weighting).
    weight: f64,
}

impl Trajectory {
    pub fn new(label: Option<bool>) -> Self {
        Trajectory {
            label,
            observations: Vec::new(),
            tick_ends: vec![0],
            weight: 1.0,
        }
    }

    /// This trajectory standing for `weight` sessions in a fit (non-finite or negative
    /// weights count as 0).
    pub fn with_weight(mut self, weight: f64) -> Self {
        self.weight = if weight.is_finite() && weight > 0.0 {
            weight
        } else {
            0.0
        };
        self
    }

    /// Its weight in a fit (1 unless set by [`Trajectory::with_weight`]).
    pub fn weight(&self) -> f64 {
        self.weight
    }

    /// Opens the next tick with the given observations (what a simulator emits per tick).
    pub fn push_tick(&mut self, observations: &[Observation]) {
        self.observations.extend_from_slice(observations);
        self.tick_ends.push(self.observations.len());
    }

    /// A junior token: opens the next tick with its present signals.
    pub fn push_token(&mut self, signals: &TokenSignals) {
        self.observations.extend(signals.observations());
        self.tick_ends.push(self.observations.len());
    }

    /// Adds observations to the current tick (e.g. the facts of a step ending now).
    pub fn push_observations(&mut self, observations: &[Observation]) {
        self.observations.extend_from_slice(observations);
        if let Some(end) = self.tick_ends.last_mut() {
            *end = self.observations.len();
        }
    }

    /// The facts of a step ending at the current tick.
    pub fn push_step(&mut self, facts: &StepFacts) {
        self.push_observations(&facts.observations());
    }

    /// Number of junior tokens (the last tick's index).
    pub fn ticks(&self) -> usize {
        self.tick_ends.len() - 1
    }

    /// Observations of tick `t` (empty past the end).
    pub fn tick(&self, t: usize) -> &[Observation] {
        match (
            t.checked_sub(1).map(|p| self.tick_ends[p]),
            self.tick_ends.get(t),
        ) {
            (None, Some(end)) => &self.observations[..*end],
            (Some(start), Some(end)) => &self.observations[start..*end],
            _ => &[],
        }
    }

    /// Ticks 0..=ticks() in order.
    pub fn iter_ticks(&self) -> impl Iterator<Item = &[Observation]> {
        (0..self.tick_ends.len()).map(|t| self.tick(t))
    }

    /// All observations, in order.
    pub fn observations(&self) -> &[Observation] {
        &self.observations
    }
}

impl Calibration {
    /// ℓ_t after each tick t = 0..=T (tempered, before the map).
    pub fn score_log_odds(&self, trajectory: &Trajectory) -> Vec<f64> {
        let mut belief = Belief::new(self.clone());
        trajectory
            .iter_ticks()
            .enumerate()
            .map(|(t, obs)| {
                if t == 0 {
                    belief.start_tick();
                } else {
                    belief.start_token();
                }
                for o in obs {
                    belief.add(*o);
                }
                belief.log_odds()
            })
            .collect()
    }

    /// B_t after each tick t = 0..=T: the belief path a live judge would have shown.
    pub fn score(&self, trajectory: &Trajectory) -> Vec<f64> {
        self.score_log_odds(trajectory)
            .into_iter()
            .map(|l| self.map.apply(l))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::competence::Judge;
    use crate::competence::threshold::Threshold;
    use crate::protocol::SignalKind;

    fn tokens() -> Vec<TokenSignals> {
        (0..50)
            .map(|i| TokenSignals {
                entropy: Some((i % 7) as f64 * 0.4),
                margin: if i % 5 == 0 {
                    None
                } else {
                    Some(0.1 * (i % 10) as f64)
                },
                surprise: Some((i % 3) as f64),
            })
            .collect()
    }

    #[test]
    fn ticks_are_laid_out_as_documented() {
        let mut tr = Trajectory::new(Some(true));
        tr.push_step(&StepFacts::default());
        tr.push_token(&TokenSignals {
            entropy: Some(1.0),
            ..TokenSignals::default()
        });
        tr.push_token(&TokenSignals::default());
        tr.push_observations(&[Observation {
            signal: SignalKind::NoDiff,
            value: 1.0,
        }]);
        assert_eq!(tr.ticks(), 2);
        assert_eq!(tr.tick(0).len(), 7, "the seven step facts");
        assert_eq!(tr.tick(1).len(), 1);
        assert_eq!(tr.tick(2).len(), 1);
        assert_eq!(tr.tick(2)[0].signal, SignalKind::NoDiff);
        assert!(tr.tick(3).is_empty());
        assert_eq!(tr.iter_ticks().count(), 3);
    }

    #[test]
    fn scoring_replays_exactly_what_the_live_judge_showed() {
        let cal = Calibration::prior();
        let mut judge = Judge::new(cal.clone(), Threshold::Constant(0.5));
        let mut tr = Trajectory::new(None);
        let mut live = vec![judge.belief()];
        for (i, s) in tokens().iter().enumerate() {
            judge.observe_token(s);
            tr.push_token(s);
            if i % 10 == 9 {
                let facts = StepFacts {
                    tool_error: i % 20 == 9,
                    ..StepFacts::default()
                };
                judge.observe_step(&facts);
                tr.push_step(&facts);
            }
            live.push(judge.belief());
        }
        assert_eq!(cal.score(&tr), live);
    }
}
