//! The optimal threshold schedule on the step clock, by backward induction over the
//! logged process ([`super::step_process`]).
//!
//! At decision point k (the end of junior step k) with the belief in bin i:
//! - escalating costs E = γ + L(1 − p) (the route's cost and its chance of failing);
//! - going on: with probability h_k(i) this was the session's last step and it ends as the
//!   logged sessions that ended in bin i did (L per failure, E per hand-off by the loop's
//!   own rules); otherwise the next step's junior tokens are paid (κ each) and the bin
//!   moves by the logged kernel of step k.
//!
//! V_k(i) = min(E, C_k(i)),
//! C_k(i) = h_k(i)·end(i) + (1 − h_k(i))·(κ·n_{k+1} + Σ_j P_k(i→j)·V_{k+1}(j)),
//! and the session's value before its first step (no decision there: nothing has been
//! read) V₀ = κ·n₁ + Σ_j P(first = j)·V₁(j).
//!
//! Escalation is terminal here: the route ends the task. With `handoff = "step"` the
//! senior takes one step and hands back; docs/results/2026-12-01-schedule-planning.md gives the numbers for when that approximation holds.
//!
//! The schedule executed is a threshold per decision point: escalate iff B < τ_k, τ_k the
//! upper edge of the leading run of bins where escalating is optimal. When the optimal
//! escalation set is not such a run (no theorem guarantees it for an empirical kernel),
//! the count of decision points where it is not is reported, and the value predicted is
//! always the value of the threshold schedule actually executed.

use super::CompetenceError;
use super::step_process::StepProcess;

/// The costs of the stopping problem on the step clock.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct StepCosts {
    /// κ per junior output token.
    pub kappa: f64,
    /// L for a wrong final result.
    pub loss: f64,
    /// E = γ + L(1 − p): the expected cost of escalating (and of a hand-off by the loop).
    pub escalate: f64,
}

/// Pseudo-sessions pulling a bin's observed ending costs toward what a calibrated belief
/// predicts (L(1 − b̄)), so a bin where one or two sessions ended does not swing the plan.
pub const END_PRIOR_SESSIONS: f64 = 1.0;

/// The solved schedule.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct StepSchedule {
    /// τ_k for decision points k = 1..=K (index k − 1).
    pub tau: Vec<f64>,
    /// V₀ of the executed threshold schedule under the process: the predicted mean cost
    /// of a session.
    pub value: f64,
    /// V₀ of the unconstrained optimum (equal to `value` when every escalation set is a
    /// leading run of bins).
    pub optimal_value: f64,
    /// Decision points where the optimal escalation set is not a leading run of bins.
    pub not_interval: usize,
}

impl StepCosts {
    fn validate(&self) -> Result<(), CompetenceError> {
        let ok = self.kappa.is_finite()
            && self.kappa >= 0.0
            && self.loss.is_finite()
            && self.loss > 0.0
            && self.escalate.is_finite()
            && self.escalate >= 0.0;
        if ok {
            Ok(())
        } else {
            Err(CompetenceError::Invalid(format!(
                "step costs need κ ≥ 0, L > 0 and E ≥ 0: {self:?}"
            )))
        }
    }
}

/// The expected cost of letting a session end in each bin.
fn end_costs(process: &StepProcess, costs: &StepCosts) -> Vec<f64> {
    process
        .ends
        .iter()
        .zip(&process.centres)
        .map(|(e, centre)| {
            let centre = if centre.is_finite() { *centre } else { 0.5 };
            let observed = costs.loss * e.failed as f64 + costs.escalate * e.handed_off as f64;
            let prior = END_PRIOR_SESSIONS * costs.loss * (1.0 - centre);
            (observed + prior) / (e.total() as f64 + END_PRIOR_SESSIONS)
        })
        .collect()
}

/// Backward induction with the decision at each (k, bin) given by `decide(k, bin, C, E)`
/// (true: escalate); returns V₀.
fn induct(
    process: &StepProcess,
    costs: &StepCosts,
    mut decide: impl FnMut(usize, usize, f64) -> bool,
) -> f64 {
    let bins = process.centres.len();
    let horizon = process.horizon();
    let end = end_costs(process, costs);
    let mut next: Vec<f64> = vec![0.0; bins];
    for k in (0..horizon).rev() {
        let go_on = process.tokens.get(k + 1).map_or(0.0, |n| costs.kappa * n);
        let value: Vec<f64> = (0..bins)
            .map(|i| {
                let h = process.hazard_at(k, i);
                let ahead: f64 = process
                    .kernel_at(k, i)
                    .iter()
                    .zip(&next)
                    .map(|(p, v)| p * v)
                    .sum();
                let more = if h < 1.0 { go_on + ahead } else { 0.0 };
                let cont = h * end[i] + (1.0 - h) * more;
                if decide(k, i, cont) {
                    costs.escalate
                } else {
                    cont
                }
            })
            .collect();
        next = value;
    }
    let first: f64 = process.first.iter().zip(&next).map(|(p, v)| p * v).sum();
    process.tokens.first().map_or(0.0, |n| costs.kappa * n) + first
}

