//! Scripted-server modes that reproduce what a real llama.cpp server (b11434, `--jinja`,
//! CPU) did with Qwen2.5-Coder 0.5B and 1.5B, from the recordings in `llamacpp/`.
//!
//! Those models answer a `tools` request with the call written as text in `content`; the
//! recorded bytes are replayed exactly where a recording exists (the 0.5B's streamed JSON
//! call with `n_probs`, the 1.5B's doubled braces, the 400 for logprobs with tools), and
//! other content is written in the same chunk shape: a first chunk with
//! `{"role":"assistant","content":null}`, one chunk per token with `id` and `bytes` on each
//! logprob entry, `system_fingerprint: "b0-unknown"`, `timings` on the last chunk, no
//! usage chunk. Every request gets the same reply, as the real junior repeated itself.

use axum::body::Bytes;
use serde_json::{Value, json};

use super::server::{Reply, Script};

/// The 0.5B's stream for `request_tools_nprobs.json`: the call as JSON text, `n_probs: 3`.
pub const RECORDED_TEXT_CALL_SSE: &str = include_str!("llamacpp/stream_tools_nprobs_text_call.sse");
/// The 0.5B's stream for `request_json_schema.json` (`response_format` schema, `logprobs`,
/// `top_logprobs: 5`): the first chunk has a logprob entry for "```" and no content, the
/// sample llama.cpp's grammar refused; the reply itself starts with "{".
pub const RECORDED_JSON_SCHEMA_SSE: &str = include_str!("llamacpp/stream_json_schema_grammar.sse");
/// What the recorded 0.5B wrote under the schema.
pub const GRAMMAR_CALL: &str = "{\n  \"name\": \"search\",\n  \"arguments\": {\n    \"pattern\": \"a\",\n    \"path\": \"calc.py\"\n  }\n}";
/// The 1.5B's non-streamed answer to `request_tools_1p5b.json`: doubled braces.
pub const RECORDED_DOUBLED_BRACES_JSON: &str =
    include_str!("llamacpp/completion_tools_text_call_1p5b.json");
/// llama.cpp's 400 body for `logprobs` together with tools on a streamed request.
pub const REJECT_LOGPROBS_WITH_TOOLS: &str = r#"{"error":{"code":400,"message":"logprobs is not supported with tools + stream","type":"invalid_request_error"}}"#;
/// What the recorded 0.5B wrote.
pub const TEXT_CALL: &str = r#"{"name": "read_file", "arguments": {"path": "src/main.rs"}}"#;
/// What the recorded 1.5B wrote.
pub const DOUBLED_BRACES: &str = r#"{{"name": "read_file", "arguments": {"path": "src/main.rs"}}}"#;

/// What the model writes in `content`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Behaviour {
    /// A bare JSON call (the 0.5B, recorded).
    JsonInContent,
    /// The 0.5B under a `response_format` schema (recorded, streamed): the grammar's
    /// refused first sample arrives as a logprob entry without content.
    GrammarJson,
    /// The call with doubled braces (the 1.5B, recorded).
    DoubledBraces,
    /// The call in a fenced ```json block with a line of prose before it (the 1.5B as senior).
    FencedBlock,
    /// The call inside Qwen/Hermes `<tool_call>` tags.
    ToolCallTags,
    /// A well-formed call to a tool that does not exist.
    UnknownTool,
    /// Prose without any call.
    ProseOnly,
    /// Any content.
    Content(String),
}

