//! Faults in the stream itself: dropped mid-token, a malformed chunk, an error object inside
//! an HTTP-200 stream, and logprobs that never come. Broken streams are retried (the tokens
//! that did arrive stay judged: they are the junior's); a server without logprobs degrades
//! the judge to step evidence with one warning per response.

use std::time::Duration;

use bytes::Bytes;
use handoff::agent::session::Approvals;
use handoff::demo::script::confident;
use handoff::demo::server::{RawChunk, Reply, Script, StreamEnd};
use handoff::demo::sse::{self, completion};
use handoff::protocol::{Actor, Event, Outcome};
use pretty_assertions::assert_eq;
use serde_json::json;

use super::common::{
    CHECK, FILES, fault, faults, intact, judge_never_saw_a_fault, write_then_finish,
};
use crate::agent::support::{Ran, config, repo, run, servers};

/// The junior's first reply as whole chunks (tokens, a write call, finish, usage, done).
fn first_reply() -> Vec<Bytes> {
    completion(
        &confident("Writing the done file now."),
        &[(
            "w1",
            "write_file",
            r#"{"path":"done.txt","content":"done\n"}"#,
        )],
        10,
    )
}

/// Runs `broken`, then the good first reply, then finish; returns the session.
async fn broken_then_good(broken: Reply) -> (Ran, usize) {
    let [_, finish] = write_then_finish();
    let junior = Script::new(vec![
        broken,
        Reply::sse(first_reply(), Duration::ZERO),
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
    assert_eq!(s.requests().len(), 0, "nothing was handed off");
    (ran, j.requests().len())
}

fn junior_tokens(events: &[Event]) -> usize {
    events
        .iter()
        .filter(|e| {
            matches!(
                e,
                Event::Token {
                    actor: Actor::Junior,
                    ..
                }
            )
        })
        .count()
}

#[tokio::test]
async fn a_stream_dropped_mid_token_is_retried_and_its_tokens_stay_judged() {
    let chunks = first_reply();
    // Three whole token chunks, then half of the fourth's bytes, then a dead connection.
    let fourth = chunks[3].clone();
    let mut raw: Vec<RawChunk> = chunks[..3].iter().cloned().map(RawChunk::new).collect();
    raw.push(RawChunk::new(fourth.slice(..fourth.len() / 2)));
    let (ran, requests) = broken_then_good(Reply::Sse {
        chunks: raw,
        end: StreamEnd::Abort,
    })
    .await;
    let events = intact(&ran.log, Outcome::Success);
    assert_eq!(faults(&events), vec![fault(Actor::Junior, "protocol", 1)]);
    assert_eq!(requests, 3);
    let whole = confident("Writing the done file now.").len() + confident("Done.").len();
    assert_eq!(
        junior_tokens(&events),
        3 + whole,
        "the 3 tokens before the drop count"
    );
    judge_never_saw_a_fault(&events);
    // The half-sent write never ran twice and the half token never reached the log.
    assert_eq!(ran.count("tool_resulted"), 2);
}

#[tokio::test]
async fn a_malformed_chunk_is_a_retried_protocol_fault() {
    let chunks = first_reply();
    let mut broken: Vec<Bytes> = chunks[..2].to_vec();
    broken.push(Bytes::from_static(b"data: {\"choices\": [{\"delta\": \n\n"));
    broken.extend(chunks[2..].iter().cloned());
    let (ran, requests) = broken_then_good(Reply::sse(broken, Duration::ZERO)).await;
    let events = intact(&ran.log, Outcome::Success);
    assert_eq!(faults(&events), vec![fault(Actor::Junior, "protocol", 1)]);
    assert_eq!(requests, 3);
    judge_never_saw_a_fault(&events);
}

#[tokio::test]
async fn an_error_object_in_an_http_200_stream_keeps_its_code_and_is_retried() {
    let chunks = first_reply();
    let mut broken: Vec<Bytes> = chunks[..2].to_vec();
    broken.push(sse::data(
        &json!({"error": {"message": "provider overloaded", "code": 502}}),
    ));
    let (ran, requests) = broken_then_good(Reply::sse(broken, Duration::ZERO)).await;
    let events = intact(&ran.log, Outcome::Success);
    assert_eq!(faults(&events), vec![fault(Actor::Junior, "server", 1)]);
    assert_eq!(requests, 3);
    let message = events.iter().find_map(|e| match e {
        Event::Fault { message, .. } => Some(message.clone()),
        _ => None,
    });
    assert!(
        message.is_some_and(|m| m.contains("provider overloaded")),
        "the server's words reach the log"
    );
}

/// A whole reply without any logprobs, as LM Studio streams.
fn plain(text: &str, call: (&str, &str, &str)) -> Reply {
    let (id, name, args) = call;
    let chunks = vec![
        sse::data(&sse::text(text)),
        sse::data(&sse::tool_call(0, Some(id), Some(name), args)),
        sse::data(&sse::finish("tool_calls")),
        sse::done(),
    ];
    Reply::sse(chunks, Duration::ZERO)
}

#[tokio::test]
async fn missing_logprobs_leave_the_judge_on_step_evidence_with_a_warning() {
    let junior = Script::new(vec![
        plain(
            "Writing it.",
            (
                "w1",
                "write_file",
                r#"{"path":"done.txt","content":"done\n"}"#,
            ),
        ),
        plain("Done.", ("f1", "finish", r#"{"summary":"done"}"#)),
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
    assert!(faults(&events).is_empty(), "not a fault");
    let warnings: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            Event::Warning { kind, .. } => Some(kind.as_str()),
            _ => None,
        })
        .collect();
    assert!(warnings.contains(&"no_logprobs"), "{warnings:?}");
    // No token signal ever reached the belief; step evidence still did.
    let mut step_terms = 0;
    for e in &events {
        match e {
            Event::BeliefUpdated { terms, .. } => {
                assert!(
                    terms.iter().all(|t| !t.signal.is_token_signal()),
                    "{terms:?}"
                );
            }
            Event::StepEnded { terms, .. } => step_terms += terms.len(),
            _ => {}
        }
    }
    assert!(step_terms > 0, "step evidence reached the judge");
    assert!(junior_tokens(&events) >= 2);
    assert_eq!(ran.summary.escalations.len(), 0);
    assert_eq!(s.requests().len(), 0);
}

#[tokio::test]
async fn a_stream_dropped_inside_a_tool_call_never_runs_the_half_call() {
    let chunks = first_reply();
    let words = confident("Writing the done file now.").len();
    // Every token and the first half of the write call's arguments, then a dead connection.
    let (ran, requests) = broken_then_good(Reply::dropped_after(chunks, words + 1)).await;
    let events = intact(&ran.log, Outcome::Success);
    assert_eq!(faults(&events), vec![fault(Actor::Junior, "protocol", 1)]);
    assert_eq!(requests, 3);
    let called: Vec<String> = events
        .iter()
        .filter_map(|e| match e {
            Event::ToolCalled { name, .. } => Some(name.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(
        called,
        vec!["write_file", "finish"],
        "one write: the retried one"
    );
}
