//! Thresholds τ_t: when is the belief low enough that handing off is cheaper than going on.
//!
//! Costs are the stopping problem's own numbers (κ, γ, L, p), kept here rather than read
//! from the configuration so the science stays independent of file formats.

use serde::{Deserialize, Serialize};

use super::CompetenceError;

/// One escalation route: its one-off cost γ and the probability p that it ends in a
/// correct result.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RouteCost {
    pub gamma: f64,
    pub p_success: f64,
}

impl RouteCost {
    /// γ + L(1 − p): the expected cost of escalating by this route now.
    pub fn expected_cost(&self, loss: f64) -> f64 {
        self.gamma + loss * (1.0 - self.p_success)
    }
}

/// The cost model of one session: κ per junior token, L for a wrong result, and the
/// escalation route in force.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct StopCosts {
    pub kappa: f64,
    pub loss: f64,
    pub route: RouteCost,
}

impl StopCosts {
    /// Costs when escalation is triaged between the senior and the operator: only the
    /// expected cost of escalating enters the stopping problem, so the better route of the
    /// two stands for both.
    pub fn triage(kappa: f64, loss: f64, senior: RouteCost, operator: RouteCost) -> Self {
        let route = if operator.expected_cost(loss) < senior.expected_cost(loss) {
            operator
        } else {
            senior
        };
        StopCosts { kappa, loss, route }
    }

    /// γ + L(1 − p) of the route in force.
    pub fn escalation_cost(&self) -> f64 {
        self.route.expected_cost(self.loss)
    }

    /// Rejects numbers that make the stopping problem meaningless.
    pub fn validate(&self) -> Result<(), CompetenceError> {
        let ok = self.kappa.is_finite()
            && self.kappa >= 0.0
            && self.loss.is_finite()
            && self.loss > 0.0
            && self.route.gamma.is_finite()
            && self.route.gamma >= 0.0
            && (0.0..=1.0).contains(&self.route.p_success);
        if ok {
            Ok(())
        } else {
            Err(CompetenceError::Invalid(format!(
                "costs need κ ≥ 0, L > 0, γ ≥ 0 and p in [0, 1]: {self:?}"
            )))
        }
    }
}

/// The myopic threshold τ^myo_t = p + (κ(T − t) − γ)/L, clamped to [0, 1]: escalate iff
/// escalating now beats finishing alone with no further chance to escalate
/// (γ + L(1−p) < κ(T−t) + L(1−B_t)). Ticks past the horizon count as T.
pub fn myopic(costs: &StopCosts, horizon: u64, tick: u64) -> f64 {
    let remaining = horizon.saturating_sub(tick) as f64;
    let tau = costs.route.p_success + (costs.kappa * remaining - costs.route.gamma) / costs.loss;
    if tau.is_nan() {
        0.0
    } else {
        tau.clamp(0.0, 1.0)
    }
}

/// Entry `i` of a threshold schedule, the last entry holding past its end; an empty
/// schedule is τ = 0 (never escalates). The one reading of a schedule, live and offline.
pub fn schedule_at(taus: &[f64], i: usize) -> f64 {
    taus.get(i).or(taus.last()).copied().unwrap_or(0.0)
}

/// The threshold a [`Judge`](super::Judge) compares B_t with.
#[derive(Debug, Clone, PartialEq)]
pub enum Threshold {
    Constant(f64),
    Myopic {
        costs: StopCosts,
        horizon: u64,
    },
    /// A precomputed τ_t per tick (e.g. the optimal schedule); past its end the last value.
    Schedule(Vec<f64>),
    /// τ_k at the end of junior step k = 1, 2, … (index k − 1; past its end the last
    /// value), and no decision in between: the schedule `handoff schedule` plans on the
    /// step clock, executed at the granularity it was planned for. k counts the junior's
    /// steps since the session started, as the logged shadow sessions it is planned on do.
    Steps(Vec<f64>),
}

