//! `handoff exec`: one session headless; the exit code says how it ended
//! ([`Exit::for_outcome`]: 0 success or unlabelled, 1 check failed, 3 aborted).

use std::path::PathBuf;

use anyhow::Context;

use super::args::{ConfigArg, SessionArgs};
use super::output::{Shape, emit, runtime};
use crate::exit::Exit;

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    config: ConfigArg,
    /// One JSON event per line on stdout, then a summary object.
    #[arg(long)]
    json: bool,
    /// Operator answers, one JSON object per line: {"answer": "...", "needed": true}.
    #[arg(long)]
    answers: Option<PathBuf>,
    /// Approve every tool call that `agent.approval` would ask about.
    #[arg(long)]
    approve: bool,
    #[command(flatten)]
    session: SessionArgs,
}

pub fn run(args: Args) -> anyhow::Result<Exit> {
    let config = args.config.load()?;
    let exec = crate::app::headless::ExecArgs {
        repo: args.session.repo,
        task: args.session.task,
        json: args.json,
        shadow: args.session.shadow,
        answers: args.answers,
        log: args.session.log.log,
        approve: args.approve,
    };
    let summary = runtime()?
        .block_on(crate::app::headless::exec(config, exec))
        .context("running the session")?;
    emit(args.json, Shape::Line, &summary, || {
        crate::app::present::summary_text(&summary)
    })?;
    Ok(Exit::for_outcome(summary.outcome))
}
