//! The whole streaming pipeline on loopback: a recorded 100k-token stream served by the
//! scripted server, read by the real client (HTTP, SSE, lenient chunk parsing, tool-call
//! assembly) with every token judged and its events built, against a bare SSE split and
//! serde_json decode of the very same bytes.

use std::hint::black_box;
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::StreamExt;
use handoff::agent::watch::Watch;
use handoff::competence::{Calibration, Threshold};
use handoff::config::Config;
use handoff::demo::script::{confident, hesitant};
use handoff::demo::server::{RawChunk, Reply, Script, ScriptedServer, StreamEnd};
use handoff::demo::sse::{Tok, completion};
use handoff::event::{Actor, Alternative, Event, Route};
use handoff::llm::Client;
use handoff::llm::decode::StreamDecoder;
use handoff::llm::types::{ChatRequest, Delta, Message};
use serde_json::Value;

use crate::Options;
use crate::timing::{Row, cpu_of, show};

/// Junior tokens in the recorded stream.
pub const STREAM_TOKENS: usize = 100_000;

/// A long junior answer: mostly confident prose with hesitant stretches, as the demo's
/// junior sounds, cut to exactly `n` tokens.
pub fn recorded_tokens(n: usize) -> Vec<Tok> {
    let sure = "The parser reads each unit in turn and multiplies the number by the unit's \
                length in seconds before it adds the part to the total of the duration";
    let unsure = "but hours might need their own arm or maybe a table of units instead";
    let mut toks = Vec::with_capacity(n + 32);
    while toks.len() < n {
        toks.extend(confident(sure));
        toks.extend(hesitant(unsure));
    }
    toks.truncate(n);
    toks
}

/// The stream's SSE writes, one per token as a real server sends them.
pub fn recorded_stream(n: usize) -> Vec<Bytes> {
    completion(&recorded_tokens(n), &[], 900)
}

/// Splits SSE events and decodes every `data:` payload: the least any client must do.
pub fn bare_decode(bytes: &[u8]) -> usize {
    let mut decoded = 0;
    for event in bytes.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
        let Some(data) = event.strip_prefix(b"data: ") else {
            continue;
        };
        if data == b"[DONE]" {
            continue;
        }
        if let Ok(v) = serde_json::from_slice::<Value>(data) {
            black_box(v);
            decoded += 1;
        }
    }
    decoded
}

pub fn run(opts: &Options) -> Vec<Row> {
    let n = if opts.quick { 10_000 } else { STREAM_TOKENS };
    let writes = recorded_stream(n);
    let whole: Vec<u8> = writes.iter().flat_map(|b| b.iter().copied()).collect();
    let megabytes = whole.len() as f64 / 1e6;
    // The server gets a runtime (and a thread) of its own, so its writes are not charged to
    // the client's task; the client runs on this thread like the agent's session task.
    let Ok(server_rt) = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
    else {
        return Vec::new();
    };
    let reply = Reply::Sse {
        chunks: writes.into_iter().map(RawChunk::new).collect(),
        end: StreamEnd::Close,
    };
    let script = Script::new(Vec::new()).respond_with(move |_| reply.clone());
    let Ok(server) = server_rt.block_on(ScriptedServer::start(script)) else {
        return Vec::new();
    };
    let Ok(client_rt) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        return Vec::new();
    };
    let mut cfg = Config::default().junior;
    cfg.base_url = server.base_url();
    cfg.model = "scripted".into();
    let Ok(client) = Client::with_api_key(&cfg, None) else {
        return Vec::new();
    };
    let mut tokens_seen = 0;
    let mut best = Timings::worst();
    for _ in 0..opts.rounds(5, 1) {
        // The baselines first: the pipeline's burst of short-lived allocations (async-openai
        // queues parsed chunks on a channel) would otherwise leave them a fragmented heap.
        best.bare = best.bare.min(cpu_of(|| {
            black_box(bare_decode(black_box(&whole)));
        }));
        best.in_memory = best.in_memory.min(cpu_of(|| {
            black_box(judged_in_memory(&whole));
        }));
        let wall = Instant::now();
        let cpu = cpu_of(|| tokens_seen = client_rt.block_on(judged_stream(&client)));
        best.pipeline_wall = best.pipeline_wall.min(wall.elapsed());
        best.pipeline = best.pipeline.min(cpu);
    }
    drop(server);
    let ratio = best.pipeline.as_secs_f64() / best.bare.as_secs_f64();
    let in_memory = best.in_memory.as_secs_f64() / best.bare.as_secs_f64();
    vec![
        Row {
            figure: "streaming pipeline on loopback (client + judge + events)",
            measured: format!(
                "{} CPU for {tokens_seen} tokens ({} wall, {:.0} MB/s)",
                show(best.pipeline),
                show(best.pipeline_wall),
                megabytes / best.pipeline_wall.as_secs_f64()
            ),
            baseline: format!(
                "{} bare SSE + JSON decode of the same {megabytes:.0} MB",
                show(best.bare)
            ),
            ratio: format!("{ratio:.2}×"),
            goal: "≤ 1.3×",
            pass: ratio <= 1.3 && tokens_seen == n,
        },
        Row {
            figure: "… of which chunk decoding + judge, without HTTP",
            measured: format!("{} CPU", show(best.in_memory)),
            baseline: "the same bare decode".into(),
            ratio: format!("{in_memory:.2}×"),
            goal: "(breakdown)",
            pass: true,
        },
    ]
}

