//! Running tasks: each in a fresh temporary copy of its template, headless, with the
//! simulated operator as the only one who answers questions, logged like any session.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use futures::StreamExt;
use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;

use super::operator::{self, Judge};
use super::policy::Policy;
use super::suite::Task;
use crate::agent::emitter::Emitter;
use crate::agent::overlay::CheckOverlay;
use crate::agent::session::{self, Approvals};
use crate::agent::tools::run::{ShellCommand, run_shell};
use crate::analysis::summarize_file;
use crate::app::stop::Stop;
use crate::app::wiring as exec;
use crate::config::Config;
use crate::protocol::{Command, EscalationReason, Outcome, Route};

/// What one task under one policy did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskRun {
    pub task: String,
    /// The policy's label.
    pub policy: String,
    /// The task's check passed on the repository the session left behind.
    pub passed: bool,
    /// How the session itself ended; `None` when it could not run.
    pub outcome: Option<Outcome>,
    pub steps: u32,
    pub usd: f64,
    pub junior_usd: f64,
    pub senior_usd: f64,
    pub escalations: Vec<RunEscalation>,
    /// Per question asked, the blocker it targeted.
    pub questions: Vec<Option<String>>,
    /// Questions the operator refused after answering its limit
    /// ([`super::operator::MAX_ANSWERED`]); they are among `questions`, targeting nothing.
    #[serde(default)]
    pub refused: usize,
    /// The session's escalations with their marks, and whether it failed: its Ask-F1
    /// decision (see [`crate::metrics::SessionAsk`]).
    #[serde(default)]
    pub ask: crate::metrics::AskSession,
    pub blockers: usize,
    /// The model tried to change a protected file (the task's tests) during the run.
    #[serde(default)]
    pub protected_touched: bool,
    pub log: PathBuf,
    /// Why the run could not happen (an infrastructure problem, not a wrong answer); such
    /// runs are left out of accuracy and cost.
    pub error: Option<String>,
}

impl TaskRun {
    /// Why this run measured nothing about the models, if it did not: it could not run,
    /// or its session was aborted after the endpoints failed (a fault escalation), which
    /// says the servers were down, not that the model was wrong. `eval` exits 1 on any.
    pub fn unmeasured(&self) -> Option<String> {
        if let Some(e) = &self.error {
            return Some(e.clone());
        }
        let faulted = self
            .escalations
            .iter()
            .any(|e| e.reason == EscalationReason::Fault);
        (self.outcome == Some(Outcome::Aborted) && faulted).then(|| {
            format!(
                "aborted after the endpoints failed (see {})",
                self.log.display()
            )
        })
    }
}

