//! Which signal tells a missing detail from a hard step (issue 31, Deliver 4).
//!
//! When the junior fails, the judge escalates; the route then has to guess whether the
//! junior lacked information only the operator has (ask one question) or the step was
//! beyond it (hand it to the senior). A blocker suite answers that question for every
//! session: a failing session on a blocked task is the first kind, a failing session on an
//! untouched task the second. So the same per-signal summaries that
//! [`crate::analysis::discrimination`] ranks successes by are ranked here by that kind,
//! over the failing sessions only, with the same bootstrap over tasks. A summary with an
//! AUROC far from 0.5 is one a router could use; one near 0.5 cannot tell the two apart,
//! however well it predicts failure.
//!
//! Nothing is fitted, so every failing labelled session counts.

use serde::Serialize;

use super::suite::Suite;
use crate::analysis::calibrate::LoggedSession;
use crate::analysis::discrimination::{self, Discrimination};

/// The table and what went into it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MissingDetail {
    /// Failing sessions on blocked tasks (the table's positive side).
    pub blocked: usize,
    /// Failing sessions on untouched tasks.
    pub untouched: usize,
    /// Sessions skipped: passed, unlabelled, or of no task of the suite.
    pub skipped: usize,
    /// AUROC = P(summary of a failing blocked-task session > that of a failing untouched
    /// one), ties ½.
    pub scores: Discrimination,
}

/// The discrimination of every summary between the two kinds of failure.
pub fn missing_detail(suite: &Suite, sessions: &[LoggedSession]) -> MissingDetail {
    let mut kept: Vec<(&str, crate::competence::Trajectory)> = Vec::new();
    let (mut blocked, mut untouched, mut skipped) = (0, 0, 0);
    for s in sessions {
        let Some(task) = suite.task_of_log(Some(&s.task), &s.source) else {
            skipped += 1;
            continue;
        };
        if s.trajectory.label != Some(false) {
            skipped += 1;
            continue;
        }
        let is_blocked = !task.blockers.is_empty();
        if is_blocked {
            blocked += 1;
        } else {
            untouched += 1;
        }
        // The discrimination ranks "label true" above "label false": here, blocked above
        // untouched.
        let mut t = s.trajectory.clone();
        t.label = Some(is_blocked);
        kept.push((task.id.as_str(), t));
    }
    let scores = discrimination::discrimination(kept.iter().map(|(id, t)| (*id, t)));
    MissingDetail {
        blocked,
        untouched,
        skipped,
        scores,
    }
}

impl MissingDetail {
    pub fn to_text(&self) -> String {
        let mut out = format!(
            "missing detail or hard step: {} failing sessions on blocked tasks, {} on untouched \
             tasks ({} other sessions skipped), {} tasks\n\
             AUROC of one summary alone [95% over tasks]: P(higher on a failing blocked-task \
             session than on a failing untouched one); 0.5 tells them apart no better than chance\n",
            self.blocked, self.untouched, self.skipped, self.scores.tasks
        );
        if self.blocked.min(self.untouched) < 5 {
            out.push_str(&format!(
                "  caution: {} session(s) on one side; each resample reuses them, so the \
                 intervals understate the uncertainty\n",
                self.blocked.min(self.untouched)
            ));
        }
        out.push_str(&self.scores.rows_text());
        let informative = self.scores.informative();
        if informative.is_empty() {
            out.push_str(
                "no summary's interval at the whole session excludes 0.5: on these logs no \
                 single signal tells a missing detail from a hard step\n",
            );
        } else {
            for s in informative {
                let auroc = s.auroc.unwrap_or(0.5);
                let side = if auroc > 0.5 { "higher" } else { "lower" };
                out.push_str(&format!(
                    "informative: {} (AUROC {auroc:.2}: {side} when the detail is missing)\n",
                    s.feature
                ));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::competence::{TokenSignals, Trajectory};
    use crate::eval::suite::{Blocker, Budget, Task};
    use crate::protocol::StepFacts;
    use std::path::PathBuf;

    fn task(id: &str, blocked: bool) -> Task {
        Task {
            id: id.into(),
            text: format!("do {id}"),
            repo: PathBuf::new(),
            check: "true".into(),
            solution: None,
            hidden: None,
            budget: Budget::default(),
            blockers: if blocked {
                vec![Blocker {
                    id: format!("{id}-b"),
                    description: "the rule".into(),
                    answer: "the answer".into(),
                    phrases: Vec::new(),
                }]
            } else {
                Vec::new()
            },
        }
    }

    fn session(id: &str, label: bool, entropy: f64) -> LoggedSession {
        let mut t = Trajectory::new(Some(label));
        for _ in 0..5 {
            t.push_token(&TokenSignals {
                entropy: Some(entropy),
                margin: Some(0.5),
                surprise: Some(0.1),
            });
        }
        t.push_step(&StepFacts::default());
        LoggedSession {
            source: PathBuf::from(format!("logs/{id}.jsonl")),
            session_id: id.into(),
            task: format!("do {id}"),
            junior_model: "m".into(),
            top_logprobs: 5,
            trajectory: t,
            shadow: true,
            censored: false,
            ended: true,
            propensity: 1.0,
        }
    }

    #[test]
    fn only_failing_sessions_count_and_a_separating_signal_scores_one() {
        let suite = Suite {
            name: "s".into(),
            dir: PathBuf::new(),
            tasks: (0..6).map(|i| task(&format!("t{i}"), i < 3)).collect(),
        };
        let mut sessions: Vec<LoggedSession> = (0..6)
            .map(|i| session(&format!("t{i}"), false, if i < 3 { 2.0 } else { 0.2 }))
            .collect();
        // A pass on a blocked task and a log of no task of the suite are skipped.
        sessions.push(session("t0", true, 0.2));
        sessions.push(session("elsewhere", false, 2.0));
        let m = missing_detail(&suite, &sessions);
        assert_eq!((m.blocked, m.untouched, m.skipped), (3, 3, 2));
        let entropy = m
            .scores
            .scores
            .iter()
            .find(|s| s.feature.starts_with("entropy mean") && s.fraction == 1.0)
            .expect("the entropy row");
        assert_eq!(entropy.auroc, Some(1.0));
        assert!(m.to_text().contains("3 failing sessions on blocked tasks"));
    }
}
