//! `handoff eval`: runs a suite of tasks headless under one or more policies, with a
//! simulated operator, and scores the result the way the paper and HiL-Bench do:
//! accuracy against cost, escalations per route, Ask-F1 over registered blockers, the
//! cost–accuracy frontier of a threshold sweep and APGR against junior-only and
//! senior-only runs.
//!
//! Wiring only: sessions are `agent::session`, scores are `metrics` (frontier, APGR) and
//! [`ask`] (the blocker pooling HiL-Bench uses); every session is logged like any other,
//! so `handoff report` reads an evaluation's logs, including those of several shards.
//! Nobody sits at the keyboard, so tool calls that `agent.approval` would ask about are
//! approved (as with `exec --approve`); under `senior-only` the senior sits in the
//! junior's seat, so its money is logged on the junior's line.

pub(crate) mod ask;
pub(crate) mod blockers;
pub(crate) mod examples;
pub mod humaneval;
pub(crate) mod matcher;
pub(crate) mod missing_detail;
pub mod operator;
pub(crate) mod origin;
pub(crate) mod plot;
pub(crate) mod policy;
mod recheck;
pub(crate) mod report;
pub mod run;
pub mod suite;

use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use operator::Judge;
pub use policy::{Policy, parse_sweep};
pub use report::EvalReport;
pub use run::{TaskRun, Unit};
pub use suite::{Shard, Suite, Task};

use crate::config::Config;

/// What `handoff eval` was asked to do.
#[derive(Debug, Clone)]
pub struct EvalArgs {
    pub suite: PathBuf,
    /// Policies to run; with a sweep these come in addition to it.
    pub policies: Vec<Policy>,
    pub sweep: Option<String>,
    /// Also run junior-only and senior-only (always on with a sweep).
    pub baselines: bool,
    pub shard: Shard,
    pub jobs: usize,
    pub out: PathBuf,
    /// Judge questions with an LLM (the config's senior endpoint) instead of phrases.
    pub llm_judge: bool,
    /// Show a progress bar on stderr.
    pub progress: bool,
    /// A stop request (a signal): running sessions quit at once, the rest do not start,
    /// and what ran is written as usual ([`run::run_unit`]).
    pub stop: crate::app::stop::Stop,
}

