//! The `response_format` of the `json_schema` tool protocol: a JSON schema that admits
//! exactly one call of one offered tool.
//!
//! Small models offered tools as text write clean JSON but often the wrong *name* (the
//! function under test instead of a tool) or code instead of a call. A server with
//! constrained decoding (llama.cpp's grammar sampler, vLLM guided decoding, Ollama
//! `format`, LM Studio, OpenAI structured outputs) given this schema can only sample
//! `{"name": <an offered tool>, "arguments": {<that tool's arguments>}}`, and unlike the
//! `tools` field it keeps logprobs on every token while streaming. The call is still read
//! by [`super::textcall`], so a server that ignores the schema degrades to `text`.

use serde_json::{Value, json};

use super::types::ToolSpec;

/// The name the schema is sent under (`json_schema.name`; OpenAI requires one).
pub const SCHEMA_NAME: &str = "tool_call";

/// `response_format` for a request offering `tools`: `{"type": "json_schema",
/// "json_schema": {"name": "tool_call", "schema": {"anyOf": [one branch per tool]}}}`.
///
/// Each branch fixes `name` with `const` and takes the tool's own parameter schema for
/// `arguments`, closed with `additionalProperties: false` when the tool leaves it open so
/// the grammar does not let the model invent arguments. `strict` is not set: OpenAI's
/// strict mode requires every property to be required, and optional arguments are not.
pub fn response_format(tools: &[ToolSpec]) -> Value {
    json!({
        "type": "json_schema",
        "json_schema": {"name": SCHEMA_NAME, "schema": call_schema(tools)},
    })
}

/// The schema of one call of one of `tools` (the `schema` inside [`response_format`]).
pub fn call_schema(tools: &[ToolSpec]) -> Value {
    let branches: Vec<Value> = tools.iter().map(branch).collect();
    json!({"anyOf": branches})
}

fn branch(tool: &ToolSpec) -> Value {
    let mut arguments = tool.parameters.clone();
    if let Value::Object(m) = &mut arguments {
        m.entry("type").or_insert_with(|| json!("object"));
        m.entry("additionalProperties")
            .or_insert_with(|| json!(false));
    }
    json!({
        "type": "object",
        "properties": {
            "name": {"const": tool.name},
            "arguments": arguments,
        },
        "required": ["name", "arguments"],
        "additionalProperties": false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::tools::spec::specs;

    /// Whether `v` matches `schema`, for the keywords [`call_schema`] and the built-in tools
    /// use (`anyOf`, `const`, `type`, `properties`, `required`, `additionalProperties`,
    /// `items`, `minimum`).
    fn valid(v: &Value, schema: &Value) -> bool {
        if let Some(branches) = schema.get("anyOf").and_then(Value::as_array) {
            return branches.iter().any(|b| valid(v, b));
        }
        if let Some(c) = schema.get("const") {
            return v == c;
        }
        let typed = match schema.get("type").and_then(Value::as_str) {
            Some("object") => v.is_object(),
            Some("string") => v.is_string(),
            Some("integer") => v.is_i64() || v.is_u64(),
            Some("array") => v.is_array(),
            Some("boolean") => v.is_boolean(),
            _ => true,
        };
        if !typed {
            return false;
        }
        if let Some(min) = schema.get("minimum").and_then(Value::as_f64)
            && v.as_f64().is_some_and(|x| x < min)
        {
            return false;
        }
        if let (Value::Array(items), Some(item)) = (v, schema.get("items")) {
            return items.iter().all(|i| valid(i, item));
        }
        let Value::Object(fields) = v else {
            return true;
        };
        let properties = schema.get("properties").and_then(Value::as_object);
        let required = schema.get("required").and_then(Value::as_array);
        let has_required = required
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .all(|r| fields.contains_key(r));
        let closed = schema.get("additionalProperties") == Some(&json!(false));
        has_required
            && fields
                .iter()
                .all(|(k, f)| match properties.and_then(|p| p.get(k)) {
                    Some(s) => valid(f, s),
                    None => !closed,
                })
    }

    #[test]
    fn every_built_in_tool_admits_its_example_call_and_nothing_else() {
        let tools = specs();
        let schema = call_schema(&tools);
        for tool in &tools {
            let example = crate::llm::textprompt::example_call(std::slice::from_ref(tool));
            let call: Value = serde_json::from_str(&example).expect("example is JSON");
            assert!(valid(&call, &schema), "{example}");
            let mut renamed = call.clone();
            renamed["name"] = json!("slugify");
            assert!(!valid(&renamed, &schema), "an unknown name: {renamed}");
            let mut extra = call.clone();
            extra["arguments"]["title"] = json!("Hello");
            assert!(!valid(&extra, &schema), "an invented argument: {extra}");
            if tool
                .parameters
                .get("required")
                .and_then(Value::as_array)
                .is_some_and(|r| !r.is_empty())
            {
                let empty = json!({"name": tool.name, "arguments": {}});
                assert!(!valid(&empty, &schema), "missing arguments: {empty}");
            }
        }
    }

    #[test]
    fn the_worked_example_of_the_junior_prompt_is_admitted_call_by_call() {
        let schema = call_schema(&specs());
        let prompt = include_str!("../../prompts/junior_text.txt");
        let calls: Vec<Value> = prompt
            .lines()
            .filter_map(|l| l.split_once("reply").or_else(|| l.split_once("Reply")))
            .filter_map(|(_, rest)| rest.find('{').map(|i| &rest[i..]))
            .map(|json| serde_json::from_str(json).expect("example call is JSON"))
            .collect();
        assert_eq!(calls.len(), 4, "{calls:?}");
        for c in &calls {
            assert!(valid(c, &schema), "{c}");
        }
        assert!(!valid(
            &json!({"name": "read_file", "arguments": {"path": 3}}),
            &schema
        ));
        assert!(!valid(
            &json!({"name": "run", "arguments": {"command": "x", "timeout_s": 0}}),
            &schema
        ));
    }
}
