//! The JSON body of one streamed chat-completions request.
//!
//! Built as a `serde_json::Value` rather than async-openai's typed request because servers
//! need fields the typed request does not have (llama.cpp's `n_probs`, vLLM's
//! `repetition_penalty` from `[junior.extra]`); the parts OpenAI's API defines the same way
//! for every server (tool definitions, stream options) are async-openai's types, so their
//! shape follows OpenAI's specification rather than our reading of it.

use async_openai::types::chat::{
    ChatCompletionStreamOptions, ChatCompletionTool, ChatCompletionTools, FunctionObject,
};
use serde_json::{Map, Value, json};

use super::types::{ChatRequest, Message};
use crate::config::ModelConfig;

/// How token logprobs are asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogprobMode {
    /// Not at all.
    Off,
    /// OpenAI's `logprobs: true, top_logprobs: k`.
    OpenAi { top: u8 },
    /// llama.cpp's native `n_probs`, which it accepts together with tools when streaming.
    NProbs { n: u8 },
}

impl LogprobMode {
    /// What the config asks for.
    pub fn from_config(cfg: &ModelConfig) -> Self {
        if cfg.logprobs {
            LogprobMode::OpenAi {
                top: cfg.top_logprobs,
            }
        } else {
            LogprobMode::Off
        }
    }

    /// Whether tokens without logprobs are a degradation worth a warning.
    pub fn requested(self) -> bool {
        self != LogprobMode::Off
    }
}

/// Fields that `extra` may not replace: overriding them would break the stream contract.
const PROTECTED: [&str; 3] = ["messages", "stream", "tools"];

/// The request body: model, messages, tools, sampling, logprobs, usage, extra fields.
///
/// Under `tool_protocol = "text"` the body has no `tools` field and the history carries no
/// native calls (see [`text_messages`]); the system prompt is expected to list the tools.
/// Under `json_schema` it also carries `response_format` ([`super::callschema`]).
pub fn body(cfg: &ModelConfig, req: &ChatRequest, mode: LogprobMode) -> Value {
    let mut body = Map::new();
    let sends_tools = cfg.tool_protocol.sends_tools();
    body.insert("model".into(), json!(cfg.model));
    if sends_tools {
        body.insert("messages".into(), json!(req.messages));
    } else {
        body.insert("messages".into(), json!(text_messages(&req.messages)));
    }
    body.insert("stream".into(), json!(true));
    // The final usage chunk is what the cost line and the token budget count.
    let stream_options = ChatCompletionStreamOptions {
        include_usage: Some(true),
        include_obfuscation: None,
    };
    body.insert("stream_options".into(), json!(stream_options));
    body.insert("temperature".into(), json!(f32_as_written(cfg.temperature)));
    if let Some(max) = cfg.max_tokens {
        body.insert("max_tokens".into(), json!(max));
    }
    if sends_tools && !req.tools.is_empty() {
        let tools: Vec<ChatCompletionTools> = req
            .tools
            .iter()
            .map(|t| {
                ChatCompletionTools::Function(ChatCompletionTool {
                    function: FunctionObject {
                        name: t.name.clone(),
                        description: Some(t.description.clone()),
                        parameters: Some(t.parameters.clone()),
                        strict: None,
                    },
                })
            })
            .collect();
        body.insert("tools".into(), json!(tools));
    }
    if cfg.tool_protocol.constrains_reply() && !req.tools.is_empty() {
        body.insert(
            "response_format".into(),
            super::callschema::response_format(&req.tools),
        );
    }
    match mode {
        LogprobMode::Off => {}
        LogprobMode::OpenAi { top } => {
            body.insert("logprobs".into(), json!(true));
            body.insert("top_logprobs".into(), json!(top));
        }
        LogprobMode::NProbs { n } => {
            body.insert("n_probs".into(), json!(n));
        }
    }
    for (key, value) in &cfg.extra {
        let builds_format = cfg.tool_protocol.constrains_reply() && key == "response_format";
        if PROTECTED.contains(&key.as_str()) || builds_format {
            continue;
        }
        if let Ok(v) = serde_json::to_value(value) {
            body.insert(key.clone(), v);
        }
    }
    Value::Object(body)
}

/// The history as a server that was offered no tools can read it: an assistant turn keeps
/// its text (which holds the call as the model wrote it, or the call as JSON when it has no
/// text) and drops `tool_calls`; a tool result becomes a user message that says so. Chat
/// templates without tools may reject the `tool` role or render native calls the model was
/// never shown how to write.
pub fn text_messages(messages: &[Message]) -> Vec<Message> {
    messages
        .iter()
        .map(|m| match m.role.as_str() {
            "assistant" if !m.tool_calls.is_empty() => {
                let text = m.content.clone().filter(|t| !t.trim().is_empty());
                let text = text.unwrap_or_else(|| {
                    m.tool_calls
                        .iter()
                        .map(|c| {
                            let arguments = serde_json::from_str::<Value>(&c.function.arguments)
                                .unwrap_or_else(|_| Value::String(c.function.arguments.clone()));
                            // Name first, as the prompt's example writes it.
                            format!(
                                "{{\"name\": {}, \"arguments\": {arguments}}}",
                                Value::from(c.function.name.as_str())
                            )
                        })
                        .collect::<Vec<_>>()
                        .join("\n")
                });
                Message::assistant(text, Vec::new())
            }
            "tool" => Message::user(format!(
                "Tool result:\n{}",
                m.content.as_deref().unwrap_or("")
            )),
            _ => m.clone(),
        })
        .collect()
}

/// `0.2f32` as `0.2` rather than `0.20000000298023224`: the wire shows what the config says.
fn f32_as_written(x: f32) -> f64 {
    x.to_string().parse().unwrap_or(f64::from(x))
}
