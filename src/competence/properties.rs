//! Property tests of the judge's structural claims (kept to a few seconds in total; set
//! `PROPTEST_CASES` higher for a longer run).

use std::collections::BTreeMap;

use proptest::prelude::*;

use super::calibrator::{CalibrationMap, Isotonic, Platt, ScoreRow};
use super::dp::{DpSpec, solve, solve_visiting};
use super::law::LlrLaw;
use super::likelihood::Likelihood;
use super::signals::{MAX_SURPRISE, token_signals};
use super::threshold::{RouteCost, StopCosts, myopic};
use super::{Calibration, Judge, Threshold};
use crate::protocol::SignalKind;

fn config(cases: u32) -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(cases);
    ProptestConfig {
        cases,
        ..ProptestConfig::default()
    }
}

fn costs() -> impl Strategy<Value = StopCosts> {
    (0.0..0.02f64, 0.2..5.0f64, 0.0..0.8f64, 0.3..1.0f64).prop_map(|(kappa, loss, gamma, p)| {
        StopCosts {
            kappa,
            loss,
            route: RouteCost {
                gamma,
                p_success: p,
            },
        }
    })
}

/// A Bayes-consistent law of 1 to 5 atoms with positive probabilities.
fn law() -> impl Strategy<Value = LlrLaw> {
    prop::collection::vec((0.05..1.0f64, 0.05..1.0f64), 1..6).prop_map(|raw| {
        let (s1, s0): (f64, f64) = raw.iter().fold((0.0, 0.0), |a, r| (a.0 + r.0, a.1 + r.1));
        let pairs: Vec<(f64, f64)> = raw.iter().map(|(a, b)| (a / s1, b / s0)).collect();
        LlrLaw::consistent(&pairs).expect("valid law")
    })
}

/// Numbers closer to zero than this are ties as far as the float arithmetic can tell.
const TIE: f64 = 1e-10;

