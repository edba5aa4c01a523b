//! Faults below the model: 5xx, 429 with `Retry-After`, a connect timeout, a stream that
//! falls silent. Transient ones are retried on the same route; persistent ones hand the
//! junior's work to the senior as a fault (`EscalationReason::Fault`), never as evidence
//! against the junior.

use std::time::Duration;

use handoff::agent::session::Approvals;
use handoff::demo::script::confident;
use handoff::demo::server::{RawChunk, Reply, Script, StreamEnd};
use handoff::demo::sse::completion;
use handoff::log::LogReader;
use handoff::protocol::{Actor, EscalationReason, Event, Outcome, Route};
use pretty_assertions::assert_eq;

use super::common::{
    Blackhole, CHECK, FILES, fault, faults, intact, judge_never_saw_a_fault, write_then_finish,
};
use crate::agent::support::{config, repo, run, servers};

#[tokio::test]
async fn a_transient_5xx_is_retried_on_the_same_route() {
    let [write, finish] = write_then_finish();
    let junior = Script::new(vec![Reply::error(503, "overloaded"), write, finish]);
    let (j, s) = servers(junior, Script::new(vec![])).await;
    let dir = repo(&FILES);
    let mut cfg = config(&j, &s);
    cfg.agent.check = Some(CHECK.into());
    let ran = run(
        cfg,
        dir.path(),
        "create done.txt",
        vec![],
        Approvals::Refused,
    )
    .await;
    let events = intact(&ran.log, Outcome::Success);
    assert_eq!(faults(&events), vec![fault(Actor::Junior, "server", 1)]);
    assert_eq!(ran.summary.escalations.len(), 0);
    assert_eq!(j.requests().len(), 3, "one failed request, two good ones");
    assert_eq!(s.requests().len(), 0);
    judge_never_saw_a_fault(&events);
}

#[tokio::test]
async fn a_persistent_5xx_hands_the_work_to_the_senior_as_a_fault() {
    // max_retries = 2: three attempts, then the junior's endpoint counts as gone.
    let junior = Script::new(vec![
        Reply::error(500, "boom"),
        Reply::error(502, "bad gateway"),
        Reply::error(503, "still down"),
    ]);
    let senior = Script::new(write_then_finish().to_vec());
    let (j, s) = servers(junior, senior).await;
    let dir = repo(&FILES);
    let mut cfg = config(&j, &s);
    cfg.policy.handoff = handoff::config::HandoffMode::Rest;
    cfg.agent.check = Some(CHECK.into());
    let ran = run(
        cfg,
        dir.path(),
        "create done.txt",
        vec![],
        Approvals::Refused,
    )
    .await;
    let events = intact(&ran.log, Outcome::Success);
    assert_eq!(
        faults(&events),
        (1..=3)
            .map(|a| fault(Actor::Junior, "server", a))
            .collect::<Vec<_>>()
    );
    let esc = &ran.summary.escalations;
    assert_eq!(esc.len(), 1, "{esc:?}");
    assert_eq!(
        (esc[0].route, esc[0].reason),
        (Route::Senior, EscalationReason::Fault)
    );
    assert_eq!(j.requests().len(), 3);
    assert_eq!(s.requests().len(), 2);
    // No junior token was ever judged: the fault did not move the belief.
    assert_eq!(ran.count("belief_updated"), 0);
}

#[tokio::test]
async fn a_429_waits_for_retry_after_then_retries() {
    let [write, finish] = write_then_finish();
    let junior = Script::new(vec![
        Reply::error(429, "slow down").with_header("retry-after", "1"),
        write,
        finish,
    ]);
    let (j, s) = servers(junior, Script::new(vec![])).await;
    let dir = repo(&FILES);
    let mut cfg = config(&j, &s);
    cfg.agent.check = Some(CHECK.into());
    let ran = run(
        cfg,
        dir.path(),
        "create done.txt",
        vec![],
        Approvals::Refused,
    )
    .await;
    let events = intact(&ran.log, Outcome::Success);
    assert_eq!(
        faults(&events),
        vec![fault(Actor::Junior, "rate_limited", 1)]
    );
    // The retry's first token came at least Retry-After after the fault.
    let stamped: Vec<_> = LogReader::open(&ran.log)
        .expect("log")
        .map(|s| s.expect("line"))
        .collect();
    let at = stamped
        .iter()
        .position(|s| s.event.kind() == "fault")
        .expect("a fault");
    let next_token = stamped[at..]
        .iter()
        .find(|s| s.event.kind() == "token")
        .expect("the retry streamed");
    let waited = next_token.t_ms - stamped[at].t_ms;
    assert!(
        waited >= 1000,
        "retried after {waited} ms, Retry-After was 1 s"
    );
    assert_eq!(ran.summary.escalations.len(), 0);
    assert_eq!(j.requests().len(), 3);
}

