//! Headless sessions (`handoff exec`): the session with a log, a printer and a headless
//! operator as its consumers, and a summary at the end.
//!
//! Everything here is wiring; the session itself is `agent::session`. The TUI (`run`) and
//! the demo reuse [`prepare`] and [`spawn_log`], so the three front ends build sessions one way.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use serde::Serialize;
use tokio::sync::mpsc;

use crate::agent::emitter::Emitter;
use crate::agent::operator::{self, Answerer};
use crate::agent::prompts::Prompts;
use crate::agent::session::{self, Approvals, SessionEnd, SessionSetup};
use crate::agent::watch::Watch;
use crate::config::{Config, NoOperator, RouteMode};
use crate::event::{Actor, Command, Event, Route, Stamped};
use crate::llm::Client;
use crate::trajectory::session::SessionFold;
use crate::trajectory::writer::{LogWriter, spawn_writer};

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

#[derive(Debug, thiserror::Error)]
pub enum ExecError {
    #[error("repository {0} is not a directory")]
    NoRepo(PathBuf),
    #[error("the task is empty: say what the junior should do")]
    EmptyTask,
    #[error(transparent)]
    Answers(#[from] operator::AnswersError),
    #[error(transparent)]
    Prompt(#[from] crate::agent::prompts::PromptError),
    #[error("{model} endpoint: {source}")]
    Client {
        model: &'static str,
        source: crate::llm::LlmError,
    },
    #[error(transparent)]
    Watch(#[from] crate::agent::watch::WatchError),
    #[error(transparent)]
    Session(#[from] session::SessionError),
    #[error("no place for session logs (no home directory); pass --log FILE")]
    NoLogDir,
}

/// The parts of a session every front end builds the same way.
pub struct Prepared {
    pub setup: SessionSetup,
    pub log_path: PathBuf,
}

/// Builds clients, judge and prompts from a validated config.
pub fn prepare(
    config: Config,
    repo: &Path,
    task: &str,
    approvals: Approvals,
    log: Option<PathBuf>,
) -> Result<Prepared, ExecError> {
    if !repo.is_dir() {
        return Err(ExecError::NoRepo(repo.to_path_buf()));
    }
    if task.trim().is_empty() {
        return Err(ExecError::EmptyTask);
    }
    let junior = Client::new(&config.junior).map_err(|source| ExecError::Client {
        model: "junior",
        source,
    })?;
    let mut config = config;
    let senior = senior_client(&mut config)?;
    let watch = Watch::from_config(&config)?;
    let prompts = Prompts::load(&config.prompts)?.for_protocols(
        config.junior.tool_protocol,
        config.senior.tool_protocol,
        &crate::agent::tools::spec::specs(),
    );
    let session_id = new_session_id();
    let log_path = match log {
        Some(p) => p,
        None => crate::config::sessions_dir()
            .ok_or(ExecError::NoLogDir)?
            .join(format!("{session_id}.jsonl")),
    };
    let repo = repo.canonicalize().unwrap_or_else(|_| repo.to_path_buf());
    Ok(Prepared {
        setup: SessionSetup {
            config,
            repo,
            task: task.to_string(),
            session_id,
            approvals,
            prompts,
            watch,
            junior,
            senior,
        },
        log_path,
    })
}

/// The senior's client. A senior without its key is only an error when the session may hand
/// off to it: under `route = "operator"` the session runs without one (a question nobody
/// answers then ends the session instead of going to the senior, and says so).
fn senior_client(config: &mut Config) -> Result<Client, ExecError> {
    let missing_key = |source| ExecError::Client {
        model: "senior",
        source,
    };
    match Client::new(&config.senior) {
        Ok(client) => Ok(client),
        Err(crate::llm::LlmError::Config { message })
            if config.policy.route == RouteMode::Operator
                && config.senior.api_key_env.is_some() =>
        {
            if config.agent.no_operator == NoOperator::Senior {
                config.agent.no_operator = NoOperator::Fail;
            }
            eprintln!(
                "handoff: note: route = \"operator\" needs no senior ({message}); a question \
                 nobody answers ends the session"
            );
            Client::with_api_key(&config.senior, None).map_err(missing_key)
        }
        Err(crate::llm::LlmError::Config { message }) if config.senior.api_key_env.is_some() => {
            Err(missing_key(crate::llm::LlmError::Config {
                message: format!(
                    "{message}; a senior on a local server needs no key (leave api_key_env out \
                     of [senior]), and route = \"operator\" needs no senior at all"
                ),
            }))
        }
        Err(source) => Err(missing_key(source)),
    }
}

/// A session id that sorts by time and does not collide across parallel runs.
pub fn new_session_id() -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    format!(
        "{}-{:06x}",
        now.as_secs(),
        rand::random::<u32>() & 0xff_ffff
    )
}

/// Starts the log writer as a consumer; returns its channel and the task to await.
pub fn spawn_log(
    path: &Path,
    config_digest: &str,
) -> (
    mpsc::Sender<Stamped>,
    tokio::task::JoinHandle<Option<String>>,
) {
    spawn_log_then(path, config_digest, None)
}

/// Like [`spawn_log`], and hands every event on to `next` once the log has it — a durable
/// event ([`Event::is_durability_point`]) only after the file is synced. A consumer fed this
/// way never shows a step end that a crash could still take out of the log: `exec --json`
/// prints through it, so its stdout is a witness of what is on disk.
pub fn spawn_log_then(
    path: &Path,
    config_digest: &str,
    next: Option<mpsc::Sender<Stamped>>,
) -> (
    mpsc::Sender<Stamped>,
    tokio::task::JoinHandle<Option<String>>,
) {
    let (tx, mut rx) = mpsc::channel::<Stamped>(1024);
    let handle = spawn_writer(LogWriter::new(path, config_digest), 1024);
    let task = tokio::spawn(async move {
        let mut problems: Vec<String> = Vec::new();
        let mut note =
            |r: Result<Vec<crate::trajectory::LogError>, crate::trajectory::LogError>| match r {
                Ok(errors) => problems.extend(errors.iter().map(ToString::to_string)),
                Err(e) => problems.push(e.to_string()),
            };
        let mut writing = true;
        while let Some(event) = rx.recv().await {
            let durable = event.event.is_durability_point();
            let forward = next.as_ref().map(|_| event.clone());
            if writing && let Err(e) = handle.send(event).await {
                note(Err(e));
                // The writer is gone; the consumers behind it still get every event.
                writing = false;
            }
            // Synced and acknowledged where it matters: a step or the session is complete.
            if writing && durable {
                note(handle.flush().await);
            }
            if let (Some(next), Some(event)) = (&next, forward) {
                // A consumer that left is skipped, as the emitter skips it.
                let _ = next.send(event).await;
            }
        }
        note(handle.close().await);
        problems.dedup();
        (!problems.is_empty()).then(|| format!("session log: {}", problems.join("; ")))
    });
    (tx, task)
}

/// The final object of `exec --json`.
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub outcome: crate::event::Outcome,
    pub steps: u32,
    pub escalations: Vec<EscalationLine>,
    pub cost: CostLine,
    pub ask: crate::event::AskCounts,
    pub log: String,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct EscalationLine {
    pub route: Route,
    pub belief: f64,
    pub threshold: f64,
    pub step: u32,
    pub reason: crate::event::EscalationReason,
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
async fn collect(mut rx: mpsc::Receiver<Stamped>) -> (Vec<EscalationLine>, CostLine) {
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
    (escalations, cost)
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
            other => crate::agent::describe::event_line(other),
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
    let (escalations, cost) = collector.await.unwrap_or_default();
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
        log: log_path.display().to_string(),
    })
}
