//! The scripted server's llama.cpp modes, read by the real client over loopback: what the
//! real server did with Qwen2.5-Coder 0.5B/1.5B, and how each tool protocol reads it.

use handoff::agent::tools::spec::specs;
use handoff::config::{ModelConfig, ToolProtocol};
use handoff::demo::llamacpp::{self, Behaviour, REJECT_LOGPROBS_WITH_TOOLS};
use handoff::demo::server::ScriptedServer;
use handoff::llm::textcall::parse_call;
use handoff::llm::{ChatRequest, Client, Delta, Message};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::common::{call, collect, config};

const MODEL: &str = "qwen2.5-coder-0.5b-instruct";

fn endpoint(server: &ScriptedServer, protocol: ToolProtocol, top: u8) -> ModelConfig {
    ModelConfig {
        model: MODEL.into(),
        tool_protocol: protocol,
        ..config(server, top)
    }
}

fn task() -> ChatRequest {
    ChatRequest {
        messages: vec![
            Message::system("You are a coding agent. Use the tools."),
            Message::user("Read the file src/main.rs using the read_file tool."),
        ],
        tools: specs(),
    }
}

/// Tool calls and warnings only (tokens are checked separately).
fn facts(deltas: &[Delta]) -> Vec<Delta> {
    deltas
        .iter()
        .filter(|d| matches!(d, Delta::ToolCall(_) | Delta::Warning { .. }))
        .cloned()
        .collect()
}

