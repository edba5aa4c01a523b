//! The process a step-clock schedule controls, estimated from logged sessions.
//!
//! The token-clock DP ([`super::dp`]) plans with a law built from the calibration's own
//! histograms, assumes independent ticks and a horizon equal to the token budget, and is
//! then executed at every token. This module describes instead what logged shadow sessions
//! show the calibrated belief actually doing, at the points where a decision is executed:
//! the end of each junior step (decision point k = 1, 2, …). From the logged paths it
//! estimates
//!
//! - a belief partition (equal-mass bins of the logged beliefs) and the empirical Markov
//!   kernel of the bin from decision point k to k + 1, per k, shrunk toward the kernel
//!   pooled over k (a session's first steps and its late ones move the belief
//!   differently, but a corpus of a hundred sessions has few transitions per k);
//! - the law of the first decision point's bin (the session starts at π₀ for everyone);
//! - the hazard h_k(i) that decision point k is the session's last (finish, the step
//!   budget, or a hand-off by the loop's own rules) when the belief is in bin i there,
//!   shrunk toward the hazard h_k of every session at k: a junior that believes it is done
//!   says `finish` sooner, so the end is not independent of the belief. The horizon is the
//!   longest logged session;
//! - the mean junior tokens of step k (the compute of going on);
//! - per bin, how sessions that ended there ended: passed, failed, or handed off by the
//!   loop.
//!
//! No independence between tokens or steps is assumed: only that the bin is a sufficient
//! state from one decision point to the next. Pure: paths in, numbers out.

use super::CompetenceError;

/// How a logged session ended, as far as the judge's policy is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// The junior's session ran to its end (finish, the step or token budget) and its
    /// check passed (`true`) or failed.
    Finished(bool),
    /// The loop's own rules (stuck, a dead endpoint) handed off at the last decision
    /// point: whatever the judge does, this session escalates there.
    HandedOff,
}

/// One logged session seen at its decision points.
#[derive(Debug, Clone, PartialEq)]
pub struct DecisionPath {
    /// The calibrated belief at the end of junior step k = 1..=n.
    pub beliefs: Vec<f64>,
    /// Junior output tokens of step k (spent before decision point k).
    pub tokens: Vec<u64>,
    pub ending: Ending,
}

/// Sessions that ended in one belief bin, by how they ended.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct EndCounts {
    pub passed: usize,
    pub failed: usize,
    pub handed_off: usize,
}

impl EndCounts {
    pub fn total(&self) -> usize {
        self.passed + self.failed + self.handed_off
    }
}

/// The estimated process; see the module docs.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct StepProcess {
    /// Cut points between bins, increasing: a belief b is in bin #{c ∈ cuts : c ≤ b}.
    pub cuts: Vec<f64>,
    /// Mean logged belief in each bin.
    pub centres: Vec<f64>,
    /// P(bin of decision point 1).
    pub first: Vec<f64>,
    /// kernel[i][j] = P(bin j at k + 1 | bin i at k, the session goes on).
    pub kernel: Vec<Vec<f64>>,
    /// kernels[k − 1][i][j] = P(bin j at k + 1 | bin i at k, the session goes on), k =
    /// 1..=K (the last is never used): the per-k counts with `shrink` pseudo-transitions
    /// drawn from `kernel`.
    pub kernels: Vec<Vec<Vec<f64>>>,
    /// hazard[k − 1] = P(decision point k is the last | it is reached), k = 1..=K; the
    /// last entry is 1 (K, the longest logged session, is the horizon).
    pub hazard: Vec<f64>,
    /// hazard_by_bin[k − 1][i] = P(decision point k is the last | it is reached in bin i):
    /// the counts with `shrink` pseudo-sessions ending at the rate `hazard[k − 1]`.
    pub hazard_by_bin: Vec<Vec<f64>>,
    /// end_rate[i] = decision points in bin i that were a session's last, over all decision
    /// points in bin i (pooled over k): does a junior that believes more end sooner?
    pub end_rate: Vec<f64>,
    /// tokens[k − 1] = mean junior tokens of step k among sessions that reached k.
    pub tokens: Vec<f64>,
    pub ends: Vec<EndCounts>,
    /// Sessions and transitions the estimate rests on.
    pub paths: usize,
    pub transitions: usize,
}

