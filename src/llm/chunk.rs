//! One streamed chunk, read leniently into a shape the decoder can use.
//!
//! Real servers disagree on nearly every optional field (see the module docs of `llm`), so
//! a chunk is read from a `serde_json::Value` field by field: anything unknown is ignored,
//! anything missing is absent, and logprobs in OpenAI's (`logprob`/`top_logprobs`) and
//! llama.cpp's post-sampling (`prob`/`top_probs`) shapes become the same thing.

use serde_json::Value;

use super::types::{Alternative, Usage};

/// vLLM's stand-in for −∞ (JSON has no infinity): a number at or below it is not a
/// measurement and is treated as absent.
pub const LOGPROB_FLOOR: f64 = -9999.0;

/// What one chunk says, normalised.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ParsedChunk {
    /// An `error` object inside an HTTP-200 stream.
    pub error: Option<Value>,
    /// `choices[0].delta.content` (empty strings dropped).
    pub content: Option<String>,
    /// `choices[0].logprobs.content` when present; `None` for missing or `null` logprobs.
    pub tokens: Option<Vec<LogprobToken>>,
    pub tool_fragments: Vec<ToolFragment>,
    pub finish_reason: Option<String>,
    pub usage: Option<Usage>,
}

/// One token of a `logprobs.content` list.
#[derive(Debug, Clone, PartialEq)]
pub struct LogprobToken {
    pub text: String,
    pub logprob: Option<f64>,
    /// Sorted by logprob, descending, one entry per distinct token, floor values removed.
    pub top: Vec<Alternative>,
}

/// A piece of a tool call as streamed.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolFragment {
    pub index: Option<u32>,
    pub id: Option<String>,
    pub kind: Option<String>,
    pub name: Option<String>,
    pub arguments: String,
}

/// Reads one chunk. Only the first choice (index 0) is read: requests ask for one.
pub fn parse(chunk: &Value) -> ParsedChunk {
    let mut out = ParsedChunk {
        error: chunk.get("error").filter(|e| !e.is_null()).cloned(),
        usage: chunk.get("usage").and_then(parse_usage),
        ..ParsedChunk::default()
    };
    let choice = chunk
        .get("choices")
        .and_then(Value::as_array)
        .and_then(|choices| {
            choices
                .iter()
                .find(|c| c.get("index").and_then(Value::as_u64).unwrap_or(0) == 0)
        });
    let Some(choice) = choice else {
        return out;
    };
    if let Some(delta) = choice.get("delta").or_else(|| choice.get("message")) {
        out.content = delta
            .get("content")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_string);
        out.tool_fragments = match delta.get("tool_calls") {
            Some(Value::Array(calls)) => calls.iter().map(parse_fragment).collect(),
            // A single call object instead of a list.
            Some(call @ Value::Object(_)) => vec![parse_fragment(call)],
            _ => Vec::new(),
        };
    }
    out.tokens = choice
        .get("logprobs")
        .and_then(|l| l.get("content"))
        .and_then(Value::as_array)
        .map(|entries| entries.iter().map(parse_token).collect());
    out.finish_reason = choice
        .get("finish_reason")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_string);
    out
}

fn parse_usage(u: &Value) -> Option<Usage> {
    let prompt = u.get("prompt_tokens").and_then(Value::as_u64);
    let completion = u.get("completion_tokens").and_then(Value::as_u64);
    if prompt.is_none() && completion.is_none() {
        return None;
    }
    Some(Usage {
        prompt_tokens: prompt.unwrap_or(0),
        completion_tokens: completion.unwrap_or(0),
    })
}

fn parse_fragment(call: &Value) -> ToolFragment {
    let function = call.get("function");
    let text = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_string);
    let arguments = match function.and_then(|f| f.get("arguments")) {
        Some(Value::String(s)) => s.clone(),
        None | Some(Value::Null) => String::new(),
        // Some servers send the arguments as an object rather than JSON text.
        Some(other) => other.to_string(),
    };
    ToolFragment {
        index: call
            .get("index")
            .and_then(Value::as_u64)
            .and_then(|i| u32::try_from(i).ok()),
        id: text(call.get("id")).filter(|s| !s.is_empty()),
        kind: text(call.get("type")),
        name: text(function.and_then(|f| f.get("name"))).filter(|s| !s.is_empty()),
        arguments,
    }
}

