//! The policies of the study, scored on the same draws.
//!
//! A policy decides, per query, the tick at which it escalates (or that the junior
//! finishes). Escalating at tick t costs κ·t of junior compute plus γ, and the answer is
//! the senior's; finishing costs κ·T and the answer is the junior's. Every policy sees the
//! same queries and the same senior outcomes, so differences are the policies' own.

use serde::Serialize;

use super::world::{Draws, World};

/// How a policy did over a set of queries.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PolicyPoint {
    pub name: String,
    pub accuracy: f64,
    /// Mean compute cost per query: κ·(junior ticks) + γ·(escalated).
    pub cost: f64,
    pub escalation_rate: f64,
    /// Mean tick of the escalations; `None` when the policy never escalated.
    pub mean_escalation_tick: Option<f64>,
    /// Mean of cost + L·(wrong), with the senior's loss taken in expectation, L(1 − p_S):
    /// the objective the optimal policy minimises, with less noise than the realised one.
    #[serde(skip)]
    pub objective: f64,
}

/// Scores a decision rule: `decide(i)` is the escalation tick of query i, or `None`.
pub fn score(
    world: &World,
    draws: &Draws,
    name: &str,
    decide: impl Fn(usize) -> Option<usize>,
) -> PolicyPoint {
    let c = &world.costs;
    let horizon = draws.horizon as f64;
    let (mut correct, mut cost, mut objective) = (0usize, 0.0, 0.0);
    let (mut escalations, mut ticks) = (0usize, 0.0);
    for (i, q) in draws.queries.iter().enumerate() {
        match decide(i) {
            Some(t) => {
                let spent = c.kappa * t as f64 + c.route.gamma;
                cost += spent;
                objective += spent + c.loss * (1.0 - c.route.p_success);
                correct += usize::from(q.senior_ok);
                escalations += 1;
                ticks += t as f64;
            }
            None => {
                let spent = c.kappa * horizon;
                cost += spent;
                objective += spent + if q.success { 0.0 } else { c.loss };
                correct += usize::from(q.success);
            }
        }
    }
    let n = draws.queries.len().max(1) as f64;
    PolicyPoint {
        name: name.to_string(),
        accuracy: correct as f64 / n,
        cost: cost / n,
        escalation_rate: escalations as f64 / n,
        mean_escalation_tick: (escalations > 0).then(|| ticks / escalations as f64),
        objective: objective / n,
    }
}

/// A threshold rule on a belief: escalate at the first t with B_t < τ_t.
pub fn first_below(path: &[f64], tau: impl Fn(usize) -> f64) -> Option<usize> {
    path.iter().enumerate().position(|(t, b)| *b < tau(t))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn costs_and_accuracy_by_hand() {
        let world = World::default();
        let draws = world.draw(1, 0, 4, 0.0).expect("draw");
        let never = score(&world, &draws, "never", |_| None);
        let ok = draws.queries.iter().filter(|q| q.success).count() as f64 / 4.0;
        assert_eq!(never.accuracy, ok);
        assert!((never.cost - 1.0).abs() < 1e-12, "κT = 1");
        assert_eq!(never.mean_escalation_tick, None);
        let at_ten = score(&world, &draws, "ten", |_| Some(10));
        assert!((at_ten.cost - (10.0 / 40.0 + 5.0)).abs() < 1e-12);
        assert_eq!(at_ten.escalation_rate, 1.0);
        assert_eq!(at_ten.mean_escalation_tick, Some(10.0));
        let senior = draws.queries.iter().filter(|q| q.senior_ok).count() as f64 / 4.0;
        assert_eq!(at_ten.accuracy, senior);
        // Objective: cost + L(1 − p_S) = 5.25 + 1.
        assert!((at_ten.objective - 6.25).abs() < 1e-12);
    }

    #[test]
    fn rules_pick_the_first_crossing() {
        assert_eq!(first_below(&[0.6, 0.5, 0.3, 0.1], |_| 0.4), Some(2));
        assert_eq!(first_below(&[0.6, 0.5], |t| [0.7, 0.1][t]), Some(0));
        assert_eq!(first_below(&[0.6, 0.5], |_| 0.1), None);
    }
}
