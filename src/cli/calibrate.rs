//! `handoff calibrate`: fit the judge on logged sessions and score it on held-out ones.

use std::path::PathBuf;

use anyhow::Context;

use super::args::{Globals, JsonArg, LogInputs};
use super::output::{Shape, emit, warn_all};
use crate::exit::{Exit, bad_input};

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    inputs: LogInputs,
    /// Write the calibration JSON here (set `policy.calibration` to use it).
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    output: Option<PathBuf>,
    /// Write reliability.svg, traces.svg and auroc.svg into this directory.
    #[arg(long, value_name = "DIR")]
    plot: Option<PathBuf>,
    /// Fraction of labelled sessions held out for scoring.
    #[arg(long, default_value_t = 0.2)]
    holdout: f64,
    /// Fit on escalated (censored) sessions too.
    #[arg(long)]
    include_censored: bool,
    /// Score this calibration file as it is on the logs (no fit; every session held out),
    /// beside the built-in prior: does a calibration fitted elsewhere hold here?
    #[arg(long, value_name = "FILE", conflicts_with_all = ["output", "folds", "model"])]
    score: Option<PathBuf>,
    /// Score by k-fold cross-validation grouped by task instead of one hold-out split:
    /// every session is scored by a fit that never saw its task (small corpora).
    #[arg(long, default_value_t = 0, value_name = "K")]
    folds: usize,
    /// The belief to fit: the naive-Bayes sum (the default) or the length-robust feature
    /// model (docs/judge.md, "Long, dependent sessions").
    #[arg(long, value_enum, default_value_t = Model::Naive)]
    model: Model,
    /// Fit unweighted: do not weight sessions left uncensored by shadow exploration by
    /// their inverse propensity (for comparison; see `policy.explore`).
    #[arg(long)]
    no_ipw: bool,
    /// Read the logs as if the task had no check: drop `check_ran` and the check's step
    /// facts, to fit (or score) a judge for tasks without a test (docs/judge.md).
    #[arg(long)]
    no_check: bool,
    #[command(flatten)]
    json: JsonArg,
}

/// `--model`: which [`BeliefModel`](crate::competence::BeliefModel) `calibrate` fits.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum Model {
    Naive,
    Features,
}

impl Model {
    pub fn belief(self) -> crate::competence::BeliefModel {
        match self {
            Model::Naive => crate::competence::BeliefModel::NaiveBayes,
            Model::Features => crate::competence::BeliefModel::Features,
        }
    }
}

pub fn run(args: Args, globals: &Globals) -> anyhow::Result<Exit> {
    use crate::analysis::calibrate::{CalibrateOptions, calibrate, load_in};
    use crate::analysis::regime::Regime;
    let config = globals.load()?;
    let regime = if args.no_check {
        Regime::NoCheck
    } else {
        Regime::Check
    };
    let corpus = load_in(&args.inputs.logs, true, regime);
    if corpus.files == 0 {
        warn_all(&corpus.warnings);
        return Err(bad_input(anyhow::anyhow!(
            "no session logs found in the given paths"
        )));
    }
    let mut options = CalibrateOptions {
        holdout: args.holdout,
        include_censored: args.include_censored,
        folds: args.folds,
        ipw: !args.no_ipw,
        ..CalibrateOptions::default()
    };
    options.fit.model = args.model.belief();
    if let Some(path) = &args.score {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let given = crate::competence::Calibration::from_json(&text)
            .map_err(|e| bad_input(anyhow::anyhow!("{}: {e}", path.display())))?;
        let report = crate::analysis::calibrate::assess(
            &corpus,
            &given,
            &path.display().to_string(),
            args.include_censored,
            &config,
        )
        .context("scoring the calibration")?;
        plots(args.plot.as_deref(), &report)?;
        emit(args.json.json, Shape::Document, &report, || {
            report.to_text()
        })?;
        return Ok(Exit::Success);
    }
    // A fit that fails never reaches the report that carries the warnings: say them here,
    // so a log whose lines were skipped (a forged tick, a torn line) is named, not only
    // the "not enough data" it led to.
    let (calibration, report) = calibrate(&corpus, &options, &config)
        .inspect_err(|_| warn_all(&corpus.warnings))
        .context("fitting the calibration")?;
    if let Some(path) = &args.output {
        std::fs::write(path, calibration.to_json() + "\n")
            .with_context(|| format!("writing {}", path.display()))?;
    }
    plots(args.plot.as_deref(), &report)?;
    emit(args.json.json, Shape::Document, &report, || {
        let written = match &args.output {
            Some(path) => format!("\nwrote {}\n", path.display()),
            None => "\n(no -o FILE given: the calibration was not written)\n".to_string(),
        };
        report.to_text() + &written
    })?;
    Ok(Exit::Success)
}

/// `--plot DIR`: the reliability diagram, the belief traces and AUROC over the trajectory
/// (fitted or scored calibration beside the built-in prior).
fn plots(
    dir: Option<&std::path::Path>,
    report: &crate::analysis::calibrate::CalibrationReport,
) -> anyhow::Result<()> {
    if let Some(dir) = dir {
        let bins = report
            .holdout
            .as_ref()
            .map(|h| h.reliability.clone())
            .unwrap_or_default();
        let series = |name: &str, scores: Option<&crate::analysis::calibrate::HoldoutScores>| {
            let points = scores.map_or_else(Vec::new, |h| {
                h.by_fraction
                    .iter()
                    .filter_map(|s| {
                        let ci = s.auroc_ci.map(|c| (c.lower, c.upper));
                        s.auroc.map(|a| (s.fraction, a, ci))
                    })
                    .collect()
            });
            (name.to_string(), points)
        };
        let auroc = [
            series("fitted", report.holdout.as_ref()),
            series("built-in prior", report.builtin.as_ref()),
        ];
        crate::analysis::plot::write_all(dir, &bins, &report.traces, &auroc)
            .context("drawing the plots")?;
    }
    Ok(())
}
