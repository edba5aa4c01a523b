//! The one-line notes events leave in the transcript: step separators, escalations,
//! questions and answers, hand-overs, checks, faults, warnings and the session's start and
//! end. Kept apart from the transcript pane so its file stays about streaming and drawing;
//! the wording of each note is here, in one place.

use super::text::{TLine, Tone};
use crate::protocol::{Actor, Event, Outcome, candidates_line, examples_line, protected_touched};

/// The note `event` leaves in the transcript, if it leaves one.
pub fn note_of(event: &Event) -> Option<TLine> {
    let line = match event {
        Event::SessionStarted {
            session_id, task, ..
        } => TLine::of("session ", Tone::Dim)
            .with(session_id, Tone::Dim)
            .with(" · task: ", Tone::Dim)
            .with(task, Tone::Text),
        Event::StepStarted { step, actor, .. } => {
            TLine::of(format!("── step {step} · {} ──", actor.name()), Tone::Dim)
        }
        Event::Escalated { .. } => escalation(event)?,
        Event::OperatorAsked {
            question, options, ..
        } => {
            let mut line = TLine::of("? ", Tone::Question).with(question, Tone::Question);
            if !options.is_empty() {
                line.push(&format!("  [{}]", options.join(" | ")), Tone::Dim);
            }
            line
        }
        Event::OperatorAnswered { .. } => answer(event)?,
        Event::SeniorTookOver {
            mode,
            context_chars,
            ..
        } => TLine::of(
            format!("⇄ senior takes over ({mode}), handoff context {context_chars} chars"),
            Tone::Speaker(Actor::Senior),
        ),
        Event::SeniorReturned { .. } => TLine::of(
            "⇄ control returns to the junior",
            Tone::Speaker(Actor::Junior),
        ),
        Event::CheckRan { .. } => check(event)?,
        Event::ExamplesRan { .. } => examples(event)?,
        Event::CandidatesRan { .. } => {
            TLine::of(format!("⋔ {}", candidates_line(event)?), Tone::Dim)
        }
        Event::Fault { .. } => fault(event)?,
        Event::ProtectedTouched { .. } => protected(event)?,
        Event::Warning { kind, message } => TLine::of(format!("! {kind}: {message}"), Tone::Warn),
        Event::SessionEnded { .. } => ended(event)?,
        _ => return None,
    };
    Some(line)
}

/// Where control goes and why, with the numbers the judge decided on; a shadow escalation
/// says that nothing was handed off.
fn escalation(event: &Event) -> Option<TLine> {
    let &Event::Escalated {
        route,
        reason,
        belief,
        threshold,
        shadow,
        ..
    } = event
    else {
        return None;
    };
    let (route, reason) = (route.name(), reason.explain());
    let shadow = if shadow {
        " [shadow: not handed off]"
    } else {
        ""
    };
    Some(TLine::of(
        format!("▼ escalate → {route}: {reason} (B_t {belief:.2}  τ_t {threshold:.2}){shadow}"),
        Tone::Escalation,
    ))
}

/// The operator's answer, marked with whether they found the question needed.
fn answer(event: &Event) -> Option<TLine> {
    let Event::OperatorAnswered {
        answer,
        needed,
        deferred_to_senior,
        ..
    } = event
    else {
        return None;
    };
    let mark = match needed {
        Some(true) => " (needed)",
        Some(false) => " (not needed)",
        None => "",
    };
    let text = if *deferred_to_senior {
        format!("↳ operator: let the senior decide{mark}")
    } else {
        format!("↳ operator: {answer}{mark}")
    };
    Some(TLine::of(text, Tone::Answer))
}

fn check(event: &Event) -> Option<TLine> {
    let Event::CheckRan {
        command,
        exit_code,
        passed,
        ..
    } = event
    else {
        return None;
    };
    Some(if *passed {
        TLine::of(format!("✓ check `{command}` passed"), Tone::Ok)
    } else {
        let code = exit_code.map_or("no exit code".to_string(), |c| format!("exit {c}"));
        TLine::of(format!("✗ check `{command}` failed ({code})"), Tone::Err)
    })
}

/// The task's examples against the tree: the count, and the first that failed with what
/// the code gave.
fn examples(event: &Event) -> Option<TLine> {
    let Event::ExamplesRan { failed, .. } = event else {
        return None;
    };
    let text = examples_line(event)?;
    let (mark, tone) = if *failed == 0 {
        ("✓", Tone::Ok)
    } else {
        ("✗", Tone::Err)
    };
    Some(TLine::of(format!("{mark} {text}"), tone))
}

/// A fault; a retried one says which attempt it was and whether another follows.
fn fault(event: &Event) -> Option<TLine> {
    let Event::Fault {
        actor,
        kind,
        message,
        retryable,
        attempt,
    } = event
    else {
        return None;
    };
    let next = if *retryable { "retrying" } else { "giving up" };
    let text = if *attempt == 0 {
        format!("! {} fault {kind}: {message}", actor.name())
    } else {
        format!(
            "! {} fault {kind}: {message} (attempt {attempt}, {next})",
            actor.name()
        )
    };
    Some(TLine::of(text, Tone::Warn))
}

/// Which protected files a step touched and what became of them, empty groups left out.
fn protected(event: &Event) -> Option<TLine> {
    let Event::ProtectedTouched {
        step,
        refused,
        restored,
        unrestored,
        git,
    } = event
    else {
        return None;
    };
    let text = format!(
        "! {}",
        protected_touched(*step, refused, restored, unrestored, git)
    );
    Some(TLine::of(text, Tone::Warn))
}

/// The session's outcome and totals, coloured by the outcome.
fn ended(event: &Event) -> Option<TLine> {
    let Event::SessionEnded {
        outcome,
        steps,
        ticks,
        usd,
        ..
    } = event
    else {
        return None;
    };
    let tone = match outcome {
        Outcome::Success => Tone::Ok,
        Outcome::Failure | Outcome::Aborted => Tone::Err,
        Outcome::Unlabelled => Tone::Dim,
    };
    Some(TLine::of(
        format!(
            "■ session ended: {} · {steps} steps · {ticks} ticks · ${usd:.4}",
            outcome.name()
        ),
        tone,
    ))
}
