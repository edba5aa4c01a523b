//! The simulated world of the paper's study, where the truth is known.
//!
//! Y ~ Bernoulli(π₀) says whether the junior will succeed. For ticks t = 1..T each signal
//! e_{t,k} is drawn independently given Y from Beta(a_Y, b_Y). Because the generative
//! process is known, the belief computed with the true Beta density ratio is the exact
//! posterior B_t, and every other belief can be measured against it.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};

use super::SimError;
use super::beta::{BetaShape, SignalLaw};
use crate::competence::calibrator::{logit, sigmoid};
use crate::competence::{LlrLaw, RouteCost, SignalKind, StopCosts, Trajectory};
use crate::competence::{Observation, law::DEFAULT_LAW_ATOMS};

/// Cells per signal when its Beta law is discretised for the DP.
const LAW_CELLS: usize = 1000;

/// Everything that defines the world and its costs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct World {
    /// π₀ = P(Y = 1).
    pub prior: f64,
    /// T: junior ticks when it runs to the end.
    pub horizon: u32,
    /// One to three token signals, each with its own Beta pair.
    pub signals: Vec<SignalLaw>,
    /// κ per junior tick, γ and p_S of the senior, L for a wrong answer.
    pub costs: StopCosts,
}

impl Default for World {
    /// Defaults chosen to resemble the paper's study (its Beta parameters are not
    /// published): T = 40, π₀ = 0.6, a senior that succeeds 90% of the time, a junior run
    /// costing 1 (κ = 1/40), a senior call costing 5, a wrong answer costing 10. Two
    /// signals, each weakly informative per tick: an entropy-like one (high when failing)
    /// and a margin-like one (high when succeeding).
    fn default() -> Self {
        World {
            prior: 0.6,
            horizon: 40,
            signals: vec![
                SignalLaw {
                    signal: SignalKind::Entropy,
                    success: BetaShape { a: 2.0, b: 3.0 },
                    failure: BetaShape { a: 3.0, b: 2.0 },
                },
                SignalLaw {
                    signal: SignalKind::Margin,
                    success: BetaShape { a: 3.0, b: 2.5 },
                    failure: BetaShape { a: 2.5, b: 3.0 },
                },
            ],
            costs: StopCosts {
                kappa: 1.0 / 40.0,
                loss: 10.0,
                route: RouteCost {
                    gamma: 5.0,
                    p_success: 0.9,
                },
            },
        }
    }
}

impl World {
    /// Rejects worlds the study cannot run on, with the reason.
    pub fn validate(&self) -> Result<(), SimError> {
        if !(self.prior > 0.0 && self.prior < 1.0) {
            return Err(SimError::Invalid(format!(
                "the prior must lie in (0, 1), got {}",
                self.prior
            )));
        }
        if self.horizon == 0 || self.horizon > 100_000 {
            return Err(SimError::Invalid(format!(
                "the horizon must be 1 to 100000 ticks, got {}",
                self.horizon
            )));
        }
        if self.signals.is_empty() || self.signals.len() > 3 {
            return Err(SimError::Invalid(format!(
                "the world needs one to three signals, got {}",
                self.signals.len()
            )));
        }
        for (i, s) in self.signals.iter().enumerate() {
            if !s.signal.is_token_signal() || self.signals[..i].iter().any(|o| o.signal == s.signal)
            {
                return Err(SimError::Invalid(
                    "signals must be distinct token signals (entropy, margin, surprise)".into(),
                ));
            }
            BetaShape::new(s.success.a, s.success.b)?;
            BetaShape::new(s.failure.a, s.failure.b)?;
        }
        self.costs
            .validate()
            .map_err(|e| SimError::Invalid(e.to_string()))
    }

    /// ℓ₀ = logit π₀.
    pub fn prior_log_odds(&self) -> f64 {
        logit(self.prior)
    }

    /// The true llr of one tick's values (one per signal, in order).
    pub fn tick_llr(&self, values: &[f64]) -> f64 {
        self.signals
            .iter()
            .zip(values)
            .map(|(s, v)| s.llr(*v))
            .sum()
    }

    /// The true per-tick law of the llr: every signal's discretised law, convolved.
    pub fn llr_law(&self) -> Result<LlrLaw, SimError> {
        let mut law = LlrLaw::no_evidence();
        for s in &self.signals {
            law = law.convolve(&s.llr_law(LAW_CELLS)?, 4 * DEFAULT_LAW_ATOMS);
        }
        Ok(law)
    }

