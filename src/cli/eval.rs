//! `handoff eval`: run a suite under policies, merge shards, import HumanEval, or check
//! a suite. A run that measured nothing ([`crate::eval::TaskRun::unmeasured`]: it errored,
//! or the endpoints failed) makes the eval exit 1 and is named on stderr; a run that
//! failed its check is a result, not an error. SIGINT, SIGTERM, SIGHUP or SIGQUIT stops it at
//! once ([`crate::app::stop`]): running sessions quit (logged `aborted`), the rest do not
//! start, the outputs are written with those runs marked interrupted, and it exits 3.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use anyhow::Context;

use super::args::{Globals, JsonArg};
use super::output::{Shape, emit, runtime};
use crate::config::Config;
use crate::eval::{EvalArgs, EvalReport, Policy, Shard};
use crate::exit::{Exit, bad_input};

#[derive(clap::Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct Args {
    #[command(subcommand)]
    action: Option<Action>,
    /// The suite directory (one TOML file per task).
    #[arg(required = true)]
    suite: Option<PathBuf>,
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
    #[command(flatten)]
    json: JsonArg,
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

#[derive(clap::Subcommand)]
enum Action {
    /// The examples HumanEval's prompts state, read by the parser the session uses: what it
    /// read and could not read, whether the reference solutions pass them (--reference),
    /// and how well a logged first reply passing them predicts the hidden test (--logs).
    Examples {
        file: PathBuf,
        #[arg(long)]
        reference: bool,
        /// Session logs of an imported HumanEval suite, or directories searched for them.
        #[arg(long, num_args = 1..)]
        logs: Vec<PathBuf>,
        /// The senior's single-shot logs of the same tasks: replays "hand off when the
        /// junior's first reply fails its examples" against both models alone.
        #[arg(long, num_args = 1..)]
        senior_logs: Vec<PathBuf>,
        /// Senior tokens per junior token in the compute figure (the two models' parameter
        /// counts as the servers report them: 1,777,088,000 / 630,167,424).
        #[arg(long, default_value_t = 2.82)]
        ratio: f64,
        #[command(flatten)]
        json: JsonArg,
    },
    /// Turn HumanEval problems (.jsonl or .jsonl.gz) into a suite of repository tasks.
    ImportHumaneval {
        file: PathBuf,
        #[arg(long)]
        out: PathBuf,
    },
    /// Build a blocker suite from HumanEval (HiL-Bench's way): `make` writes a full and a
    /// blocked variant of every problem; after a single-shot run of the reference model
    /// over both, `select` keeps the tasks whose removed detail is needed.
    #[command(subcommand)]
    Blockers(BlockersAction),
    /// The simulated operator's matcher against a hand-labelled sample of real questions
    /// (JSON lines: task, policy, question, blocker, targets): agreement, false accepts,
    /// false rejects.
    Matcher {
        labels: PathBuf,
        /// Score the LLM judge (the config's senior endpoint, as `eval --llm-judge` uses)
        /// instead of the phrases.
        #[arg(long)]
        llm_judge: bool,
        #[command(flatten)]
        json: JsonArg,
    },
    /// Merge the outputs of several shards (their directories or results.json[.gz] files) into
    /// one report with the frontier and APGR over the whole suite.
    Merge {
        #[arg(required = true)]
        parts: Vec<PathBuf>,
        #[arg(long)]
        out: PathBuf,
        #[command(flatten)]
        json: JsonArg,
    },
    /// The cascade experiment offline: pair the junior's shadow logs with the senior-alone
    /// logs by task and score junior alone, senior alone, the oracle, post-hoc and
    /// streaming (constant τ, optimal schedule) swept over their parameters.
    Cascade(super::cascade::Args),
    /// Ask-F1 by who asked (the junior's own ask_operator, the judge, the loop's rules),
    /// per blocker and per session, from session logs of a suite with blockers.
    Asks {
        /// The suite the logs ran (its blockers are the truth).
        #[arg(long)]
        suite: PathBuf,
        /// Session logs, or directories searched for them.
        #[arg(required = true)]
        logs: Vec<PathBuf>,
        /// Count a question as hitting a blocker when the operator answered it so at run
        /// time, instead of re-judging it by today's strict rule.
        #[arg(long)]
        as_answered: bool,
        #[command(flatten)]
        json: JsonArg,
    },
}

