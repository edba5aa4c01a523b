//! Ask-F1 in one unit: one decision per session.
//!
//! [`super::ask`] counts true and false positives per escalation but false negatives per
//! session, so a belief that oscillates around τ (several crossings in one session) inflates
//! recall. Here every session gives one decision — escalated at least once, or not — and one
//! label — help was needed (the session failed, or the operator marked a question needed)
//! or not; precision, recall and F1 are over sessions. Sessions whose need is unknown (a live
//! takeover censors the junior's outcome) are counted apart, never guessed.

use serde::{Deserialize, Serialize};

use super::ask::AskSession;

/// Session-level confusion counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct SessionAsk {
    /// Escalated and help was needed.
    pub tp: u64,
    /// Escalated, help was not needed.
    pub fp: u64,
    /// Not escalated, help was needed (the failure went uncaught).
    #[serde(rename = "fn")]
    pub fn_: u64,
    pub tn: u64,
    /// Escalated, but whether it was needed is unknown.
    pub unknown: u64,
}

impl SessionAsk {
    /// Tallies sessions: needed = failed, or any escalation marked needed.
    pub fn tally<'a>(sessions: impl IntoIterator<Item = &'a AskSession>) -> SessionAsk {
        let mut t = SessionAsk::default();
        for s in sessions {
            let escalated = !s.escalations.is_empty();
            let marked_needed = s.escalations.iter().any(|e| e.needed == Some(true));
            let all_unknown = escalated && s.escalations.iter().all(|e| e.needed.is_none());
            let needed = s.failed || marked_needed;
            match (escalated, needed) {
                (true, _) if all_unknown && !s.failed => t.unknown += 1,
                (true, true) => t.tp += 1,
                (true, false) => t.fp += 1,
                (false, true) => t.fn_ += 1,
                (false, false) => t.tn += 1,
            }
        }
        t
    }

    pub fn precision(&self) -> Option<f64> {
        let d = self.tp + self.fp;
        (d > 0).then(|| self.tp as f64 / d as f64)
    }

    pub fn recall(&self) -> Option<f64> {
        let d = self.tp + self.fn_;
        (d > 0).then(|| self.tp as f64 / d as f64)
    }

    /// Harmonic mean of precision and recall; `None` where either is undefined, 0 when both
    /// are 0.
    pub fn f1(&self) -> Option<f64> {
        let (p, r) = (self.precision()?, self.recall()?);
        Some(if p + r > 0.0 {
            2.0 * p * r / (p + r)
        } else {
            0.0
        })
    }
}

/// [`SessionAsk`] with the scores it gives, as reports print and serialise them (the
/// counts flattened beside the scores).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct SessionAskScores {
    #[serde(flatten)]
    pub counts: SessionAsk,
    pub precision: Option<f64>,
    pub recall: Option<f64>,
    pub f1: Option<f64>,
}

impl From<&SessionAsk> for SessionAskScores {
    fn from(t: &SessionAsk) -> SessionAskScores {
        SessionAskScores {
            counts: *t,
            precision: t.precision(),
            recall: t.recall(),
            f1: t.f1(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::EscalationMark;
    use crate::protocol::Route;

    fn session(crossings: usize, failed: bool) -> AskSession {
        AskSession {
            escalations: vec![
                EscalationMark {
                    route: Route::Senior,
                    needed: Some(failed),
                };
                crossings
            ],
            failed,
        }
    }

    #[test]
    fn the_score_does_not_depend_on_how_often_the_belief_crossed() {
        // Two caught failures, one missed, one needless escalation, one quiet success.
        let once = [
            session(1, true),
            session(1, true),
            session(0, true),
            session(1, false),
            session(0, false),
        ];
        let oscillating = [
            session(4, true),
            session(2, true),
            session(0, true),
            session(3, false),
            session(0, false),
        ];
        let a = SessionAsk::tally(&once);
        assert_eq!(a, SessionAsk::tally(&oscillating));
        assert_eq!((a.tp, a.fp, a.fn_, a.tn), (2, 1, 1, 1));
        assert!((a.precision().expect("p") - 2.0 / 3.0).abs() < 1e-12);
        assert!((a.recall().expect("r") - 2.0 / 3.0).abs() < 1e-12);
        // The per-escalation tally of the oscillating sessions counts 6 TPs for 2 catches.
        let per_escalation = crate::metrics::ask_table(&oscillating).pooled;
        assert_eq!(per_escalation.tp, 6, "{per_escalation:?}");
    }

    #[test]
    fn unknown_need_is_counted_apart() {
        let s = AskSession {
            escalations: vec![EscalationMark {
                route: Route::Senior,
                needed: None,
            }],
            failed: false,
        };
        let t = SessionAsk::tally([&s]);
        assert_eq!((t.unknown, t.tp, t.fp), (1, 0, 0));
        assert_eq!(t.f1(), None);
    }
}
