//! End-to-end checks of fitting on a known generative process (the paper's synthetic
//! setting: Beta-distributed signals given Y). Where the truth is known, the fit must find
//! it: tempering ≈ 1 for independent ticks, ≈ 1/k when each value is repeated k times, and
//! calibrated beliefs on fresh sessions.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rand_distr::{Beta, Distribution};

use super::calibrator::MapKind;
use super::fit::{FitOptions, fit};
use super::trajectory::Trajectory;
use crate::protocol::{Observation, SignalKind};

/// Sessions of `ticks` ticks; each tick's entropy is 3·Beta(2,5) for successes and
/// 3·Beta(3,4) for failures, each drawn value repeated `repeat` times (dependent tokens).
fn sessions(rng: &mut StdRng, n: usize, ticks: usize, repeat: usize) -> Vec<Trajectory> {
    let ok = Beta::new(2.0, 5.0).expect("beta");
    let bad = Beta::new(3.0, 4.0).expect("beta");
    (0..n)
        .map(|_| {
            let label = rng.random_bool(0.6);
            let mut t = Trajectory::new(Some(label));
            let mut k = 0;
            while k < ticks {
                let v = 3.0
                    * if label {
                        ok.sample(rng)
                    } else {
                        bad.sample(rng)
                    };
                for _ in 0..repeat.min(ticks - k) {
                    t.push_tick(&[Observation {
                        signal: SignalKind::Entropy,
                        value: v,
                    }]);
                    k += 1;
                }
            }
            t
        })
        .collect()
}

/// Expected calibration error of final-tick beliefs, 10 equal-width bins.
fn ece(pairs: &[(f64, bool)]) -> f64 {
    let mut bins = [(0.0, 0.0, 0.0); 10];
    for &(p, y) in pairs {
        let i = ((p * 10.0) as usize).min(9);
        bins[i].0 += p;
        bins[i].1 += if y { 1.0 } else { 0.0 };
        bins[i].2 += 1.0;
    }
    bins.iter()
        .filter(|b| b.2 > 0.0)
        .map(|b| (b.0 - b.1).abs())
        .sum::<f64>()
        / pairs.len() as f64
}

#[test]
fn independent_ticks_fit_a_tempering_near_one_and_calibrated_beliefs() {
    let mut rng = StdRng::seed_from_u64(7);
    let train = sessions(&mut rng, 600, 30, 1);
    let opts = FitOptions {
        map: MapKind::Identity,
        ..FitOptions::default()
    };
    let (cal, report) = fit(&train, &opts).expect("fit");
    assert!(
        (0.85..1.15).contains(&report.tempering),
        "tempering {} should be ≈ 1 for independent ticks",
        report.tempering
    );
    let test = sessions(&mut rng, 600, 30, 1);
    let pairs: Vec<(f64, bool)> = test
        .iter()
        .map(|t| (*cal.score(t).last().expect("ticks"), t.label == Some(true)))
        .collect();
    let e = ece(&pairs);
    assert!(e < 0.04, "ECE {e}");
}

#[test]
fn repeated_evidence_is_tempered_down() {
    let mut rng = StdRng::seed_from_u64(11);
    let train = sessions(&mut rng, 600, 40, 5);
    let (_, report) = fit(&train, &FitOptions::default()).expect("fit");
    assert!(
        (0.14..0.3).contains(&report.tempering),
        "tempering {} should be ≈ 1/5 when every value is seen 5 times",
        report.tempering
    );
    assert!(report.log_loss_fitted < report.log_loss_prior);
}

#[test]
fn the_dp_value_is_what_its_policy_costs_when_simulated() {
    use super::dp::{DpSpec, solve};
    use super::law::LlrLaw;
    use super::threshold::{RouteCost, StopCosts};

    let pairs = [(0.5, 0.2), (0.3, 0.3), (0.2, 0.5)];
    let law = LlrLaw::consistent(&pairs).expect("law");
    let costs = StopCosts {
        kappa: 0.004,
        loss: 1.0,
        route: RouteCost {
            gamma: 0.15,
            p_success: 0.9,
        },
    };
    let horizon = 30u64;
    let spec = DpSpec {
        costs,
        horizon,
        grid_points: 1001,
        stride: 1,
    };
    let schedule = solve(&law, &spec).expect("solve");
    let prior = 0.6;
    let mut rng = StdRng::seed_from_u64(3);
    let n = 40_000;
    let (mut sum, mut sum_sq) = (0.0, 0.0);
    for _ in 0..n {
        let y = rng.random_bool(prior);
        let mut log_odds = (prior / (1.0 - prior)).ln();
        let mut cost = 0.0;
        let mut t = 0;
        loop {
            let b = 1.0 / (1.0 + (-log_odds).exp());
            if b < schedule.tau[t as usize] {
                cost += costs.escalation_cost();
                break;
            }
            if t == horizon {
                cost += if y { 0.0 } else { costs.loss };
                break;
            }
            cost += costs.kappa;
            let u: f64 = rng.random();
            let mut acc = 0.0;
            for a in law.atoms() {
                acc += if y { a.p1 } else { a.p0 };
                if u < acc {
                    log_odds += a.llr;
                    break;
                }
            }
            t += 1;
        }
        sum += cost;
        sum_sq += cost * cost;
    }
    let mean = sum / n as f64;
    let sd = ((sum_sq / n as f64 - mean * mean) / n as f64).sqrt();
    let predicted = schedule.value_at(prior);
    assert!(
        (mean - predicted).abs() < 4.0 * sd + 1e-3,
        "simulated {mean} ± {sd}, DP says {predicted}"
    );
    // And the schedule is worth having: never escalating, or escalating at once, cost more.
    let never = costs.kappa * horizon as f64 + costs.loss * (1.0 - prior);
    assert!(predicted < never.min(costs.escalation_cost()) - 0.01);
}
