//! `handoff calibrate`: fit the judge on logged sessions and score it on held-out ones.

use std::path::PathBuf;

use anyhow::Context;

use super::args::{ConfigArg, JsonArg, LogInputs};
use super::output::{Shape, emit, warn_all};
use crate::exit::{Exit, bad_input};

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    inputs: LogInputs,
    /// Write the calibration JSON here (set `policy.calibration` to use it).
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    output: Option<PathBuf>,
    /// Write reliability.svg and traces.svg into this directory.
    #[arg(long, value_name = "DIR")]
    plot: Option<PathBuf>,
    /// Fraction of labelled sessions held out for scoring.
    #[arg(long, default_value_t = 0.2)]
    holdout: f64,
    /// Fit on escalated (censored) sessions too.
    #[arg(long)]
    include_censored: bool,
    /// Fit unweighted: do not weight sessions left uncensored by shadow exploration by
    /// their inverse propensity (for comparison; see `policy.explore`).
    #[arg(long)]
    no_ipw: bool,
    #[command(flatten)]
    json: JsonArg,
    /// Config whose costs and token budget the threshold schedule is solved for.
    #[command(flatten)]
    config: ConfigArg,
}

pub fn run(args: Args) -> anyhow::Result<Exit> {
    use crate::analysis::calibrate::{CalibrateOptions, calibrate, load};
    let config = args.config.load()?;
    let corpus = load(&args.inputs.logs, true);
    if corpus.files == 0 {
        warn_all(&corpus.warnings);
        return Err(bad_input(anyhow::anyhow!(
            "no session logs found in the given paths"
        )));
    }
    let options = CalibrateOptions {
        holdout: args.holdout,
        include_censored: args.include_censored,
        ipw: !args.no_ipw,
        ..CalibrateOptions::default()
    };
    let (calibration, report) =
        calibrate(&corpus, &options, &config).context("fitting the calibration")?;
    if let Some(path) = &args.output {
        std::fs::write(path, calibration.to_json() + "\n")
            .with_context(|| format!("writing {}", path.display()))?;
    }
    if let Some(dir) = &args.plot {
        let bins = report
            .holdout
            .as_ref()
            .map(|h| h.reliability.clone())
            .unwrap_or_default();
        crate::analysis::plot::write_all(dir, &bins, &report.traces)
            .context("drawing the plots")?;
    }
    emit(args.json.json, Shape::Document, &report, || {
        let written = match &args.output {
            Some(path) => format!("\nwrote {}\n", path.display()),
            None => "\n(no -o FILE given: the calibration was not written)\n".to_string(),
        };
        report.to_text() + &written
    })?;
    Ok(Exit::Success)
}
