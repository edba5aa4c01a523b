//! A logged session seen at its decision points (the end of each junior step), and what a
//! step-clock threshold schedule would have cost on it.
//!
//! The belief at each decision point is either re-scored under a calibration by replay's
//! [`Rescorer`] (the live loop's own rules) or read as the log shows it. The log keeps the
//! whole shadow trajectory, so any schedule's stopping point is observed, not modelled:
//! that is what makes realised costs of other schedules an off-policy evaluation without
//! propensities.

use super::rescore::{Evidence, EvidenceDecoder, Rescorer};
use crate::competence::{DecisionPath, Ending, Judge};
use crate::protocol::{EscalationReason, Event};

/// Where a decision point's belief comes from.
#[derive(Debug, Clone)]
pub enum BeliefSource {
    /// The belief the live judge logged (the logs' own calibration).
    Logged,
    /// The belief of this judge (fresh), re-scored over the logged evidence.
    Rescored(Box<Judge>),
}

/// One session at its decision points.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionPath {
    pub path: DecisionPath,
    /// The junior's output tick at each decision point.
    pub ticks: Vec<u64>,
    /// Junior output tokens of the whole session.
    pub total_ticks: u64,
}

/// The decision points of the first session in `events`; `None` when the session has no
/// label (aborted, unlabelled, or cut off). A hand-off by the loop's own rules ends the
/// path where it happened.
pub fn session_path(events: &[Event], source: &BeliefSource) -> Option<SessionPath> {
    let judge = match source {
        BeliefSource::Rescored(j) => (**j).clone(),
        BeliefSource::Logged => Judge::new(
            crate::competence::Calibration::prior(),
            crate::competence::Threshold::Constant(0.0),
        ),
    };
    let mut rescorer = Rescorer::new(judge, 0);
    let mut decoder = EvidenceDecoder::new();
    let mut evidence = Vec::new();
    let (mut beliefs, mut ticks) = (Vec::new(), Vec::new());
    let mut last_logged = f64::NAN;
    let mut total_ticks = 0;
    let mut handed_off = false;
    let mut label = None;
    'events: for event in events {
        evidence.clear();
        decoder.push(event, &mut evidence);
        for e in &evidence {
            match e {
                Evidence::Escalated {
                    reason:
                        EscalationReason::Stuck
                        | EscalationReason::Fault
                        | EscalationReason::CheckFailed
                        | EscalationReason::ExamplesFailed,
                    ..
                } => {
                    handed_off = true;
                }
                Evidence::Ended { label: l, .. } => {
                    label = *l;
                    break 'events;
                }
                _ => {}
            }
            if handed_off {
                continue;
            }
            let Some(r) = rescorer.push(e) else { continue };
            total_ticks = total_ticks.max(r.tick);
            if let Some(l) = r.logged {
                last_logged = l.belief;
            }
            if r.step {
                beliefs.push(match source {
                    BeliefSource::Logged => last_logged,
                    BeliefSource::Rescored(_) => r.belief,
                });
                ticks.push(r.tick);
            }
        }
    }
    let label = label?;
    // Without any logged belief yet a step's belief is the prior's.
    let prior = events.iter().find_map(|e| match e {
        Event::SessionStarted { prior, .. } => Some(*prior),
        _ => None,
    });
    for b in &mut beliefs {
        if b.is_nan() {
            *b = prior.unwrap_or(0.5);
        }
    }
    let mut previous = 0;
    let tokens = ticks
        .iter()
        .map(|&t| {
            let n = t.saturating_sub(previous);
            previous = t;
            n
        })
        .collect();
    Some(SessionPath {
        path: DecisionPath {
            beliefs,
            tokens,
            ending: if handed_off {
                Ending::HandedOff
            } else {
                Ending::Finished(label)
            },
        },
        ticks,
        total_ticks,
    })
}

/// What one escalation costs on a task: the route's compute and its failure.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RouteOutcome {
    /// γ: what the route spends (in the units of κ·tokens).
    pub gamma: f64,
    /// P(the route's result is correct) on this task: 0 or 1 when the senior's own log
    /// says, the estimated rate otherwise.
    pub p_success: f64,
}

/// The cost a step schedule `tau` (τ_k at index k − 1, the last held) realises on `s`:
/// κ per junior token up to the hand-off plus the route's cost and failure, or κ per
/// junior token of the session plus L if the junior's result failed. Returns (cost,
/// escalated).
pub fn realised_cost(
    s: &SessionPath,
    tau: &[f64],
    kappa: f64,
    loss: f64,
    route: RouteOutcome,
) -> (f64, bool) {
    let escalate = |tick: u64| {
        let spent = kappa * tick as f64;
        (spent + route.gamma + loss * (1.0 - route.p_success), true)
    };
    for (k, (b, t)) in s.path.beliefs.iter().zip(&s.ticks).enumerate() {
        let threshold = crate::competence::threshold::schedule_at(tau, k);
        if *b < threshold {
            return escalate(*t);
        }
    }
    match s.path.ending {
        Ending::HandedOff => escalate(s.ticks.last().copied().unwrap_or(0)),
        Ending::Finished(passed) => (
            kappa * s.total_ticks as f64 + if passed { 0.0 } else { loss },
            false,
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session(beliefs: &[f64], ending: Ending) -> SessionPath {
        SessionPath {
            path: DecisionPath {
                beliefs: beliefs.to_vec(),
                tokens: vec![10; beliefs.len()],
                ending,
            },
            ticks: (1..=beliefs.len() as u64).map(|k| 10 * k).collect(),
            total_ticks: 10 * beliefs.len() as u64 + 5,
        }
    }

    #[test]
    fn realised_costs_follow_the_first_decision_below_tau() {
        let route = RouteOutcome {
            gamma: 0.2,
            p_success: 1.0,
        };
        let s = session(&[0.6, 0.3, 0.7], Ending::Finished(false));
        // τ = 0.5: escalate at k = 2 (tick 20).
        let (c, e) = realised_cost(&s, &[0.5], 0.01, 1.0, route);
        assert!(e && (c - (0.2 + 0.2)).abs() < 1e-12, "{c}");
        // τ = 0.1: never; the junior's 35 tokens and its failure.
        let (c, e) = realised_cost(&s, &[0.1], 0.01, 1.0, route);
        assert!(!e && (c - 1.35).abs() < 1e-12, "{c}");
        // A schedule that only fires late.
        let (c, _) = realised_cost(&s, &[0.0, 0.0, 0.8], 0.01, 1.0, route);
        assert!((c - 0.5).abs() < 1e-12, "{c}");
        // A hand-off by the loop escalates at its last decision point whatever τ says.
        let h = session(&[0.9, 0.9], Ending::HandedOff);
        let (c, e) = realised_cost(&h, &[0.0], 0.01, 1.0, route);
        assert!(e && (c - 0.4).abs() < 1e-12, "{c}");
    }
}
