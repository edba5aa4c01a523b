//! The two regimes the cascade is measured in. With a check (a task that has a test the
//! loop can run), the judge sees whether the check failed and the loop feeds the failure
//! back. Without one (most real requests: "refactor this", "add a flag"), the judge has only
//! the tokens and the other step facts. A log collected with a check is read as if there
//! were none by dropping what the check told the loop: its `check_ran` events and the
//! check's two step facts (`check_failed`, `tests_fixed`). The session's label stays (it is
//! the eval's verdict, not something the judge saw).

use std::borrow::Cow;

use serde::Serialize;

use crate::protocol::{Event, EvidenceTerm, SignalKind};

/// Whether the judge may see the task's check.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Regime {
    /// The check runs in the loop: its failures are evidence and a policy may hand off on
    /// the first one.
    #[default]
    Check,
    /// The judge alone, as for a task without a test.
    NoCheck,
}

impl Regime {
    /// The event as the judge would have seen it in this regime; `None` when it would not
    /// have seen it at all. Copied only when the regime changes it.
    pub fn view(self, event: &Event) -> Option<Cow<'_, Event>> {
        match self {
            Regime::Check => Some(Cow::Borrowed(event)),
            Regime::NoCheck => match event {
                Event::CheckRan { .. } => None,
                Event::BeliefUpdated { terms, .. } | Event::StepEnded { terms, .. }
                    if terms.iter().any(from_the_check) =>
                {
                    self.take(event.clone()).map(Cow::Owned)
                }
                _ => Some(Cow::Borrowed(event)),
            },
        }
    }

    /// [`Regime::view`] of an event the caller owns (a log being read), without a copy.
    pub fn take(self, mut event: Event) -> Option<Event> {
        if self == Regime::NoCheck {
            match &mut event {
                Event::CheckRan { .. } => return None,
                Event::BeliefUpdated { terms, .. } | Event::StepEnded { terms, .. } => {
                    terms.retain(|t| !from_the_check(t));
                }
                _ => {}
            }
        }
        Some(event)
    }

    pub fn name(self) -> &'static str {
        match self {
            Regime::Check => "with the check",
            Regime::NoCheck => "without the check (the judge alone)",
        }
    }
}

/// The check's own facts: what the loop knows only because a check ran.
fn from_the_check(term: &EvidenceTerm) -> bool {
    matches!(
        term.signal,
        SignalKind::CheckFailed | SignalKind::TestsFixed
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn term(signal: SignalKind, value: f64) -> EvidenceTerm {
        EvidenceTerm {
            signal,
            value,
            llr: -1.0,
        }
    }

    fn samples() -> Vec<Event> {
        vec![
            Event::CheckRan {
                command: "python3 test_solution.py".into(),
                exit_code: Some(1),
                passed: false,
                output_tail: "AssertionError".into(),
            },
            Event::BeliefUpdated {
                tick: 7,
                belief: 0.4,
                log_odds: -0.4,
                threshold: 0.5,
                policy: "constant".into(),
                terms: vec![
                    term(SignalKind::CheckFailed, 1.0),
                    term(SignalKind::NoDiff, 0.0),
                    term(SignalKind::TestsFixed, 0.0),
                ],
            },
        ]
    }

    #[test]
    fn without_the_check_its_run_and_its_facts_are_gone_and_the_rest_stays() {
        let seen: Vec<Event> = samples()
            .iter()
            .filter_map(|e| Regime::NoCheck.view(e).map(Cow::into_owned))
            .collect();
        let taken: Vec<Event> = samples()
            .into_iter()
            .filter_map(|e| Regime::NoCheck.take(e))
            .collect();
        assert_eq!(seen, taken, "view and take agree");
        assert_eq!(seen.len(), 1, "check_ran dropped: {seen:?}");
        let Event::BeliefUpdated { terms, tick, .. } = &seen[0] else {
            panic!("expected the belief update, got {seen:?}");
        };
        assert_eq!(*tick, 7);
        let signals: Vec<SignalKind> = terms.iter().map(|t| t.signal).collect();
        assert_eq!(signals, vec![SignalKind::NoDiff]);
    }

    #[test]
    fn with_the_check_every_event_is_seen_as_logged() {
        let seen: Vec<Event> = samples()
            .iter()
            .filter_map(|e| Regime::Check.view(e).map(Cow::into_owned))
            .collect();
        assert_eq!(seen, samples());
    }
}
