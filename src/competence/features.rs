//! A belief that stays calibrated at every t: a logistic model over evidence summaries that
//! do not grow with the length of the session, with coefficients that vary with t.
//!
//! The naive-Bayes sum ℓ_t = ℓ₀ + c·Σ llr grows linearly in t while the information in
//! thousands of dependent tokens saturates, so no single tempering c is right at every t
//! (under-confident early, over-confident late). This model instead keeps a handful of
//! running summaries — the mean per-token log-likelihood ratio of each token signal, an
//! exponentially weighted recent mean, the number of steps, the count of each step fact
//! and a recency-weighted sum of the facts' ratios — and maps them to log-odds with
//! coefficients pinned at a few knots in ln(1+t) and interpolated linearly between them:
//!
//!   η_t = Σ_j x_j(t) · w_j(t),   w_j(t) = (1−λ)·w_{k,j} + λ·w_{k+1,j},   B_t = σ(η_t)
//!
//! (a discrete-time varying-coefficient logistic model, as the audit's §5.1 and Gupta et
//! al. 2024's quantile deferral features suggest). Every update is a few additions: O(1) per
//! observation, no allocation. The per-signal histograms of the calibration supply the
//! per-token ratios, so the model learns shape from them and the weight to give them per t
//! from held-out labels.

use serde::{Deserialize, Serialize};

use super::CompetenceError;
use crate::protocol::{Observation, SignalKind};

/// The step signals, in [`SignalKind::ALL`] order (everything after the three token signals).
pub const STEP_KINDS: [SignalKind; SignalKind::ALL.len() - 3] = {
    let mut out = [SignalKind::ToolError; SignalKind::ALL.len() - 3];
    let mut i = 0;
    while i < out.len() {
        out[i] = SignalKind::ALL[TOKEN_KINDS.len() + i];
        i += 1;
    }
    out
};

/// What each input of the model is, in the order of a weight row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Feature {
    /// 1: the log-odds with no evidence at this t.
    Bias,
    /// Mean llr per observation of one token signal so far.
    MeanToken(SignalKind),
    /// Square of the summed token means: the posterior is not linear in the hesitation
    /// rate (its log-odds go like −ln θ), so one curvature term.
    MeanTokensSquared,
    /// ln((k + ½)/(n − k + ½)) for k of n tokens whose summed llr is negative: the share of
    /// tokens that count against success, on the logit scale its effect lives on.
    AgainstShare,
    /// Its square: the posterior's log-odds are not linear in that logit once the share is
    /// estimated from a few bursts (the Beta prior shrinks extreme shares), and one
    /// curvature term lets the fit bend them. On the correlated world it takes the
    /// held-out ECE at tick 1,000 from 0.034 to 0.030 (seed 1, measured when it joined).
    AgainstShareSquared,
    /// Exponentially weighted mean of the per-token summed llr (recent hesitation).
    RecentTokens,
    /// ln(1 + steps so far).
    Steps,
    /// ln(1 + times this step fact was present).
    FactCount(SignalKind),
    /// Sum of present facts' llr, halved at every step (what the last steps said).
    RecentFacts,
}

const TOKEN_KINDS: [SignalKind; 3] = [SignalKind::ALL[0], SignalKind::ALL[1], SignalKind::ALL[2]];

/// Number of inputs: bias, 3 token means, their squared sum, the share against and its
/// square, recent tokens, steps, one count per step fact (10 since `touched_protected`
/// joined), recent facts. A feature model fitted before an input joined or left has rows
/// of another length and must be refitted (its file says so when read).
///
/// The naive-Bayes sum itself was an input until it was measured to cost calibration: it
/// grows with length, and on the correlated world, with 18,000 training sessions, taking
/// it out brings the error against the exact posterior at tick 2,000 from 0.0125 / 0.0180
/// to 0.0107 / 0.0145 (seeds 1 / 2, `examples/calibration_vs_truth`), while on the real
/// 1.5B (5-fold) ECE and AUROC stay where they were (0.067 → 0.068, 0.711 → 0.710). At a
/// fixed t the token means carry the same information.
pub const N_FEATURES: usize = 1 + TOKEN_KINDS.len() + 5 + STEP_KINDS.len() + 1;

