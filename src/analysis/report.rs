//! `handoff report`: what a corpus of sessions did — outcomes, escalations and whether they
//! were needed (Ask-F1), what each route cost, and how early the judge stepped in.

use std::path::PathBuf;

use serde::Serialize;

pub use super::ask_scores::{ASK_BOOTSTRAP_REPS, ASK_BOOTSTRAP_SEED, AskScores};
use super::summarize_file;
use crate::log::log_files;
use crate::metrics::session::SessionSummary;
use crate::metrics::{CostAccuracyPoint, ModelSteps, SessionAsk, SessionAskScores};
use crate::protocol::{EscalationReason, Outcome, Route};

/// Sessions read from logs, and everything that had to be skipped on the way.
#[derive(Debug, Default)]
pub struct Corpus {
    pub files: usize,
    pub sessions: Vec<SessionSummary>,
    /// Unreadable files and skipped lines, each naming file (and line).
    pub warnings: Vec<String>,
}

/// Reads every log named by `inputs` (files, or directories of `*.jsonl`). A file that
/// cannot be read becomes a warning; the others are still read.
pub fn load(inputs: &[PathBuf]) -> Corpus {
    let (files, errors) = log_files(inputs);
    let mut corpus = Corpus {
        files: files.len(),
        warnings: errors.iter().map(ToString::to_string).collect(),
        ..Corpus::default()
    };
    for file in &files {
        match summarize_file(file) {
            Ok((sessions, warnings)) => {
                corpus.sessions.extend(sessions);
                corpus
                    .warnings
                    .extend(warnings.iter().map(ToString::to_string));
            }
            Err(e) => corpus.warnings.push(e.to_string()),
        }
    }
    corpus
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct OutcomeCounts {
    pub success: usize,
    pub failure: usize,
    pub aborted: usize,
    pub unlabelled: usize,
    /// Logs that end before `session_ended`.
    pub incomplete: usize,
}

/// Escalations of one route by reason.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct RouteEscalations {
    pub total: usize,
    pub threshold: usize,
    pub forced: usize,
    pub self_ask: usize,
    pub fault: usize,
    /// Logged in shadow mode: decided, not handed off.
    pub shadow: usize,
    pub earliness: Earliness,
}

/// Where in the trajectory escalations happen (tick / total ticks): a judge that only
/// steps in at the end has saved little.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Earliness {
    pub count: usize,
    pub mean: Option<f64>,
    pub median: Option<f64>,
}

impl Earliness {
    fn of(mut values: Vec<f64>) -> Earliness {
        values.sort_by(f64::total_cmp);
        let count = values.len();
        if count == 0 {
            return Earliness::default();
        }
        let median = if count % 2 == 1 {
            values[count / 2]
        } else {
            (values[count / 2 - 1] + values[count / 2]) / 2.0
        };
        Earliness {
            count,
            mean: Some(values.iter().sum::<f64>() / count as f64),
            median: Some(median),
        }
    }
}

/// Cost of the sessions that took one route (the first real escalation decides; `junior`
/// means the junior kept control).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct RouteCost {
    pub sessions: usize,
    pub usd_per_session: Option<f64>,
    pub junior_usd_per_session: Option<f64>,
    pub senior_usd_per_session: Option<f64>,
    /// Successes / (successes + failures + aborted) of these sessions.
    pub accuracy: Option<f64>,
}

/// The whole report; `--json` prints exactly this.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    pub files: usize,
    pub sessions: usize,
    pub outcomes: OutcomeCounts,
    pub censored: usize,
    pub shadow_sessions: usize,
    /// Sessions in which the model tried to change a protected file (`agent.protected`):
    /// how often the junior went for the test instead of the code.
    pub protected_touched_sessions: usize,
    pub escalations_senior: RouteEscalations,
    pub escalations_operator: RouteEscalations,
    pub earliness: Earliness,
    /// Ask-F1 per session, the unit docs/guide.md ("Evaluation") defines (a session that crosses τ five times
    /// counts once); sessions without a result, and sessions a forced or fault hand-off
    /// censored, are left out. The three per-escalation tallies below pool questions as HiL-Bench
    /// does, with false negatives per session, so their recall is not a share of failures.
    pub ask_sessions: SessionAskScores,
    pub ask_pooled: AskScores,
    pub ask_senior: AskScores,
    pub ask_operator: AskScores,
    pub cost_junior_only: RouteCost,
    pub cost_senior: RouteCost,
    pub cost_operator: RouteCost,
    pub cost_all: RouteCost,
    /// Mean money per session against accuracy, over all sessions with a result: the point
    /// this corpus adds to a cost–accuracy curve. `None` without such sessions.
    pub cost_accuracy: Option<CostAccuracyPoint>,
    /// Steps, parsed calls and tokens per model (by the name the sessions logged), in
    /// order of first appearance.
    pub models: Vec<ModelSteps>,
    /// Sessions ended by each of the loop's rules, then by the model's own `finish` or
    /// anything else (a quit, a fault).
    pub ended_by: EndedBy,
    pub warnings: Vec<String>,
}

