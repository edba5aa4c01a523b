//! Worlds where the judge's model is wrong: the study's falsification test.
//!
//! The DP, the myopic rule and every belief-based policy assume what the nominal
//! [`World`] says: ticks independent given Y, each drawn from its Beta law, and a judge
//! whose belief is the exact posterior of that model. Each scenario breaks one of those
//! assumptions while the judge and the planner keep the nominal model (the DP is solved on
//! the nominal law in every scenario), so the study can ask whether the planned schedule
//! still beats simpler rules when the model it plans on is false. The parameterisations:
//!
//! - [`Scenario::Nominal`]: the model holds.
//! - [`Scenario::DependentTicks`]: with probability `stay` a tick repeats the previous
//!   tick's values exactly, otherwise it is a fresh draw. Every tick keeps its nominal
//!   marginal law, but a session has about T·(1 − stay) independent draws, so the nominal
//!   belief counts each piece of evidence about (1 + stay)/(1 − stay) times.
//! - [`Scenario::StyleDrift`]: a per-session style z_t, z_0 ~ N(0, start_sd²) and
//!   z_t = z_{t−1} + N(0, step_sd²), independent of Y, moves every value in logit space
//!   toward "trouble" (up for entropy and surprise, down for margin): v ↦ σ(logit v ± z_t).
//!   The judge reads style as evidence about competence.
//! - [`Scenario::MiscalibratedJudge`]: the world is nominal but the judge's log-odds are
//!   ℓ̂_t = ℓ₀ + scale·Λ_t + drift·t (Λ_t the true llr sum): scale > 1 is over-confident,
//!   scale < 1 under-confident, drift > 0 an optimistic creep per tick like the built-in
//!   prior's on ordinary text.
//! - [`Scenario::Contaminated`]: a fraction `rho` of the failing queries draws its signals
//!   from the success law ("confidently wrong"); no judge can tell those from successes.

use rand::Rng;
use rand_distr::{Distribution, Normal};
use serde::Serialize;

use super::SimError;
use super::world::{BeliefPaths, Draws, World};
use crate::competence::SignalKind;
use crate::competence::calibrator::{logit, sigmoid};

/// Stream offset of a scenario's own randomness (repeats, style), apart from the draws'.
const SCENARIO_STREAM: u64 = 10_000;
/// Keeps transformed values inside (0, 1), where every Beta log-density is finite.
const EDGE: f64 = 1e-12;

/// One world of the falsification study; see the module docs for each parameterisation.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Scenario {
    Nominal,
    DependentTicks { stay: f64 },
    StyleDrift { start_sd: f64, step_sd: f64 },
    MiscalibratedJudge { scale: f64, drift: f64 },
    Contaminated { rho: f64 },
}

impl Scenario {
    /// The worlds `handoff simulate` runs, in report order.
    pub fn standard() -> Vec<Scenario> {
        vec![
            Scenario::Nominal,
            Scenario::DependentTicks { stay: 0.8 },
            Scenario::StyleDrift {
                start_sd: 0.5,
                step_sd: 0.1,
            },
            Scenario::MiscalibratedJudge {
                scale: 2.0,
                drift: 0.0,
            },
            Scenario::MiscalibratedJudge {
                scale: 0.5,
                drift: 0.05,
            },
            Scenario::Contaminated { rho: 0.3 },
        ]
    }

    /// A short name for tables and JSON keys.
    pub fn name(&self) -> String {
        match *self {
            Scenario::Nominal => "nominal".into(),
            Scenario::DependentTicks { stay } => format!("dependent (stay {stay})"),
            Scenario::StyleDrift { start_sd, step_sd } => {
                format!("style drift (sd {start_sd}, step {step_sd})")
            }
            Scenario::MiscalibratedJudge { scale, drift } => {
                format!("judge ×{scale}, drift {drift}/tick")
            }
            Scenario::Contaminated { rho } => format!("contaminated (ρ {rho})"),
        }
    }

    /// `n` queries of this world for `seed` and `stream`.
    pub fn draw(&self, world: &World, seed: u64, stream: u64, n: usize) -> Result<Draws, SimError> {
        let rho = match *self {
            Scenario::Contaminated { rho } => rho,
            _ => 0.0,
        };
        let mut draws = world.draw(seed, stream, n, rho)?;
        let k = draws.signals;
        let ticks = draws.horizon;
        match *self {
            Scenario::DependentTicks { stay } => {
                for (i, q) in draws.queries.iter_mut().enumerate() {
                    let mut rng = World::rng(seed, SCENARIO_STREAM + stream, i as u64);
                    for t in 1..ticks {
                        if rng.random_bool(stay.clamp(0.0, 1.0)) {
                            q.values.copy_within((t - 1) * k..t * k, t * k);
                        }
                    }
                }
            }
            Scenario::StyleDrift { start_sd, step_sd } => {
                let start = normal(start_sd)?;
                let step = normal(step_sd)?;
                let up: Vec<f64> = world
                    .signals
                    .iter()
                    .map(|s| trouble_sign(s.signal))
                    .collect();
                for (i, q) in draws.queries.iter_mut().enumerate() {
                    let mut rng = World::rng(seed, SCENARIO_STREAM + stream, i as u64);
                    let mut z = start.sample(&mut rng);
                    for t in 0..ticks {
                        if t > 0 {
                            z += step.sample(&mut rng);
                        }
                        for (v, sign) in q.values[t * k..(t + 1) * k].iter_mut().zip(&up) {
                            *v = sigmoid(logit(v.clamp(EDGE, 1.0 - EDGE)) + sign * z)
                                .clamp(EDGE, 1.0 - EDGE);
                        }
                    }
                }
            }
            _ => {}
        }
        Ok(draws)
    }

