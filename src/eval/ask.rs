//! Ask-F1 over registered blockers, pooled as HiL-Bench pools it.
//!
//! HiL-Bench (Scale AI, 2026) removes details from tasks on purpose and registers them as
//! blockers. A question is useful when it targets a blocker; asking twice about the same
//! blocker does not find it twice. Pooled over all tasks:
//! precision = distinct blockers matched / questions asked,
//! recall = distinct blockers matched / blockers registered, F1 their harmonic mean.
//! (The agent's own per-escalation Ask-F1, which also scores senior takeovers, lives in
//! `metrics::ask`; this one only looks at questions and is what HiL-Bench reports.)

use std::collections::HashSet;

use serde::{Deserialize, Serialize};

/// One task's questions as the simulated operator judged them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskQuestions {
    /// For each question asked, the blocker it targeted (`None`: no blocker).
    pub matched: Vec<Option<String>>,
    /// Blockers the task registers.
    pub registered: usize,
}

/// Pooled counts and the scores they give.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct BlockerAsk {
    pub questions: u64,
    /// Distinct blockers hit, summed over tasks.
    pub matched: u64,
    pub registered: u64,
    /// `None` when nothing was asked.
    pub precision: Option<f64>,
    /// `None` when no blocker is registered.
    pub recall: Option<f64>,
    /// `None` when either part is undefined; 0 when both are 0.
    pub f1: Option<f64>,
}

/// Pools the questions of many tasks.
pub fn pool(tasks: &[TaskQuestions]) -> BlockerAsk {
    let mut out = BlockerAsk::default();
    for t in tasks {
        out.questions += t.matched.len() as u64;
        let distinct: HashSet<&str> = t.matched.iter().flatten().map(String::as_str).collect();
        out.matched += distinct.len() as u64;
        out.registered += t.registered as u64;
    }
    let ratio = |n: u64, d: u64| (d > 0).then(|| n as f64 / d as f64);
    out.precision = ratio(out.matched, out.questions);
    out.recall = ratio(out.matched, out.registered);
    out.f1 = match (out.precision, out.recall) {
        (Some(p), Some(r)) if p + r > 0.0 => Some(2.0 * p * r / (p + r)),
        (Some(_), Some(_)) => Some(0.0),
        _ => None,
    };
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(ids: &[Option<&str>], registered: usize) -> TaskQuestions {
        TaskQuestions {
            matched: ids.iter().map(|i| i.map(str::to_string)).collect(),
            registered,
        }
    }

    #[test]
    fn repeated_questions_about_one_blocker_count_once_in_the_numerator() {
        let t = pool(&[
            // Two questions on blocker a, one off-target: 1 matched of 3 asked; 2 registered.
            q(&[Some("a"), Some("a"), None], 2),
            // Nothing asked on a task with one blocker: a miss.
            q(&[], 1),
            // A question on a task with no blocker: lowers precision only.
            q(&[None], 0),
        ]);
        assert_eq!((t.questions, t.matched, t.registered), (4, 1, 3));
        assert_eq!(t.precision, Some(0.25));
        assert_eq!(t.recall, Some(1.0 / 3.0));
        let f1 = t.f1.expect("defined");
        assert!((f1 - 2.0 * 0.25 * (1.0 / 3.0) / (0.25 + 1.0 / 3.0)).abs() < 1e-12);
    }

    #[test]
    fn nothing_asked_nothing_registered_is_undefined() {
        let t = pool(&[q(&[], 0)]);
        assert_eq!((t.precision, t.recall, t.f1), (None, None, None));
        let wrong = pool(&[q(&[None], 1)]);
        assert_eq!(wrong.f1, Some(0.0));
    }
}
