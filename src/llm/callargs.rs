//! Checking a tool call's arguments against the offered tool's schema, for text and native
//! calls alike, so both protocols send the model the same repair message; and that message's
//! vocabulary ([`TextCallError`]), which the text reader (`textcall`) also speaks.

use serde_json::{Map, Value};

use super::types::ToolSpec;

/// Why no usable call could be read. The `Display` text is the repair message's core.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TextCallError {
    /// Nothing in the reply looks like a tool call.
    #[error("your reply contains no tool call; reply with exactly one tool call as a JSON object {{\"name\": ..., \"arguments\": {{...}}}}; allowed tools: {}", allowed.join(", "))]
    NoCall { allowed: Vec<String> },
    /// Something that starts like a call is not valid JSON (or is cut off).
    #[error("the tool call is not valid JSON ({reason}) near `{snippet}`; write one JSON object {{\"name\": ..., \"arguments\": {{...}}}}; allowed tools: {}", allowed.join(", "))]
    Unparseable {
        snippet: String,
        reason: String,
        allowed: Vec<String>,
    },
    /// A call object without a tool name.
    #[error("the tool call has no \"name\"; allowed tools: {}", allowed.join(", "))]
    NoName { allowed: Vec<String> },
    #[error("there is no tool named `{name}`; allowed tools: {}", allowed.join(", "))]
    UnknownTool { name: String, allowed: Vec<String> },
    #[error("`{tool}` needs the argument `{argument}` ({expected}); allowed tools: {}", allowed.join(", "))]
    MissingArgument {
        tool: String,
        argument: String,
        expected: String,
        allowed: Vec<String>,
    },
    #[error("`{tool}`: the argument `{argument}` must be {expected}, not {found}; allowed tools: {}", allowed.join(", "))]
    MistypedArgument {
        tool: String,
        argument: String,
        expected: String,
        found: String,
        allowed: Vec<String>,
    },
}

/// The warning kind and step fact of a reply that was offered tools and holds no call.
pub const NO_TOOL_CALL: &str = "no_tool_call";
/// The warning kind and step fact of a call that could not be used (not JSON, unknown tool,
/// missing or mistyped arguments).
pub const MALFORMED_CALL: &str = "malformed_call";

impl TextCallError {
    /// The step fact this error is for the judge: [`NO_TOOL_CALL`] or [`MALFORMED_CALL`].
    pub fn fact(&self) -> &'static str {
        match self {
            TextCallError::NoCall { .. } => NO_TOOL_CALL,
            _ => MALFORMED_CALL,
        }
    }
}

/// At most 60 characters of `s`, for messages.
pub(super) fn snippet(s: &str) -> String {
    const MAX: usize = 60;
    match s.char_indices().nth(MAX) {
        Some((cut, _)) => format!("{}…", &s[..cut]),
        None => s.to_string(),
    }
}

/// Checks a call's arguments against the offered tool's JSON schema: the tool exists, every
/// required argument is present, every known argument has its declared type. Extra
/// arguments are kept (the tools ignore them); integers written as strings are coerced.
/// Also for native calls, so both protocols give the model the same repair message.
pub fn check_arguments(
    name: &str,
    arguments: Value,
    tools: &[ToolSpec],
) -> Result<Map<String, Value>, TextCallError> {
    let allowed = || tools.iter().map(|t| t.name.clone()).collect::<Vec<_>>();
    let Some(spec) = tools.iter().find(|t| t.name == name) else {
        return Err(TextCallError::UnknownTool {
            name: name.to_string(),
            allowed: allowed(),
        });
    };
    let mistyped =
        |argument: &str, expected: &str, found: &Value| TextCallError::MistypedArgument {
            tool: name.to_string(),
            argument: argument.to_string(),
            expected: expected.to_string(),
            found: describe(found),
            allowed: allowed(),
        };
    let mut arguments = match arguments {
        Value::Object(m) => m,
        Value::Null => Map::new(),
        Value::String(s) if s.trim().is_empty() => Map::new(),
        Value::String(s) => match serde_json::from_str::<Value>(&s) {
            Ok(Value::Object(m)) => m,
            _ => return Err(mistyped("arguments", "a JSON object", &Value::String(s))),
        },
        other => return Err(mistyped("arguments", "a JSON object", &other)),
    };
    let properties = spec.parameters.get("properties").and_then(Value::as_object);
    let required = spec
        .parameters
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str);
    for argument in required {
        if arguments.get(argument).is_none_or(Value::is_null) {
            let expected = properties
                .and_then(|p| p.get(argument))
                .map_or_else(|| "any value".to_string(), type_words);
            return Err(TextCallError::MissingArgument {
                tool: name.to_string(),
                argument: argument.to_string(),
                expected,
                allowed: allowed(),
            });
        }
    }
    for (argument, schema) in properties.into_iter().flatten() {
        let Some(value) = arguments.get_mut(argument) else {
            continue;
        };
        let Some(kind) = schema.get("type").and_then(Value::as_str) else {
            continue;
        };
        if value.is_null() {
            continue;
        }
        if kind == "integer"
            && let Some(n) = value.as_str().and_then(|s| s.trim().parse::<i64>().ok())
        {
            *value = Value::from(n);
        }
        if !has_type(value, kind) {
            return Err(mistyped(argument, &type_words(schema), value));
        }
    }
    Ok(arguments)
}

fn has_type(value: &Value, kind: &str) -> bool {
    match kind {
        "string" => value.is_string(),
        "integer" => value.is_i64() || value.is_u64(),
        "number" => value.is_number(),
        "boolean" => value.is_boolean(),
        "array" => value.is_array(),
        "object" => value.is_object(),
        _ => true,
    }
}

fn type_words(schema: &Value) -> String {
    match schema.get("type").and_then(Value::as_str) {
        Some("string") => "a string".into(),
        Some("integer") => "an integer".into(),
        Some("number") => "a number".into(),
        Some("boolean") => "true or false".into(),
        Some("array") => match schema.pointer("/items/type").and_then(Value::as_str) {
            Some("string") => "a list of strings".into(),
            _ => "a list".into(),
        },
        Some("object") => "a JSON object".into(),
        Some(other) => format!("of type {other}"),
        None => "any value".into(),
    }
}

fn describe(value: &Value) -> String {
    match value {
        Value::Null => "null".into(),
        Value::Bool(_) => "true/false".into(),
        Value::Number(n) => format!("the number {n}"),
        Value::String(s) => format!("the string {:?}", snippet(s)),
        Value::Array(_) => "a list".into(),
        Value::Object(_) => "an object".into(),
    }
}