/// How many sessions each of the loop's rules ended.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct EndedBy {
    pub stuck: usize,
    pub max_steps: usize,
    pub token_budget: usize,
    pub other: usize,
}

/// The per-model step counts of all sessions, merged by model name.
fn model_steps(sessions: &[SessionSummary]) -> Vec<ModelSteps> {
    let mut models: Vec<ModelSteps> = Vec::new();
    for seat in sessions
        .iter()
        .flat_map(|s| [&s.loop_tally.junior, &s.loop_tally.senior])
        .filter(|m| m.steps > 0 || m.input_tokens > 0)
    {
        match models.iter_mut().find(|m| m.model == seat.model) {
            Some(m) => m.add(seat),
            None => models.push(seat.clone()),
        }
    }
    models
}

fn ended_by(sessions: &[SessionSummary]) -> EndedBy {
    let mut e = EndedBy::default();
    for s in sessions {
        match s.loop_tally.ended_by.as_deref() {
            Some("stuck") => e.stuck += 1,
            Some("max_steps") => e.max_steps += 1,
            Some("token_budget") => e.token_budget += 1,
            _ => e.other += 1,
        }
    }
    e
}

fn mean(values: impl Iterator<Item = f64>) -> Option<f64> {
    let (sum, n) = values.fold((0.0, 0usize), |(s, n), v| (s + v, n + 1));
    (n > 0).then(|| sum / n as f64)
}

/// Successes over sessions with a result; aborted sessions count as not correct, since
/// they delivered nothing. Unlabelled and incomplete sessions are left out.
fn accuracy(sessions: &[&SessionSummary]) -> Option<f64> {
    let judged = sessions.iter().filter(|s| {
        matches!(
            s.outcome,
            Some(Outcome::Success | Outcome::Failure | Outcome::Aborted)
        )
    });
    mean(judged.map(|s| {
        if s.outcome == Some(Outcome::Success) {
            1.0
        } else {
            0.0
        }
    }))
}

fn route_cost(sessions: &[&SessionSummary]) -> RouteCost {
    RouteCost {
        sessions: sessions.len(),
        usd_per_session: mean(sessions.iter().map(|s| s.usd)),
        junior_usd_per_session: mean(sessions.iter().map(|s| s.cost.junior_usd)),
        senior_usd_per_session: mean(sessions.iter().map(|s| s.cost.senior_usd)),
        accuracy: accuracy(sessions),
    }
}

fn route_escalations(sessions: &[SessionSummary], route: Route) -> RouteEscalations {
    let all: Vec<_> = sessions
        .iter()
        .flat_map(|s| &s.escalations)
        .filter(|e| e.route == route)
        .collect();
    let reason = |r: EscalationReason| all.iter().filter(|e| e.reason == r).count();
    RouteEscalations {
        total: all.len(),
        threshold: reason(EscalationReason::Threshold),
        forced: reason(EscalationReason::Forced),
        self_ask: reason(EscalationReason::SelfAsk),
        fault: reason(EscalationReason::Fault),
        shadow: all.iter().filter(|e| e.shadow).count(),
        earliness: Earliness::of(all.iter().filter_map(|e| e.earliness).collect()),
    }
}

