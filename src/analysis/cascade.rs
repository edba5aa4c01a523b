//! The cascade experiment of the seed paper, computed offline from paired logs: per task, a
//! junior session in shadow mode (the judge watched and never handed off) and a session of
//! the senior alone. Each policy decides, per task, whether and where the junior would have
//! handed off; the outcome and the compute follow from the two logs.
//!
//! **The assumption** (stated in every report): after a hand-off at any point, the senior
//! ends the task as it did alone, at the compute it spent alone. The junior's compute up to
//! the hand-off is added. A senior that inherits a half-done tree may do better or worse
//! than alone; live hand-off runs check this (docs/results/2026-12-02-cascade-real.md).
//!
//! Policies, each a family swept over its parameter:
//! - **junior alone** and **senior alone**: one point each;
//! - **oracle**: hands off at the first token exactly the tasks the junior fails;
//! - **post-hoc**: the junior finishes; the judge's belief at the end below τ sends the task
//!   to the senior, who redoes it (the junior's whole compute is spent);
//! - **streaming, constant τ**: the first place where the re-scored judge (the live gate:
//!   cooldowns, step ends) escalates, or where the loop's own rules (stuck, a dead
//!   endpoint) handed off, is the hand-off;
//! - **streaming, myopic**: the same with the myopic threshold, swept over κ;
//! - **streaming, optimal schedule**: the same with the DP threshold, swept over κ (not for
//!   a feature calibration, whose belief has no per-token law to plan on);
//! - **hand-off on the first failed check** (with the check only): the junior keeps the
//!   task until the check it runs first fails, then the senior takes over
//!   (`policy.escalate_on_failed_check`).
//!
//! Compute is in junior-token equivalents: junior tokens + senior tokens × the parameter
//! ratio, for output tokens and for input + output tokens, each as a multiple of the
//! junior alone's. Accuracy carries a percentile-bootstrap interval over tasks.

use std::collections::BTreeMap;

use serde::Serialize;

use super::wall::{Wall, WallTrace};
use crate::metrics::{Forecast, Interval, bootstrap};
use crate::protocol::{Actor, EscalationReason, Event, Outcome};

/// One junior request: input tokens read, output tokens written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Request {
    pub input: u64,
    pub output: u64,
}

/// What a junior's shadow session spent and how it ended.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JuniorRun {
    pub passed: bool,
    pub requests: Vec<Request>,
    /// The first hand-off the loop's own rules made (stuck, a dead endpoint), by tick: a
    /// live cascade hands off there too.
    pub loop_handoff: Option<u64>,
    /// The tick of the first check that failed, if one did.
    pub first_failed_check: Option<u64>,
    /// The session's wall time, by tick (empty when read from events without stamps).
    pub wall: WallTrace,
}

impl JuniorRun {
    /// Reads a junior session's events (the first session of a log).
    pub fn from_events<'a>(events: impl IntoIterator<Item = &'a Event>) -> JuniorRun {
        let mut run = JuniorRun {
            passed: false,
            requests: Vec::new(),
            loop_handoff: None,
            first_failed_check: None,
            wall: WallTrace::default(),
        };
        let mut tick = 0;
        for e in events {
            match e {
                Event::Token {
                    actor: Actor::Junior,
                    tick: t,
                    ..
                } => tick = *t,
                Event::CheckRan { passed: false, .. } if run.first_failed_check.is_none() => {
                    run.first_failed_check = Some(tick);
                }
                Event::CostIncurred {
                    actor: Actor::Junior,
                    input_tokens,
                    output_tokens,
                    ..
                } => run.requests.push(Request {
                    input: *input_tokens,
                    output: *output_tokens,
                }),
                Event::Escalated { tick, reason, .. }
                    if run.loop_handoff.is_none()
                        && matches!(
                            reason,
                            EscalationReason::Stuck
                                | EscalationReason::Fault
                                | EscalationReason::CheckFailed
                                | EscalationReason::ExamplesFailed
                        ) =>
                {
                    run.loop_handoff = Some(*tick);
                }
                Event::SessionEnded { outcome, .. } => {
                    run.passed = *outcome == Outcome::Success;
                    break;
                }
                _ => {}
            }
        }
        run
    }

    /// (input, output) tokens spent by junior output token `tick`: every request started
    /// by then read its whole input; output counts up to the tick. Ticks count the junior's
    /// output tokens, so request i starts at the sum of the outputs before it.
    pub fn spent_by(&self, tick: u64) -> (u64, u64) {
        let (mut input, mut output) = (0, 0);
        for r in &self.requests {
            if output >= tick {
                break;
            }
            input += r.input;
            output += r.output.min(tick - output);
        }
        (input, output)
    }

    pub fn total(&self) -> (u64, u64) {
        self.requests
            .iter()
            .fold((0, 0), |(i, o), r| (i + r.input, o + r.output))
    }
}

