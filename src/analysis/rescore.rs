//! Logged evidence read back, and the judge run over it again.
//!
//! A log keeps every raw observation the live judge added (the `value` of each
//! [`EvidenceTerm`]), so a session can be scored again under any calibration or threshold:
//! `calibrate` turns logs into [`Trajectory`]s, `replay` re-runs a [`Judge`] over them.
//! Both read the log through one [`EvidenceDecoder`]: a `BeliefUpdated` at a new tick is a
//! token's evidence; one at the same tick carries the facts of a step that ended there (and
//! several steps may end on one tick when replies are only tool calls).
//!
//! [`Rescorer`] decodes, then feeds the live loop's own escalation rule
//! ([`crate::competence::Gate`]): shadow toggles, hand-backs, and hand-offs that were not
//! the judge's decision reach the gate at the same place in the stream as they did live.
//! With the live calibration and policy it reproduces the logged beliefs and escalation
//! ticks exactly.

use crate::competence::{Gate, Judge, Observation, TokenSignals, Trajectory, Verdict};
use crate::protocol::{Actor, EscalationReason, Event, EvidenceTerm};

/// What the live judge showed at one update, as logged.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Logged {
    pub belief: f64,
    pub log_odds: f64,
    pub threshold: f64,
}

impl Logged {
    /// B_t < τ_t as the live judge decided it.
    pub fn below(&self) -> bool {
        self.belief < self.threshold
    }
}

/// One piece of a session's evidence stream, in log order.
#[derive(Debug, Clone, PartialEq)]
pub enum Evidence {
    /// A junior token opened tick `tick` with these observations.
    Token {
        tick: u64,
        observations: Vec<Observation>,
        logged: Logged,
    },
    /// A junior step ended at tick `tick` with these step facts. `logged` is `None` when
    /// the live judge had nothing to add (it then logs no `BeliefUpdated`).
    Step {
        tick: u64,
        observations: Vec<Observation>,
        logged: Option<Logged>,
    },
    /// A step (junior or senior) is over: the cooldown after a hand-back counts down.
    StepDone,
    /// The senior returned or the operator answered: the belief restarts from the prior.
    Reset,
    /// The operator switched shadow mode on or off.
    Control {
        shadow: bool,
    },
    /// The log's own escalation decision.
    Escalated {
        tick: u64,
        reason: EscalationReason,
        shadow: bool,
        /// The logged propensity of a decision drawn under shadow exploration.
        propensity: Option<f64>,
    },
    /// The session started (`shadow` as configured) or ended (`label`).
    Started {
        shadow: bool,
    },
    Ended {
        label: Option<bool>,
        censored: bool,
    },
}

fn observations(terms: &[EvidenceTerm]) -> Vec<Observation> {
    terms.iter().map(EvidenceTerm::observation).collect()
}

/// Turns events into [`Evidence`]: a `BeliefUpdated` at a new tick is a token's evidence;
/// one at the same tick is a step's own facts (the judge starts a fresh term list per step).
#[derive(Debug, Default)]
pub struct EvidenceDecoder {
    tick: u64,
    /// The current step's facts came with a `BeliefUpdated`; its `StepEnded` adds nothing.
    step_logged: bool,
}

impl EvidenceDecoder {
    pub fn new() -> EvidenceDecoder {
        EvidenceDecoder::default()
    }