/// The inputs in weight-row order.
pub fn features() -> [Feature; N_FEATURES] {
    let mut out = [Feature::Bias; N_FEATURES];
    let mut i = 1;
    for k in TOKEN_KINDS {
        out[i] = Feature::MeanToken(k);
        i += 1;
    }
    out[i] = Feature::MeanTokensSquared;
    out[i + 1] = Feature::AgainstShare;
    out[i + 2] = Feature::AgainstShareSquared;
    out[i + 3] = Feature::RecentTokens;
    out[i + 4] = Feature::Steps;
    i += 5;
    for k in STEP_KINDS {
        out[i] = Feature::FactCount(k);
        i += 1;
    }
    out[i] = Feature::RecentFacts;
    out
}

impl Feature {
    /// A short name for the "why" of a reading.
    pub fn name(self) -> String {
        match self {
            Feature::Bias => "time".into(),
            Feature::MeanToken(k) => format!("mean {}", k.name()),
            Feature::MeanTokensSquared => "token means squared".into(),
            Feature::AgainstShare => "share of tokens against".into(),
            Feature::AgainstShareSquared => "share against, squared".into(),
            Feature::RecentTokens => "recent tokens".into(),
            Feature::Steps => "steps".into(),
            Feature::FactCount(k) => format!("{} count", k.name()),
            Feature::RecentFacts => "recent step facts".into(),
        }
    }
}

/// The fitted model: knots in ticks and one weight row per knot.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FeatureModel {
    /// Ticks (tokens since the last reset) at which the weights are pinned; strictly
    /// increasing, the first 0. Beyond the last knot the last row holds.
    pub knots: Vec<f64>,
    /// `weights[k]` has one weight per [`features`] entry.
    pub weights: Vec<Vec<f64>>,
    /// Half-life in tokens of [`Feature::RecentTokens`].
    pub half_life: f64,
    /// A monotone cubic correction of η, per knot ([`Link`]); absent, B = σ(η).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link: Option<Link>,
}

/// The link between η and the belief: logit B = η + c₀(t) + c₁(t)·u + c₂(t)·u² + c₃(t)·u³
/// with u = η clamped to `range`, and slope 1 in η beyond it. The coefficients sit at the
/// model's knots and are interpolated as its weights are.
///
/// Why: the varying-coefficient logistic model is linear in its inputs, and the posterior
/// is not; on the correlated world its held-out errors against the exact posterior have
/// one shape at every tick (log-odds that move too much near the middle and too little at
/// the ends), and a cubic in η learned on fresh sessions halves them (docs/results/2026-12-01-feature-model.md). Fitted by
/// [`super::feature_link`], and kept only if increasing in η over `range` at every knot, so
/// more evidence for success never lowers the belief.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Link {
    /// [c₀, c₁, c₂, c₃] per knot.
    pub coefficients: Vec<[f64; 4]>,
    /// The η range the link was fitted on (its 1st and 99th percentiles).
    pub range: [f64; 2],
}

impl Link {
    /// The corrected log-odds at `eta` with the coefficients at knot interval (k, λ) (as
    /// [`knot_position`] gives it).
    pub fn corrected(&self, eta: f64, k: usize, lam: f64) -> f64 {
        let [lo, hi] = self.range;
        let u = eta.clamp(lo, hi);
        let (a, b) = (&self.coefficients[k], &self.coefficients[k + 1]);
        let c = |m: usize| (1.0 - lam) * a[m] + lam * b[m];
        eta + c(0) + u * (c(1) + u * (c(2) + u * c(3)))
    }

    /// Whether the slope 1 + c₁ + 2c₂u + 3c₃u² is positive over the range at every knot
    /// (then also between knots, where the coefficients are convex combinations). The slope
    /// is a quadratic in u, so its least value on the range is at an end or at its vertex.
    pub fn increasing(&self) -> bool {
        let [lo, hi] = self.range;
        self.coefficients.iter().all(|c| {
            let slope = |u: f64| 1.0 + c[1] + 2.0 * c[2] * u + 3.0 * c[3] * u * u;
            let vertex = if c[3] > 0.0 {
                (-c[2] / (3.0 * c[3])).clamp(lo, hi)
            } else {
                lo
            };
            slope(lo) > 0.0 && slope(hi) > 0.0 && slope(vertex) > 0.0
        })
    }
}

/// Default knots: geometric in t, so early ticks (little evidence, fast change) get as many
/// coefficients as late ones.
pub const DEFAULT_KNOTS: [f64; 9] = [0.0, 1.0, 4.0, 16.0, 64.0, 256.0, 1024.0, 4096.0, 16384.0];

/// Default half-life of the recent-token mean.
pub const DEFAULT_HALF_LIFE: f64 = 64.0;