impl Report {
    /// Ask-F1 is recounted from the escalations rather than summed from the counts the
    /// agent loop logged, because only the events carry the route.
    pub fn new(corpus: &Corpus) -> Report {
        let sessions = &corpus.sessions;
        let mut outcomes = OutcomeCounts::default();
        for s in sessions {
            match s.outcome {
                Some(Outcome::Success) => outcomes.success += 1,
                Some(Outcome::Failure) => outcomes.failure += 1,
                Some(Outcome::Aborted) => outcomes.aborted += 1,
                Some(Outcome::Unlabelled) => outcomes.unlabelled += 1,
                None => outcomes.incomplete += 1,
            }
        }
        let asks: Vec<_> = sessions.iter().map(|s| s.ask_session()).collect();
        // Per session, only sessions that can be labelled: a result, and no hand-off that
        // was neither the judge's nor the junior's (a forced takeover or a fault censors
        // the junior's outcome without being a decision to score).
        let scored: Vec<_> = sessions
            .iter()
            .zip(&asks)
            .filter(|(s, a)| {
                matches!(s.outcome, Some(Outcome::Success | Outcome::Failure))
                    && s.escalations.len() == a.escalations.len()
            })
            .map(|(_, a)| a)
            .collect();
        let taking = |route: Option<Route>| -> Vec<&SessionSummary> {
            sessions
                .iter()
                .filter(|s| s.route_taken() == route)
                .collect()
        };
        let everyone: Vec<&SessionSummary> = sessions.iter().collect();
        let cost_all = route_cost(&everyone);
        let judged: Vec<&SessionSummary> = sessions
            .iter()
            .filter(|s| {
                matches!(
                    s.outcome,
                    Some(Outcome::Success | Outcome::Failure | Outcome::Aborted)
                )
            })
            .collect();
        let cost_accuracy = accuracy(&judged).and_then(|acc| {
            let usd = mean(judged.iter().map(|s| s.usd))?;
            Some(CostAccuracyPoint::new("this corpus", usd, acc))
        });
        Report {
            files: corpus.files,
            sessions: sessions.len(),
            outcomes,
            censored: sessions.iter().filter(|s| s.censored).count(),
            shadow_sessions: sessions.iter().filter(|s| s.shadow).count(),
            protected_touched_sessions: sessions.iter().filter(|s| s.protected_touched > 0).count(),
            escalations_senior: route_escalations(sessions, Route::Senior),
            escalations_operator: route_escalations(sessions, Route::Operator),
            earliness: Earliness::of(
                sessions
                    .iter()
                    .flat_map(|s| &s.escalations)
                    .filter_map(|e| e.earliness)
                    .collect(),
            ),
            ask_sessions: SessionAskScores::from(&SessionAsk::tally(scored)),
            ask_pooled: AskScores::of(&asks, |t| &t.pooled),
            ask_senior: AskScores::of(&asks, |t| &t.senior),
            ask_operator: AskScores::of(&asks, |t| &t.operator),
            cost_junior_only: route_cost(&taking(None)),
            cost_senior: route_cost(&taking(Some(Route::Senior))),
            cost_operator: route_cost(&taking(Some(Route::Operator))),
            cost_all,
            cost_accuracy,
            models: model_steps(sessions),
            ended_by: ended_by(sessions),
            warnings: corpus.warnings.clone(),
        }
    }