fn text_of(deltas: &[Delta]) -> String {
    deltas
        .iter()
        .filter_map(|d| match d {
            Delta::Token { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

async fn serve(behaviour: Behaviour) -> ScriptedServer {
    ScriptedServer::start(llamacpp::script(behaviour))
        .await
        .expect("server")
}

#[tokio::test]
async fn auto_reads_the_recorded_text_call_after_the_recorded_400() {
    let server = serve(Behaviour::JsonInContent).await;
    let client = Client::new(&endpoint(&server, ToolProtocol::Auto, 3)).expect("client");
    let (deltas, err) = collect(&client, &task()).await;
    assert_eq!(err, None);
    let seen = facts(&deltas);
    assert!(
        matches!(&seen[0], Delta::Warning { kind, message } if kind == "logprobs_with_tools_rejected"
            && message.contains("logprobs is not supported with tools + stream")),
        "{seen:?}"
    );
    assert_eq!(
        seen[1..],
        [call(
            "text_call_1",
            "read_file",
            r#"{"path":"src/main.rs"}"#
        )]
    );
    // The recorded stream carries logprobs on every token (n_probs = 3).
    let tokens: Vec<&Delta> = deltas
        .iter()
        .filter(|d| matches!(d, Delta::Token { .. }))
        .collect();
    assert_eq!(tokens.len(), 18);
    assert!(
        tokens
            .iter()
            .all(|t| matches!(t, Delta::Token { logprob: Some(_), top, .. } if top.len() == 3))
    );
    let bodies = server.bodies();
    assert_eq!(bodies.len(), 2);
    assert_eq!(bodies[0]["logprobs"], json!(true));
    assert_eq!(bodies[1]["n_probs"], json!(3));
    assert!(bodies[1].get("logprobs").is_none());
}

#[tokio::test]
async fn the_400_body_is_llama_cpps_own_bytes() {
    let server = serve(Behaviour::JsonInContent).await;
    let response = reqwest::Client::new()
        .post(format!("{}/chat/completions", server.base_url()))
        .body(
            json!({"model": MODEL, "stream": true, "logprobs": true, "top_logprobs": 3,
                   "messages": [], "tools": [{"type": "function", "function": {"name": "read_file"}}]})
            .to_string(),
        )
        .send()
        .await
        .expect("response");
    assert_eq!(response.status().as_u16(), 400);
    assert_eq!(
        response.text().await.expect("body"),
        REJECT_LOGPROBS_WITH_TOOLS
    );
}

#[tokio::test]
async fn native_reads_no_call_from_text() {
    let server = serve(Behaviour::JsonInContent).await;
    let client = Client::new(&endpoint(&server, ToolProtocol::Native, 3)).expect("client");
    let (deltas, err) = collect(&client, &task()).await;
    assert_eq!(err, None);
    let kinds: Vec<String> = facts(&deltas).iter().map(|d| format!("{d:?}")).collect();
    assert_eq!(kinds.len(), 1, "only the logprobs warning: {kinds:?}");
    assert_eq!(text_of(&deltas), llamacpp::TEXT_CALL);
}

/// Text protocol: no `tools` sent, so logprobs are accepted and every token — the call's
/// own tokens included — carries them; the call is read from the text.
async fn text_protocol(behaviour: Behaviour) -> (Vec<Delta>, Vec<Value>) {
    let server = serve(behaviour).await;
    let client = Client::new(&endpoint(&server, ToolProtocol::Text, 5)).expect("client");
    let (deltas, err) = collect(&client, &task()).await;
    assert_eq!(err, None);
    assert!(
        deltas
            .iter()
            .filter(|d| matches!(d, Delta::Token { .. }))
            .all(|t| matches!(
                t,
                Delta::Token {
                    logprob: Some(_),
                    ..
                }
            ))
    );
    (deltas, server.bodies())
}

#[tokio::test]
async fn text_protocol_sends_no_tools_and_reads_each_shape() {
    for (behaviour, path) in [
        (Behaviour::JsonInContent, "src/main.rs"),
        (Behaviour::DoubledBraces, "src/main.rs"),
        (Behaviour::FencedBlock, "calc.py"),
        (Behaviour::ToolCallTags, "calc.py"),
    ] {
        let (deltas, bodies) = text_protocol(behaviour.clone()).await;
        assert_eq!(bodies.len(), 1, "{behaviour:?}: one request, no 400");
        assert!(bodies[0].get("tools").is_none(), "{behaviour:?}");
        assert_eq!(bodies[0]["logprobs"], json!(true));
        assert_eq!(text_of(&deltas), behaviour.content(), "{behaviour:?}");
        let arguments = json!({"path": path}).to_string();
        assert_eq!(
            facts(&deltas),
            [call("text_call_1", "read_file", &arguments)],
            "{behaviour:?}"
        );
        // The parser alone reads the same call from the same text.
        let parsed = parse_call(&behaviour.content(), &specs()).expect("parsed");
        assert_eq!(parsed.name, "read_file");
    }
}

#[tokio::test]
async fn an_unknown_tool_and_prose_become_warnings_for_the_model() {
    let (deltas, _) = text_protocol(Behaviour::UnknownTool).await;
    let unknown = facts(&deltas);
    assert!(
        matches!(&unknown[..], [Delta::Warning { kind, message }] if kind == "malformed_call"
            && message.starts_with("there is no tool named `open_file`; allowed tools: list_files,")),
        "{unknown:?}"
    );
    let (deltas, _) = text_protocol(Behaviour::ProseOnly).await;
    let prose = facts(&deltas);
    assert!(
        matches!(&prose[..], [Delta::Warning { kind, .. }] if kind == "no_tool_call"),
        "{prose:?}"
    );
}

#[tokio::test]
async fn the_same_reply_comes_back_every_time() {
    let server = serve(Behaviour::DoubledBraces).await;
    let client = Client::new(&endpoint(&server, ToolProtocol::Text, 2)).expect("client");
    let mut seen = Vec::new();
    for _ in 0..3 {
        let (deltas, err) = collect(&client, &task()).await;
        assert_eq!(err, None);
        seen.push(deltas);
    }
    assert_eq!(seen[0], seen[1]);
    assert_eq!(seen[1], seen[2]);
    assert_eq!(server.bodies().len(), 3);
}

#[tokio::test]
async fn the_recorded_non_streamed_answer_is_replayed_byte_for_byte() {
    let server = serve(Behaviour::DoubledBraces).await;
    let response = reqwest::Client::new()
        .post(format!("{}/chat/completions", server.base_url()))
        .body(
            json!({"model": "qwen2.5-coder-1.5b-instruct", "stream": false, "messages": []})
                .to_string(),
        )
        .send()
        .await
        .expect("response");
    assert_eq!(response.status().as_u16(), 200);
    let body = response.text().await.expect("body");
    assert_eq!(body, llamacpp::RECORDED_DOUBLED_BRACES_JSON.trim_end());
    let v: Value = serde_json::from_str(&body).expect("JSON");
    let content = v["choices"][0]["message"]["content"]
        .as_str()
        .expect("content");
    assert_eq!(
        parse_call(content, &specs()).expect("call").name,
        "read_file"
    );
}

#[tokio::test]
async fn text_protocol_history_carries_no_native_calls() {
    let server = serve(Behaviour::JsonInContent).await;
    let client = Client::new(&endpoint(&server, ToolProtocol::Text, 0)).expect("client");
    let native = handoff::llm::ToolCall {
        id: "text_call_1".into(),
        kind: "function".into(),
        function: handoff::llm::FunctionCall {
            name: "list_files".into(),
            arguments: "{}".into(),
        },
    };
    let mut req = task();
    req.messages.push(Message::assistant("", vec![native]));
    req.messages
        .push(Message::tool("text_call_1", "calc.py\ntest_calc.py"));
    let _ = collect(&client, &req).await;
    let body = &server.bodies()[0];
    assert_eq!(
        body["messages"],
        json!([
            {"role": "system", "content": "You are a coding agent. Use the tools."},
            {"role": "user", "content": "Read the file src/main.rs using the read_file tool."},
            {"role": "assistant", "content": "{\"name\": \"list_files\", \"arguments\": {}}"},
            {"role": "user", "content": "Tool result:\ncalc.py\ntest_calc.py"},
        ])
    );
}