proptest! {
    #![proptest_config(config(48))]

    #[test]
    fn the_optimal_escalation_set_is_an_interval_from_zero(
        law in law(),
        costs in costs(),
        horizon in 1u64..40,
        grid in 21usize..161,
    ) {
        let spec = DpSpec { costs, horizon, grid_points: grid, stride: 1 };
        let escalate = costs.escalation_cost();
        let mut gaps = vec![Vec::new(); horizon as usize + 1];
        let schedule = solve_visiting(&law, &spec, |t, _, cont| {
            gaps[t as usize] = cont.iter().map(|c| c - escalate).collect();
        }).expect("solve");
        for (t, gap) in gaps.iter().enumerate() {
            // Escalating (gap ≥ 0) never happens above a point where going on is better.
            let first_continue = gap.iter().position(|g| *g < -TIE);
            if let Some(k) = first_continue {
                prop_assert!(gap[k..].iter().all(|g| *g < TIE), "t={t} gaps {gap:?}");
            }
            let tau = schedule.tau[t];
            for (i, g) in gap.iter().enumerate() {
                let b = i as f64 / (grid - 1) as f64;
                if *g > TIE { prop_assert!(b <= tau + 1e-9, "t={t} b={b} τ={tau}"); }
                if *g < -TIE { prop_assert!(b >= tau - 1e-9, "t={t} b={b} τ={tau}"); }
            }
        }
    }

    #[test]
    fn the_value_never_exceeds_either_way_of_stopping(
        law in law(),
        costs in costs(),
        horizon in 1u64..40,
        grid in 21usize..161,
    ) {
        let spec = DpSpec { costs, horizon, grid_points: grid, stride: 1 };
        let escalate = costs.escalation_cost();
        let mut ok = Ok(());
        solve_visiting(&law, &spec, |t, value, _| {
            for (i, v) in value.iter().enumerate() {
                let b = i as f64 / (grid - 1) as f64;
                let finish = costs.kappa * (horizon - t) as f64 + costs.loss * (1.0 - b);
                if *v > escalate + 1e-12 || *v > finish + 1e-9 {
                    ok = Err(format!("t={t} b={b}: V={v}, escalate {escalate}, finish {finish}"));
                }
            }
        }).expect("solve");
        prop_assert!(ok.is_ok(), "{:?}", ok);
    }

    #[test]
    fn the_optimal_threshold_never_exceeds_the_myopic_one(
        law in law(),
        costs in costs(),
        horizon in 1u64..40,
        grid in 21usize..161,
    ) {
        // Continuing optimally costs at most finishing alone, so the optimal rule escalates
        // on a subset of the beliefs where the myopic rule does.
        let spec = DpSpec { costs, horizon, grid_points: grid, stride: 1 };
        let s = solve(&law, &spec).expect("solve");
        for (t, tau) in s.tau.iter().enumerate() {
            prop_assert!(*tau <= myopic(&costs, horizon, t as u64) + 1e-9, "t={t}");
        }
    }

    #[test]
    fn the_myopic_threshold_never_rises_with_time(costs in costs(), horizon in 0u64..10_000) {
        let mut previous = f64::INFINITY;
        for t in (0..=horizon + 5).step_by(((horizon / 50) + 1) as usize) {
            let tau = myopic(&costs, horizon, t);
            prop_assert!((0.0..=1.0).contains(&tau));
            prop_assert!(tau <= previous, "t={t}");
            previous = tau;
        }
    }

    #[test]
    fn a_larger_likelihood_ratio_never_lowers_the_belief(
        p0 in prop::collection::vec(0.05..1.0f64, 4),
        p1 in prop::collection::vec(0.05..1.0f64, 4),
        shift in 0.0..0.5f64,
        bins in prop::collection::vec(0usize..3, 0..30),
        tempering in 0.0..2.0f64,
        platt in (0.01..3.0f64, -2.0..2.0f64),
    ) {
        // Moving mass of f₁ from bin 3 into `hit` raises that bin's ratio (and lowers bin
        // 3's, which the observations never visit): the belief may only go up.
        let norm = |v: &[f64]| { let s: f64 = v.iter().sum(); v.iter().map(|x| x / s).collect::<Vec<_>>() };
        let (p0, p1) = (norm(&p0), norm(&p1));
        let edges = vec![1.0, 2.0, 3.0];
        let hit = bins.first().copied().unwrap_or(0);
        let mut raised = p1.clone();
        let moved = raised[3] * shift;
        raised[3] -= moved;
        raised[hit] += moved;
        for map in [CalibrationMap::Identity, CalibrationMap::Platt(Platt { a: platt.0, b: platt.1 })] {
            let judge_with = |f1: Vec<f64>| {
                let mut signals = BTreeMap::new();
                signals.insert(SignalKind::Entropy, Likelihood::new(edges.clone(), f1, p0.clone()).expect("valid"));
                let cal = Calibration { prior: 0.6, tempering, signals, map: map.clone(), source: String::new(), features: None, fitted_on: None };
                let mut j = Judge::new(cal, Threshold::Constant(0.5));
                for b in &bins {
                    j.observe_token(&super::TokenSignals { entropy: Some(*b as f64 + 0.5), ..Default::default() });
                }
                (j.log_odds(), j.belief())
            };
            let (l_base, b_base) = judge_with(p1.clone());
            let (l_up, b_up) = judge_with(raised.clone());
            prop_assert!(l_up >= l_base - 1e-12);
            prop_assert!(b_up >= b_base - 1e-12);
        }
    }

    #[test]
    fn isotonic_output_is_monotone(
        rows in prop::collection::vec((-5.0..5.0f64, any::<bool>(), 0.1..3.0f64), 2..60),
        probes in prop::collection::vec(-6.0..6.0f64, 1..40),
    ) {
        let rows: Vec<ScoreRow> = rows.into_iter().map(|(score, label, weight)| ScoreRow { score, label, weight }).collect();
        prop_assume!(rows.iter().any(|r| r.label) && rows.iter().any(|r| !r.label));
        let iso = Isotonic::fit(&rows).expect("fit");
        prop_assert!(iso.y.windows(2).all(|w| w[0] <= w[1]));
        prop_assert!(iso.x.windows(2).all(|w| w[0] < w[1]));
        let mut probes = probes;
        probes.sort_by(f64::total_cmp);
        let out: Vec<f64> = probes.iter().map(|p| iso.apply(*p)).collect();
        prop_assert!(out.windows(2).all(|w| w[0] <= w[1] + 1e-15), "{out:?}");
        prop_assert!(out.iter().all(|p| (0.0..=1.0).contains(p)));
    }

    #[test]
    fn token_signals_never_panic_and_stay_in_range(
        chosen in prop::option::of(prop_oneof![
            Just(f64::NAN), Just(f64::NEG_INFINITY), Just(f64::INFINITY), Just(-9999.0), -30.0..0.5f64
        ]),
        alts in prop::collection::vec((0u8..6, prop_oneof![
            Just(f64::NAN), Just(f64::NEG_INFINITY), Just(-9999.0), -20.0..0.1f64
        ]), 0..8),
    ) {
        let names = ["a", "b", "c", "d", "e", "f"];
        let list: Vec<(&str, f64)> = alts.iter().map(|(i, lp)| (names[*i as usize], *lp)).collect();
        let s = token_signals("a", chosen, list.iter().copied());
        if let Some(h) = s.entropy {
            prop_assert!(h.is_finite() && h >= 0.0 && h <= ((list.len() + 2) as f64).ln() + 1e-9, "{h}");
        }
        if let Some(m) = s.margin {
            prop_assert!((0.0..=1.0 + 1e-12).contains(&m), "{m}");
        }
        if let Some(x) = s.surprise {
            prop_assert!((0.0..=MAX_SURPRISE).contains(&x), "{x}");
        }
    }
}
