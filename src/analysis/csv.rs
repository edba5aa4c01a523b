//! `report --csv`: one row per session and one per escalation in a single file, told apart
//! by the `kind` column, so one `pandas.read_csv` gets both and a filter splits them.

use std::io::{self, Write};

use crate::metrics::session::{EscalationRecord, SessionSummary};
use crate::protocol::visible::visible;
use crate::protocol::{Outcome, Route};

/// The header row; session rows leave the escalation columns empty and vice versa, except
/// the session's identity and outcome, which escalation rows repeat for grouping.
pub const COLUMNS: [&str; 22] = [
    "kind",
    "source",
    "session_id",
    "policy",
    "outcome",
    "censored",
    "shadow",
    "steps",
    "ticks",
    "usd",
    "junior_usd",
    "senior_usd",
    "escalations",
    "questions",
    "route",
    "reason",
    "step",
    "tick",
    "belief",
    "threshold",
    "earliness",
    "needed",
];

fn outcome_name(o: Option<Outcome>) -> &'static str {
    match o {
        Some(Outcome::Success) => "success",
        Some(Outcome::Failure) => "failure",
        Some(Outcome::Aborted) => "aborted",
        Some(Outcome::Unlabelled) => "unlabelled",
        None => "incomplete",
    }
}

fn route_name(r: Route) -> &'static str {
    match r {
        Route::Senior => "senior",
        Route::Operator => "operator",
    }
}

/// A text cell from a log (a path, a session id, a policy name): its control characters
/// shown ([`visible`], so no cell spans lines or moves a terminal's cursor), a leading
/// `'` when it starts like a spreadsheet formula (`=`, `+`, `-`, `@`), so opening the file
/// in a spreadsheet never runs what a log wrote (OWASP's advice; the `'` is part of the
/// value a script reads), then RFC 4180 quoting when the cell needs it. Numbers this
/// file writes are not text cells and are never prefixed.
fn field(s: &str) -> String {
    let shown = visible(s);
    let guarded = if shown.starts_with(['=', '+', '-', '@']) {
        format!("'{shown}")
    } else {
        shown.into_owned()
    };
    if guarded.contains([',', '"']) {
        format!("\"{}\"", guarded.replace('"', "\"\""))
    } else {
        guarded
    }
}

fn opt<T: ToString>(v: Option<T>) -> String {
    v.map_or_else(String::new, |v| v.to_string())
}

fn session_row(s: &SessionSummary) -> Vec<String> {
    let mut row = vec![
        "session".to_string(),
        field(&s.source.display().to_string()),
        field(&s.session_id),
        field(&s.policy),
        outcome_name(s.outcome).to_string(),
        s.censored.to_string(),
        s.shadow.to_string(),
        s.steps.to_string(),
        s.ticks.to_string(),
        s.usd.to_string(),
        s.cost.junior_usd.to_string(),
        s.cost.senior_usd.to_string(),
        s.escalations.len().to_string(),
        s.questions.len().to_string(),
    ];
    row.resize(COLUMNS.len(), String::new());
    row
}

fn escalation_row(s: &SessionSummary, e: &EscalationRecord) -> Vec<String> {
    let mut row = vec![
        "escalation".to_string(),
        field(&s.source.display().to_string()),
        field(&s.session_id),
        field(&s.policy),
        outcome_name(s.outcome).to_string(),
        String::new(),
        e.shadow.to_string(),
    ];
    let first_escalation_column = 14;
    row.resize(first_escalation_column, String::new());
    row.extend([
        route_name(e.route).to_string(),
        e.reason.name().to_string(),
        e.step.to_string(),
        e.tick.to_string(),
        e.belief.to_string(),
        e.threshold.to_string(),
        opt(e.earliness),
        opt(e.needed),
    ]);
    row
}

/// Writes the header and every session followed by its escalations.
pub fn write_csv(sessions: &[SessionSummary], out: &mut impl Write) -> io::Result<()> {
    writeln!(out, "{}", COLUMNS.join(","))?;
    for s in sessions {
        writeln!(out, "{}", session_row(s).join(","))?;
        for e in &s.escalations {
            writeln!(out, "{}", escalation_row(s, e).join(","))?;
        }
    }
    Ok(())
}
