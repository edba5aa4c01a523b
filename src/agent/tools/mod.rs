//! The eight function tools the models call, and the executor that runs six of them.
//!
//! Tool names and argument names are a contract with prompts, logs and outside tools, so
//! they live in one place ([`spec`]). Everything a tool returns is text for the model: a
//! bad argument, a refused path or a rejected patch is an [`OutcomeKind`] the judge can
//! count as evidence and an `output` the model can act on, never a panic or a Rust error
//! that ends the session. `ask_operator` and `finish` are offered to the model but handled
//! by the agent loop, which owns the operator and the session's end.

pub(crate) mod args;
mod check_env;
pub(crate) mod files;
mod outcome;
pub(crate) mod patch;
pub(crate) mod run;
pub(crate) mod search;
pub mod spec;
pub(crate) mod unified;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use crate::agent::confine::Confinement;
use crate::agent::protect::{Protected, Restored};
use crate::config::AgentConfig;

/// What the overlaid paths held before a brief check: their bytes, or `None` when absent.
pub type OverlaySaved = Vec<(PathBuf, Option<Vec<u8>>)>;

pub use args::parse_args;
pub use outcome::{OutcomeKind, ToolFailure, ToolOutcome};
pub use spec::{ASK_OPERATOR, FINISH, TOOL_NAMES, specs};

/// Most protected files bind-mounted read-only for one command; the rest are guarded by
/// the check after the step alone.
const MAX_READ_ONLY_MOUNTS: usize = 512;

/// Limits the tools apply, taken from `[agent]` in the config.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Bytes of output any tool returns to the model.
    pub output_cap_bytes: usize,
    /// Default and longest timeout of `run`.
    pub command_timeout: Duration,
    /// Confine commands where the kernel supports it.
    pub sandbox: bool,
    /// Commands may use the network and local sockets.
    pub network: bool,
    /// The check runs in the sandbox too.
    pub check_sandbox: bool,
    /// Longest tool-call arguments accepted.
    pub max_argument_bytes: usize,
    /// What one command may use (`agent.max_write_mib`, `max_processes`, `max_memory_mib`).
    pub caps: crate::agent::sandbox::limits::Caps,
    /// Entries of the work tree the planted-git scan reads before it gives up (and fails
    /// the call): `agent.max_tree_entries`.
    pub max_tree_entries: usize,
}

impl Limits {
    pub fn from_config(config: &AgentConfig) -> Limits {
        Limits {
            output_cap_bytes: config.output_cap_bytes.max(256),
            command_timeout: Duration::from_secs(config.command_timeout_s.max(1)),
            sandbox: config.sandbox,
            network: config.network,
            check_sandbox: config.check_sandbox,
            max_argument_bytes: config.max_argument_bytes.max(1024),
            caps: crate::agent::sandbox::limits::Caps {
                write_mib: config.max_write_mib,
                processes: config.max_processes,
                memory_mib: config.max_memory_mib,
            },
            max_tree_entries: config.max_tree_entries,
        }
    }
}

/// A repository work tree the tools act on, with its confinement and limits.
#[derive(Debug, Clone)]
pub struct Workspace {
    confine: Confinement,
    limits: Limits,
    /// `TMPDIR` of `run` commands: the one place outside the repository the sandbox lets
    /// them write. Removed when the last clone of the workspace is dropped.
    tmp: Option<Arc<tempfile::TempDir>>,
    /// Environment variables `run` commands never see (the models' API key variables).
    hidden_env: Vec<String>,
    /// `agent.writable_roots`, `agent.readable_roots`, `agent.env_pass`.
    writable_roots: Vec<PathBuf>,
    readable_roots: Option<Vec<PathBuf>>,
    env_pass: Vec<String>,
    /// The files no tool may change, as they were when the workspace was made.
    protected: Protected,
    /// Files written into the tree right before the check (eval's hidden tests).
    check_overlay: crate::agent::overlay::CheckOverlay,
    /// What `run` commands did to git metadata since the step was last recorded, each line
    /// saying what was undone or could not be; shared by the session's clones, taken by
    /// the step's record ([`Workspace::take_git_repairs`]) so the `protected_touched`
    /// event, the summary and the exit code (5) hear of it without every tool result type
    /// carrying it.
    git_repairs: Arc<std::sync::Mutex<Vec<String>>>,
}

