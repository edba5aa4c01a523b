//! `handoff eval cascade`: the seed paper's cascade experiment, offline, from eval output.

use std::path::PathBuf;

use anyhow::Context;

use super::args::{Globals, JsonArg};
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
    /// A live cascade run of the streaming policy at constant τ, to check the offline
    /// assumption against: `TAU=DIR` (eval output or log directory; repeatable).
    #[arg(long, value_name = "TAU=DIR")]
    live: Vec<String>,
    /// Read the junior's logs as if the task had no check: the judge alone decides (no
    /// check facts, no hand-off on a failed check). Pair it with logs of attempts that did
    /// not see the check either (`--policy single-shot`).
    #[arg(long)]
    no_check: bool,
    /// Fit the judge K-fold by task on the junior's own logs (as `calibrate --folds`) and
    /// re-score each task with the fit that never saw it: the honest offline frontier of a
    /// fitted judge. Without it a fitted `--calibration` decides on sessions it was fitted on.
    #[arg(long, value_name = "K", conflicts_with = "calibration")]
    folds: Option<usize>,
    /// The belief model the folds fit (with --folds).
    #[arg(long, value_enum, default_value_t = super::calibrate::Model::Naive, requires = "folds")]
    model: super::calibrate::Model,
    /// Write cascade.json, cascade.txt and the frontier plots (SVG) into this directory.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    #[command(flatten)]
    json: JsonArg,
}

pub fn run(args: Args, globals: &Globals) -> anyhow::Result<Exit> {
    let mut config = globals.load()?;
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
    if args.no_check {
        sweep.regime = crate::analysis::regime::Regime::NoCheck;
    }
    let (juniors, junior_skipped) = cascade_sweep::load_stamped(&args.junior).map_err(bad_input)?;
    let (seniors, senior_skipped) = cascade_sweep::load_stamped(&args.senior).map_err(bad_input)?;
    warn_all(&junior_skipped);
    warn_all(&senior_skipped);
    let cross = match args.folds {
        None => None,
        Some(folds) => {
            use crate::analysis::calibrate::{CalibrateOptions, fold_fits, load_in};
            let corpus = load_in(&args.junior, false, sweep.regime);
            warn_all(&corpus.warnings);
            let mut options = CalibrateOptions {
                folds,
                ..CalibrateOptions::default()
            };
            options.fit.model = args.model.belief();
            let fits = fold_fits(&corpus, &options).map_err(bad_input)?;
            Some(cascade_sweep::CrossFit::new(fits))
        }
    };
    let experiment = cascade_sweep::run(&juniors, &seniors, &config, sweep, cross.as_ref())
        .map_err(bad_input)?;
    let mut live = Vec::new();
    for spec in &args.live {
        let (tau, dir) = spec
            .split_once('=')
            .and_then(|(t, d)| Some((t.trim().parse::<f64>().ok()?, PathBuf::from(d))))
            .filter(|(t, _)| t.is_finite() && (0.0..=1.0).contains(t))
            .ok_or_else(|| {
                bad_input(anyhow::anyhow!(
                    "--live {spec}: expected TAU=DIR with TAU in [0, 1], e.g. 0.5=runs/tau-0.5"
                ))
            })?;
        let (logs, skipped) = cascade_sweep::load_stamped(&[dir]).map_err(bad_input)?;
        warn_all(&skipped);
        live.push(
            cascade_sweep::live_check(&juniors, &seniors, &logs, tau, &config, &experiment.sweep)
                .map_err(bad_input)?,
        );
    }
    let text = || experiment.to_text() + &live.iter().map(|c| c.to_text()).collect::<String>();
    let output = Output {
        experiment: &experiment,
        live: &live,
    };
    if let Some(dir) = &args.out {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        let json = serde_json::to_string_pretty(&output).context("encoding the result")?;
        std::fs::write(dir.join("cascade.json"), json + "\n")
            .with_context(|| format!("writing {}", dir.join("cascade.json").display()))?;
        std::fs::write(dir.join("cascade.txt"), text())
            .with_context(|| format!("writing {}", dir.join("cascade.txt").display()))?;
        for (name, input_too) in [("cascade-all.svg", true), ("cascade-out.svg", false)] {
            crate::analysis::plot::cascade(&dir.join(name), &experiment.points, input_too)
                .context("drawing the frontiers")?;
        }
    }
    emit(args.json.json, Shape::Document, &output, text)?;
    Ok(Exit::Success)
}

/// What `eval cascade` prints and writes: the experiment, and the live checks when asked.
#[derive(serde::Serialize)]
struct Output<'a> {
    #[serde(flatten)]
    experiment: &'a cascade_sweep::Experiment,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    live: &'a [crate::analysis::cascade_live::LiveCheck],
}
