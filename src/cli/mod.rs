//! The `handoff` command line: one file per command, each an argument struct and a `run`
//! that turns it into library calls and an exit code. Argument groups shared by several
//! commands live in [`args`], the JSON-or-text choice in [`output`], the exit codes in
//! [`crate::exit`]. `main.rs` only calls [`main`].

pub mod args;
mod calibrate;
mod demo;
mod doctor;
mod eval;
mod exec;
mod init;
pub mod output;
mod replay;
mod report;
mod run;
mod simulate;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::exit::Exit;

#[derive(Parser)]
#[command(
    name = "handoff",
    version,
    about = "A coding agent that knows when to ask for help"
)]
struct Cli {
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
    /// Show a logged session again; with --calibration/--policy, judge it again too.
    Replay(replay::Args),
}

/// Parses the command line, runs the command and decides the exit code ([`Exit`]).
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Demo(a) => demo::run(a),
        Command::Run(a) => run::run(a),
        Command::Exec(a) => exec::run(a),
        Command::Init(a) => init::run(a),
        Command::Doctor(a) => doctor::run(a),
        Command::Eval(a) => eval::run(a),
        Command::Simulate(a) => simulate::run(a),
        Command::Report(a) => report::run(a),
        Command::Calibrate(a) => calibrate::run(a),
        Command::Replay(a) => replay::run(a),
    };
    match result {
        Ok(exit) => exit.into(),
        Err(err) => {
            eprintln!("handoff: {err:#}");
            Exit::for_error(&err).into()
        }
    }
}