/// Knobs of [`StepProcess::estimate`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ProcessOptions {
    /// Most belief bins.
    pub max_bins: usize,
    /// Fewest logged beliefs per bin (fewer bins when there is little data).
    pub min_per_bin: usize,
    /// Pseudo-counts that pull the per-k kernel and the per-bin hazard toward their pooled
    /// versions: 0 trusts every count, a large value gives back the pooled process.
    pub shrink: f64,
}

/// Default of [`ProcessOptions::shrink`].
pub const DEFAULT_SHRINK: f64 = 5.0;

impl Default for ProcessOptions {
    fn default() -> Self {
        ProcessOptions {
            max_bins: 12,
            min_per_bin: 25,
            shrink: DEFAULT_SHRINK,
        }
    }
}

impl StepProcess {
    /// Estimates the process from logged paths (paths without a decision point are left
    /// out: no policy decides anything in them).
    pub fn estimate(
        paths: &[DecisionPath],
        options: ProcessOptions,
    ) -> Result<StepProcess, CompetenceError> {
        let paths: Vec<&DecisionPath> = paths.iter().filter(|p| !p.beliefs.is_empty()).collect();
        if paths.is_empty() {
            return Err(CompetenceError::NotEnoughData(
                "no logged session reached a decision point (a junior step end)".into(),
            ));
        }
        for p in &paths {
            if p.tokens.len() != p.beliefs.len() || p.beliefs.iter().any(|b| !b.is_finite()) {
                return Err(CompetenceError::Invalid(
                    "a decision path needs one finite belief and one token count per step".into(),
                ));
            }
        }
        let mut all: Vec<f64> = paths
            .iter()
            .flat_map(|p| p.beliefs.iter().copied())
            .collect();
        all.sort_by(f64::total_cmp);
        let cuts = quantile_cuts(&all, options);
        let bins = cuts.len() + 1;
        let bin = |b: f64| cuts.iter().filter(|c| **c <= b).count();
        let mut sums = vec![(0.0, 0usize); bins];
        for &b in &all {
            let s = &mut sums[bin(b)];
            s.0 += b;
            s.1 += 1;
        }
        let centres = sums
            .iter()
            .map(|(s, n)| if *n > 0 { s / *n as f64 } else { f64::NAN })
            .collect();
        let horizon = paths.iter().map(|p| p.beliefs.len()).max().unwrap_or(1);
        let mut first = vec![0.0; bins];
        // Per decision point k (and bin): transitions, points reached, points that were the
        // last. The pooled counts are their sums.
        let mut counts_k = vec![vec![vec![0.0; bins]; bins]; horizon];
        let mut reached_in = vec![vec![0.0; bins]; horizon];
        let mut last_in = vec![vec![0.0; bins]; horizon];
        let mut tokens = vec![0.0; horizon];
        let mut ends = vec![EndCounts::default(); bins];
        let mut transitions = 0;
        for p in &paths {
            let n = p.beliefs.len();
            first[bin(p.beliefs[0])] += 1.0;
            for k in 0..n {
                reached_in[k][bin(p.beliefs[k])] += 1.0;
                tokens[k] += p.tokens[k] as f64;
            }
            last_in[n - 1][bin(p.beliefs[n - 1])] += 1.0;
            for (k, w) in p.beliefs.windows(2).enumerate() {
                counts_k[k][bin(w[0])][bin(w[1])] += 1.0;
                transitions += 1;
            }
            let end = &mut ends[bin(p.beliefs[n - 1])];
            match p.ending {
                Ending::Finished(true) => end.passed += 1,
                Ending::Finished(false) => end.failed += 1,
                Ending::HandedOff => end.handed_off += 1,
            }
        }
        let total = paths.len() as f64;
        first.iter_mut().for_each(|f| *f /= total);
        let kernel: Vec<Vec<f64>> = (0..bins)
            .map(|i| {
                let row: Vec<f64> = (0..bins)
                    .map(|j| counts_k.iter().map(|c| c[i][j]).sum())
                    .collect();
                let s: f64 = row.iter().sum();
                if s > 0.0 {
                    row.iter().map(|c| c / s).collect()
                } else {
                    // Never seen going on from here: the belief stays where it is.
                    (0..bins).map(|j| f64::from(u8::from(i == j))).collect()
                }
            })
            .collect();
        // count + m·pooled over total + m; the pooled value itself when m is not finite or
        // there is nothing to count (m = 0 and no count).
        let m = if options.shrink.is_finite() {
            options.shrink.max(0.0)
        } else {
            f64::INFINITY
        };
        let shrunk = |count: f64, total: f64, pooled: f64| {
            if m.is_infinite() || total + m <= 0.0 {
                pooled
            } else {
                (count + m * pooled) / (total + m)
            }
        };
        let kernels = counts_k
            .iter()
            .map(|rows| {
                rows.iter()
                    .zip(&kernel)
                    .map(|(row, pooled)| {
                        let total: f64 = row.iter().sum();
                        row.iter()
                            .zip(pooled)
                            .map(|(c, q)| shrunk(*c, total, *q))
                            .collect()
                    })
                    .collect()
            })
            .collect();
        let reached: Vec<f64> = reached_in.iter().map(|r| r.iter().sum()).collect();
        let hazard: Vec<f64> = (0..horizon)
            .map(|k| last_in[k].iter().sum::<f64>() / reached[k])
            .collect();
        let end_rate = (0..bins)
            .map(|i| {
                let reached: f64 = reached_in.iter().map(|r| r[i]).sum();
                let ended: f64 = last_in.iter().map(|r| r[i]).sum();
                if reached > 0.0 {
                    ended / reached
                } else {
                    f64::NAN
                }
            })
            .collect();
        let hazard_by_bin = (0..horizon)
            .map(|k| {
                (0..bins)
                    .map(|i| shrunk(last_in[k][i], reached_in[k][i], hazard[k]))
                    .collect()
            })
            .collect();
        let tokens = tokens.iter().zip(&reached).map(|(t, n)| t / n).collect();
        Ok(StepProcess {
            cuts,
            centres,
            first,
            kernel,
            kernels,
            hazard,
            hazard_by_bin,
            end_rate,
            tokens,
            ends,
            paths: paths.len(),
            transitions,
        })
    }

