//! The words a person reads for the protocol's enums: the same lowercase names the log and
//! `--json` use, so the TUI, the headless trace, `exec`'s summary and replay say one thing
//! for one fact. Front ends add glyphs and colour; the words come from here.

use std::fmt;

use super::event::{Actor, EscalationReason, Event, Outcome, Route};

impl Actor {
    pub fn name(self) -> &'static str {
        match self {
            Actor::Junior => "junior",
            Actor::Senior => "senior",
        }
    }
}

impl Route {
    pub fn name(self) -> &'static str {
        match self {
            Route::Senior => "senior",
            Route::Operator => "operator",
        }
    }
}

impl Outcome {
    pub fn name(self) -> &'static str {
        match self {
            Outcome::Success => "success",
            Outcome::Failure => "failure",
            Outcome::Aborted => "aborted",
            Outcome::Unlabelled => "unlabelled",
        }
    }
}

impl EscalationReason {
    pub fn name(self) -> &'static str {
        match self {
            EscalationReason::Threshold => "threshold",
            EscalationReason::Forced => "forced",
            EscalationReason::SelfAsk => "self_ask",
            EscalationReason::Fault => "fault",
            EscalationReason::Stuck => "stuck",
            EscalationReason::CheckFailed => "check_failed",
            EscalationReason::ExamplesFailed => "examples_failed",
            EscalationReason::AtStart => "at_start",
        }
    }

    /// Why, in a few words, for a person watching the session.
    pub fn explain(self) -> &'static str {
        match self {
            EscalationReason::Threshold => "B_t < τ_t",
            EscalationReason::Forced => "forced by the operator",
            EscalationReason::SelfAsk => "the junior asked",
            EscalationReason::Fault => "the junior's endpoint failed",
            EscalationReason::Stuck => "the junior is stuck",
            EscalationReason::CheckFailed => "the junior's check failed",
            EscalationReason::ExamplesFailed => "the junior's code failed the task's examples",
            EscalationReason::AtStart => "asked before the first step",
        }
    }
}

macro_rules! display_by_name {
    ($($t:ty),*) => {$(
        impl fmt::Display for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.name())
            }
        }
    )*};
}

display_by_name!(Actor, Route, Outcome, EscalationReason);

/// What a `protected_touched` event says, in the words every front end prints: the step,
/// then each non-empty group of paths (refused, restored, NOT restored, git metadata).
pub fn protected_touched(
    step: u32,
    refused: &[String],
    restored: &[String],
    unrestored: &[String],
    git: &[String],
) -> String {
    let mut parts = Vec::new();
    for (what, paths) in [
        ("refused", refused),
        ("restored", restored),
        ("NOT restored", unrestored),
        ("git metadata", git),
    ] {
        if !paths.is_empty() {
            parts.push(format!("{what} {}", paths.join(", ")));
        }
    }
    format!("step {step} touched protected files: {}", parts.join("; "))
}

/// "examples 2/3" (passed of run), with the unread lines when there are any: one wording
/// for the TUI's competence panel, the transcript and `exec`'s trace.
pub fn examples_summary(passed: u32, failed: u32, unread: u32) -> String {
    let run = passed.saturating_add(failed);
    if unread == 0 {
        format!("examples {passed}/{run}")
    } else {
        format!("examples {passed}/{run} ({unread} unread)")
    }
}

/// An `examples_ran` event as one line: the count, then the first example that failed
/// with what the code gave (or why nothing could be judged).
pub fn examples_line(event: &Event) -> Option<String> {
    let Event::ExamplesRan {
        passed,
        failed,
        unread,
        results,
        note,
        ..
    } = event
    else {
        return None;
    };
    let mut text = examples_summary(*passed, *failed, *unread);
    if let Some(first) = results.iter().find(|r| !r.passed) {
        let gave = first
            .error
            .as_deref()
            .or(first.got.as_deref())
            .unwrap_or("nothing");
        text.push_str(&format!(
            ": {} gave {gave}, not {}",
            first.call, first.expected
        ));
    } else if let Some(note) = note {
        text.push_str(&format!(": {note}"));
    }
    Some(text)
}

/// "3 of 4 candidates agree": the largest behaviour group of the junior's k candidates.
pub fn candidates_summary(groups: &[u32], k: usize) -> String {
    let largest = groups.iter().copied().max().unwrap_or(0);
    format!("{largest} of {k} candidates agree")
}

/// A `candidates_ran` event as one line: the agreement, the groups, and which was placed
/// with how it did on the examples.
pub fn candidates_line(event: &Event) -> Option<String> {
    let Event::CandidatesRan {
        candidates,
        groups,
        chosen,
        note,
        probes,
        ..
    } = event
    else {
        return None;
    };
    let mut text = candidates_summary(groups, candidates.len());
    let sizes: Vec<String> = groups.iter().map(u32::to_string).collect();
    if !sizes.is_empty() {
        text.push_str(&format!(
            " (groups {} on {} inputs)",
            sizes.join(" + "),
            probes.len()
        ));
    }
    if let Some(c) = usize::try_from(*chosen)
        .ok()
        .and_then(|i| candidates.get(i))
    {
        let run = c.examples_passed.saturating_add(c.examples_failed);
        text.push_str(&format!(
            "; placed #{} (examples {}/{run})",
            chosen + 1,
            c.examples_passed
        ));
    }
    if let Some(note) = note {
        text.push_str(&format!(": {note}"));
    }
    Some(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The words are the wire names: a person reading the screen and a script reading the
    /// log see the same name.
    #[test]
    fn names_are_the_serde_names() {
        fn wire<T: serde::Serialize>(v: T) -> String {
            serde_json::to_value(v)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default()
        }
        for a in [Actor::Junior, Actor::Senior] {
            assert_eq!(a.to_string(), wire(a));
        }
        for r in [Route::Senior, Route::Operator] {
            assert_eq!(r.to_string(), wire(r));
        }
        for o in [
            Outcome::Success,
            Outcome::Failure,
            Outcome::Aborted,
            Outcome::Unlabelled,
        ] {
            assert_eq!(o.to_string(), wire(o));
        }
        for e in [
            EscalationReason::Threshold,
            EscalationReason::Forced,
            EscalationReason::SelfAsk,
            EscalationReason::Fault,
            EscalationReason::Stuck,
            EscalationReason::CheckFailed,
            EscalationReason::ExamplesFailed,
        ] {
            assert_eq!(e.to_string(), wire(e));
            assert!(!e.explain().is_empty());
        }
    }

    #[test]
    fn protected_touched_names_only_the_groups_that_hold_paths() {
        let s = |v: &[&str]| v.iter().map(|p| p.to_string()).collect::<Vec<_>>();
        let line = protected_touched(3, &s(&["tests/a.py"]), &[], &s(&["b.py", "c.py"]), &[]);
        assert_eq!(
            line,
            "step 3 touched protected files: refused tests/a.py; NOT restored b.py, c.py"
        );
    }
}
