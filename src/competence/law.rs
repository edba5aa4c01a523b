//! Per-tick evidence laws: what the optimal schedule plans with.
//!
//! [`LlrLaw`] is a discrete law of one tick's log-likelihood ratio given Y; the simulator
//! builds one from its true generative process, and a [`Calibration`] builds its own.
//!
//! The DP needs the law of one tick's belief increment given Y. A calibration can give it
//! two ways: from its own histograms (convolving the token signals as if independent —
//! the same naive-Bayes assumption the belief makes, before tempering corrects it), or
//! empirically from labelled trajectories scored under it (no independence assumed).
//! Increments are on the calibrated log-odds scale: c·Σ llr times the map's slope.

use super::CompetenceError;
use super::calibration::Calibration;
use super::likelihood::Likelihood;
use super::trajectory::Trajectory;
use crate::protocol::SignalKind;

/// Largest |llr| an atom may carry: beyond it the belief is at 0 or 1 to machine precision.
pub const MAX_ATOM_LLR: f64 = 50.0;

/// One possible value of a tick's summed log-likelihood ratio and its probability under
/// success (`p1`) and failure (`p0`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LlrAtom {
    pub llr: f64,
    pub p1: f64,
    pub p0: f64,
}

/// A discrete law of the per-tick evidence given Y.
///
/// The belief moves by the atom's `llr` (that is what the judge does online), and the
/// probabilities give the predictive law. For a *consistent* law (llr = ln p1/p0 in every
/// atom, as [`LlrLaw::consistent`] builds) this is exact Bayes; laws estimated from data
/// need not be, and the DP then plans with the judge's actual update rule.
#[derive(Debug, Clone, PartialEq)]
pub struct LlrLaw {
    atoms: Vec<LlrAtom>,
}

impl LlrLaw {
    /// A law from atoms (validated: finite llr within ±[`MAX_ATOM_LLR`], non-negative
    /// probabilities each summing to 1 within 10⁻⁶, then renormalised exactly).
    pub fn new(atoms: Vec<LlrAtom>) -> Result<Self, CompetenceError> {
        let bad = |what: &str| Err(CompetenceError::Invalid(format!("llr law: {what}")));
        if atoms.is_empty() {
            return bad("needs at least one atom");
        }
        let atom_ok = |a: &LlrAtom| {
            let probability = |p: f64| p.is_finite() && p >= 0.0;
            a.llr.is_finite()
                && a.llr.abs() <= MAX_ATOM_LLR
                && probability(a.p1)
                && probability(a.p0)
        };
        if !atoms.iter().all(atom_ok) {
            return bad("atoms need finite llr and non-negative probabilities");
        }
        let s1: f64 = atoms.iter().map(|a| a.p1).sum();
        let s0: f64 = atoms.iter().map(|a| a.p0).sum();
        if (s1 - 1.0).abs() > 1e-6 || (s0 - 1.0).abs() > 1e-6 {
            return bad(&format!("probabilities sum to {s1} and {s0}, not 1"));
        }
        let atoms = atoms
            .into_iter()
            .filter(|a| a.p1 > 0.0 || a.p0 > 0.0)
            .map(|a| LlrAtom {
                llr: a.llr,
                p1: a.p1 / s1,
                p0: a.p0 / s0,
            })
            .collect();
        Ok(LlrLaw { atoms })
    }

    /// A Bayes-consistent law from outcome probabilities (p1, p0): llr = ln(p1/p0),
    /// clamped to ±[`MAX_ATOM_LLR`] where one side is 0.
    pub fn consistent(pairs: &[(f64, f64)]) -> Result<Self, CompetenceError> {
        let atoms = pairs
            .iter()
            .map(|&(p1, p0)| LlrAtom {
                llr: (p1 / p0).ln().clamp(-MAX_ATOM_LLR, MAX_ATOM_LLR),
                p1,
                p0,
            })
            .map(|a| {
                if a.llr.is_nan() {
                    LlrAtom { llr: 0.0, ..a }
                } else {
                    a
                }
            })
            .collect();
        LlrLaw::new(atoms)
    }

