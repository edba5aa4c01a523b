//! Fixtures shared by the trajectory tests: one event of every variant, and small sessions.

use std::path::Path;

use handoff::event::{
    Actor, Alternative, AskCounts, EscalationReason, Event, EvidenceTerm, Outcome, Route,
    SignalKind, Stamped,
};
use handoff::trajectory::LogWriter;

pub fn term() -> EvidenceTerm {
    EvidenceTerm {
        signal: SignalKind::Entropy,
        value: 1.25,
        llr: -0.125,
    }
}

/// One instance of every variant; the match fails to compile when a variant is added to the
/// schema without being listed here.
pub fn every_variant() -> Vec<Event> {
    let all = vec![
        Event::SessionStarted {
            session_id: "s1".into(),
            task: "fix the test".into(),
            repo: "/tmp/r".into(),
            head: Some("abc".into()),
            config_digest: "d".into(),
            junior_model: "j".into(),
            senior_model: "s".into(),
            policy: "optimal".into(),
            shadow: false,
            token_budget: 4096,
            prior: 0.75,
        },
        Event::StepStarted {
            step: 1,
            actor: Actor::Junior,
            tick: 0,
        },
        Event::Token {
            actor: Actor::Junior,
            tick: 1,
            text: "fn".into(),
            logprob: Some(-0.5),
            top: vec![Alternative {
                token: "fn".into(),
                logprob: -0.5,
            }],
        },
        Event::Token {
            actor: Actor::Senior,
            tick: 1,
            text: "x".into(),
            logprob: None,
            top: vec![],
        },
        Event::BeliefUpdated {
            tick: 1,
            belief: 0.7,
            log_odds: 0.85,
            threshold: 0.4,
            policy: "optimal".into(),
            terms: vec![term()],
        },
        Event::ToolCalled {
            step: 1,
            actor: Actor::Junior,
            call_id: "c1".into(),
            name: "read_file".into(),
            arguments: serde_json::json!({"path": "src/lib.rs"}),
        },
        Event::ApprovalDecided {
            step: 1,
            call_id: "c1".into(),
            approved: false,
            by: "policy".into(),
        },
        Event::ToolResulted {
            step: 1,
            call_id: "c1".into(),
            name: "read_file".into(),
            ok: true,
            output: "fn main() {}".into(),
        },
        Event::StepEnded {
            step: 1,
            actor: Actor::Junior,
            tick: 12,
            tool: Some("read_file".into()),
            ok: true,
            belief: 0.6,
            terms: vec![term()],
            checkpoint: Some("tree".into()),
        },
        Event::Escalated {
            step: 2,
            tick: 40,
            route: Route::Operator,
            reason: EscalationReason::Threshold,
            belief: 0.3,
            threshold: 0.4,
            why: vec![term()],
            shadow: true,
        },
        Event::OperatorAsked {
            step: 2,
            question: "Which date format?".into(),
            options: vec!["ISO".into(), "US".into()],
            default_assumption: Some("ISO".into()),
            self_initiated: false,
        },
        Event::OperatorAnswered {
            step: 2,
            answer: "ISO".into(),
            needed: Some(true),
            deferred_to_senior: false,
        },
        Event::SeniorTookOver {
            step: 3,
            tick: 50,
            mode: "step".into(),
            context_chars: 1200,
        },
        Event::SeniorReturned { step: 3, tick: 50 },
        Event::CostIncurred {
            actor: Actor::Senior,
            model: "s".into(),
            input_tokens: 100,
            output_tokens: 20,
            usd: 0.001,
            estimated: false,
        },
        Event::CheckRan {
            command: "cargo test".into(),
            exit_code: Some(0),
            passed: true,
            output_tail: "ok".into(),
        },
        Event::Fault {
            actor: Actor::Junior,
            kind: "server".into(),
            message: "503".into(),
            retryable: true,
            attempt: 1,
        },
        Event::Warning {
            kind: "no_logprobs".into(),
            message: "judge uses step evidence only".into(),
        },
        Event::SessionEnded {
            outcome: Outcome::Success,
            censored: true,
            steps: 3,
            ticks: 50,
            usd: 0.002,
            ask: AskCounts {
                tp: 1,
                fp: 0,
                fn_: 0,
            },
        },
    ];
    for e in &all {
        match e {
            Event::SessionStarted { .. }
            | Event::StepStarted { .. }
            | Event::Token { .. }
            | Event::BeliefUpdated { .. }
            | Event::ToolCalled { .. }
            | Event::ApprovalDecided { .. }
            | Event::ToolResulted { .. }
            | Event::StepEnded { .. }
            | Event::Escalated { .. }
            | Event::OperatorAsked { .. }
            | Event::OperatorAnswered { .. }
            | Event::SeniorTookOver { .. }
            | Event::SeniorReturned { .. }
            | Event::CostIncurred { .. }
            | Event::CheckRan { .. }
            | Event::Fault { .. }
            | Event::Warning { .. }
            | Event::SessionEnded { .. } => {}
        }
    }
    all
}

/// Stamps events with their index as milliseconds.
pub fn stamped(events: Vec<Event>) -> Vec<Stamped> {
    events
        .into_iter()
        .enumerate()
        .map(|(i, event)| Stamped {
            t_ms: i as u64,
            event,
        })
        .collect()
}

/// Writes a complete log with the synchronous writer.
pub fn write_log(path: &Path, events: Vec<Event>) {
    let mut writer = LogWriter::new(path, "digest");
    for e in stamped(events) {
        writer.append(&e).expect("append");
    }
    writer.close().expect("close");
}

pub fn started(id: &str, shadow: bool) -> Event {
    Event::SessionStarted {
        session_id: id.into(),
        task: "t".into(),
        repo: "r".into(),
        head: None,
        config_digest: "digest".into(),
        junior_model: "j".into(),
        senior_model: "s".into(),
        policy: "optimal".into(),
        shadow,
        token_budget: 4096,
        prior: 0.8,
    }
}

pub fn escalated(tick: u64, route: Route, reason: EscalationReason, shadow: bool) -> Event {
    Event::Escalated {
        step: 1,
        tick,
        route,
        reason,
        belief: 0.2,
        threshold: 0.3,
        why: vec![term()],
        shadow,
    }
}

pub fn cost(actor: Actor, usd: f64) -> Event {
    Event::CostIncurred {
        actor,
        model: "m".into(),
        input_tokens: 10,
        output_tokens: 5,
        usd,
        estimated: false,
    }
}

pub fn ended(outcome: Outcome, censored: bool, ticks: u64, usd: f64) -> Event {
    Event::SessionEnded {
        outcome,
        censored,
        steps: 2,
        ticks,
        usd,
        ask: AskCounts::default(),
    }
}

pub fn step_ended(tick: u64) -> Event {
    Event::StepEnded {
        step: 1,
        actor: Actor::Junior,
        tick,
        tool: None,
        ok: true,
        belief: 0.5,
        terms: vec![],
        checkpoint: None,
    }
}
