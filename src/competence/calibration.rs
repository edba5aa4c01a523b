//! Everything the judge has learned, in one versioned value: the prior π₀, the per-signal
//! likelihoods, the tempering factor c and the final calibration map.
//!
//! One struct, one JSON document (`{"v":1, ...}`), so a log can say which calibration
//! scored it and `calibrate` can write a file that `run` reads without a second format.
//! Reading and writing files is the caller's job; this module only converts to and from text.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::CompetenceError;
use super::calibrator::{CalibrationMap, logit};
use super::features::FeatureModel;
use super::likelihood::Likelihood;
use crate::protocol::SignalKind;

/// The calibration format this build reads and writes.
pub const CALIBRATION_VERSION: u32 = 1;

/// Largest tempering factor accepted. A fitted factor discounts evidence (c < 1); far
/// above that, sums of log-likelihood ratios overflow to ±∞ and the belief becomes NaN,
/// which the log cannot carry.
pub const MAX_TEMPERING: f64 = 1000.0;

/// A complete judge: ℓ₀ = logit π₀; ℓ_t = ℓ_{t−1} + c·Σ log f₁/f₀; B_t = map(ℓ_t).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "serde_json::Value", into = "CalibrationRepr")]
pub struct Calibration {
    /// π₀: the belief before any evidence (the base success rate of the junior).
    pub prior: f64,
    /// c: how much of the summed evidence to trust, because tokens are not independent.
    pub tempering: f64,
    /// f₁/f₀ per signal; a signal without an entry carries no evidence.
    pub signals: BTreeMap<SignalKind, Likelihood>,
    pub map: CalibrationMap,
    /// Where this calibration came from (e.g. "built-in prior", "fit on 120 sessions").
    pub source: String,
    /// When present, B_t comes from this length-robust model over running summaries of
    /// the evidence (the histograms above supply its per-token ratios) instead of the
    /// naive-Bayes sum; see [`super::features`].
    pub features: Option<FeatureModel>,
    /// What the fit saw, so a session whose junior differs can say so: a judge learned on
    /// one model's logprobs (and top-k) means little on another's.
    pub fitted_on: Option<FittedOn>,
}

/// The junior and server a calibration was fitted on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FittedOn {
    /// The junior model name the sessions logged (the most common one).
    pub model: String,
    /// The longest top-logprob list seen on a junior token (the server's `top_logprobs`);
    /// 0 when the sessions carried no logprobs.
    pub top_logprobs: usize,
    /// Labelled sessions and successes among them.
    pub sessions: usize,
    pub successes: usize,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct CalibrationRepr {
    v: u32,
    prior: f64,
    tempering: f64,
    signals: BTreeMap<SignalKind, Likelihood>,
    map: CalibrationMap,
    #[serde(default)]
    source: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    features: Option<FeatureModel>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    fitted_on: Option<FittedOn>,
}

impl From<Calibration> for CalibrationRepr {
    fn from(c: Calibration) -> Self {
        CalibrationRepr {
            v: CALIBRATION_VERSION,
            prior: c.prior,
            tempering: c.tempering,
            signals: c.signals,
            map: c.map,
            source: c.source,
            features: c.features,
            fitted_on: c.fitted_on,
        }
    }
}

impl TryFrom<serde_json::Value> for Calibration {
    type Error = CompetenceError;

    /// The version is read before anything else, so a file from a future build fails with
    /// "unsupported version" rather than a confusing complaint about some field.
    fn try_from(value: serde_json::Value) -> Result<Self, Self::Error> {
        let version = value.get("v").ok_or_else(|| {
            CompetenceError::Invalid("calibration has no version field `v`".into())
        })?;
        let found = version.as_u64().ok_or_else(|| {
            CompetenceError::Invalid(format!(
                "calibration version `v` must be an integer, got {version}"
            ))
        })?;
        if found != u64::from(CALIBRATION_VERSION) {
            return Err(CompetenceError::UnsupportedVersion {
                found,
                supported: CALIBRATION_VERSION,
            });
        }
        let repr: CalibrationRepr = serde_json::from_value(value)
            .map_err(|e| CompetenceError::Invalid(format!("calibration: {e}")))?;
        let c = Calibration {
            prior: repr.prior,
            tempering: repr.tempering,
            signals: repr.signals,
            map: repr.map,
            source: repr.source,
            features: repr.features,
            fitted_on: repr.fitted_on,
        };
        c.validate()?;
        Ok(c)
    }
}

