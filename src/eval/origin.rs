//! Ask-F1 by who asked: the junior's own `ask_operator` calls, the judge (the belief fell
//! under τ), or the loop's rules (stuck, a dead endpoint), scored from session logs against
//! the suite's registered blockers.
//!
//! The seed blog's claim is that "the trigger has to live outside the model": a model asks
//! too rarely, or about the wrong thing. One run of the default policy holds all three kinds
//! of question side by side, so splitting its questions by origin compares the triggers on
//! the same sessions.
//!
//! Two units, both over the questions of one origin:
//! - **per blocker**, pooled as HiL-Bench pools it ([`super::ask::pool`]): precision =
//!   distinct blockers hit / questions asked, recall = distinct blockers hit / blockers
//!   registered;
//! - **per session**: a session is a true positive when a question of this origin hit one
//!   of its task's blockers, a false positive when it asked and hit none, a false negative
//!   when its task has a blocker and no question of this origin hit one.
//!
//! Which blocker a question hit is decided by the strict operator's rule
//! ([`super::operator::screen`] and [`super::operator::match_phrases`], at most
//! [`super::operator::MAX_ANSWERED`] hits a session), re-judged from the question's text, so
//! logs made under an older, more lenient operator are scored by today's rule; or, with
//! [`Attribution::AsAnswered`], by what the operator did at run time (its answer is that
//! blocker's hidden answer).

use std::collections::BTreeMap;

use serde::Serialize;

use super::ask::{BlockerAsk, TaskQuestions, pool};
use super::suite::Blocker;
use crate::metrics::{Interval, SessionAsk, SessionAskScores, bootstrap_picks};
use crate::protocol::{EscalationReason, Event};

/// Who put a question to the operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Origin {
    /// The junior called `ask_operator`.
    Junior,
    /// The judge: the belief fell below the threshold (or the operator forced it).
    Judge,
    /// The loop's own rules: stuck, or a failing endpoint.
    Loop,
    /// The one question before the first step (`policy.ask_first`).
    Start,
}

impl Origin {
    pub const ALL: [Origin; 4] = [Origin::Junior, Origin::Judge, Origin::Loop, Origin::Start];

    fn of(reason: EscalationReason, self_initiated: bool) -> Origin {
        match reason {
            _ if self_initiated => Origin::Junior,
            EscalationReason::SelfAsk => Origin::Junior,
            EscalationReason::Threshold | EscalationReason::Forced => Origin::Judge,
            EscalationReason::Stuck
            | EscalationReason::Fault
            | EscalationReason::CheckFailed
            | EscalationReason::ExamplesFailed => Origin::Loop,
            EscalationReason::AtStart => Origin::Start,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Origin::Junior => "junior's own ask_operator",
            Origin::Judge => "judge (B < τ)",
            Origin::Loop => "loop rule (stuck, endpoint)",
            Origin::Start => "once at the start",
        }
    }
}

/// One question of a session: who asked, and the blocker the operator's answer gave away.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Asked {
    pub origin: Origin,
    pub question: String,
    pub blocker: Option<String>,
}

/// How a question is matched to a blocker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Attribution {
    /// Today's strict operator, re-judged from the question's text.
    Strict,
    /// What the operator answered when the session ran.
    AsAnswered,
}

/// The questions of one session's events, in order. An `escalated` event names the reason
/// of the `operator_asked` that follows it; the next `operator_answered` says what came of it.
pub fn questions<'a>(
    events: impl IntoIterator<Item = &'a Event>,
    blockers: &[Blocker],
    attribution: Attribution,
) -> Vec<Asked> {
    let asked = answered_questions(events, blockers);
    match attribution {
        Attribution::AsAnswered => asked,
        Attribution::Strict => {
            let mut hits = 0;
            asked
                .into_iter()
                .map(|mut a| {
                    a.blocker = (hits < super::operator::MAX_ANSWERED)
                        .then(|| super::operator::screen(&a.question).ok())
                        .flatten()
                        .and_then(|text| super::operator::match_phrases(blockers, &text))
                        .map(|b| b.id.clone());
                    hits += usize::from(a.blocker.is_some());
                    a
                })
                .collect()
        }
    }
}