    /// A seeded random source for query `index` of a stream: every query has its own, so
    /// a query's draws do not depend on how many came before or on threads.
    pub fn rng(seed: u64, stream: u64, index: u64) -> StdRng {
        let mix = seed
            .wrapping_mul(0x9E37_79B9_7F4A_7C15)
            .wrapping_add(stream.wrapping_mul(0xD1B5_4A32_D192_ED03))
            .wrapping_add(index);
        StdRng::seed_from_u64(mix)
    }

    /// Draws one query. With probability `rho` a failing query is *contaminated*: its
    /// signals come from the success law ("confidently wrong").
    pub fn draw_query(&self, rho: f64, rng: &mut StdRng) -> Result<Query, SimError> {
        let samplers = self
            .signals
            .iter()
            .map(|s| Ok((s.success.sampler()?, s.failure.sampler()?)))
            .collect::<Result<Vec<_>, SimError>>()?;
        Ok(self.draw_with(&samplers, rho, rng))
    }

    fn draw_with(
        &self,
        samplers: &[(rand_distr::Beta<f64>, rand_distr::Beta<f64>)],
        rho: f64,
        rng: &mut StdRng,
    ) -> Query {
        let success = rng.random_bool(self.prior);
        let senior_ok = rng.random_bool(self.costs.route.p_success);
        let u: f64 = rng.random();
        let contaminated = !success && u < rho;
        let looks_ok = success || contaminated;
        let k = self.signals.len();
        let mut values = Vec::with_capacity(self.horizon as usize * k);
        for _ in 0..self.horizon {
            for s in samplers {
                values.push(SignalLaw::draw(s, looks_ok, rng));
            }
        }
        Query {
            success,
            senior_ok,
            contaminated,
            values,
        }
    }

    /// `n` queries of stream `stream` (the main study, training sets and logs use different
    /// streams so they never share draws).
    pub fn draw(&self, seed: u64, stream: u64, n: usize, rho: f64) -> Result<Draws, SimError> {
        let samplers = self
            .signals
            .iter()
            .map(|s| Ok((s.success.sampler()?, s.failure.sampler()?)))
            .collect::<Result<Vec<_>, SimError>>()?;
        let queries = (0..n)
            .map(|i| self.draw_with(&samplers, rho, &mut World::rng(seed, stream, i as u64)))
            .collect();
        Ok(Draws {
            signals: self.signals.len(),
            horizon: self.horizon as usize,
            queries,
        })
    }
}

/// One simulated query.
#[derive(Debug, Clone, PartialEq)]
pub struct Query {
    /// Y: the junior's own answer would be correct.
    pub success: bool,
    /// The senior's answer would be correct (shared by every policy that escalates).
    pub senior_ok: bool,
    /// A failure whose signals were drawn from the success law.
    pub contaminated: bool,
    /// e_{t,k} for t = 1..T, signal-major within a tick.
    pub values: Vec<f64>,
}

impl Query {
    /// The values of tick t (1-based, as the judge counts).
    pub fn tick(&self, t: usize, signals: usize) -> &[f64] {
        &self.values[(t - 1) * signals..t * signals]
    }

    /// The query as a labelled trajectory for `competence::fit`.
    pub fn trajectory(&self, world: &World) -> Trajectory {
        let k = world.signals.len();
        let mut trajectory = Trajectory::new(Some(self.success));
        let mut obs = Vec::with_capacity(k);
        for t in 1..=world.horizon as usize {
            obs.clear();
            obs.extend(
                world
                    .signals
                    .iter()
                    .zip(self.tick(t, k))
                    .map(|(s, v)| Observation {
                        signal: s.signal,
                        value: *v,
                    }),
            );
            trajectory.push_tick(&obs);
        }
        trajectory
    }
}

/// The queries of one run, all of the same world.
#[derive(Debug, Clone, PartialEq)]
pub struct Draws {
    pub signals: usize,
    pub horizon: usize,
    pub queries: Vec<Query>,
}

