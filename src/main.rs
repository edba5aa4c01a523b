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
        Command::Report { logs, json, csv } => report(&logs, json, csv.as_deref()),
        Command::Doctor { config, json } => doctor(config, json),
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
            let args = handoff::exec::ExecArgs {
                repo,
                task,
                json,
                shadow,
                answers,
                log,
                approve,
            };
            let summary = runtime()?
                .block_on(handoff::exec::exec(config, args))
                .context("running the session")?;
            print_summary(&summary, json)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Demo { headless } => {
            let headless = headless || !std::io::stdout().is_terminal();
            let summary = runtime()?
                .block_on(handoff::demo::run::demo(headless))
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

fn print_summary(summary: &handoff::exec::Summary, json: bool) -> anyhow::Result<()> {
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
    println!("log          {}", summary.log);
    Ok(())
}
