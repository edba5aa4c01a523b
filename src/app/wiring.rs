//! How every front end builds a session: clients, judge, prompts, session id and log path
//! ([`prepare`]), and the log writer as a consumer ([`spawn_log`]). `run`, `exec`, the demo
//! and `eval` all start sessions through here, so there is one way to build one.

use std::path::{Path, PathBuf};

use tokio::sync::mpsc;

use super::operator;
use crate::agent::prompts::Prompts;
use crate::agent::session::{self, Approvals, SessionSetup};
use crate::config::{Config, NoOperator, RouteMode};
use crate::judge::SessionJudge;
use crate::llm::Client;
use crate::log::writer::{LogWriter, spawn_writer};
use crate::protocol::Stamped;

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
    SessionJudge(#[from] crate::judge::JudgeError),
    #[error(transparent)]
    Session(#[from] session::SessionError),
    #[error("no place for session logs (no home directory); pass --log FILE")]
    NoLogDir,
    #[error(
        "cannot take over SIGINT, SIGTERM, SIGHUP and SIGQUIT to stop the session cleanly: {0}"
    )]
    Signals(std::io::Error),
    /// The session log cannot be created; the session does not start, so no session runs
    /// that nobody can read back.
    #[error("cannot create the session log (name a new file in a writable directory with --log)")]
    Log(#[source] crate::log::LogError),
}

impl ExecError {
    /// Whether the error is about something the user gave (the log file, the repository
    /// directory, the task, an endpoint's settings such as a key variable that is not set),
    /// which exits as bad input (4), not as an aborted run.
    pub fn is_input(&self) -> bool {
        matches!(
            self,
            ExecError::Log(_)
                | ExecError::Answers(_)
                | ExecError::NoRepo(_)
                | ExecError::EmptyTask
                | ExecError::Client {
                    source: crate::llm::LlmError::Config { .. },
                    ..
                }
        )
    }
}

/// The parts of a session every front end builds the same way.
pub struct Prepared {
    pub setup: SessionSetup,
    pub log_path: PathBuf,
    /// The log at `log_path`, already created with its header, for [`spawn_log`].
    pub log: LogWriter,
    /// Why this session keeps no checkpoints (the directory is in no git repository);
    /// already said on stderr, and shown again where stderr is hidden (the TUI).
    pub no_checkpoints: Option<String>,
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
    let watch = SessionJudge::from_config(&config)?;
    let mut prompts = Prompts::load(&config.prompts)?.for_protocols(
        config.junior.tool_protocol,
        config.senior.tool_protocol,
        &crate::agent::tools::spec::specs(),
    );
    let project = project_instructions(repo, &config.prompts.instruction_files);
    prompts.junior = crate::instructions::with_instructions(&prompts.junior, &project);
    prompts.senior = crate::instructions::with_instructions(&prompts.senior, &project);
    let session_id = new_session_id();
    let log_path = match log {
        Some(p) => p,
        None => crate::config::sessions_dir()
            .ok_or(ExecError::NoLogDir)?
            .join(format!("{session_id}.jsonl")),
    };
    // Last of the checks and before anything touches the repository (the prune below):
    // a session whose log cannot be written does not start.
    let log = LogWriter::create(&log_path, config.digest()).map_err(ExecError::Log)?;
    let no_checkpoints = prune_or_warn(repo, &config.checkpoints);
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
            check_overlay: Default::default(),
        },
        log_path,
        log,
        no_checkpoints,
    })
}

/// The project's instruction files (`prompts.instruction_files`, `AGENTS.md` by default)
/// from the repository root down to `dir`, as one capped block for the junior's and the
/// senior's system prompts; a file that cannot be read is warned about, not silently
/// skipped.
fn project_instructions(dir: &Path, names: &[String]) -> String {
    let root = crate::repo::Repo::open(dir)
        .map(|r| r.workdir().to_path_buf())
        .unwrap_or_else(|_| dir.to_path_buf());
    let root = root.canonicalize().unwrap_or(root);
    let cwd = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    let (files, errors) = crate::instructions::find(&root, &cwd, names);
    for (path, e) in errors {
        eprintln!("handoff: warning: cannot read {}: {e}", path.display());
    }
    crate::instructions::block(&files, crate::instructions::DEFAULT_CAP_BYTES)
}

/// Before a session: prunes old sessions' checkpoints as `[checkpoints]` says, or warns
/// that there will be none. Returns the reason when there will be none.
///
/// Nothing here stops the session: a session outside git still works, it only cannot be
/// diffed or restored afterwards, and a failed prune leaves old refs, nothing worse.
fn prune_or_warn(dir: &Path, limits: &crate::config::CheckpointsConfig) -> Option<String> {
    use crate::repo::{Repo, RepoError};
    match Repo::open(dir) {
        Ok(repo) => {
            if limits.prune {
                match repo.prune(limits.policy(), std::time::SystemTime::now()) {
                    Ok(r) if !r.removed.is_empty() => eprintln!(
                        "handoff: removed the checkpoints of {} old session(s) ([checkpoints] \
                         max_age_days = {}, max_sessions = {})",
                        r.removed.len(),
                        limits.max_age_days,
                        limits.max_sessions
                    ),
                    Ok(_) => {}
                    Err(e) => eprintln!("handoff: warning: pruning old checkpoints failed: {e}"),
                }
            }
            None
        }
        Err(e) => {
            let why = match e {
                RepoError::NotARepository(d) => format!(
                    "{} is not inside a git repository, so this session keeps no checkpoints \
                     and cannot be diffed or restored afterwards (run `git init` there first)",
                    d.display()
                ),
                other => format!("no checkpoints for this session: {other}"),
            };
            eprintln!("handoff: warning: {why}");
            Some(why)
        }
    }
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

/// Starts the log writer (made by [`prepare`]) as a consumer; returns its channel and the
/// task to await.
pub fn spawn_log(
    log: LogWriter,
) -> (
    mpsc::Sender<Stamped>,
    tokio::task::JoinHandle<Option<String>>,
) {
    spawn_log_then(log, None)
}

/// Like [`spawn_log`], and hands every event on to `next` once the log has it — a durable
/// event ([`Event::is_durability_point`]) only after the file is synced. A consumer fed this
/// way never shows a step end that a crash could still take out of the log: `exec --json`
/// prints through it, so its stdout is a witness of what is on disk.
pub fn spawn_log_then(
    log: LogWriter,
    next: Option<mpsc::Sender<Stamped>>,
) -> (
    mpsc::Sender<Stamped>,
    tokio::task::JoinHandle<Option<String>>,
) {
    let (tx, mut rx) = mpsc::channel::<Stamped>(1024);
    let handle = spawn_writer(log, 1024);
    let task = tokio::spawn(async move {
        let mut problems: Vec<String> = Vec::new();
        let mut note = |r: Result<Vec<crate::log::LogError>, crate::log::LogError>| match r {
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
