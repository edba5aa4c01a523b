//! Turns a sequence of chunks into [`Delta`]s: tokens, whole tool calls, finish, usage.
//!
//! Pure and synchronous so that every server quirk can be checked without I/O; the client
//! feeds it the chunks an SSE stream delivers and forwards what it returns.

use std::borrow::Cow;
use std::collections::BTreeSet;

use serde_json::Value;

use super::chunk::{self, LogprobToken, ParsedChunk, ToolFragment};
use super::error::LlmError;
use super::textcall;
use super::types::{Delta, FunctionCall, ToolCall, ToolSpec, Usage};

/// The `kind` of the warning sent when a server returns tokens without logprobs.
pub const NO_LOGPROBS: &str = "no_logprobs";

pub use super::textcall::{MALFORMED_CALL, NO_TOOL_CALL};
/// The `kind` of the warning sent when the text held more than one call (the first is used).
pub const SEVERAL_TOOL_CALLS: &str = "several_tool_calls";
/// Prefix of the ids given to calls read from text (`text_call_1`, …).
pub const TEXT_CALL_ID: &str = "text_call_";

/// A tool call whose fragments are still arriving.
#[derive(Debug)]
struct OpenCall {
    index: u32,
    id: Option<String>,
    kind: Option<String>,
    name: String,
    arguments: String,
}

impl OpenCall {
    fn into_call(self) -> ToolCall {
        ToolCall {
            id: self.id.unwrap_or_else(|| format!("call_{}", self.index)),
            kind: self.kind.unwrap_or_else(|| "function".into()),
            function: FunctionCall {
                name: self.name,
                arguments: self.arguments,
            },
        }
    }
}

/// State of one response stream.
#[derive(Debug)]
pub struct StreamDecoder {
    logprobs_requested: bool,
    top_k: usize,
    warned_no_logprobs: bool,
    open: Vec<OpenCall>,
    closed: BTreeSet<u32>,
    usage: Option<Usage>,
    finished: bool,
    /// Tools offered to the model when its text is to be searched for a call.
    text_calls: Option<Vec<ToolSpec>>,
    /// The reply's text so far, kept only while `text_calls` is set.
    text: String,
    /// Calls yielded, native or from text, for ids that do not collide.
    yielded: usize,
}

impl StreamDecoder {
    /// `logprobs_requested` decides whether tokens without logprobs deserve a warning;
    /// `top_k` caps the alternatives kept per token (servers may send one more).
    pub fn new(logprobs_requested: bool, top_k: usize) -> Self {
        StreamDecoder {
            logprobs_requested,
            top_k,
            warned_no_logprobs: false,
            open: Vec::new(),
            closed: BTreeSet::new(),
            usage: None,
            finished: false,
            text_calls: None,
            text: String::new(),
            yielded: 0,
        }
    }

    /// Also reads a call written as text when the reply ends without a native one (the
    /// `auto` and `text` tool protocols): it is yielded as a [`Delta::ToolCall`] with id
    /// `text_call_<n>`, before the usage. A reply without a usable call yields a warning
    /// ([`NO_TOOL_CALL`] or [`MALFORMED_CALL`], the message written for the model), several
    /// calls a [`SEVERAL_TOOL_CALLS`] warning. No tools offered: nothing is read.
    pub fn reading_text_calls(mut self, tools: &[ToolSpec]) -> Self {
        if !tools.is_empty() {
            self.text_calls = Some(tools.to_vec());
        }
        self
    }

    /// Whether a finish reason has been seen.
    pub fn finished(&self) -> bool {
        self.finished
    }

    /// Deltas for one chunk already decoded into a `Value`, in order: tokens, completed
    /// tool calls, finish.
    pub fn push(&mut self, value: &Value) -> Result<Vec<Delta>, LlmError> {
        let mut out = Vec::new();
        self.apply(chunk::parse(value), &mut out)?;
        Ok(out)
    }