impl Threshold {
    /// τ_t on the token clock. An empty schedule never escalates (τ = 0), and neither does
    /// a step schedule between step ends ([`Threshold::at_step_end`] is its decision).
    pub fn at(&self, tick: u64) -> f64 {
        match self {
            Threshold::Steps(_) => 0.0,
            Threshold::Constant(tau) => *tau,
            Threshold::Myopic { costs, horizon } => myopic(costs, *horizon, tick),
            Threshold::Schedule(taus) => {
                schedule_at(taus, usize::try_from(tick).unwrap_or(usize::MAX))
            }
        }
    }

    /// τ right after junior step `k` (1-based) has ended at `tick`: a step schedule's τ_k,
    /// any other threshold's τ_t.
    pub fn at_step_end(&self, k: u64, tick: u64) -> f64 {
        match self {
            Threshold::Steps(taus) => schedule_at(
                taus,
                usize::try_from(k.saturating_sub(1)).unwrap_or(usize::MAX),
            ),
            other => other.at(tick),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn costs() -> StopCosts {
        StopCosts {
            kappa: 0.001,
            loss: 2.0,
            route: RouteCost {
                gamma: 0.3,
                p_success: 0.9,
            },
        }
    }

    #[test]
    fn myopic_values_by_hand() {
        // τ = 0.9 + (0.001·(100 − t) − 0.3)/2.
        let c = costs();
        assert!((myopic(&c, 100, 0) - (0.9 + (0.1 - 0.3) / 2.0)).abs() < 1e-12);
        assert!((myopic(&c, 100, 60) - (0.9 + (0.04 - 0.3) / 2.0)).abs() < 1e-12);
        assert!((myopic(&c, 100, 100) - 0.75).abs() < 1e-12);
        assert!((myopic(&c, 100, 500) - 0.75).abs() < 1e-12);
        // Clamped at 1 when compute is expensive.
        let dear = StopCosts { kappa: 1.0, ..c };
        assert_eq!(myopic(&dear, 100, 0), 1.0);
    }

    #[test]
    fn triage_takes_the_cheaper_route() {
        let senior = RouteCost {
            gamma: 0.4,
            p_success: 0.9,
        };
        let operator = RouteCost {
            gamma: 0.2,
            p_success: 0.85,
        };
        let c = StopCosts::triage(0.0, 1.0, senior, operator);
        assert_eq!(c.route, operator);
        assert!((c.escalation_cost() - 0.35).abs() < 1e-12);
        let c = StopCosts::triage(0.0, 10.0, senior, operator);
        assert_eq!(c.route, senior);
    }

    #[test]
    fn schedules_hold_their_last_value() {
        let t = Threshold::Schedule(vec![0.5, 0.4, 0.3]);
        assert_eq!(t.at(1), 0.4);
        assert_eq!(t.at(99), 0.3);
        assert_eq!(Threshold::Schedule(vec![]).at(0), 0.0);
        assert_eq!(Threshold::Constant(0.25).at(7), 0.25);
    }

    #[test]
    fn a_step_schedule_decides_only_at_step_ends() {
        let t = Threshold::Steps(vec![0.1, 0.6]);
        assert_eq!(t.at(5), 0.0, "no decision between step ends");
        assert_eq!(t.at_step_end(1, 5), 0.1);
        assert_eq!(t.at_step_end(2, 9), 0.6);
        assert_eq!(t.at_step_end(7, 90), 0.6, "the last value holds");
        assert_eq!(Threshold::Constant(0.3).at_step_end(2, 9), 0.3);
        assert_eq!(Threshold::Steps(vec![]).at_step_end(1, 1), 0.0);
    }

    #[test]
    fn bad_costs_are_rejected() {
        assert!(costs().validate().is_ok());
        assert!(
            StopCosts {
                loss: 0.0,
                ..costs()
            }
            .validate()
            .is_err()
        );
        assert!(
            StopCosts {
                kappa: f64::NAN,
                ..costs()
            }
            .validate()
            .is_err()
        );
    }
}
