//! `handoff eval cascade`: the seed paper's cascade experiment, offline, from eval output.

use std::path::PathBuf;

use anyhow::Context;

use super::args::{ConfigArg, JsonArg};
use super::output::{Shape, emit, warn_all};
use crate::analysis::cascade_sweep::{self, Sweep};
use crate::exit::{Exit, bad_input};

#[derive(clap::Args)]
pub struct Args {
    /// Eval output directories (or log directories) of the junior in shadow mode.
    #[arg(long, required = true, num_args = 1..)]
    junior: Vec<PathBuf>,
    /// Eval output directories (or log directories) of the senior alone on the same tasks.
    #[arg(long, required = true, num_args = 1..)]
    senior: Vec<PathBuf>,
    /// The calibration the judge re-scores the junior's logs with (else the config's).
    #[arg(long, value_name = "FILE")]
    calibration: Option<PathBuf>,
    /// Senior tokens × this = junior-token equivalents (default 1.54 B / 0.49 B).
    #[arg(long)]
    ratio: Option<f64>,
    /// Write cascade.json, cascade.txt and the frontier plots (SVG) into this directory.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    #[command(flatten)]
    json: JsonArg,
    #[command(flatten)]
    config: ConfigArg,
}

pub fn run(args: Args) -> anyhow::Result<Exit> {
    let mut config = args.config.load()?;
    if let Some(path) = &args.calibration {
        config.policy.calibration = Some(path.clone());
    }
    let mut sweep = Sweep::default();
    if let Some(r) = args.ratio {
        if !(r.is_finite() && r > 0.0) {
            return Err(bad_input(anyhow::anyhow!(
                "--ratio must be a positive number, got {r}"
            )));
        }
        sweep.ratio = r;
    }
    let (juniors, junior_skipped) = cascade_sweep::load_logs(&args.junior).map_err(bad_input)?;
    let (seniors, senior_skipped) = cascade_sweep::load_logs(&args.senior).map_err(bad_input)?;
    warn_all(&junior_skipped);
    warn_all(&senior_skipped);
    let experiment = cascade_sweep::run(&juniors, &seniors, &config, sweep).map_err(bad_input)?;
    if let Some(dir) = &args.out {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        let json = serde_json::to_string_pretty(&experiment).context("encoding the result")?;
        std::fs::write(dir.join("cascade.json"), json + "\n")
            .with_context(|| format!("writing {}", dir.join("cascade.json").display()))?;
        std::fs::write(dir.join("cascade.txt"), experiment.to_text())
            .with_context(|| format!("writing {}", dir.join("cascade.txt").display()))?;
        for (name, input_too) in [("cascade-all.svg", true), ("cascade-out.svg", false)] {
            crate::analysis::plot::cascade(&dir.join(name), &experiment.points, input_too)
                .context("drawing the frontiers")?;
        }
    }
    emit(args.json.json, Shape::Document, &experiment, || {
        experiment.to_text()
    })?;
    Ok(Exit::Success)
}