fn answered_questions<'a>(
    events: impl IntoIterator<Item = &'a Event>,
    blockers: &[Blocker],
) -> Vec<Asked> {
    let mut out = Vec::new();
    let mut reason = EscalationReason::Threshold;
    let mut open: Option<Asked> = None;
    for event in events {
        match event {
            Event::Escalated { reason: r, .. } => reason = *r,
            Event::OperatorAsked {
                question,
                self_initiated,
                ..
            } => {
                out.extend(open.take());
                open = Some(Asked {
                    origin: Origin::of(reason, *self_initiated),
                    question: question.clone(),
                    blocker: None,
                });
            }
            Event::OperatorAnswered { answer, .. } => {
                if let Some(mut asked) = open.take() {
                    asked.blocker = blockers
                        .iter()
                        .find(|b| b.answer.trim() == answer.trim())
                        .map(|b| b.id.clone());
                    out.push(asked);
                }
            }
            _ => {}
        }
    }
    out.extend(open);
    out
}

/// One origin's scores in both units.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OriginScore {
    pub origin: Origin,
    pub questions: u64,
    pub per_blocker: BlockerAsk,
    /// Session-level counts of this origin's questions (see the module's definition).
    pub per_session: SessionAskScores,
    /// 95 % percentile-bootstrap interval of the per-blocker F1, sessions resampled
    /// ([`BOOTSTRAP_REPS`] draws, seed [`BOOTSTRAP_SEED`]).
    pub per_blocker_f1: Option<Interval>,
    /// The same for the per-session F1.
    pub per_session_f1: Option<Interval>,
}

/// Resamples of the Ask-F1 intervals; fixed, so `eval asks` and `report` print the same.
pub const BOOTSTRAP_REPS: usize = 2000;
/// Seed of the Ask-F1 intervals.
pub const BOOTSTRAP_SEED: u64 = 31;

/// One session to score: its task's registered blockers and its questions.
pub struct ScoredSession {
    pub task: String,
    pub registered: usize,
    pub asked: Vec<Asked>,
}

/// One origin's two scores over the sessions `picks` names (repeats count again).
fn score_picks(
    origin: Origin,
    sessions: &[ScoredSession],
    picks: &[usize],
) -> (BlockerAsk, SessionAskScores) {
    let mut per_task: Vec<TaskQuestions> = Vec::with_capacity(picks.len());
    let mut counts = SessionAsk::default();
    for s in picks.iter().filter_map(|&i| sessions.get(i)) {
        let mine: Vec<&Asked> = s.asked.iter().filter(|a| a.origin == origin).collect();
        let hit = mine.iter().any(|a| a.blocker.is_some());
        match (hit, mine.is_empty(), s.registered > 0) {
            (true, _, _) => counts.tp += 1,
            (false, false, _) => counts.fp += 1,
            (false, true, true) => counts.fn_ += 1,
            (false, true, false) => counts.tn += 1,
        }
        per_task.push(TaskQuestions {
            matched: mine.iter().map(|a| a.blocker.clone()).collect(),
            registered: s.registered,
        });
    }
    (pool(&per_task), SessionAskScores::from(&counts))
}

/// Scores of every origin over `sessions`, with intervals over sessions.
pub fn score(sessions: &[ScoredSession]) -> Vec<OriginScore> {
    let n = sessions.len();
    let all: Vec<usize> = (0..n).collect();
    Origin::ALL
        .into_iter()
        .map(|origin| {
            let (per_blocker, per_session) = score_picks(origin, sessions, &all);
            let interval = |f: fn(&(BlockerAsk, SessionAskScores)) -> Option<f64>| {
                let stat = |picks: &[usize]| f(&score_picks(origin, sessions, picks));
                bootstrap_picks(n, stat, BOOTSTRAP_REPS, BOOTSTRAP_SEED)
            };
            OriginScore {
                origin,
                questions: per_blocker.questions,
                per_blocker_f1: interval(|s| s.0.f1),
                per_session_f1: interval(|s| s.1.f1),
                per_blocker,
                per_session,
            }
        })
        .collect()
}

