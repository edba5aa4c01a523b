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
    /// Probe the junior and senior endpoints: reachable, model listed, streaming,
    /// logprobs, tool calls, tools with logprobs; one verdict line per endpoint.
    Doctor {
        /// Config file (else $HANDOFF_CONFIG, the XDG config, built-in defaults).
        #[arg(long)]
        config: Option<PathBuf>,
        /// One JSON document instead of the table.
        #[arg(long)]
        json: bool,
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
        Command::Doctor { config, json } => doctor(config, json),
    }
}

fn doctor(config: Option<PathBuf>, json: bool) -> anyhow::Result<ExitCode> {
    let (config, source) =
        handoff::config::Config::discover(config.as_deref()).context("loading the config")?;
    let runtime = tokio::runtime::Runtime::new().context("starting the async runtime")?;
    let reports = runtime.block_on(handoff::llm::doctor::check(&config));
    if json {
        let doc = serde_json::json!({"config": source.to_string(), "endpoints": reports});
        println!(
            "{}",
            serde_json::to_string_pretty(&doc).context("writing the report")?
        );
    } else {
        println!("config: {source}\n");
        print!("{}", handoff::llm::doctor::render(&reports));
    }
    Ok(if reports.iter().all(|r| r.usable) {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