    /// A tick that carries no evidence (the belief stays put).
    pub fn no_evidence() -> Self {
        LlrLaw {
            atoms: vec![LlrAtom {
                llr: 0.0,
                p1: 1.0,
                p0: 1.0,
            }],
        }
    }

    pub fn atoms(&self) -> &[LlrAtom] {
        &self.atoms
    }

    /// The law of the sum of two independent evidences, coarsened to at most `max_atoms`.
    pub fn convolve(&self, other: &LlrLaw, max_atoms: usize) -> LlrLaw {
        let mut atoms = Vec::with_capacity(self.atoms.len() * other.atoms.len());
        for a in &self.atoms {
            for b in &other.atoms {
                atoms.push(LlrAtom {
                    llr: (a.llr + b.llr).clamp(-MAX_ATOM_LLR, MAX_ATOM_LLR),
                    p1: a.p1 * b.p1,
                    p0: a.p0 * b.p0,
                });
            }
        }
        LlrLaw { atoms }.coarsen(max_atoms)
    }

    /// With probability `weight` the tick's evidence comes from `other`, else from `self`
    /// (e.g. a step ends on this tick), coarsened to at most `max_atoms`.
    pub fn mix(&self, other: &LlrLaw, weight: f64, max_atoms: usize) -> LlrLaw {
        let w = weight.clamp(0.0, 1.0);
        let scaled = |law: &LlrLaw, s: f64| {
            law.atoms
                .iter()
                .map(move |a| LlrAtom {
                    llr: a.llr,
                    p1: a.p1 * s,
                    p0: a.p0 * s,
                })
                .collect::<Vec<_>>()
        };
        let mut atoms = scaled(self, 1.0 - w);
        atoms.extend(scaled(other, w));
        LlrLaw { atoms }.coarsen(max_atoms)
    }

    /// Merges atoms into at most `max_atoms` equal-width llr bins; a merged atom sits at the
    /// probability-weighted mean llr of what it absorbed.
    pub fn coarsen(mut self, max_atoms: usize) -> LlrLaw {
        self.atoms.retain(|a| a.p1 > 0.0 || a.p0 > 0.0);
        // Atoms at the same llr are one outcome as far as the belief is concerned.
        self.atoms.sort_by(|a, b| a.llr.total_cmp(&b.llr));
        self.atoms.dedup_by(|next, kept| {
            if next.llr == kept.llr {
                kept.p1 += next.p1;
                kept.p0 += next.p0;
                true
            } else {
                false
            }
        });
        let max_atoms = max_atoms.max(1);
        if self.atoms.len() <= max_atoms {
            return self;
        }
        let lo = self
            .atoms
            .iter()
            .map(|a| a.llr)
            .fold(f64::INFINITY, f64::min);
        let hi = self
            .atoms
            .iter()
            .map(|a| a.llr)
            .fold(f64::NEG_INFINITY, f64::max);
        let width = (hi - lo) / max_atoms as f64;
        let mut bins = vec![(0.0, 0.0, 0.0); max_atoms];
        for a in &self.atoms {
            let i = if width > 0.0 {
                (((a.llr - lo) / width) as usize).min(max_atoms - 1)
            } else {
                0
            };
            let mass = a.p1 + a.p0;
            bins[i].0 += a.llr * mass;
            bins[i].1 += a.p1;
            bins[i].2 += a.p0;
        }
        let atoms = bins
            .into_iter()
            .filter(|b| b.1 + b.2 > 0.0)
            .map(|(weighted, p1, p0)| LlrAtom {
                llr: weighted / (p1 + p0),
                p1,
                p0,
            })
            .collect();
        LlrLaw { atoms }
    }
}

/// Belief grid of the optimal schedule (`Calibration::optimal_schedule`): fine enough that τ moves smoothly.
pub const DEFAULT_GRID_POINTS: usize = 1001;
/// Atoms kept in the per-tick law of the optimal schedule.
pub const DEFAULT_LAW_ATOMS: usize = 64;

impl Calibration {
    /// How far one unit of summed llr moves the calibrated log-odds.
    fn belief_scale(&self) -> f64 {
        self.tempering * self.map.slope()
    }

