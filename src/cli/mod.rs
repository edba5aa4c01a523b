//! The `handoff` command line: one file per command, each an argument struct and a `run`
//! that turns it into library calls and an exit code. Argument groups shared by several
//! commands live in [`args`], the JSON-or-text choice in [`output`], the exit codes in
//! [`crate::exit`]. `main.rs` only calls [`main`].

pub(crate) mod args;
mod calibrate;
mod cascade;
mod completions;
mod demo;
mod diff;
mod doctor;
mod eval;
mod exec;
mod init;
mod man;
pub(crate) mod output;
mod replay;
mod report;
mod restore;
mod run;
mod schedule;
mod sessions;
mod simulate;

use std::process::ExitCode;

use std::path::PathBuf;

use anyhow::Context;
use clap::{Parser, Subcommand};

use crate::exit::Exit;
use args::Globals;

#[derive(Parser)]
#[command(
    name = "handoff",
    version,
    about = "A coding agent that knows when to ask for help"
)]
pub(crate) struct Cli {
    /// Run as if started in DIR (before anything else is read, the config included).
    #[arg(short = 'C', global = true, value_name = "DIR")]
    chdir: Option<PathBuf>,
    /// Override one config setting, as in the file: -c junior.model=qwen2.5-coder:7b
    /// (repeatable; beats HANDOFF_<SECTION>__<KEY> variables, which beat the file).
    #[arg(short = 'c', global = true, value_name = "KEY=VALUE")]
    set: Vec<String>,
    /// Config file (else $HANDOFF_CONFIG, the XDG config, built-in defaults); before or
    /// after the command's name. For `init`, where to write it (unless --path).
    #[arg(long, global = true, value_name = "FILE")]
    config: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the embedded demo: a sample repo, scripted models on loopback, the real judge.
    Demo(demo::Args),
    /// Run one session in the terminal UI: watch the judge, answer questions, approve writes.
    Run(run::Args),
    /// Run one session headless: events on stderr (or JSON lines on stdout), then a summary.
    Exec(exec::Args),
    /// Write the documented example config to the XDG config path (never overwrites).
    Init(init::Args),
    /// Probe the junior and senior endpoints: reachable, model listed, streaming,
    /// logprobs, tool calls, tools with logprobs; one verdict line per endpoint.
    Doctor(doctor::Args),
    /// Run a task suite headless under one or more policies with a simulated operator, and
    /// score accuracy, cost, escalations, Ask-F1, the cost–accuracy frontier and APGR.
    Eval(eval::Args),
    /// The paper's synthetic study with known truth: policies side by side, contamination,
    /// sample complexity; or, with --logs, simulated sessions written as session logs.
    Simulate(simulate::Args),
    /// Summarise logged sessions: outcomes, escalations, Ask-F1, cost per route, earliness.
    Report(report::Args),
    /// Fit the judge on logged sessions and score it on held-out ones.
    Calibrate(calibrate::Args),
    /// Plan the threshold schedule on logged shadow sessions (decision points at junior
    /// step ends) and set its predicted cost beside what it costs on held-out tasks.
    Schedule(schedule::Args),
    /// Show a logged session again; with --calibration/--policy, judge it again too.
    Replay(replay::Args),
    /// Show what a session changed: one step, or the whole session, from its checkpoints.
    Diff(diff::Args),
    /// Put the work tree back to a checkpoint of a session (refuses over your own
    /// uncommitted changes unless --force).
    Restore(restore::Args),
    /// List the sessions that keep checkpoints in a repository, or prune old ones.
    Sessions(sessions::Args),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    Completions(completions::Args),
    /// Print the man page (roff) on stdout: handoff man > handoff.1
    Man,
}

/// Parses the command line, runs the command and decides the exit code ([`Exit`]).
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let globals = match global_options(&cli) {
        Ok(g) => g,
        Err(err) => {
            eprintln!("handoff: {}", crate::chain::once(&err));
            return Exit::for_error(&err).into();
        }
    };
    // handoff starts no daemon of its own, so every orphan it adopts is a command's and
    // the walk at the end of each call may kill it (see `agent::proctree`).
    crate::agent::proctree::adopt_orphans();
    let g = &globals;
    let result = match cli.command {
        Command::Demo(a) => demo::run(a),
        Command::Run(a) => run::run(a, g),
        Command::Exec(a) => exec::run(a, g),
        Command::Init(a) => init::run(a, g),
        Command::Doctor(a) => doctor::run(a, g),
        Command::Eval(a) => eval::run(a, g),
        Command::Simulate(a) => simulate::run(a),
        Command::Report(a) => report::run(a),
        Command::Calibrate(a) => calibrate::run(a, g),
        Command::Schedule(a) => schedule::run(a, g),
        Command::Replay(a) => replay::run(a, g),
        Command::Diff(a) => diff::run(a),
        Command::Restore(a) => restore::run(a),
        Command::Sessions(a) => sessions::run(a, g),
        Command::Completions(a) => completions::run(a),
        Command::Man => man::run(),
    };
    match result {
        Ok(exit) => exit.into(),
        Err(err) => {
            eprintln!("handoff: {}", crate::chain::once(&err));
            Exit::for_error(&err).into()
        }
    }
}

/// `-C DIR`, `-c KEY=VALUE` and `--config FILE`, which every command takes: the directory
/// changes first, so relative paths everywhere (`--repo .`, `--config`, logs) mean what
/// they would there; the other two become the [`Globals`] the commands load the config with.
fn global_options(cli: &Cli) -> anyhow::Result<Globals> {
    if let Some(dir) = &cli.chdir {
        std::env::set_current_dir(dir)
            .with_context(|| format!("-C {}", dir.display()))
            .map_err(crate::exit::bad_input)?;
    }
    let overrides = cli
        .set
        .iter()
        .map(|a| crate::config::Override::from_arg(a))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Globals {
        config_file: cli.config.clone(),
        overrides,
    })
}

/// The command line as clap sees it, for completions and the man page.
pub(crate) fn command() -> clap::Command {
    <Cli as clap::CommandFactory>::command()
}
