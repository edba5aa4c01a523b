//! Streams that break their contract end with a retryable protocol fault, after the
//! deltas that did arrive.

use std::time::Duration;

use handoff::demo::server::Reply;
use handoff::demo::sse::{self, Tok};
use handoff::llm::LlmError;
use pretty_assertions::assert_eq;

use super::common::*;

const GAP: Duration = Duration::from_millis(2);

#[tokio::test]
async fn malformed_chunk_is_a_protocol_error() {
    let chunks = vec![
        sse::data(&sse::tokens(&[Tok::new("a", -0.1)])),
        bytes::Bytes::from_static(b"data: {\"choices\": [\n\n"),
        sse::data(&sse::finish("stop")),
        sse::done(),
    ];
    let (deltas, err, _server) = run(vec![Reply::sse(chunks, GAP)], 1).await;
    assert_eq!(deltas, vec![tok("a", -0.1, &[("a", -0.1)])]);
    let err = err.expect("an error");
    assert_eq!(err.kind(), "protocol");
    assert!(err.retryable());
}

#[tokio::test]
async fn connection_dropped_mid_stream_is_a_protocol_error() {
    let chunks = sse::completion(&[Tok::new("a", -0.1), Tok::new("b", -0.1)], &[], 3);
    let (deltas, err, _server) = run(vec![Reply::dropped_after(chunks, 1)], 1).await;
    assert_eq!(deltas, vec![tok("a", -0.1, &[("a", -0.1)])]);
    let err = err.expect("an error");
    assert_eq!(err.kind(), "protocol", "{err}");
    assert!(err.retryable());
}

#[tokio::test]
async fn clean_end_without_finish_reason_is_a_protocol_error() {
    let chunks = vec![sse::data(&sse::tokens(&[Tok::new("a", -0.1)]))];
    let (deltas, err, _server) = run(vec![Reply::sse(chunks, GAP)], 1).await;
    assert_eq!(deltas, vec![tok("a", -0.1, &[("a", -0.1)])]);
    assert_eq!(
        err,
        Some(LlmError::Protocol {
            message: "the stream ended before a finish reason".into()
        })
    );
}