    fn signal_law(&self, likelihood: &Likelihood) -> Result<LlrLaw, CompetenceError> {
        let scale = self.belief_scale();
        let atoms = likelihood
            .llrs()
            .iter()
            .zip(likelihood.p1().iter().zip(likelihood.p0()))
            .map(|(l, (p1, p0))| LlrAtom {
                llr: (scale * l).clamp(-MAX_ATOM_LLR, MAX_ATOM_LLR),
                p1: *p1,
                p0: *p0,
            })
            .collect();
        LlrLaw::new(atoms)
    }

    fn convolved(&self, kinds: impl Iterator<Item = SignalKind>, max_atoms: usize) -> LlrLaw {
        let mut law = LlrLaw::no_evidence();
        for kind in kinds {
            if let Some(Ok(signal)) = self.signals.get(&kind).map(|l| self.signal_law(l)) {
                law = law.convolve(&signal, max_atoms);
            }
        }
        law
    }

    /// The law of one token's evidence (entropy, margin, surprise convolved).
    pub fn token_law(&self, max_atoms: usize) -> LlrLaw {
        self.convolved(
            SignalKind::ALL.into_iter().filter(|k| k.is_token_signal()),
            max_atoms,
        )
    }

    /// The law of one step's evidence (the five always-logged facts convolved; the facts
    /// logged only when present are left out, as their absence adds nothing).
    pub fn step_law(&self, max_atoms: usize) -> LlrLaw {
        self.convolved(
            SignalKind::ALL
                .into_iter()
                .filter(|k| !k.is_token_signal() && !k.is_sparse()),
            max_atoms,
        )
    }

    /// A tick's law when a step ends on a tick with probability `step_probability` (about
    /// one over the mean tokens per step).
    pub fn per_tick_law(&self, step_probability: f64, max_atoms: usize) -> LlrLaw {
        let token = self.token_law(max_atoms);
        let with_step = token.convolve(&self.step_law(max_atoms), max_atoms);
        token.mix(&with_step, step_probability, max_atoms)
    }

