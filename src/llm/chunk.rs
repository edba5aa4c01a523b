//! One streamed chunk, read leniently into a shape the decoder can use.
//!
//! Real servers disagree on nearly every optional field (see the module docs of `llm`), so
//! a chunk is decoded straight from its bytes into typed structs whose fields never fail
//! ([`super::lenient`]): anything unknown is skipped, anything missing or of an unexpected
//! type is absent, and logprobs in OpenAI's (`logprob`/`top_logprobs`) and llama.cpp's
//! post-sampling (`prob`/`top_probs`) shapes become the same thing. Strings borrow from the
//! chunk's bytes until the decoder takes what it keeps, so no `serde_json::Value` tree is
//! built and dropped per token. A chunk the typed reading refuses (only a repeated key can
//! do that) is read through a `Value`, whose last-wins reading of repeated keys it keeps.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::Value;

use super::error::LlmError;
use super::lenient::{Arguments, Capped, Count, List, Number, Obj, OneOrMany, Text, present};
use super::types::{Alternative, Usage};

/// vLLM's stand-in for −∞ (JSON has no infinity): a number at or below it is not a
/// measurement and is treated as absent.
pub const LOGPROB_FLOOR: f64 = -9999.0;

/// What one chunk says, normalised. `content` borrows from the chunk's bytes: when the
/// chunk has logprobs the decoder takes the tokens' texts instead, and copies `content`
/// only when those texts do not spell it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ParsedChunk<'a> {
    /// An `error` object inside an HTTP-200 stream.
    pub error: Option<Value>,
    /// `choices[0].delta.content` (empty strings dropped).
    pub content: Option<Cow<'a, str>>,
    /// `choices[0].logprobs.content` when present; `None` for missing or `null` logprobs.
    pub tokens: Option<Vec<LogprobToken>>,
    pub tool_fragments: Vec<ToolFragment>,
    pub finish_reason: Option<String>,
    pub usage: Option<Usage>,
    /// The delta said nothing: no `content` string (absent or `null`; `""` is something),
    /// no tool call, no reasoning. Logprobs on such a chunk are llama.cpp's report of a
    /// sample its grammar refused, not a token of the reply.
    pub silent: bool,
}

impl ParsedChunk<'_> {
    /// The same chunk owning all its text.
    pub fn into_owned(self) -> ParsedChunk<'static> {
        ParsedChunk {
            content: self.content.map(|c| Cow::Owned(c.into_owned())),
            error: self.error,
            tokens: self.tokens,
            tool_fragments: self.tool_fragments,
            finish_reason: self.finish_reason,
            usage: self.usage,
            silent: self.silent,
        }
    }
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

/// A chunk as the server wrote it: the fields any server is known to send, each lenient.
#[derive(Default, Deserialize)]
#[serde(default)]
struct WireChunk<'a> {
    error: Option<Value>,
    #[serde(borrow)]
    choices: List<Obj<WireChoice<'a>>>,
    usage: Obj<WireUsage>,
}

#[derive(Default, Deserialize)]
#[serde(default)]
struct WireChoice<'a> {
    index: Count,
    #[serde(borrow, deserialize_with = "present")]
    delta: Option<Obj<WireDelta<'a>>>,
    /// Where a delta belongs, some servers send the whole `message`.
    #[serde(borrow, deserialize_with = "present")]
    message: Option<Obj<WireDelta<'a>>>,
    #[serde(borrow)]
    logprobs: Obj<WireLogprobs<'a>>,
    #[serde(borrow)]
    finish_reason: Text<'a>,
}

#[derive(Default, Deserialize)]
#[serde(default)]
struct WireDelta<'a> {
    #[serde(borrow)]
    content: Text<'a>,
    /// vLLM's and DeepSeek's reasoning text: only whether it is there is read.
    #[serde(borrow)]
    reasoning: Text<'a>,
    #[serde(borrow)]
    reasoning_content: Text<'a>,
    #[serde(borrow)]
    tool_calls: OneOrMany<Obj<WireCall<'a>>>,
}

