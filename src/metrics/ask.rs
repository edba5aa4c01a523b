//! Ask-F1: were the escalations needed, and were the failures caught?
//!
//! HiL-Bench (Scale AI, 2026) scores help-seeking as an F1 over questions: asking when it
//! was not needed wastes the responder's time, not asking when it was needed ends in a
//! wrong result. The design extends it from operator questions to senior takeovers.

use serde::{Deserialize, Serialize};

use crate::protocol::Route;

/// One escalation and whether it was needed.
///
/// `needed` is the operator's mark on a question, or, in shadow mode, whether the junior
/// went on to fail. `None` when nothing can say (a real takeover censors the junior's own
/// outcome); such escalations are counted apart, never guessed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct EscalationMark {
    pub route: Route,
    pub needed: Option<bool>,
}

/// What one session contributes to Ask-F1.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct AskSession {
    pub escalations: Vec<EscalationMark>,
    /// The session ended in a failure.
    pub failed: bool,
}

impl AskSession {
    /// A failure no escalation tried to prevent: the false negative of Ask-F1.
    pub fn missed(&self) -> bool {
        self.failed && self.escalations.is_empty()
    }
}

/// Counts of Ask-F1 and the scores they give.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct AskTally {
    /// Needed escalations.
    pub tp: u64,
    /// Escalations that were not needed.
    pub fp: u64,
    /// Failures with no escalation.
    #[serde(rename = "fn")]
    pub fn_: u64,
    /// Escalations whose necessity is unknown; in neither precision nor recall.
    pub unmarked: u64,
}

impl AskTally {
    /// Needed escalations / all marked escalations. `None` with no marked escalation.
    pub fn precision(&self) -> Option<f64> {
        ratio(self.tp, self.tp + self.fp)
    }

    /// Needed escalations / (needed escalations + failures with no escalation). `None` when
    /// nothing needed an escalation.
    pub fn recall(&self) -> Option<f64> {
        ratio(self.tp, self.tp + self.fn_)
    }

    /// Harmonic mean of precision and recall, 2·tp / (2·tp + fp + fn). `None` when all
    /// three counts are zero; 0 when there are counts but no true positive.
    pub fn f1(&self) -> Option<f64> {
        ratio(2 * self.tp, 2 * self.tp + self.fp + self.fn_)
    }

    fn add_mark(&mut self, needed: Option<bool>) {
        match needed {
            Some(true) => self.tp += 1,
            Some(false) => self.fp += 1,
            None => self.unmarked += 1,
        }
    }
}

fn ratio(num: u64, den: u64) -> Option<f64> {
    (den > 0).then(|| num as f64 / den as f64)
}

/// Ask-F1 pooled over sessions and per route.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct AskTable {
    pub pooled: AskTally,
    pub senior: AskTally,
    pub operator: AskTally,
}

impl AskTable {
    pub fn route(&self, route: Route) -> &AskTally {
        match route {
            Route::Senior => &self.senior,
            Route::Operator => &self.operator,
        }
    }
}

/// Pools the counts of all sessions (micro-averaging: sessions with many escalations weigh
/// more, as in HiL-Bench's pooled score) and splits them by route.
///
/// A missed failure is a false negative of every route: any of them could have been asked,
/// so per-route recall = needed escalations on that route / (those + all missed failures).
pub fn ask_table(sessions: &[AskSession]) -> AskTable {
    let mut table = AskTable::default();
    for session in sessions {
        for e in &session.escalations {
            table.pooled.add_mark(e.needed);
            match e.route {
                Route::Senior => table.senior.add_mark(e.needed),
                Route::Operator => table.operator.add_mark(e.needed),
            }
        }
        if session.missed() {
            table.pooled.fn_ += 1;
            table.senior.fn_ += 1;
            table.operator.fn_ += 1;
        }
    }
    table
}

#[cfg(test)]
mod tests {
    use super::*;

    fn esc(route: Route, needed: Option<bool>) -> EscalationMark {
        EscalationMark { route, needed }
    }

    #[test]
    fn hand_counted_sessions() {
        let sessions = vec![
            // Two operator questions, one needed; the session failed anyway (not a miss).
            AskSession {
                escalations: vec![
                    esc(Route::Operator, Some(true)),
                    esc(Route::Operator, Some(false)),
                ],
                failed: true,
            },
            // A needed senior takeover.
            AskSession {
                escalations: vec![esc(Route::Senior, Some(true))],
                failed: false,
            },
            // Two silent failures: misses.
            AskSession {
                escalations: vec![],
                failed: true,
            },
            AskSession {
                escalations: vec![],
                failed: true,
            },
            // A success with nothing asked: no count at all.
            AskSession::default(),
            // A takeover whose need nobody can judge.
            AskSession {
                escalations: vec![esc(Route::Senior, None)],
                failed: false,
            },
        ];
        let t = ask_table(&sessions);
        assert_eq!(
            t.pooled,
            AskTally {
                tp: 2,
                fp: 1,
                fn_: 2,
                unmarked: 1
            }
        );
        assert_eq!(t.pooled.precision(), Some(2.0 / 3.0));
        assert_eq!(t.pooled.recall(), Some(0.5));
        let f1 = t.pooled.f1().expect("defined");
        let harmonic = 2.0 * (2.0 / 3.0) * 0.5 / (2.0 / 3.0 + 0.5);
        assert!((f1 - harmonic).abs() < 1e-12);
        assert_eq!(t.route(Route::Operator).precision(), Some(0.5));
        assert_eq!(t.route(Route::Operator).recall(), Some(1.0 / 3.0));
        assert_eq!(t.route(Route::Senior).precision(), Some(1.0));
        assert_eq!(t.route(Route::Senior).unmarked, 1);
    }

    #[test]
    fn no_counts_means_undefined_not_zero() {
        let t = ask_table(&[AskSession::default()]);
        assert_eq!(t.pooled.f1(), None);
        assert_eq!(t.pooled.precision(), None);
        let only_misses = ask_table(&[AskSession {
            escalations: vec![],
            failed: true,
        }]);
        assert_eq!(only_misses.pooled.f1(), Some(0.0));
        assert_eq!(only_misses.pooled.precision(), None);
        assert_eq!(only_misses.pooled.recall(), Some(0.0));
    }
}