    /// The evidence in `event` (none for most events), appended to `out`.
    pub fn push(&mut self, event: &Event, out: &mut Vec<Evidence>) {
        match event {
            Event::SessionStarted { shadow, .. } => {
                *self = EvidenceDecoder::default();
                out.push(Evidence::Started { shadow: *shadow });
            }
            Event::BeliefUpdated {
                tick,
                belief,
                log_odds,
                threshold,
                terms,
                ..
            } => {
                let logged = Logged {
                    belief: *belief,
                    log_odds: *log_odds,
                    threshold: *threshold,
                };
                if *tick != self.tick {
                    // Every junior token opens a new tick; tick 0 has no token.
                    self.tick = *tick;
                    self.step_logged = false;
                    out.push(Evidence::Token {
                        tick: *tick,
                        observations: observations(terms),
                        logged,
                    });
                    return;
                }
                self.step_logged = true;
                out.push(Evidence::Step {
                    tick: *tick,
                    observations: observations(terms),
                    logged: Some(logged),
                });
            }
            Event::StepEnded {
                actor, tick, terms, ..
            } => {
                if *actor == Actor::Junior && !self.step_logged {
                    out.push(Evidence::Step {
                        tick: *tick,
                        observations: observations(terms),
                        logged: None,
                    });
                }
                self.step_logged = false;
                out.push(Evidence::StepDone);
            }
            Event::SeniorReturned { .. }
            | Event::OperatorAnswered {
                deferred_to_senior: false,
                ..
            } => {
                self.step_logged = false;
                out.push(Evidence::Reset);
            }
            Event::ControlChanged { shadow, .. } => {
                out.push(Evidence::Control { shadow: *shadow });
            }
            Event::Escalated {
                tick,
                reason,
                shadow,
                propensity,
                ..
            } => out.push(Evidence::Escalated {
                tick: *tick,
                reason: *reason,
                shadow: *shadow,
                propensity: *propensity,
            }),
            Event::SessionEnded {
                outcome, censored, ..
            } => out.push(Evidence::Ended {
                label: match outcome {
                    crate::protocol::Outcome::Success => Some(true),
                    crate::protocol::Outcome::Failure => Some(false),
                    _ => None,
                },
                censored: *censored,
            }),
            _ => {}
        }
    }
}

/// Builds a [`Trajectory`] from a session's evidence: token observations open ticks (empty
/// ticks fill any gap, so tick t stays the t-th junior token), step facts join the tick
/// where the step ended. Resets are ignored: a trajectory is the junior's evidence, and a
/// session with a hand-back is censored for fitting anyway.
#[derive(Debug)]
pub struct TrajectoryFold {
    pub trajectory: Trajectory,
    pub shadow: bool,
    pub censored: bool,
    pub ended: bool,
    /// The probability that this session stayed uncensored given its evidence: the product
    /// of the logged propensities of its explored decisions (1 when none was drawn).
    pub propensity: f64,
}

impl Default for TrajectoryFold {
    fn default() -> Self {
        TrajectoryFold {
            trajectory: Trajectory::new(None),
            shadow: false,
            censored: false,
            ended: false,
            propensity: 1.0,
        }
    }
}

impl TrajectoryFold {
    pub fn push(&mut self, evidence: &Evidence) {
        match evidence {
            Evidence::Token {
                tick, observations, ..
            } => {
                let t = usize::try_from(*tick).unwrap_or(usize::MAX);
                while self.trajectory.ticks() + 1 < t {
                    self.trajectory.push_tick(&[]);
                }
                self.trajectory.push_tick(observations);
            }
            Evidence::Step { observations, .. } => {
                self.trajectory.push_observations(observations);
            }
            Evidence::Started { shadow } => self.shadow = *shadow,
            Evidence::Ended { label, censored } => {
                self.trajectory.label = *label;
                self.censored = *censored;
                self.ended = true;
            }
            Evidence::Escalated {
                shadow: true,
                propensity: Some(p),
                ..
            } if *p > 0.0 && p.is_finite() => self.propensity *= p.min(1.0),
            Evidence::StepDone
            | Evidence::Reset
            | Evidence::Control { .. }
            | Evidence::Escalated { .. } => {}
        }
    }
}

/// One update of the judge when re-scored.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rescored {
    pub tick: u64,
    /// A step end rather than a token.
    pub step: bool,
    pub belief: f64,
    pub log_odds: f64,
    pub threshold: f64,
    /// B_t < τ_t.
    pub below: bool,
    /// The loop would hand off here (in shadow mode: would log a shadow escalation).
    pub escalate: bool,
    /// What the log says the live judge showed at the same update.
    pub logged: Option<Logged>,
}

/// A judge driven by logged evidence through the live loop's [`Gate`].
#[derive(Debug, Clone)]
pub struct Rescorer {
    judge: Judge,
    gate: Gate,
    cooldown_steps: u32,
}

impl Rescorer {
    /// `judge` fresh from a calibration and threshold; `cooldown_steps` as configured
    /// (`policy.cooldown_steps`).
    pub fn new(judge: Judge, cooldown_steps: u32) -> Rescorer {
        Rescorer {
            judge,
            gate: Gate::new(false, cooldown_steps),
            cooldown_steps,
        }
    }