/// What the senior alone spent on a task and whether it passed (every actor of its log).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct SeniorRun {
    pub passed: bool,
    pub input: u64,
    pub output: u64,
    pub wall: Wall,
}

impl SeniorRun {
    pub fn from_events<'a>(events: impl IntoIterator<Item = &'a Event>) -> SeniorRun {
        let mut run = SeniorRun {
            passed: false,
            input: 0,
            output: 0,
            wall: Wall::default(),
        };
        for e in events {
            match e {
                Event::CostIncurred {
                    input_tokens,
                    output_tokens,
                    ..
                } => {
                    run.input += input_tokens;
                    run.output += output_tokens;
                }
                Event::SessionEnded { outcome, .. } => {
                    run.passed = *outcome == Outcome::Success;
                    break;
                }
                _ => {}
            }
        }
        run
    }
}

/// One task of the experiment: both runs, and what the judge said along the junior's.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TaskPair {
    pub task: String,
    pub junior: JuniorRun,
    pub senior: SeniorRun,
}

/// Tokens one policy spent on one task.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Spent {
    pub junior_in: u64,
    pub junior_out: u64,
    pub senior_in: u64,
    pub senior_out: u64,
}

impl Spent {
    fn junior(pair: &TaskPair, by: Option<u64>) -> Spent {
        let (junior_in, junior_out) = match by {
            Some(t) => pair.junior.spent_by(t),
            None => pair.junior.total(),
        };
        Spent {
            junior_in,
            junior_out,
            ..Spent::default()
        }
    }

    fn plus_senior(mut self, pair: &TaskPair) -> Spent {
        self.senior_in = pair.senior.input;
        self.senior_out = pair.senior.output;
        self
    }

    /// Junior-token equivalents: (output only, input + output).
    fn equivalents(&self, ratio: f64) -> (f64, f64) {
        let out = self.junior_out as f64 + ratio * self.senior_out as f64;
        let all = out + self.junior_in as f64 + ratio * self.senior_in as f64;
        (out, all)
    }
}

/// What one policy did on one task.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Decision {
    pub passed: bool,
    pub escalated: bool,
    /// The hand-off was the loop's own rule (stuck, a dead endpoint), not the judge's.
    pub by_loop: bool,
    pub spent: Spent,
    pub wall: Wall,
}

/// The junior keeps the task (`None`) or hands off at the judge's tick or the loop's,
/// whichever comes first.
pub fn streaming(pair: &TaskPair, judge: Option<u64>) -> Decision {
    let by_loop = match (judge, pair.junior.loop_handoff) {
        (Some(j), Some(l)) => l <= j,
        (None, Some(_)) => true,
        _ => false,
    };
    let handoff = if by_loop {
        pair.junior.loop_handoff
    } else {
        judge
    };
    match handoff {
        None => junior_alone(pair),
        Some(t) => Decision {
            passed: pair.senior.passed,
            escalated: true,
            by_loop,
            spent: Spent::junior(pair, Some(t)).plus_senior(pair),
            wall: pair.junior.wall.by(Some(t)).plus(pair.senior.wall),
        },
    }
}

pub fn junior_alone(pair: &TaskPair) -> Decision {
    Decision {
        passed: pair.junior.passed,
        escalated: false,
        by_loop: false,
        spent: Spent::junior(pair, None),
        wall: pair.junior.wall.total,
    }
}

pub fn senior_alone(pair: &TaskPair) -> Decision {
    Decision {
        passed: pair.senior.passed,
        escalated: true,
        by_loop: false,
        spent: Spent::default().plus_senior(pair),
        wall: pair.senior.wall,
    }
}

/// Hands off at the first token exactly when the junior would fail.
pub fn oracle(pair: &TaskPair) -> Decision {
    if pair.junior.passed {
        junior_alone(pair)
    } else {
        Decision {
            passed: pair.senior.passed,
            escalated: true,
            by_loop: false,
            spent: Spent::default().plus_senior(pair),
            wall: pair.senior.wall,
        }
    }
}

/// The junior finishes; `escalate` (the judge's verdict at the end) sends it to the senior.
pub fn post_hoc(pair: &TaskPair, escalate: bool) -> Decision {
    if escalate {
        Decision {
            passed: pair.senior.passed,
            escalated: true,
            by_loop: false,
            spent: Spent::junior(pair, None).plus_senior(pair),
            wall: pair.junior.wall.total.plus(pair.senior.wall),
        }
    } else {
        junior_alone(pair)
    }
}

/// The junior keeps the task until its first check fails, then hands off there (or where
/// the loop's own rules handed off, if that came first).
pub fn on_failed_check(pair: &TaskPair) -> Decision {
    streaming(pair, pair.junior.first_failed_check)
}

/// Mean seconds per task, by what the machine was waiting for ([`Wall`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Seconds {
    pub prefill: f64,
    pub generation: f64,
    pub commands: f64,
    pub other: f64,
    pub total: f64,
}