impl Workspace {
    /// Fails when `root` is not an existing directory or `agent.protected` holds a bad
    /// glob (a validated config never does). Captures the protected files: this is the
    /// session's start as far as they are concerned.
    pub fn new(root: &Path, config: &AgentConfig) -> std::io::Result<Workspace> {
        let confine = Confinement::new(root)?;
        let protected = Protected::capture(
            confine.root(),
            config.protected.as_deref(),
            config.check.as_deref(),
        )
        .map_err(|e| std::io::Error::other(format!("agent.protected {e}")))?;
        let tmp = tempfile::Builder::new()
            .prefix("handoff-run-")
            .tempdir()
            .ok()
            .map(Arc::new);
        Ok(Workspace {
            confine,
            protected,
            limits: Limits::from_config(config),
            tmp,
            hidden_env: Vec::new(),
            writable_roots: config
                .writable_roots
                .iter()
                .map(|p| crate::config::expand_home(p))
                .collect(),
            readable_roots: config
                .readable_roots
                .as_ref()
                .map(|r| r.iter().map(|p| crate::config::expand_home(p)).collect()),
            env_pass: config.env_pass.clone(),
            check_overlay: crate::agent::overlay::CheckOverlay::default(),
            git_repairs: Arc::default(),
        })
    }

    /// Files to lay over the tree right before the check, and never before.
    pub fn with_check_overlay(mut self, overlay: crate::agent::overlay::CheckOverlay) -> Workspace {
        self.check_overlay = overlay;
        self
    }

    /// The check has hidden files: its output is a label, never shown to a model.
    pub fn has_check_overlay(&self) -> bool {
        !self.check_overlay.is_empty()
    }

    /// Writes the check overlay into the tree (inside the repository only, as the file
    /// tools write); the errors, one per file that could not be written.
    pub fn lay_check_overlay(&self) -> Vec<String> {
        let dir = self.confine.dir();
        self.check_overlay
            .files()
            .iter()
            .filter_map(|(rel, bytes)| {
                dir.write_atomic(rel, bytes)
                    .err()
                    .map(|e| format!("{}: {e}", rel.display()))
            })
            .collect()
    }

    /// Lays the check overlay for a check in the middle of a session (the `code` protocol
    /// checks after every edit) and returns what each overlaid path held before, for
    /// [`Workspace::lift_check_overlay`]: the model's next step must not find the hidden
    /// tests in the tree. The errors are those of [`Workspace::lay_check_overlay`].
    pub fn lay_check_overlay_briefly(&self) -> (Vec<String>, OverlaySaved) {
        use std::io::Read as _;
        let dir = self.confine.dir();
        let saved = self
            .check_overlay
            .files()
            .iter()
            .map(|(rel, _)| {
                let before = dir.open_read(rel).ok().and_then(|mut f| {
                    let mut bytes = Vec::new();
                    f.read_to_end(&mut bytes).ok().map(|_| bytes)
                });
                (rel.clone(), before)
            })
            .collect();
        (self.lay_check_overlay(), saved)
    }

    /// Puts back what [`Workspace::lay_check_overlay_briefly`] saved: a file the overlay
    /// created is removed, one it replaced gets its old bytes.
    pub fn lift_check_overlay(&self, saved: OverlaySaved) {
        let dir = self.confine.dir();
        for (rel, before) in saved {
            let _ = match before {
                Some(bytes) => dir.write_atomic(&rel, &bytes),
                None => dir.remove_file(&rel),
            };
        }
    }

