//! The cascade experiment over eval output directories: reads the junior's shadow logs and
//! the senior-alone logs, re-scores every junior log under each threshold of the sweep, and
//! scores every policy of [`super::cascade`]. Reads logs; decides nothing itself.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::cascade::{self, JuniorRun, Point, SeniorRun, TaskPair};
use super::regime::Regime;
use super::replay::{ReplayError, counterfactual_config, judge_for, load_events, rescore};
use super::wall::WallTrace;
use crate::competence::{CompetenceError, Judge};
use crate::config::{Config, ThresholdKind};
use crate::log::LogError;
use crate::protocol::{Event, Stamped};

/// The parameters swept: τ for the constant threshold and post-hoc, κ for the schedule.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Sweep {
    pub taus: Vec<f64>,
    pub kappas: Vec<f64>,
    /// Senior tokens × this = junior-token equivalents.
    pub ratio: f64,
    /// Whether the judge sees the task's check.
    pub regime: Regime,
}

impl Default for Sweep {
    fn default() -> Self {
        Sweep {
            taus: vec![
                0.005, 0.01, 0.02, 0.03, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9,
            ],
            kappas: vec![1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2],
            // The ratio: 1.54 B / 0.49 B non-embedding parameters (model cards).
            ratio: 1.54 / 0.49,
            regime: Regime::Check,
        }
    }
}

/// The experiment's result, as printed and written.
#[derive(Debug, Clone, Serialize)]
pub struct Experiment {
    pub tasks: usize,
    pub junior_passed: usize,
    pub senior_passed: usize,
    /// Task ids with a log on one side only (left out).
    pub unpaired: Vec<String>,
    pub assumption: &'static str,
    pub sweep: Sweep,
    pub points: Vec<Point>,
    /// Policies left out, and why (the optimal schedule under a feature calibration).
    pub notes: Vec<String>,
    /// Folds of the out-of-fold judges (0: one judge, the config's calibration, for all).
    pub cross_fitted: usize,
}

pub const ASSUMPTION: &str = "after a hand-off at any point the senior ends the task as it did \
alone, at the compute it spent alone; the junior's compute up to the hand-off is added";

