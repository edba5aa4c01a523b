//! Argument groups more than one command takes, defined once so that `--config`, `--log`
//! and the log inputs read and mean the same everywhere.

use std::path::{Path, PathBuf};

use anyhow::Context;

use crate::config::Config;

/// The options every command takes and reads the config with: `--config FILE` and the
/// `-c KEY=VALUE` settings (clap's `global`, so they may stand before or after the
/// command's name: `handoff --config c.toml exec …` and `handoff exec --config c.toml …`
/// mean the same). [`super::main`] reads them once and hands this value to the commands
/// that load the config, so no command reads them from process-wide state.
#[derive(Debug, Clone, Default)]
pub struct Globals {
    /// `--config FILE`, if given.
    pub config_file: Option<PathBuf>,
    /// The `-c KEY=VALUE` settings, in command-line order.
    pub overrides: Vec<crate::config::Override>,
}

impl Globals {
    /// The config a command runs under; a broken file is bad input (exit 4).
    pub fn load(&self) -> anyhow::Result<Config> {
        Ok(self.load_with_source()?.0)
    }

    /// The config and where it came from, for commands that print the source: the file,
    /// then the `HANDOFF_*` variables, then `-c` (docs/guide.md, "Configuration").
    pub fn load_with_source(&self) -> anyhow::Result<(Config, crate::config::Source)> {
        let mut overrides = crate::config::Override::from_env(std::env::vars());
        overrides.extend(self.overrides.iter().cloned());
        Config::discover_with(self.config_path(), &overrides).context("loading the configuration")
    }

    /// The `--config FILE` given on the command line, if any.
    pub fn config_path(&self) -> Option<&Path> {
        self.config_file.as_deref()
    }
}

/// `--log FILE` of the commands that run a session.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct LogArg {
    /// Where to write the session log (default: the XDG data dir's sessions/).
    #[arg(long, value_name = "FILE")]
    pub log: Option<PathBuf>,
}

/// The session logs a read-only analysis command takes.
#[derive(clap::Args, Debug, Clone)]
pub struct LogInputs {
    /// Session logs, or directories searched for `*.jsonl` logs.
    #[arg(required = true, value_name = "LOG_OR_DIR")]
    pub logs: Vec<PathBuf>,
}

/// `--json` of the commands whose result is one document.
#[derive(clap::Args, Debug, Clone, Copy, Default)]
pub struct JsonArg {
    /// Print the result as one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
}

/// The repository and task of a session.
#[derive(clap::Args, Debug, Clone)]
pub struct SessionArgs {
    /// The git repository to work in.
    #[arg(long, default_value = ".")]
    pub repo: PathBuf,
    /// Compute and log every decision, never hand off.
    #[arg(long)]
    pub shadow: bool,
    #[command(flatten)]
    pub log: LogArg,
    /// What the junior should do; `-` reads it from stdin.
    pub task: String,
}

impl SessionArgs {
    /// The task as given, or read from stdin when it is `-` (a task written by another
    /// program, or too long for a command line); an unreadable stdin is bad input.
    pub fn task_text(&self) -> anyhow::Result<String> {
        if self.task != "-" {
            return Ok(self.task.clone());
        }
        let mut text = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin(), &mut text)
            .context("reading the task from stdin")
            .map_err(crate::exit::bad_input)?;
        Ok(text.trim().to_string())
    }
}

/// `--repo DIR` of the commands that read or change a repository's checkpoints.
#[derive(clap::Args, Debug, Clone)]
pub struct RepoArg {
    /// The git repository the session worked in.
    #[arg(long, default_value = ".", value_name = "DIR")]
    pub repo: PathBuf,
}

impl RepoArg {
    /// The repository; a directory outside any git repository is bad input (exit 4).
    pub fn open(&self) -> anyhow::Result<crate::repo::Repo> {
        crate::repo::Repo::open(&self.repo).map_err(repo_error)
    }
}

/// The session a checkpoint command names: an id as the summary prints it, or `last` for
/// the newest session with checkpoints in this repository.
pub fn session_id(repo: &crate::repo::Repo, wanted: &str) -> anyhow::Result<String> {
    if wanted != "last" {
        return Ok(wanted.to_string());
    }
    let sessions = repo.list_sessions().map_err(repo_error)?;
    sessions.first().map(|s| s.session.clone()).ok_or_else(|| {
        crate::exit::bad_input(anyhow::anyhow!(
            "no session has checkpoints in {}",
            repo.workdir().display()
        ))
    })
}

/// A checkpoint error as the exit code sees it: a missing repository, session or step, or
/// changes a restore would overwrite, are about what the user asked for (exit 4); a
/// failing git operation is not (exit 3).
pub fn repo_error(e: crate::repo::RepoError) -> anyhow::Error {
    use crate::repo::RepoError;
    match e {
        RepoError::Git(_) | RepoError::Io { .. } => anyhow::Error::new(e),
        _ => crate::exit::bad_input(e),
    }
}

/// `s` as one shell word: unchanged when it is plainly safe, else in single quotes.
pub fn shell_quote(s: &str) -> String {
    crate::app::summary::shell_quote(s)
}