    /// Decodes one chunk's JSON text (an SSE event's data) and appends its deltas to `out`:
    /// the client's path, which reads the chunk without building a `Value` and reuses `out`.
    pub fn push_json(&mut self, data: &[u8], out: &mut Vec<Delta>) -> Result<(), LlmError> {
        self.apply(chunk::parse_json(data)?, out)
    }

    fn apply(&mut self, parsed: ParsedChunk<'_>, out: &mut Vec<Delta>) -> Result<(), LlmError> {
        let ParsedChunk {
            error,
            content,
            tokens,
            tool_fragments,
            finish_reason,
            usage,
            silent,
        } = parsed;
        if let Some(error) = &error {
            return Err(LlmError::from_stream_error(error));
        }
        if !silent {
            self.tokens(tokens, content, out);
        }
        for fragment in tool_fragments {
            self.fragment(fragment, out);
        }
        if let Some(reason) = finish_reason {
            self.flush_calls(out);
            self.finished = true;
            out.push(Delta::Finish(reason));
        }
        if let Some(usage) = usage {
            // Cumulative where servers repeat it (vLLM's continuous usage): keep the last.
            self.usage = Some(usage);
        }
        Ok(())
    }

    /// Deltas at the end of the stream: calls still open, then usage. A stream that ends
    /// without a finish reason was cut short.
    pub fn end(&mut self) -> Result<Vec<Delta>, LlmError> {
        if !self.finished {
            return Err(LlmError::Protocol {
                message: "the stream ended before a finish reason".into(),
            });
        }
        let mut out = Vec::new();
        self.flush_calls(&mut out);
        self.text_call(&mut out);
        if let Some(usage) = self.usage.take() {
            out.push(Delta::Usage(usage));
        }
        Ok(out)
    }

    /// Takes the chunk's tokens by value: this runs once per streamed token, and moving the
    /// parsed strings into the deltas saves copying each of them again.
    fn tokens(
        &mut self,
        tokens: Option<Vec<LogprobToken>>,
        content: Option<Cow<'_, str>>,
        out: &mut Vec<Delta>,
    ) {
        match tokens {
            Some(tokens) if !tokens.is_empty() => {
                // A silent chunk never gets here (see `ParsedChunk::silent`): llama.cpp with
                // a grammar reports the sample the grammar refused ("```" before the JSON)
                // in a chunk without content; counted as a token it would reach the text,
                // the call parser and the judge's tick count.
                let mut tokens = tokens;
                let spelled = content.as_deref().is_none_or(|content| {
                    tokens
                        .iter()
                        .try_fold(content, |rest, t| rest.strip_prefix(t.text.as_str()))
                        == Some("")
                });
                if let Some(content) = content.filter(|_| !spelled) {
                    // The content is what the reply says; the logprobs stay with it.
                    for (i, t) in tokens.iter_mut().enumerate() {
                        t.text = if i == 0 {
                            content.to_string()
                        } else {
                            String::new()
                        };
                    }
                }
                for t in tokens {
                    if self.text_calls.is_some() {
                        self.text.push_str(&t.text);
                    }
                    let mut top = t.top;
                    top.truncate(self.top_k);
                    out.push(Delta::Token {
                        text: t.text,
                        logprob: t.logprob,
                        top,
                    });
                }
            }
            _ => {
                let Some(text) = content else {
                    return;
                };
                if self.logprobs_requested && !self.warned_no_logprobs {
                    self.warned_no_logprobs = true;
                    out.push(Delta::Warning {
                        kind: NO_LOGPROBS.into(),
                        message: "the server sent tokens without logprobs; the judge uses step \
                                  evidence only for this response"
                            .into(),
                    });
                }
                if self.text_calls.is_some() {
                    self.text.push_str(&text);
                }
                out.push(Delta::Token {
                    text: text.into_owned(),
                    logprob: None,
                    top: Vec::new(),
                });
            }
        }
    }