#[derive(Default, Deserialize)]
#[serde(default)]
struct WireCall<'a> {
    index: Count,
    #[serde(borrow)]
    id: Text<'a>,
    #[serde(borrow, rename = "type")]
    kind: Text<'a>,
    #[serde(borrow)]
    function: Obj<WireFunction<'a>>,
}

#[derive(Default, Deserialize)]
#[serde(default)]
struct WireFunction<'a> {
    #[serde(borrow)]
    name: Text<'a>,
    #[serde(borrow)]
    arguments: Arguments<'a>,
}

#[derive(Default, Deserialize)]
#[serde(default)]
struct WireLogprobs<'a> {
    #[serde(borrow)]
    content: List<Obj<WireToken<'a>>>,
}

/// Alternatives read per token at most: requests ask for at most 20 (`top_logprobs`, the
/// OpenAI limit, which the config enforces) and some servers add the chosen token, so an
/// honest list is never cut; a hostile one is, before any entry past the cap is built.
pub const MAX_ALTERNATIVES: usize = 32;

/// A token's alternatives as the wire has them, the first [`MAX_ALTERNATIVES`] only.
type WireAlternatives<'a> = Capped<Obj<WireToken<'a>>, MAX_ALTERNATIVES>;

/// A token of `logprobs.content`, or one of its alternatives (which have no lists of their
/// own; a nested list there is read and ignored).
#[derive(Default, Deserialize)]
#[serde(default)]
struct WireToken<'a> {
    #[serde(borrow)]
    token: Text<'a>,
    bytes: List<Count>,
    logprob: Number,
    prob: Number,
    #[serde(borrow, deserialize_with = "present")]
    top_logprobs: Option<WireAlternatives<'a>>,
    #[serde(borrow, deserialize_with = "present")]
    top_probs: Option<WireAlternatives<'a>>,
}

#[derive(Default, Deserialize)]
#[serde(default)]
struct WireUsage {
    prompt_tokens: Count,
    completion_tokens: Count,
}

/// Reads one chunk's JSON text (an SSE event's data): the client's path.
pub fn parse_json(data: &[u8]) -> Result<ParsedChunk<'_>, LlmError> {
    let malformed = |e: &dyn std::fmt::Display| LlmError::Protocol {
        message: format!(
            "malformed chunk ({e}): {}",
            String::from_utf8_lossy(data)
                .chars()
                .take(200)
                .collect::<String>()
        ),
    };
    // One UTF-8 check of the whole chunk is cheaper than serde_json's check of each of its
    // strings, which reading from `&str` skips.
    let text = std::str::from_utf8(data).map_err(|e| malformed(&e))?;
    match serde_json::from_str::<Obj<WireChunk>>(text) {
        Ok(Obj(wire)) => Ok(normalise_chunk(wire)),
        Err(_) => {
            let value: Value = serde_json::from_str(text).map_err(|e| malformed(&e))?;
            Ok(parse(&value).into_owned())
        }
    }
}

/// Reads one chunk already decoded into a `Value`. Only the first choice (index 0) is read:
/// requests ask for one.
pub fn parse(chunk: &Value) -> ParsedChunk<'_> {
    // A `Value` has no repeated keys, the one thing the typed reading can refuse.
    Obj::<WireChunk>::deserialize(chunk)
        .map(|Obj(wire)| normalise_chunk(wire))
        .unwrap_or_default()
}