#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    #[error(transparent)]
    Suite(#[from] suite::SuiteError),
    #[error(transparent)]
    Policy(#[from] policy::PolicyError),
    #[error("shard {0} of the suite holds no task")]
    EmptyShard(Shard),
    #[error("the LLM judge's endpoint: {0}")]
    Judge(crate::llm::LlmError),
    #[error("cannot write {path}: {cause}")]
    Write {
        path: PathBuf,
        cause: std::io::Error,
    },
    #[error(transparent)]
    Plot(#[from] plot::PlotError),
    /// Missing, not a regular file, too large or not text (see [`crate::infile`]).
    #[error("{0}")]
    File(#[from] crate::infile::InputFileError),
    #[error("{path} is not the results.json of an evaluation: {message}")]
    Results { path: PathBuf, message: String },
}

/// The policies an evaluation runs, in order, without duplicates.
pub fn policies(args: &EvalArgs) -> Result<Vec<Policy>, EvalError> {
    let mut out: Vec<Policy> = Vec::new();
    let sweep = match &args.sweep {
        Some(s) => parse_sweep(s)?,
        None => Vec::new(),
    };
    let baselines = (args.baselines || !sweep.is_empty())
        .then_some([Policy::JuniorOnly, Policy::SeniorOnly])
        .into_iter()
        .flatten();
    let explicit = if args.policies.is_empty() && sweep.is_empty() {
        vec![Policy::Configured]
    } else {
        args.policies.clone()
    };
    for p in baselines.chain(explicit).chain(sweep) {
        if !out.iter().any(|q| q.label() == p.label()) {
            out.push(p);
        }
    }
    Ok(out)
}

/// Checks every task of a suite without a model (see [`run::validate`]), `jobs` at a time.
pub async fn validate_suite(
    suite: &Suite,
    timeout_s: u64,
    jobs: usize,
) -> Vec<(String, Result<run::Validation, run::RunError>)> {
    use futures::StreamExt;
    futures::stream::iter(suite.tasks.iter())
        .map(|t| async move { (t.id.clone(), run::validate(t, timeout_s).await) })
        .buffered(jobs.max(1))
        .collect()
        .await
}

/// Where one session's log goes: `OUT/logs/<policy>/<task>.jsonl`, so shards of one
/// evaluation never write the same file and their `logs/` directories merge by copying.
pub fn log_path(out: &Path, policy: &Policy, task: &Task) -> PathBuf {
    out.join("logs")
        .join(policy.label())
        .join(format!("{}.jsonl", task.id))
}

/// Runs the evaluation and writes `results.json`, `report.txt` and the plots to `out`.
pub async fn eval(config: Config, args: EvalArgs) -> Result<EvalReport, EvalError> {
    let suite = Suite::load(&args.suite)?;
    run_suite(config, suite, &args).await
}

/// [`eval`] on a suite already loaded (and perhaps filtered); `args.suite` is not read.
pub async fn run_suite(
    config: Config,
    suite: Suite,
    args: &EvalArgs,
) -> Result<EvalReport, EvalError> {
    let suite = suite.shard(args.shard);
    if suite.tasks.is_empty() {
        return Err(EvalError::EmptyShard(args.shard));
    }
    let judge = Arc::new(if args.llm_judge {
        Judge::Llm(Box::new(
            crate::llm::Client::new(&config.senior).map_err(EvalError::Judge)?,
        ))
    } else {
        Judge::Phrases
    });
    let units: Vec<Unit> = policies(args)?
        .into_iter()
        .flat_map(|policy| suite.tasks.iter().map(move |task| (policy, task.clone())))
        .map(|(policy, task)| Unit {
            log: log_path(&args.out, &policy, &task),
            task,
            policy,
        })
        .collect();
    let bar = if args.progress {
        let bar = indicatif::ProgressBar::new(units.len() as u64);
        if let Ok(style) = indicatif::ProgressStyle::with_template(
            "{bar:30} {pos}/{len} sessions {elapsed_precise} {msg}",
        ) {
            bar.set_style(style);
        }
        bar
    } else {
        indicatif::ProgressBar::hidden()
    };
    let runs = run::run_units(&config, units, judge, args.jobs, &args.stop, |r| {
        let mark = if r.error.is_some() {
            "error"
        } else if r.passed {
            "pass"
        } else {
            "fail"
        };
        bar.set_message(format!("{} {} {mark}", r.policy, r.task));
        bar.inc(1);
    })
    .await;
    bar.finish_and_clear();
    let report = EvalReport::new(&suite.name, &args.shard.to_string(), suite.blockers(), runs);
    write_outputs(&report, &args.out)?;
    Ok(report)
}

/// Reads the `results.json` of several shard outputs and writes the merged report to
/// `out` (see [`EvalReport::merge`]). A directory may hold `results.json.gz` instead, as
/// the committed corpora under `data/real/` do, so their tables regenerate from the files
/// in the repository.
pub fn merge(dirs: &[PathBuf], out: &Path) -> Result<EvalReport, EvalError> {
    let mut parts = Vec::new();
    for dir in dirs {
        let path = results_file(dir);
        let text = read_text(&path)?;
        let part: EvalReport = serde_json::from_str(&text).map_err(|e| EvalError::Results {
            path: path.clone(),
            message: e.to_string(),
        })?;
        parts.push(part);
    }
    let report = EvalReport::merge(parts);
    write_outputs(&report, out)?;
    Ok(report)
}

/// The results a shard output holds: `path` itself when it is a file; in a directory its
/// `results.json`, or `results.json.gz` when only that is there (the committed corpora).
pub(crate) fn results_file(path: &Path) -> PathBuf {
    if !path.is_dir() {
        return path.to_path_buf();
    }
    let plain = path.join("results.json");
    let zipped = path.join("results.json.gz");
    if !plain.exists() && zipped.exists() {
        zipped
    } else {
        plain
    }
}

/// The largest results text read, after gunzip (a 164-task, five-policy shard is a few MB).
pub const MAX_RESULTS_BYTES: u64 = 256 << 20;

/// A results file's text, gunzipped when its name ends in `.gz`: a regular file opened
/// without blocking, read (and inflated) to at most [`MAX_RESULTS_BYTES`].
pub(crate) fn read_text(path: &Path) -> Result<String, crate::infile::InputFileError> {
    use crate::infile::{self, InputFileError};
    const EXPECTED: &str = "a results.json[.gz] file";
    let bytes = if path.extension().is_some_and(|e| e == "gz") {
        let file = infile::open(path, EXPECTED)?;
        let inflated = flate2::read::MultiGzDecoder::new(file);
        infile::read_capped(inflated, path, MAX_RESULTS_BYTES, EXPECTED)?
    } else {
        infile::read_bytes(path, MAX_RESULTS_BYTES, EXPECTED)?
    };
    String::from_utf8(bytes).map_err(|_| InputFileError::NotText {
        path: path.to_path_buf(),
        expected: EXPECTED,
    })
}

/// Writes `results.json`, `report.txt` and the plots.
pub fn write_outputs(report: &EvalReport, out: &Path) -> Result<(), EvalError> {
    let write = |name: &str, text: String| {
        let path = out.join(name);
        std::fs::create_dir_all(out)
            .and_then(|()| std::fs::write(&path, text))
            .map_err(|cause| EvalError::Write { path, cause })
    };
    write(
        "results.json",
        serde_json::to_string_pretty(report).unwrap_or_default(),
    )?;
    write("report.txt", report.to_table())?;
    if let Some(curve) = &report.frontier {
        plot::frontier_svg(curve, &out.join("frontier.svg"))?;
    }
    if let Some(gap) = &report.gap {
        plot::gap_svg(gap, &out.join("gap.svg"))?;
    }
    Ok(())
}
