//! `handoff report`: summarise logged sessions.

use anyhow::Context;

use super::args::{JsonArg, LogInputs};
use super::output::{Shape, emit, warn_all};
use crate::exit::{Exit, bad_input};

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    inputs: LogInputs,
    #[command(flatten)]
    json: JsonArg,
    /// Also write one row per session and one per escalation to this CSV file.
    #[arg(long, value_name = "FILE")]
    csv: Option<std::path::PathBuf>,
    /// The suite these logs ran: also score the questions against its registered
    /// blockers by who asked, with intervals (the numbers `eval asks` prints).
    #[arg(long, value_name = "DIR")]
    suite: Option<std::path::PathBuf>,
}

/// The report with the blocker Ask-F1 of `--suite` beside it.
#[derive(serde::Serialize)]
struct WithAsks<'a> {
    #[serde(flatten)]
    report: &'a crate::analysis::report::Report,
    asks_by_origin: Vec<crate::eval::origin::OriginScore>,
}

pub fn run(args: Args) -> anyhow::Result<Exit> {
    use crate::analysis::report::{Report, load};
    let corpus = load(&args.inputs.logs);
    if corpus.files == 0 {
        warn_all(&corpus.warnings);
        return Err(bad_input(anyhow::anyhow!(
            "no session logs found in the given paths"
        )));
    }
    if corpus.sessions.is_empty() {
        // Garbage, an empty file or a log from a later version: say why on stderr and exit
        // as bad input, never "0 sessions" with success.
        warn_all(&corpus.warnings);
        return Err(bad_input(anyhow::anyhow!(
            "no session could be read from the {} log file(s) given",
            corpus.files
        )));
    }
    let report = Report::new(&corpus);
    match &args.suite {
        None => emit(args.json.json, Shape::Document, &report, || {
            report.to_table()
        })?,
        Some(suite) => {
            let strict = crate::eval::origin::Attribution::Strict;
            let (sessions, scores) = super::eval::blocker_asks(suite, &args.inputs.logs, strict)?;
            let text = || {
                format!(
                    "{}\nAsk-F1 over the blockers of {} (as `eval asks`):\n{}",
                    report.to_table(),
                    suite.display(),
                    crate::eval::origin::to_text(&scores, &sessions)
                )
            };
            let doc = WithAsks {
                report: &report,
                asks_by_origin: scores.clone(),
            };
            emit(args.json.json, Shape::Document, &doc, text)?;
        }
    }
    if let Some(path) = &args.csv {
        let file =
            std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?;
        let mut out = std::io::BufWriter::new(file);
        crate::analysis::csv::write_csv(&corpus.sessions, &mut out)
            .and_then(|()| std::io::Write::flush(&mut out))
            .with_context(|| format!("writing {}", path.display()))?;
    }
    // The table prints its warnings itself; JSON on stdout must stay one document.
    if args.json.json {
        warn_all(&corpus.warnings);
    }
    Ok(Exit::Success)
}