fn normalise_chunk(wire: WireChunk<'_>) -> ParsedChunk<'_> {
    let mut out = ParsedChunk {
        error: wire.error.filter(|e| !e.is_null()),
        usage: usage(wire.usage.0),
        ..ParsedChunk::default()
    };
    let choice = wire
        .choices
        .0
        .into_iter()
        .flatten()
        .map(|Obj(c)| c)
        .find(|c| c.index.0.unwrap_or(0) == 0);
    let Some(choice) = choice else {
        return out;
    };
    out.silent = true;
    if let Some(Obj(delta)) = choice.delta.or(choice.message) {
        out.silent = delta.content.0.is_none()
            && delta.tool_calls.0.is_empty()
            && delta.reasoning.0.is_none()
            && delta.reasoning_content.0.is_none();
        out.content = delta.content.0.filter(|s| !s.is_empty());
        out.tool_fragments = delta
            .tool_calls
            .0
            .into_iter()
            .map(|Obj(call)| fragment(call))
            .collect();
    }
    out.tokens = choice
        .logprobs
        .0
        .content
        .0
        .map(|entries| entries.into_iter().map(|Obj(t)| token(t)).collect());
    out.finish_reason = choice.finish_reason.owned(true);
    out
}

fn usage(u: WireUsage) -> Option<Usage> {
    let (prompt, completion) = (u.prompt_tokens.0, u.completion_tokens.0);
    if prompt.is_none() && completion.is_none() {
        return None;
    }
    Some(Usage {
        prompt_tokens: prompt.unwrap_or(0),
        completion_tokens: completion.unwrap_or(0),
    })
}

fn fragment(call: WireCall<'_>) -> ToolFragment {
    let Obj(function) = call.function;
    ToolFragment {
        index: call.index.0.and_then(|i| u32::try_from(i).ok()),
        id: call.id.owned(true),
        kind: call.kind.owned(false),
        name: function.name.owned(true),
        arguments: function.arguments.0.into_owned(),
    }
}

fn token(entry: WireToken<'_>) -> LogprobToken {
    let logprob = logprob_of(entry.logprob, entry.prob);
    let text = match entry.token.0 {
        Some(t) => t.into_owned(),
        None => bytes_text(entry.bytes).unwrap_or_default(),
    };
    let alternatives = entry
        .top_logprobs
        .or(entry.top_probs)
        .and_then(|Capped(list)| list)
        .map(|list| {
            list.into_iter()
                .filter_map(|Obj(a)| alternative(a))
                .collect()
        })
        .unwrap_or_default();
    LogprobToken {
        text,
        logprob,
        top: normalise(alternatives),
    }
}

fn alternative(entry: WireToken<'_>) -> Option<Alternative> {
    let logprob = logprob_of(entry.logprob, entry.prob);
    let token = match entry.token.0 {
        Some(t) => t.into_owned(),
        None => bytes_text(entry.bytes)?,
    };
    Some(Alternative {
        token,
        logprob: logprob?,
    })
}

/// `logprob`, or `ln(prob)` for llama.cpp's post-sampling shape; absent when null,
/// non-finite or at vLLM's floor.
fn logprob_of(logprob: Number, prob: Number) -> Option<f64> {
    let lp = match logprob.0 {
        Some(lp) => lp,
        None => {
            let p = prob.0?;
            if p <= 0.0 {
                return None;
            }
            p.min(1.0).ln()
        }
    };
    (lp.is_finite() && lp > LOGPROB_FLOOR).then_some(lp.min(0.0))
}

fn bytes_text(bytes: List<Count>) -> Option<String> {
    let bytes: Vec<u8> = bytes
        .0?
        .into_iter()
        .map(|b| b.0.and_then(|b| u8::try_from(b).ok()))
        .collect::<Option<_>>()?;
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

/// Sorts descending (vLLM sends them unsorted) and keeps the best entry per token.
///
/// Runs on every streamed token, so duplicates are found by a scan of the entries kept so
/// far rather than a hash set: lists hold at most [`MAX_ALTERNATIVES`] entries (cut on the
/// wire), and the scan allocates nothing.
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

    /// The first token of a chunk whose only token entry is `entry`.
    fn parse_token(entry: &Value) -> LogprobToken {
        let chunk = json!({"choices": [{"logprobs": {"content": [entry]}}]});
        let mut tokens = parse(&chunk).tokens.expect("tokens");
        tokens.remove(0)
    }

    /// A hostile server's 20,000 distinct alternatives per token: only the first
    /// [`MAX_ALTERNATIVES`] are built and normalised, on both reading paths.
    #[test]
    fn only_the_first_alternatives_of_an_oversized_list_are_read() {
        let top: Vec<Value> = (0..20_000)
            .map(|i| json!({"token": format!("t{i}"), "logprob": -(f64::from(i) / 1000.0)}))
            .collect();
        let chunk = json!({"choices": [{"delta": {"content": "a"}, "logprobs": {"content": [
            {"token": "a", "logprob": -0.1, "top_logprobs": top}
        ]}}]});
        let text = chunk.to_string();
        let typed = parse_json(text.as_bytes()).expect("chunk");
        assert_eq!(typed, parse(&chunk));
        let tokens = typed.tokens.expect("tokens");
        let kept: Vec<&str> = tokens[0].top.iter().map(|a| a.token.as_str()).collect();
        let expected: Vec<String> = (0..MAX_ALTERNATIVES).map(|i| format!("t{i}")).collect();
        assert_eq!(kept, expected);
    }

    #[test]
    fn bytes_and_value_read_the_same_with_odd_types_and_repeated_keys() {
        let chunks = [
            r#"{"choices": "x"}"#,
            r#"{"choices": ["x", {"index": 0, "delta": {"content": "late"}}]}"#,
            r#"{"choices": [{"index": 1.0, "delta": null, "message": {"content": "m"}}]}"#,
            r#"{"choices": [{"message": {"content": "m", "tool_calls": {"id": "c", "function": {"name": "f", "arguments": {"b": [1, 2.5, true], "a": null}}}}}]}"#,
            r#"{"choices": [{"delta": {"content": 7, "tool_calls": [3, {"index": -1, "type": "function", "id": ""}]}, "finish_reason": ""}]}"#,
            r#"{"choices": [{"delta": {"content": "a\u00e9"}, "logprobs": {"content": [{"bytes": [97, 300], "logprob": 1, "top_logprobs": null, "top_probs": [{"token": "b", "prob": 0.5}]}, 5]}, "finish_reason": "stop"}], "usage": {"prompt_tokens": 2}}"#,
            r#"{"choices": [{"delta": {"content": "x", "content": "y"}}], "usage": 3, "error": null}"#,
            r#"[1, 2]"#,
        ];
        for text in chunks {
            let value: Value = serde_json::from_str(text).expect("json");
            let typed = parse_json(text.as_bytes()).expect("chunk");
            assert_eq!(typed, parse(&value), "{text}");
        }
        let repeated = parse_json(br#"{"choices": [{"delta": {"content": "x", "content": "y"}}]}"#)
            .expect("chunk");
        assert_eq!(repeated.content.as_deref(), Some("y"));
        let arguments = parse_json(br#"{"choices": [{"delta": {"tool_calls": [{"function": {"arguments": {"b": 1, "a": [true]}}}]}}]}"#)
            .expect("chunk");
        assert_eq!(
            arguments.tool_fragments[0].arguments,
            serde_json::to_string(&json!({"b": 1, "a": [true]})).expect("text")
        );
    }

    #[test]
    fn text_without_escapes_is_borrowed_from_the_bytes() {
        let parsed =
            parse_json(br#"{"choices": [{"delta": {"content": "plain"}}]}"#).expect("chunk");
        assert!(matches!(parsed.content, Some(Cow::Borrowed("plain"))));
        let escaped =
            parse_json(br#"{"choices": [{"delta": {"content": "a\nb"}}]}"#).expect("chunk");
        assert_eq!(escaped.content.as_deref(), Some("a\nb"));
    }

    #[test]
    fn malformed_json_is_a_protocol_fault_naming_the_chunk() {
        let err = parse_json(b"{\"choices\": [").expect_err("malformed");
        assert_eq!(err.kind(), "protocol");
        assert!(err.to_string().contains("malformed chunk"), "{err}");
    }

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
