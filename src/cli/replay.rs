//! `handoff replay`: show a logged session again, and with `--calibration`/`--policy`
//! judge it again under a different judge.

use super::args::Globals;
use std::io::IsTerminal;
use std::path::PathBuf;

use anyhow::Context;

use super::output::runtime;
use crate::exit::{Exit, bad_input};

#[derive(clap::Args)]
pub struct Args {
    log: PathBuf,
    /// Playback speed relative to the log's own timing.
    #[arg(long, default_value_t = 1.0)]
    speed: f64,
    /// Print the decisions instead of opening the TUI (automatic without a terminal).
    #[arg(long)]
    headless: bool,
    /// Re-score under this calibration file.
    #[arg(long, value_name = "FILE")]
    calibration: Option<PathBuf>,
    /// Re-score under this threshold policy: constant, constant=τ, myopic, optimal, or
    /// steps=FILE (the step schedule `handoff schedule --write FILE` wrote).
    #[arg(long, value_name = "P")]
    policy: Option<String>,
}

pub fn run(args: Args, globals: &Globals) -> anyhow::Result<Exit> {
    use crate::analysis::replay;
    let config = globals.load()?;
    let (events, warnings) = replay::load_events(&args.log)
        .with_context(|| format!("reading {}", args.log.display()))
        .map_err(bad_input)?;
    super::output::warn_all(&warnings.iter().map(ToString::to_string).collect::<Vec<_>>());
    let calibration = args.calibration.as_deref();
    let policy = args.policy.as_deref();
    let rescoring = if calibration.is_some() || policy.is_some() {
        let cf = replay::counterfactual_config(&config, calibration, policy).map_err(bad_input)?;
        let judge = replay::judge_for(&cf).context("building the counterfactual judge")?;
        let mut label = Vec::new();
        if let Some(c) = calibration {
            label.push(format!("calibration {}", c.display()));
        }
        if let Some(p) = policy {
            label.push(format!("policy {p}"));
        }
        let plain: Vec<_> = events.iter().map(|s| &s.event).collect();
        Some((
            label.join(", "),
            replay::rescore(plain, judge, cf.policy.cooldown_steps),
        ))
    } else {
        None
    };
    if args.headless || !std::io::stdout().is_terminal() {
        print!(
            "{}",
            crate::app::present::replay_text(
                &events,
                rescoring.as_ref().map(|(l, r)| (l.as_str(), r))
            )
        );
        return Ok(Exit::Success);
    }
    let cf = rescoring.map(|(l, r)| crate::app::replay::counterfactual(l, &r));
    runtime()?
        .block_on(crate::app::replay::run_tui(
            args.log, events, cf, args.speed,
        ))
        .context("running the replay UI")?;
    Ok(Exit::Success)
}
