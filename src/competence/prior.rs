//! The built-in calibration used before any labelled session exists.
//!
//! This is a *prior*, hand-set to be plausible, not a fit to data: it encodes only the
//! direction of each signal (uncertain tokens and failed steps lower the belief) and keeps
//! every per-token effect tiny, because a session has thousands of strongly dependent
//! tokens and summing them at face value would make any long session collapse. Replace it
//! with `handoff calibrate` output as soon as labelled sessions exist.
//!
//! Each likelihood is built from hand-set failure-session bin frequencies f₀ and per-bin
//! log-ratios d: f₁ ∝ f₀·e^d, renormalised (so the stored ratios differ from d by one
//! constant of a few 10⁻⁴). Tempering c = 1 and the identity map: the numbers here are the
//! effects themselves.

use std::collections::BTreeMap;

use super::calibration::Calibration;
use super::calibrator::CalibrationMap;
use super::likelihood::Likelihood;
use crate::protocol::SignalKind;

/// π₀ of the prior: a small junior on routine repository tasks succeeds more often than not.
pub const PRIOR_SUCCESS_RATE: f64 = 0.7;

/// (signal, interior edges, failure-session frequencies f₀, log-ratios d) of one token signal.
type TokenTable = (SignalKind, &'static [f64], &'static [f64], &'static [f64]);

const TOKEN_TABLES: [TokenTable; 3] = [
    (
        SignalKind::Entropy,
        &[0.05, 0.3, 0.7, 1.2, 2.0],
        &[0.53, 0.17, 0.12, 0.085, 0.06, 0.035],
        &[0.0, 0.0, -0.0005, -0.002, -0.004, -0.008],
    ),
    (
        SignalKind::Margin,
        &[0.1, 0.3, 0.6, 0.9],
        &[0.04, 0.07, 0.115, 0.2, 0.575],
        &[-0.008, -0.004, -0.001, 0.0, 0.0],
    ),
    (
        SignalKind::Surprise,
        &[0.05, 0.3, 1.0, 2.5],
        &[0.58, 0.17, 0.12, 0.075, 0.055],
        &[0.0, 0.0, -0.0005, -0.003, -0.008],
    ),
];

/// (signal, per-step rate in successful sessions, log-ratio when present).
///
/// Low base rates keep the (positive) evidence of a fact's *absence* below 0.003 per step.
const STEP_TABLES: [(SignalKind, f64, f64); 6] = [
    (SignalKind::ToolError, 0.003, -0.25),
    (SignalKind::PatchRejected, 0.003, -0.35),
    (SignalKind::CheckFailed, 0.003, -0.5),
    (SignalKind::NoDiff, 0.003, -0.1),
    // A reply the loop could not act on: small models that fall into writing prose or a
    // broken call seldom come back by themselves.
    (SignalKind::MalformedCall, 0.003, -0.4),
    (SignalKind::NoToolCall, 0.003, -0.5),
];

/// The repeat count (0, 1, 2, 3 or more earlier identical moves): per-step rates in
/// successful sessions and log-ratios, growing with the count; a loop is the commonest way
/// a small model fails.
const REPEAT_RATES: [f64; 3] = [0.002, 0.0005, 0.0002];
const REPEAT_LLRS: [f64; 3] = [-0.4, -0.9, -1.6];

/// (signal, per-step rate in successful sessions, log-ratio when present) of the facts
/// logged only when present: their absence is never added, so only the present ratio acts.
/// A test run that fixes failing tests is the one fact that raises the belief.
///
/// `touched_protected` is set no stronger than a failed check (−0.5), though trying to
/// rewrite the test is a strong sign the junior cannot fix the code: the change is refused
/// or undone, so the label stays honest whatever the judge says, and a task that really
/// asks for a test to be edited trips the same fact. A fitted calibration learns its real
/// weight; the prior only points it the right way.
///
/// The examples' two facts are set weak on purpose. Measured on HumanEval, where the hidden
/// tests repeat most docstring examples, they are far stronger (the 0.5B's first replies:
/// 84 of 86 that pass the hidden test pass their examples, 11 of 78 that fail it do); a real
/// repository's examples are fewer and its tests differ, so the prior only points the right
/// way: a failed example as much as a failed check, a passing set less than fixed tests.
///
/// The candidates' two facts are weak too: agreement among a small model's samples is
/// weaker evidence than its examples (plain agreement separates right from wrong at AUROC
/// 0.62–0.71 on public samples), and it only exists when `agent.candidates` > 1.
const SPARSE_TABLES: [(SignalKind, f64, f64); 7] = [
    (SignalKind::TestsFixed, 0.05, 0.7),
    (SignalKind::Stuck, 0.005, -0.6),
    (SignalKind::TouchedProtected, 0.002, -0.5),
    (SignalKind::ExamplesFailed, 0.02, -0.5),
    (SignalKind::ExamplesPassed, 0.3, 0.4),
    (SignalKind::CandidatesAgree, 0.5, 0.2),
    (SignalKind::CandidatesSplit, 0.05, -0.3),
];

impl Calibration {
    /// The documented default for first use; see the module docs. It is a prior, not a fit.
    pub fn prior() -> Calibration {
        let mut signals = BTreeMap::new();
        for (signal, edges, f0, d) in TOKEN_TABLES {
            let weighted: Vec<f64> = f0.iter().zip(d).map(|(p, d)| p * d.exp()).collect();
            let z: f64 = weighted.iter().sum();
            let f1 = weighted.iter().map(|w| w / z).collect();
            // The tables are constants checked by the tests below.
            if let Ok(l) = Likelihood::new(edges.to_vec(), f1, f0.to_vec()) {
                signals.insert(signal, l);
            }
        }
        for (signal, p1, present_llr) in STEP_TABLES.into_iter().chain(SPARSE_TABLES) {
            let p0 = p1 / present_llr.exp();
            if let Ok(l) = Likelihood::binary(p1, p0) {
                signals.insert(signal, l);
            }
        }
        let p0: Vec<f64> = REPEAT_RATES
            .iter()
            .zip(REPEAT_LLRS)
            .map(|(p1, d)| p1 / d.exp())
            .collect();
        let absent = |p: &[f64]| 1.0 - p.iter().sum::<f64>();
        let f1: Vec<f64> = std::iter::once(absent(&REPEAT_RATES))
            .chain(REPEAT_RATES)
            .collect();
        let f0: Vec<f64> = std::iter::once(absent(&p0)).chain(p0).collect();
        let edges = SignalKind::RepeatedAction.step_edges().to_vec();
        if let Ok(l) = Likelihood::new(edges, f1, f0) {
            signals.insert(SignalKind::RepeatedAction, l);
        }
        Calibration {
            prior: PRIOR_SUCCESS_RATE,
            tempering: 1.0,
            signals,
            map: CalibrationMap::Identity,
            source: "built-in prior (hand-set, not fitted)".into(),
            features: None,
            fitted_on: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_prior_has_every_signal_and_is_valid() {
        let c = Calibration::prior();
        c.validate().expect("valid");
        for kind in SignalKind::ALL {
            assert!(c.signals.contains_key(&kind), "{kind:?} missing");
        }
    }

    #[test]
    fn every_prior_effect_points_the_documented_way() {
        let c = Calibration::prior();
        let llr = |k: SignalKind, v: f64| c.signals[&k].llr(v);
        // Uncertain tokens lower the belief, confident ones raise it, all by < 0.01: a
        // hundred very hesitant tokens move the log-odds by about −2, a thousand
        // confident ones by about +2.
        assert!(llr(SignalKind::Entropy, 3.0) < 0.0 && llr(SignalKind::Entropy, 0.0) > 0.0);
        assert!(llr(SignalKind::Margin, 0.0) < 0.0 && llr(SignalKind::Margin, 1.0) > 0.0);
        assert!(llr(SignalKind::Surprise, 5.0) < 0.0 && llr(SignalKind::Surprise, 0.0) > 0.0);
        for k in [
            SignalKind::Entropy,
            SignalKind::Margin,
            SignalKind::Surprise,
        ] {
            assert!(c.signals[&k].llrs().iter().all(|l| l.abs() < 0.01), "{k:?}");
        }
        for (k, _, present) in STEP_TABLES {
            assert!((llr(k, 1.0) - present).abs() < 1e-12, "{k:?}");
            let absent = llr(k, 0.0);
            assert!(absent > 0.0 && absent < 0.003, "{k:?} absent {absent}");
        }
        for (k, _, present) in SPARSE_TABLES {
            assert!(k.is_sparse());
            assert!((llr(k, 1.0) - present).abs() < 1e-12, "{k:?}");
        }
        assert!(llr(SignalKind::TestsFixed, 1.0) > 0.0);
    }

    #[test]
    fn a_repeat_weighs_more_each_time() {
        let c = Calibration::prior();
        let l = |n: f64| c.signals[&SignalKind::RepeatedAction].llr(n);
        assert!(l(0.0) > 0.0 && l(0.0) < 0.003, "absent {}", l(0.0));
        assert!(
            l(1.0) < 0.0 && l(2.0) < l(1.0) && l(3.0) < l(2.0),
            "{} {} {}",
            l(1.0),
            l(2.0),
            l(3.0)
        );
        assert_eq!(l(7.0), l(3.0), "3 or more share a bin");
        assert!((l(1.0) - REPEAT_LLRS[0]).abs() < 1e-3);
    }
}