/// One real (not shadow) escalation of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunEscalation {
    pub route: Route,
    pub reason: EscalationReason,
}

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("cannot copy the template {path}: {cause}")]
    Copy {
        path: PathBuf,
        cause: std::io::Error,
    },
    #[error("cannot commit the template copy: {0}")]
    Git(#[from] git2::Error),
    #[error(transparent)]
    Prepare(#[from] exec::ExecError),
    #[error(transparent)]
    Session(#[from] session::SessionError),
}

/// One unit of work: a task under a policy, logged to `log`.
#[derive(Debug, Clone)]
pub struct Unit {
    pub task: Task,
    pub policy: Policy,
    pub log: PathBuf,
}

/// Why a run stopped by a signal measured nothing (it is left out of accuracy and cost).
pub const INTERRUPTED: &str = "interrupted: the evaluation was stopped by a signal";

/// Runs one unit; never fails: a run that could not happen carries its error. Under a
/// requested `stop` it does not start, and a running session quits at once (its command
/// killed, its log ending `aborted`); either run carries [`INTERRUPTED`] as its error.
pub async fn run_unit(config: &Config, unit: &Unit, judge: Arc<Judge>, stop: &Stop) -> TaskRun {
    let mut run = TaskRun::unstarted(unit);
    if stop.is_requested() {
        run.error = Some(format!("{INTERRUPTED} before the run started"));
        return run;
    }
    if let Err(e) = run_into(config, unit, judge, stop, &mut run).await {
        run.error = Some(e.to_string());
    }
    run
}

impl TaskRun {
    /// A run with nothing done yet, to be filled in.
    fn unstarted(unit: &Unit) -> TaskRun {
        TaskRun {
            task: unit.task.id.clone(),
            policy: unit.policy.label(),
            passed: false,
            outcome: None,
            steps: 0,
            usd: 0.0,
            junior_usd: 0.0,
            senior_usd: 0.0,
            escalations: Vec::new(),
            questions: Vec::new(),
            refused: 0,
            ask: crate::metrics::AskSession::default(),
            blockers: unit.task.blockers.len(),
            protected_touched: false,
            log: unit.log.clone(),
            error: None,
        }
    }
}

async fn run_into(
    config: &Config,
    unit: &Unit,
    judge: Arc<Judge>,
    stop: &Stop,
    run: &mut TaskRun,
) -> Result<(), RunError> {
    let task = &unit.task;
    let copy_err = |path: &Path| {
        let path = path.to_path_buf();
        move |cause| RunError::Copy { path, cause }
    };
    let work = tempfile::Builder::new()
        .prefix("handoff-eval-")
        .tempdir()
        .map_err(copy_err(&std::env::temp_dir()))?;
    let repo = work.path().join(&task.id);
    let hidden = stage(task, &repo)?;
    if let Some(dir) = unit.log.parent() {
        std::fs::create_dir_all(dir).map_err(copy_err(dir))?;
    }

    let config = unit.policy.bound(task_config(
        unit.policy.apply(config.clone()),
        task,
        &task.check,
    ));
    let mut prepared = exec::prepare(
        config.clone(),
        &repo,
        &task.text,
        Approvals::Granted,
        Some(unit.log.clone()),
    )?;
    prepared.setup.check_overlay = hidden.clone();
    let (log_tx, log_task) = exec::spawn_log(prepared.log);
    let (op_tx, op_rx) = mpsc::channel(64);
    let (cmd_tx, cmd_rx) = mpsc::channel::<Command>(64);
    let quit_tx = cmd_tx.clone();
    let op = tokio::spawn(operator::serve(judge, task.blockers.clone(), op_rx, cmd_tx));
    let emitter = Emitter::new(vec![log_tx, op_tx]);
    let session = session::run(prepared.setup, emitter, cmd_rx);
    let result = stop.quitting(&quit_tx, session).await;
    drop(quit_tx);
    let _ = log_task.await;
    let served = op.await.unwrap_or_default();
    run.questions = served.matched;
    run.refused = served.refused;
    let end = result?;
    run.outcome = Some(end.outcome);
    run.steps = end.steps;
    run.usd = end.usd;
    if stop.is_requested() {
        // No check of what an interrupted session left: it measured nothing.
        run.error = Some(INTERRUPTED.to_string());
        return Ok(());
    }
    // The session's own check passed only if it finished with a pass; otherwise the
    // repository it left behind is checked now (a session can stop at its budget with
    // correct work in the tree), as the session would check it: the tree is the model's.
    run.passed = end.outcome == Outcome::Success
        || super::recheck::passes(&config, &task.check, &hidden, &repo).await;
    if let Ok((sessions, _)) = summarize_file(&unit.log)
        && let Some(s) = sessions.last()
    {
        run.protected_touched = s.protected_touched > 0;
        run.ask = s.ask_session();
        run.junior_usd = s.cost.junior_usd;
        run.senior_usd = s.cost.senior_usd;
        run.escalations = s
            .escalations
            .iter()
            .filter(|e| !e.shadow)
            .map(|e| RunEscalation {
                route: e.route,
                reason: e.reason,
            })
            .collect();
    }
    Ok(())
}

/// Copies the template to `repo` (committed) and reads the hidden tests into memory; they
/// reach the tree only when a check runs, after the session's last action (see
/// [`CheckOverlay`]). Staged on disk next to the repository, they were readable by any
/// `run` command during the session (review finding M8).
fn stage(task: &Task, repo: &Path) -> Result<CheckOverlay, RunError> {
    let copy_err = |path: &Path| {
        let path = path.to_path_buf();
        move |cause| RunError::Copy { path, cause }
    };
    copy_tree(&task.repo, repo).map_err(copy_err(&task.repo))?;
    commit_all(repo)?;
    match &task.hidden {
        Some(hidden) => CheckOverlay::read_dir(hidden).map_err(copy_err(hidden)),
        None => Ok(CheckOverlay::default()),
    }
}

/// The task's check on a suite's own tree (its template or solution, copied without
/// links: trusted like the suite), with the hidden tests laid over it first; false when
/// they cannot be written. A tree a model wrote is checked by [`super::recheck`].
async fn check_with(task: &Task, hidden: &CheckOverlay, repo: &Path, timeout_s: u64) -> bool {
    if hidden.lay_plain(repo).is_err() {
        return false;
    }
    check(&task.check, repo, timeout_s).await
}

/// Whether a suite's task is sound: the untouched template fails its check and the
/// reference solution passes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Validation {
    pub template_fails: bool,
    /// `None` when the task has no reference solution.
    pub solution_passes: Option<bool>,
}

/// Checks one task the way a run would, without a model.
pub async fn validate(task: &Task, timeout_s: u64) -> Result<Validation, RunError> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |cause| RunError::Copy { path, cause }
    };
    let work = tempfile::Builder::new()
        .prefix("handoff-validate-")
        .tempdir()
        .map_err(io(&std::env::temp_dir()))?;
    let repo = work.path().join(&task.id);
    let hidden = stage(task, &repo)?;
    let template_fails = !check_with(task, &hidden, &repo, timeout_s).await;
    let solution_passes = match &task.solution {
        Some(s) => {
            let fresh = work.path().join(format!("{}.solved", task.id));
            let hidden = stage(task, &fresh)?;
            copy_tree(s, &fresh).map_err(io(s))?;
            Some(check_with(task, &hidden, &fresh, timeout_s).await)
        }
        None => None,
    };
    Ok(Validation {
        template_fails,
        solution_passes,
    })
}

