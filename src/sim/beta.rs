//! Beta laws of the simulated signals: their density ratio (the *true* likelihood ratio the
//! oracle belief uses), their distribution function (to discretise the law exactly for the
//! DP), and sampling.
//!
//! The special functions are written out here rather than pulled in as a crate: the
//! simulator needs exactly two of them, ln Γ (Lanczos 1964, g = 7 with the usual nine
//! coefficients) and the regularised incomplete beta function by its continued fraction
//! (evaluated with the modified Lentz method, Press et al., *Numerical Recipes*, §6.4).

use rand::Rng;
use rand_distr::{Beta, Distribution};

use super::SimError;
use crate::competence::{LlrLaw, law::MAX_ATOM_LLR};

const LANCZOS_G: f64 = 7.0;
const LANCZOS: [f64; 9] = [
    0.999_999_999_999_809_9,
    676.520_368_121_885_1,
    -1_259.139_216_722_402_8,
    771.323_428_777_653_1,
    -176.615_029_162_140_6,
    12.507_343_278_686_905,
    -0.138_571_095_265_720_12,
    9.984_369_578_019_572e-6,
    1.505_632_735_149_311_6e-7,
];

/// ln Γ(x) for x > 0.
pub fn ln_gamma(x: f64) -> f64 {
    if x < 0.5 {
        // Reflection: Γ(x)Γ(1−x) = π / sin(πx), and sin(πx) > 0 on (0, 1).
        return (std::f64::consts::PI / (std::f64::consts::PI * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut sum = LANCZOS[0];
    for (i, c) in LANCZOS.iter().enumerate().skip(1) {
        sum += c / (x + i as f64);
    }
    let t = x + LANCZOS_G + 0.5;
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + sum.ln()
}

/// ln B(a, b) = ln Γ(a) + ln Γ(b) − ln Γ(a + b).
pub fn ln_beta(a: f64, b: f64) -> f64 {
    ln_gamma(a) + ln_gamma(b) - ln_gamma(a + b)
}

/// The continued fraction of I_x(a, b), valid (fast) for x < (a + 1)/(a + b + 2).
fn beta_fraction(a: f64, b: f64, x: f64) -> f64 {
    const TINY: f64 = 1e-300;
    let mut c = 1.0;
    let mut d = 1.0 - (a + b) * x / (a + 1.0);
    if d.abs() < TINY {
        d = TINY;
    }
    d = 1.0 / d;
    let mut h = d;
    for m in 1..300 {
        let m = m as f64;
        let m2 = 2.0 * m;
        // Even step.
        let aa = m * (b - m) * x / ((a + m2 - 1.0) * (a + m2));
        d = 1.0 + aa * d;
        d = if d.abs() < TINY { TINY } else { d };
        c = 1.0 + aa / c;
        c = if c.abs() < TINY { TINY } else { c };
        d = 1.0 / d;
        h *= d * c;
        // Odd step.
        let aa = -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1.0));
        d = 1.0 + aa * d;
        d = if d.abs() < TINY { TINY } else { d };
        c = 1.0 + aa / c;
        c = if c.abs() < TINY { TINY } else { c };
        d = 1.0 / d;
        let step = d * c;
        h *= step;
        if (step - 1.0).abs() < 1e-15 {
            break;
        }
    }
    h
}

/// The shape of one Beta law.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct BetaShape {
    pub a: f64,
    pub b: f64,
}

impl BetaShape {
    pub fn new(a: f64, b: f64) -> Result<Self, SimError> {
        if a.is_finite() && b.is_finite() && a > 0.0 && b > 0.0 {
            Ok(BetaShape { a, b })
        } else {
            Err(SimError::Invalid(format!(
                "Beta shape parameters must be positive numbers, got ({a}, {b})"
            )))
        }
    }

    pub fn mean(&self) -> f64 {
        self.a / (self.a + self.b)
    }

