//! Checking a tool call's arguments against the offered tool's schema, for text and native
//! calls alike, so both protocols send the model the same repair message.

use serde_json::{Map, Value};

use super::textcall::{TextCallError, snippet};
use super::types::ToolSpec;

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