impl Calibration {
    /// Checks the invariants the judge relies on (a prior strictly inside (0, 1), a finite
    /// non-negative tempering factor, a well-formed map).
    pub fn validate(&self) -> Result<(), CompetenceError> {
        if !(self.prior > 0.0 && self.prior < 1.0) {
            return Err(CompetenceError::Invalid(format!(
                "calibration prior must be in (0, 1), got {}",
                self.prior
            )));
        }
        if !(self.tempering.is_finite() && (0.0..=MAX_TEMPERING).contains(&self.tempering)) {
            return Err(CompetenceError::Invalid(format!(
                "calibration tempering must be a number in [0, {MAX_TEMPERING}], got {}",
                self.tempering
            )));
        }
        if let Some(f) = &self.features {
            f.validate()?;
        }
        self.map.validate()
    }

    /// ℓ₀ = logit π₀.
    pub fn prior_log_odds(&self) -> f64 {
        logit(self.prior)
    }

    /// Parses a calibration document (see [`CALIBRATION_VERSION`]).
    pub fn from_json(text: &str) -> Result<Self, CompetenceError> {
        serde_json::from_str(text)
            .map_err(|e| {
                // Our own errors come back wrapped as serde messages; keep their text.
                CompetenceError::Invalid(e.to_string())
            })
            .and_then(|value: serde_json::Value| Calibration::try_from(value))
    }

    /// The document `from_json` reads, pretty-printed for people who open the file.
    pub fn to_json(&self) -> String {
        let repr = CalibrationRepr::from(self.clone());
        // Serialising plain numbers, strings and maps with string keys cannot fail.
        serde_json::to_string_pretty(&repr).unwrap_or_default()
    }
}

/// Test helper: two calibrations agree to 1e-12 in every number. serde_json's default
/// float parser may be one ulp off, so JSON round trips are compared this way.
#[cfg(test)]
pub(crate) fn assert_same(a: &Calibration, b: &Calibration) {
    fn walk(a: &serde_json::Value, b: &serde_json::Value, path: &str) {
        use serde_json::Value;
        match (a, b) {
            (Value::Number(x), Value::Number(y)) => {
                let (x, y) = (
                    x.as_f64().unwrap_or(f64::NAN),
                    y.as_f64().unwrap_or(f64::NAN),
                );
                assert!(
                    (x - y).abs() <= 1e-12 * x.abs().max(1.0),
                    "{path}: {x} != {y}"
                );
            }
            (Value::Array(x), Value::Array(y)) => {
                assert_eq!(x.len(), y.len(), "{path}");
                for (i, (p, q)) in x.iter().zip(y).enumerate() {
                    walk(p, q, &format!("{path}[{i}]"));
                }
            }
            (Value::Object(x), Value::Object(y)) => {
                assert_eq!(
                    x.keys().collect::<Vec<_>>(),
                    y.keys().collect::<Vec<_>>(),
                    "{path}"
                );
                for (k, p) in x {
                    walk(p, &y[k], &format!("{path}.{k}"));
                }
            }
            _ => assert_eq!(a, b, "{path}"),
        }
    }
    let value = |c: &Calibration| serde_json::to_value(c).expect("serialize");
    walk(&value(a), &value(b), "");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_prior_round_trips_through_json() {
        let c = Calibration::prior();
        let text = c.to_json();
        assert!(text.contains("\"v\": 1"), "{text}");
        let back = Calibration::from_json(&text).expect("parse");
        assert_same(&back, &c);
        let via_serde: Calibration = serde_json::from_str(&text).expect("serde");
        assert_same(&via_serde, &c);
    }

    #[test]
    fn a_future_version_is_rejected_with_a_clear_error() {
        let mut value: serde_json::Value =
            serde_json::from_str(&Calibration::prior().to_json()).expect("json");
        value["v"] = serde_json::json!(2);
        value["brand_new_field"] = serde_json::json!(true);
        let err = Calibration::from_json(&value.to_string()).expect_err("must fail");
        assert_eq!(
            err,
            CompetenceError::UnsupportedVersion {
                found: 2,
                supported: 1
            }
        );
        assert!(err.to_string().contains("version 2"), "{err}");
    }

    #[test]
    fn missing_version_and_bad_values_are_errors() {
        assert!(Calibration::from_json("{}").is_err());
        assert!(Calibration::from_json("not json").is_err());
        let mut value: serde_json::Value =
            serde_json::from_str(&Calibration::prior().to_json()).expect("json");
        value["prior"] = serde_json::json!(1.0);
        assert!(Calibration::from_json(&value.to_string()).is_err());
        value["prior"] = serde_json::json!(0.5);
        value["unknown"] = serde_json::json!(1);
        assert!(Calibration::from_json(&value.to_string()).is_err());
    }
}