/// Which interval of `knots` (in ln(1+t)) holds t, and how far along it: (k, λ).
pub(crate) fn knot_position(knots: &[f64], t: f64) -> (usize, f64) {
    let u = t.max(0.0).ln_1p();
    let last = knots.len() - 1;
    for k in 0..last {
        let (a, b) = (knots[k].ln_1p(), knots[k + 1].ln_1p());
        if u < b {
            return (k, ((u - a) / (b - a)).clamp(0.0, 1.0));
        }
    }
    (last.saturating_sub(1), if last == 0 { 0.0 } else { 1.0 })
}

impl FeatureModel {
    pub fn validate(&self) -> Result<(), CompetenceError> {
        let bad = |m: &str| Err(CompetenceError::Invalid(format!("feature model: {m}")));
        if self.knots.len() < 2 || self.knots.len() != self.weights.len() {
            return bad("needs at least two knots and one weight row per knot");
        }
        if self.knots[0] != 0.0 || self.knots.windows(2).any(|w| w[0] >= w[1]) {
            return bad("knots must start at 0 and increase strictly");
        }
        if self.weights.iter().any(|r| r.len() != N_FEATURES) {
            return bad(&format!(
                "every weight row needs {N_FEATURES} weights (a model fitted before an input \
                 joined has fewer: re-run `handoff calibrate --model features`)"
            ));
        }
        if let Some(link) = &self.link {
            let finite = link.coefficients.iter().flatten().all(|c| c.is_finite())
                && link.range.iter().all(|r| r.is_finite())
                && link.range[0] <= link.range[1];
            if link.coefficients.len() != self.knots.len() || !finite {
                return bad("the link needs one finite row per knot and a finite range");
            }
            if !link.increasing() {
                return bad("the link must increase in η over its range");
            }
        }
        if self.weights.iter().flatten().any(|w| !w.is_finite())
            || !(self.half_life.is_finite() && self.half_life > 0.0)
        {
            return bad("weights and half-life must be finite (half-life > 0)");
        }
        Ok(())
    }

    /// η for inputs `x` at tick `t`.
    pub fn eta(&self, x: &[f64; N_FEATURES], t: f64) -> f64 {
        let (k, lam) = knot_position(&self.knots, t);
        self.eta_between(x, k, lam)
    }

    /// η with the weights at knot interval (k, λ).
    fn eta_between(&self, x: &[f64; N_FEATURES], k: usize, lam: f64) -> f64 {
        let (lo, hi) = (&self.weights[k], &self.weights[k + 1]);
        (0..N_FEATURES)
            .map(|j| x[j] * ((1.0 - lam) * lo[j] + lam * hi[j]))
            .sum()
    }

    /// The belief's log-odds for inputs `x` at tick `t`: η through the link, if any.
    /// On the per-token path: the knot interval is found once for both.
    pub fn log_odds(&self, x: &[f64; N_FEATURES], t: f64) -> f64 {
        let (k, lam) = knot_position(&self.knots, t);
        let eta = self.eta_between(x, k, lam);
        match &self.link {
            None => eta,
            Some(link) => link.corrected(eta, k, lam),
        }
    }

    /// Per-feature contributions x_j·w_j(t) at tick `t` (what a "why" can list).
    pub fn contributions(&self, x: &[f64; N_FEATURES], t: f64) -> [f64; N_FEATURES] {
        let (k, lam) = knot_position(&self.knots, t);
        let (lo, hi) = (&self.weights[k], &self.weights[k + 1]);
        std::array::from_fn(|j| x[j] * ((1.0 - lam) * lo[j] + lam * hi[j]))
    }
}

/// The running summaries of one session (since the last reset). Plain numbers, `Copy`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FeatureState {
    tokens: u64,
    token_sum: [f64; TOKEN_KINDS.len()],
    token_n: [u64; TOKEN_KINDS.len()],
    recent: f64,
    recent_weight: f64,
    /// The current token's summed llr, and whether it has any token evidence yet.
    tick_llr: f64,
    tick_has_token: bool,
    token_ticks: u64,
    against: u64,
    decay: f64,
    steps: u64,
    fact_counts: [u32; STEP_KINDS.len()],
    recent_facts: f64,
}

fn token_slot(kind: SignalKind) -> Option<usize> {
    TOKEN_KINDS.iter().position(|k| *k == kind)
}

fn step_slot(kind: SignalKind) -> Option<usize> {
    STEP_KINDS.iter().position(|k| *k == kind)
}

