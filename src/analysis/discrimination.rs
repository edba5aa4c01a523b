//! Which signals carry information about the junior's outcome, one at a time.
//!
//! A fitted judge can be calibrated and still useless: a base rate alone is calibrated. What
//! a judge can learn is bounded by what its inputs say, so before trusting a fit this asks
//! each raw summary of a session — mean and upper decile of each token signal, how many
//! tokens and steps, how many steps raised each step fact — how well it alone ranks the
//! successes above the failures (AUROC, 0.5 = no information, below 0.5 = the summary is
//! higher on failures), at three points of each trajectory (what the judge has seen after
//! 20 %, 50 % and all of it), with a 95 % bootstrap interval over tasks.
//!
//! Nothing is fitted here, so every labelled session counts (no hold-out needed); the
//! AUROC of a summary is only its rank agreement with the label, which any monotone model
//! of that summary alone would also reach.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::competence::Trajectory;
use crate::metrics::{Forecast, Interval, auroc, bootstrap};
use crate::protocol::{Observation, SignalKind};

/// Fractions of each trajectory at which the summaries are taken.
pub const AT: [f64; 3] = [0.2, 0.5, 1.0];

/// Below this many sessions of either label the intervals are flagged as understated.
const FEW: usize = 5;

/// Resamples and seed of every interval (fixed, so the table is reproducible).
const REPS: usize = 1000;
const SEED: u64 = 0xd15c_0001;

/// One summary's discrimination at one fraction of the trajectories.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FeatureScore {
    pub feature: String,
    pub fraction: f64,
    /// P(summary of a random success > that of a random failure), ties ½; `None` without
    /// both labels.
    pub auroc: Option<f64>,
    pub interval: Option<Interval>,
    pub mean_success: Option<f64>,
    pub mean_failure: Option<f64>,
}

/// The table `calibrate` prints: every summary at every fraction of [`AT`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Discrimination {
    pub sessions: usize,
    pub successes: usize,
    pub tasks: usize,
    pub scores: Vec<FeatureScore>,
}

/// The names of the summaries, in table order.
pub fn feature_names() -> Vec<String> {
    let mut names = Vec::new();
    for s in token_signals() {
        names.push(format!("{} mean", s.name()));
        names.push(format!("{} p90", s.name()));
    }
    names.push("tokens".to_string());
    names.push("steps".to_string());
    for s in step_signals() {
        names.push(format!("{} steps", s.name()));
    }
    names
}

fn token_signals() -> impl Iterator<Item = SignalKind> {
    SignalKind::ALL.into_iter().filter(|s| s.is_token_signal())
}

fn step_signals() -> impl Iterator<Item = SignalKind> {
    SignalKind::ALL.into_iter().filter(|s| !s.is_token_signal())
}

/// The summaries of the first `fraction` of a trajectory's ticks (tick 0, where step facts
/// before the first token land, is always in), in [`feature_names`] order.
pub fn summaries(trajectory: &Trajectory, fraction: f64) -> Vec<f64> {
    let last = ((fraction * trajectory.ticks() as f64).ceil() as usize).min(trajectory.ticks());
    let mut values: Vec<Vec<f64>> = vec![Vec::new(); SignalKind::ALL.len()];
    let mut present = [0usize; SignalKind::ALL.len()];
    for t in 0..=last {
        for Observation { signal, value } in trajectory.tick(t) {
            if signal.is_token_signal() {
                values[signal.index()].push(*value);
            } else if *value > 0.0 {
                present[signal.index()] += 1;
            }
        }
    }
    let mut out = Vec::new();
    for s in token_signals() {
        let v = &mut values[s.index()];
        out.push(mean(v));
        out.push(upper_decile(v));
    }
    out.push(last as f64);
    // Every step logs a tool_error observation, present or not: the count of steps.
    let steps = trajectory
        .iter_ticks()
        .take(last + 1)
        .flatten()
        .filter(|o| o.signal == SignalKind::ToolError)
        .count();
    out.push(steps as f64);
    for s in step_signals() {
        out.push(present[s.index()] as f64);
    }
    out
}