    /// Feeds one piece of evidence; returns the judge's reading when it was an update.
    pub fn push(&mut self, evidence: &Evidence) -> Option<Rescored> {
        match evidence {
            Evidence::Started { shadow } => {
                self.judge.reset();
                self.gate = Gate::new(*shadow, self.cooldown_steps);
                None
            }
            Evidence::Token {
                tick,
                observations,
                logged,
            } => {
                // The clock counts tokens; a gap (no update logged) still spent compute.
                while self.judge.tick() + 1 < *tick {
                    self.judge.observe_token(&TokenSignals::default());
                }
                self.judge.observe_token(&TokenSignals::default());
                for o in observations {
                    self.judge.observe(*o);
                }
                Some(self.reading(false, Some(*logged)))
            }
            Evidence::Step {
                observations,
                logged,
                ..
            } => {
                for o in observations {
                    self.judge.observe(*o);
                }
                self.judge.end_step();
                Some(self.reading(true, *logged))
            }
            Evidence::StepDone => {
                self.gate.on_step_done();
                None
            }
            Evidence::Reset => {
                self.judge.reset();
                self.gate.on_reset();
                None
            }
            Evidence::Control { shadow } => {
                self.gate.set_shadow(*shadow);
                None
            }
            Evidence::Escalated {
                reason,
                shadow,
                propensity,
                ..
            } => {
                // A hand-off that was not the judge's decision is a fact of the session,
                // whatever policy re-scores it; the judge's own are this gate's to make.
                if !shadow && *reason != EscalationReason::Threshold {
                    self.gate.on_handoff();
                }
                // A decision drawn to explore made the rest of the live session shadow.
                if *shadow && propensity.is_some() {
                    self.gate.mark_explored();
                }
                None
            }
            Evidence::Ended { .. } => None,
        }
    }

