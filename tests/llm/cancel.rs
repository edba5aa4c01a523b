//! Dropping a delta stream closes the HTTP connection promptly: mid-stream handoff relies
//! on the junior's server actually stopping.

use std::time::{Duration, Instant};

use futures::StreamExt;
use handoff::demo::server::{RawChunk, Reply, Script, ScriptedServer, StreamEnd};
use handoff::demo::sse::{self, Tok};
use handoff::llm::Client;

use super::common::*;

fn endless(end: StreamEnd) -> Reply {
    let mut chunks: Vec<RawChunk> = (0..3)
        .map(|i| RawChunk::new(sse::data(&sse::tokens(&[Tok::new(&format!("t{i}"), -0.1)]))))
        .collect();
    // The model keeps generating, slowly.
    chunks.extend((0..500).map(|i| {
        RawChunk::new(sse::data(&sse::tokens(&[Tok::new(&format!("u{i}"), -0.1)])))
            .after(Duration::from_millis(20))
    }));
    Reply::Sse { chunks, end }
}

async fn drop_after_three(reply: Reply) {
    let server = ScriptedServer::start(Script::new(vec![reply]))
        .await
        .expect("server");
    let client = Client::new(&config(&server, 1)).expect("client");
    let mut stream = client.stream_once(&request()).await.expect("stream");
    for _ in 0..3 {
        stream.next().await.expect("delta").expect("ok");
    }
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(server.closed_at().is_empty(), "closed before the drop");
    let dropped = Instant::now();
    drop(stream);
    let closed = server
        .wait_closed(1, Duration::from_secs(2))
        .await
        .expect("the server never saw the connection close");
    let lag = closed.saturating_duration_since(dropped);
    assert!(
        lag <= Duration::from_millis(100),
        "server saw the close after {lag:?}"
    );
}

#[tokio::test]
async fn drop_while_tokens_flow_closes_within_100ms() {
    drop_after_three(endless(StreamEnd::Close)).await;
}

#[tokio::test]
async fn drop_while_server_is_silent_closes_within_100ms() {
    let chunks = (0..3)
        .map(|i| RawChunk::new(sse::data(&sse::tokens(&[Tok::new(&format!("t{i}"), -0.1)]))))
        .collect();
    drop_after_three(Reply::Sse {
        chunks,
        end: StreamEnd::Hang,
    })
    .await;
}

#[tokio::test]
async fn drop_while_server_sends_only_keepalives_closes_within_100ms() {
    let chunks = (0..3)
        .map(|i| RawChunk::new(sse::data(&sse::tokens(&[Tok::new(&format!("t{i}"), -0.1)]))))
        .collect();
    drop_after_three(Reply::Sse {
        chunks,
        end: StreamEnd::Tick(Duration::from_millis(10)),
    })
    .await;
}
