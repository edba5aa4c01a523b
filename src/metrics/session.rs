//! One session's log folded into the facts scoring needs: how it ended, when and why it
//! escalated, whether the escalations were needed, and what it cost.
//!
//! A fold over events, so a log of any length is summarised in one pass without holding
//! its tokens.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::{AskSession, EscalationMark, LoopTally};
use crate::protocol::{Actor, AskCounts, EscalationReason, Event, Outcome, Route};

/// One escalation, with when it happened relative to the whole session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EscalationRecord {
    pub route: Route,
    pub reason: EscalationReason,
    pub belief: f64,
    pub threshold: f64,
    pub step: u32,
    pub tick: u64,
    pub shadow: bool,
    /// tick / total junior ticks of the session: 0 at the start, 1 at the end. `None` when
    /// the session produced no junior tokens.
    pub earliness: Option<f64>,
    /// Was it needed? The operator's mark for an operator question; for a shadow
    /// escalation, whether the junior then failed. `None` when nothing can say.
    pub needed: Option<bool>,
}

/// One question to the operator and the answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QuestionRecord {
    pub step: u32,
    pub question: String,
    pub self_initiated: bool,
    pub answer: Option<String>,
    pub needed: Option<bool>,
    pub deferred_to_senior: bool,
}

/// Money and tokens by model.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct CostSplit {
    pub junior_usd: f64,
    pub senior_usd: f64,
    pub junior_output_tokens: u64,
    pub senior_output_tokens: u64,
}

/// What a session amounts to for calibration and scoring.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionSummary {
    /// The log it came from.
    pub source: PathBuf,
    pub session_id: String,
    pub policy: String,
    pub shadow: bool,
    /// `None` when the log ends before `session_ended` (a crash): the session is incomplete.
    pub outcome: Option<Outcome>,
    /// The junior's own outcome was not observed (it handed off).
    pub censored: bool,
    pub steps: u32,
    /// Junior output tokens.
    pub ticks: u64,
    /// Total money: from `session_ended`, else the sum of the costs seen.
    pub usd: f64,
    pub cost: CostSplit,
    pub escalations: Vec<EscalationRecord>,
    pub questions: Vec<QuestionRecord>,
    /// Steps in which the model tried to change a protected file (`protected_touched`
    /// events); absent in summaries written before the event existed.
    #[serde(default)]
    pub protected_touched: u32,
    /// Steps, parsed calls and tokens per model, and the rule that ended the session.
    #[serde(default)]
    pub loop_tally: LoopTally,
}

impl SessionSummary {
    /// The route the session took, for grouping costs: the first real (non-shadow)
    /// escalation's route, `None` when the junior kept control throughout.
    pub fn route_taken(&self) -> Option<Route> {
        self.escalations
            .iter()
            .find(|e| !e.shadow && e.reason != EscalationReason::Fault)
            .map(|e| e.route)
    }

    /// This session's Ask-F1 counts, as `report` pools them; what `session_ended` says.
    pub fn ask_counts(&self) -> AskCounts {
        let t = super::ask_table(&[self.ask_session()]).pooled;
        let n = |x: u64| u32::try_from(x).unwrap_or(u32::MAX);
        AskCounts {
            tp: n(t.tp),
            fp: n(t.fp),
            fn_: n(t.fn_),
        }
    }

    /// The session as Ask-F1 sees it. Only the judge's own decisions (`threshold`) and the
    /// junior's own questions (`self_ask`) are scored; forced and fault escalations are
    /// not decisions of the system. A failure counts as missed only when nothing escalated
    /// at all, since any escalation hides whether the junior alone would have failed.
    pub fn ask_session(&self) -> AskSession {
        let escalations: Vec<EscalationMark> = self
            .escalations
            .iter()
            .filter(|e| {
                matches!(
                    e.reason,
                    EscalationReason::Threshold | EscalationReason::SelfAsk
                )
            })
            .map(|e| EscalationMark {
                route: e.route,
                needed: e.needed,
            })
            .collect();
        let unscored = self.escalations.len() > escalations.len();
        AskSession {
            escalations,
            failed: self.outcome == Some(Outcome::Failure) && !unscored,
        }
    }
}

/// Accumulates the events of one session into a [`SessionSummary`].
#[derive(Debug, Clone)]
pub struct SessionFold {
    summary: SessionSummary,
    last_tick: u64,
    ended_ticks: Option<u64>,
    usd_seen: f64,
    ended_usd: Option<f64>,
    /// Operator escalations still waiting for the answer that marks them.
    unanswered: Vec<usize>,
}