/// The table of [`score`] as text, with the questions that hit a blocker listed.
pub fn to_text(scores: &[OriginScore], sessions: &[ScoredSession]) -> String {
    let n = |v: Option<f64>| v.map_or_else(|| "-".to_string(), |v| format!("{v:.2}"));
    let registered: usize = sessions.iter().map(|s| s.registered).sum();
    let mut out = format!(
        "{} sessions, {} blockers registered\n\n  {:<30} {:>9}  {:>24}  {:>14}  {:>30}  {:>14}\n",
        sessions.len(),
        registered,
        "who asked",
        "questions",
        "per blocker P / R / F1",
        "F1 95 %",
        "per session TP FP FN · P / R / F1",
        "F1 95 %"
    );
    let ci = |i: &Option<Interval>| {
        i.map_or_else(
            || "-".to_string(),
            |i| format!("[{:.2}, {:.2}]", i.lower, i.upper),
        )
    };
    for s in scores {
        let b = &s.per_blocker;
        let c = &s.per_session;
        out.push_str(&format!(
            "  {:<30} {:>9}  {:>24}  {:>14}  {:>30}  {:>14}\n",
            s.origin.name(),
            s.questions,
            format!("{} / {} / {}", n(b.precision), n(b.recall), n(b.f1)),
            ci(&s.per_blocker_f1),
            format!(
                "{} {} {} · {} / {} / {}",
                c.counts.tp,
                c.counts.fp,
                c.counts.fn_,
                n(c.precision),
                n(c.recall),
                n(c.f1)
            ),
            ci(&s.per_session_f1),
        ));
    }
    let mut hits: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for s in sessions {
        for a in s.asked.iter().filter(|a| a.blocker.is_some()) {
            hits.entry(s.task.as_str()).or_default().push(format!(
                "{} ({}): {}",
                a.blocker.as_deref().unwrap_or(""),
                a.origin.name(),
                crate::protocol::visible::visible(&a.question)
            ));
        }
    }
    if !hits.is_empty() {
        out.push_str("\nquestions that hit a blocker:\n");
        for (task, list) in hits {
            for h in list {
                out.push_str(&format!("  {task}: {h}\n"));
            }
        }
    }
    out
}