    /// The report as aligned plain-text tables.
    pub fn to_table(&self) -> String {
        let mut out = String::new();
        out.push_str(&format!(
            "{} sessions from {} files ({} shadow, {} censored)\n\n",
            self.sessions, self.files, self.shadow_sessions, self.censored
        ));
        if self.protected_touched_sessions > 0 {
            out.push_str(&format!(
                "{} session(s) tried to change protected files (refused or undone; labels from the start's tests)\n\n",
                self.protected_touched_sessions
            ));
        }
        let o = &self.outcomes;
        out.push_str(&table(
            &[
                "outcome",
                "success",
                "failure",
                "aborted",
                "unlabelled",
                "incomplete",
            ],
            &[vec![
                "sessions".into(),
                o.success.to_string(),
                o.failure.to_string(),
                o.aborted.to_string(),
                o.unlabelled.to_string(),
                o.incomplete.to_string(),
            ]],
        ));
        out.push('\n');
        let esc_row = |name: &str, e: &RouteEscalations| {
            vec![
                name.to_string(),
                e.total.to_string(),
                e.threshold.to_string(),
                e.forced.to_string(),
                e.self_ask.to_string(),
                e.fault.to_string(),
                e.shadow.to_string(),
                num(e.earliness.mean),
                num(e.earliness.median),
            ]
        };
        out.push_str(&table(
            &[
                "escalations",
                "total",
                "threshold",
                "forced",
                "self_ask",
                "fault",
                "shadow",
                "earliness mean",
                "median",
            ],
            &[
                esc_row("senior", &self.escalations_senior),
                esc_row("operator", &self.escalations_operator),
            ],
        ));
        out.push('\n');
        let ask_row = |name: &str, a: &AskScores| {
            vec![
                name.to_string(),
                a.tp.to_string(),
                a.fp.to_string(),
                a.fn_.to_string(),
                a.unmarked.to_string(),
                num(a.precision),
                num(a.recall),
                num(a.f1),
                a.f1_interval.map_or_else(
                    || "-".to_string(),
                    |i| format!("[{:.2}, {:.2}]", i.lower, i.upper),
                ),
            ]
        };
        let (a, c) = (&self.ask_sessions, &self.ask_sessions.counts);
        out.push_str(&table(
            &[
                "ask-f1",
                "tp",
                "fp",
                "fn",
                "tn",
                "unknown",
                "precision",
                "recall",
                "f1",
            ],
            &[vec![
                "per session".to_string(),
                c.tp.to_string(),
                c.fp.to_string(),
                c.fn_.to_string(),
                c.tn.to_string(),
                c.unknown.to_string(),
                num(a.precision),
                num(a.recall),
                num(a.f1),
            ]],
        ));
        out.push('\n');
        out.push_str(&table(
            &[
                "per escalation",
                "tp",
                "fp",
                "fn",
                "unmarked",
                "precision",
                "recall",
                "f1",
                "f1 95 %",
            ],
            &[
                ask_row("pooled", &self.ask_pooled),
                ask_row("senior", &self.ask_senior),
                ask_row("operator", &self.ask_operator),
            ],
        ));
        out.push('\n');
        let cost_row = |name: &str, c: &RouteCost| {
            vec![
                name.to_string(),
                c.sessions.to_string(),
                usd(c.usd_per_session),
                usd(c.junior_usd_per_session),
                usd(c.senior_usd_per_session),
                num(c.accuracy),
            ]
        };
        out.push_str(&table(
            &[
                "cost by route",
                "sessions",
                "usd/session",
                "junior usd",
                "senior usd",
                "accuracy",
            ],
            &[
                cost_row("junior only", &self.cost_junior_only),
                cost_row("senior", &self.cost_senior),
                cost_row("operator", &self.cost_operator),
                cost_row("all", &self.cost_all),
            ],
        ));
        out.push('\n');
        match &self.cost_accuracy {
            Some(p) => out.push_str(&format!(
                "cost-accuracy point: {} per session, accuracy {:.3}\n",
                usd(Some(p.cost)),
                p.accuracy
            )),
            None => out.push_str("cost-accuracy point: no session with a result\n"),
        }
        if !self.models.is_empty() {
            out.push('\n');
            let rows: Vec<Vec<String>> = self
                .models
                .iter()
                .map(|m| {
                    vec![
                        m.model.clone(),
                        m.steps.to_string(),
                        m.parsed.to_string(),
                        m.unusable.to_string(),
                        m.parse_rate()
                            .map_or_else(|| "-".into(), |r| format!("{:.1}%", 100.0 * r)),
                        m.input_tokens.to_string(),
                        m.output_tokens.to_string(),
                    ]
                })
                .collect();
            out.push_str(&table(
                &[
                    "steps by model",
                    "steps",
                    "parsed",
                    "no usable call",
                    "parse rate",
                    "tokens in",
                    "tokens out",
                ],
                &rows,
            ));
            let e = &self.ended_by;
            out.push_str(&format!(
                "ended by the loop's rules: stuck {}, max_steps {}, token_budget {}; otherwise {}\n",
                e.stuck, e.max_steps, e.token_budget, e.other
            ));
        }
        if !self.warnings.is_empty() {
            let n = self.warnings.len();
            let noun = if n == 1 { "warning" } else { "warnings" };
            out.push_str(&format!("\n{n} {noun}:\n"));
            for w in &self.warnings {
                out.push_str(&format!("  {w}\n"));
            }
        }
        out
    }
}

fn num(v: Option<f64>) -> String {
    v.map_or_else(|| "-".to_string(), |v| format!("{v:.3}"))
}

fn usd(v: Option<f64>) -> String {
    v.map_or_else(|| "-".to_string(), |v| format!("${v:.4}"))
}

/// Columns padded to their widest cell: the first left-aligned, the rest right-aligned.
fn table(head: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = head.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: Vec<&str>| -> String {
        let mut s = String::new();
        for (i, (cell, w)) in cells.iter().zip(&widths).enumerate() {
            if i == 0 {
                s.push_str(&format!("{cell:<w$}"));
            } else {
                s.push_str(&format!("  {cell:>w$}"));
            }
        }
        s.trim_end().to_string() + "\n"
    };
    let mut out = line(head.to_vec());
    for row in rows {
        out.push_str(&line(row.iter().map(String::as_str).collect()));
    }
    out
}
