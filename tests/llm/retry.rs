//! Fault classification and retry timing. `stream_once` never retries by itself: each
//! test also checks that exactly one request reached the server.

use std::time::Duration;

use handoff::demo::server::{RawChunk, Reply, Script, ScriptedServer, StreamEnd};
use handoff::demo::sse::{self, Tok};
use handoff::llm::{Client, LlmError};
use pretty_assertions::assert_eq;

use super::common::*;

/// One attempt against one scripted reply: the error, the client, the server.
async fn fail_once(reply: Reply) -> (LlmError, Client, ScriptedServer) {
    let server = ScriptedServer::start(Script::new(vec![reply]))
        .await
        .expect("server");
    let client = Client::new(&config(&server, 1)).expect("client");
    let (deltas, err) = collect(&client, &request()).await;
    assert_eq!(deltas, vec![]);
    assert_eq!(server.requests().len(), 1, "stream_once must not retry");
    (err.expect("an error"), client, server)
}

#[tokio::test]
async fn server_error_is_retryable_with_bounded_jittered_backoff() {
    let (err, client, _s) = fail_once(Reply::error(503, "overloaded")).await;
    assert_eq!(
        err,
        LlmError::Server {
            status: 503,
            message: "overloaded".into()
        }
    );
    assert!(err.retryable());
    for attempt in 1..=3u32 {
        let full = Duration::from_millis(500) * 2u32.pow(attempt - 1);
        for _ in 0..20 {
            let d = client.retry_delay(&err, attempt).expect("retry");
            assert!(d >= full / 2 && d <= full, "attempt {attempt}: {d:?}");
        }
    }
    assert_eq!(client.retry_delay(&err, 4), None, "max_retries = 3");
}

#[tokio::test]
async fn rate_limit_honours_retry_after() {
    let reply = Reply::error(429, "slow down").with_header("retry-after", "2");
    let (err, client, _s) = fail_once(reply).await;
    assert_eq!(
        err,
        LlmError::RateLimited {
            retry_after: Some(Duration::from_secs(2)),
            message: "slow down".into()
        }
    );
    for _ in 0..20 {
        let d = client.retry_delay(&err, 1).expect("retry");
        assert!(
            d >= Duration::from_secs(2) && d < Duration::from_millis(2300),
            "{d:?}"
        );
    }
}

#[tokio::test]
async fn rate_limit_in_milliseconds_and_too_long_to_wait() {
    let reply = Reply::error(429, "x").with_header("retry-after-ms", "250");
    let (err, _client, _s) = fail_once(reply).await;
    assert_eq!(
        err,
        LlmError::RateLimited {
            retry_after: Some(Duration::from_millis(250)),
            message: "x".into()
        }
    );
    let reply = Reply::error(429, "x").with_header("retry-after", "3600");
    let (err, client, _s) = fail_once(reply).await;
    assert_eq!(
        client.retry_delay(&err, 1),
        None,
        "an hour is not worth waiting"
    );
}

#[tokio::test]
async fn auth_and_bad_request_are_final() {
    let (err, client, _s) = fail_once(Reply::error(401, "invalid api key")).await;
    assert_eq!(
        err,
        LlmError::Auth {
            status: 401,
            message: "invalid api key".into()
        }
    );
    assert_eq!(client.retry_delay(&err, 1), None);
    let (err, client, _s) = fail_once(Reply::error(400, "unknown model")).await;
    assert_eq!(
        err,
        LlmError::BadRequest {
            status: 400,
            message: "unknown model".into()
        }
    );
    assert_eq!(client.retry_delay(&err, 1), None);
}

#[tokio::test]
async fn connection_refused_is_a_connect_fault() {
    // A port that was free a moment ago and has no listener now.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        l.local_addr().expect("addr").port()
    };
    let server = ScriptedServer::start(Script::new(vec![]))
        .await
        .expect("server");
    let cfg = handoff::config::ModelConfig {
        base_url: format!("http://127.0.0.1:{port}/v1"),
        ..config(&server, 0)
    };
    let client = Client::new(&cfg).expect("client");
    let (_, err) = collect(&client, &request()).await;
    let err = err.expect("an error");
    assert_eq!(err.kind(), "connect", "{err}");
    assert!(err.retryable());
    assert!(client.retry_delay(&err, 1).is_some());
}

#[tokio::test]
async fn silence_longer_than_idle_timeout_is_a_timeout() {
    let server = ScriptedServer::start(Script::new(vec![Reply::Sse {
        chunks: vec![RawChunk::new(sse::data(&sse::tokens(&[Tok::new(
            "a", -0.1,
        )])))],
        end: StreamEnd::Hang,
    }]))
    .await
    .expect("server");
    let cfg = handoff::config::ModelConfig {
        idle_timeout_s: 0.3,
        ..config(&server, 1)
    };
    let client = Client::new(&cfg).expect("client");
    let started = std::time::Instant::now();
    let (deltas, err) = collect(&client, &request()).await;
    assert_eq!(deltas, vec![tok("a", -0.1, &[("a", -0.1)])]);
    let err = err.expect("an error");
    assert_eq!(err.kind(), "timeout");
    assert!(err.retryable());
    assert!(started.elapsed() < Duration::from_secs(3));
}

#[tokio::test]
async fn a_retry_after_a_fault_succeeds() {
    let ok = Reply::sse(
        sse::completion(&[Tok::new("a", -0.1)], &[], 3),
        Duration::ZERO,
    );
    let server = ScriptedServer::start(Script::new(vec![Reply::error(502, "bad gateway"), ok]))
        .await
        .expect("server");
    let client = Client::new(&config(&server, 1)).expect("client");
    let (_, err) = collect(&client, &request()).await;
    assert_eq!(err.map(|e| e.kind()), Some("server"));
    let (deltas, err) = collect(&client, &request()).await;
    assert_eq!(err, None);
    assert_eq!(deltas.len(), 3, "{deltas:?}");
    assert_eq!(server.requests().len(), 2);
}