#[derive(clap::Subcommand)]
enum BlockersAction {
    /// Write OUT/full, OUT/blocked (one detail removed, registered as the blocker) and
    /// OUT/candidates.json from HumanEval.jsonl(.gz).
    Make {
        file: PathBuf,
        #[arg(long)]
        out: PathBuf,
        /// Chooses which detail of each problem is removed (and the untouched draw).
        #[arg(long, default_value_t = 7)]
        seed: u64,
    },
    /// Keep the blocked tasks whose single shot passes with the detail and fails without
    /// it; add as many untouched tasks; write the suite and its selection.json.
    Select {
        /// The directory `make` wrote.
        #[arg(long)]
        from: PathBuf,
        /// results.json[.gz] (or its directory) of the single shot over OUT/full.
        #[arg(long)]
        with: PathBuf,
        /// results.json[.gz] (or its directory) of the single shot over OUT/blocked.
        #[arg(long)]
        without: PathBuf,
        #[arg(long)]
        out: PathBuf,
    },
    /// Which signal tells a missing detail from a hard step: each per-signal summary's
    /// AUROC between failing sessions on blocked and on untouched tasks of the suite.
    Signals {
        /// The blocker suite the logs ran.
        #[arg(long)]
        suite: PathBuf,
        /// Session logs, or directories searched for them.
        #[arg(required = true)]
        logs: Vec<PathBuf>,
        #[command(flatten)]
        json: JsonArg,
    },
}

fn blockers(action: BlockersAction) -> anyhow::Result<Exit> {
    match action {
        BlockersAction::Signals { suite, logs, json } => {
            let suite = crate::eval::suite::Suite::load(&suite).map_err(bad_input)?;
            let corpus = crate::analysis::calibrate::load(&logs, true);
            super::output::warn_all(&corpus.warnings);
            let table = crate::eval::missing_detail::missing_detail(&suite, &corpus.sessions);
            if table.blocked + table.untouched == 0 {
                return Err(bad_input(anyhow::anyhow!(
                    "no failing labelled session of a task of suite {} in the given paths",
                    suite.name
                )));
            }
            emit(json.json, Shape::Document, &table, || table.to_text())?;
        }
        BlockersAction::Make { file, out, seed } => {
            let problems = crate::eval::humaneval::read_problems(&file).map_err(bad_input)?;
            let source = file
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let manifest = crate::eval::blockers::make::make(&problems, seed, &source, &out)?;
            let blocked = manifest.tasks.iter().filter(|t| t.chosen.is_some()).count();
            println!(
                "wrote {} full and {blocked} blocked tasks to {} (seed {seed})",
                manifest.tasks.len(),
                out.display()
            );
        }
        BlockersAction::Select {
            from,
            with,
            without,
            out,
        } => {
            let s = crate::eval::blockers::select::select(&from, &with, &without, &out)
                .map_err(bad_input)?;
            let counts: Vec<String> = s.counts.iter().map(|(k, v)| format!("{k} {v}")).collect();
            println!("wrote {} ({})", out.display(), counts.join(", "));
        }
    }
    Ok(Exit::Success)
}