#[derive(Debug, thiserror::Error)]
pub enum CascadeError {
    #[error("{path}: {source}")]
    Dir {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(transparent)]
    Log(#[from] LogError),
    #[error(transparent)]
    Replay(#[from] ReplayError),
    #[error("no task has both a junior and a senior log ({junior} junior, {senior} senior logs)")]
    NoPairs { junior: usize, senior: usize },
}

/// Every session log under `dirs`, by task id (an eval output directory keeps them as
/// `logs/<policy>/<task>.jsonl[.gz]`; a directory of logs is read as it is), and the lines
/// that had to be skipped, for the caller to print.
pub type Logs = (BTreeMap<String, Vec<Event>>, Vec<String>);

/// [`Logs`] with each event's time stamp, for the wall-time columns.
pub type StampedLogs = (BTreeMap<String, Vec<Stamped>>, Vec<String>);

pub fn load_logs(dirs: &[PathBuf]) -> Result<Logs, CascadeError> {
    let (stamped, skipped) = load_stamped(dirs)?;
    let events = stamped
        .into_iter()
        .map(|(task, s)| (task, s.into_iter().map(|s| s.event).collect()))
        .collect();
    Ok((events, skipped))
}

pub fn load_stamped(dirs: &[PathBuf]) -> Result<StampedLogs, CascadeError> {
    let mut out = BTreeMap::new();
    let mut skipped = Vec::new();
    for dir in dirs {
        let mut files = Vec::new();
        collect(dir, &mut files, 3)?;
        for file in files {
            let Some(task) = task_id(&file) else { continue };
            let (events, warnings) = load_events(&file)?;
            skipped.extend(warnings.iter().map(ToString::to_string));
            out.insert(task, events);
        }
    }
    Ok((out, skipped))
}

fn collect(dir: &Path, files: &mut Vec<PathBuf>, depth: u32) -> Result<(), CascadeError> {
    let io = |source| CascadeError::Dir {
        path: dir.to_path_buf(),
        source,
    };
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(io)?
        .map(|e| e.map(|e| e.path()))
        .collect::<Result<_, _>>()
        .map_err(io)?;
    entries.sort();
    for path in entries {
        let meta = std::fs::symlink_metadata(&path).map_err(|source| CascadeError::Dir {
            path: path.clone(),
            source,
        })?;
        if meta.is_dir() && depth > 0 {
            collect(&path, files, depth - 1)?;
        } else if meta.is_file() && task_id(&path).is_some() {
            files.push(path);
        }
    }
    Ok(())
}

fn task_id(path: &Path) -> Option<String> {
    let name = path.file_name()?.to_str()?;
    let stem = name
        .strip_suffix(".jsonl.gz")
        .or_else(|| name.strip_suffix(".jsonl"))?;
    Some(stem.to_string())
}

/// The junior's and the senior's runs of each task both have a log of, and the tasks with
/// a log on one side only.
fn pairs_of(
    juniors: &BTreeMap<String, Vec<Stamped>>,
    seniors: &BTreeMap<String, Vec<Stamped>>,
) -> (Vec<TaskPair>, Vec<String>) {
    let junior_runs = juniors
        .iter()
        .map(|(t, e)| {
            let mut run = JuniorRun::from_events(e.iter().map(|s| &s.event));
            run.wall = WallTrace::of(e);
            (t.clone(), run)
        })
        .collect();
    let senior_runs = seniors
        .iter()
        .map(|(t, e)| {
            let mut run = SeniorRun::from_events(e.iter().map(|s| &s.event));
            run.wall = WallTrace::of(e).total;
            (t.clone(), run)
        })
        .collect();
    cascade::pair(junior_runs, senior_runs)
}

/// Runs every policy of the sweep over the paired logs. `config` gives the calibration
/// (`policy.calibration`), the costs of the schedule and `policy.cooldown_steps`. In
/// [`Regime::NoCheck`] the judge re-scores the junior's logs without what the check told
/// the loop, and the failed-check policy is left out.
pub fn run(
    juniors: &BTreeMap<String, Vec<Stamped>>,
    seniors: &BTreeMap<String, Vec<Stamped>>,
    config: &Config,
    sweep: Sweep,
    cross: Option<&CrossFit>,
) -> Result<Experiment, CascadeError> {
    let (pairs, unpaired) = pairs_of(juniors, seniors);
    if pairs.is_empty() {
        return Err(CascadeError::NoPairs {
            junior: juniors.len(),
            senior: seniors.len(),
        });
    }
    // The junior's logs as the judge sees them in this regime (borrowed where unchanged).
    let events: Vec<Vec<Cow<Event>>> = pairs
        .iter()
        .map(|p| {
            juniors.get(&p.task).map_or_else(Vec::new, |e| {
                e.iter()
                    .filter_map(|s| sweep.regime.view(&s.event))
                    .collect()
            })
        })
        .collect();
    let mut notes = Vec::new();
    let ratio = sweep.ratio;
    let alone: Vec<_> = pairs.iter().map(cascade::junior_alone).collect();
    // The junior alone is the unit of compute: scored against itself, its multiples are 1.
    let mut junior = cascade::score("junior alone", None, &alone, ratio, (1.0, 1.0));
    let base = (junior.compute_out, junior.compute_all);
    (junior.relative_out, junior.relative_all) = (1.0, 1.0);
    let mut points = vec![junior];
    let mut add = |name: &str, parameter, decisions: Vec<cascade::Decision>| {
        points.push(cascade::score(name, parameter, &decisions, ratio, base));
    };
    add(
        "senior alone",
        None,
        pairs.iter().map(cascade::senior_alone).collect(),
    );
    add("oracle", None, pairs.iter().map(cascade::oracle).collect());
    if sweep.regime == Regime::Check {
        add(
            "hand-off on first failed check",
            None,
            pairs.iter().map(cascade::on_failed_check).collect(),
        );
    }
    let cooldown = config.policy.cooldown_steps;
    for &tau in &sweep.taus {
        let c = counterfactual_config(config, None, Some(&format!("constant={tau}")))?;
        let judges = Judges::new(&c, &pairs, cross)?;
        let (streamed, posthoc) = judged(&pairs, &events, &judges, cooldown, tau);
        add("streaming, constant τ", Some(tau), streamed);
        add("post-hoc", Some(tau), posthoc);
    }
    for (kind, name) in [
        (ThresholdKind::Myopic, "streaming, myopic"),
        (ThresholdKind::Optimal, "streaming, optimal schedule"),
    ] {
        for &kappa in &sweep.kappas {
            let mut c = config.clone();
            c.policy.threshold = kind;
            c.costs.kappa = kappa;
            let judges = match Judges::new(&c, &pairs, cross) {
                Ok(judges) => judges,
                Err(ReplayError::Judge(crate::judge::JudgeError::Schedule(
                    why @ CompetenceError::NoTokenLaw,
                ))) => {
                    notes.push(format!("{name}: left out: {why}"));
                    break;
                }
                Err(e) => return Err(e.into()),
            };
            let (streamed, _) = judged(&pairs, &events, &judges, cooldown, 0.0);
            add(name, Some(kappa), streamed);
        }
    }
    let (junior_acc, senior_acc) = (points[0].accuracy.estimate, points[1].accuracy.estimate);
    for p in &mut points {
        let gap = senior_acc - junior_acc;
        // A gap to recover only where the senior alone beats the junior alone.
        p.gap_recovered = (gap > f64::EPSILON).then(|| (p.accuracy.estimate - junior_acc) / gap);
    }
    Ok(Experiment {
        tasks: pairs.len(),
        junior_passed: pairs.iter().filter(|p| p.junior.passed).count(),
        senior_passed: pairs.iter().filter(|p| p.senior.passed).count(),
        unpaired,
        assumption: ASSUMPTION,
        sweep,
        points,
        notes,
        cross_fitted: cross.map_or(0, |c| c.calibrations.len()),
    })
}

/// The live check of the streaming policy at constant `tau`: the offline decisions over the
/// paired logs, read in `sweep`'s regime, against live cascade sessions of the same tasks
/// (`live`, by task id).
pub fn live_check(
    juniors: &BTreeMap<String, Vec<Stamped>>,
    seniors: &BTreeMap<String, Vec<Stamped>>,
    live: &BTreeMap<String, Vec<Stamped>>,
    tau: f64,
    config: &Config,
    sweep: &Sweep,
) -> Result<super::cascade_live::LiveCheck, CascadeError> {
    let (pairs, _) = pairs_of(juniors, seniors);
    let c = counterfactual_config(config, None, Some(&format!("constant={tau}")))?;
    let judge = judge_for(&c)?;
    let predicted: Vec<(cascade::Decision, Option<u64>)> = pairs
        .iter()
        .map(|pair| {
            let events = juniors.get(&pair.task).map_or(&[][..], Vec::as_slice);
            let seen: Vec<Cow<Event>> = events
                .iter()
                .filter_map(|s| sweep.regime.view(&s.event))
                .collect();
            let r = rescore(
                seen.iter().map(AsRef::as_ref),
                judge.clone(),
                config.policy.cooldown_steps,
            );
            let by_judge = r.escalations.first().copied();
            let decision = cascade::streaming(pair, by_judge);
            let tick = if decision.by_loop {
                pair.junior.loop_handoff
            } else {
                by_judge
            };
            (decision, tick)
        })
        .collect();
    let runs = live
        .iter()
        .map(|(t, e)| {
            let mut run = super::cascade_live::LiveRun::from_events(e.iter().map(|s| &s.event));
            run.wall = WallTrace::of(e).total;
            (t.clone(), run)
        })
        .collect();
    Ok(super::cascade_live::check(
        tau,
        &pairs,
        &predicted,
        &runs,
        sweep.ratio,
    ))
}

/// Out-of-fold calibrations ([`crate::analysis::calibrate::fold_fits`]) and each task's
/// fold: a task is re-scored by the judge fitted without it.
#[derive(Debug, Clone)]
pub struct CrossFit {
    pub calibrations: Vec<crate::competence::Calibration>,
    pub fold_of: BTreeMap<String, usize>,
}

impl CrossFit {
    /// Keys the folds of [`crate::analysis::calibrate::FoldFits`] by task id (the log's file
    /// name, as [`load_logs`] keys the logs).
    pub fn new(fits: crate::analysis::calibrate::FoldFits) -> CrossFit {
        let fold_of = fits
            .fold_of
            .iter()
            .filter_map(|(path, k)| Some((task_id(path)?, *k)))
            .collect();
        CrossFit {
            calibrations: fits.calibrations,
            fold_of,
        }
    }
}

/// The judges the pairs are re-scored by under one config: the config's for all, or under
/// cross-fitting one per fold, each pair by the one fitted without its fold (a task no
/// fold names gets the first fold's). Built once per fold, not per pair.
struct Judges {
    by_fold: Vec<Judge>,
    /// Index into `by_fold`, per pair.
    fold: Vec<usize>,
}

impl Judges {
    fn new(
        config: &Config,
        pairs: &[TaskPair],
        cross: Option<&CrossFit>,
    ) -> Result<Judges, ReplayError> {
        let Some(cross) = cross.filter(|c| !c.calibrations.is_empty()) else {
            return Ok(Judges {
                by_fold: vec![judge_for(config)?],
                fold: vec![0; pairs.len()],
            });
        };
        let mut by_fold = Vec::with_capacity(cross.calibrations.len());
        for calibration in &cross.calibrations {
            let judge = crate::judge::SessionJudge::with_calibration(config, calibration.clone())?;
            by_fold.push(judge.judge().clone());
        }
        let last = by_fold.len() - 1;
        let fold = pairs
            .iter()
            .map(|p| cross.fold_of.get(&p.task).copied().unwrap_or(0).min(last))
            .collect();
        Ok(Judges { by_fold, fold })
    }

    /// The judge of pair `i`.
    fn of(&self, i: usize) -> &Judge {
        &self.by_fold[self.fold[i]]
    }
}

/// Streaming and post-hoc decisions of one judge: the first hand-off (the judge's or the
/// loop's), and whether the belief at the end is below `tau`.
fn judged(
    pairs: &[TaskPair],
    events: &[Vec<Cow<Event>>],
    judges: &Judges,
    cooldown: u32,
    tau: f64,
) -> (Vec<cascade::Decision>, Vec<cascade::Decision>) {
    let mut streamed = Vec::with_capacity(pairs.len());
    let mut posthoc = Vec::with_capacity(pairs.len());
    for (i, (pair, events)) in pairs.iter().zip(events).enumerate() {
        let r = rescore(
            events.iter().map(AsRef::as_ref),
            judges.of(i).clone(),
            cooldown,
        );
        streamed.push(cascade::streaming(pair, r.escalations.first().copied()));
        let last = r.points.last().map_or(1.0, |p| p.belief);
        posthoc.push(cascade::post_hoc(pair, last < tau));
    }
    (streamed, posthoc)
}

impl Experiment {
    /// The table: one row per point, the frontier's points (input + output) starred.
    pub fn to_text(&self) -> String {
        use std::fmt::Write as _;
        let on_frontier = cascade::frontier(&self.points);
        let mut s = String::new();
        let _ = writeln!(
            s,
            "tasks {} (junior passed {}, senior passed {}); senior tokens × {:.2}",
            self.tasks, self.junior_passed, self.senior_passed, self.sweep.ratio
        );
        if !self.unpaired.is_empty() {
            let _ = writeln!(
                s,
                "left out (a log on one side only): {}",
                self.unpaired.join(", ")
            );
        }
        let _ = writeln!(s, "regime: {}", self.sweep.regime.name());
        if self.cross_fitted > 0 {
            let _ = writeln!(
                s,
                "judge: fitted out of fold, {} folds by task: each task re-scored by a fit that never saw it",
                self.cross_fitted
            );
        }
        let _ = writeln!(s, "assumed: {}\n", self.assumption);
        let _ = writeln!(
            s,
            "  {:<31} {:>8}  {:>21}  {:>6}  {:>6}  {:>8}  {:>8}  {:>6}  {:>27}",
            "policy",
            "param",
            "accuracy [95% CI]",
            "esc.",
            "loop",
            "out ×",
            "in+out ×",
            "PGR",
            "s/task: prefill gen cmd all"
        );
        for (i, p) in self.points.iter().enumerate() {
            let star = if on_frontier.contains(&i) { "*" } else { " " };
            let param = p.parameter.map_or("-".to_string(), |v| {
                if v < 0.001 {
                    format!("{v:.0e}")
                } else {
                    format!("{v:.3}")
                }
            });
            let acc = format!(
                "{:.3} [{:.3}, {:.3}]",
                p.accuracy.estimate, p.accuracy.lower, p.accuracy.upper
            );
            let pgr = p
                .gap_recovered
                .map_or("-".to_string(), |g| format!("{g:.2}"));
            let t = &p.seconds;
            let _ = writeln!(
                s,
                "{star} {:<31} {:>8}  {:>21}  {:>5.0}%  {:>5.0}%  {:>8.2}  {:>8.2}  {:>6}  {:>7.1} {:>5.1} {:>4.1} {:>5.1}",
                p.policy,
                param,
                acc,
                100.0 * p.escalation_rate,
                100.0 * p.loop_rate,
                p.relative_out,
                p.relative_all,
                pgr,
                t.prefill,
                t.generation,
                t.commands,
                t.total
            );
        }
        for note in &self.notes {
            let _ = writeln!(s, "\n{note}");
        }
        s.push_str(
            "\n* on the frontier (input + output compute); loop: handed off by the loop's own \
             rules (stuck, a dead endpoint) before the judge; PGR: (accuracy − junior's) / \
             (senior's − junior's); s/task: mean wall seconds per task, the junior's up to the \
             hand-off plus the senior's alone, waiting for a first token (prefill), streaming \
             (gen), running commands and the check (cmd), and in all\n",
        );
        s
    }
}
