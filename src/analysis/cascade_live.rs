//! Checking the offline cascade against live hand-offs.
//!
//! `eval cascade` scores a streaming policy from the junior's shadow log and the senior's
//! solo log, assuming that after a hand-off the senior ends as it did alone, at its solo
//! compute. A live run of the same policy (the senior takes over mid-session with the
//! junior's partial work and history) says whether that holds: per task, did both hand off,
//! did the live cascade pass where the offline one said it would, and what it spent.

use serde::Serialize;

use super::cascade::{Decision, TaskPair};
use super::wall::Wall;
use crate::metrics::Interval;
use crate::protocol::{Actor, Event, Outcome};

/// What a live cascade session did: the outcome, its first hand-off and its tokens.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct LiveRun {
    pub passed: bool,
    /// Junior output tokens (ticks) at the first hand-off; `None` when the junior kept it.
    pub handoff: Option<u64>,
    pub junior_in: u64,
    pub junior_out: u64,
    pub senior_in: u64,
    pub senior_out: u64,
    /// The session's wall time (zero when read from events without stamps).
    pub wall: Wall,
}

impl LiveRun {
    pub fn from_events<'a>(events: impl IntoIterator<Item = &'a Event>) -> LiveRun {
        let mut run = LiveRun::default();
        for e in events {
            match e {
                Event::CostIncurred {
                    actor,
                    input_tokens,
                    output_tokens,
                    ..
                } => {
                    if *actor == Actor::Junior {
                        run.junior_in += input_tokens;
                        run.junior_out += output_tokens;
                    } else {
                        run.senior_in += input_tokens;
                        run.senior_out += output_tokens;
                    }
                }
                Event::Escalated { tick, shadow, .. } if !shadow && run.handoff.is_none() => {
                    run.handoff = Some(*tick);
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

    /// Junior-token equivalents: (output only, input + output).
    fn equivalents(&self, ratio: f64) -> (f64, f64) {
        let out = self.junior_out as f64 + ratio * self.senior_out as f64;
        (
            out,
            out + self.junior_in as f64 + ratio * self.senior_in as f64,
        )
    }
}

/// One task: what the offline cascade predicted, what the live one did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LiveRow {
    pub task: String,
    pub predicted_handoff: Option<u64>,
    pub live_handoff: Option<u64>,
    pub predicted_passed: bool,
    pub live_passed: bool,
    /// The senior alone's outcome on the task (what the assumption carries over).
    pub senior_alone_passed: bool,
    pub predicted_all: f64,
    pub live_all: f64,
}

/// The live check of one threshold.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LiveCheck {
    pub tau: f64,
    pub tasks: usize,
    pub rows: Vec<LiveRow>,
    pub predicted_accuracy: f64,
    pub live_accuracy: f64,
    pub predicted_escalation: f64,
    pub live_escalation: f64,
    /// Both handed off, or neither.
    pub handoff_agree: usize,
    /// Among tasks both handed off: the live outcome equals the senior alone's.
    pub both_handed_off: usize,
    pub senior_outcome_agree: usize,
    /// Compute, input + output, as a multiple of the junior alone's on the same tasks.
    pub predicted_relative_all: f64,
    pub live_relative_all: f64,
    pub predicted_relative_out: f64,
    pub live_relative_out: f64,
    /// The live accuracy with its 95 % bootstrap interval over tasks: the offline
    /// prediction is trusted where it falls inside.
    pub live_interval: Interval,
    /// The tasks the live cascade handed off, how many of them it passed, and how many the
    /// senior alone passed: does a takeover do as well as not having a junior?
    pub live_handed_off: Vec<String>,
    pub takeovers_passed: usize,
    pub senior_alone_passed_there: usize,
    /// Mean wall seconds per task: offline (the junior's to the hand-off plus the senior's
    /// alone) and live.
    pub predicted_seconds: f64,
    pub live_seconds: f64,
}

/// Compares `predicted` (the offline decisions at `tau`, one per pair) with the live runs
/// of the same tasks; tasks without a live run are left out. `junior_alone` is each pair's
/// junior-alone compute, the unit.
pub fn check(
    tau: f64,
    pairs: &[TaskPair],
    predicted: &[(Decision, Option<u64>)],
    live: &std::collections::BTreeMap<String, LiveRun>,
    ratio: f64,
) -> LiveCheck {
    let mut rows = Vec::new();
    let (mut unit_out, mut unit_all) = (0.0, 0.0);
    let (mut pred_out, mut pred_all, mut live_out, mut live_all) = (0.0, 0.0, 0.0, 0.0);
    let (mut pred_ms, mut live_ms) = (0u64, 0u64);
    for (pair, (decision, tick)) in pairs.iter().zip(predicted) {
        let Some(run) = live.get(&pair.task) else {
            continue;
        };
        pred_ms += decision.wall.total_ms();
        live_ms += run.wall.total_ms();
        let (ji, jo) = pair.junior.total();
        unit_out += jo as f64;
        unit_all += (ji + jo) as f64;
        let (p_out, p_all) = equivalents(decision, ratio);
        let (l_out, l_all) = run.equivalents(ratio);
        pred_out += p_out;
        pred_all += p_all;
        live_out += l_out;
        live_all += l_all;
        rows.push(LiveRow {
            task: pair.task.clone(),
            predicted_handoff: if decision.escalated { *tick } else { None },
            live_handoff: run.handoff,
            predicted_passed: decision.passed,
            live_passed: run.passed,
            senior_alone_passed: pair.senior.passed,
            predicted_all: p_all,
            live_all: l_all,
        });
    }
    let n = rows.len().max(1) as f64;
    let share = |f: &dyn Fn(&LiveRow) -> bool| rows.iter().filter(|r| f(r)).count() as f64 / n;
    let both: Vec<&LiveRow> = rows
        .iter()
        .filter(|r| r.predicted_handoff.is_some() && r.live_handoff.is_some())
        .collect();
    let ratio_of = |a: f64, b: f64| if b > 0.0 { a / b } else { f64::NAN };
    let handed: Vec<&LiveRow> = rows.iter().filter(|r| r.live_handoff.is_some()).collect();
    let passes: Vec<f64> = rows
        .iter()
        .map(|r| f64::from(u8::from(r.live_passed)))
        .collect();
    LiveCheck {
        live_interval: super::cascade::mean_interval(&passes),
        live_handed_off: handed.iter().map(|r| r.task.clone()).collect(),
        takeovers_passed: handed.iter().filter(|r| r.live_passed).count(),
        senior_alone_passed_there: handed.iter().filter(|r| r.senior_alone_passed).count(),
        predicted_seconds: pred_ms as f64 / 1000.0 / n,
        live_seconds: live_ms as f64 / 1000.0 / n,
        tau,
        tasks: rows.len(),
        predicted_accuracy: share(&|r| r.predicted_passed),
        live_accuracy: share(&|r| r.live_passed),
        predicted_escalation: share(&|r| r.predicted_handoff.is_some()),
        live_escalation: share(&|r| r.live_handoff.is_some()),
        handoff_agree: rows
            .iter()
            .filter(|r| r.predicted_handoff.is_some() == r.live_handoff.is_some())
            .count(),
        both_handed_off: both.len(),
        senior_outcome_agree: both
            .iter()
            .filter(|r| r.live_passed == r.senior_alone_passed)
            .count(),
        predicted_relative_all: ratio_of(pred_all, unit_all),
        live_relative_all: ratio_of(live_all, unit_all),
        predicted_relative_out: ratio_of(pred_out, unit_out),
        live_relative_out: ratio_of(live_out, unit_out),
        rows,
    }
}

fn equivalents(d: &Decision, ratio: f64) -> (f64, f64) {
    let s = &d.spent;
    let out = s.junior_out as f64 + ratio * s.senior_out as f64;
    (out, out + s.junior_in as f64 + ratio * s.senior_in as f64)
}

impl LiveCheck {
    pub fn to_text(&self) -> String {
        use std::fmt::Write as _;
        let mut s = String::new();
        let _ = writeln!(
            s,
            "\nlive check, streaming constant τ {}: {} tasks with a live run",
            self.tau, self.tasks
        );
        let _ = writeln!(
            s,
            "  accuracy predicted {:.3}, live {:.3}; handed off predicted {:.0}%, live {:.0}%; \
             hand-off or not agrees on {} of {}",
            self.predicted_accuracy,
            self.live_accuracy,
            100.0 * self.predicted_escalation,
            100.0 * self.live_escalation,
            self.handoff_agree,
            self.tasks
        );
        let inside = (self.live_interval.lower..=self.live_interval.upper)
            .contains(&self.predicted_accuracy);
        let _ = writeln!(
            s,
            "  live accuracy 95% interval over tasks [{:.3}, {:.3}]: the prediction is {} it",
            self.live_interval.lower,
            self.live_interval.upper,
            if inside { "inside" } else { "outside" }
        );
        let _ = writeln!(
            s,
            "  where both handed off ({}), the live outcome equals the senior alone's on {}",
            self.both_handed_off, self.senior_outcome_agree
        );
        let _ = writeln!(
            s,
            "  takeovers: the live cascade handed off {} tasks and passed {}; the senior alone \
             passed {} of the same{}{}",
            self.live_handed_off.len(),
            self.takeovers_passed,
            self.senior_alone_passed_there,
            if self.live_handed_off.is_empty() {
                ""
            } else {
                ": "
            },
            self.live_handed_off.join(", ")
        );
        let _ = writeln!(
            s,
            "  wall seconds per task: predicted {:.1}, live {:.1}",
            self.predicted_seconds, self.live_seconds
        );
        let _ = writeln!(
            s,
            "  compute × junior alone: predicted {:.2} out / {:.2} in+out, live {:.2} / {:.2}",
            self.predicted_relative_out,
            self.predicted_relative_all,
            self.live_relative_out,
            self.live_relative_all
        );
        let _ = writeln!(
            s,
            "  {:<18} {:>10} {:>10} {:>6} {:>6} {:>6} {:>10} {:>10}",
            "task", "pred tick", "live tick", "pred", "live", "alone", "pred cost", "live cost"
        );
        let tick = |t: Option<u64>| t.map_or("-".to_string(), |t| t.to_string());
        let yes = |b: bool| if b { "pass" } else { "fail" };
        for r in &self.rows {
            let _ = writeln!(
                s,
                "  {:<18} {:>10} {:>10} {:>6} {:>6} {:>6} {:>10.0} {:>10.0}",
                r.task,
                tick(r.predicted_handoff),
                tick(r.live_handoff),
                yes(r.predicted_passed),
                yes(r.live_passed),
                yes(r.senior_alone_passed),
                r.predicted_all,
                r.live_all
            );
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::cascade::{JuniorRun, Request, SeniorRun, Spent};

    fn pair(task: &str, senior_passed: bool) -> TaskPair {
        TaskPair {
            task: task.into(),
            junior: JuniorRun {
                passed: false,
                requests: vec![Request {
                    input: 900,
                    output: 100,
                }],
                loop_handoff: None,
                first_failed_check: None,
                wall: Default::default(),
            },
            senior: SeniorRun {
                passed: senior_passed,
                input: 1000,
                output: 100,
                wall: Default::default(),
            },
        }
    }

    fn handed_off(passed: bool) -> (Decision, Option<u64>) {
        (
            Decision {
                passed,
                escalated: true,
                by_loop: false,
                spent: Spent {
                    junior_in: 900,
                    junior_out: 50,
                    senior_in: 1000,
                    senior_out: 100,
                },
                wall: Default::default(),
            },
            Some(50),
        )
    }

    #[test]
    fn the_check_counts_agreement_and_compute_on_the_tasks_both_ran() {
        let pairs = [pair("a", true), pair("b", false), pair("c", true)];
        let predicted = [handed_off(true), handed_off(false), handed_off(true)];
        let mut live = std::collections::BTreeMap::new();
        // a: handed off and passed, as predicted. b: the junior kept it. c: no live run.
        live.insert(
            "a".to_string(),
            LiveRun {
                passed: true,
                handoff: Some(40),
                junior_in: 900,
                junior_out: 40,
                senior_in: 2000,
                senior_out: 100,
                wall: Wall {
                    generation_ms: 3000,
                    ..Wall::default()
                },
            },
        );
        live.insert(
            "b".to_string(),
            LiveRun {
                junior_in: 900,
                junior_out: 100,
                ..LiveRun::default()
            },
        );
        let c = check(0.5, &pairs, &predicted, &live, 1.0);
        assert_eq!(c.tasks, 2);
        assert_eq!((c.handoff_agree, c.both_handed_off), (1, 1));
        assert_eq!(c.senior_outcome_agree, 1);
        assert_eq!((c.predicted_accuracy, c.live_accuracy), (0.5, 0.5));
        assert_eq!((c.predicted_escalation, c.live_escalation), (1.0, 0.5));
        // Unit: two junior-alone runs of 1000 in+out. Predicted 2 × 2050, live 3040 + 1000.
        assert!((c.predicted_relative_all - 2.05).abs() < 1e-12);
        assert!((c.live_relative_all - 2.02).abs() < 1e-12);
        assert!(
            c.to_text()
                .contains("live check, streaming constant τ 0.5: 2 tasks")
        );
        // Takeovers: a was handed off live and passed; the senior alone passed it too.
        assert_eq!(c.live_handed_off, ["a"]);
        assert_eq!((c.takeovers_passed, c.senior_alone_passed_there), (1, 1));
        assert!((c.live_seconds - 1.5).abs() < 1e-12, "3 s over 2 tasks");
        assert!(c.live_interval.lower <= 0.5 && 0.5 <= c.live_interval.upper);
    }
}
