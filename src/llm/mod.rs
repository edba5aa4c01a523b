//! OpenAI-compatible streaming chat client: token + logprob deltas, tool-call assembly,
//! cancellation, retry, cost. Knows nothing of beliefs.
//!
//! Requests are plain reqwest POSTs with our own body ([`request`]), sent exactly once
//! ([`transport`] reads error answers); the body is read as SSE on demand with a line cap
//! ([`sse`]) and each chunk decoded leniently into typed structs that borrow from it
//! ([`chunk`], [`lenient`], [`decode`]). The quirks of real servers
//! this tolerates, each covered by a test in `tests/llm/`:
//!
//! - OpenAI: `top_logprobs: []` at k = 0, `logprobs: null` on the final chunk, a final
//!   usage chunk with empty `choices`.
//! - vLLM: logprobs on every chunk (tool-call and empty-delta chunks too), alternatives
//!   unsorted and including the chosen token, −9999 for −∞, extra fields (`stop_reason`,
//!   `token_ids`, `reasoning`).
//! - llama.cpp server: rejects `logprobs` with tools when streaming (the client retries
//!   with `n_probs`), post-sampling `prob`/`top_probs`, an extra `id` per token.
//! - Ollama: `top_logprobs` omitted at k = 0, a tool call whole in one chunk.
//! - Small models (Qwen2.5-Coder 0.5B/1.5B on llama.cpp): the call written as JSON text in
//!   `content` — bare, with doubled braces, fenced, in `<tool_call>` tags — never as a
//!   `tool_calls` delta; read from the text under `tool_protocol = "auto" | "text"`
//!   ([`textcall`]), and under `text` no `tools` field is sent ([`textprompt`] renders
//!   the list for the system prompt); under `json_schema` the request also carries a
//!   `response_format` schema admitting one call of an offered tool ([`callschema`]).
//! - LM Studio: logprobs silently absent (one `no_logprobs` warning, never an error).
//! - OpenRouter: `: OPENROUTER PROCESSING` comment lines, errors inside HTTP-200 streams.
//! - Unknown enum values (`service_tier: "on_demand"`, new finish reasons), `null` logprobs.

mod callargs;
pub(crate) mod callschema;
pub mod chunk;
pub mod client;
pub mod decode;
pub mod doctor;
pub(crate) mod error;
pub(crate) mod keys;
pub(crate) mod lenient;
pub(crate) mod request;
pub mod sse;
pub mod textcall;
pub mod textprompt;
pub(crate) mod transport;
pub mod types;
pub(crate) mod usage;

pub use client::{Client, DeltaStream};
pub use error::LlmError;
pub use types::{ChatRequest, Delta, FunctionCall, Message, ToolCall, ToolSpec, Usage};
pub use usage::UsageTally;
