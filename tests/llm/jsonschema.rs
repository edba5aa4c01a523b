//! `tool_protocol = "json_schema"` on the wire: the `response_format` a request carries, the
//! call read back from the text, and a server that rejects the schema.

use handoff::agent::tools::spec::specs;
use handoff::config::{ModelConfig, ToolProtocol};
use handoff::demo::llamacpp::{self, Behaviour};
use handoff::demo::server::{Reply, Script, ScriptedServer};
use handoff::llm::{ChatRequest, Client, Delta, LlmError, Message, ToolSpec};
use pretty_assertions::assert_eq;
use serde_json::json;

use super::common::{call, collect, config};

fn endpoint(server: &ScriptedServer) -> ModelConfig {
    ModelConfig {
        model: "qwen2.5-coder-0.5b-instruct".into(),
        tool_protocol: ToolProtocol::JsonSchema,
        ..config(server, 5)
    }
}

fn two_tools() -> Vec<ToolSpec> {
    specs()
        .into_iter()
        .filter(|t| t.name == "read_file" || t.name == "finish")
        .collect()
}

fn request(tools: Vec<ToolSpec>) -> ChatRequest {
    ChatRequest {
        messages: vec![Message::system("Tools: ..."), Message::user("Fix calc.py")],
        tools,
    }
}

#[tokio::test]
async fn the_request_carries_one_schema_branch_per_tool_and_no_tools_field() {
    let server = ScriptedServer::start(llamacpp::script(Behaviour::JsonInContent))
        .await
        .expect("server");
    let client = Client::new(&endpoint(&server)).expect("client");
    let (deltas, err) = collect(&client, &request(two_tools())).await;
    assert_eq!(err, None);
    let bodies = server.bodies();
    assert_eq!(bodies.len(), 1);
    assert!(bodies[0].get("tools").is_none());
    assert_eq!(bodies[0]["logprobs"], json!(true));
    assert_eq!(
        bodies[0]["response_format"],
        json!({"type": "json_schema", "json_schema": {"name": "tool_call", "schema": {"anyOf": [
            {"type": "object", "required": ["name", "arguments"], "additionalProperties": false,
             "properties": {"name": {"const": "read_file"}, "arguments": {
                "type": "object", "additionalProperties": false, "required": ["path"],
                "properties": {
                    "path": {"type": "string", "description": "File path relative to the repository root."},
                    "start_line": {"type": "integer", "minimum": 1, "description": "First line to show (1-based). Default: 1."},
                    "end_line": {"type": "integer", "minimum": 1, "description": "Last line to show (inclusive). Default: the end."}
                }}}},
            {"type": "object", "required": ["name", "arguments"], "additionalProperties": false,
             "properties": {"name": {"const": "finish"}, "arguments": {
                "type": "object", "additionalProperties": false, "required": ["summary"],
                "properties": {"summary": {"type": "string", "description": "What was changed and why."}}}}}
        ]}}})
    );
    // Every token keeps its logprobs and the call is read from the text.
    assert!(
        deltas
            .iter()
            .all(|d| !matches!(d, Delta::Token { logprob: None, .. }))
    );
    let calls: Vec<&Delta> = deltas
        .iter()
        .filter(|d| matches!(d, Delta::ToolCall(_)))
        .collect();
    let arguments = json!({"path": "src/main.rs"}).to_string();
    assert_eq!(calls, [&call("text_call_1", "read_file", &arguments)]);
}

#[tokio::test]
async fn a_request_without_tools_carries_no_schema_and_extra_cannot_replace_it() {
    let server = ScriptedServer::start(llamacpp::script(Behaviour::JsonInContent))
        .await
        .expect("server");
    let mut cfg = endpoint(&server);
    cfg.extra
        .insert("response_format".into(), toml::Value::from("json_object"));
    let client = Client::new(&cfg).expect("client");
    let (_, err) = collect(&client, &request(Vec::new())).await;
    assert_eq!(err, None);
    let (_, err) = collect(&client, &request(two_tools())).await;
    assert_eq!(err, None);
    let bodies = server.bodies();
    assert!(bodies[0].get("response_format").is_none(), "{}", bodies[0]);
    assert_eq!(bodies[1]["response_format"]["type"], json!("json_schema"));
}

#[tokio::test]
async fn a_server_that_rejects_the_schema_gives_an_error_naming_the_setting() {
    let server = ScriptedServer::start(Script::new(vec![Reply::error(
        400,
        "Unsupported param: response_format",
    )]))
    .await
    .expect("server");
    let client = Client::new(&endpoint(&server)).expect("client");
    let (_, err) = collect(&client, &request(two_tools())).await;
    let err = err.expect("an error");
    assert!(
        matches!(err, LlmError::BadRequest { status: 400, .. }),
        "{err:?}"
    );
    let msg = err.to_string();
    assert!(
        msg.contains("Unsupported param: response_format")
            && msg.contains("tool_protocol = \"json_schema\"")
            && msg.contains("tool_protocol = \"text\""),
        "{msg}"
    );
}