impl SessionFold {
    /// An empty fold; `source` names the log in the summary so a number can be traced back.
    pub fn new(source: impl Into<PathBuf>) -> SessionFold {
        SessionFold {
            summary: SessionSummary {
                source: source.into(),
                session_id: String::new(),
                policy: String::new(),
                shadow: false,
                outcome: None,
                censored: false,
                steps: 0,
                ticks: 0,
                usd: 0.0,
                cost: CostSplit::default(),
                escalations: Vec::new(),
                questions: Vec::new(),
                protected_touched: 0,
                loop_tally: LoopTally::default(),
            },
            last_tick: 0,
            ended_ticks: None,
            usd_seen: 0.0,
            ended_usd: None,
            unanswered: Vec::new(),
        }
    }

    /// Takes one event in log order. Operator answers mark the oldest unanswered operator
    /// escalation, since questions are answered in the order they were asked.
    pub fn push(&mut self, event: &Event) {
        let s = &mut self.summary;
        s.loop_tally.push(event);
        match event {
            Event::SessionStarted {
                session_id,
                policy,
                shadow,
                ..
            } => {
                s.session_id.clone_from(session_id);
                s.policy.clone_from(policy);
                s.shadow = *shadow;
            }
            Event::StepStarted { step, tick, .. } => {
                s.steps = s.steps.max(*step);
                self.last_tick = self.last_tick.max(*tick);
            }
            Event::Token {
                actor: Actor::Junior,
                tick,
                ..
            }
            | Event::BeliefUpdated { tick, .. }
            | Event::SeniorTookOver { tick, .. }
            | Event::SeniorReturned { tick, .. } => self.last_tick = self.last_tick.max(*tick),
            Event::StepEnded { step, tick, .. } => {
                s.steps = s.steps.max(*step);
                self.last_tick = self.last_tick.max(*tick);
            }
            Event::Escalated {
                step,
                tick,
                route,
                reason,
                belief,
                threshold,
                shadow,
                ..
            } => {
                self.last_tick = self.last_tick.max(*tick);
                if *route == Route::Operator && !*shadow {
                    self.unanswered.push(s.escalations.len());
                }
                s.escalations.push(EscalationRecord {
                    route: *route,
                    reason: *reason,
                    belief: *belief,
                    threshold: *threshold,
                    step: *step,
                    tick: *tick,
                    shadow: *shadow,
                    earliness: None,
                    needed: None,
                });
            }
            Event::OperatorAsked {
                step,
                question,
                self_initiated,
                ..
            } => s.questions.push(QuestionRecord {
                step: *step,
                question: question.clone(),
                self_initiated: *self_initiated,
                answer: None,
                needed: None,
                deferred_to_senior: false,
            }),
            Event::OperatorAnswered {
                answer,
                needed,
                deferred_to_senior,
                ..
            } => {
                if let Some(q) = s.questions.iter_mut().rev().find(|q| q.answer.is_none()) {
                    q.answer = Some(answer.clone());
                    q.needed = *needed;
                    q.deferred_to_senior = *deferred_to_senior;
                }
                if !self.unanswered.is_empty() {
                    let i = self.unanswered.remove(0);
                    if let Some(e) = s.escalations.get_mut(i) {
                        e.needed = *needed;
                    }
                }
            }
            Event::CostIncurred {
                actor,
                output_tokens,
                usd,
                ..
            } => {
                self.usd_seen += usd;
                match actor {
                    Actor::Junior => {
                        s.cost.junior_usd += usd;
                        s.cost.junior_output_tokens += output_tokens;
                    }
                    Actor::Senior => {
                        s.cost.senior_usd += usd;
                        s.cost.senior_output_tokens += output_tokens;
                    }
                }
            }
            Event::SessionEnded {
                outcome,
                censored,
                steps,
                ticks,
                usd,
                ask: _,
            } => {
                s.outcome = Some(*outcome);
                s.censored = *censored;
                s.steps = s.steps.max(*steps);
                self.ended_ticks = Some(*ticks);
                self.ended_usd = Some(*usd);
            }
            Event::ProtectedTouched { .. } => s.protected_touched += 1,
            Event::Token { .. }
            | Event::ToolCalled { .. }
            | Event::ApprovalRequested { .. }
            | Event::ApprovalDecided { .. }
            | Event::ToolResulted { .. }
            | Event::CheckRan { .. }
            | Event::ExamplesRan { .. }
            | Event::CandidatesRan { .. }
            | Event::Fault { .. }
            | Event::ControlChanged { .. }
            | Event::Warning { .. } => {}
        }
    }

    /// Completes the summary. Earliness and shadow needs are only known here, once the
    /// session's length and outcome are.
    pub fn finish(self) -> SessionSummary {
        let mut s = self.summary;
        s.ticks = self.ended_ticks.unwrap_or(self.last_tick);
        s.usd = self.ended_usd.unwrap_or(self.usd_seen);
        let junior_failed = match s.outcome {
            Some(Outcome::Failure) => Some(true),
            Some(Outcome::Success) => Some(false),
            _ => None,
        };
        let ticks = s.ticks;
        for e in &mut s.escalations {
            e.earliness = (ticks > 0).then(|| e.tick as f64 / ticks as f64);
            if e.shadow {
                e.needed = junior_failed;
            }
        }
        s
    }
}