impl FeatureState {
    pub fn new(half_life: f64) -> Self {
        FeatureState {
            tokens: 0,
            token_sum: [0.0; TOKEN_KINDS.len()],
            token_n: [0; TOKEN_KINDS.len()],
            recent: 0.0,
            recent_weight: 0.0,
            tick_llr: 0.0,
            tick_has_token: false,
            token_ticks: 0,
            against: 0,
            decay: 0.5f64.powf(1.0 / half_life.max(1e-9)),
            steps: 0,
            fact_counts: [0; STEP_KINDS.len()],
            recent_facts: 0.0,
        }
    }

    /// Tokens since the reset: the t the coefficients are read at.
    pub fn tokens(&self) -> u64 {
        self.tokens
    }

    /// A new junior token: the clock moves and the recent mean forgets a little.
    pub fn start_token(&mut self) {
        self.close_token();
        self.tokens += 1;
        self.recent *= self.decay;
        self.recent_weight = self.recent_weight * self.decay + (1.0 - self.decay);
    }

    fn close_token(&mut self) {
        if self.tick_has_token {
            self.token_ticks += 1;
            self.against += u64::from(self.tick_llr < 0.0);
        }
        self.tick_llr = 0.0;
        self.tick_has_token = false;
    }

    /// One observation with its untempered llr under the calibration's histograms.
    ///
    /// A step is counted when its `tool_error` observation arrives: every step reports the
    /// five always-present facts, `tool_error` first ([`super::StepFacts::observations`]).
    pub fn observe(&mut self, obs: Observation, llr: f64) {
        if let Some(i) = token_slot(obs.signal) {
            self.token_sum[i] += llr;
            self.token_n[i] += 1;
            self.recent += (1.0 - self.decay) * llr;
            self.tick_llr += llr;
            self.tick_has_token = true;
        } else if let Some(i) = step_slot(obs.signal) {
            if obs.signal == SignalKind::ToolError {
                self.steps += 1;
                self.recent_facts *= 0.5;
            }
            if obs.value >= 0.5 {
                self.fact_counts[i] += 1;
                self.recent_facts += llr;
            }
        }
    }

