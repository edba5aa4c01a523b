//! A world where a naive per-token sum cannot stay calibrated: long sessions whose token
//! signals depend on the label only through a per-session hesitation rate θ, with
//! hesitation in Markov bursts.
//!
//! Y ~ Bernoulli(π); θ | Y=1 ~ Beta(2, 18), θ | Y=0 ~ Beta(3, 17); the session length is
//! uniform on [300, 3000) tokens and independent of Y. A two-state chain (hesitant or not)
//! stays in its state with probability 0.8 and has stationary rate θ. A hesitant token has
//! entropy ~ Gamma(4, 0.5) nats, a fluent one ~ Exponential(mean 0.08); the margin is
//! exp(−1.2·entropy) plus N(0, 0.03) noise, clipped to [0, 1] — a near-copy of the entropy,
//! as real top-1/top-2 margins are. So the true P(Y | tokens so far) saturates at
//! P(Y | θ), while Σ llr grows linearly in t. This is the generator of the scientific
//! audit (its `corrlogs.py`), ported so tests can use it; sessions are grouped into tasks
//! (`sessions_per_task` consecutive sessions share a task id) for task-grouped splits.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rand_distr::{Beta, Distribution, Exp, Gamma, Normal};

use crate::competence::{Observation, SignalKind, Trajectory};

/// θ's law given success: Beta(a, b).
pub const THETA_SUCCESS: (f64, f64) = (2.0, 18.0);
/// θ's law given failure: Beta(a, b).
pub const THETA_FAILURE: (f64, f64) = (3.0, 17.0);
/// A hesitant token's entropy: Gamma(shape, scale) nats.
pub const HESITANT_ENTROPY: (f64, f64) = (4.0, 0.5);
/// A fluent token's entropy: exponential with this mean (nats).
pub const FLUENT_ENTROPY_MEAN: f64 = 0.08;

/// Parameters of the correlated world; the defaults are the audit's.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CorrelatedWorld {
    pub prior: f64,
    pub min_ticks: usize,
    pub max_ticks: usize,
    pub stay: f64,
    pub sessions_per_task: usize,
}

impl Default for CorrelatedWorld {
    fn default() -> Self {
        CorrelatedWorld {
            prior: 0.6,
            min_ticks: 300,
            max_ticks: 3000,
            stay: 0.8,
            sessions_per_task: 4,
        }
    }
}

/// One generated session: its task, the latent rate and the evidence with its label.
#[derive(Debug, Clone)]
pub struct CorrelatedSession {
    pub task: usize,
    pub theta: f64,
    pub trajectory: Trajectory,
}

impl CorrelatedWorld {
    /// `n` sessions from `seed`; session i uses its own random stream, so a prefix of a
    /// larger draw is the smaller draw.
    pub fn sessions(&self, n: usize, seed: u64) -> Vec<CorrelatedSession> {
        (0..n).map(|i| self.session(i, seed)).collect()
    }

    /// Session `i` of the stream `seed`.
    pub fn session(&self, i: usize, seed: u64) -> CorrelatedSession {
        let mut rng = StdRng::seed_from_u64(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ i as u64);
        let y = rng.random_bool(self.prior);
        // The Beta, Gamma, Exp and Normal parameters are constants known to be valid.
        let (a, b) = if y { THETA_SUCCESS } else { THETA_FAILURE };
        let law = Beta::new(a, b);
        let theta: f64 = law.map_or(0.1, |b| b.sample(&mut rng));
        let ticks = rng.random_range(self.min_ticks..self.max_ticks.max(self.min_ticks + 1));
        let p_enter = (theta * (1.0 - self.stay) / (1.0 - theta)).clamp(0.0, 1.0);
        let hesitant = Gamma::new(HESITANT_ENTROPY.0, HESITANT_ENTROPY.1).ok();
        let fluent = Exp::new(1.0 / FLUENT_ENTROPY_MEAN).ok();
        let noise = Normal::new(0.0, 0.03).ok();
        let mut state = rng.random_bool(theta.clamp(0.0, 1.0));
        let mut trajectory = Trajectory::new(Some(y));
        for _ in 0..ticks {
            state = if state {
                rng.random_bool(self.stay)
            } else {
                rng.random_bool(p_enter)
            };
            let h: f64 = if state {
                hesitant.map_or(2.0, |g| g.sample(&mut rng))
            } else {
                fluent.map_or(FLUENT_ENTROPY_MEAN, |e| e.sample(&mut rng))
            };
            let m = ((-1.2 * h).exp() + noise.map_or(0.0, |n| n.sample(&mut rng))).clamp(0.0, 1.0);
            trajectory.push_tick(&[
                Observation {
                    signal: SignalKind::Entropy,
                    value: h,
                },
                Observation {
                    signal: SignalKind::Margin,
                    value: m,
                },
            ]);
        }
        CorrelatedSession {
            task: i / self.sessions_per_task.max(1),
            theta,
            trajectory,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sessions_have_the_documented_shape() {
        let w = CorrelatedWorld::default();
        let s = w.sessions(40, 3);
        assert!(
            s.iter()
                .all(|x| (300..3000).contains(&x.trajectory.ticks()))
        );
        assert_eq!(s[7].task, 1);
        let ok = s
            .iter()
            .filter(|x| x.trajectory.label == Some(true))
            .count();
        assert!((10..=35).contains(&ok), "{ok}");
        // Reproducible per session.
        assert_eq!(w.session(5, 3).trajectory, s[5].trajectory);
        // Hesitant tokens (entropy > 0.5) come at about θ's rate.
        let x = &s[0];
        let obs = x.trajectory.observations();
        let hes = obs
            .iter()
            .filter(|o| o.signal == SignalKind::Entropy && o.value > 0.5)
            .count() as f64
            / x.trajectory.ticks() as f64;
        assert!((hes - x.theta).abs() < 0.12, "{hes} vs θ {}", x.theta);
    }
}