/// Folds a stream of events into summaries, one per `session_started` (a log normally holds
/// one session; events before the first start are folded into an unnamed one).
pub fn summarize(source: &Path, events: impl IntoIterator<Item = Event>) -> Vec<SessionSummary> {
    let mut done = Vec::new();
    let mut fold: Option<SessionFold> = None;
    for event in events {
        if matches!(event, Event::SessionStarted { .. }) {
            done.extend(fold.take().map(SessionFold::finish));
        }
        fold.get_or_insert_with(|| SessionFold::new(source))
            .push(&event);
    }
    done.extend(fold.map(SessionFold::finish));
    done
}

#[cfg(test)]
mod tests {
    use super::*;

    fn started(id: &str) -> Event {
        Event::SessionStarted {
            session_id: id.into(),
            task: "t".into(),
            repo: "r".into(),
            head: None,
            config_digest: "d".into(),
            junior_model: "j".into(),
            senior_model: "s".into(),
            policy: "myopic".into(),
            shadow: false,
            token_budget: 100,
            prior: 0.5,
        }
    }

    fn operator_escalation(tick: u64) -> Event {
        Event::Escalated {
            step: 1,
            tick,
            route: Route::Operator,
            reason: EscalationReason::Threshold,
            belief: 0.1,
            threshold: 0.2,
            why: vec![],
            shadow: false,
            propensity: None,
        }
    }

    fn answer(needed: Option<bool>) -> Event {
        Event::OperatorAnswered {
            step: 1,
            answer: "a".into(),
            needed,
            deferred_to_senior: false,
        }
    }

    #[test]
    fn answers_mark_operator_escalations_in_order_and_sessions_split_at_starts() {
        let events = vec![
            started("one"),
            operator_escalation(10),
            operator_escalation(20),
            answer(Some(true)),
            answer(None),
            Event::StepEnded {
                step: 3,
                actor: Actor::Junior,
                tick: 40,
                tool: None,
                ok: true,
                belief: 0.5,
                terms: vec![],
                checkpoint: None,
            },
            started("two"),
            operator_escalation(0),
        ];
        let summaries = summarize(Path::new("x.jsonl"), events);
        assert_eq!(summaries.len(), 2);
        let one = &summaries[0];
        assert_eq!(one.session_id, "one");
        assert_eq!((one.outcome, one.steps, one.ticks), (None, 3, 40));
        let marks: Vec<_> = one.escalations.iter().map(|e| e.needed).collect();
        assert_eq!(marks, [Some(true), None]);
        assert_eq!(one.escalations[0].earliness, Some(0.25));
        // No junior tokens at all: earliness is undefined, not a division by zero.
        assert_eq!(summaries[1].escalations[0].earliness, None);
        assert_eq!(summaries[1].route_taken(), Some(Route::Operator));
    }

    fn ended(outcome: Outcome) -> Event {
        Event::SessionEnded {
            outcome,
            censored: false,
            steps: 1,
            ticks: 10,
            usd: 0.0,
            ask: AskCounts::default(),
        }
    }

    fn counts(events: Vec<Event>) -> AskCounts {
        let mut all = vec![started("s")];
        all.extend(events);
        summarize(Path::new("x.jsonl"), all)[0].ask_counts()
    }

    fn shadow_escalation() -> Event {
        let mut e = operator_escalation(5);
        if let Event::Escalated { shadow, route, .. } = &mut e {
            *shadow = true;
            *route = Route::Senior;
        }
        e
    }

    /// The session's own Ask-F1 counts (what `session_ended` says): an operator's mark,
    /// a shadow escalation's outcome, nothing for a live takeover, a silent failure missed.
    #[test]
    fn ask_counts_follow_marks_shadow_outcomes_and_silent_failures() {
        let ask = |tp, fp, fn_| AskCounts { tp, fp, fn_ };
        let marked = vec![
            operator_escalation(1),
            answer(Some(true)),
            operator_escalation(2),
            answer(Some(false)),
            ended(Outcome::Success),
        ];
        assert_eq!(counts(marked), ask(1, 1, 0));
        let shadow = |o| vec![shadow_escalation(), ended(o)];
        assert_eq!(counts(shadow(Outcome::Failure)), ask(1, 0, 0));
        assert_eq!(counts(shadow(Outcome::Success)), ask(0, 1, 0));
        let mut live_senior = operator_escalation(3);
        if let Event::Escalated { route, .. } = &mut live_senior {
            *route = Route::Senior;
        }
        assert_eq!(
            counts(vec![live_senior, ended(Outcome::Failure)]),
            AskCounts::default()
        );
        assert_eq!(counts(vec![ended(Outcome::Failure)]), ask(0, 0, 1));
        assert_eq!(
            counts(vec![ended(Outcome::Unlabelled)]),
            AskCounts::default()
        );
    }
}