fn mean(v: &[f64]) -> f64 {
    if v.is_empty() {
        0.0
    } else {
        v.iter().sum::<f64>() / v.len() as f64
    }
}

/// The 90th percentile (nearest rank); 0 for no values.
fn upper_decile(v: &mut [f64]) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(f64::total_cmp);
    let rank = ((0.9 * v.len() as f64).ceil() as usize).clamp(1, v.len());
    v[rank - 1]
}

/// Discrimination of every summary over labelled `(task, trajectory)` pairs; sessions
/// without a label are skipped.
pub fn discrimination<'a>(
    sessions: impl IntoIterator<Item = (&'a str, &'a Trajectory)>,
) -> Discrimination {
    let names = feature_names();
    // Per fraction, per feature, per task: (summary, label) forecasts.
    let mut groups: Vec<Vec<BTreeMap<&str, Vec<Forecast>>>> =
        vec![vec![BTreeMap::new(); names.len()]; AT.len()];
    let (mut n, mut successes) = (0, 0);
    let mut tasks = std::collections::BTreeSet::new();
    for (task, trajectory) in sessions {
        let Some(label) = trajectory.label else {
            continue;
        };
        n += 1;
        successes += usize::from(label);
        tasks.insert(task);
        for (k, &fraction) in AT.iter().enumerate() {
            for (j, value) in summaries(trajectory, fraction).into_iter().enumerate() {
                groups[k][j]
                    .entry(task)
                    .or_default()
                    .push(Forecast::new(value, label));
            }
        }
    }
    let mut scores = Vec::new();
    for (j, name) in names.iter().enumerate() {
        for (k, &fraction) in AT.iter().enumerate() {
            let by_task: Vec<Vec<Forecast>> = groups[k][j].values().cloned().collect();
            let all: Vec<Forecast> = by_task.iter().flatten().copied().collect();
            let side = |label: bool| {
                let v: Vec<f64> = all
                    .iter()
                    .filter(|f| f.success == label)
                    .map(|f| f.p)
                    .collect();
                (!v.is_empty()).then(|| mean(&v))
            };
            scores.push(FeatureScore {
                feature: name.clone(),
                fraction,
                auroc: auroc(&all),
                interval: bootstrap(&by_task, auroc, REPS, SEED),
                mean_success: side(true),
                mean_failure: side(false),
            });
        }
    }
    Discrimination {
        sessions: n,
        successes,
        tasks: tasks.len(),
        scores,
    }
}

impl Discrimination {
    /// The table as text: one row per summary, AUROC [interval] at each fraction.
    pub fn to_text(&self) -> String {
        let mut out = format!(
            "\nper-signal discrimination: {} labelled sessions ({} successes, {} tasks), no fit;\n\
             AUROC of one summary alone [95% over tasks] (0.5 none, < 0.5 higher on failures)\n",
            self.sessions, self.successes, self.tasks
        );
        let fewest = self.successes.min(self.sessions - self.successes);
        if fewest < FEW {
            out.push_str(&format!(
                "  caution: {fewest} session(s) of one label: each resample reuses them, so the \
                 intervals show only the other side's spread and understate the uncertainty\n"
            ));
        }
        out.push_str(&self.rows_text());
        out
    }

    /// The table's rows under a header line: one row per summary, AUROC [interval] at each
    /// fraction of [`AT`].
    pub fn rows_text(&self) -> String {
        let mut out = String::new();
        out.push_str(&format!("  {:<24}", "summary"));
        for f in AT {
            out.push_str(&format!("  {:>22}", format!("first {:.0}%", f * 100.0)));
        }
        out.push('\n');
        for row in self.scores.chunks(AT.len()) {
            let Some(first) = row.first() else { continue };
            out.push_str(&format!("  {:<24}", first.feature));
            for s in row {
                let cell = match (s.auroc, s.interval) {
                    (Some(a), Some(i)) => format!("{a:.2} [{:.2}, {:.2}]", i.lower, i.upper),
                    (Some(a), None) => format!("{a:.2}"),
                    _ => "-".to_string(),
                };
                out.push_str(&format!("  {cell:>22}"));
            }
            out.push('\n');
        }
        out
    }

