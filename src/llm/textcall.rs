//! Reading a tool call that a model wrote as text instead of a native `tool_calls` delta.
//!
//! Small models served by llama.cpp (Qwen2.5-Coder 0.5B/1.5B with `--jinja`) answer a
//! `tools` request with the call as JSON in `content`, in several shapes: a bare object, the
//! object with doubled braces (`{{"name": …}}}`), inside a fenced ```json block, inside
//! Qwen/Hermes `<tool_call>…</tool_call>` tags, with prose before or after. The `text` tool
//! protocol asks for exactly that on purpose (no `tools` field, so llama.cpp keeps logprobs
//! on every token). This module reads such text — pure, no I/O — into one call checked
//! against the tools offered, or into a typed error whose message is written to be sent
//! back to the model as a repair request: it names what was wrong and the allowed tools.
//!
//! Exactly one call per step: when the text holds several, the first is taken and
//! [`TextCall::ignored`] counts the rest, so the loop can log a warning.
//!
//! Accepted call objects (`arguments` may also be `parameters` or `args`, and may be an
//! object or a JSON string holding one; absent means `{}`):
//! `{"name": N, "arguments": A}`, `{"function": {"name": N, "arguments": A}}`,
//! `{"tool": N, …}`, `{"tool_calls": [call, …]}`, `{N: A}` when `N` is an offered tool, and
//! `{"name": N, "summary": …}` with the arguments beside the name (both models did that).

use serde_json::{Map, Value};

use super::callargs::snippet;
pub use super::callargs::{MALFORMED_CALL, NO_TOOL_CALL, TextCallError, check_arguments};
use super::types::{FunctionCall, ToolCall, ToolSpec};

/// A call read from text, checked against the offered tools.
#[derive(Debug, Clone, PartialEq)]
pub struct TextCall {
    /// One of the offered tool names.
    pub name: String,
    /// The arguments as an object, with integers written as strings (`"2"`) coerced where
    /// the schema asks for an integer.
    pub arguments: Map<String, Value>,
    /// Further calls found after the first one and ignored (one call per step).
    pub ignored: usize,
    /// Byte range of the call's JSON object in the text.
    pub span: std::ops::Range<usize>,
}

impl TextCall {
    /// The call in the shape native calls have, so the rest of the loop has one path.
    pub fn into_tool_call(self, id: impl Into<String>) -> ToolCall {
        ToolCall {
            id: id.into(),
            kind: "function".into(),
            function: FunctionCall {
                name: self.name,
                arguments: Value::Object(self.arguments).to_string(),
            },
        }
    }
}

/// Reads the first tool call in `text` and checks it against `tools`.
pub fn parse_call(text: &str, tools: &[ToolSpec]) -> Result<TextCall, TextCallError> {
    let allowed = || tools.iter().map(|t| t.name.clone()).collect::<Vec<_>>();
    let mut first: Option<(Candidate, std::ops::Range<usize>)> = None;
    let mut ignored = 0;
    let mut from = 0;
    while let Some(offset) = text[from..].find('{') {
        let start = from + offset;
        let Some(end) = object_end(text, start) else {
            // Unbalanced to the end of the text: cut off, or prose with a lone brace.
            if first.is_none() && looks_like_call(&text[start..]) {
                return Err(TextCallError::Unparseable {
                    snippet: snippet(&text[start..]),
                    reason: "the object is not closed".into(),
                    allowed: allowed(),
                });
            }
            from = start + 1;
            continue;
        };
        let candidate = candidate(&text[start..end], tools);
        match candidate {
            Candidate::NotACall => {
                // Maybe a call nested deeper (`{"tool_call": {...}}` in an unknown wrapper).
                from = start + 1;
                continue;
            }
            found => {
                if first.is_none() {
                    ignored += extra_calls(&found);
                    first = Some((found, start..end));
                } else {
                    ignored += 1 + extra_calls(&found);
                }
                from = end;
            }
        }
    }
    let Some((found, span)) = first else {
        return Err(TextCallError::NoCall { allowed: allowed() });
    };
    match found {
        Candidate::Call {
            name, arguments, ..
        } => {
            let arguments = check_arguments(&name, arguments, tools)?;
            Ok(TextCall {
                name,
                arguments,
                ignored,
                span,
            })
        }
        Candidate::Broken { snippet, reason } => Err(TextCallError::Unparseable {
            snippet,
            reason,
            allowed: allowed(),
        }),
        Candidate::Nameless => Err(TextCallError::NoName { allowed: allowed() }),
        Candidate::NotACall => Err(TextCallError::NoCall { allowed: allowed() }),
    }
}