#[tokio::test]
async fn a_429_asking_for_too_long_a_wait_hands_off_at_once() {
    let junior = Script::new(vec![
        Reply::error(429, "quota").with_header("retry-after", "3600"),
    ]);
    let senior = Script::new(write_then_finish().to_vec());
    let (j, s) = servers(junior, senior).await;
    let dir = repo(&FILES);
    let mut cfg = config(&j, &s);
    cfg.policy.handoff = handoff::config::HandoffMode::Rest;
    cfg.agent.check = Some(CHECK.into());
    let started = std::time::Instant::now();
    let ran = run(
        cfg,
        dir.path(),
        "create done.txt",
        vec![],
        Approvals::Refused,
    )
    .await;
    assert!(started.elapsed() < Duration::from_secs(60));
    let events = intact(&ran.log, Outcome::Success);
    assert_eq!(
        faults(&events),
        vec![fault(Actor::Junior, "rate_limited", 1)]
    );
    assert_eq!(j.requests().len(), 1, "an hour is not waited for");
    let esc = &ran.summary.escalations;
    assert_eq!(
        esc.iter().map(|e| (e.route, e.reason)).collect::<Vec<_>>(),
        vec![(Route::Senior, EscalationReason::Fault)]
    );
}

#[tokio::test]
async fn a_connect_timeout_is_retried_then_handed_to_the_senior() {
    let hole = Blackhole::new();
    let senior = Script::new(write_then_finish().to_vec());
    let (j, s) = servers(Script::new(vec![]), senior).await;
    let dir = repo(&FILES);
    let mut cfg = config(&j, &s);
    cfg.junior.base_url = hole.base_url();
    cfg.junior.connect_timeout_s = 0.3;
    cfg.junior.max_retries = 1;
    cfg.policy.handoff = handoff::config::HandoffMode::Rest;
    cfg.agent.check = Some(CHECK.into());
    let ran = run(
        cfg,
        dir.path(),
        "create done.txt",
        vec![],
        Approvals::Refused,
    )
    .await;
    let events = intact(&ran.log, Outcome::Success);
    assert_eq!(
        faults(&events),
        vec![
            fault(Actor::Junior, "timeout", 1),
            fault(Actor::Junior, "timeout", 2)
        ]
    );
    let escalated = events.iter().find_map(|e| match e {
        Event::Escalated { route, reason, .. } => Some((*route, *reason)),
        _ => None,
    });
    assert_eq!(escalated, Some((Route::Senior, EscalationReason::Fault)));
    assert_eq!(j.requests().len(), 0);
    assert_eq!(s.requests().len(), 2);
}

#[tokio::test]
async fn a_stream_that_falls_silent_times_out_and_is_retried() {
    let [write, finish] = write_then_finish();
    let chunks = completion(&confident("Writing it now."), &[], 10);
    // Two tokens, then an open connection that never sends another byte.
    let stalled = Reply::Sse {
        chunks: chunks[..2].iter().cloned().map(RawChunk::new).collect(),
        end: StreamEnd::Hang,
    };
    let junior = Script::new(vec![stalled, write, finish]);
    let (j, s) = servers(junior, Script::new(vec![])).await;
    let dir = repo(&FILES);
    let mut cfg = config(&j, &s);
    cfg.junior.idle_timeout_s = 0.3;
    cfg.agent.check = Some(CHECK.into());
    let ran = run(
        cfg,
        dir.path(),
        "create done.txt",
        vec![],
        Approvals::Refused,
    )
    .await;
    let events = intact(&ran.log, Outcome::Success);
    assert_eq!(faults(&events), vec![fault(Actor::Junior, "timeout", 1)]);
    assert_eq!(j.requests().len(), 3);
    // The client hung up on the silent stream instead of waiting on it.
    assert!(
        j.wait_closed(1, Duration::from_secs(5)).await.is_some(),
        "the stalled connection was closed"
    );
    judge_never_saw_a_fault(&events);
}
