//! The one place a calibration, the route's costs and the horizon become an optimal
//! threshold schedule: the calibration's per-tick law ([`super::law`]) solved by backward
//! induction ([`super::dp`]). The configured judge calls this; nothing else solves the DP
//! for a session.

use super::CompetenceError;
use super::calibration::Calibration;
use super::dp::{DpSpec, OptimalSchedule, solve};
use super::law::{DEFAULT_GRID_POINTS, DEFAULT_LAW_ATOMS};
use super::threshold::StopCosts;

impl Calibration {
    /// Why the token-clock schedule cannot be planned for this calibration, if it cannot:
    /// the law [`Calibration::optimal_schedule`] plans on is the naive sum's (ℓ moves by
    /// c·llr per token), and a feature model's belief moves by its own varying-coefficient
    /// map, which has no per-tick law here; planned on the naive law anyway it waits for
    /// evidence that never comes that fast. The one rule the judge, `calibrate`, `doctor`
    /// and `schedule` ask.
    pub fn token_clock_refusal(&self) -> Option<CompetenceError> {
        self.features
            .is_some()
            .then_some(CompetenceError::NoTokenLaw)
    }

    /// The optimal schedule for one session under this calibration: the per-tick law of its
    /// own histograms (a step ending on a tick with probability 1/`tokens_per_step`),
    /// solved on a [`DEFAULT_GRID_POINTS`] grid. What the agent calls before a session.
    /// A feature-model calibration has no such law and is refused
    /// ([`CompetenceError::NoTokenLaw`]): its schedule is planned on logged sessions
    /// (`handoff schedule`, the step clock).
    pub fn optimal_schedule(
        &self,
        costs: StopCosts,
        horizon: u64,
        stride: u64,
        tokens_per_step: f64,
    ) -> Result<OptimalSchedule, CompetenceError> {
        if let Some(refused) = self.token_clock_refusal() {
            return Err(refused);
        }
        if !(tokens_per_step.is_finite() && tokens_per_step >= 1.0) {
            return Err(CompetenceError::Invalid(format!(
                "tokens per step must be at least 1, got {tokens_per_step}"
            )));
        }
        let law = self.per_tick_law(1.0 / tokens_per_step, DEFAULT_LAW_ATOMS);
        let spec = DpSpec {
            costs,
            horizon,
            grid_points: DEFAULT_GRID_POINTS,
            stride,
        };
        solve(&law, &spec)
    }
}