/// What one balanced `{…}` turned out to be.
#[derive(Debug)]
enum Candidate {
    Call {
        name: String,
        arguments: Value,
        /// Calls after the first in a `tool_calls` list.
        more: usize,
    },
    /// Starts like a call (`{"name"`) but is not JSON even after the repairs tried.
    Broken {
        snippet: String,
        reason: String,
    },
    /// A call-shaped object (`arguments` present) without a name.
    Nameless,
    NotACall,
}

fn extra_calls(c: &Candidate) -> usize {
    match c {
        Candidate::Call { more, .. } => *more,
        _ => 0,
    }
}

fn candidate(object: &str, tools: &[ToolSpec]) -> Candidate {
    let value = match parse_lenient(object) {
        Ok(v) => v,
        Err(reason) => {
            return if looks_like_call(object) {
                Candidate::Broken {
                    snippet: snippet(object),
                    reason,
                }
            } else {
                Candidate::NotACall
            };
        }
    };
    interpret(&value, tools)
}

/// The object as JSON, or repaired the ways small models break it: raw newlines and tabs
/// inside strings (a file's content written out), one layer of doubled braces, or every
/// doubled brace outside strings collapsed (a model imitating a template's escaping).
fn parse_lenient(object: &str) -> Result<Value, String> {
    let first = match serde_json::from_str::<Value>(object) {
        Ok(v) => return Ok(v),
        Err(e) => e.to_string(),
    };
    let escaped = escape_raw_controls(object);
    for text in [object, escaped.as_str()] {
        if text.starts_with("{{") && text.ends_with("}}") {
            let inner = &text[1..text.len() - 1];
            if let Ok(v) = serde_json::from_str::<Value>(inner.trim()) {
                return Ok(v);
            }
        }
        let collapsed = collapse_doubled_braces(text);
        if let Ok(v) = serde_json::from_str::<Value>(&collapsed) {
            return Ok(v);
        }
    }
    Err(first)
}

/// Raw newlines, carriage returns and tabs inside strings written as JSON escapes.
fn escape_raw_controls(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut strings = Strings::default();
    for c in text.chars() {
        let inside = strings.inside;
        let mut buf = [0u8; 4];
        for b in c.encode_utf8(&mut buf).bytes() {
            strings.structural(b);
        }
        match c {
            '\n' if inside => out.push_str("\\n"),
            '\r' if inside => out.push_str("\\r"),
            '\t' if inside => out.push_str("\\t"),
            _ => out.push(c),
        }
    }
    out
}

/// Keys of a call object that are not arguments.
const CALL_KEYS: [&str; 6] = ["name", "tool", "tool_name", "function", "type", "id"];

fn interpret(value: &Value, tools: &[ToolSpec]) -> Candidate {
    let Some(object) = value.as_object() else {
        return Candidate::NotACall;
    };
    if let Some(calls) = object.get("tool_calls").and_then(Value::as_array) {
        let mut read = calls.iter().map(|c| interpret(c, tools));
        return match read.next() {
            Some(Candidate::Call {
                name, arguments, ..
            }) => Candidate::Call {
                name,
                arguments,
                more: calls.len() - 1,
            },
            Some(other) => other,
            None => Candidate::NotACall,
        };
    }
    if let Some(function) = object.get("function").filter(|f| f.is_object()) {
        return interpret(function, tools);
    }
    let arguments = ["arguments", "parameters", "args", "input"]
        .iter()
        .find_map(|k| object.get(*k))
        .cloned();
    let name = ["name", "tool", "tool_name", "function"]
        .iter()
        .find_map(|k| object.get(*k).and_then(Value::as_str));
    match (name, arguments) {
        (Some(name), Some(arguments)) => Candidate::Call {
            name: name.trim().to_string(),
            arguments,
            more: 0,
        },
        // `{"name": "finish", "summary": "…"}`: the arguments beside the name, unwrapped.
        (Some(name), None) => {
            let flat: Map<String, Value> = object
                .iter()
                .filter(|(k, _)| !CALL_KEYS.contains(&k.as_str()))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            Candidate::Call {
                name: name.trim().to_string(),
                arguments: Value::Object(flat),
                more: 0,
            }
        }
        (None, Some(_)) => Candidate::Nameless,
        (None, None) => {
            // `{"read_file": {"path": "a"}}`: the tool's name as the only key.
            let mut entries = object.iter();
            match (entries.next(), entries.next()) {
                (Some((key, args)), None)
                    if args.is_object() && tools.iter().any(|t| &t.name == key) =>
                {
                    Candidate::Call {
                        name: key.clone(),
                        arguments: args.clone(),
                        more: 0,
                    }
                }
                _ => Candidate::NotACall,
            }
        }
    }
}