impl Behaviour {
    /// The reply's text.
    pub fn content(&self) -> String {
        match self {
            Behaviour::JsonInContent => TEXT_CALL.into(),
            Behaviour::GrammarJson => GRAMMAR_CALL.into(),
            Behaviour::DoubledBraces => DOUBLED_BRACES.into(),
            Behaviour::FencedBlock => format!(
                "I will read the file first.\n```json\n{}\n```",
                r#"{"name": "read_file", "arguments": {"path": "calc.py"}}"#
            ),
            Behaviour::ToolCallTags => format!(
                "<tool_call>\n{}\n</tool_call>",
                r#"{"name": "read_file", "arguments": {"path": "calc.py"}}"#
            ),
            Behaviour::UnknownTool => {
                r#"{"name": "open_file", "arguments": {"path": "calc.py"}}"#.into()
            }
            Behaviour::ProseOnly => {
                "To fix add(), change the minus sign to a plus sign in calc.py.".into()
            }
            Behaviour::Content(text) => text.clone(),
        }
    }
}

/// A server that behaves like llama.cpp with a small Qwen model: it refuses `logprobs`
/// together with tools when streaming (400, recorded body), and otherwise answers every
/// request with `behaviour`, streamed in llama.cpp's chunk shape with logprobs when the
/// request asked for them (`logprobs` or `n_probs`), or as one JSON completion when the
/// request did not stream.
pub fn script(behaviour: Behaviour) -> Script {
    Script::new(Vec::new())
        .models(&["qwen2.5-coder-0.5b-instruct"])
        .respond_with(move |body| reply(&behaviour, body))
}

/// llama.cpp's answer to one request body.
pub fn reply(behaviour: &Behaviour, body: &Value) -> Reply {
    let stream = body.get("stream").and_then(Value::as_bool).unwrap_or(false);
    let has_tools = body
        .get("tools")
        .and_then(Value::as_array)
        .is_some_and(|t| !t.is_empty());
    let logprobs = body
        .get("logprobs")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    if stream && has_tools && logprobs {
        return Reply::Http {
            status: 400,
            headers: vec![(
                "content-type".into(),
                "application/json; charset=utf-8".into(),
            )],
            body: REJECT_LOGPROBS_WITH_TOOLS.into(),
        };
    }
    let model = body
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or("qwen2.5-coder-0.5b-instruct");
    let top = if logprobs {
        body.get("top_logprobs").and_then(Value::as_u64)
    } else {
        body.get("n_probs").and_then(Value::as_u64)
    };
    if !stream {
        if *behaviour == Behaviour::DoubledBraces {
            return json_reply(RECORDED_DOUBLED_BRACES_JSON.trim_end().to_string());
        }
        return json_reply(completion_json(model, &behaviour.content()));
    }
    if *behaviour == Behaviour::GrammarJson {
        return recorded(RECORDED_JSON_SCHEMA_SSE);
    }
    if *behaviour == Behaviour::JsonInContent
        && top == Some(3)
        && model == "qwen2.5-coder-0.5b-instruct"
    {
        return recorded(RECORDED_TEXT_CALL_SSE);
    }
    let content = behaviour.content();
    let chunks = stream_chunks(model, &content, top.map(|k| k.min(20) as usize));
    Reply::sse(chunks, std::time::Duration::ZERO)
}

fn json_reply(body: String) -> Reply {
    Reply::Http {
        status: 200,
        headers: vec![(
            "content-type".into(),
            "application/json; charset=utf-8".into(),
        )],
        body,
    }
}

/// A recording replayed event by event (each `data:` line and its blank line one write).
fn recorded(sse: &str) -> Reply {
    let chunks: Vec<Bytes> = sse
        .split_inclusive("\n\n")
        .map(|part| Bytes::from(part.to_string()))
        .collect();
    Reply::sse(chunks, std::time::Duration::ZERO)
}

const ID: &str = "chatcmpl-scriptedLlamaCppQwenTextCall0";
const CREATED: u64 = 1_796_106_703;

fn envelope_tail(model: &str) -> String {
    format!(
        r#""created":{CREATED},"id":"{ID}","model":{},"system_fingerprint":"b0-unknown","object":"chat.completion.chunk""#,
        Value::from(model)
    )
}