    fn reading(&mut self, step: bool, logged: Option<Logged>) -> Rescored {
        let reading = self.judge.reading();
        let verdict = if step {
            self.gate.on_step_end(reading.below)
        } else {
            self.gate.on_token(reading.below)
        };
        Rescored {
            tick: reading.tick,
            step,
            belief: reading.belief,
            log_odds: reading.log_odds,
            threshold: reading.threshold,
            below: reading.below,
            escalate: verdict != Verdict::Continue,
            logged,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::competence::{Calibration, SignalKind, StepFacts, Threshold};

    fn term(signal: SignalKind, value: f64) -> EvidenceTerm {
        EvidenceTerm {
            signal,
            value,
            llr: 0.0,
        }
    }

    fn update(tick: u64, terms: Vec<EvidenceTerm>) -> Event {
        Event::BeliefUpdated {
            tick,
            belief: 0.5,
            log_odds: 0.0,
            threshold: 0.4,
            policy: "constant".into(),
            terms,
        }
    }

    fn step_end(tick: u64, terms: Vec<EvidenceTerm>) -> Event {
        Event::StepEnded {
            step: 1,
            actor: Actor::Junior,
            tick,
            tool: None,
            ok: true,
            belief: 0.5,
            terms,
            checkpoint: None,
        }
    }

    fn decode(events: &[Event]) -> Vec<Evidence> {
        let mut d = EvidenceDecoder::new();
        let mut out = Vec::new();
        for e in events {
            d.push(e, &mut out);
        }
        out
    }

    fn observed(evidence: &[Evidence]) -> Vec<(bool, Vec<SignalKind>)> {
        evidence
            .iter()
            .filter_map(|e| match e {
                Evidence::Token { observations, .. } => {
                    Some((false, observations.iter().map(|o| o.signal).collect()))
                }
                Evidence::Step { observations, .. } => {
                    Some((true, observations.iter().map(|o| o.signal).collect()))
                }
                _ => None,
            })
            .collect()
    }

    #[test]
    fn a_step_update_carries_only_its_own_facts() {
        let tok = term(SignalKind::Entropy, 1.0);
        let err = term(SignalKind::ToolError, 1.0);
        let diff = term(SignalKind::NoDiff, 0.0);
        let events = [
            // A step before any token lands on tick 0.
            update(0, vec![err]),
            step_end(0, vec![err]),
            update(1, vec![tok]),
            update(1, vec![err, diff]),
            step_end(1, vec![err, diff]),
            // A second step on the same tick (a reply that was only a tool call).
            update(1, vec![diff]),
            step_end(1, vec![diff]),
            // After a reset the list starts afresh on the same tick.
            Event::SeniorReturned { step: 2, tick: 1 },
            update(1, vec![err]),
            step_end(1, vec![err]),
        ];
        let out = decode(&events);
        use SignalKind::*;
        assert_eq!(
            observed(&out),
            vec![
                (true, vec![ToolError]),
                (false, vec![Entropy]),
                (true, vec![ToolError, NoDiff]),
                (true, vec![NoDiff]),
                (true, vec![ToolError]),
            ]
        );
        assert_eq!(out.iter().filter(|e| **e == Evidence::StepDone).count(), 4);
        assert_eq!(out.iter().filter(|e| **e == Evidence::Reset).count(), 1);
    }

    #[test]
    fn a_step_without_an_update_still_counts_as_a_step() {
        let out = decode(&[update(1, vec![]), step_end(1, vec![])]);
        assert!(matches!(out[1], Evidence::Step { logged: None, .. }));
        assert_eq!(out[2], Evidence::StepDone);
    }

    #[test]
    fn only_answers_reset_the_belief_not_deferrals() {
        let answered = |deferred| Event::OperatorAnswered {
            step: 1,
            answer: String::new(),
            needed: None,
            deferred_to_senior: deferred,
        };
        assert_eq!(decode(&[answered(false)]), vec![Evidence::Reset]);
        assert!(decode(&[answered(true)]).is_empty());
    }

    fn rescorer(shadow: bool, tau: f64, cooldown: u32) -> Rescorer {
        let judge = Judge::new(Calibration::prior(), Threshold::Constant(tau));
        let mut r = Rescorer::new(judge, cooldown);
        r.push(&Evidence::Started { shadow });
        r
    }

    fn token(tick: u64) -> Evidence {
        Evidence::Token {
            tick,
            observations: vec![],
            logged: Logged {
                belief: 0.0,
                log_odds: 0.0,
                threshold: 0.0,
            },
        }
    }

    fn failed_step(tick: u64) -> Evidence {
        let facts = StepFacts {
            check_failed: true,
            patch_rejected: true,
            tool_error: true,
            repeats: 1,
            no_diff: true,
            malformed_call: false,
            no_tool_call: false,
        };
        Evidence::Step {
            tick,
            observations: facts.observations().to_vec(),
            logged: None,
        }
    }

    /// τ just under the prior: one failed step takes the belief below it.
    fn tau() -> f64 {
        Calibration::prior().prior - 0.01
    }

    #[test]
    fn a_step_schedule_is_decided_at_replayed_step_ends_only() {
        // τ = 1 at the second step end, 0 at the first and between: only the second step's
        // update may escalate, whatever the belief.
        let judge = Judge::new(Calibration::prior(), Threshold::Steps(vec![0.0, 1.0]));
        let mut r = Rescorer::new(judge, 0);
        r.push(&Evidence::Started { shadow: true });
        let escalates: Vec<bool> = [token(1), failed_step(1), token(2), failed_step(2), token(3)]
            .iter()
            .filter_map(|e| r.push(e))
            .map(|x| x.escalate)
            .collect();
        assert_eq!(escalates, [false, false, false, true, false]);
    }

    #[test]
    fn live_hand_offs_wait_for_the_cooldown_and_happen_once_per_reset() {
        let mut r = rescorer(false, tau(), 1);
        let decisions = |r: &mut Rescorer, evidence: &[Evidence]| -> Vec<bool> {
            evidence
                .iter()
                .filter_map(|e| r.push(e))
                .map(|p| p.escalate)
                .collect()
        };
        // Below after the step: escalate once, then nothing until a reset.
        assert_eq!(
            decisions(&mut r, &[token(1), failed_step(1), token(2)]),
            vec![false, true, false]
        );
        // The reset opens a cooldown of one step: the first step's tokens may not escalate.
        assert_eq!(
            decisions(
                &mut r,
                &[
                    Evidence::Reset,
                    token(3),
                    failed_step(3),
                    Evidence::StepDone,
                    token(4)
                ]
            ),
            vec![false, false, true]
        );
        // The clock kept running through the reset, and skipped ticks still count.
        let p = r.push(&token(9)).expect("reading");
        assert_eq!(p.tick, 9);
    }

    #[test]
    fn shadow_sessions_decide_at_each_crossing() {
        let mut r = rescorer(true, tau(), 0);
        let got: Vec<bool> = [token(1), failed_step(1), token(2), failed_step(2)]
            .iter()
            .filter_map(|e| r.push(e))
            .map(|p| p.escalate)
            .collect();
        // Below from the first failed step on: one crossing, not two.
        assert_eq!(got, vec![false, true, false, false]);
    }
}