/// Whether text starting at a `{` is meant as a call: its first key is a call's key.
fn looks_like_call(text: &str) -> bool {
    let head = text.trim_start_matches(['{', ' ', '\n', '\t', '\r']);
    ["\"name\"", "\"function\"", "\"tool\"", "\"tool_calls\""]
        .iter()
        .any(|k| head.starts_with(k))
}

/// Tracks whether the bytes of JSON text are inside a string literal.
#[derive(Debug, Default, Clone, Copy)]
struct Strings {
    inside: bool,
    escaped: bool,
}

impl Strings {
    /// Feeds one byte; true when it is structural (outside every string, not a quote).
    fn structural(&mut self, b: u8) -> bool {
        if self.inside {
            match b {
                _ if self.escaped => self.escaped = false,
                b'\\' => self.escaped = true,
                b'"' => self.inside = false,
                _ => {}
            }
            return false;
        }
        self.inside = b == b'"';
        !self.inside
    }
}

/// End (exclusive) of the balanced `{…}` starting at `start`, strings skipped, or `None`
/// when the text ends first. Also how triage finds the verdict object in a reply.
pub fn object_end(text: &str, start: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut strings = Strings::default();
    for (i, b) in text.bytes().enumerate().skip(start) {
        if !strings.structural(b) {
            continue;
        }
        match b {
            b'{' => depth += 1,
            b'}' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return Some(i + 1);
                }
            }
            _ => {}
        }
    }
    None
}

fn collapse_doubled_braces(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut strings = Strings::default();
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if strings.structural(b) && (b == b'{' || b == b'}') && bytes.get(i + 1) == Some(&b) {
            i += 1;
        }
        out.push(b);
        i += 1;
    }
    // Only ASCII braces were dropped, so the bytes are still UTF-8.
    String::from_utf8(out).unwrap_or_else(|_| text.to_string())
}

/// Watches a streamed reply for the end of its first complete call, so the stream can be
/// closed there instead of paying for a second call that would be ignored.
///
/// No stream in the product closes early yet, so this is compiled only for the tests (the
/// `testkit` feature), kept with its tests for when one does.
#[cfg(feature = "testkit")]
#[derive(Debug, Default, Clone)]
pub struct CallWatcher {
    text: String,
    scanned: usize,
    depth: usize,
    start: Option<usize>,
    strings: Strings,
    complete: Option<usize>,
}

#[cfg(feature = "testkit")]
impl CallWatcher {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds streamed text; returns true once the text holds a complete call object (its
    /// closing brace has arrived). Amortised O(1) per byte.
    pub fn push(&mut self, chunk: &str, tools: &[ToolSpec]) -> bool {
        self.text.push_str(chunk);
        if self.complete.is_some() {
            return true;
        }
        let bytes = self.text.as_bytes();
        while self.scanned < bytes.len() {
            let i = self.scanned;
            let b = bytes[i];
            self.scanned += 1;
            // Quotes only open strings inside an object; prose has apostrophes and quotes.
            if self.depth == 0 && b == b'"' {
                continue;
            }
            if !self.strings.structural(b) {
                continue;
            }
            match b {
                b'{' => {
                    if self.depth == 0 {
                        self.start = Some(i);
                    }
                    self.depth += 1;
                }
                b'}' if self.depth > 0 => {
                    self.depth -= 1;
                    if self.depth == 0
                        && let Some(start) = self.start.take()
                        && matches!(
                            candidate(&self.text[start..=i], tools),
                            Candidate::Call { .. }
                        )
                    {
                        self.complete = Some(i + 1);
                        return true;
                    }
                }
                _ => {}
            }
        }
        false
    }

    /// The text so far.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Reads the call from everything pushed so far (see [`parse_call`]).
    pub fn finish(&self, tools: &[ToolSpec]) -> Result<TextCall, TextCallError> {
        parse_call(&self.text, tools)
    }
}
