//! When the route the judge hands off to is itself gone: the session stops as `aborted`
//! with every fault in the log, instead of hanging or pretending the junior failed.

use handoff::agent::session::Approvals;
use handoff::config::{HandoffMode, RouteMode};
use handoff::demo::script::{confident, hesitant, join, reply};
use handoff::demo::server::Script;
use handoff::protocol::{Actor, EscalationReason, Event, Outcome, Route};
use pretty_assertions::assert_eq;
use serde_json::json;

use super::common::{FILES, closed_port_url, fault, faults, intact};
use crate::agent::support::{config, repo, run, servers};

/// Hesitant enough that the built-in prior falls below τ = 0.45 mid-stream.
fn lost_junior() -> Script {
    let lost = "I am not sure which file this is about or what the format should be, ".repeat(8);
    Script::new(vec![reply(
        join([confident("Now"), hesitant(&lost)]),
        Some((
            "c1",
            "write_file",
            json!({"path": "wrong.txt", "content": "x"}),
        )),
    )])
}

#[tokio::test]
async fn an_unreachable_senior_after_a_threshold_escalation_aborts_the_session() {
    let (j, s) = servers(lost_junior(), Script::new(vec![])).await;
    let dir = repo(&FILES);
    let mut cfg = config(&j, &s);
    cfg.senior.base_url = closed_port_url();
    cfg.policy.route = RouteMode::Senior;
    cfg.policy.handoff = HandoffMode::Rest;
    let ran = run(
        cfg,
        dir.path(),
        "create done.txt",
        vec![],
        Approvals::Refused,
    )
    .await;
    let events = intact(&ran.log, Outcome::Aborted);
    // max_retries = 1 for the senior: two attempts, both refused.
    assert_eq!(
        faults(&events),
        vec![
            fault(Actor::Senior, "connect", 1),
            fault(Actor::Senior, "connect", 2)
        ]
    );
    let esc = &ran.summary.escalations;
    assert_eq!(
        esc.iter().map(|e| (e.route, e.reason)).collect::<Vec<_>>(),
        vec![(Route::Senior, EscalationReason::Threshold)]
    );
    assert!(
        !dir.path().join("wrong.txt").exists(),
        "the cut call never ran"
    );
    match events.last() {
        Some(Event::SessionEnded { censored, .. }) => assert!(*censored),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn an_unreachable_senior_at_triage_still_ends_in_a_defined_state() {
    let (j, s) = servers(lost_junior(), Script::new(vec![])).await;
    let dir = repo(&FILES);
    let mut cfg = config(&j, &s);
    cfg.senior.base_url = closed_port_url();
    cfg.policy.route = RouteMode::Triage;
    let ran = run(
        cfg,
        dir.path(),
        "create done.txt",
        vec![],
        Approvals::Refused,
    )
    .await;
    let events = intact(&ran.log, Outcome::Aborted);
    let kinds: Vec<(Actor, String)> = faults(&events)
        .into_iter()
        .map(|f| (f.actor, f.kind))
        .collect();
    // Triage fails (2 attempts), the fallback is the senior, which fails too (2 attempts).
    assert_eq!(kinds, vec![(Actor::Senior, "connect".to_string()); 4]);
    assert_eq!(ran.count("senior_took_over"), 1);
}

#[tokio::test]
async fn both_endpoints_gone_aborts_after_the_junior_fault_handoff() {
    let (j, s) = servers(Script::new(vec![]), Script::new(vec![])).await;
    let dir = repo(&FILES);
    let mut cfg = config(&j, &s);
    cfg.junior.base_url = closed_port_url();
    cfg.senior.base_url = closed_port_url();
    let ran = run(
        cfg,
        dir.path(),
        "create done.txt",
        vec![],
        Approvals::Refused,
    )
    .await;
    let events = intact(&ran.log, Outcome::Aborted);
    let actors: Vec<(Actor, u32)> = faults(&events)
        .into_iter()
        .map(|f| (f.actor, f.attempt))
        .collect();
    assert_eq!(
        actors,
        vec![
            (Actor::Junior, 1),
            (Actor::Junior, 2),
            (Actor::Junior, 3),
            (Actor::Senior, 1),
            (Actor::Senior, 2)
        ]
    );
    let esc = &ran.summary.escalations;
    assert_eq!(
        esc.iter().map(|e| e.reason).collect::<Vec<_>>(),
        vec![EscalationReason::Fault]
    );
    assert_eq!(ran.summary.steps, 2, "one junior step, one senior step");
}