/// One point of a frontier: a policy at one parameter, over all tasks.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Point {
    pub policy: String,
    /// τ for constant and post-hoc, κ for the schedule; none for the single points.
    pub parameter: Option<f64>,
    pub tasks: usize,
    pub accuracy: Interval,
    pub escalation_rate: f64,
    /// Tasks handed off by the loop's own rules rather than the judge, as a fraction.
    pub loop_rate: f64,
    /// Mean junior-token equivalents per task, output tokens only.
    pub compute_out: f64,
    /// The same, input + output.
    pub compute_all: f64,
    /// `compute_out` and `compute_all` as multiples of the junior alone's.
    pub relative_out: f64,
    pub relative_all: f64,
    /// The performance gap recovered, (accuracy − junior's) / (senior's − junior's), the
    /// seed paper's measure; `None` when the two are equal.
    pub gap_recovered: Option<f64>,
    /// Mean wall time per task, the junior's up to the hand-off plus the senior's alone.
    pub seconds: Seconds,
}

/// Bootstrap resamples of the accuracy interval, and their seed.
pub const RESAMPLES: usize = 2000;
pub const SEED: u64 = 16;

/// Scores one policy's decisions (one per task, in task order) against the junior alone's
/// compute `base` = (out, all).
pub fn score(
    policy: &str,
    parameter: Option<f64>,
    decisions: &[Decision],
    ratio: f64,
    base: (f64, f64),
) -> Point {
    let n = decisions.len().max(1) as f64;
    let passed: Vec<f64> = decisions
        .iter()
        .map(|d| f64::from(u8::from(d.passed)))
        .collect();
    let accuracy = mean_interval(&passed);
    let (out, all) = decisions.iter().fold((0.0, 0.0), |(o, a), d| {
        let (x, y) = d.spent.equivalents(ratio);
        (o + x, a + y)
    });
    let (compute_out, compute_all) = (out / n, all / n);
    let wall = decisions
        .iter()
        .fold(Wall::default(), |w, d| w.plus(d.wall));
    let secs = |ms: u64| ms as f64 / 1000.0 / n;
    Point {
        policy: policy.to_string(),
        parameter,
        tasks: decisions.len(),
        accuracy,
        escalation_rate: decisions.iter().filter(|d| d.escalated).count() as f64 / n,
        loop_rate: decisions.iter().filter(|d| d.by_loop).count() as f64 / n,
        compute_out,
        compute_all,
        relative_out: relative(compute_out, base.0),
        relative_all: relative(compute_all, base.1),
        gap_recovered: None,
        seconds: Seconds {
            prefill: secs(wall.prefill_ms),
            generation: secs(wall.generation_ms),
            commands: secs(wall.commands_ms),
            other: secs(wall.other_ms),
            total: secs(wall.total_ms()),
        },
    }
}

fn relative(x: f64, base: f64) -> f64 {
    if base > 0.0 { x / base } else { f64::NAN }
}

/// The mean of 0/1 values with the project's percentile bootstrap over them, each task its
/// own group ([`crate::metrics::bootstrap`]).
pub(crate) fn mean_interval(values: &[f64]) -> Interval {
    let groups: Vec<Vec<Forecast>> = values
        .iter()
        .map(|&v| vec![Forecast::new(v, v > 0.5)])
        .collect();
    let mean = |fs: &[Forecast]| {
        (!fs.is_empty()).then(|| fs.iter().filter(|f| f.success).count() as f64 / fs.len() as f64)
    };
    bootstrap(&groups, mean, RESAMPLES, SEED).unwrap_or(Interval {
        estimate: f64::NAN,
        lower: f64::NAN,
        upper: f64::NAN,
    })
}

/// Junior and senior runs paired by task id; tasks with only one side are named.
pub fn pair(
    juniors: BTreeMap<String, JuniorRun>,
    mut seniors: BTreeMap<String, SeniorRun>,
) -> (Vec<TaskPair>, Vec<String>) {
    let mut pairs = Vec::new();
    let mut unpaired = Vec::new();
    for (task, junior) in juniors {
        match seniors.remove(&task) {
            Some(senior) => pairs.push(TaskPair {
                task,
                junior,
                senior,
            }),
            None => unpaired.push(task),
        }
    }
    unpaired.extend(seniors.into_keys());
    (pairs, unpaired)
}

/// The indices of the points that no cheaper point beats on accuracy (compute: input +
/// output), in order of compute.
pub fn frontier(points: &[Point]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..points.len()).collect();
    order.sort_by(|&a, &b| {
        let (a, b) = (&points[a], &points[b]);
        a.compute_all
            .total_cmp(&b.compute_all)
            .then(b.accuracy.estimate.total_cmp(&a.accuracy.estimate))
    });
    let mut best = f64::NEG_INFINITY;
    order
        .into_iter()
        .filter(|&i| {
            let a = points[i].accuracy.estimate;
            let keep = a > best;
            best = best.max(a);
            keep
        })
        .collect()
}

#[cfg(test)]
#[path = "cascade_tests.rs"]
mod tests;
