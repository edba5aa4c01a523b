//! The client's vocabulary: what goes into a chat request and what comes out of a stream.
//!
//! These types are ours rather than async-openai's typed ones because real servers send
//! shapes the typed ones reject (see the module docs of `llm`).

use serde::{Deserialize, Serialize};

pub use crate::protocol::Alternative;

/// One chat message in OpenAI's shape.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// `system`, `user`, `assistant` or `tool`.
    pub role: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
}

impl Message {
    pub fn system(text: impl Into<String>) -> Self {
        Self::text("system", text)
    }
    pub fn user(text: impl Into<String>) -> Self {
        Self::text("user", text)
    }
    pub fn assistant(text: impl Into<String>, tool_calls: Vec<ToolCall>) -> Self {
        let text = text.into();
        Message {
            role: "assistant".into(),
            content: (!text.is_empty()).then_some(text),
            tool_calls,
            tool_call_id: None,
        }
    }
    pub fn tool(call_id: impl Into<String>, output: impl Into<String>) -> Self {
        Message {
            role: "tool".into(),
            content: Some(output.into()),
            tool_calls: Vec::new(),
            tool_call_id: Some(call_id.into()),
        }
    }
    fn text(role: &str, text: impl Into<String>) -> Self {
        Message {
            role: role.into(),
            content: Some(text.into()),
            tool_calls: Vec::new(),
            tool_call_id: None,
        }
    }
}

/// A complete tool call, as assembled from stream fragments and as sent back in history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    #[serde(rename = "type", default = "function_type")]
    pub kind: String,
    pub function: FunctionCall,
}

fn function_type() -> String {
    "function".into()
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FunctionCall {
    pub name: String,
    /// JSON text exactly as the model produced it (may be invalid JSON).
    pub arguments: String,
}

/// A function tool offered to the model (JSON schema of its arguments).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    pub parameters: serde_json::Value,
}

/// What one request asks for; endpoint settings (model, logprobs, extra fields, timeouts)
/// come from the client's `ModelConfig`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ChatRequest {
    pub messages: Vec<Message>,
    pub tools: Vec<ToolSpec>,
}

/// Token counts of one request.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
}

/// One thing parsed out of a stream, in order.
#[derive(Debug, Clone, PartialEq)]
pub enum Delta {
    /// An output token. `logprob` is `None` when the server sent none for it.
    Token {
        text: String,
        logprob: Option<f64>,
        top: Vec<Alternative>,
    },
    /// A tool call, complete (fragments are assembled by the client before this is yielded).
    ToolCall(ToolCall),
    /// Why the model stopped (`stop`, `tool_calls`, `length`, or any string a server invents).
    Finish(String),
    Usage(Usage),
    /// Something degraded but usable, e.g. logprobs silently absent.
    Warning {
        kind: String,
        message: String,
    },
}