pub fn run(args: Args, globals: &Globals) -> anyhow::Result<Exit> {
    match args.action {
        Some(Action::ImportHumaneval { file, out }) => {
            let problems = crate::eval::humaneval::read_problems(&file).map_err(bad_input)?;
            let ids = crate::eval::humaneval::import(&problems, &out)?;
            println!("wrote {} tasks to {}", ids.len(), out.display());
            return Ok(Exit::Success);
        }
        Some(Action::Blockers(action)) => return blockers(action),
        Some(Action::Examples {
            file,
            reference,
            logs,
            senior_logs,
            ratio,
            json,
        }) => return examples(&file, reference, (&logs, &senior_logs, ratio), json.json),
        Some(Action::Matcher {
            labels,
            llm_judge,
            json,
        }) => {
            let sample = crate::eval::matcher::read(&labels).map_err(bad_input)?;
            let a = if llm_judge {
                let config = globals.load()?;
                let client = crate::llm::Client::new(&config.senior).map_err(bad_input)?;
                let a = runtime()?.block_on(crate::eval::matcher::llm_agreement(&client, &sample));
                if a.unjudged > 0 {
                    eprintln!(
                        "warning: the judge's endpoint failed on {} question(s); they count as refused",
                        a.unjudged
                    );
                }
                a
            } else {
                crate::eval::matcher::agreement(&sample)
            };
            emit(json.json, Shape::Document, &a, || {
                crate::eval::matcher::to_text(&a)
            })?;
            return Ok(Exit::Success);
        }
        Some(Action::Merge { parts, out, json }) => {
            let report = crate::eval::merge(&parts, &out).map_err(bad_input)?;
            return finish(&report, json.json, &out);
        }
        Some(Action::Cascade(args)) => return super::cascade::run(args, globals),
        Some(Action::Asks {
            suite,
            logs,
            as_answered,
            json,
        }) => {
            let attribution = if as_answered {
                crate::eval::origin::Attribution::AsAnswered
            } else {
                crate::eval::origin::Attribution::Strict
            };
            return asks(&suite, &logs, attribution, json.json);
        }
        None => {}
    }
    let suite = args.suite.context("name the suite directory")?;
    let config = globals.load()?;
    if args.validate {
        return validate_suite(&suite, &config, args.jobs);
    }
    let policies = args
        .policies
        .iter()
        .map(|p| Policy::parse(p))
        .collect::<Result<Vec<_>, _>>()
        .map_err(bad_input)?;
    let runtime = runtime()?;
    let stop = {
        let _inside = runtime.enter();
        crate::app::stop::Stop::on_signals().context(
            "taking over SIGINT, SIGTERM, SIGHUP and SIGQUIT to stop the sessions cleanly",
        )?
    };
    let eval = EvalArgs {
        suite,
        policies,
        sweep: args.sweep,
        baselines: args.baselines,
        shard: Shard::parse(&args.shard).map_err(bad_input)?,
        jobs: args.jobs,
        out: args.out.clone(),
        llm_judge: args.llm_judge,
        progress: !args.json.json && std::io::stderr().is_terminal(),
        stop: stop.clone(),
    };
    let report = runtime.block_on(crate::eval::eval(config, eval));
    // As for exec (`output::block_on`): a file tool of a stopped run must not hold the exit.
    runtime.shutdown_background();
    let report = report.context("running the evaluation")?;
    let exit = finish(&report, args.json.json, &args.out)?;
    // Stopped by a signal: what ran is written, and the evaluation as a whole was aborted.
    Ok(if stop.is_requested() {
        Exit::Aborted
    } else {
        exit
    })
}

