//! What is evaluated: the configured policy, a threshold rule, or one of the two trivial
//! baselines the frontier and APGR are measured against.

use serde::Serialize;

use crate::config::{Config, ThresholdKind, ToolProtocol};

/// One way of running every task of a suite.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Policy {
    /// The config as it is.
    Configured,
    /// The config with this threshold rule.
    Threshold { rule: ThresholdKind },
    /// A constant threshold τ, as in the sweep.
    Constant { tau: f64 },
    /// The junior alone: the judge watches (shadow mode) but never hands off.
    JuniorOnly,
    /// The senior alone: the senior's endpoint does every step, never handing off.
    SeniorOnly,
    /// The reference the agent must beat: the junior alone under the `code` protocol, one
    /// reply to the same first message, placed, checked once, and the session ends. What
    /// the agent loop adds over it is the harness's worth, measured on the same tasks, in
    /// the same run, on the same server.
    SingleShot,
    /// The junior alone, after one question to the operator before its first step
    /// (`policy.ask_first`): HiL-Bench's "ask once at the start".
    AskFirst,
    /// The junior alone, told it may ask (`policy.junior_may_ask`): only its own questions.
    JuniorAsks,
    /// The config with every escalation one question to the operator (`route = "operator"`).
    RouteOperator,
}

#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    #[error(
        "unknown policy `{0}`: expected configured, constant, myopic, optimal, junior-only \
         (never-ask), senior-only, single-shot, ask-first, junior-asks, operator or a number τ \
         in [0, 1]"
    )]
    Unknown(String),
    #[error(
        "`{0}` is not a sweep: expected threshold=FROM:TO:STEP with 0 <= FROM <= TO <= 1 and \
         STEP > 0, e.g. threshold=0.1:0.9:0.1"
    )]
    Sweep(String),
}

impl Policy {
    pub fn parse(text: &str) -> Result<Policy, PolicyError> {
        Ok(match text.trim() {
            "configured" => Policy::Configured,
            "constant" => Policy::Threshold {
                rule: ThresholdKind::Constant,
            },
            "myopic" => Policy::Threshold {
                rule: ThresholdKind::Myopic,
            },
            "optimal" => Policy::Threshold {
                rule: ThresholdKind::Optimal,
            },
            "junior-only" | "junior" | "never-ask" => Policy::JuniorOnly,
            "ask-first" => Policy::AskFirst,
            "junior-asks" => Policy::JuniorAsks,
            "operator" => Policy::RouteOperator,
            "senior-only" | "senior" => Policy::SeniorOnly,
            "single-shot" => Policy::SingleShot,
            other => match other.parse::<f64>() {
                Ok(tau) if (0.0..=1.0).contains(&tau) => Policy::Constant { tau },
                _ => return Err(PolicyError::Unknown(text.to_string())),
            },
        })
    }

    /// A short name, also the directory of this policy's logs.
    pub fn label(&self) -> String {
        match self {
            Policy::Configured => "configured".into(),
            Policy::Threshold { rule } => rule.name().into(),
            Policy::Constant { tau } => format!("tau-{tau:.2}"),
            Policy::JuniorOnly => "junior-only".into(),
            Policy::SeniorOnly => "senior-only".into(),
            Policy::SingleShot => "single-shot".into(),
            Policy::AskFirst => "ask-first".into(),
            Policy::JuniorAsks => "junior-asks".into(),
            Policy::RouteOperator => "operator".into(),
        }
    }

    /// The config a session under this policy runs with.
    pub fn apply(&self, mut config: Config) -> Config {
        match *self {
            Policy::Configured => {}
            Policy::Threshold { rule } => config.policy.threshold = rule,
            Policy::Constant { tau } => {
                config.policy.threshold = ThresholdKind::Constant;
                config.policy.constant = tau;
            }
            Policy::JuniorOnly => config.policy.shadow = true,
            Policy::SeniorOnly => {
                // The senior sits in the junior's seat; in shadow mode it never hands off.
                config.junior = config.senior.clone();
                config.policy.shadow = true;
            }
            Policy::SingleShot => {
                config.junior.tool_protocol = ToolProtocol::Code;
                config.policy.shadow = true;
                config.agent.max_steps = 1;
            }
            Policy::AskFirst => {
                config.policy.shadow = true;
                config.policy.ask_first = true;
            }
            Policy::JuniorAsks => {
                config.policy.shadow = true;
                config.policy.junior_may_ask = true;
            }
            Policy::RouteOperator => config.policy.route = crate::config::RouteMode::Operator,
        }
        config
    }

    /// The config once a task's own budget is applied: a single shot stays one step
    /// whatever the task allows.
    pub fn bound(&self, mut config: Config) -> Config {
        if *self == Policy::SingleShot {
            config.agent.max_steps = 1;
        }
        config
    }
}

/// Parses `threshold=FROM:TO:STEP` into constant-threshold policies, FROM and TO included.
///
/// The values are computed as FROM + k·STEP and rounded to 1e-9, so 0.1:0.9:0.1 gives the
/// nine values one expects rather than 0.30000000000000004 and a missing 0.9.
pub fn parse_sweep(spec: &str) -> Result<Vec<Policy>, PolicyError> {
    let bad = || PolicyError::Sweep(spec.to_string());
    let (key, range) = spec.split_once('=').ok_or_else(bad)?;
    if !matches!(key.trim(), "threshold" | "tau") {
        return Err(bad());
    }
    let parts: Vec<f64> = range
        .split(':')
        .map(|p| p.trim().parse::<f64>())
        .collect::<Result<_, _>>()
        .map_err(|_| bad())?;
    let [from, to, step] = parts[..] else {
        return Err(bad());
    };
    if !(0.0..=1.0).contains(&from) || !(from..=1.0).contains(&to) || step.is_nan() || step <= 0.0 {
        return Err(bad());
    }
    let n = ((to - from) / step + 1e-9).floor() as usize;
    Ok((0..=n)
        .map(|k| Policy::Constant {
            tau: ((from + k as f64 * step) * 1e9).round() / 1e9,
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_documented_sweep_has_nine_exact_values() {
        let taus: Vec<f64> = parse_sweep("threshold=0.1:0.9:0.1")
            .expect("sweep")
            .into_iter()
            .map(|p| match p {
                Policy::Constant { tau } => tau,
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(taus, [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]);
        for bad in [
            "threshold=0.9:0.1:0.1",
            "threshold=0:1:0",
            "kappa=0:1:0.5",
            "threshold=0:1",
        ] {
            assert!(parse_sweep(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn senior_only_puts_the_senior_in_the_juniors_seat() {
        let mut c = Config::default();
        c.senior.model = "big".into();
        let applied = Policy::parse("senior-only").expect("policy").apply(c);
        assert_eq!(applied.junior.model, "big");
        assert!(applied.policy.shadow);
        assert_eq!(Policy::parse("0.4").expect("tau").label(), "tau-0.40");
        assert!(Policy::parse("clever").is_err());
        let shot = Policy::parse("single-shot").expect("policy");
        let mut c = shot.apply(Config::default());
        assert_eq!(c.junior.tool_protocol, ToolProtocol::Code);
        assert!(c.policy.shadow);
        c.agent.max_steps = 12;
        assert_eq!(shot.bound(c).agent.max_steps, 1);
    }
}
