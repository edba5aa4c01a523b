//! The statistics of the baselines that use no labels and no likelihoods.
//!
//! Each signal is oriented by what it measures ([`trouble_sign`]): entropy and surprise are
//! "trouble" when high, margin when low, so u_{t,k} = v − ½ or ½ − v. Three rules read
//! those values:
//!
//! - the *fixed rule* (the paper's "escalate if entropy > θ"): the first tick whose first
//!   signal's u exceeds θ, one draw at a time;
//! - the *running mean* (the paper's real-model belief proxy): m_t = (1/t)·Σ_{s≤t} Σ_k u_{s,k}
//!   above θ, from t = 1;
//! - the *raw cumulative sum*: S_t = Σ_{s≤t} Σ_k u_{s,k} above θ, from t = 0.
//!
//! Written as statistics that escalate when they fall *below* a threshold (their
//! negatives), so all rules share [`Crossing`].

use super::crossing::Crossing;
use super::scenario::trouble_sign;
use super::world::{Draws, World};

/// Σ_k u_{t,k} for ticks 1..=T of every query, row-major (T per query).
fn tick_trouble(world: &World, draws: &Draws) -> Vec<f64> {
    let signs: Vec<f64> = world
        .signals
        .iter()
        .map(|s| trouble_sign(s.signal))
        .collect();
    let mut out = Vec::with_capacity(draws.queries.len() * draws.horizon);
    for q in &draws.queries {
        for t in 1..=draws.horizon {
            out.push(
                q.tick(t, draws.signals)
                    .iter()
                    .zip(&signs)
                    .map(|(v, s)| s * (v - 0.5))
                    .sum(),
            );
        }
    }
    out
}

/// −u of the first signal at each tick from 1: the fixed rule.
pub fn fixed_rule(world: &World, draws: &Draws) -> Crossing {
    let sign = world
        .signals
        .first()
        .map_or(1.0, |s| trouble_sign(s.signal));
    Crossing::new(draws.queries.len(), 1, draws.horizon, |q, t| {
        -sign * (draws.queries[q].tick(t, draws.signals)[0] - 0.5)
    })
}

/// Partial sums S_t, t = 0..=T (T + 1 per query).
fn cumulative(world: &World, draws: &Draws) -> Vec<f64> {
    let per_tick = tick_trouble(world, draws);
    let h = draws.horizon;
    let mut out = Vec::with_capacity(draws.queries.len() * (h + 1));
    for row in per_tick.chunks(h.max(1)).take(draws.queries.len()) {
        let mut s = 0.0;
        out.push(s);
        for u in row {
            s += u;
            out.push(s);
        }
    }
    out
}

/// −S_t from t = 0: the raw cumulative sum.
pub fn cumulative_sum(world: &World, draws: &Draws) -> Crossing {
    let s = cumulative(world, draws);
    let w = draws.horizon + 1;
    Crossing::new(draws.queries.len(), 0, draws.horizon, |q, t| -s[q * w + t])
}

/// −S_t / t from t = 1: the running mean.
pub fn running_mean(world: &World, draws: &Draws) -> Crossing {
    let s = cumulative(world, draws);
    let w = draws.horizon + 1;
    Crossing::new(draws.queries.len(), 1, draws.horizon, |q, t| {
        -s[q * w + t] / t as f64
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statistics_by_hand() {
        let world = World::default();
        let mut draws = world.draw(1, 0, 1, 0.0).expect("draw");
        draws.horizon = 2;
        // Tick 1: entropy 0.9, margin 0.3 → u = 0.4 + 0.2; tick 2: 0.2, 0.6 → −0.3 − 0.1.
        draws.queries[0].values = vec![0.9, 0.3, 0.2, 0.6];
        let sum = cumulative_sum(&world, &draws);
        // S = 0, 0.6, 0.2: below −0.5 (S > 0.5) first at tick 1.
        assert_eq!(sum.tick(0, -0.5), Some(1));
        assert_eq!(sum.tick(0, -0.7), None);
        let mean = running_mean(&world, &draws);
        // m = 0.6, 0.1.
        assert_eq!(mean.tick(0, -0.55), Some(1));
        assert_eq!(mean.tick(0, -0.65), None);
        let fixed = fixed_rule(&world, &draws);
        assert_eq!(fixed.tick(0, -0.35), Some(1));
        assert_eq!(fixed.tick(0, -0.45), None);
    }
}
