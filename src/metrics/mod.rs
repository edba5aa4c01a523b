//! Scores for the judge and the router: how honest the belief B_t is, how well it ranks
//! sessions, how good its escalations were, and what they bought per unit of money.
//!
//! Pure: no I/O, no clocks. Every function takes plain slices and returns `None` where the
//! quantity is undefined (empty input, a NaN forecast, a single class where two are needed)
//! instead of panicking or inventing a number. Each definition names its source in the
//! rustdoc; `tests/golden/metrics.json` pins the values against an independent
//! implementation (`tools/golden_metrics.py`, scikit-learn and numpy).

pub(crate) mod ask;
pub(crate) mod ask_session;
pub(crate) mod calibration;
pub(crate) mod conformal;
pub(crate) mod loop_tally;
pub(crate) mod ranking;
pub(crate) mod routing;
pub mod session;
pub(crate) mod uncertainty;

#[cfg(test)]
mod properties;

pub use ask::{AskSession, AskTable, AskTally, EscalationMark, ask_table};
pub use ask_session::{SessionAsk, SessionAskScores};
pub use calibration::{Binning, ReliabilityBin, brier, ece, ece_against, mce, reliability_bins};
pub use conformal::risk_controlling;
pub use loop_tally::{LoopTally, ModelSteps};
pub use ranking::{aurc, auroc, e_aurc, oracle_aurc};
pub use routing::{CostAccuracyCurve, CostAccuracyPoint, PgrCurve, cost_accuracy_curve};
pub use uncertainty::{
    Interval, bootstrap, bootstrap_picks, calibration_slope, calibration_slope_against,
    ece_noise_floor,
};

use serde::{Deserialize, Serialize};

/// One forecast of the judge and what happened: `p` is the belief that the junior finishes
/// correctly, `success` the label.
///
/// A pair rather than two slices, so a length mismatch cannot exist.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Forecast {
    pub p: f64,
    pub success: bool,
}

impl Forecast {
    pub fn new(p: f64, success: bool) -> Self {
        Forecast { p, success }
    }

    /// The label as 0.0 or 1.0, for averages.
    pub(crate) fn y(self) -> f64 {
        if self.success { 1.0 } else { 0.0 }
    }
}

/// `Some(())` when every metric is defined on `data`: it is non-empty and no forecast is NaN
/// or infinite. A NaN means an upstream bug; scoring over it would hide that bug.
pub(crate) fn usable(data: &[Forecast]) -> Option<()> {
    (!data.is_empty() && data.iter().all(|f| f.p.is_finite())).then_some(())
}

/// Indices of `data` ordered by ascending `p`; ties keep their input order (a stable sort),
/// so equal-mass bins are reproducible.
pub(crate) fn ascending_order(data: &[Forecast]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..data.len()).collect();
    order.sort_by(|&a, &b| data[a].p.total_cmp(&data[b].p));
    order
}
