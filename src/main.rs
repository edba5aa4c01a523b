//! The `handoff` command line: parses arguments, wires config to the chosen command, and
//! turns errors into messages with context. Nothing else lives here.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use clap::{Parser, Subcommand};

use handoff::config::Config;

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
    /// Run the embedded demo: a sample repo, scripted models on loopback, the real judge.
    Demo {
        /// Print the event summary instead of opening the TUI (automatic without a terminal).
        #[arg(long)]
        headless: bool,
        /// Where to write the session log (default: the XDG data dir's sessions/).
        #[arg(long)]
        log: Option<PathBuf>,
    },
    /// Run one session in the terminal UI: watch the judge, answer questions, approve writes.
    Run {
        /// The git repository to work in.
        #[arg(long, default_value = ".")]
        repo: PathBuf,
        #[arg(long)]
        config: Option<PathBuf>,
        /// Compute and log every decision, never hand off.
        #[arg(long)]
        shadow: bool,
        /// Where to write the session log (default: the XDG data dir's sessions/).
        #[arg(long)]
        log: Option<PathBuf>,
        /// What the junior should do.
        task: String,
    },
    /// Run one session headless: events on stderr (or JSON lines on stdout), then a summary.
    Exec {
        /// The git repository to work in.
        #[arg(long, default_value = ".")]
        repo: PathBuf,
        #[arg(long)]
        config: Option<PathBuf>,
        /// One JSON event per line on stdout, then a summary object.
        #[arg(long)]
        json: bool,
        /// Compute and log every decision, never hand off.
        #[arg(long)]
        shadow: bool,
        /// Operator answers, one JSON object per line: {"answer": "...", "needed": true}.
        #[arg(long)]
        answers: Option<PathBuf>,
        /// Where to write the session log (default: the XDG data dir's sessions/).
        #[arg(long)]
        log: Option<PathBuf>,
        /// Approve every tool call that `agent.approval` would ask about.
        #[arg(long)]
        approve: bool,
        /// What the junior should do.
        task: String,
    },
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
    /// Run a task suite headless under one or more policies with a simulated operator, and
    /// score accuracy, cost, escalations, Ask-F1, the cost–accuracy frontier and APGR.
    Eval(EvalCli),
    /// The paper's synthetic study with known truth: policies side by side, contamination,
    /// sample complexity; or, with --logs, simulated sessions written as session logs.
    Simulate(SimulateArgs),
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
    /// Fit the judge on logged sessions and score it on held-out ones.
    Calibrate {
        /// Session logs, or directories searched for `*.jsonl` logs.
        #[arg(required = true, value_name = "LOG_OR_DIR")]
        logs: Vec<PathBuf>,
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
        /// Print the report as one JSON object.
        #[arg(long)]
        json: bool,
        /// Config whose costs and token budget the threshold schedule is solved for.
        #[arg(long)]
        config: Option<PathBuf>,
    },
    /// SessionJudge a logged session again; with --calibration/--policy, judge it again too.
    Replay {
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
        /// Re-score under this threshold policy: constant, constant=τ, myopic, optimal.
        #[arg(long, value_name = "P")]
        policy: Option<String>,
        #[arg(long)]
        config: Option<PathBuf>,
    },
}

#[derive(clap::Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
struct EvalCli {
    #[command(subcommand)]
    action: Option<EvalAction>,
    /// The suite directory (one TOML file per task).
    #[arg(required = true)]
    suite: Option<PathBuf>,
    #[arg(long)]
    config: Option<PathBuf>,
    /// constant, myopic, optimal, junior-only, senior-only, configured or a number τ;
    /// repeatable (default: the configured policy).
    #[arg(long = "policy", value_name = "P")]
    policies: Vec<String>,
    /// A constant-threshold sweep, e.g. threshold=0.1:0.9:0.1 (adds both baselines).
    #[arg(long)]
    sweep: Option<String>,
    /// Also run junior-only and senior-only, for APGR.
    #[arg(long)]
    baselines: bool,
    /// Run only slice i of n (0-based), e.g. $SLURM_ARRAY_TASK_ID/$N.
    #[arg(long, default_value = "0/1")]
    shard: String,
    /// Sessions run at the same time.
    #[arg(long, default_value_t = 1)]
    jobs: usize,
    /// Print the report as one JSON object.
    #[arg(long)]
    json: bool,
    /// Directory for logs, results.json, report.txt and the SVG plots.
    #[arg(long, default_value = "eval-out")]
    out: PathBuf,
    /// Judge operator questions with the config's senior model instead of phrase matching.
    #[arg(long)]
    llm_judge: bool,
    /// Check the suite instead of running models: every template must fail its check and
    /// every reference solution pass it.
    #[arg(long)]
    validate: bool,
}

