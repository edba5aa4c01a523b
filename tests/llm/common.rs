//! Shared set-up for the client tests.

use std::time::Duration;

use futures::StreamExt;
use handoff::config::ModelConfig;
use handoff::demo::server::{Reply, Script, ScriptedServer};
use handoff::llm::{
    ChatRequest, Client, Delta, FunctionCall, LlmError, Message, ToolCall, ToolSpec, Usage,
};
use handoff::protocol::Alternative;

/// A junior-like endpoint on the fake server: logprobs on, k = `top`.
pub fn config(server: &ScriptedServer, top: u8) -> ModelConfig {
    ModelConfig {
        base_url: server.base_url(),
        model: "scripted".into(),
        api_key_env: None,
        top_logprobs: top,
        logprobs: true,
        temperature: 0.2,
        max_tokens: Some(64),
        price_input_per_mtok: 1.0,
        price_output_per_mtok: 2.0,
        connect_timeout_s: 2.0,
        idle_timeout_s: 5.0,
        max_retries: 3,
        // The native wire is what these tests are about; the text protocols: llamacpp.rs.
        tool_protocol: handoff::config::ToolProtocol::Native,
        context_window: None,
        extra: toml::Table::new(),
        max_steps: None,
        token_budget: None,
    }
}

pub fn request() -> ChatRequest {
    ChatRequest {
        messages: vec![Message::system("be brief"), Message::user("say hi")],
        tools: Vec::new(),
    }
}

pub fn request_with_tools() -> ChatRequest {
    ChatRequest {
        tools: vec![ToolSpec {
            name: "read_file".into(),
            description: "Read a file".into(),
            parameters: serde_json::json!({"type": "object", "properties": {"path": {"type": "string"}}}),
        }],
        ..request()
    }
}

/// Serves `replies` and streams one request through a client built from `top`.
pub async fn run(replies: Vec<Reply>, top: u8) -> (Vec<Delta>, Option<LlmError>, ScriptedServer) {
    let server = ScriptedServer::start(Script::new(replies))
        .await
        .expect("server");
    let client = Client::new(&config(&server, top)).expect("client");
    let (deltas, err) = collect(&client, &request()).await;
    (deltas, err, server)
}

/// All deltas of one attempt, and the error that ended it, if any.
pub async fn collect(client: &Client, req: &ChatRequest) -> (Vec<Delta>, Option<LlmError>) {
    let mut stream = match client.stream_once(req).await {
        Ok(s) => s,
        Err(e) => return (Vec::new(), Some(e)),
    };
    let mut deltas = Vec::new();
    while let Some(item) = tokio::time::timeout(Duration::from_secs(10), stream.next())
        .await
        .expect("stream stalled")
    {
        match item {
            Ok(d) => deltas.push(d),
            Err(e) => return (deltas, Some(e)),
        }
    }
    (deltas, None)
}

pub fn tok(text: &str, logprob: f64, top: &[(&str, f64)]) -> Delta {
    Delta::Token {
        text: text.into(),
        logprob: Some(logprob),
        top: top
            .iter()
            .map(|(t, l)| Alternative {
                token: t.to_string(),
                logprob: *l,
            })
            .collect(),
    }
}

pub fn plain(text: &str) -> Delta {
    Delta::Token {
        text: text.into(),
        logprob: None,
        top: Vec::new(),
    }
}

/// Raw SSE event from a JSON literal.
pub fn ev(json: &str) -> bytes::Bytes {
    // Round-trip so that test literals may be pretty-printed.
    let v: serde_json::Value = serde_json::from_str(json).expect("test JSON");
    bytes::Bytes::from(format!("data: {v}\n\n"))
}

pub fn call(id: &str, name: &str, arguments: &str) -> Delta {
    Delta::ToolCall(ToolCall {
        id: id.into(),
        kind: "function".into(),
        function: FunctionCall {
            name: name.into(),
            arguments: arguments.into(),
        },
    })
}

pub fn usage(prompt_tokens: u64, completion_tokens: u64) -> Delta {
    Delta::Usage(Usage {
        prompt_tokens,
        completion_tokens,
    })
}
