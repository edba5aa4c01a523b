//! Argument groups more than one command takes, defined once so that `--config`, `--log`
//! and the log inputs read and mean the same everywhere.

use std::path::{Path, PathBuf};

use anyhow::Context;

use crate::config::Config;

/// `--config FILE`.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct ConfigArg {
    /// Config file (else $HANDOFF_CONFIG, the XDG config, built-in defaults).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
}

impl ConfigArg {
    /// The config this command runs under; a broken file is bad input (exit 4).
    pub fn load(&self) -> anyhow::Result<Config> {
        Ok(self.load_with_source()?.0)
    }

    /// The config and where it came from, for commands that print the source.
    pub fn load_with_source(&self) -> anyhow::Result<(Config, crate::config::Source)> {
        Config::discover(self.config.as_deref()).context("loading the configuration")
    }

    pub fn path(&self) -> Option<&Path> {
        self.config.as_deref()
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
    /// What the junior should do.
    pub task: String,
}
