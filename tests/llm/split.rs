//! The same bytes, cut anywhere, give the same deltas: SSE framing, multi-byte UTF-8 and
//! CRLF line ends must survive arbitrary TCP read boundaries.

use std::time::Duration;

use bytes::Bytes;
use handoff::demo::server::{RawChunk, Reply, Script, ScriptedServer, StreamEnd};
use handoff::demo::sse::{self, Tok};
use handoff::llm::{Client, Delta, LlmError};
use proptest::prelude::*;

use super::common::*;

/// A stream with everything that can be cut badly: multi-byte tokens, CRLF events,
/// comments, several tokens per chunk, tool-call fragments, usage.
fn wire() -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(&sse::comment("OPENROUTER PROCESSING"));
    out.extend_from_slice(&sse::data(&sse::tokens(&[
        Tok::new("日本", -0.25).top(&[("日本", -0.25), ("中国", -1.5)]),
        Tok::new("€", -0.5).top(&[("€", -0.5), ("$", -1.0)]),
    ])));
    let crlf = format!(
        "data: {}\r\n\r\n",
        sse::tokens(&[Tok::new(" naïve", -0.75).top(&[(" naïve", -0.75)])])
    );
    out.extend_from_slice(crlf.as_bytes());
    out.extend_from_slice(&sse::data(&sse::tool_call(
        0,
        Some("c0"),
        Some("write_file"),
        r#"{"path":"ü.txt","#,
    )));
    out.extend_from_slice(&sse::data(&sse::tool_call(
        0,
        None,
        None,
        r#""text":"🦀"}"#,
    )));
    out.extend_from_slice(&sse::data(&sse::finish("tool_calls")));
    out.extend_from_slice(&sse::data(&sse::usage(7, 3)));
    out.extend_from_slice(&sse::done());
    out
}

async fn deltas_for(chunks: Vec<Bytes>) -> (Vec<Delta>, Option<LlmError>) {
    let reply = Reply::Sse {
        chunks: chunks
            .into_iter()
            .map(|b| RawChunk::new(b).after(Duration::from_millis(1)))
            .collect(),
        end: StreamEnd::Close,
    };
    let server = ScriptedServer::start(Script::new(vec![reply]))
        .await
        .expect("server");
    let client = Client::new(&config(&server, 2)).expect("client");
    collect(&client, &request()).await
}

fn cut(bytes: &[u8], mut points: Vec<usize>) -> Vec<Bytes> {
    points.sort_unstable();
    points.dedup();
    let mut out = Vec::new();
    let mut start = 0;
    for p in points.into_iter().filter(|p| *p > 0 && *p < bytes.len()) {
        out.push(Bytes::copy_from_slice(&bytes[start..p]));
        start = p;
    }
    out.push(Bytes::copy_from_slice(&bytes[start..]));
    out
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

#[test]
fn whole_stream_decodes_as_expected() {
    let (deltas, err) = runtime().block_on(deltas_for(vec![Bytes::from(wire())]));
    assert_eq!(err, None);
    assert_eq!(deltas.len(), 6, "{deltas:#?}");
    assert_eq!(
        deltas[0],
        tok("日本", -0.25, &[("日本", -0.25), ("中国", -1.5)])
    );
    assert_eq!(deltas[2], tok(" naïve", -0.75, &[(" naïve", -0.75)]));
}

proptest! {
    #![proptest_config(ProptestConfig { cases: if cfg!(feature = "stress") { 512 } else { 24 }, ..ProptestConfig::default() })]

    #[test]
    fn any_split_gives_the_same_deltas(points in proptest::collection::vec(0usize..2000, 1..40)) {
        let bytes = wire();
        let points: Vec<usize> = points.into_iter().map(|p| p % bytes.len()).collect();
        let rt = runtime();
        let whole = rt.block_on(deltas_for(vec![Bytes::from(bytes.clone())]));
        let split = rt.block_on(deltas_for(cut(&bytes, points)));
        prop_assert_eq!(split, whole);
    }

    #[test]
    fn byte_by_byte_around_a_random_point(at in 0usize..2000) {
        let bytes = wire();
        let at = at % bytes.len();
        // Every byte of a 24-byte window on its own.
        let points: Vec<usize> = (at..(at + 24).min(bytes.len())).collect();
        let rt = runtime();
        let whole = rt.block_on(deltas_for(vec![Bytes::from(bytes.clone())]));
        let split = rt.block_on(deltas_for(cut(&bytes, points)));
        prop_assert_eq!(split, whole);
    }
}