/// The chunks llama.cpp streams for `content`: role chunk, one chunk per token (with
/// logprobs when `top` is set), the finish chunk with timings, `[DONE]`.
pub fn stream_chunks(model: &str, content: &str, top: Option<usize>) -> Vec<Bytes> {
    let tail = envelope_tail(model);
    let mut out = vec![Bytes::from(format!(
        "data: {{\"choices\":[{{\"finish_reason\":null,\"index\":0,\"delta\":{{\"role\":\"assistant\",\"content\":null}}}}],{tail}}}\n\n"
    ))];
    for (i, piece) in pieces(content).into_iter().enumerate() {
        let text = Value::from(piece.as_str());
        let logprobs = match top {
            None => String::new(),
            Some(k) => format!(
                ",\"logprobs\":{{\"content\":[{}]}}",
                logprob_entry(i, &piece, k)
            ),
        };
        out.push(Bytes::from(format!(
            "data: {{\"choices\":[{{\"finish_reason\":null,\"index\":0,\"delta\":{{\"content\":{text}}}{logprobs}}}],{tail}}}\n\n"
        )));
    }
    let n = pieces(content).len();
    out.push(Bytes::from(format!(
        "data: {{\"choices\":[{{\"finish_reason\":\"stop\",\"index\":0,\"delta\":{{}}}}],{tail},\"timings\":{{\"cache_n\":5,\"prompt_n\":161,\"prompt_ms\":819.648,\"prompt_per_token_ms\":5.090981366459627,\"prompt_per_second\":196.42578277504487,\"predicted_n\":{n},\"predicted_ms\":463.933,\"predicted_per_token_ms\":25.774055555555556,\"predicted_per_second\":38.798705847611615}}}}\n\n"
    )));
    out.push(Bytes::from_static(b"data: [DONE]\n\n"));
    out
}

/// One `logprobs.content` entry in llama.cpp's shape: `id`, `token`, `bytes`, `logprob`,
/// `top_logprobs` (the chosen token first, then fillers), values that look like a sure
/// small model's.
fn logprob_entry(i: usize, piece: &str, k: usize) -> String {
    let chosen = -0.001 - 0.01 * ((i % 5) as f64);
    let entry = |id: usize, token: &str, logprob: f64| json!({"id": id, "token": token, "bytes": token.as_bytes(), "logprob": logprob});
    let mut top = vec![entry(1000 + i, piece, chosen)];
    for (j, filler) in ["```", " the", "\n"]
        .iter()
        .enumerate()
        .take(k.saturating_sub(1))
    {
        top.push(entry(73594 + j, filler, -7.0 - j as f64));
    }
    let mut e = entry(1000 + i, piece, chosen);
    e["top_logprobs"] = Value::Array(top);
    e.to_string()
}

/// The non-streamed completion llama.cpp returns for `content`.
fn completion_json(model: &str, content: &str) -> String {
    format!(
        r#"{{"choices":[{{"finish_reason":"stop","index":0,"message":{{"role":"assistant","content":{}}}}}],"created":{CREATED},"model":{},"system_fingerprint":"b0-unknown","object":"chat.completion","usage":{{"completion_tokens":{},"prompt_tokens":168,"total_tokens":{}}},"id":"{ID}"}}"#,
        Value::from(content),
        Value::from(model),
        pieces(content).len(),
        168 + pieces(content).len()
    )
}

/// Token-sized pieces the way Qwen's BPE cut the recorded call: words with their leading
/// space, runs of punctuation, `_` and `/` starting a new piece.
pub fn pieces(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut current = String::new();
    let class = |c: char| {
        if c.is_alphanumeric() {
            0
        } else if c == ' ' {
            1
        } else if c == '\n' {
            2
        } else {
            3
        }
    };
    for c in text.chars() {
        let starts = match current.chars().last() {
            None => false,
            Some(_) if c == '_' || c == '/' => true,
            // A space sticks to the word or symbol after it.
            Some(prev) if class(prev) == 1 => false,
            Some(prev) => class(prev) != class(c) || class(c) == 2,
        };
        if starts {
            out.push(std::mem::take(&mut current));
        }
        current.push(c);
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}
