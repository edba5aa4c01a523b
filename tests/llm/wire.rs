//! What the client puts on the wire: whole request bodies and headers.

use std::time::Duration;

use handoff::demo::server::{Reply, Script, ScriptedServer};
use handoff::demo::sse;
use handoff::llm::{ChatRequest, Client, FunctionCall, LlmError, Message, ToolCall};
use pretty_assertions::assert_eq;
use serde_json::json;

use super::common::*;

fn ok_reply() -> Reply {
    Reply::sse(
        vec![
            sse::data(&sse::text("ok")),
            sse::data(&sse::finish("stop")),
            sse::done(),
        ],
        Duration::ZERO,
    )
}

async fn one_request(
    cfg: impl FnOnce(&ScriptedServer) -> handoff::config::ModelConfig,
    key: Option<&str>,
    req: &ChatRequest,
) -> handoff::demo::server::RecordedRequest {
    let server = ScriptedServer::start(Script::new(vec![ok_reply()]))
        .await
        .expect("server");
    let client = Client::with_api_key(&cfg(&server), key.map(str::to_string)).expect("client");
    let (_, err) = collect(&client, req).await;
    assert_eq!(err, None);
    let mut requests = server.requests();
    assert_eq!(requests.len(), 1);
    requests.remove(0)
}

#[tokio::test]
async fn plain_request_body() {
    let sent = one_request(|s| config(s, 3), None, &request()).await;
    assert_eq!(
        sent.body,
        json!({
            "model": "scripted",
            "messages": [
                {"role": "system", "content": "be brief"},
                {"role": "user", "content": "say hi"},
            ],
            "stream": true,
            "stream_options": {"include_usage": true},
            "temperature": 0.2,
            "max_tokens": 64,
            "logprobs": true,
            "top_logprobs": 3,
        })
    );
    assert_eq!(sent.authorization, None, "no key configured, none sent");
}

#[tokio::test]
async fn tools_history_extra_fields_and_key() {
    let mut extra = toml::Table::new();
    extra.insert("repetition_penalty".into(), toml::Value::Float(1.05));
    extra.insert(
        "chat_template_kwargs".into(),
        toml::Value::Table(toml::toml! { enable_thinking = false }),
    );
    // Fields that would break the stream contract are not overridable.
    extra.insert("stream".into(), toml::Value::Boolean(false));
    extra.insert("temperature".into(), toml::Value::Float(0.7));
    let call = ToolCall {
        id: "c1".into(),
        kind: "function".into(),
        function: FunctionCall {
            name: "read_file".into(),
            arguments: r#"{"path":"a.rs"}"#.into(),
        },
    };
    let req = ChatRequest {
        messages: vec![
            Message::user("fix it"),
            Message::assistant("", vec![call]),
            Message::tool("c1", "fn main() {}"),
        ],
        ..request_with_tools()
    };
    let sent = one_request(
        |s| handoff::config::ModelConfig {
            extra,
            top_logprobs: 0,
            max_tokens: None,
            ..config(s, 0)
        },
        Some("sk-test-123"),
        &req,
    )
    .await;
    assert_eq!(
        sent.body,
        json!({
            "model": "scripted",
            "messages": [
                {"role": "user", "content": "fix it"},
                {"role": "assistant", "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\":\"a.rs\"}"}}
                ]},
                {"role": "tool", "content": "fn main() {}", "tool_call_id": "c1"},
            ],
            "tools": [{"type": "function", "function": {
                "name": "read_file",
                "description": "Read a file",
                "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
            }}],
            "stream": true,
            "stream_options": {"include_usage": true},
            "temperature": 0.7,
            "logprobs": true,
            "top_logprobs": 0,
            "repetition_penalty": 1.05,
            "chat_template_kwargs": {"enable_thinking": false},
        })
    );
    assert_eq!(sent.authorization.as_deref(), Some("Bearer sk-test-123"));
}

#[tokio::test]
async fn logprobs_off_sends_no_logprob_fields() {
    let sent = one_request(
        |s| handoff::config::ModelConfig {
            logprobs: false,
            ..config(s, 5)
        },
        None,
        &request(),
    )
    .await;
    assert_eq!(sent.body.get("logprobs"), None);
    assert_eq!(sent.body.get("top_logprobs"), None);
    assert_eq!(sent.body.get("n_probs"), None);
}

#[tokio::test]
async fn missing_key_variable_is_a_config_error() {
    let server = ScriptedServer::start(Script::new(vec![]))
        .await
        .expect("server");
    let cfg = handoff::config::ModelConfig {
        api_key_env: Some("HANDOFF_TEST_KEY_THAT_IS_NEVER_SET".into()),
        ..config(&server, 0)
    };
    let err = Client::new(&cfg).expect_err("no key");
    assert_eq!(
        err,
        LlmError::Config {
            message:
                "environment variable HANDOFF_TEST_KEY_THAT_IS_NEVER_SET (api_key_env) is not set"
                    .into()
        }
    );
    assert!(!err.retryable());
    let bad = Client::with_api_key(&cfg, Some("line\nbreak".into())).expect_err("bad key");
    assert_eq!(bad.kind(), "config");
}

#[tokio::test]
async fn cost_uses_the_endpoint_prices() {
    let server = ScriptedServer::start(Script::new(vec![]))
        .await
        .expect("server");
    let client = Client::new(&config(&server, 0)).expect("client");
    // 1 USD per million input, 2 USD per million output.
    let usd = client.cost(handoff::llm::Usage {
        prompt_tokens: 500_000,
        completion_tokens: 250_000,
    });
    assert!((usd - 1.0).abs() < 1e-12, "{usd}");
    assert_eq!(client.model(), "scripted");
}

#[tokio::test]
async fn the_key_never_shows_in_debug_output() {
    let server = ScriptedServer::start(Script::new(vec![]))
        .await
        .expect("server");
    let client =
        Client::with_api_key(&config(&server, 0), Some("sk-secret-987".into())).expect("client");
    let shown = format!("{client:?}");
    assert!(!shown.contains("sk-secret-987"), "{shown}");
    assert!(shown.contains("<set>"), "{shown}");
}
