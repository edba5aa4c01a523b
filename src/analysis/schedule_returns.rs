//! What a `step` hand-off led to in live sessions: the numbers behind treating escalation as
//! terminal in the step-clock plan.
//!
//! With `handoff = "step"` the senior takes one step and hands back; the junior goes on from
//! the prior. The plan treats escalating as ending the task with the route's success rate
//! p. That is the right approximation exactly when p is the rate at which sessions that
//! handed off *and got control back* end correct, and γ what they spent from the hand-off
//! on. This module measures both from live logs, so `handoff schedule --returns` can plan
//! with them instead of the senior-alone rate.

use serde::Serialize;

use crate::metrics::{Forecast, Interval, bootstrap};
use crate::protocol::{Actor, Event, Outcome};

/// One live session with a hand-back.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Return {
    pub passed: bool,
    /// Junior steps after the first hand-back.
    pub junior_steps_after: u32,
    /// Hand-offs (any reason, not shadow) after the first hand-back.
    pub escalations_after: u32,
    /// Output tokens from the first hand-off on: the junior's and the senior's.
    pub junior_tokens_after: u64,
    pub senior_tokens_after: u64,
}

/// The first session of `events` if the senior handed control back in it and it ended
/// with a label.
pub fn session_return(events: &[Event]) -> Option<Return> {
    let mut handed_off = false;
    let mut returned = false;
    let mut r = Return {
        passed: false,
        junior_steps_after: 0,
        escalations_after: 0,
        junior_tokens_after: 0,
        senior_tokens_after: 0,
    };
    for e in events {
        match e {
            Event::Escalated { shadow: false, .. } => {
                if returned {
                    r.escalations_after += 1;
                }
                handed_off = true;
            }
            Event::SeniorReturned { .. } => returned = true,
            Event::StepEnded {
                actor: Actor::Junior,
                ..
            } if returned => r.junior_steps_after += 1,
            Event::CostIncurred {
                actor,
                output_tokens,
                ..
            } if handed_off => match actor {
                Actor::Senior => r.senior_tokens_after += output_tokens,
                _ => r.junior_tokens_after += output_tokens,
            },
            Event::SessionEnded { outcome, .. } => {
                r.passed = *outcome == Outcome::Success;
                let labelled = matches!(outcome, Outcome::Success | Outcome::Failure);
                return (returned && labelled).then_some(r);
            }
            _ => {}
        }
    }
    None
}

/// The sessions with a hand-back, summed up.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Returns {
    pub sessions: usize,
    /// Rate of correct results, 95 % interval over sessions.
    pub passed: Interval,
    pub mean_junior_steps_after: f64,
    /// Sessions that handed off again after the first hand-back.
    pub escalated_again: usize,
    pub mean_junior_tokens_after: f64,
    pub mean_senior_tokens_after: f64,
}

pub fn summarise(returns: &[Return]) -> Option<Returns> {
    if returns.is_empty() {
        return None;
    }
    let n = returns.len() as f64;
    let groups: Vec<Vec<Forecast>> = returns
        .iter()
        .map(|r| vec![Forecast::new(f64::from(u8::from(r.passed)), r.passed)])
        .collect();
    let rate = |fs: &[Forecast]| {
        (!fs.is_empty()).then(|| fs.iter().filter(|f| f.success).count() as f64 / fs.len() as f64)
    };
    let mean = |f: fn(&Return) -> f64| returns.iter().map(f).sum::<f64>() / n;
    Some(Returns {
        sessions: returns.len(),
        passed: bootstrap(&groups, rate, 2000, 15)?,
        mean_junior_steps_after: mean(|r| f64::from(r.junior_steps_after)),
        escalated_again: returns.iter().filter(|r| r.escalations_after > 0).count(),
        mean_junior_tokens_after: mean(|r| r.junior_tokens_after as f64),
        mean_senior_tokens_after: mean(|r| r.senior_tokens_after as f64),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{EscalationReason, Route};

    fn escalated() -> Event {
        Event::Escalated {
            step: 1,
            tick: 5,
            route: Route::Senior,
            reason: EscalationReason::Threshold,
            belief: 0.1,
            threshold: 0.2,
            why: vec![],
            shadow: false,
            propensity: None,
        }
    }

    fn cost(actor: Actor, output_tokens: u64) -> Event {
        Event::CostIncurred {
            actor,
            model: String::new(),
            input_tokens: 0,
            output_tokens,
            usd: 0.0,
            estimated: false,
        }
    }

    fn ended(outcome: Outcome) -> Event {
        Event::SessionEnded {
            outcome,
            censored: true,
            steps: 3,
            ticks: 9,
            usd: 0.0,
            ask: Default::default(),
        }
    }

    fn junior_step() -> Event {
        Event::StepEnded {
            step: 2,
            actor: Actor::Junior,
            tick: 9,
            tool: None,
            ok: true,
            belief: 0.5,
            terms: vec![],
            checkpoint: None,
        }
    }

    #[test]
    fn a_hand_back_and_what_followed_it_are_counted() {
        let events = [
            cost(Actor::Junior, 7),
            escalated(),
            cost(Actor::Senior, 40),
            Event::SeniorReturned { step: 2, tick: 5 },
            cost(Actor::Junior, 4),
            junior_step(),
            escalated(),
            ended(Outcome::Failure),
        ];
        let r = session_return(&events).expect("a return");
        assert!(!r.passed);
        assert_eq!(r.junior_steps_after, 1);
        assert_eq!(r.escalations_after, 1);
        assert_eq!((r.junior_tokens_after, r.senior_tokens_after), (4, 40));
        // No hand-back, or no label: not a return.
        assert!(session_return(&[escalated(), ended(Outcome::Failure)]).is_none());
        let unlabelled = [
            escalated(),
            Event::SeniorReturned { step: 2, tick: 5 },
            ended(Outcome::Aborted),
        ];
        assert!(session_return(&unlabelled).is_none());
        let s = summarise(&[r]).expect("summary");
        assert_eq!(s.sessions, 1);
        assert_eq!(s.passed.estimate, 0.0);
    }
}
