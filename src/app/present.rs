//! Events, session summaries and replays as human text: the one place that words them, for
//! the headless trace, `exec`, the demo, leaving the TUI, and `replay --headless`.

use crate::analysis::replay::Rescoring;
use crate::protocol::visible::{visible, visible_lines};
use crate::protocol::{Actor, Event, Outcome, Route, Stamped, protected_touched};

fn actor(a: Actor) -> &'static str {
    a.name()
}

fn route(r: Route) -> &'static str {
    r.name()
}

/// `B_t 0.412 < τ_t 0.530` when the belief fell under the threshold; for an escalation
/// that was not the judge's (a fault, a forced one) the two are only reported, since the
/// inequality would be false.
fn belief_vs_threshold(belief: f64, threshold: f64) -> String {
    if belief < threshold {
        format!("B_t {belief:.3} < τ_t {threshold:.3}")
    } else {
        format!("B_t {belief:.3}, τ_t {threshold:.3}")
    }
}

/// The text `exec`, `demo` and leaving the TUI print when a session ends (`--json` prints
/// the summary itself): outcome, the model's summary, what changed, the money, and the
/// commands that show or undo the change. The model's words in it are shown with their
/// control characters made visible.
pub fn summary_text(summary: &super::summary::Summary) -> String {
    visible_lines(&summary_words(summary)).into_owned()
}

fn summary_words(summary: &super::summary::Summary) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let _ = writeln!(out, "session      {}", summary.session);
    let _ = writeln!(out, "outcome      {}", summary.outcome.name());
    let _ = writeln!(out, "steps        {}", summary.steps);
    if let Some(finish) = &summary.finish {
        let mut lines = finish.lines();
        let _ = writeln!(out, "finish       {}", lines.next().unwrap_or(""));
        for l in lines {
            let _ = writeln!(out, "             {l}");
        }
    }
    match (&summary.changes, &summary.no_checkpoints) {
        (Some(c), _) if c.files_changed == 0 => {
            let _ = writeln!(out, "changes      none");
        }
        (Some(c), _) => {
            let mut lines = c.stat.lines().map(str::trim_start).collect::<Vec<_>>();
            let total = lines.pop().unwrap_or("");
            let _ = writeln!(out, "changes      {total}");
            for l in lines {
                let _ = writeln!(out, "               {l}");
            }
        }
        (None, Some(why)) => {
            let _ = writeln!(out, "changes      not recorded: {why}");
        }
        (None, None) => {}
    }
    if let Some(c) = summary
        .changes
        .as_ref()
        .filter(|c| !c.attributes.is_empty())
    {
        let _ = writeln!(
            out,
            "attributes   changed {}: it decides how git shows and filters files; review it before trusting a diff",
            c.attributes.join(", ")
        );
    }
    for e in &summary.escalations {
        let _ = writeln!(
            out,
            "escalation   step {} → {} ({}{}) {}",
            e.step,
            route(e.route),
            e.reason.name(),
            if e.shadow { ", shadow" } else { "" },
            belief_vs_threshold(e.belief, e.threshold)
        );
    }
    let _ = writeln!(
        out,
        "cost         ${:.4} (junior ${:.4}, senior ${:.4})",
        summary.cost.usd, summary.cost.junior_usd, summary.cost.senior_usd
    );
    let _ = writeln!(
        out,
        "ask          tp {} fp {} fn {}",
        summary.ask.tp, summary.ask.fp, summary.ask.fn_
    );
    if summary.protected_touched > 0 {
        let _ = writeln!(
            out,
            "protected    {} step(s) tried to change protected files (undone)",
            summary.protected_touched
        );
    }
    if summary.git_repaired > 0 {
        let _ = writeln!(
            out,
            "repaired     {} step(s) changed git metadata, which handoff undid (see the log's protected_touched lines); review the work before running git (exit 5)",
            summary.git_repaired
        );
    }
    if summary.checkpoint_failed > 0 {
        let _ = writeln!(
            out,
            "unverified   {} step(s) could not be checkpointed, so the changes below are incomplete; review the tree with `git status` before trusting it (exit 5)",
            summary.checkpoint_failed
        );
    }
    let _ = writeln!(out, "log          {}", summary.log);
    if let Some(c) = &summary.changes
        && c.files_changed > 0
        && !c.diff_command.is_empty()
    {
        let _ = writeln!(out, "diff         {}", c.diff_command);
        let _ = writeln!(out, "undo         {}", c.undo_command);
    }
    out
}

/// `None` for events too fine-grained to print one line each (tokens, beliefs, costs).
/// Control characters from the model or the log are shown, never sent to the terminal
/// ([`visible_lines`]).
pub fn event_line(e: &Event) -> Option<String> {
    event_words(e).map(|l| visible_lines(&l).into_owned())
}