    /// The summaries whose interval at the whole trajectory excludes 0.5: the ones the data
    /// can show carry information.
    pub fn informative(&self) -> Vec<&FeatureScore> {
        self.scores
            .iter()
            .filter(|s| s.fraction == 1.0)
            .filter(|s| s.interval.is_some_and(|i| i.lower > 0.5 || i.upper < 0.5))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::competence::TokenSignals;
    use crate::protocol::StepFacts;

    fn session(label: bool, entropy: f64, failing_checks: usize) -> Trajectory {
        let mut t = Trajectory::new(Some(label));
        for _ in 0..10 {
            t.push_token(&TokenSignals {
                entropy: Some(entropy),
                margin: Some(0.5),
                surprise: Some(0.1),
            });
        }
        for k in 0..3 {
            t.push_step(&StepFacts {
                check_failed: k < failing_checks,
                ..StepFacts::default()
            });
        }
        t
    }

    fn score<'a>(d: &'a Discrimination, feature: &str, fraction: f64) -> &'a FeatureScore {
        d.scores
            .iter()
            .find(|s| s.feature == feature && s.fraction == fraction)
            .expect("feature in table")
    }

    #[test]
    fn a_signal_that_separates_the_labels_scores_one_and_one_that_does_not_a_half() {
        let sessions: Vec<(String, Trajectory)> = (0..20)
            .map(|i| {
                let success = i % 2 == 0;
                // Successes: low entropy, no failed checks. The margin is the same for all.
                let entropy = if success { 0.2 } else { 1.5 } + 0.01 * i as f64;
                (
                    format!("task {i}"),
                    session(success, entropy, if success { 0 } else { 2 }),
                )
            })
            .collect();
        let d = discrimination(sessions.iter().map(|(k, t)| (k.as_str(), t)));
        assert_eq!((d.sessions, d.successes, d.tasks), (20, 10, 20));
        assert_eq!(score(&d, "entropy mean", 1.0).auroc, Some(0.0));
        assert_eq!(score(&d, "check_failed steps", 1.0).auroc, Some(0.0));
        assert_eq!(score(&d, "margin mean", 1.0).auroc, Some(0.5));
        // Steps land after the tokens: the first half of the trajectory has seen none.
        assert_eq!(score(&d, "check_failed steps", 0.5).auroc, Some(0.5));
        let names: Vec<&str> = d.informative().iter().map(|s| s.feature.as_str()).collect();
        assert!(names.contains(&"entropy mean"), "{names:?}");
        assert!(!names.contains(&"margin mean"), "{names:?}");
        assert!(d.to_text().contains("entropy mean"));
    }

    #[test]
    fn summaries_count_steps_and_take_the_upper_decile() {
        let mut t = Trajectory::new(Some(true));
        for k in 1..=10 {
            t.push_token(&TokenSignals {
                entropy: Some(f64::from(k)),
                margin: None,
                surprise: None,
            });
        }
        t.push_step(&StepFacts {
            no_diff: true,
            ..StepFacts::default()
        });
        let names = feature_names();
        let v = summaries(&t, 1.0);
        let at = |name: &str| v[names.iter().position(|n| n == name).expect("name")];
        assert_eq!(at("entropy mean"), 5.5);
        assert_eq!(at("entropy p90"), 9.0);
        assert_eq!(at("tokens"), 10.0);
        assert_eq!(at("steps"), 1.0);
        assert_eq!(at("no_diff steps"), 1.0);
        assert_eq!(at("tool_error steps"), 0.0);
    }
}