/// Solves the stopping problem on `process` under `costs`.
pub fn solve_steps(
    process: &StepProcess,
    costs: &StepCosts,
) -> Result<StepSchedule, CompetenceError> {
    costs.validate()?;
    let bins = process.centres.len();
    let horizon = process.horizon();
    let mut escalating = vec![vec![false; bins]; horizon];
    let optimal_value = induct(process, costs, |k, i, cont| {
        let e = costs.escalate < cont;
        escalating[k][i] = e;
        e
    });
    let mut not_interval = 0;
    let tau = escalating
        .iter()
        .map(|set| {
            let lead = set.iter().take_while(|e| **e).count();
            if set[lead..].iter().any(|e| *e) {
                not_interval += 1;
            }
            match lead {
                0 => 0.0,
                j if j == bins => 1.0,
                j => process.cuts[j - 1],
            }
        })
        .collect::<Vec<f64>>();
    let value = schedule_value(process, costs, &tau)?;
    Ok(StepSchedule {
        tau,
        value,
        optimal_value,
        not_interval,
    })
}

/// V₀ under `process` of the threshold schedule `tau` (τ_k at index k − 1, the last value
/// held beyond its end): what the process predicts any step schedule costs, so the
/// schedule an off-policy search picks can be predicted too.
pub fn schedule_value(
    process: &StepProcess,
    costs: &StepCosts,
    tau: &[f64],
) -> Result<f64, CompetenceError> {
    costs.validate()?;
    // A bin escalates when its mean belief is below τ: for a τ on a cut (the DP's own)
    // that is exactly the bins below the cut; for any other τ, the bin τ falls in is
    // decided by where most of its mass is taken to be.
    let below = |k: usize, i: usize| process.centres[i] < super::threshold::schedule_at(tau, k);
    Ok(induct(process, costs, |k, i, _| below(k, i)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::competence::step_process::{DecisionPath, Ending, ProcessOptions};

    fn path(beliefs: &[f64], ending: Ending) -> DecisionPath {
        DecisionPath {
            beliefs: beliefs.to_vec(),
            tokens: vec![10; beliefs.len()],
            ending,
        }
    }

    fn process() -> StepProcess {
        // Low-belief sessions fail, high ones pass; all two decision points long.
        let mut paths = Vec::new();
        for _ in 0..10 {
            paths.push(path(&[0.2, 0.1], Ending::Finished(false)));
            paths.push(path(&[0.8, 0.9], Ending::Finished(true)));
        }
        let options = ProcessOptions {
            max_bins: 2,
            min_per_bin: 1,
            ..ProcessOptions::default()
        };
        StepProcess::estimate(&paths, options).expect("estimate")
    }

    #[test]
    fn a_two_bin_process_by_hand() {
        let p = process();
        assert_eq!(p.cuts, vec![0.8]);
        let costs = StepCosts {
            kappa: 0.01,
            loss: 1.0,
            escalate: 0.3,
        };
        let s = solve_steps(&p, &costs).expect("solve");
        // End costs: low bin (10 failed + 1·(1 − 0.15))/11 = 0.9864, high (0 + 0.15)/11.
        let low_end = (10.0 + 0.85) / 11.0;
        let high_end = 0.15 / 11.0;
        // k = 2 (h = 1): escalate where the end costs more than 0.3 — the low bin.
        // k = 1 (h = 0): going on costs κ·10 = 0.1 plus V₂ of the same bin: low 0.4 > 0.3.
        assert_eq!(s.tau, vec![0.8, 0.8]);
        assert_eq!(s.not_interval, 0);
        let v1_low = 0.3;
        let v1_high = 0.1 + high_end;
        let v0 = 0.1 + 0.5 * v1_low + 0.5 * v1_high;
        assert!((s.value - v0).abs() < 1e-12, "{} vs {v0}", s.value);
        assert!((s.optimal_value - v0).abs() < 1e-12);
        // Never escalating: V₀ = 0.1 + 0.1 + ½·(low end + high end).
        let never = schedule_value(&p, &costs, &[0.0]).expect("value");
        assert!((never - (0.2 + 0.5 * (low_end + high_end))).abs() < 1e-12);
        assert!(never > s.value);
        // Always: escalate at the first decision point.
        let always = schedule_value(&p, &costs, &[1.0]).expect("value");
        assert!((always - 0.4).abs() < 1e-12);
    }

    #[test]
    fn dear_escalation_is_never_chosen_and_bad_costs_are_errors() {
        let p = process();
        let costs = StepCosts {
            kappa: 0.0,
            loss: 1.0,
            escalate: 2.0,
        };
        let s = solve_steps(&p, &costs).expect("solve");
        assert_eq!(s.tau, vec![0.0, 0.0]);
        let bad = StepCosts { loss: 0.0, ..costs };
        assert!(solve_steps(&p, &bad).is_err());
    }
}
