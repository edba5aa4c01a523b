//! Headless sessions (`handoff exec`): the session with a log, a printer and a headless
//! operator as its consumers, and a summary at the end. Everything here is wiring; the
//! session itself is `agent::session`.

use std::io::IsTerminal;
use std::path::PathBuf;

use tokio::sync::mpsc;

use super::operator::{self, Answerer};
use super::stop::Stop;
use super::wiring::{ExecError, Prepared, prepare, spawn_log_then};
use crate::agent::emitter::Emitter;
use crate::agent::session::{self, Approvals, SessionEnd};
use crate::config::Config;
use crate::protocol::{Command, Event, Stamped};

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

pub use super::summary::{Changes, CostLine, EscalationLine, Summary};

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
                eprint!("{}", crate::protocol::visible::visible_lines(text));
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
    let stop = Stop::on_signals().map_err(ExecError::Signals)?;
    run_headless(prepared, answerer, args.json, stop).await
}

/// Runs a prepared session with the log, a printer and a headless operator as consumers.
/// When `stop` is requested, the session is told to quit ([`Stop::quitting`]) and this
/// returns its `aborted` summary once its log is complete.
pub async fn run_headless(
    prepared: Prepared,
    answerer: Answerer,
    json: bool,
    stop: Stop,
) -> Result<Summary, ExecError> {
    let no_operator = prepared.setup.config.agent.no_operator;
    let Prepared {
        setup,
        log_path,
        log,
        ..
    } = prepared;
    let (print_tx, print_rx) = mpsc::channel(1024);
    // The printer sees events through the log: what `--json` shows up to a step end is synced.
    let (log_tx, log_task) = spawn_log_then(log, Some(print_tx));
    let (sum_tx, sum_rx) = mpsc::channel(1024);
    let (op_tx, op_rx) = mpsc::channel(64);
    let (cmd_tx, cmd_rx) = mpsc::channel::<Command>(64);
    let printer = tokio::spawn(print(print_rx, json));
    let collector = tokio::spawn(super::summary::collect(sum_rx));
    let repo = setup.repo.clone();
    let quit_tx = cmd_tx.clone();
    let op = tokio::spawn(operator::serve(answerer, no_operator, op_rx, cmd_tx));
    let emitter = Emitter::new(vec![log_tx, sum_tx, op_tx]);
    let session = session::run(setup, emitter, cmd_rx);
    let result = stop.quitting(&quit_tx, session).await;
    drop(quit_tx);
    // The emitter is gone with the session: consumers drain and stop.
    let log_warning = log_task.await.ok().flatten();
    let _ = printer.await;
    let tally = collector.await.unwrap_or_default();
    op.abort();
    if let Some(w) = log_warning {
        eprintln!("handoff: warning: {w}");
    }
    let end: SessionEnd = result?;
    Ok(Summary::new(&end, tally, &repo, &log_path))
}
