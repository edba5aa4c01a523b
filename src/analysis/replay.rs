//! `handoff replay`: a logged session shown again, and optionally judged again.
//!
//! The TUI is fed from the log by [`super::feed`]. With another calibration or policy the
//! log's raw observations are re-scored by a [`Rescorer`] and shown beside the logged
//! trace, with the ticks where the two judges decide differently; headless, the same
//! comparison is printed.

use std::path::Path;

use super::rescore::{Evidence, EvidenceDecoder, Rescored, Rescorer};
use crate::competence::Judge;
use crate::config::{Config, ThresholdKind};
use crate::judge::{JudgeError, SessionJudge};
use crate::log::{LogError, LogReader, ReadWarning};
use crate::protocol::{EscalationReason, Event, Stamped};

#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    #[error(transparent)]
    Log(#[from] LogError),
    #[error(transparent)]
    Judge(#[from] JudgeError),
    #[error(
        "--policy must be constant, constant=τ, myopic, optimal or steps=FILE (a `handoff schedule --write` file); got {0:?}"
    )]
    Policy(String),
}

/// Every event of one log, in order, and the lines that had to be skipped.
pub fn load_events(path: &Path) -> Result<(Vec<Stamped>, Vec<ReadWarning>), LogError> {
    let mut warnings = Vec::new();
    let events = LogReader::open(path)?
        .filter_map(|item| item.map_err(|w| warnings.push(w)).ok())
        .collect();
    Ok((events, warnings))
}

/// The configuration the counterfactual judge is built from: `config` with the calibration
/// file and threshold policy replaced where given.
pub fn counterfactual_config(
    config: &Config,
    calibration: Option<&Path>,
    policy: Option<&str>,
) -> Result<Config, ReplayError> {
    let mut c = config.clone();
    if let Some(path) = calibration {
        c.policy.calibration = Some(path.to_path_buf());
    }
    if let Some(p) = policy {
        let (name, tau) = match p.split_once('=') {
            Some((n, t)) => (n, Some(t)),
            None => (p, None),
        };
        c.policy.threshold = match name {
            "constant" => ThresholdKind::Constant,
            "myopic" => ThresholdKind::Myopic,
            "optimal" => ThresholdKind::Optimal,
            "steps" => ThresholdKind::Steps,
            _ => return Err(ReplayError::Policy(p.to_string())),
        };
        match (name, tau) {
            ("constant", Some(t)) => {
                c.policy.constant = t
                    .parse::<f64>()
                    .ok()
                    .filter(|t| (0.0..=1.0).contains(t))
                    .ok_or_else(|| ReplayError::Policy(p.to_string()))?;
            }
            ("steps", Some(file)) => c.policy.step_schedule = Some(file.into()),
            (_, Some(_)) => return Err(ReplayError::Policy(p.to_string())),
            _ => {}
        }
    }
    Ok(c)
}

/// The judge a configuration would run, fresh (what `run` builds at a session start).
pub fn judge_for(config: &Config) -> Result<Judge, ReplayError> {
    Ok(SessionJudge::from_config(config)?.judge().clone())
}

/// An escalation the log records.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LoggedEscalation {
    pub tick: u64,
    pub reason: EscalationReason,
    pub shadow: bool,
}

/// A log judged again: every update, the re-scored decisions, and where they part from the
/// logged ones.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Rescoring {
    pub points: Vec<Rescored>,
    /// Ticks where the re-scoring judge hands off (or logs a shadow escalation).
    pub escalations: Vec<u64>,
    pub logged: Vec<LoggedEscalation>,
    /// Tick ranges (inclusive) where B_t < τ_t under one judge and not the other.
    pub differ: Vec<(u64, u64)>,
}

impl Rescoring {
    /// Ticks of the log's own threshold escalations: the judge's decisions (forced, fault
    /// and self-asked escalations are not).
    pub fn logged_threshold_ticks(&self) -> Vec<u64> {
        self.logged
            .iter()
            .filter(|e| e.reason == EscalationReason::Threshold)
            .map(|e| e.tick)
            .collect()
    }
}

/// Re-scores the events of one session log with `judge` (fresh) and the live loop's rules;
/// `cooldown_steps` as the live session was configured.
pub fn rescore<'a>(
    events: impl IntoIterator<Item = &'a Event>,
    judge: Judge,
    cooldown_steps: u32,
) -> Rescoring {
    let mut decoder = EvidenceDecoder::new();
    let mut rescorer = Rescorer::new(judge.clone(), cooldown_steps);
    let mut out = Rescoring::default();
    let mut evidence = Vec::new();
    for event in events {
        if matches!(event, Event::SessionStarted { .. }) {
            // A second session in one file starts from a fresh judge, as it did live.
            rescorer = Rescorer::new(judge.clone(), cooldown_steps);
        }
        evidence.clear();
        decoder.push(event, &mut evidence);
        for e in &evidence {
            if let Evidence::Escalated {
                tick,
                reason,
                shadow,
                ..
            } = e
            {
                out.logged.push(LoggedEscalation {
                    tick: *tick,
                    reason: *reason,
                    shadow: *shadow,
                });
            }
            if let Some(r) = rescorer.push(e) {
                if r.escalate {
                    out.escalations.push(r.tick);
                }
                out.points.push(r);
            }
        }
    }
    out.differ = ranges(
        out.points
            .iter()
            .filter(|r| r.logged.is_some_and(|l| l.below() != r.below))
            .map(|r| r.tick),
    );
    out
}

/// Consecutive ticks folded into inclusive ranges.
fn ranges(ticks: impl Iterator<Item = u64>) -> Vec<(u64, u64)> {
    let mut out: Vec<(u64, u64)> = Vec::new();
    for t in ticks {
        match out.last_mut() {
            Some((_, end)) if t <= *end + 1 => *end = (*end).max(t),
            _ => out.push((t, t)),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn consecutive_ticks_fold_into_ranges() {
        assert_eq!(
            ranges([1, 2, 3, 7, 9, 10].into_iter()),
            vec![(1, 3), (7, 7), (9, 10)]
        );
        assert_eq!(ranges(std::iter::empty()), vec![]);
    }

    #[test]
    fn policies_parse_and_bad_ones_are_refused() {
        let c = Config::default();
        let p = counterfactual_config(&c, None, Some("constant=0.3")).expect("parse");
        assert_eq!(p.policy.threshold, ThresholdKind::Constant);
        assert!((p.policy.constant - 0.3).abs() < 1e-12);
        let m = counterfactual_config(&c, None, Some("myopic")).expect("parse");
        assert_eq!(m.policy.threshold, ThresholdKind::Myopic);
        for bad in ["clever", "constant=2", "myopic=0.1", "constant=x"] {
            assert!(counterfactual_config(&c, None, Some(bad)).is_err(), "{bad}");
        }
    }
}