#[derive(Subcommand)]
enum EvalAction {
    /// Turn HumanEval problems (.jsonl or .jsonl.gz) into a suite of repository tasks.
    ImportHumaneval {
        file: PathBuf,
        #[arg(long)]
        out: PathBuf,
    },
    /// Merge the outputs of several shards (their directories or results.json files) into
    /// one report with the frontier and APGR over the whole suite.
    Merge {
        #[arg(required = true)]
        parts: Vec<PathBuf>,
        #[arg(long)]
        out: PathBuf,
        /// Print the report as one JSON object.
        #[arg(long)]
        json: bool,
    },
}

/// The world of `handoff simulate`; every default is documented in the README.
#[derive(clap::Args)]
struct SimulateArgs {
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Queries drawn for the study.
    #[arg(long, default_value_t = 40_000)]
    queries: usize,
    /// Print exactly one JSON object instead of tables.
    #[arg(long)]
    json: bool,
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

impl SimulateArgs {
    fn world(&self) -> anyhow::Result<handoff::sim::World> {
        let mut world = handoff::sim::World::default();
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

fn simulate(args: &SimulateArgs) -> anyhow::Result<ExitCode> {
    let world = args.world().context("setting up the simulated world")?;
    let Some(dir) = &args.logs else {
        return study(&world, args);
    };
    let options = handoff::sim::LogOptions {
        sessions: args.sessions,
        seed: args.seed,
        tokens_per_step: args.tokens_per_step,
        ..handoff::sim::LogOptions::default()
    };
    let bar = handoff::sim::progress_bar(args.sessions as u64, "writing sessions");
    let written = handoff::sim::write_logs(&world, dir, &options, &bar)
        .with_context(|| format!("writing simulated sessions to {}", dir.display()))?;
    bar.finish_and_clear();
    println!(
        "wrote {} sessions to {} ({} succeeded, {} crossed the threshold)",
        written.sessions,
        dir.display(),
        written.successes,
        written.escalated
    );
    Ok(ExitCode::SUCCESS)
}

fn study(world: &handoff::sim::World, args: &SimulateArgs) -> anyhow::Result<ExitCode> {
    let options = handoff::sim::StudyOptions {
        seed: args.seed,
        queries: args.queries,
        ..handoff::sim::StudyOptions::default()
    };
    let bar = handoff::sim::progress_bar(0, "simulating");
    let study = handoff::sim::run(world, &options, &bar).context("running the study")?;
    bar.finish_and_clear();
    if let Some(dir) = &args.plot {
        handoff::sim::plot::write_all(&study, dir)
            .with_context(|| format!("writing plots to {}", dir.display()))?;
    }
    if args.json {
        println!(
            "{}",
            serde_json::to_string(&study).context("encoding the study")?
        );
    } else {
        print!("{}", study.to_table());
    }
    Ok(ExitCode::SUCCESS)
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

fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")
}

fn load_config(explicit: Option<&std::path::Path>) -> anyhow::Result<Config> {
    let (config, _source) = Config::discover(explicit).context("loading the configuration")?;
    Ok(config)
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
        Command::Eval(cli) => eval(cli),
        Command::Simulate(args) => simulate(&args),
        Command::Report { logs, json, csv } => report(&logs, json, csv.as_deref()),
        Command::Doctor { config, json } => doctor(config, json),
        Command::Calibrate {
            logs,
            output,
            plot,
            holdout,
            include_censored,
            json,
            config,
        } => calibrate(
            &logs,
            output.as_deref(),
            plot.as_deref(),
            holdout,
            include_censored,
            json,
            config.as_deref(),
        ),
        Command::Replay {
            log,
            speed,
            headless,
            calibration,
            policy,
            config,
        } => replay(
            log,
            speed,
            headless,
            calibration.as_deref(),
            policy.as_deref(),
            config.as_deref(),
        ),
        Command::Exec {
            repo,
            config,
            json,
            shadow,
            answers,
            log,
            approve,
            task,
        } => {
            let config = load_config(config.as_deref())?;
            let args = handoff::app::headless::ExecArgs {
                repo,
                task,
                json,
                shadow,
                answers,
                log,
                approve,
            };
            let summary = runtime()?
                .block_on(handoff::app::headless::exec(config, args))
                .context("running the session")?;
            print_summary(&summary, json)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Run {
            repo,
            config,
            shadow,
            log,
            task,
        } => {
            let mut config = load_config(config.as_deref())?;
            config.policy.shadow |= shadow;
            let rt = runtime()?;
            let reason = rt
                .block_on(async {
                    let prepared = handoff::app::wiring::prepare(
                        config,
                        &repo,
                        &task,
                        handoff::agent::session::Approvals::Interactive,
                        log,
                    )?;
                    let log = prepared.log_path.clone();
                    let reason = handoff::app::interactive::run_tui(prepared, None).await?;
                    Ok::<_, anyhow::Error>((reason, log))
                })
                .context("running the session")?;
            eprintln!("session log: {}", reason.1.display());
            Ok(ExitCode::SUCCESS)
        }
        Command::Demo { headless, log } => {
            let headless = headless || !std::io::stdout().is_terminal();
            let summary = runtime()?
                .block_on(handoff::demo::run::demo(headless, log))
                .context("running the demo")?;
            if let Some(summary) = summary {
                print_summary(&summary, false)?;
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn eval(cli: EvalCli) -> anyhow::Result<ExitCode> {
    use handoff::eval::{EvalArgs, Policy, Shard};
    match cli.action {
        Some(EvalAction::ImportHumaneval { file, out }) => {
            let problems = handoff::eval::humaneval::read_problems(&file)?;
            let ids = handoff::eval::humaneval::import(&problems, &out)?;
            println!("wrote {} tasks to {}", ids.len(), out.display());
            return Ok(ExitCode::SUCCESS);
        }
        Some(EvalAction::Merge { parts, out, json }) => {
            let report = handoff::eval::merge(&parts, &out)?;
            print_eval(&report, json, &out)?;
            return Ok(ExitCode::SUCCESS);
        }
        None => {}
    }
    let suite = cli.suite.context("name the suite directory")?;
    let config = load_config(cli.config.as_deref())?;
    if cli.validate {
        return validate_suite(&suite, &config, cli.jobs);
    }
    let policies = cli
        .policies
        .iter()
        .map(|p| Policy::parse(p))
        .collect::<Result<Vec<_>, _>>()?;
    let args = EvalArgs {
        suite,
        policies,
        sweep: cli.sweep,
        baselines: cli.baselines,
        shard: Shard::parse(&cli.shard)?,
        jobs: cli.jobs,
        out: cli.out,
        llm_judge: cli.llm_judge,
        progress: !cli.json && std::io::stderr().is_terminal(),
    };
    let out = args.out.clone();
    let report = runtime()?
        .block_on(handoff::eval::eval(config, args))
        .context("running the evaluation")?;
    print_eval(&report, cli.json, &out)?;
    Ok(ExitCode::SUCCESS)
}

fn print_eval(report: &handoff::eval::EvalReport, json: bool, out: &Path) -> anyhow::Result<()> {
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(report).context("encoding the report")?
        );
    } else {
        print!("{}", report.to_table());
        println!("\nresults.json, report.txt and plots in {}", out.display());
    }
    Ok(())
}

fn validate_suite(dir: &Path, config: &Config, jobs: usize) -> anyhow::Result<ExitCode> {
    let suite = handoff::eval::Suite::load(dir)?;
    let results = runtime()?.block_on(handoff::eval::validate_suite(
        &suite,
        config.agent.command_timeout_s,
        jobs,
    ));
    let mut sound = true;
    for (id, r) in &results {
        let verdict = match r {
            Ok(v) if v.template_fails && v.solution_passes != Some(false) => "ok".to_string(),
            Ok(v) => {
                sound = false;
                format!(
                    "UNSOUND (template fails: {}, solution passes: {:?})",
                    v.template_fails, v.solution_passes
                )
            }
            Err(e) => {
                sound = false;
                format!("ERROR {e}")
            }
        };
        println!("{id:<24} {verdict}");
    }
    Ok(if sound {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

fn doctor(config: Option<PathBuf>, json: bool) -> anyhow::Result<ExitCode> {
    let (config, source) = Config::discover(config.as_deref()).context("loading the config")?;
    let reports = runtime()?.block_on(handoff::llm::doctor::check(&config));
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

fn report(logs: &[PathBuf], json: bool, csv: Option<&Path>) -> anyhow::Result<ExitCode> {
    use handoff::analysis::report::{Report, load};
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
        handoff::analysis::csv::write_csv(&corpus.sessions, &mut out)
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

fn calibrate(
    logs: &[PathBuf],
    output: Option<&Path>,
    plot: Option<&Path>,
    holdout: f64,
    include_censored: bool,
    json: bool,
    config: Option<&Path>,
) -> anyhow::Result<ExitCode> {
    use handoff::analysis::calibrate::{CalibrateOptions, calibrate, load};
    let config = load_config(config)?;
    let corpus = load(logs, true);
    if corpus.files == 0 {
        for w in &corpus.warnings {
            eprintln!("warning: {w}");
        }
        anyhow::bail!("no session logs found in the given paths");
    }
    let options = CalibrateOptions {
        holdout,
        include_censored,
        ..CalibrateOptions::default()
    };
    let (calibration, report) =
        calibrate(&corpus, &options, &config).context("fitting the calibration")?;
    if let Some(path) = output {
        std::fs::write(path, calibration.to_json() + "\n")
            .with_context(|| format!("writing {}", path.display()))?;
    }
    if let Some(dir) = plot {
        let bins = report
            .holdout
            .as_ref()
            .map(|h| h.reliability.clone())
            .unwrap_or_default();
        handoff::analysis::plot::write_all(dir, &bins, &report.traces)
            .context("drawing the plots")?;
    }
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&report).context("encoding the report")?
        );
    } else {
        print!("{}", report.to_text());
        match output {
            Some(path) => println!("\nwrote {}", path.display()),
            None => println!("\n(no -o FILE given: the calibration was not written)"),
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn replay(
    log: PathBuf,
    speed: f64,
    headless: bool,
    calibration: Option<&Path>,
    policy: Option<&str>,
    config: Option<&Path>,
) -> anyhow::Result<ExitCode> {
    use handoff::analysis::replay;
    let config = load_config(config)?;
    let (events, warnings) =
        replay::load_events(&log).with_context(|| format!("reading {}", log.display()))?;
    for w in &warnings {
        eprintln!("warning: {w}");
    }
    let rescoring = if calibration.is_some() || policy.is_some() {
        let cf = replay::counterfactual_config(&config, calibration, policy)?;
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
    if headless || !std::io::stdout().is_terminal() {
        print!(
            "{}",
            replay::headless_text(&events, rescoring.as_ref().map(|(l, r)| (l.as_str(), r)))
        );
        return Ok(ExitCode::SUCCESS);
    }
    let cf = rescoring.map(|(l, r)| handoff::app::replay::counterfactual(l, &r));
    runtime()?
        .block_on(handoff::app::replay::run_tui(log, events, cf, speed))
        .context("running the replay UI")?;
    Ok(ExitCode::SUCCESS)
}

fn print_summary(summary: &handoff::app::headless::Summary, json: bool) -> anyhow::Result<()> {
    if json {
        println!(
            "{}",
            serde_json::to_string(summary).context("encoding the summary")?
        );
        return Ok(());
    }
    println!("outcome      {:?}", summary.outcome);
    println!("steps        {}", summary.steps);
    for e in &summary.escalations {
        println!(
            "escalation   step {} → {:?} ({:?}{}) B_t {:.3} < τ_t {:.3}",
            e.step,
            e.route,
            e.reason,
            if e.shadow { ", shadow" } else { "" },
            e.belief,
            e.threshold
        );
    }
    println!(
        "cost         ${:.4} (junior ${:.4}, senior ${:.4})",
        summary.cost.usd, summary.cost.junior_usd, summary.cost.senior_usd
    );
    println!(
        "ask          tp {} fp {} fn {}",
        summary.ask.tp, summary.ask.fp, summary.ask.fn_
    );
    if summary.protected_touched > 0 {
        println!(
            "protected    {} step(s) tried to change protected files (undone)",
            summary.protected_touched
        );
    }
    println!("log          {}", summary.log);
    Ok(())
}
