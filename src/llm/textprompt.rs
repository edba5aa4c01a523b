//! The tool list as system-prompt text, for the `text` tool protocol.
//!
//! A server offered no `tools` field learns the tools from the prompt: one line per tool
//! with its arguments, and one exact example call in the format [`super::textcall`] reads.
//! Written for a 0.5B model, which copies what it sees: arguments are listed by name only,
//! `read_file(path, start_line?, end_line?)`. Shown as a JSON object with the types as
//! values (`{"path": "string"}`), the real 0.5B under a grammar wrote
//! `{"path": "string"}` as its call; the worked example shows real values instead.

use serde_json::Value;

use super::types::ToolSpec;

/// Placeholder in a prompt template for [`render_tools`].
pub const TOOLS_PLACEHOLDER: &str = "{tools}";
/// Placeholder in a prompt template for [`example_call`].
pub const EXAMPLE_PLACEHOLDER: &str = "{example}";
/// Placeholder in a prompt template for the tool names, comma-separated.
pub const NAMES_PLACEHOLDER: &str = "{names}";

/// One line per tool: `- name(arg, opt?): first sentence.`
pub fn render_tools(tools: &[ToolSpec]) -> String {
    tools
        .iter()
        .map(|t| {
            format!(
                "- {}({}): {}",
                t.name,
                argument_shape(&t.parameters),
                first_sentence(&t.description)
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// One exact call in the format the parser reads: `read_file` on `README.md` when that
/// tool is offered, else the first tool with its required arguments filled in.
pub fn example_call(tools: &[ToolSpec]) -> String {
    let spec = tools
        .iter()
        .find(|t| t.name == "read_file")
        .or_else(|| tools.first());
    let Some(spec) = spec else {
        return String::new();
    };
    let mut arguments = serde_json::Map::new();
    let properties = spec.parameters.get("properties").and_then(Value::as_object);
    for name in required(&spec.parameters) {
        let kind = properties
            .and_then(|p| p.get(name))
            .and_then(|s| s.get("type"))
            .and_then(Value::as_str);
        let value = match (name, kind) {
            ("path", _) => Value::from("README.md"),
            (_, Some("integer" | "number")) => Value::from(1),
            (_, Some("boolean")) => Value::from(true),
            (_, Some("array")) => Value::Array(Vec::new()),
            _ => Value::from("..."),
        };
        arguments.insert(name.to_string(), value);
    }
    // Name first, as models copy the order they see (sorted keys put `arguments` first).
    format!(
        "{{\"name\": {}, \"arguments\": {}}}",
        Value::from(spec.name.as_str()),
        pretty_inline(&Value::Object(arguments))
    )
}

/// `{"path": "README.md"}` with a space after each colon and comma, as models write JSON.
fn pretty_inline(v: &Value) -> String {
    match v {
        Value::Object(m) => {
            let fields: Vec<String> = m
                .iter()
                .map(|(k, v)| format!("{}: {}", Value::from(k.as_str()), pretty_inline(v)))
                .collect();
            format!("{{{}}}", fields.join(", "))
        }
        other => other.to_string(),
    }
}

/// `template` with [`TOOLS_PLACEHOLDER`], [`EXAMPLE_PLACEHOLDER`] and [`NAMES_PLACEHOLDER`]
/// filled in; a template
/// without them gets the list and the example appended, so an override cannot leave the
/// model without the tools.
pub fn system_prompt(template: &str, tools: &[ToolSpec]) -> String {
    let list = render_tools(tools);
    let example = example_call(tools);
    if template.contains(TOOLS_PLACEHOLDER) {
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
        return template
            .replace(TOOLS_PLACEHOLDER, &list)
            .replace(EXAMPLE_PLACEHOLDER, &example)
            .replace(NAMES_PLACEHOLDER, &names.join(", "));
    }
    format!(
        "{}\n\nTools:\n{list}\n\nReply with exactly one tool call as JSON, for example:\n{example}",
        template.trim_end()
    )
}

fn required(parameters: &Value) -> impl Iterator<Item = &str> {
    parameters
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
}

/// `path, depth?`: required first, each group in the order the schema lists them.
fn argument_shape(parameters: &Value) -> String {
    let Some(properties) = parameters.get("properties").and_then(Value::as_object) else {
        return String::new();
    };
    let required: Vec<&str> = required(parameters).collect();
    let mut fields: Vec<(bool, String)> = properties
        .keys()
        .map(|name| {
            let is_required = required.contains(&name.as_str());
            let key = if is_required {
                name.clone()
            } else {
                format!("{name}?")
            };
            (!is_required, key)
        })
        .collect();
    fields.sort_by_key(|(optional, _)| *optional);
    let inner: Vec<String> = fields.into_iter().map(|(_, f)| f).collect();
    inner.join(", ")
}

fn first_sentence(description: &str) -> &str {
    match description.find(". ") {
        Some(i) => &description[..=i],
        None => description,
    }
}
