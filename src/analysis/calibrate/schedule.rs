//! The token-clock threshold schedule a calibration gives under the configured costs,
//! read at a few ticks (or why it cannot be solved).

use serde::Serialize;

use super::CalibrateError;
use crate::competence::Calibration;
use crate::config::{Config, ThresholdKind};
use crate::judge::SessionJudge;

/// Ticks at which the threshold schedule is printed (plus the last).
const SCHEDULE_POINTS: u64 = 8;

/// τ*_t of the optimal policy under the fitted calibration and the configured costs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct SchedulePoint {
    pub tick: u64,
    pub tau: f64,
}

/// The optimal schedule the agent would build from this calibration and `config`'s costs,
/// read at a few ticks (it is held constant between decision ticks anyway).
pub(super) fn schedule(
    calibration: &Calibration,
    config: &Config,
) -> Result<Vec<SchedulePoint>, CalibrateError> {
    if schedule_refused(calibration).is_some() {
        return Ok(Vec::new());
    }
    let mut config = config.clone();
    config.policy.threshold = ThresholdKind::Optimal;
    let watch = SessionJudge::with_calibration(&config, calibration.clone())
        .map_err(|e| CalibrateError::Schedule(e.to_string()))?;
    let mut judge = watch.judge().clone();
    let horizon = config.agent.token_budget;
    let every = (horizon / SCHEDULE_POINTS).max(1);
    let mut points = Vec::new();
    for t in 0..=horizon {
        if t % every == 0 || t == horizon {
            points.push(SchedulePoint {
                tick: t,
                tau: judge.threshold(),
            });
        }
        judge.observe_token(&crate::competence::TokenSignals::default());
    }
    Ok(points)
}

/// Why the token-clock schedule cannot be solved for this calibration, if it cannot.
pub(super) fn schedule_refused(calibration: &Calibration) -> Option<String> {
    calibration.token_clock_refusal().map(|e| e.to_string())
}
