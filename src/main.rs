//! The `handoff` command line: parses arguments, wires config to the chosen command, and
//! turns errors into messages with context. Nothing else lives here.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Parser, Subcommand};

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
    /// Write the documented example config to the XDG config path (never overwrites).
    Init {
        /// Write here instead of the XDG config path.
        #[arg(long)]
        path: Option<PathBuf>,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => code,
        Err(err) => {
            eprintln!("handoff: {err:#}");
            ExitCode::from(2)
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Init { path } => {
            let path = match path {
                Some(p) => p,
                None => handoff::config::default_path()
                    .context("cannot find the XDG config directory")?,
            };
            handoff::config::init(&path)
                .with_context(|| format!("writing the example config to {}", path.display()))?;
            println!("wrote {}", path.display());
            Ok(ExitCode::SUCCESS)
        }
    }
}