    /// The regularised incomplete beta function I_x(a, b) = P(X ≤ x).
    pub fn cdf(&self, x: f64) -> f64 {
        let (a, b) = (self.a, self.b);
        if x <= 0.0 {
            return 0.0;
        }
        if x >= 1.0 {
            return 1.0;
        }
        let front = (a * x.ln() + b * (1.0 - x).ln() - ln_beta(a, b)).exp();
        if x < (a + 1.0) / (a + b + 2.0) {
            front * beta_fraction(a, b, x) / a
        } else {
            1.0 - front * beta_fraction(b, a, 1.0 - x) / b
        }
    }

    /// A sampler; the shape was validated, so construction cannot fail in practice.
    pub fn sampler(&self) -> Result<Beta<f64>, SimError> {
        Beta::new(self.a, self.b).map_err(|e| SimError::Invalid(format!("Beta law: {e}")))
    }
}

/// Keeps draws off 0 and 1, where a log-density is infinite: a Beta sample can round there.
const EDGE: f64 = 1e-12;

/// One simulated signal: its name in logs and its Beta law given success and given failure.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SignalLaw {
    pub signal: crate::competence::SignalKind,
    pub success: BetaShape,
    pub failure: BetaShape,
}

impl SignalLaw {
    /// The true log-likelihood ratio ln f₁(x)/f₀(x) of the Beta densities, clamped to the
    /// range a belief can use.
    pub fn llr(&self, x: f64) -> f64 {
        let x = x.clamp(EDGE, 1.0 - EDGE);
        let (s, f) = (self.success, self.failure);
        let l = (s.a - f.a) * x.ln() + (s.b - f.b) * (1.0 - x).ln() - ln_beta(s.a, s.b)
            + ln_beta(f.a, f.b);
        l.clamp(-MAX_ATOM_LLR, MAX_ATOM_LLR)
    }

    /// The law of this signal's llr given Y, discretised on `cells` equal-width cells of
    /// [0, 1] with exact cell probabilities (from the distribution functions), each cell's
    /// atom at ln(p₁/p₀) so the law is Bayes-consistent.
    pub fn llr_law(&self, cells: usize) -> Result<LlrLaw, SimError> {
        let cells = cells.max(1);
        let mut pairs = Vec::with_capacity(cells);
        let (mut lo1, mut lo0) = (0.0, 0.0);
        for i in 1..=cells {
            let x = i as f64 / cells as f64;
            let (hi1, hi0) = (self.success.cdf(x), self.failure.cdf(x));
            pairs.push(((hi1 - lo1).max(0.0), (hi0 - lo0).max(0.0)));
            (lo1, lo0) = (hi1, hi0);
        }
        LlrLaw::consistent(&pairs).map_err(|e| SimError::Invalid(e.to_string()))
    }

    /// Draws one value given the label (already-built samplers, so the hot loop does not
    /// rebuild them).
    pub fn draw(samplers: &(Beta<f64>, Beta<f64>), success: bool, rng: &mut impl Rng) -> f64 {
        if success {
            samplers.0.sample(rng)
        } else {
            samplers.1.sample(rng)
        }
    }
}

impl std::str::FromStr for SignalLaw {
    type Err = SimError;