    fn text_call(&mut self, out: &mut Vec<Delta>) {
        let Some(tools) = self.text_calls.take() else {
            return;
        };
        if self.yielded > 0 {
            return;
        }
        match textcall::parse_call(&self.text, &tools) {
            Ok(call) => {
                if call.ignored > 0 {
                    out.push(Delta::Warning {
                        kind: SEVERAL_TOOL_CALLS.into(),
                        message: format!(
                            "the reply holds {} tool calls; only the first ({}) is used",
                            call.ignored + 1,
                            call.name
                        ),
                    });
                }
                self.yielded += 1;
                let id = format!("{TEXT_CALL_ID}{}", self.yielded);
                out.push(Delta::ToolCall(call.into_tool_call(id)));
            }
            Err(e) => out.push(Delta::Warning {
                kind: e.fact().into(),
                message: e.to_string(),
            }),
        }
    }

    fn fragment(&mut self, f: ToolFragment, out: &mut Vec<Delta>) {
        let index = match f.index {
            Some(i) => i,
            // Without an index: a new id (or nothing open) starts a call, otherwise it
            // continues the last one.
            None => match self.open.last() {
                Some(last) if f.id.is_none() || f.id == last.id => last.index,
                _ => self.next_index(),
            },
        };
        if self.closed.contains(&index) {
            out.push(Delta::Warning {
                kind: "late_tool_fragment".into(),
                message: format!("ignored a fragment of tool call {index} after it was complete"),
            });
            return;
        }
        if !self.open.iter().any(|c| c.index == index) {
            self.flush_calls(out);
            self.open.push(OpenCall {
                index,
                id: None,
                kind: None,
                name: String::new(),
                arguments: String::new(),
            });
        }
        let Some(call) = self.open.iter_mut().find(|c| c.index == index) else {
            return;
        };
        if call.id.is_none() {
            call.id = f.id;
        }
        if call.kind.is_none() {
            call.kind = f.kind;
        }
        if let Some(name) = f.name
            && call.name.is_empty()
        {
            call.name = name;
        }
        call.arguments.push_str(&f.arguments);
    }

    fn next_index(&self) -> u32 {
        let highest = self
            .open
            .iter()
            .map(|c| c.index)
            .chain(self.closed.iter().copied())
            .max();
        highest.map_or(0, |h| h.saturating_add(1))
    }

    fn flush_calls(&mut self, out: &mut Vec<Delta>) {
        let mut open = std::mem::take(&mut self.open);
        open.sort_by_key(|c| c.index);
        for call in open {
            self.closed.insert(call.index);
            self.yielded += 1;
            out.push(Delta::ToolCall(call.into_call()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn fragment(call: Value) -> Value {
        json!({"choices": [{"index": 0, "delta": {"tool_calls": [call]}}]})
    }

    fn names(deltas: &[Delta]) -> Vec<String> {
        deltas
            .iter()
            .map(|d| match d {
                Delta::ToolCall(c) => {
                    format!("{}:{}:{}", c.id, c.function.name, c.function.arguments)
                }
                Delta::Warning { kind, .. } => format!("warning:{kind}"),
                other => format!("{other:?}"),
            })
            .collect()
    }

    #[test]
    fn calls_without_index_split_on_a_new_id() {
        let mut d = StreamDecoder::new(false, 0);
        let mut out = Vec::new();
        for call in [
            json!({"id": "a", "function": {"name": "f", "arguments": "{"}}),
            json!({"function": {"arguments": "}"}}),
            json!({"id": "b", "function": {"name": "g", "arguments": "[]"}}),
        ] {
            out.extend(d.push(&fragment(call)).expect("chunk"));
        }
        out.extend(
            d.push(&json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}))
                .expect("finish"),
        );
        out.extend(d.end().expect("end"));
        assert_eq!(names(&out), ["a:f:{}", "b:g:[]", "Finish(\"tool_calls\")"]);
    }

    #[test]
    fn a_fragment_after_its_call_was_yielded_is_a_warning() {
        let mut d = StreamDecoder::new(false, 0);
        let mut out = Vec::new();
        for call in [
            json!({"index": 0, "id": "a", "function": {"name": "f", "arguments": "1"}}),
            json!({"index": 1, "id": "b", "function": {"name": "g", "arguments": "2"}}),
            json!({"index": 0, "function": {"arguments": "late"}}),
        ] {
            out.extend(d.push(&fragment(call)).expect("chunk"));
        }
        assert_eq!(names(&out), ["a:f:1", "warning:late_tool_fragment"]);
    }

    #[test]
    fn usage_is_sent_once_at_the_end_and_the_last_one_counts() {
        let mut d = StreamDecoder::new(false, 0);
        let chunk = |c: u64| json!({"choices": [{"index": 0, "delta": {"content": "x"}}], "usage": {"prompt_tokens": 3, "completion_tokens": c}});
        let mut out = Vec::new();
        out.extend(d.push(&chunk(1)).expect("chunk"));
        out.extend(d.push(&chunk(2)).expect("chunk"));
        out.extend(
            d.push(&json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}))
                .expect("finish"),
        );
        out.extend(d.end().expect("end"));
        let usages: Vec<&Delta> = out
            .iter()
            .filter(|d| matches!(d, Delta::Usage(_)))
            .collect();
        assert_eq!(
            usages,
            [&Delta::Usage(Usage {
                prompt_tokens: 3,
                completion_tokens: 2
            })]
        );
    }

