//! One-line human descriptions of events, for the headless trace and the demo summary.

use crate::protocol::{Actor, Event, Outcome, Route};

fn actor(a: Actor) -> &'static str {
    match a {
        Actor::Junior => "junior",
        Actor::Senior => "senior",
    }
}

fn route(r: Route) -> &'static str {
    match r {
        Route::Senior => "senior",
        Route::Operator => "operator",
    }
}

/// The one line of a `protected_touched` event: which protected files the step tried to
/// change, and what became of each.
fn protected_line(
    step: u32,
    refused: &[String],
    restored: &[String],
    unrestored: &[String],
) -> String {
    let mut parts = Vec::new();
    for (what, paths) in [
        ("refused", refused),
        ("restored", restored),
        ("NOT restored", unrestored),
    ] {
        if !paths.is_empty() {
            parts.push(format!("{what} {}", paths.join(", ")));
        }
    }
    format!("step {step} touched protected files: {}", parts.join("; "))
}

/// `None` for events too fine-grained to print one line each (tokens, beliefs, costs).
pub fn event_line(e: &Event) -> Option<String> {
    Some(match e {
        Event::SessionStarted {
            task,
            junior_model,
            senior_model,
            policy,
            shadow,
            ..
        } => format!(
            "session: {task:?} junior={junior_model} senior={senior_model} policy={policy}{}",
            if *shadow { " (shadow)" } else { "" }
        ),
        Event::StepStarted {
            step,
            actor: a,
            tick,
        } => {
            format!("step {step} ({}) at token {tick}", actor(*a))
        }
        Event::ToolCalled {
            name, arguments, ..
        } => {
            let mut args = arguments.to_string();
            if args.len() > 100 {
                let mut cut = 100;
                while !args.is_char_boundary(cut) {
                    cut -= 1;
                }
                args.truncate(cut);
                args.push('…');
            }
            format!("  → {name} {args}")
        }
        Event::ApprovalRequested { summary, .. } => format!("  ? approve: {summary}"),
        Event::ApprovalDecided { approved, by, .. } => {
            format!(
                "  approval {} by {by}",
                if *approved { "given" } else { "refused" }
            )
        }
        Event::ToolResulted { ok, output, .. } => {
            let first = output.lines().next().unwrap_or("");
            format!(
                "  {} {}",
                if *ok { "✓" } else { "✗" },
                first.chars().take(100).collect::<String>()
            )
        }
        Event::StepEnded { step, belief, .. } => format!("  step {step} ends, B_t {belief:.2}"),
        Event::Escalated {
            route: r,
            reason,
            belief,
            threshold,
            shadow,
            ..
        } => format!(
            "{}escalation → {} ({reason:?}): B_t {belief:.3} < τ_t {threshold:.3}",
            if *shadow { "[shadow] " } else { "" },
            route(*r)
        ),
        Event::OperatorAsked {
            question, options, ..
        } => {
            if options.is_empty() {
                format!("question to the operator: {question}")
            } else {
                format!(
                    "question to the operator: {question} [{}]",
                    options.join(" | ")
                )
            }
        }
        Event::OperatorAnswered {
            answer,
            needed,
            deferred_to_senior,
            ..
        } => {
            if *deferred_to_senior {
                "operator: let the senior decide".to_string()
            } else {
                let mark = match needed {
                    Some(true) => " (needed)",
                    Some(false) => " (not needed)",
                    None => "",
                };
                format!("operator: {answer}{mark}")
            }
        }
        Event::SeniorTookOver { mode, .. } => format!("senior takes over ({mode})"),
        Event::SeniorReturned { .. } => "senior returns control to the junior".to_string(),
        Event::CheckRan {
            command, passed, ..
        } => {
            format!(
                "check `{command}`: {}",
                if *passed { "passed" } else { "failed" }
            )
        }
        Event::Fault {
            actor: a,
            kind,
            message,
            attempt,
            ..
        } => {
            format!("fault ({} {kind}, attempt {attempt}): {message}", actor(*a))
        }
        Event::ControlChanged { paused, shadow } => format!(
            "control: {}{}",
            if *paused { "paused" } else { "running" },
            if *shadow { ", shadow mode" } else { "" }
        ),
        Event::ProtectedTouched {
            step,
            refused,
            restored,
            unrestored,
        } => protected_line(*step, refused, restored, unrestored),
        Event::Warning { kind, message } => format!("warning ({kind}): {message}"),
        Event::SessionEnded {
            outcome,
            steps,
            ticks,
            usd,
            ask,
            ..
        } => format!(
            "session ended: {} after {steps} steps, {ticks} junior tokens, ${usd:.4}; ask tp={} fp={} fn={}",
            match outcome {
                Outcome::Success => "success",
                Outcome::Failure => "failure",
                Outcome::Aborted => "aborted",
                Outcome::Unlabelled => "unlabelled",
            },
            ask.tp,
            ask.fp,
            ask.fn_
        ),
        Event::Token { .. } | Event::BeliefUpdated { .. } | Event::CostIncurred { .. } => {
            return None;
        }
    })
}