/// Prints the report, names every run that errored on stderr, and decides the exit.
/// `eval examples`; `logs` is (junior logs, senior logs, the compute ratio).
fn examples(
    file: &Path,
    reference: bool,
    logs: (&[PathBuf], &[PathBuf], f64),
    json: bool,
) -> anyhow::Result<Exit> {
    use crate::eval::examples as ex;
    let (junior_logs, senior_logs, ratio) = logs;
    let problems = crate::eval::humaneval::read_problems(file).map_err(bad_input)?;
    let config = crate::config::AgentConfig::default();
    let rt = runtime()?;
    let reference = if reference {
        Some(rt.block_on(ex::reference(&problems, &config))?)
    } else {
        None
    };
    let predict = |logs: &[PathBuf]| -> anyhow::Result<_> {
        if logs.is_empty() {
            return Ok(None);
        }
        Ok(Some(rt.block_on(ex::prediction(&problems, logs, &config))?))
    };
    let junior = predict(junior_logs)?;
    let senior = predict(senior_logs)?;
    let cascade = match (&junior, &senior) {
        (Some((_, j)), Some((_, s))) => Some(ex::cascade(j, s, ratio)),
        _ => None,
    };
    let measured = ex::Measured {
        coverage: ex::coverage(&problems),
        reference,
        prediction: junior.map(|(p, _)| p),
        senior: senior.map(|(p, _)| p),
        cascade,
    };
    emit(json, Shape::Document, &measured, || ex::to_text(&measured))?;
    Ok(Exit::Success)
}

fn finish(report: &EvalReport, json: bool, out: &Path) -> anyhow::Result<Exit> {
    emit(json, Shape::Document, report, || {
        // Name only what `write_outputs` wrote: a plot needs its curve.
        let mut files = vec!["results.json", "report.txt"];
        if report.frontier.is_some() {
            files.push("frontier.svg");
        }
        if report.gap.is_some() {
            files.push("gap.svg");
        }
        format!(
            "{}\nwrote {} in {}\n",
            report.to_table(),
            files.join(", "),
            out.display()
        )
    })?;
    let errored: Vec<_> = report
        .runs
        .iter()
        .filter_map(|r| r.unmeasured().map(|why| (r, why)))
        .collect();
    for (r, why) in &errored {
        eprintln!("error: {} under {}: {why}", r.task, r.policy);
    }
    if !errored.is_empty() {
        eprintln!(
            "{} of {} runs measured nothing",
            errored.len(),
            report.runs.len()
        );
    }
    Ok(Exit::for_eval(errored.len()))
}

fn validate_suite(dir: &Path, config: &Config, jobs: usize) -> anyhow::Result<Exit> {
    let suite = crate::eval::Suite::load(dir).map_err(bad_input)?;
    let results = runtime()?.block_on(crate::eval::validate_suite(
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
        Exit::Success
    } else {
        Exit::CheckFailed
    })
}

/// `eval asks`: the questions of logged sessions split by who asked, scored on the suite's
/// blockers.
fn asks(
    suite: &std::path::Path,
    logs: &[PathBuf],
    attribution: crate::eval::origin::Attribution,
    json: bool,
) -> anyhow::Result<Exit> {
    let (sessions, scores) = blocker_asks(suite, logs, attribution)?;
    super::output::emit(json, super::output::Shape::Document, &scores, || {
        crate::eval::origin::to_text(&scores, &sessions)
    })?;
    Ok(Exit::Success)
}

/// Ask-F1 over a suite's blockers by who asked, from the session logs in `logs`: what
/// `eval asks` prints and `report --suite` adds, one computation for both. Unreadable
/// files and lines are warned about; no session of the suite is bad input.
pub(super) fn blocker_asks(
    suite: &std::path::Path,
    logs: &[PathBuf],
    attribution: crate::eval::origin::Attribution,
) -> anyhow::Result<(
    Vec<crate::eval::origin::ScoredSession>,
    Vec<crate::eval::origin::OriginScore>,
)> {
    use crate::eval::origin;
    let suite = crate::eval::suite::Suite::load(suite).map_err(bad_input)?;
    let (files, errors) = crate::log::log_files(logs);
    let (sessions, mut warnings) = origin::load_sessions(&suite, &files, attribution);
    warnings.extend(errors.iter().map(ToString::to_string));
    super::output::warn_all(&warnings);
    if sessions.is_empty() {
        return Err(bad_input(anyhow::anyhow!(
            "no session log of a task of suite {} in the given paths",
            suite.name
        )));
    }
    let scores = origin::score(&sessions);
    Ok((sessions, scores))
}
