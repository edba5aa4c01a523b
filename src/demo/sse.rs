//! Builders for the SSE wire format of OpenAI-compatible chat streams.
//!
//! Scripts for the fake server are written with these so a test reads as "a token with
//! these alternatives, then a tool call" rather than as escaped JSON; quirk tests that need
//! a particular server's exact bytes write them by hand instead.

use axum::body::Bytes;
use serde_json::{Value, json};

/// One generated token and its top-k alternatives, in OpenAI's logprob shape.
#[derive(Debug, Clone, PartialEq)]
pub struct Tok {
    pub text: String,
    pub logprob: f64,
    pub top: Vec<(String, f64)>,
}

impl Tok {
    /// The chosen token as its only alternative, as servers send it at k = 1.
    pub fn new(text: &str, logprob: f64) -> Tok {
        Tok {
            text: text.into(),
            logprob,
            top: vec![(text.into(), logprob)],
        }
    }

    /// Replaces the alternatives (the chosen token is not added implicitly).
    pub fn top(mut self, alternatives: &[(&str, f64)]) -> Tok {
        self.top = alternatives
            .iter()
            .map(|(t, l)| (t.to_string(), *l))
            .collect();
        self
    }
}

/// `data: <json>\n\n`.
pub fn data(chunk: &Value) -> Bytes {
    Bytes::from(format!("data: {chunk}\n\n"))
}

/// The stream terminator.
pub fn done() -> Bytes {
    Bytes::from_static(b"data: [DONE]\n\n")
}

/// An SSE comment line (`: text`), as OpenRouter sends while a provider is busy.
pub fn comment(text: &str) -> Bytes {
    Bytes::from(format!(": {text}\n\n"))
}

fn envelope(choices: Value) -> Value {
    json!({
        "id": "chatcmpl-scripted",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "scripted",
        "choices": choices,
    })
}

/// A chunk whose content is the concatenation of `tokens`, with one logprob entry each.
pub fn tokens(tokens: &[Tok]) -> Value {
    let text: String = tokens.iter().map(|t| t.text.as_str()).collect();
    let content: Vec<Value> = tokens
        .iter()
        .map(|t| {
            let top: Vec<Value> = t
                .top
                .iter()
                .map(|(tok, lp)| json!({"token": tok, "logprob": lp, "bytes": tok.as_bytes()}))
                .collect();
            json!({"token": t.text, "logprob": t.logprob, "bytes": t.text.as_bytes(), "top_logprobs": top})
        })
        .collect();
    envelope(json!([{
        "index": 0,
        "delta": {"content": text},
        "logprobs": {"content": content},
        "finish_reason": null,
    }]))
}

/// A content chunk without logprobs (what LM Studio and senior models send).
pub fn text(text: &str) -> Value {
    envelope(json!([{
        "index": 0,
        "delta": {"content": text},
        "finish_reason": null,
    }]))
}

/// One tool-call fragment; `id` and `name` only on the first fragment of a call.
pub fn tool_call(index: u32, id: Option<&str>, name: Option<&str>, arguments: &str) -> Value {
    let mut call = json!({"index": index, "function": {"arguments": arguments}});
    if let Some(id) = id {
        call["id"] = json!(id);
        call["type"] = json!("function");
    }
    if let Some(name) = name {
        call["function"]["name"] = json!(name);
    }
    envelope(json!([{
        "index": 0,
        "delta": {"tool_calls": [call]},
        "finish_reason": null,
    }]))
}

/// The chunk carrying the finish reason, with an empty delta.
pub fn finish(reason: &str) -> Value {
    envelope(json!([{
        "index": 0,
        "delta": {},
        "logprobs": null,
        "finish_reason": reason,
    }]))
}

/// OpenAI's final usage chunk (`stream_options.include_usage`): empty `choices`.
pub fn usage(prompt_tokens: u64, completion_tokens: u64) -> Value {
    let mut chunk = envelope(json!([]));
    chunk["usage"] = json!({
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
    });
    chunk
}

/// A whole well-formed stream: one chunk per token, each tool call in two fragments,
/// the finish chunk, usage, `[DONE]`. The finish reason is `tool_calls` when there are
/// calls, else `stop`.
pub fn completion(toks: &[Tok], calls: &[(&str, &str, &str)], prompt_tokens: u64) -> Vec<Bytes> {
    let mut out: Vec<Bytes> = toks
        .iter()
        .map(|t| data(&tokens(std::slice::from_ref(t))))
        .collect();
    for (i, (id, name, args)) in calls.iter().enumerate() {
        let index = u32::try_from(i).unwrap_or(u32::MAX);
        let cut = args.len() / 2;
        let cut = (0..=cut)
            .rev()
            .find(|c| args.is_char_boundary(*c))
            .unwrap_or(0);
        out.push(data(&tool_call(index, Some(id), Some(name), &args[..cut])));
        out.push(data(&tool_call(index, None, None, &args[cut..])));
    }
    let reason = if calls.is_empty() {
        "stop"
    } else {
        "tool_calls"
    };
    out.push(data(&finish(reason)));
    let completion_tokens = u64::try_from(toks.len()).unwrap_or(u64::MAX);
    out.push(data(&usage(prompt_tokens, completion_tokens)));
    out.push(done());
    out
}
