//! The step-clock plan against a known truth: simulated shadow sessions whose logged
//! beliefs are the exact posterior, so a plan on the right process must predict what its
//! policy costs on sessions it never saw.

use std::collections::BTreeMap;

use super::*;
use crate::config::RouteMode;
use crate::sim::{LogOptions, SessionPlan, World};

/// Simulated sessions of one seed, keyed by id.
fn sessions(seed: u64, n: usize) -> BTreeMap<String, Vec<Event>> {
    let options = LogOptions {
        sessions: n,
        seed,
        tokens_per_step: 10,
        writers: 1,
        explore: None,
    };
    let plan = SessionPlan::new(&World::default(), &options).expect("plan");
    (0..n)
        .map(|i| {
            let s = plan.session(i).expect("session");
            (s.id, s.events.into_iter().map(|e| e.event).collect())
        })
        .collect()
}

/// The simulated world's costs in a config: κ per tick, L, the senior's γ and p.
fn config() -> Config {
    let w = World::default();
    let mut c = Config::default();
    c.costs.kappa = w.costs.kappa;
    c.costs.loss = w.costs.loss;
    c.costs.gamma_senior = w.costs.route.gamma;
    c.costs.p_senior = w.costs.route.p_success;
    c.policy.route = RouteMode::Senior;
    c
}

fn report(seed: u64, n: usize) -> PlanReport {
    report_with(seed, n, config())
}

fn report_with(seed: u64, n: usize, config: Config) -> PlanReport {
    plan(
        &sessions(seed, n),
        &BTreeMap::new(),
        &config,
        &BeliefSource::Logged,
        None,
        None,
        &PlanOptions::default(),
    )
    .expect("plan")
}

fn policy<'a>(r: &'a PlanReport, name: &str) -> &'a PolicyScore {
    r.policies
        .iter()
        .find(|p| p.policy.starts_with(name))
        .expect("policy")
}

#[test]
fn the_step_plan_predicts_what_its_policy_costs_on_held_out_sessions() {
    let seeds: Vec<u64> = (1..=8).collect();
    let mut gaps = Vec::new();
    for &seed in &seeds {
        let r = report(seed, 600);
        // Every simulated session is 4 steps of 10 tokens: the horizon and the hazard.
        assert_eq!(r.process.horizon(), 4);
        assert_eq!(r.process.hazard, vec![0.0, 0.0, 0.0, 1.0]);
        let dp = policy(&r, "step DP");
        let predicted = dp.predicted.expect("predicted");
        let gap = dp.realised.estimate - predicted;
        // Within the task bootstrap's own interval of the gap.
        let g = dp.gap.as_ref().expect("gap interval");
        assert!(
            g.lower <= 0.0 && 0.0 <= g.upper,
            "seed {seed}: realised − predicted {gap:.4} in [{:.4}, {:.4}]",
            g.lower,
            g.upper
        );
        // The plan beats both trivial policies where it is replayed.
        for other in ["never", "always"] {
            assert!(
                dp.realised.estimate < policy(&r, other).realised.estimate,
                "seed {seed}: {other}"
            );
        }
        eprintln!(
            "seed {seed}: predicted {predicted:.4}, realised {:.4} [{:.4}, {:.4}]",
            dp.realised.estimate, dp.realised.lower, dp.realised.upper
        );
        gaps.push(gap);
    }
    // No systematic bias across seeds: the mean gap within 3 standard errors of 0.
    let m = gaps.iter().sum::<f64>() / gaps.len() as f64;
    let sd = (gaps.iter().map(|g| (g - m).powi(2)).sum::<f64>() / (gaps.len() - 1) as f64).sqrt();
    let se = sd / (gaps.len() as f64).sqrt();
    assert!(m.abs() <= 3.0 * se, "mean gap {m:.4}, se {se:.4}: {gaps:?}");
}

#[test]
fn the_conformal_constant_keeps_missed_failures_under_alpha_on_held_out_sessions() {
    // A miss costs L = 4 against γ + L(1 − p) = 5.4 for an escalation (plus the tokens
    // already spent): the cheapest constant never escalates and lets every failure through
    // (with the world's L = 10 the posterior is sharp enough that it misses almost none,
    // and the constraint is idle).
    let mut cheap_misses = config();
    cheap_misses.costs.loss = 4.0;
    let alpha = PlanOptions::default().risk;
    let (mut conformal, mut ope) = (Vec::new(), Vec::new());
    for seed in 1..=8 {
        let r = report_with(seed, 600, cheap_misses.clone());
        let c = policy(&r, "constant τ (conformal");
        let o = policy(&r, "constant τ (off-policy)");
        let bound = r.risk.bound.expect("600 sessions certify α 0.1");
        assert!(bound <= alpha, "seed {seed}: bound {bound}");
        // The constraint costs something only where it binds: never less than the
        // unconstrained choice on the sessions it was chosen on.
        assert!(
            r.risk.tau >= r.ope_tau,
            "seed {seed}: {:?} vs {}",
            r.risk,
            r.ope_tau
        );
        eprintln!(
            "seed {seed}: conformal τ {:.2} miss {:.3} cost {:.4} | off-policy τ {:.2} miss {:.3} \
             cost {:.4} | never miss {:.3}",
            r.risk.tau,
            c.missed,
            c.realised.estimate,
            r.ope_tau,
            o.missed,
            o.realised.estimate,
            policy(&r, "never").missed
        );

        conformal.push(c.missed);
        ope.push(o.missed);
    }
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    // The guarantee is in expectation over draws: the across-seed mean of the held-out
    // missed share is at most α (each seed's share has a standard error near 0.012).
    assert!(mean(&conformal) <= alpha, "{conformal:?}");
    assert!(
        mean(&ope) > alpha,
        "the constraint binds in this world: {ope:?}"
    );
}
