//! Conformal risk control: a threshold whose expected risk on a new session is at most α,
//! whatever the judge's calibration, as long as the new session is exchangeable with the
//! ones it was chosen on.
//!
//! Angelopoulos, Bates, Fisch, Lei and Schuster, "Conformal Risk Control" (ICLR 2024,
//! arXiv:2208.02814), Theorem 1: for losses Lᵢ(λ) ∈ [0, B] that are non-increasing in λ,
//! λ̂ = inf{λ : n/(n+1) · R̂ₙ(λ) + B/(n+1) ≤ α} gives E[L_{n+1}(λ̂)] ≤ α. Here λ is the
//! threshold τ (a higher τ escalates at least as often), the loss of a session is 1 when
//! its junior failure reached the user un-escalated, and B = 1. The plug-in choice
//! (R̂ₙ ≤ α) does not have the guarantee: with 15 sessions and α = 0.1 it allows one miss
//! and its expected risk is 2/16 = 0.125 (the test below measures both).

/// The smallest candidate whose conformal bound holds, with the bound there; `None` when
/// no candidate meets α (too few sessions — the bound needs n ≥ 1/α − 1 — or a risk that
/// no threshold brings down).
///
/// `candidates` are (λ, risk) in ascending λ, the risk being the mean loss of the `n`
/// sessions at λ, in [0, 1] and non-increasing in λ (the theorem's condition; the search
/// stops at the first λ that passes, so a risk that rises again later is not looked at).
pub fn risk_controlling(
    candidates: impl IntoIterator<Item = (f64, f64)>,
    n: usize,
    alpha: f64,
) -> Option<(f64, f64)> {
    if n == 0 || alpha.is_nan() || alpha <= 0.0 {
        return None;
    }
    let n = n as f64;
    candidates.into_iter().find_map(|(lambda, risk)| {
        let bound = n / (n + 1.0) * risk + 1.0 / (n + 1.0);
        (bound <= alpha).then_some((lambda, bound))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    /// Mean of `losses` at λ: the share of scores above λ (a session "misses" when its
    /// score exceeds the threshold; a higher threshold misses fewer).
    fn miss_rate(scores: &[f64], lambda: f64) -> f64 {
        scores.iter().filter(|&&s| s > lambda).count() as f64 / scores.len() as f64
    }

    /// (λ, risk) on every λ of `grid`.
    fn risks<'a>(
        grid: &'a [f64],
        risk: impl Fn(f64) -> f64 + 'a,
    ) -> impl Iterator<Item = (f64, f64)> + 'a {
        grid.iter().map(move |&l| (l, risk(l)))
    }

    #[test]
    fn golden_small_cases() {
        let grid: Vec<f64> = (0..=10).map(|i| f64::from(i) / 10.0).collect();
        // 19 sessions, α 0.1: the bound (19·R + 1)/20 ≤ 0.1 allows one miss in 19.
        let scores: Vec<f64> = (1..=19).map(|i| f64::from(i) / 20.0).collect();
        let (l, b) =
            risk_controlling(risks(&grid, |l| miss_rate(&scores, l)), 19, 0.1).expect("some");
        // Scores 0.05 … 0.95: at λ 0.9 one score (0.95) is above, bound (1 + 1)/20 = 0.1.
        assert_eq!(l, 0.9);
        assert!((b - 0.1).abs() < 1e-12, "{b}");
        // 8 sessions cannot certify α 0.1: even zero misses bound at 1/9.
        assert_eq!(risk_controlling(risks(&grid, |_| 0.0), 8, 0.1), None);
        assert_eq!(
            risk_controlling(risks(&grid, |_| 0.0), 9, 0.1),
            Some((0.0, 0.1))
        );
        // Degenerate inputs: no sessions, α ≤ 0, NaN α.
        assert_eq!(risk_controlling(risks(&grid, |_| 0.0), 0, 0.1), None);
        assert_eq!(risk_controlling(risks(&grid, |_| 0.0), 50, 0.0), None);
        assert_eq!(risk_controlling(risks(&grid, |_| 0.0), 50, f64::NAN), None);
    }

    /// The guarantee, measured: 15 calibration sessions, α 0.1, continuous scores, so the
    /// conformal threshold is the largest score (no miss allowed) and its expected risk on
    /// a new session is exactly 1/16; the plug-in rule allows one miss and its risk is
    /// 2/16 = 0.125 > α. 20,000 draws; the standard error of each mean is < 0.0025.
    #[test]
    fn the_conformal_threshold_keeps_its_promise_and_the_plug_in_does_not() {
        let mut rng = StdRng::seed_from_u64(7);
        let (n, alpha, draws) = (15usize, 0.1, 20_000);
        let (mut conformal, mut plug_in) = (0.0, 0.0);
        for _ in 0..draws {
            let scores: Vec<f64> = (0..n).map(|_| rng.random::<f64>()).collect();
            let mut grid = scores.clone();
            grid.push(0.0);
            grid.sort_by(f64::total_cmp);
            let new: f64 = rng.random();
            let (l, _) = risk_controlling(risks(&grid, |l| miss_rate(&scores, l)), n, alpha)
                .expect("feasible");
            conformal += f64::from(u8::from(new > l));
            let p = grid
                .iter()
                .copied()
                .find(|&l| miss_rate(&scores, l) <= alpha)
                .expect("plug-in");
            plug_in += f64::from(u8::from(new > p));
        }
        let (conformal, plug_in) = (conformal / draws as f64, plug_in / draws as f64);
        assert!((conformal - 1.0 / 16.0).abs() < 0.0075, "{conformal}");
        assert!(conformal <= alpha, "{conformal}");
        assert!((plug_in - 2.0 / 16.0).abs() < 0.0075, "{plug_in}");
        assert!(plug_in > alpha, "{plug_in}");
    }
}
