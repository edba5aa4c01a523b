//! Headless sessions (`handoff exec`): the session with a log, a printer and a headless
//! operator as its consumers, and a summary at the end. Everything here is wiring; the
//! session itself is `agent::session`.

use std::io::IsTerminal;
use std::path::PathBuf;

use serde::Serialize;
use tokio::sync::mpsc;

use super::operator::{self, Answerer};
use super::wiring::{ExecError, Prepared, prepare, spawn_log_then};
use crate::agent::emitter::Emitter;
use crate::agent::session::{self, Approvals, SessionEnd};
use crate::config::Config;
use crate::metrics::session::SessionFold;
use crate::protocol::{Actor, Command, Event, Route, Stamped};

/// What `exec` was asked to do.
#[derive(Debug, Clone)]
pub struct ExecArgs {
    pub repo: PathBuf,
    pub task: String,
    pub json: bool,
    pub shadow: bool,
    pub answers: Option<PathBuf>,
    pub log: Option<PathBuf>,
    pub approve: bool,
}

/// The final object of `exec --json`.
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub outcome: crate::protocol::Outcome,
    pub steps: u32,
    pub escalations: Vec<EscalationLine>,
    pub cost: CostLine,
    pub ask: crate::protocol::AskCounts,
    /// Steps that tried to change a protected file (`protected_touched` events); left out
    /// of `--json` when none did.
    #[serde(skip_serializing_if = "is_zero")]
    pub protected_touched: u32,
    pub log: String,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct EscalationLine {
    pub route: Route,
    pub belief: f64,
    pub threshold: f64,
    pub step: u32,
    pub reason: crate::protocol::EscalationReason,
    pub shadow: bool,
}

#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct CostLine {
    pub usd: f64,
    pub junior_usd: f64,
    pub senior_usd: f64,
    pub junior_tokens: u64,
    pub senior_tokens: u64,
}

/// The summary's escalations and money come from the same fold `report` uses; only the
/// token counts (input and output, which the fold does not keep) are added here.
async fn collect(mut rx: mpsc::Receiver<Stamped>) -> (Vec<EscalationLine>, CostLine, u32) {
    let mut fold = SessionFold::new("");
    let (mut junior_tokens, mut senior_tokens) = (0, 0);
    while let Some(s) = rx.recv().await {
        if let Event::CostIncurred {
            actor,
            input_tokens,
            output_tokens,
            ..
        } = s.event
        {
            match actor {
                Actor::Junior => junior_tokens += input_tokens + output_tokens,
                Actor::Senior => senior_tokens += input_tokens + output_tokens,
            }
        }
        fold.push(&s.event);
    }
    let summary = fold.finish();
    let escalations = summary
        .escalations
        .iter()
        .map(|e| EscalationLine {
            route: e.route,
            belief: e.belief,
            threshold: e.threshold,
            step: e.step,
            reason: e.reason,
            shadow: e.shadow,
        })
        .collect();
    let cost = CostLine {
        usd: summary.cost.junior_usd + summary.cost.senior_usd,
        junior_usd: summary.cost.junior_usd,
        senior_usd: summary.cost.senior_usd,
        junior_tokens,
        senior_tokens,
    };
    (escalations, cost, summary.protected_touched)
}

/// Prints events as they come: JSON lines, or a compact human trace on stderr.
async fn print(mut rx: mpsc::Receiver<Stamped>, json: bool) {
    use std::io::Write;
    let mut last_was_token = false;
    while let Some(s) = rx.recv().await {
        if json {
            if let Ok(line) = serde_json::to_string(&s) {
                let mut out = std::io::stdout().lock();
                let _ = writeln!(out, "{line}");
            }
            continue;
        }
        let line = match &s.event {
            Event::Token { text, .. } => {
                eprint!("{text}");
                last_was_token = true;
                continue;
            }
            Event::BeliefUpdated { .. } | Event::CostIncurred { .. } => continue,
            other => crate::app::present::event_line(other),
        };
        if let Some(line) = line {
            if last_was_token {
                eprintln!();
                last_was_token = false;
            }
            eprintln!("{line}");
        }
    }
}

/// Runs one headless session; the session's outcome is in the summary, not the exit status.
pub async fn exec(config: Config, args: ExecArgs) -> Result<Summary, ExecError> {
    let mut config = config;
    if args.shadow {
        config.policy.shadow = true;
    }
    let answerer = match &args.answers {
        Some(p) => Answerer::Prepared(operator::load_answers(p)?),
        None if std::io::stdin().is_terminal() => Answerer::Terminal,
        None => Answerer::Nobody,
    };
    let approvals = if args.approve {
        Approvals::Granted
    } else {
        Approvals::Refused
    };
    let prepared = prepare(config, &args.repo, &args.task, approvals, args.log.clone())?;
    run_headless(prepared, answerer, args.json).await
}

/// Runs a prepared session with the log, a printer and a headless operator as consumers.
pub async fn run_headless(
    prepared: Prepared,
    answerer: Answerer,
    json: bool,
) -> Result<Summary, ExecError> {
    let no_operator = prepared.setup.config.agent.no_operator;
    let log_path = prepared.log_path.clone();
    let (print_tx, print_rx) = mpsc::channel(1024);
    // The printer sees events through the log: what `--json` shows up to a step end is synced.
    let (log_tx, log_task) =
        spawn_log_then(&log_path, &prepared.setup.config.digest(), Some(print_tx));
    let (sum_tx, sum_rx) = mpsc::channel(1024);
    let (op_tx, op_rx) = mpsc::channel(64);
    let (cmd_tx, cmd_rx) = mpsc::channel::<Command>(64);
    let printer = tokio::spawn(print(print_rx, json));
    let collector = tokio::spawn(collect(sum_rx));
    let op = tokio::spawn(operator::serve(answerer, no_operator, op_rx, cmd_tx));
    let emitter = Emitter::new(vec![log_tx, sum_tx, op_tx]);
    let result = session::run(prepared.setup, emitter, cmd_rx).await;
    // The emitter is gone with the session: consumers drain and stop.
    let log_warning = log_task.await.ok().flatten();
    let _ = printer.await;
    let (escalations, cost, protected_touched) = collector.await.unwrap_or_default();
    op.abort();
    if let Some(w) = log_warning {
        eprintln!("handoff: warning: {w}");
    }
    let end: SessionEnd = result?;
    Ok(Summary {
        kind: "summary",
        outcome: end.outcome,
        steps: end.steps,
        escalations,
        cost,
        ask: end.ask,
        protected_touched,
        log: log_path.display().to_string(),
    })
}