fn event_words(e: &Event) -> Option<String> {
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
        Event::ApprovalRequested { summary, .. } => {
            format!("  ? approve: {}", summary.replace('\n', "\n      "))
        }
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
            "{}escalation → {} ({}): {}",
            if *shadow { "[shadow] " } else { "" },
            route(*r),
            reason.name(),
            belief_vs_threshold(*belief, *threshold)
        ),
        Event::OperatorAsked {
            question,
            options,
            topic,
            ..
        } => {
            // One line, newlines shown: a raw newline in the model's question must not
            // start a second "question to the operator:" line of its own.
            let question = visible(question);
            let about = topic
                .as_deref()
                .map(|t| format!(" (about: {})", visible(t)))
                .unwrap_or_default();
            if options.is_empty() {
                format!("question to the operator{about}: {question}")
            } else {
                let options: Vec<_> = options.iter().map(|o| visible(o)).collect();
                format!(
                    "question to the operator{about}: {question} [{}]",
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
        Event::ExamplesRan { .. } => crate::protocol::examples_line(e)?,
        Event::CandidatesRan { .. } => crate::protocol::candidates_line(e)?,
        Event::Fault {
            actor: a,
            kind,
            message,
            attempt,
            ..
        } => {
            if *attempt == 0 {
                format!("fault ({} {kind}): {message}", actor(*a))
            } else {
                format!("fault ({} {kind}, attempt {attempt}): {message}", actor(*a))
            }
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
            git,
        } => protected_touched(*step, refused, restored, unrestored, git),
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

fn ticks_text(ticks: &[u64]) -> String {
    if ticks.is_empty() {
        return "none".into();
    }
    ticks
        .iter()
        .map(u64::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// What headless replay prints: the log's decisions, and with a counterfactual its
/// decisions and where they differ. The log is outside input: its fields are shown with
/// their control characters made visible, and a session id stays on its line.
pub fn replay_text(events: &[Stamped], counterfactual: Option<(&str, &Rescoring)>) -> String {
    visible_lines(&replay_words(events, counterfactual)).into_owned()
}

fn replay_words(events: &[Stamped], counterfactual: Option<(&str, &Rescoring)>) -> String {
    let mut out = String::new();
    let mut updates = 0usize;
    for s in events {
        match &s.event {
            Event::SessionStarted {
                session_id,
                policy,
                shadow,
                ..
            } => out.push_str(&format!(
                "session {} (policy {}{})\n",
                visible(session_id),
                visible(policy),
                if *shadow { ", shadow" } else { "" }
            )),
            Event::BeliefUpdated { .. } => updates += 1,
            Event::Escalated {
                step,
                tick,
                route: r,
                reason,
                belief,
                threshold,
                shadow,
                ..
            } => out.push_str(&format!(
                "  log: step {step} tick {tick}: escalated to {} ({}{}) {}\n",
                route(*r),
                reason.name(),
                if *shadow { ", shadow" } else { "" },
                if belief < threshold {
                    format!("B {belief:.3} < τ {threshold:.3}")
                } else {
                    format!("B {belief:.3}, τ {threshold:.3}")
                }
            )),
            Event::SeniorReturned { tick, .. } => out.push_str(&format!(
                "  log: tick {tick}: senior returned, belief reset\n"
            )),
            // The evidence from execution the judge read, in the words the TUI uses.
            Event::ExamplesRan { step, .. } | Event::CandidatesRan { step, .. } => {
                let line = crate::protocol::examples_line(&s.event)
                    .or_else(|| crate::protocol::candidates_line(&s.event));
                if let Some(line) = line {
                    out.push_str(&format!("  log: step {step}: {line}\n"));
                }
            }
            Event::SessionEnded { outcome, ticks, .. } => out.push_str(&format!(
                "  log: ended {} after {ticks} ticks\n",
                outcome.name()
            )),
            _ => {}
        }
    }
    out.push_str(&format!("  {updates} belief updates logged\n"));
    if let Some((label, r)) = counterfactual {
        out.push_str(&format!("\ncounterfactual ({label}):\n"));
        out.push_str(&format!(
            "  judge's escalations: log at ticks {}; counterfactual at ticks {}\n",
            ticks_text(&r.logged_threshold_ticks()),
            ticks_text(&r.escalations)
        ));
        if r.differ.is_empty() {
            out.push_str("  decisions (B_t < τ_t) agree at every update\n");
        } else {
            let list: Vec<String> = r
                .differ
                .iter()
                .map(|(a, b)| {
                    if a == b {
                        a.to_string()
                    } else {
                        format!("{a}–{b}")
                    }
                })
                .collect();
            out.push_str(&format!(
                "  decisions (B_t < τ_t) differ at ticks {}\n",
                list.join(", ")
            ));
        }
    }
    out
}