    /// The first two chunks llama.cpp 11434 streamed for a `response_format` request with
    /// logprobs (recorded from the real server, top lists cut to one entry): the grammar
    /// refused the "```" the model sampled first, and only "{\n" is the reply.
    #[test]
    fn a_logprob_without_content_is_not_a_token_of_the_reply() {
        let mut d = StreamDecoder::new(true, 5);
        let mut out = Vec::new();
        for data in [
            r#"{"choices":[{"finish_reason":null,"index":0,"delta":{},"logprobs":{"content":[{"id":73594,"token":"```","bytes":[96,96,96],"logprob":-0.7124825716018677,"top_logprobs":[{"id":73594,"token":"```","bytes":[96,96,96],"logprob":-0.7124825716018677}]}]}}],"object":"chat.completion.chunk"}"#,
            r#"{"choices":[{"finish_reason":null,"index":0,"delta":{"content":"{\n"},"logprobs":{"content":[{"id":515,"token":"{\n","bytes":[123,10],"logprob":-0.3551928400993347,"top_logprobs":[{"id":515,"token":"{\n","bytes":[123,10],"logprob":-0.3551928400993347}]}]}}],"object":"chat.completion.chunk"}"#,
        ] {
            d.push_json(data.as_bytes(), &mut out).expect("chunk");
        }
        let texts: Vec<&str> = out
            .iter()
            .filter_map(|d| match d {
                Delta::Token { text, .. } => Some(text.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(texts, ["{\n"]);
    }

    /// A server whose logprob tokens do not spell the content (a detokeniser that merges
    /// bytes differently): the text is the content, the logprobs are kept.
    #[test]
    fn the_content_wins_when_the_tokens_spell_something_else() {
        let mut d = StreamDecoder::new(true, 5);
        let chunk = json!({"choices": [{"index": 0, "delta": {"content": "ab"},
            "logprobs": {"content": [{"token": "a", "logprob": -0.5}, {"token": "x", "logprob": -1.0}]}}]});
        let out = d.push(&chunk).expect("chunk");
        let tokens: Vec<(String, Option<f64>)> = out
            .iter()
            .filter_map(|d| match d {
                Delta::Token { text, logprob, .. } => Some((text.clone(), *logprob)),
                _ => None,
            })
            .collect();
        assert_eq!(
            tokens,
            [("ab".to_string(), Some(-0.5)), (String::new(), Some(-1.0))]
        );
    }
}
