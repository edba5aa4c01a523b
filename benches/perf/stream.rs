//! The whole streaming pipeline on loopback: a recorded 100k-token stream served by the
//! scripted server, read by the real client (HTTP, SSE, lenient typed chunk decoding,
//! tool-call assembly) with every token judged and its events built, against a bare SSE
//! split and serde_json `Value` decode of the very same bytes.

use std::hint::black_box;
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::StreamExt;
use handoff::competence::{Calibration, Threshold};
use handoff::config::Config;
use handoff::demo::script::{confident, hesitant};
use handoff::demo::server::{RawChunk, Reply, Script, ScriptedServer, StreamEnd};
use handoff::demo::sse::{Tok, completion};
use handoff::judge::SessionJudge;
use handoff::llm::Client;
use handoff::llm::decode::StreamDecoder;
use handoff::llm::sse::SseReader;
use handoff::llm::types::{ChatRequest, Delta, Message};
use handoff::protocol::{Actor, Alternative, Event, Route};
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
    let Ok(client_rt) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        return Vec::new();
    };
    // One write per token, as a server generating them sends the stream; and the same bytes
    // in 64 KiB writes, as they arrive when the client has fallen behind.
    let bursts: Vec<Bytes> = whole.chunks(65536).map(Bytes::copy_from_slice).collect();
    let mut deliveries = Vec::new();
    for writes in [writes, bursts] {
        let Some(d) = server_rt.block_on(Delivery::start(writes)) else {
            return Vec::new();
        };
        deliveries.push(d);
    }
    let mut bare = Duration::MAX;
    let mut in_memory = Duration::MAX;
    for _ in 0..opts.rounds(3, 1) {
        // The baselines first, as they always were, so that rows stay comparable over time.
        bare = bare.min(cpu_of(|| {
            black_box(bare_decode(black_box(&whole)));
        }));
        in_memory = in_memory.min(cpu_of(|| {
            black_box(judged_in_memory(&whole));
        }));
        for d in &mut deliveries {
            d.measure(&client_rt);
        }
    }
    let ratio = |d: Duration| d.as_secs_f64() / bare.as_secs_f64();
    let [per_token, burst] = &deliveries[..] else {
        return Vec::new();
    };
    let baseline = format!(
        "{} bare SSE + JSON decode of the same {megabytes:.0} MB",
        show(bare)
    );
    vec![
        Row {
            figure: "streaming pipeline on loopback, a write per token (client + judge + events)",
            measured: format!(
                "{} CPU for {} tokens ({} wall)",
                show(per_token.pipeline),
                per_token.seen,
                show(per_token.wall)
            ),
            baseline: baseline.clone(),
            ratio: format!("{:.2}×", ratio(per_token.pipeline)),
            goal: "≤ 1.3×",
            pass: ratio(per_token.pipeline) <= 1.3 && per_token.seen == n,
        },
        Row {
            figure: "… the same stream in 64 KiB writes (a client that fell behind)",
            measured: format!(
                "{} CPU for {} tokens ({} wall)",
                show(burst.pipeline),
                burst.seen,
                show(burst.wall)
            ),
            baseline,
            ratio: format!("{:.2}×", ratio(burst.pipeline)),
            goal: "≤ 1.3×",
            pass: ratio(burst.pipeline) <= 1.3 && burst.seen == n,
        },
        Row {
            figure: "… the client's SSE reader + chunk decoding + judge alone (bytes in memory, no HTTP)",
            measured: format!("{} CPU", show(in_memory)),
            baseline: "the same bare decode".into(),
            ratio: format!("{:.2}×", ratio(in_memory)),
            goal: "(breakdown)",
            pass: true,
        },
    ]
}

/// One way of serving the recording, and the best times of reading it.
struct Delivery {
    /// Serves for as long as the delivery is measured.
    _server: ScriptedServer,
    client: Client,
    pipeline: Duration,
    wall: Duration,
    seen: usize,
}

impl Delivery {
    /// A server answering every request with these writes, and a client pointed at it.
    async fn start(writes: Vec<Bytes>) -> Option<Delivery> {
        let reply = Reply::Sse {
            chunks: writes.into_iter().map(RawChunk::new).collect(),
            end: StreamEnd::Close,
        };
        let script = Script::new(Vec::new()).respond_with(move |_| reply.clone());
        let server = ScriptedServer::start(script).await.ok()?;
        let mut cfg = Config::default().junior;
        cfg.base_url = server.base_url();
        cfg.model = "scripted".into();
        let client = Client::with_api_key(&cfg, None).ok()?;
        Some(Delivery {
            _server: server,
            client,
            pipeline: Duration::MAX,
            wall: Duration::MAX,
            seen: 0,
        })
    }

    /// One round of the real client.
    fn measure(&mut self, rt: &tokio::runtime::Runtime) {
        let wall = Instant::now();
        let cpu = cpu_of(|| self.seen = rt.block_on(judged_stream(&self.client)));
        self.wall = self.wall.min(wall.elapsed());
        self.pipeline = self.pipeline.min(cpu);
    }
}

/// The client's SSE reader, chunk decoding and the judge on bytes already in memory: what
/// the pipeline costs without HTTP. `None` if the recording does not decode.
fn judged_in_memory(bytes: &[u8]) -> Option<usize> {
    let mut reader = SseReader::default();
    let mut decoder = StreamDecoder::new(true, 5);
    let mut watch = new_watch();
    let mut deltas = Vec::new();
    let mut judged = 0;
    let mut on_data = |data: &[u8]| {
        decoder.push_json(data, &mut deltas)?;
        for delta in deltas.drain(..) {
            if let Delta::Token { text, logprob, top } = delta {
                judge(&mut watch, text, logprob, top);
                judged += 1;
            }
        }
        Ok(())
    };
    reader.feed(bytes, &mut on_data).ok()?;
    reader.end(&mut on_data).ok()?;
    Some(judged)
}

fn new_watch() -> SessionJudge {
    SessionJudge::new(
        Calibration::prior(),
        Threshold::Constant(0.0),
        "constant",
        Route::Senior,
    )
}

/// What the agent's turn does with a junior token: judge it, build both events.
fn judge(watch: &mut SessionJudge, text: String, logprob: Option<f64>, top: Vec<Alternative>) {
    let reading = watch.token(&text, logprob, &top);
    black_box(Event::Token {
        actor: Actor::Junior,
        tick: reading.tick,
        text,
        logprob,
        top,
    });
    black_box(watch.belief_event(&reading));
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
