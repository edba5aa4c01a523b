//! `handoff exec`: one session headless; the exit code says how it ended
//! ([`Exit::for_session`]: 0 success or unlabelled, 1 check failed, 3 aborted, 5 a
//! command changed git metadata that handoff undid, whatever the outcome).

use std::path::PathBuf;

use anyhow::Context;

use super::args::{Globals, SessionArgs};
use super::output::{Shape, block_on, emit};
use crate::exit::Exit;

#[derive(clap::Args)]
pub struct Args {
    /// One JSON event per line on stdout, then a summary object.
    #[arg(long)]
    json: bool,
    /// Operator answers, one JSON object per line: {"answer": "...", "needed": true}.
    #[arg(long)]
    answers: Option<PathBuf>,
    /// Approve every tool call that `agent.approval` would ask about.
    #[arg(long)]
    approve: bool,
    /// Also write the model's last message (its `finish` summary, else its last words) to
    /// FILE.
    #[arg(short = 'o', long = "output-last-message", value_name = "FILE")]
    output: Option<PathBuf>,
    #[command(flatten)]
    session: SessionArgs,
}

/// A session that could not start or run: a log that cannot be created is the user's input
/// (exit 4), anything else an aborted run.
pub(super) fn session_error(e: crate::app::wiring::ExecError) -> anyhow::Error {
    if e.is_input() {
        crate::exit::bad_input(e)
    } else {
        anyhow::Error::new(e)
    }
}

pub fn run(args: Args, globals: &Globals) -> anyhow::Result<Exit> {
    let config = globals.load()?;
    let task = args.session.task_text()?;
    let exec = crate::app::headless::ExecArgs {
        repo: args.session.repo,
        task,
        json: args.json,
        shadow: args.session.shadow,
        answers: args.answers,
        log: args.session.log.log,
        approve: args.approve,
    };
    let summary = block_on(crate::app::headless::exec(config, exec))?
        .map_err(|e| session_error(e).context("running the session"))?;
    if let Some(path) = &args.output {
        let mut text = summary.final_text().to_string();
        text.push('\n');
        std::fs::write(path, text)
            .with_context(|| format!("writing the last message to {}", path.display()))?;
    }
    emit(args.json, Shape::Line, &summary, || {
        crate::app::present::summary_text(&summary)
    })?;
    Ok(summary.exit)
}