/// Best CPU (and wall) times of one round's three ways through the same bytes.
struct Timings {
    pipeline: Duration,
    pipeline_wall: Duration,
    in_memory: Duration,
    bare: Duration,
}

impl Timings {
    fn worst() -> Timings {
        Timings {
            pipeline: Duration::MAX,
            pipeline_wall: Duration::MAX,
            in_memory: Duration::MAX,
            bare: Duration::MAX,
        }
    }
}

/// The client's decoding and the judge on bytes already in memory: what the pipeline costs
/// without HTTP and the SSE reader. `None` if the recording does not decode.
fn judged_in_memory(bytes: &[u8]) -> Option<usize> {
    let mut decoder = StreamDecoder::new(true, 5);
    let mut watch = new_watch();
    let mut judged = 0;
    for line in bytes.split(|b| *b == b'\n') {
        let Some(data) = line.strip_prefix(b"data: ") else {
            continue;
        };
        if data == b"[DONE]" {
            continue;
        }
        let value: Value = serde_json::from_slice(data).ok()?;
        for delta in decoder.push(&value).ok()? {
            if let Delta::Token { text, logprob, top } = delta {
                judge(&mut watch, text, logprob, top);
                judged += 1;
            }
        }
    }
    Some(judged)
}

fn new_watch() -> Watch {
    Watch::new(
        Calibration::prior(),
        Threshold::Constant(0.0),
        "constant",
        Route::Senior,
    )
}

/// What the agent's turn does with a junior token: judge it, build both events.
fn judge(watch: &mut Watch, text: String, logprob: Option<f64>, top: Vec<Alternative>) {
    let reading = watch.token(&text, logprob, &top);
    black_box(Event::Token {
        actor: Actor::Junior,
        tick: reading.tick,
        text,
        logprob,
        top,
    });
    black_box(reading.event(watch));
}

/// One request through the real client; every token judged as the agent's turn does it.
/// Returns the number of tokens judged.
async fn judged_stream(client: &Client) -> usize {
    let mut watch = new_watch();
    let req = ChatRequest {
        messages: vec![Message::user("write a long answer")],
        tools: Vec::new(),
    };
    let Ok(mut stream) = client.stream_once(&req).await else {
        return 0;
    };
    let mut judged = 0;
    while let Some(delta) = stream.next().await {
        match delta {
            Ok(Delta::Token { text, logprob, top }) => {
                judge(&mut watch, text, logprob, top);
                judged += 1;
            }
            Ok(_) => {}
            Err(_) => return judged,
        }
    }
    judged
}
