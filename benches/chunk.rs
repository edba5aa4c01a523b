//! One streamed chunk through the client's decoding and the judge, step by step, so a change
//! to `llm::chunk`/`llm::decode` can be weighed against the `serde_json` decode it rides
//! on. The whole-stream figure is in `cargo bench --bench perf`. Run with
//! `cargo bench --bench chunk -- --quick`.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use handoff::competence::{Calibration, Threshold};
use handoff::demo::script::hesitant;
use handoff::demo::sse;
use handoff::judge::SessionJudge;
use handoff::llm::Delta;
use handoff::llm::decode::StreamDecoder;
use handoff::protocol::Route;
use serde_json::Value;

fn one_chunk(c: &mut Criterion) {
    // A hesitant token with five alternatives, as vLLM streams it.
    let json = sse::tokens(&hesitant(" parse")).to_string().into_bytes();
    let mut group = c.benchmark_group("one chunk");
    group.bench_function("serde_json Value decode", |b| {
        b.iter(|| black_box(serde_json::from_slice::<Value>(black_box(&json)).ok()))
    });
    let mut decoder = StreamDecoder::new(true, 5);
    group.bench_function("decode + StreamDecoder::push", |b| {
        b.iter(|| {
            let value: Option<Value> = serde_json::from_slice(black_box(&json)).ok();
            black_box(value.map(|v| decoder.push(&v).ok()))
        })
    });
    let mut decoder = StreamDecoder::new(true, 5);
    let mut deltas = Vec::new();
    group.bench_function(
        "StreamDecoder::push_json (typed, borrowed; the client's path)",
        |b| {
            b.iter(|| {
                deltas.clear();
                black_box(decoder.push_json(black_box(&json), &mut deltas).is_ok())
            })
        },
    );
    let mut decoder = StreamDecoder::new(true, 5);
    let mut watch = SessionJudge::new(
        Calibration::prior(),
        Threshold::Constant(0.0),
        "constant",
        Route::Senior,
    );
    group.bench_function("decode + push + judge + BeliefUpdated", |b| {
        b.iter(|| {
            let Some(value) = serde_json::from_slice::<Value>(black_box(&json)).ok() else {
                return;
            };
            for delta in decoder.push(&value).ok().into_iter().flatten() {
                if let Delta::Token { text, logprob, top } = delta {
                    let reading = watch.token(&text, logprob, &top);
                    black_box(watch.belief_event(&reading));
                }
            }
        })
    });
    group.finish();
}

criterion_group!(benches, one_chunk);
criterion_main!(benches);
