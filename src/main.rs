//! The `handoff` command line: parses arguments, wires config to the chosen command, and
//! turns errors into messages with context. Nothing else lives here.

use std::path::{Path, PathBuf};
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
    /// Summarise logged sessions: outcomes, escalations, Ask-F1, cost per route, earliness.
    Report {
        /// Session logs, or directories searched for `*.jsonl` logs.
        #[arg(required = true, value_name = "LOG_OR_DIR")]
        logs: Vec<PathBuf>,
        /// Print the report as one JSON object instead of tables.
        #[arg(long)]
        json: bool,
        /// Also write one row per session and one per escalation to this CSV file.
        #[arg(long, value_name = "FILE")]
        csv: Option<PathBuf>,
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
        Command::Report { logs, json, csv } => report(&logs, json, csv.as_deref()),
    }
}

fn report(logs: &[PathBuf], json: bool, csv: Option<&Path>) -> anyhow::Result<ExitCode> {
    use handoff::trajectory::report::{Report, load};
    let corpus = load(logs);
    if corpus.files == 0 {
        for w in &corpus.warnings {
            eprintln!("warning: {w}");
        }
        anyhow::bail!("no session logs found in the given paths");
    }
    let report = Report::new(&corpus);
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&report).context("encoding the report")?
        );
    } else {
        print!("{}", report.to_table());
    }
    if let Some(path) = csv {
        let file =
            std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?;
        let mut out = std::io::BufWriter::new(file);
        handoff::trajectory::csv::write_csv(&corpus.sessions, &mut out)
            .and_then(|()| std::io::Write::flush(&mut out))
            .with_context(|| format!("writing {}", path.display()))?;
    }
    // Warnings go to stderr as well, where they are seen even when stdout is piped to jq.
    if json {
        for w in &corpus.warnings {
            eprintln!("warning: {w}");
        }
    }
    Ok(ExitCode::SUCCESS)
}
