//! A burst of events in one write (what a client that fell behind a fast server reads)
//! costs the same per event at any size: the SSE reader takes lines in place, so reading n
//! events is linear, not the O(n²) of a reader that copies its buffer's rest per line.

use std::time::Duration;

use bytes::Bytes;
use handoff::demo::server::{RawChunk, Reply, Script, ScriptedServer, StreamEnd};
use handoff::demo::sse::{self, Tok};
use handoff::llm::{Client, Delta};

use super::common::*;

/// CPU time this thread has used (the test runtime runs client and server on it).
fn thread_cpu() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime only writes the timespec it is given.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "no thread CPU clock");
    Duration::new(
        u64::try_from(ts.tv_sec).expect("seconds"),
        u32::try_from(ts.tv_nsec).expect("nanoseconds"),
    )
}

/// A whole response of `n` tokens (top-5 logprobs each) as one write.
fn burst(n: usize) -> Bytes {
    let toks: Vec<Tok> = (0..n)
        .map(|i| {
            let word = format!(" w{}", i % 97);
            Tok::new(&word, -0.25).top(&[
                (&word, -0.25),
                (" or", -1.5),
                (" and", -2.0),
                (" but", -2.5),
                (" if", -3.0),
            ])
        })
        .collect();
    sse::completion(&toks, &[], 900).concat().into()
}

/// CPU per token of streaming `n` tokens sent in one write, best of three rounds.
async fn cpu_per_token(n: usize) -> f64 {
    let body = burst(n);
    let reply = Reply::Sse {
        chunks: vec![RawChunk::new(body)],
        end: StreamEnd::Close,
    };
    let server =
        ScriptedServer::start(Script::new(Vec::new()).respond_with(move |_| reply.clone()))
            .await
            .expect("server");
    let mut cfg = config(&server, 5);
    cfg.max_tokens = None;
    let client = Client::new(&cfg).expect("client");
    let mut best = f64::INFINITY;
    for _ in 0..3 {
        let start = thread_cpu();
        let (deltas, err) = collect(&client, &request()).await;
        let spent = thread_cpu().saturating_sub(start);
        assert!(err.is_none(), "{err:?}");
        let tokens = deltas
            .iter()
            .filter(|d| matches!(d, Delta::Token { .. }))
            .count();
        assert_eq!(tokens, n, "every token of the burst arrives");
        best = best.min(spent.as_secs_f64() / n as f64);
    }
    best
}

#[tokio::test]
async fn ten_thousand_events_in_one_write_cost_no_more_per_event_than_a_hundred() {
    let small = cpu_per_token(100).await;
    let large = cpu_per_token(10_000).await;
    // Linear reading keeps the ratio near 1 (below it, as the request's fixed cost spreads
    // over more events); copying the buffer's rest per line would make it about 100.
    assert!(
        large <= 3.0 * small,
        "{:.2} µs per event at 10000 against {:.2} µs at 100",
        large * 1e6,
        small * 1e6
    );
}