    /// `KIND:A1,B1:A0,B0`, e.g. `entropy:2,3:3,2`: the signal's name, its Beta shape given
    /// success, then given failure.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let bad = || {
            SimError::Invalid(format!(
                "signal `{text}`: expected KIND:A1,B1:A0,B0 with KIND one of entropy, margin, \
                 surprise (e.g. entropy:2,3:3,2)"
            ))
        };
        let parts: Vec<&str> = text.split(':').collect();
        let [kind, success, failure] = parts.as_slice() else {
            return Err(bad());
        };
        let signal = crate::competence::SignalKind::ALL
            .into_iter()
            .find(|k| k.is_token_signal() && k.name() == kind.trim())
            .ok_or_else(bad)?;
        let shape = |s: &str| -> Result<BetaShape, SimError> {
            let (a, b) = s.split_once(',').ok_or_else(bad)?;
            let a: f64 = a.trim().parse().map_err(|_| bad())?;
            let b: f64 = b.trim().parse().map_err(|_| bad())?;
            BetaShape::new(a, b)
        };
        Ok(SignalLaw {
            signal,
            success: shape(success)?,
            failure: shape(failure)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::competence::SignalKind;

    #[test]
    fn ln_gamma_matches_known_values() {
        assert!((ln_gamma(5.0) - 24f64.ln()).abs() < 1e-12);
        assert!((ln_gamma(0.5) - std::f64::consts::PI.sqrt().ln()).abs() < 1e-12);
        assert!(ln_gamma(1.0).abs() < 1e-12 && ln_gamma(2.0).abs() < 1e-12);
        // Γ(0.1) = 9.513507698668732 (reflection branch).
        assert!((ln_gamma(0.1) - 9.513_507_698_668_732f64.ln()).abs() < 1e-12);
    }

    #[test]
    fn the_cdf_matches_closed_forms() {
        let x = 0.3f64;
        let close = |a: f64, b: f64| (a - b).abs() < 1e-12;
        assert!(close(BetaShape { a: 1.0, b: 1.0 }.cdf(x), x));
        assert!(close(BetaShape { a: 3.0, b: 1.0 }.cdf(x), x.powi(3)));
        assert!(close(
            BetaShape { a: 1.0, b: 4.0 }.cdf(x),
            1.0 - (1.0 - x).powi(4)
        ));
        // Symmetry I_x(a, b) = 1 − I_{1−x}(b, a), across both branches.
        let s = BetaShape { a: 2.5, b: 0.7 };
        let t = BetaShape { a: 0.7, b: 2.5 };
        for x in [0.05, 0.4, 0.8, 0.99] {
            assert!((s.cdf(x) - (1.0 - t.cdf(1.0 - x))).abs() < 1e-12, "{x}");
        }
        assert_eq!(s.cdf(0.0), 0.0);
        assert_eq!(s.cdf(1.0), 1.0);
    }

    #[test]
    fn the_llr_is_the_density_ratio() {
        let law = SignalLaw {
            signal: SignalKind::Entropy,
            success: BetaShape { a: 2.0, b: 5.0 },
            failure: BetaShape { a: 5.0, b: 2.0 },
        };
        // f₁/f₀ = x(1−x)⁴ / (x⁴(1−x)) = ((1−x)/x)³ (the normalisers are equal).
        for x in [0.1f64, 0.5, 0.7] {
            let want: f64 = ((1.0 - x) / x).powi(3).ln();
            assert!((law.llr(x) - want).abs() < 1e-10, "{x}");
        }
        let discrete = law.llr_law(400).expect("law");
        let mean1: f64 = discrete.atoms().iter().map(|a| a.p1 * a.llr).sum();
        let mean0: f64 = discrete.atoms().iter().map(|a| a.p0 * a.llr).sum();
        // E[llr | Y=1] = KL(f₁‖f₀) > 0 > −KL(f₀‖f₁) = E[llr | Y=0]; symmetric here.
        assert!(
            mean1 > 0.5 && (mean1 + mean0).abs() < 1e-6,
            "{mean1} {mean0}"
        );
        assert!(BetaShape::new(0.0, 1.0).is_err());
        let parsed: SignalLaw = "margin:3,2.5:2.5,3".parse().expect("parse");
        assert_eq!(parsed.signal, SignalKind::Margin);
        assert_eq!(parsed.failure, BetaShape { a: 2.5, b: 3.0 });
        assert!("tool_error:1,1:1,1".parse::<SignalLaw>().is_err());
        assert!("entropy:1,1".parse::<SignalLaw>().is_err());
        assert!("entropy:1,x:1,1".parse::<SignalLaw>().is_err());
        assert!(BetaShape::new(1.0, f64::NAN).is_err());
    }
}
