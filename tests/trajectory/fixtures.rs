//! Fixtures shared by the trajectory tests: one event of every variant, and small sessions.

use std::path::Path;

use handoff::log::LogWriter;
use handoff::protocol::{
    Actor, AskCounts, EscalationReason, Event, EvidenceTerm, Outcome, Route, SignalKind, Stamped,
};

pub fn term() -> EvidenceTerm {
    EvidenceTerm {
        signal: SignalKind::Entropy,
        value: 1.25,
        llr: -0.125,
    }
}

/// One event of every variant (the schema's own samples).
pub fn every_variant() -> Vec<Event> {
    Event::samples()
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
        propensity: None,
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
