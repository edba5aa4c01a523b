//! Tool calls assembled from fragments: by index, without index, whole in one chunk.

use std::time::Duration;

use futures::StreamExt;
use handoff::demo::server::{Reply, Script, ScriptedServer, StreamEnd};
use handoff::demo::sse::{self, Tok};
use handoff::llm::{Client, Delta, FunctionCall, ToolCall, Usage};
use pretty_assertions::assert_eq;

use super::common::*;

const GAP: Duration = Duration::from_millis(2);

#[tokio::test]
async fn well_formed_completion_with_tool_call() {
    let chunks = sse::completion(
        &[
            Tok::new("Hi", -0.1).top(&[("Hi", -0.1), ("Hello", -2.5)]),
            Tok::new("!", -0.3).top(&[("!", -0.3), (".", -1.4)]),
        ],
        &[("call_1", "read_file", r#"{"path":"a.rs"}"#)],
        12,
    );
    let (deltas, err, _server) = run(vec![Reply::sse(chunks, GAP)], 2).await;
    assert_eq!(err, None);
    assert_eq!(
        deltas,
        vec![
            tok("Hi", -0.1, &[("Hi", -0.1), ("Hello", -2.5)]),
            tok("!", -0.3, &[("!", -0.3), (".", -1.4)]),
            Delta::ToolCall(ToolCall {
                id: "call_1".into(),
                kind: "function".into(),
                function: FunctionCall {
                    name: "read_file".into(),
                    arguments: r#"{"path":"a.rs"}"#.into()
                },
            }),
            Delta::Finish("tool_calls".into()),
            Delta::Usage(Usage {
                prompt_tokens: 12,
                completion_tokens: 2
            }),
        ]
    );
}

#[tokio::test]
async fn single_tool_call_without_index_or_id() {
    let chunks = vec![
        ev(
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"type":"function","function":{"name":"run","arguments":"{\"cmd\":"}}]}}]}"#,
        ),
        ev(
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"function":{"arguments":"\"ls\"}"}}]}}]}"#,
        ),
        ev(r#"{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#),
        sse::done(),
    ];
    let (deltas, err, _server) = run(vec![Reply::sse(chunks, GAP)], 0).await;
    assert_eq!(err, None);
    assert_eq!(
        deltas,
        vec![
            call("call_0", "run", r#"{"cmd":"ls"}"#),
            Delta::Finish("tool_calls".into())
        ]
    );
}

#[tokio::test]
async fn parallel_tool_calls_are_yielded_when_the_next_index_starts() {
    let chunks = vec![
        sse::data(&sse::tool_call(
            0,
            Some("c0"),
            Some("read_file"),
            r#"{"path":"#,
        )),
        sse::data(&sse::tool_call(0, None, None, r#""a"}"#)),
        sse::data(&sse::tool_call(
            1,
            Some("c1"),
            Some("read_file"),
            r#"{"path":"b"}"#,
        )),
        sse::data(&sse::finish("tool_calls")),
        sse::done(),
    ];
    let server = ScriptedServer::start(Script::new(vec![Reply::Sse {
        chunks: chunks
            .into_iter()
            .map(handoff::demo::server::RawChunk::new)
            .collect(),
        end: StreamEnd::Close,
    }]))
    .await
    .expect("server");
    let client = Client::new(&config(&server, 0)).expect("client");
    let mut stream = client.stream_once(&request()).await.expect("stream");
    // The first call is complete as soon as the second begins, before the finish chunk.
    let first = stream.next().await.expect("delta").expect("ok");
    assert_eq!(first, call("c0", "read_file", r#"{"path":"a"}"#));
    let rest: Vec<Delta> = stream.map(|d| d.expect("ok")).collect().await;
    assert_eq!(
        rest,
        vec![
            call("c1", "read_file", r#"{"path":"b"}"#),
            Delta::Finish("tool_calls".into())
        ]
    );
}
