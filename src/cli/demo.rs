//! `handoff demo`: the embedded demo, scripted models on loopback and the real judge.

use std::io::IsTerminal;

use anyhow::Context;

use super::args::LogArg;
use super::output::block_on;
use crate::exit::Exit;

#[derive(clap::Args)]
pub struct Args {
    /// Print the event summary instead of opening the TUI (automatic without a terminal).
    #[arg(long)]
    headless: bool,
    #[command(flatten)]
    log: LogArg,
}

pub fn run(args: Args) -> anyhow::Result<Exit> {
    let headless = args.headless || !std::io::stdout().is_terminal();
    let summary =
        block_on(crate::demo::run::demo(headless, args.log.log))?.context("running the demo")?;
    // The demo's session is scripted to succeed; what it shows is how, so a finished demo
    // exits 0 whatever its outcome, and a quit TUI (no summary) does too.
    if let Some(summary) = summary {
        print!("{}", crate::app::present::summary_text(&summary));
    }
    Ok(Exit::Success)
}