    /// The model's inputs now, in [`features`] order.
    pub fn inputs(&self) -> [f64; N_FEATURES] {
        let mut x = [0.0; N_FEATURES];
        x[0] = 1.0;
        for i in 0..TOKEN_KINDS.len() {
            if self.token_n[i] > 0 {
                x[1 + i] = self.token_sum[i] / self.token_n[i] as f64;
            }
        }
        let sum: f64 = x[1..=TOKEN_KINDS.len()].iter().sum();
        x[1 + TOKEN_KINDS.len()] = sum * sum;
        let open = u64::from(self.tick_has_token);
        let n = (self.token_ticks + open) as f64;
        let k = (self.against + u64::from(self.tick_has_token && self.tick_llr < 0.0)) as f64;
        x[2 + TOKEN_KINDS.len()] = if n > 0.0 {
            ((k + 0.5) / (n - k + 0.5)).ln()
        } else {
            0.0
        };
        let a = x[2 + TOKEN_KINDS.len()];
        x[3 + TOKEN_KINDS.len()] = a * a;
        let r = 4 + TOKEN_KINDS.len();
        if self.recent_weight > 0.0 {
            x[r] = self.recent / self.recent_weight;
        }
        x[r + 1] = (self.steps as f64).ln_1p();
        for (i, c) in self.fact_counts.iter().enumerate() {
            x[r + 2 + i] = f64::from(*c).ln_1p();
        }
        x[N_FEATURES - 1] = self.recent_facts;
        x
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kinds_split_all_signals_into_token_and_step() {
        assert!(TOKEN_KINDS.iter().all(|k| k.is_token_signal()));
        assert!(STEP_KINDS.iter().all(|k| !k.is_token_signal()));
        assert_eq!(TOKEN_KINDS.len() + STEP_KINDS.len(), SignalKind::ALL.len());
    }

    #[test]
    fn features_and_inputs_line_up() {
        let names: Vec<String> = features().iter().map(|f| f.name()).collect();
        assert_eq!(names.len(), N_FEATURES);
        assert_eq!(names[0], "time");
        assert_eq!(names[1], "mean entropy");
        assert_eq!(names[N_FEATURES - 1], "recent step facts");
        let mut s = FeatureState::new(1.0);
        s.start_token();
        let entropy = |v| Observation {
            signal: SignalKind::Entropy,
            value: v,
        };
        s.observe(entropy(1.0), -0.4);
        s.start_token();
        s.observe(entropy(0.0), 0.2);
        let x = s.inputs();
        assert!((x[1] - (-0.1)).abs() < 1e-12);
        // Half-life 1: weights ½ and 1 on the two tokens, normalised by ¾ of weight.
        assert!(
            (x[7] - ((-0.4 * 0.5 * 0.5 + 0.2 * 0.5) / 0.75)).abs() < 1e-12,
            "{x:?}"
        );
        for (signal, value) in [(SignalKind::ToolError, 1.0), (SignalKind::NoDiff, 0.0)] {
            s.observe(Observation { signal, value }, -0.3);
        }
        let x = s.inputs();
        assert!((x[4] - 0.01).abs() < 1e-12, "(−0.1)²");
        assert!(
            (x[5] - (1.5f64 / 1.5).ln()).abs() < 1e-12,
            "one of two tokens against"
        );
        assert_eq!(x[6], x[5] * x[5], "its square");
        assert!((x[8] - 2f64.ln()).abs() < 1e-12, "one step");
        assert!((x[9] - 2f64.ln()).abs() < 1e-12, "one tool error");
        assert_eq!(x[13], 0.0, "an absent fact does not count");
        assert!((x[N_FEATURES - 1] + 0.3).abs() < 1e-12);
    }

    #[test]
    fn the_link_corrects_inside_its_range_and_keeps_slope_one_beyond() {
        let link = Link {
            coefficients: vec![[0.5, 0.0, 0.0, 0.1], [0.0, 0.0, 0.0, 0.0]],
            range: [-1.0, 2.0],
        };
        assert!(link.increasing());
        // At the first knot: η + 0.5 + 0.1·η³ for η in range.
        assert!((link.corrected(1.0, 0, 0.0) - 1.6).abs() < 1e-12);
        // Beyond 2: the value at 2 plus (η − 2).
        assert!((link.corrected(3.0, 0, 0.0) - (2.0 + 0.5 + 0.8 + 1.0)).abs() < 1e-12);
        // Halfway to the second knot (no correction there): half the correction.
        assert!((link.corrected(1.0, 0, 0.5) - 1.3).abs() < 1e-12);
        let mut m = FeatureModel {
            knots: vec![0.0, 100.0],
            weights: vec![vec![0.0; N_FEATURES]; 2],
            half_life: 64.0,
            link: Some(link.clone()),
        };
        m.validate().expect("valid");
        // The JSON carries it, and a model written before links existed still reads.
        let json = serde_json::to_string(&m).expect("json");
        assert_eq!(
            serde_json::from_str::<FeatureModel>(&json).expect("read"),
            m
        );
        let old = r#"{"knots":[0.0,100.0],"weights":[[0.0],[0.0]],"half_life":64.0}"#;
        assert!(
            serde_json::from_str::<FeatureModel>(old)
                .expect("read")
                .link
                .is_none()
        );
        // A link that falls with η, or has the wrong number of rows, is refused.
        m.link = Some(Link {
            coefficients: vec![[0.0, -2.0, 0.0, 0.0]; 2],
            range: [-1.0, 1.0],
        });
        assert!(m.validate().is_err());
        m.link = Some(Link {
            coefficients: vec![[0.0; 4]],
            range: [-1.0, 1.0],
        });
        assert!(m.validate().is_err());
    }

    #[test]
    fn the_weights_interpolate_in_log_time() {
        let mut weights = vec![vec![0.0; N_FEATURES]; 3];
        weights[1][0] = 1.0;
        weights[2][0] = 3.0;
        let m = FeatureModel {
            knots: vec![0.0, 99.0, 9999.0],
            weights,
            half_life: 64.0,
            link: None,
        };
        m.validate().expect("valid");
        let x = FeatureState::new(64.0).inputs();
        assert!(m.eta(&x, 0.0).abs() < 1e-12);
        assert!((m.eta(&x, 99.0) - 1.0).abs() < 1e-12);
        // ln(1+t) halfway between ln 100 and ln 10000 is t + 1 = 1000.
        assert!((m.eta(&x, 999.0) - 2.0).abs() < 1e-9);
        assert!((m.eta(&x, 1e9) - 3.0).abs() < 1e-12, "the last row holds");
        let mut bad = m.clone();
        bad.knots = vec![0.0, 0.0, 1.0];
        assert!(bad.validate().is_err());
    }
}