/// Sessions of the logs in `files`, each matched to its suite task by the task text its
/// `session_started` logged (else by the file name without `.jsonl`/`.jsonl.gz`); logs of no
/// task of the suite, and unreadable files or lines, become warnings.
pub fn load_sessions(
    suite: &super::suite::Suite,
    files: &[std::path::PathBuf],
    attribution: Attribution,
) -> (Vec<ScoredSession>, Vec<String>) {
    let mut sessions = Vec::new();
    let mut warnings = Vec::new();
    for file in files {
        let reader = match crate::log::LogReader::open(file) {
            Ok(r) => r,
            Err(e) => {
                warnings.push(e.to_string());
                continue;
            }
        };
        let mut events = Vec::new();
        for item in reader {
            match item {
                Ok(stamped) => events.push(stamped.event),
                Err(w) => warnings.push(w.to_string()),
            }
        }
        let text = events.iter().find_map(|e| match e {
            Event::SessionStarted { task, .. } => Some(task.clone()),
            _ => None,
        });
        let Some(task) = suite.task_of_log(text.as_deref(), file) else {
            warnings.push(format!("{}: no task of the suite", file.display()));
            continue;
        };
        sessions.push(ScoredSession {
            task: task.id.clone(),
            registered: task.blockers.len(),
            asked: questions(&events, &task.blockers, attribution),
        });
    }
    (sessions, warnings)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blocker(id: &str, answer: &str) -> Blocker {
        Blocker {
            id: id.into(),
            description: String::new(),
            answer: answer.into(),
            phrases: vec![],
        }
    }

    fn escalated(reason: EscalationReason) -> Event {
        let mut e = Event::samples()
            .into_iter()
            .find(|e| matches!(e, Event::Escalated { .. }))
            .expect("sample");
        if let Event::Escalated { reason: r, .. } = &mut e {
            *r = reason;
        }
        e
    }

    fn asked(q: &str, self_initiated: bool) -> Event {
        Event::OperatorAsked {
            step: 1,
            question: q.into(),
            options: vec![],
            default_assumption: None,
            self_initiated,
            topic: None,
        }
    }

    fn answered(a: &str) -> Event {
        Event::OperatorAnswered {
            step: 1,
            answer: a.into(),
            needed: None,
            deferred_to_senior: false,
        }
    }

    #[test]
    fn questions_take_their_origin_from_the_escalation_and_their_hit_from_the_answer() {
        let blockers = [
            blocker("dup", "First wins."),
            blocker("case", "Lower case."),
        ];
        let events = [
            escalated(EscalationReason::SelfAsk),
            asked("what path?", true),
            answered("I have no further information."),
            escalated(EscalationReason::Threshold),
            asked("which duplicate wins?", false),
            answered("First wins."),
            escalated(EscalationReason::Stuck),
            asked("stuck: what now?", false),
            answered("I have no further information."),
        ];
        let q = questions(&events, &blockers, Attribution::AsAnswered);
        let got: Vec<(Origin, Option<&str>)> =
            q.iter().map(|a| (a.origin, a.blocker.as_deref())).collect();
        assert_eq!(
            got,
            [
                (Origin::Junior, None),
                (Origin::Judge, Some("dup")),
                (Origin::Loop, None)
            ]
        );
        let sessions = [
            ScoredSession {
                task: "a".into(),
                registered: 2,
                asked: q,
            },
            ScoredSession {
                task: "b".into(),
                registered: 1,
                asked: vec![],
            },
        ];
        let scores = score(&sessions);
        let judge = &scores[1];
        assert_eq!(judge.origin, Origin::Judge);
        // One question, one blocker hit, three registered.
        assert_eq!(judge.per_blocker.precision, Some(1.0));
        assert_eq!(judge.per_blocker.recall, Some(1.0 / 3.0));
        // Session a hit, session b missed.
        assert_eq!(
            (judge.per_session.counts.tp, judge.per_session.counts.fn_),
            (1, 1)
        );
        let junior = &scores[0];
        assert_eq!(
            (junior.per_session.counts.fp, junior.per_session.counts.fn_),
            (1, 1)
        );
        assert_eq!(junior.per_blocker.f1, Some(0.0));
        assert!(to_text(&scores, &sessions).contains("dup (judge (B < τ)): which duplicate wins?"));
    }

    #[test]
    fn the_strict_rule_rejudges_from_the_question_and_stops_after_three_hits() {
        let mut dup = blocker("dup", "First wins.");
        dup.phrases = vec!["duplicate".into()];
        let blockers = [dup];
        // The run-time operator answered the vague question; today's rule does not.
        let mut events = vec![
            escalated(EscalationReason::Threshold),
            asked("What should the function do?", false),
            answered("First wins."),
        ];
        for _ in 0..4 {
            events.push(escalated(EscalationReason::SelfAsk));
            events.push(asked("Which duplicate key wins?", true));
            events.push(answered("First wins."));
        }
        let as_answered = questions(&events, &blockers, Attribution::AsAnswered);
        assert!(as_answered.iter().all(|a| a.blocker.is_some()));
        let strict = questions(&events, &blockers, Attribution::Strict);
        let hits: Vec<bool> = strict.iter().map(|a| a.blocker.is_some()).collect();
        assert_eq!(hits, [false, true, true, true, false]);
    }
}