/// The config for one task: its check labels the session, its budgets apply.
fn task_config(mut config: Config, task: &Task, check_command: &str) -> Config {
    config.agent.check = Some(check_command.to_string());
    if let Some(v) = task.budget.max_steps {
        config.agent.max_steps = v;
    }
    if let Some(v) = task.budget.token_budget {
        config.agent.token_budget = v;
    }
    if let Some(v) = task.budget.command_timeout_s {
        config.agent.command_timeout_s = v;
    }
    config
}

/// Runs a check command in `dir`; true when it exits 0 within the timeout.
pub async fn check(command: &str, dir: &Path, timeout_s: u64) -> bool {
    // The suite's own command over its own solution: trusted like the suite (SECURITY.md, threat model).
    let spec = ShellCommand::new(command, dir, std::time::Duration::from_secs(timeout_s));
    run_shell(&spec).await.is_ok_and(|r| r.success())
}

/// Directories never copied from a template: build output and caches.
const SKIPPED: [&str; 5] = [".git", "target", "__pycache__", ".pytest_cache", ".venv"];

/// Copies a template directory (files and subdirectories; symlinks are skipped).
pub fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let name = entry.file_name();
        if SKIPPED.iter().any(|s| name == *s) {
            continue;
        }
        let kind = entry.file_type()?;
        let target = to.join(&name);
        if kind.is_dir() {
            copy_tree(&entry.path(), &target)?;
        } else if kind.is_file() {
            std::fs::copy(entry.path(), &target)?;
        }
    }
    Ok(())
}

/// Makes `dir` a git repository with everything committed, so checkpoints and diffs work.
fn commit_all(dir: &Path) -> Result<(), git2::Error> {
    let repo = git2::Repository::init(dir)?;
    let mut index = repo.index()?;
    index.add_all(["*"].iter(), git2::IndexAddOption::DEFAULT, None)?;
    index.write()?;
    let tree = repo.find_tree(index.write_tree()?)?;
    let sig = git2::Signature::now("handoff eval", "eval@handoff.invalid")?;
    repo.commit(Some("HEAD"), &sig, &sig, "task template", &tree, &[])?;
    Ok(())
}

/// Runs every unit, `jobs` at a time, calling `done` after each; results in unit order.
pub async fn run_units(
    config: &Config,
    units: Vec<Unit>,
    judge: Arc<Judge>,
    jobs: usize,
    stop: &Stop,
    done: impl Fn(&TaskRun),
) -> Vec<TaskRun> {
    let count = units.len();
    let mut pending = futures::stream::iter(units.into_iter().enumerate())
        .map(|(i, unit)| {
            let config = config.clone();
            let judge = judge.clone();
            let stop = stop.clone();
            // Spawned, so sessions run on all worker threads, not interleaved on one.
            let mut crashed = TaskRun::unstarted(&unit);
            let handle = tokio::spawn(async move { run_unit(&config, &unit, judge, &stop).await });
            async move {
                let run = handle.await.unwrap_or_else(|e| {
                    crashed.error = Some(format!("the session task ended abnormally: {e}"));
                    crashed
                });
                (i, run)
            }
        })
        .buffer_unordered(jobs.max(1));
    let mut out: Vec<Option<TaskRun>> = vec![None; count];
    while let Some((i, run)) = pending.next().await {
        done(&run);
        out[i] = Some(run);
    }
    out.into_iter().flatten().collect()
}