    /// Names these variables (the models' `api_key_env`) as never passed to a command,
    /// even when `agent.env_pass` lists them.
    pub fn hide_env<I, S>(mut self, names: I) -> Workspace
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.hidden_env.extend(names.into_iter().map(Into::into));
        self
    }

    /// The variables never passed to a command (see [`Workspace::hide_env`]).
    pub fn hidden_env(&self) -> Vec<String> {
        self.hidden_env.clone()
    }

    /// The environment commands run with: the allow-list, `agent.env_pass`, never a key.
    /// Under the sandbox, a build-output variable that points where the command may not
    /// write is dropped (see [`crate::agent::sandbox::env::writable_outputs`]).
    pub fn command_env(&self) -> Vec<(std::ffi::OsString, std::ffi::OsString)> {
        let env = crate::agent::sandbox::env::command_env(
            &self.env_pass,
            &self.hidden_env,
            self.limits.network,
        );
        if self.limits.sandbox {
            crate::agent::sandbox::env::writable_outputs(env, self.root(), &self.writable_dirs())
        } else {
            env
        }
    }

    /// What a sandboxed command may do in this workspace.
    pub fn sandbox_policy(&self) -> crate::agent::sandbox::Policy {
        let readable = self.readable_roots.clone();
        crate::agent::sandbox::Policy {
            writable: self.writable_dirs(),
            readable,
            // The real git directory: `.git` itself, or where a `.git` symlink or gitfile
            // leads (a link into the work tree would otherwise leave it writable).
            read_only: crate::agent::gitguard::git_dir(self.root()),
            read_only_files: self.protected.absolute(self.root(), MAX_READ_ONLY_MOUNTS),
            network: self.limits.network,
        }
    }

    /// A command in the repository root, sandboxed when `agent.sandbox` is on.
    pub fn shell(&self, command: &str, timeout: Duration, cap_bytes: usize) -> run::ShellCommand {
        run::ShellCommand {
            command: command.to_string(),
            cwd: self.root().to_path_buf(),
            timeout,
            cap_bytes,
            sandbox: self.limits.sandbox.then(|| self.sandbox_policy()),
            tmpdir: self.tmpdir().map(Path::to_path_buf),
            env: self.command_env(),
            caps: self.limits.caps,
        }
    }

    /// The session's check (`agent.check`): the same sandbox as `run` unless
    /// `agent.check_sandbox = false`. The check is the operator's command, but the code it
    /// runs (tests, build scripts) is what the model just wrote. A Python test runner
    /// started by module is kept from being replaced by the tree (see [`check_env`]).
    pub fn check_command(&self, command: &str) -> run::ShellCommand {
        let mut spec = self.shell(command, self.limits.command_timeout, 2_000);
        spec.env.extend(check_env::extra_env(command));
        if !self.limits.check_sandbox {
            spec.sandbox = None;
        }
        spec
    }

    /// The files no tool may change (see [`crate::agent::protect`]).
    pub fn protected(&self) -> &Protected {
        &self.protected
    }

    /// Refuses a change to any of `rels` that is protected; the file tools call it before
    /// they touch anything.
    pub(crate) fn guard_protected(&self, rels: &[&Path]) -> Result<(), ToolFailure> {
        let mut hit: Vec<String> = rels
            .iter()
            .filter(|r| self.protected.contains(r))
            .map(|r| r.to_string_lossy().into_owned())
            .collect();
        hit.sort();
        hit.dedup();
        if hit.is_empty() {
            Ok(())
        } else {
            Err(ToolFailure::Protected(hit))
        }
    }

    /// Puts back every protected file a step changed; after each step and before the check.
    pub fn restore_protected(&self) -> Restored {
        self.protected.restore(self.confine.dir(), self.root())
    }

    /// Keeps what a `run` command did to git metadata (and what handoff undid) for the
    /// step's record.
    pub(crate) fn note_git_repairs(&self, lines: &[String]) {
        // A poisoned lock still holds whole lines: a panic elsewhere must not lose a breach.
        let mut held = self.git_repairs.lock().unwrap_or_else(|e| e.into_inner());
        held.extend_from_slice(lines);
    }

    /// What [`Workspace::note_git_repairs`] kept since the last call, emptied.
    pub(crate) fn take_git_repairs(&self) -> Vec<String> {
        let mut held = self.git_repairs.lock().unwrap_or_else(|e| e.into_inner());
        std::mem::take(&mut *held)
    }

    /// The fingerprint of `.git` now; compare two with [`crate::agent::gitguard::GitState::changes`].
    pub fn git_state(&self) -> crate::agent::gitguard::GitState {
        crate::agent::gitguard::GitState::capture(self.root())
    }

    /// The `TMPDIR` given to `run` commands.
    pub fn tmpdir(&self) -> Option<&Path> {
        self.tmp.as_deref().map(tempfile::TempDir::path)
    }

    /// Where a sandboxed command may write: the repository, its temp dir and
    /// `agent.writable_roots`.
    pub fn writable_dirs(&self) -> Vec<PathBuf> {
        let mut dirs = vec![self.root().to_path_buf()];
        dirs.extend(self.tmpdir().map(Path::to_path_buf));
        dirs.extend(self.writable_roots.iter().cloned());
        dirs
    }

    /// One line for the session to show at its start when `agent.sandbox` is on: what is
    /// really enforced on this machine, and a warning when the check runs unconfined.
    pub fn sandbox_note(&self) -> Option<String> {
        if !self.limits.sandbox {
            return None;
        }
        let mut note = crate::agent::sandbox::note(&self.sandbox_policy());
        if !self.limits.check_sandbox {
            note.push_str(
                "; WARNING: agent.check runs unconfined (check_sandbox = false), with the code the model wrote",
            );
        }
        Some(note)
    }

    /// The canonical root every path is confined to.
    pub fn root(&self) -> &Path {
        self.confine.root()
    }

    pub fn limits(&self) -> Limits {
        self.limits
    }

    pub fn confinement(&self) -> &Confinement {
        &self.confine
    }

    /// Runs tool `name` with the model's raw JSON `arguments`.
    ///
    /// Never panics on model input; file tools run on the blocking pool so a large
    /// search does not stall the stream the judge is watching.
    pub async fn execute(&self, name: &str, arguments: &str) -> ToolOutcome {
        if arguments.len() > self.limits.max_argument_bytes {
            return ToolOutcome::failed(
                OutcomeKind::BadArguments,
                format!(
                    "error: the arguments of `{}` are {} bytes; the limit is {} (agent.max_argument_bytes). Write large files in parts",
                    truncate_head(name, 64),
                    arguments.len(),
                    self.limits.max_argument_bytes
                ),
            );
        }
        let mut outcome = self.dispatch(name, arguments).await;
        outcome.output = cap_output(outcome.output, self.limits.output_cap_bytes);
        outcome
    }

    async fn dispatch(&self, name: &str, arguments: &str) -> ToolOutcome {
        match name {
            spec::RUN => match parse_args::<args::RunArgs>(name, arguments) {
                Ok(a) => run::run(self, &a).await,
                Err(e) => e.into_outcome(),
            },
            spec::ASK_OPERATOR | spec::FINISH => ToolOutcome::failed(
                OutcomeKind::ToolError,
                format!("error: `{name}` is handled by the session, not the workspace"),
            ),
            spec::LIST_FILES
            | spec::READ_FILE
            | spec::SEARCH
            | spec::WRITE_FILE
            | spec::EDIT
            | spec::APPLY_PATCH => {
                let ws = self.clone();
                let name_owned = name.to_string();
                let arguments = arguments.to_string();
                let joined = tokio::task::spawn_blocking(move || {
                    ws.execute_blocking(&name_owned, &arguments)
                })
                .await;
                match joined {
                    Ok(outcome) => outcome,
                    Err(e) => ToolOutcome::failed(
                        OutcomeKind::ToolError,
                        format!("error: the tool `{name}` failed internally: {e}"),
                    ),
                }
            }
            other => ToolOutcome::failed(
                OutcomeKind::ToolError,
                format!(
                    "error: unknown tool `{other}`; the tools are: {}",
                    TOOL_NAMES.join(", ")
                ),
            ),
        }
    }

    /// The file tools, synchronously (they only touch the file system).
    pub fn execute_blocking(&self, name: &str, arguments: &str) -> ToolOutcome {
        let result = match name {
            spec::LIST_FILES => parse_args(name, arguments)
                .and_then(|a| files::list_files(self, &a))
                .map(|o| (o, false)),
            spec::READ_FILE => parse_args(name, arguments)
                .and_then(|a| files::read_file(self, &a))
                .map(|o| (o, false)),
            spec::SEARCH => parse_args(name, arguments)
                .and_then(|a| search::search(self, &a))
                .map(|o| (o, false)),
            spec::WRITE_FILE => parse_args(name, arguments)
                .and_then(|a| files::write_file(self, &a))
                .map(|o| (o, true)),
            spec::APPLY_PATCH => parse_args(name, arguments)
                .and_then(|a| patch::apply_patch(self, &a))
                .map(|o| (o, true)),
            spec::EDIT => parse_args(name, arguments)
                .and_then(|a| files::edit(self, &a))
                .map(|o| (o, true)),
            other => Err(ToolFailure::Error(format!("`{other}` is not a file tool"))),
        };
        match result {
            Ok((output, writes)) => ToolOutcome::ok(output, writes),
            Err(failure) => failure.into_outcome(),
        }
    }
}

/// Whether a call needs approval under `approval = "on-write"`.
///
/// `write_file`, `apply_patch` and every `run` count as writes: a shell command can change
/// anything, and telling a harmless one from a harmful one is not a judgement to make on
/// the model's say-so. The arguments are taken so a finer rule can be added without
/// touching the callers; none depends on them today.
pub fn is_write(name: &str, _arguments: &str) -> bool {
    matches!(
        name,
        spec::WRITE_FILE | spec::APPLY_PATCH | spec::RUN | spec::EDIT
    )
}

/// The last guard on what the model sees: tools cap their own output, but messages that quote
/// the model's input or the file (a patch rejection, a bad argument) could still be long.
/// Room is left for the headers tools put above a capped body.
fn cap_output(output: String, cap: usize) -> String {
    let limit = cap + 512;
    if output.len() <= limit {
        return output;
    }
    let head = truncate_head(&output, limit);
    format!("{head}\n[output cut at {limit} of {} bytes]", output.len())
}

/// Cuts `text` to at most `cap` bytes at a character boundary, keeping the head.
pub(crate) fn truncate_head(text: &str, cap: usize) -> &str {
    if text.len() <= cap {
        return text;
    }
    let mut end = cap;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}