    /// K: the most decision points a session has.
    pub fn horizon(&self) -> usize {
        self.hazard.len()
    }

    /// P(the session ends at decision point k + 1 | it is there, in bin i).
    pub fn hazard_at(&self, k: usize, i: usize) -> f64 {
        self.hazard_by_bin[k][i]
    }

    /// The law of the bin at decision point k + 2 from bin i at k + 1.
    pub fn kernel_at(&self, k: usize, i: usize) -> &[f64] {
        &self.kernels[k][i]
    }

    /// The bin of belief `b`.
    pub fn bin(&self, b: f64) -> usize {
        self.cuts.iter().filter(|c| **c <= b).count()
    }
}

/// Cut points at equal-mass quantiles of the sorted beliefs, deduplicated.
fn quantile_cuts(sorted: &[f64], options: ProcessOptions) -> Vec<f64> {
    let n = sorted.len();
    let bins = (n / options.min_per_bin.max(1)).clamp(1, options.max_bins.max(1));
    let mut cuts: Vec<f64> = (1..bins)
        .map(|q| sorted[(q * n / bins).min(n - 1)])
        .filter(|c| *c > sorted[0])
        .collect();
    cuts.dedup();
    cuts
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(beliefs: &[f64], ending: Ending) -> DecisionPath {
        DecisionPath {
            beliefs: beliefs.to_vec(),
            tokens: vec![10; beliefs.len()],
            ending,
        }
    }

    #[test]
    fn the_kernel_hazard_and_endings_are_counted_from_the_paths() {
        let options = ProcessOptions {
            max_bins: 2,
            min_per_bin: 1,
            shrink: DEFAULT_SHRINK,
        };
        let paths = [
            path(&[0.2, 0.8, 0.9], Ending::Finished(true)),
            path(&[0.2, 0.1], Ending::Finished(false)),
            path(&[0.9], Ending::HandedOff),
            path(&[], Ending::Finished(true)),
        ];
        let p = StepProcess::estimate(&paths, options).expect("estimate");
        // Six beliefs, two bins cut at the median (0.8): {0.1, 0.2, 0.2} and {0.8, 0.9, 0.9}.
        assert_eq!(p.cuts, vec![0.8]);
        assert_eq!(p.paths, 3);
        assert_eq!(p.transitions, 3);
        assert!((p.first[0] - 2.0 / 3.0).abs() < 1e-12);
        // From the low bin: 0.2 → 0.8 and 0.2 → 0.1; from the high bin: 0.8 → 0.9.
        assert_eq!(p.kernel[0], vec![0.5, 0.5]);
        assert_eq!(p.kernel[1], vec![0.0, 1.0]);
        // Lengths 3, 2, 1: h₁ = 1/3, h₂ = 1/2, h₃ = 1.
        assert_eq!(p.hazard.len(), 3);
        assert!((p.hazard[0] - 1.0 / 3.0).abs() < 1e-12);
        assert!((p.hazard[1] - 0.5).abs() < 1e-12);
        assert_eq!(p.hazard[2], 1.0);
        assert_eq!(p.ends[0].failed, 1);
        assert_eq!(p.ends[1].passed, 1);
        assert_eq!(p.ends[1].handed_off, 1);
        assert_eq!(p.bin(0.79), 0);
        assert_eq!(p.bin(0.8), 1);
    }

    #[test]
    fn the_end_and_the_kernel_follow_the_belief_and_the_step_shrunk_toward_the_pool() {
        // Low-belief sessions end at their first step; high ones go on twice, staying high
        // at the first transition and falling low at the second.
        let mut paths = Vec::new();
        for _ in 0..10 {
            paths.push(path(&[0.1], Ending::Finished(false)));
            paths.push(path(&[0.9, 0.9, 0.1], Ending::Finished(false)));
        }
        let raw = ProcessOptions {
            max_bins: 2,
            min_per_bin: 1,
            shrink: 0.0,
        };
        let p = StepProcess::estimate(&paths, raw).expect("estimate");
        assert_eq!(p.cuts, vec![0.9]);
        // Pooled: half of the sessions end at k = 1; by bin, every low one and no high one.
        assert!((p.hazard[0] - 0.5).abs() < 1e-12);
        assert_eq!(p.hazard_at(0, 0), 1.0);
        assert_eq!(p.hazard_at(0, 1), 0.0);
        // Pooled over k: every low-bin point was a session's last (10 at k = 1, 10 at
        // k = 3), no high-bin point was.
        assert_eq!(p.end_rate, vec![1.0, 0.0]);
        // Pooled over k the high bin stays or falls half the time; per k it is certain.
        assert_eq!(p.kernel[1], vec![0.5, 0.5]);
        assert_eq!(p.kernel_at(0, 1), &[0.0, 1.0]);
        assert_eq!(p.kernel_at(1, 1), &[1.0, 0.0]);
        // A row never seen at that step is the pooled row (the identity: never left low).
        assert_eq!(p.kernel_at(1, 0), &[1.0, 0.0]);
        // 10 pseudo-counts against 10 real ones: halfway to the pooled values.
        let shrunk = StepProcess::estimate(
            &paths,
            ProcessOptions {
                shrink: 10.0,
                ..raw
            },
        )
        .expect("estimate");
        assert!((shrunk.hazard_at(0, 0) - 0.75).abs() < 1e-12);
        assert!((shrunk.hazard_at(0, 1) - 0.25).abs() < 1e-12);
        assert_eq!(shrunk.kernel_at(0, 1), &[0.25, 0.75]);
        // Infinitely shrunk: the pooled process.
        let pooled = StepProcess::estimate(
            &paths,
            ProcessOptions {
                shrink: f64::INFINITY,
                ..raw
            },
        )
        .expect("estimate");
        assert_eq!(pooled.hazard_at(0, 0), pooled.hazard[0]);
        assert_eq!(pooled.kernel_at(0, 1), pooled.kernel[1].as_slice());
    }

    #[test]
    fn nothing_to_estimate_is_an_error() {
        let empty = [path(&[], Ending::Finished(true))];
        assert!(StepProcess::estimate(&empty, ProcessOptions::default()).is_err());
        let bad = [DecisionPath {
            beliefs: vec![0.5],
            tokens: vec![],
            ending: Ending::HandedOff,
        }];
        assert!(StepProcess::estimate(&bad, ProcessOptions::default()).is_err());
    }
}