    /// The empirical law of a tick's increment over labelled trajectories scored under this
    /// calibration (tick 0 included); every tick counts once.
    pub fn empirical_tick_law(
        &self,
        trajectories: &[Trajectory],
        max_atoms: usize,
    ) -> Result<LlrLaw, CompetenceError> {
        let slope = self.map.slope();
        let mut steps: Vec<(f64, bool)> = Vec::new();
        for t in trajectories {
            let Some(label) = t.label else { continue };
            let path = self.score_log_odds(t);
            let mut previous = self.prior_log_odds();
            for l in path {
                let d = (slope * (l - previous)).clamp(-MAX_ATOM_LLR, MAX_ATOM_LLR);
                steps.push((d, label));
                previous = l;
            }
        }
        let n1 = steps.iter().filter(|s| s.1).count() as f64;
        let n0 = steps.len() as f64 - n1;
        if n1 == 0.0 || n0 == 0.0 {
            return Err(CompetenceError::NotEnoughData(
                "an empirical law needs ticks of successful and failed sessions".into(),
            ));
        }
        steps.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut atoms: Vec<LlrAtom> = Vec::new();
        for (d, label) in steps {
            let (p1, p0) = if label {
                (1.0 / n1, 0.0)
            } else {
                (0.0, 1.0 / n0)
            };
            match atoms.last_mut() {
                Some(a) if a.llr == d => {
                    a.p1 += p1;
                    a.p0 += p0;
                }
                _ => atoms.push(LlrAtom { llr: d, p1, p0 }),
            }
        }
        Ok(LlrLaw::new(atoms)?.coarsen(max_atoms))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::competence::threshold::StopCosts;
    use crate::protocol::{Observation, StepFacts};

    fn mean(law: &LlrLaw, one: bool) -> f64 {
        law.atoms()
            .iter()
            .map(|a| a.llr * if one { a.p1 } else { a.p0 })
            .sum()
    }

    #[test]
    fn laws_validate_and_convolve() {
        assert!(LlrLaw::new(vec![]).is_err());
        assert!(
            LlrLaw::new(vec![LlrAtom {
                llr: 0.0,
                p1: 0.5,
                p0: 1.0
            }])
            .is_err()
        );
        let coin = LlrLaw::consistent(&[(0.6, 0.4), (0.4, 0.6)]).expect("law");
        let two = coin.convolve(&coin, 16);
        // Sums: +2a (0.36/0.16), 0 (0.48/0.48), −2a (0.16/0.36).
        assert_eq!(two.atoms().len(), 3);
        let s1: f64 = two.atoms().iter().map(|a| a.p1).sum();
        assert!((s1 - 1.0).abs() < 1e-12);
        let coarse = two.coarsen(1);
        assert_eq!(coarse.atoms().len(), 1);
        assert!((coarse.atoms()[0].p0 - 1.0).abs() < 1e-12);
    }

    #[test]
    fn the_prior_token_law_drifts_up_for_successes_and_down_for_failures() {
        let law = Calibration::prior().token_law(64);
        let s1: f64 = law.atoms().iter().map(|a| a.p1).sum();
        assert!((s1 - 1.0).abs() < 1e-9);
        assert!(law.atoms().len() <= 64);
        // E[llr | Y=1] = KL(f₁‖f₀) > 0 > −KL(f₀‖f₁) = E[llr | Y=0] for a consistent law.
        assert!(mean(&law, true) > 0.0 && mean(&law, false) < 0.0);
        let tick = Calibration::prior().per_tick_law(0.01, 64);
        assert!(mean(&tick, false) < mean(&law, false));
    }

    #[test]
    fn the_prior_schedule_is_more_patient_than_the_myopic_rule() {
        use crate::competence::threshold::{RouteCost, myopic};
        let costs = StopCosts {
            kappa: 0.0001,
            loss: 1.0,
            route: RouteCost {
                gamma: 0.2,
                p_success: 0.85,
            },
        };
        let s = Calibration::prior()
            .optimal_schedule(costs, 2000, 64, 200.0)
            .expect("solve");
        assert_eq!(s.tau.len(), 2001);
        assert_eq!(s.tau[63], s.tau[0]);
        for t in (0..=2000).step_by(64) {
            let m = myopic(&costs, 2000, t as u64);
            assert!(s.tau[t] <= m + 1e-9, "t={t}: τ*={} τmyo={m}", s.tau[t]);
        }
        // Early on, waiting for evidence is worth something: τ* sits strictly below.
        assert!(s.tau[0] < myopic(&costs, 2000, 0) - 1e-4, "{}", s.tau[0]);
        assert!(
            Calibration::prior()
                .optimal_schedule(costs, 10, 1, 0.0)
                .is_err()
        );
        // A feature model's belief has no per-token law here: refused, not planned.
        let mut features = Calibration::prior();
        features.features = Some(crate::competence::features::FeatureModel {
            knots: vec![0.0, 1.0],
            weights: vec![vec![0.0; crate::competence::features::N_FEATURES]; 2],
            half_life: 64.0,
            link: None,
        });
        assert!(matches!(
            features.optimal_schedule(costs, 2000, 64, 200.0),
            Err(crate::competence::CompetenceError::NoTokenLaw)
        ));
    }

    #[test]
    fn the_empirical_law_counts_every_tick_once() {
        let cal = Calibration::prior();
        let mut ok = Trajectory::new(Some(true));
        let mut bad = Trajectory::new(Some(false));
        for _ in 0..3 {
            ok.push_tick(&[]);
            bad.push_tick(&[Observation {
                signal: SignalKind::Entropy,
                value: 3.0,
            }]);
        }
        bad.push_step(&StepFacts {
            tool_error: true,
            ..StepFacts::default()
        });
        let law = cal.empirical_tick_law(&[ok, bad], 16).expect("law");
        // Successes: 4 ticks (0..=3), all zero increments.
        let zero = law
            .atoms()
            .iter()
            .find(|a| a.llr == 0.0)
            .expect("zero atom");
        assert!((zero.p1 - 1.0).abs() < 1e-12);
        // Failures: tick 0 zero, ticks 1, 2 entropy only, tick 3 entropy + step.
        assert!((zero.p0 - 0.25).abs() < 1e-12);
        assert_eq!(law.atoms().len(), 3);
        assert!(cal.empirical_tick_law(&[], 16).is_err());
    }
}