impl Draws {
    /// The true posterior B_t for t = 0..=T of every query, row-major ((T+1) per query).
    pub fn true_beliefs(&self, world: &World) -> BeliefPaths {
        let width = self.horizon + 1;
        let mut paths = Vec::with_capacity(self.queries.len() * width);
        for q in &self.queries {
            let mut l = world.prior_log_odds();
            paths.push(sigmoid(l));
            for t in 1..=self.horizon {
                l += world.tick_llr(q.tick(t, self.signals));
                paths.push(sigmoid(l));
            }
        }
        BeliefPaths { width, paths }
    }
}

/// Belief paths B_0..B_T of many queries, stored flat.
#[derive(Debug, Clone, PartialEq)]
pub struct BeliefPaths {
    width: usize,
    paths: Vec<f64>,
}

impl BeliefPaths {
    pub fn new(width: usize, paths: Vec<f64>) -> Self {
        BeliefPaths { width, paths }
    }
    pub fn path(&self, query: usize) -> &[f64] {
        &self.paths[query * self.width..(query + 1) * self.width]
    }
    pub fn len(&self) -> usize {
        self.paths.len() / self.width.max(1)
    }
    pub fn is_empty(&self) -> bool {
        self.paths.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_are_deterministic_per_seed_and_follow_the_prior() {
        let w = World::default();
        let a = w.draw(7, 0, 4000, 0.0).expect("draw");
        let b = w.draw(7, 0, 4000, 0.0).expect("draw");
        assert_eq!(a, b);
        let c = w.draw(8, 0, 10, 0.0).expect("draw");
        assert_ne!(a.queries[..10], c.queries[..]);
        let rate = a.queries.iter().filter(|q| q.success).count() as f64 / 4000.0;
        assert!((rate - 0.6).abs() < 0.03, "{rate}");
        assert!(a.queries.iter().all(|q| q.values.len() == 80));
    }

    #[test]
    fn contamination_keeps_labels_and_moves_failures_to_the_success_law() {
        let w = World::default();
        let clean = w.draw(3, 0, 3000, 0.0).expect("draw");
        let dirty = w.draw(3, 0, 3000, 0.5).expect("draw");
        let labels = |d: &Draws| d.queries.iter().map(|q| q.success).collect::<Vec<_>>();
        assert_eq!(labels(&clean), labels(&dirty));
        let mean_entropy = |d: &Draws, pick: &dyn Fn(&Query) -> bool| {
            let (mut s, mut n) = (0.0, 0.0);
            for q in d.queries.iter().filter(|q| pick(q)) {
                for t in 1..=d.horizon {
                    s += q.tick(t, 2)[0];
                    n += 1.0;
                }
            }
            s / n
        };
        let contaminated = mean_entropy(&dirty, &|q| q.contaminated);
        let honest = mean_entropy(&dirty, &|q| !q.success && !q.contaminated);
        assert!((contaminated - 0.4).abs() < 0.01, "{contaminated}");
        assert!((honest - 0.6).abs() < 0.01, "{honest}");
        assert!(clean.queries.iter().all(|q| !q.contaminated));
    }

    #[test]
    fn the_true_belief_is_calibrated() {
        let w = World::default();
        let d = w.draw(5, 0, 20_000, 0.0).expect("draw");
        let paths = d.true_beliefs(&w);
        // Within each belief decile at t = 10, the success rate matches the mean belief.
        let mut bins = [(0.0, 0.0, 0.0); 10];
        for (i, q) in d.queries.iter().enumerate() {
            let b = paths.path(i)[10];
            let k = ((b * 10.0) as usize).min(9);
            bins[k].0 += b;
            bins[k].1 += if q.success { 1.0 } else { 0.0 };
            bins[k].2 += 1.0;
        }
        for (k, (b, y, n)) in bins.iter().enumerate().filter(|(_, b)| b.2 > 500.0) {
            assert!(
                (b / n - y / n).abs() < 0.035,
                "bin {k}: {} vs {}",
                b / n,
                y / n
            );
        }
    }

    #[test]
    fn bad_worlds_are_rejected() {
        let mut w = World::default();
        assert!(w.validate().is_ok());
        w.prior = 1.0;
        assert!(w.validate().is_err());
        let mut w = World::default();
        w.signals[1].signal = SignalKind::Entropy;
        assert!(w.validate().is_err());
        let mut w = World::default();
        w.signals.clear();
        assert!(w.validate().is_err());
    }
}