fn parse_token(entry: &Value) -> LogprobToken {
    let text = match entry.get("token").and_then(Value::as_str) {
        Some(t) => t.to_string(),
        None => bytes_text(entry.get("bytes")).unwrap_or_default(),
    };
    let alternatives = entry
        .get("top_logprobs")
        .or_else(|| entry.get("top_probs"))
        .and_then(Value::as_array)
        .map(|list| list.iter().filter_map(parse_alternative).collect())
        .unwrap_or_default();
    LogprobToken {
        text,
        logprob: logprob_of(entry),
        top: normalise(alternatives),
    }
}

fn parse_alternative(entry: &Value) -> Option<Alternative> {
    let token = match entry.get("token").and_then(Value::as_str) {
        Some(t) => t.to_string(),
        None => bytes_text(entry.get("bytes"))?,
    };
    Some(Alternative {
        token,
        logprob: logprob_of(entry)?,
    })
}

/// `logprob`, or `ln(prob)` for llama.cpp's post-sampling shape; absent when null,
/// non-finite or at vLLM's floor.
fn logprob_of(entry: &Value) -> Option<f64> {
    let lp = match entry.get("logprob").and_then(Value::as_f64) {
        Some(lp) => lp,
        None => {
            let p = entry.get("prob").and_then(Value::as_f64)?;
            if p <= 0.0 {
                return None;
            }
            p.min(1.0).ln()
        }
    };
    (lp.is_finite() && lp > LOGPROB_FLOOR).then_some(lp.min(0.0))
}

fn bytes_text(bytes: Option<&Value>) -> Option<String> {
    let bytes: Vec<u8> = bytes?
        .as_array()?
        .iter()
        .map(|b| b.as_u64().and_then(|b| u8::try_from(b).ok()))
        .collect::<Option<_>>()?;
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

/// Sorts descending (vLLM sends them unsorted) and keeps the best entry per token.
///
/// Runs on every streamed token, so duplicates are found by a scan of the entries kept so
/// far rather than a hash set: lists hold at most ~21 entries (k ≤ 20 plus the chosen
/// token), and the scan allocates nothing.
fn normalise(mut alternatives: Vec<Alternative>) -> Vec<Alternative> {
    alternatives.sort_by(|a, b| b.logprob.total_cmp(&a.logprob));
    let mut kept = 0;
    for i in 0..alternatives.len() {
        let seen = alternatives[..kept]
            .iter()
            .any(|a| a.token == alternatives[i].token);
        if !seen {
            // Everything in kept..i is a dropped duplicate, so the order of kept entries holds.
            alternatives.swap(kept, i);
            kept += 1;
        }
    }
    alternatives.truncate(kept);
    alternatives
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn post_sampling_probs_become_logprobs() {
        let chunk = json!({"choices": [{"index": 0, "delta": {"content": "a"}, "logprobs": {"content": [
            {"id": 64, "token": "a", "bytes": [97], "prob": 0.5,
             "top_probs": [{"id": 65, "token": "b", "prob": 0.25}, {"id": 64, "token": "a", "prob": 0.5}, {"token": "z", "prob": 0.0}]}
        ]}}]});
        let parsed = parse(&chunk);
        let tokens = parsed.tokens.expect("tokens");
        assert_eq!(tokens[0].logprob, Some(0.5f64.ln()));
        let names: Vec<&str> = tokens[0].top.iter().map(|a| a.token.as_str()).collect();
        assert_eq!(names, ["a", "b"]);
    }

    #[test]
    fn floor_and_null_are_absent() {
        let t = parse_token(&json!({"token": "x", "logprob": -9999.0, "top_logprobs": [
            {"token": "x", "logprob": -9999.0}, {"token": "y", "logprob": -1.0}, {"token": "y", "logprob": -2.0}]}));
        assert_eq!(t.logprob, None);
        assert_eq!(
            t.top,
            vec![Alternative {
                token: "y".into(),
                logprob: -1.0
            }]
        );
        assert_eq!(
            parse_token(&json!({"token": "x", "logprob": null})).logprob,
            None
        );
    }

    #[test]
    fn bytes_when_token_text_is_missing() {
        let t = parse_token(&json!({"bytes": [226, 130, 172], "logprob": -0.5}));
        assert_eq!(t.text, "€");
    }
}