    /// The judge's summed llr Λ̂_t, t = 0..=T, of every query (row-major), under the nominal
    /// model and this scenario's judge.
    pub fn judge_llr(&self, world: &World, draws: &Draws) -> BeliefPaths {
        let (scale, drift) = match *self {
            Scenario::MiscalibratedJudge { scale, drift } => (scale, drift),
            _ => (1.0, 0.0),
        };
        let width = draws.horizon + 1;
        let mut paths = Vec::with_capacity(draws.queries.len() * width);
        for q in &draws.queries {
            let mut l = 0.0;
            paths.push(l);
            for t in 1..=draws.horizon {
                l += scale * world.tick_llr(q.tick(t, draws.signals)) + drift;
                paths.push(l);
            }
        }
        BeliefPaths::new(width, paths)
    }
}

/// +1 when a high value of the signal means trouble (entropy, surprise), −1 when a low one
/// does (margin). Fixed by what the signal measures, not by any label.
pub fn trouble_sign(signal: SignalKind) -> f64 {
    if signal == SignalKind::Margin {
        -1.0
    } else {
        1.0
    }
}

fn normal(sd: f64) -> Result<Normal<f64>, SimError> {
    Normal::new(0.0, sd).map_err(|e| SimError::Invalid(format!("style sd {sd}: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mean_abs_step(d: &Draws) -> f64 {
        let (mut s, mut n) = (0.0, 0.0);
        for q in &d.queries {
            for t in 2..=d.horizon {
                s += (q.tick(t, 2)[0] - q.tick(t - 1, 2)[0]).abs();
                n += 1.0;
            }
        }
        s / n
    }

    #[test]
    fn dependent_ticks_repeat_at_the_stay_rate_and_keep_labels() {
        let w = World::default();
        let nominal = Scenario::Nominal.draw(&w, 2, 0, 500).expect("draw");
        let sticky = Scenario::DependentTicks { stay: 0.8 }
            .draw(&w, 2, 0, 500)
            .expect("draw");
        let repeats = sticky
            .queries
            .iter()
            .flat_map(|q| (2..=40).map(move |t| q.tick(t, 2) == q.tick(t - 1, 2)))
            .filter(|r| *r)
            .count() as f64
            / (500.0 * 39.0);
        assert!((repeats - 0.8).abs() < 0.02, "{repeats}");
        let label = |d: &Draws| d.queries.iter().map(|q| q.success).collect::<Vec<_>>();
        assert_eq!(label(&nominal), label(&sticky));
        assert!(mean_abs_step(&sticky) < 0.3 * mean_abs_step(&nominal));
    }

    #[test]
    fn style_drift_moves_values_toward_trouble_and_the_judge_follows() {
        let w = World::default();
        let drift = Scenario::StyleDrift {
            start_sd: 0.5,
            step_sd: 0.1,
        };
        let d = drift.draw(&w, 4, 0, 2000).expect("draw");
        let n = Scenario::Nominal.draw(&w, 4, 0, 2000).expect("draw");
        // The style is independent of Y, so the spread of the final llr among successes
        // grows well beyond the nominal spread.
        let spread = |d: &Draws| {
            let p = Scenario::Nominal.judge_llr(&w, d);
            let v: Vec<f64> = (0..d.queries.len())
                .filter(|&i| d.queries[i].success)
                .map(|i| p.path(i)[40])
                .collect();
            let m = v.iter().sum::<f64>() / v.len() as f64;
            (v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / v.len() as f64).sqrt()
        };
        assert!(
            spread(&d) > 1.5 * spread(&n),
            "{} vs {}",
            spread(&d),
            spread(&n)
        );
    }

    #[test]
    fn the_miscalibrated_judge_scales_and_drifts() {
        let w = World::default();
        let d = Scenario::Nominal.draw(&w, 1, 0, 3).expect("draw");
        let truth = Scenario::Nominal.judge_llr(&w, &d);
        let judge = Scenario::MiscalibratedJudge {
            scale: 2.0,
            drift: 0.05,
        }
        .judge_llr(&w, &d);
        for i in 0..3 {
            for t in 0..=40 {
                let want = 2.0 * truth.path(i)[t] + 0.05 * t as f64;
                assert!((judge.path(i)[t] - want).abs() < 1e-9);
            }
        }
    }
}
