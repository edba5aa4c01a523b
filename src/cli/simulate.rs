//! `handoff simulate`: the synthetic study with known truth, or simulated session logs.

use std::path::PathBuf;

use anyhow::Context;

use super::args::JsonArg;
use super::output::{Shape, emit};
use crate::exit::{Exit, bad_input};
use crate::sim::World;

/// The world of the study; every default is documented in docs/results/2026-12-01-simulation-study.md.
#[derive(clap::Args)]
pub struct Args {
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Queries drawn for the study (per seed and world).
    #[arg(long, default_value_t = 40_000)]
    queries: usize,
    /// Repeat the study on seeds SEED, SEED+1, … and report 95% t intervals across them
    /// (20 for the documented study).
    #[arg(long, default_value_t = 1)]
    seeds: usize,
    /// Draws per seed and world on which the swept baselines are tuned (scored on
    /// --queries fresh ones).
    #[arg(long, default_value_t = 10_000)]
    tuning_queries: usize,
    #[command(flatten)]
    json: JsonArg,
    /// Write SVG plots (frontier, contamination, sample complexity) into DIR.
    #[arg(long, value_name = "DIR")]
    plot: Option<PathBuf>,
    /// Write this many simulated sessions as session logs into DIR instead of the study.
    #[arg(long, value_name = "DIR")]
    logs: Option<PathBuf>,
    /// Sessions written with --logs.
    #[arg(long, default_value_t = 2000)]
    sessions: usize,
    /// With --logs: a step ends every this many ticks.
    #[arg(long, default_value_t = 10)]
    tokens_per_step: u32,
    /// With --logs: sessions hand off (and are censored) where the gate fires, except that
    /// each such decision is explored with probability ε in [0, 1) and logged with its
    /// propensity — the logs `calibrate`'s inverse-propensity weighting is for. Without
    /// it every session runs in shadow mode.
    #[arg(long, value_name = "ε")]
    explore: Option<f64>,
    /// T: junior ticks per query.
    #[arg(long)]
    horizon: Option<u32>,
    /// π₀: the junior's success rate.
    #[arg(long)]
    prior: Option<f64>,
    /// κ: cost of one junior tick.
    #[arg(long)]
    kappa: Option<f64>,
    /// γ: cost of one escalation.
    #[arg(long)]
    gamma: Option<f64>,
    /// p_S: the senior's success rate.
    #[arg(long)]
    p_senior: Option<f64>,
    /// L: cost of a wrong answer.
    #[arg(long)]
    loss: Option<f64>,
    /// A signal KIND:A1,B1:A0,B0 (Beta given success, then failure); repeat for up to three.
    #[arg(long = "signal", value_name = "SPEC")]
    signals: Vec<String>,
}

impl Args {
    /// The default world with the flags given laid over it, validated.
    fn world(&self) -> anyhow::Result<World> {
        let mut world = World::default();
        if !self.signals.is_empty() {
            world.signals = self
                .signals
                .iter()
                .map(|s| s.parse())
                .collect::<Result<_, _>>()?;
        }
        let set = |target: &mut f64, value: Option<f64>| {
            if let Some(v) = value {
                *target = v;
            }
        };
        set(&mut world.prior, self.prior);
        set(&mut world.costs.kappa, self.kappa);
        set(&mut world.costs.route.gamma, self.gamma);
        set(&mut world.costs.route.p_success, self.p_senior);
        set(&mut world.costs.loss, self.loss);
        if let Some(h) = self.horizon {
            world.horizon = h;
        }
        world.validate()?;
        Ok(world)
    }
}

pub fn run(args: Args) -> anyhow::Result<Exit> {
    let world = args
        .world()
        .context("setting up the simulated world")
        .map_err(bad_input)?;
    match &args.logs {
        Some(dir) => write_logs(&world, &args, dir),
        None => study(&world, &args),
    }
}

fn write_logs(world: &World, args: &Args, dir: &std::path::Path) -> anyhow::Result<Exit> {
    if let Some(e) = args.explore
        && !(0.0..1.0).contains(&e)
    {
        return Err(bad_input(anyhow::anyhow!(
            "--explore {e}: expected a probability in [0, 1) (the share of hand-offs explored)"
        )));
    }
    let options = crate::sim::LogOptions {
        sessions: args.sessions,
        seed: args.seed,
        tokens_per_step: args.tokens_per_step,
        explore: args.explore,
        ..crate::sim::LogOptions::default()
    };
    let bar = crate::sim::progress_bar(args.sessions as u64, "writing sessions");
    let written = crate::sim::write_logs(world, dir, &options, &bar)
        .with_context(|| format!("writing simulated sessions to {}", dir.display()))?;
    bar.finish_and_clear();
    println!(
        "wrote {} sessions to {} ({} succeeded, {} crossed the threshold)",
        written.sessions,
        dir.display(),
        written.successes,
        written.escalated
    );
    Ok(Exit::Success)
}

fn study(world: &World, args: &Args) -> anyhow::Result<Exit> {
    let options = crate::sim::StudyOptions {
        seed: args.seed,
        queries: args.queries,
        seeds: args.seeds,
        tuning_queries: args.tuning_queries,
        ..crate::sim::StudyOptions::default()
    };
    let bar = crate::sim::progress_bar(0, "simulating");
    let study = crate::sim::run(world, &options, &bar).context("running the study")?;
    bar.finish_and_clear();
    if let Some(dir) = &args.plot {
        crate::sim::plot::write_all(&study, dir)
            .with_context(|| format!("writing plots to {}", dir.display()))?;
    }
    emit(args.json.json, Shape::Line, &study, || study.to_table())?;
    Ok(Exit::Success)
}
