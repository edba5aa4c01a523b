//! Does the server keep the context the config counts on? Checked from the server's own
//! `usage.prompt_tokens`: a prompt of known growth is sent, and a server that reports far
//! fewer prompt tokens than were sent has cut the prompt (Ollama's small default window
//! does this silently — and the logprob evidence of what was cut goes with it).

use super::{Attempt, Outcome, Probe, attempt, probe};
use crate::llm::client::Client;
use crate::llm::error::LlmError;
use crate::llm::types::{ChatRequest, Message};

/// Filler words of the short measuring prompt (its growth over the plain probe gives the
/// server's tokens per filler word).
const MEASURE_WORDS: usize = 256;
/// The long prompt aims at this share of the window, so a server that keeps the whole
/// window passes with room for the tokenizer's rounding.
const FILL: f64 = 0.8;
/// Kept below this share of what was sent counts as cut.
const KEPT_ENOUGH: f64 = 0.95;

fn filler(words: usize) -> ChatRequest {
    let mut text = String::from("Ignore the filler words and reply with the single word: ready.\n");
    text.push_str(&"lorem ".repeat(words));
    ChatRequest {
        messages: vec![Message::user(text)],
        tools: Vec::new(),
    }
}

/// The context probe against `window` tokens, given the plain probe's prompt tokens.
/// Returns the probe line and the fix to name, if any.
pub(super) async fn check(
    client: &Client,
    base_tokens: Option<u64>,
    window: u32,
) -> (Probe, Option<String>) {
    let skip = |why: &str| (probe("context", Outcome::Skip, why.into()), None);
    let Some(base) = base_tokens else {
        return skip("the server reports no usage.prompt_tokens; context not checked");
    };
    let short = attempt(client, &filler(MEASURE_WORDS)).await;
    let Some(short_tokens) = short.prompt_tokens else {
        return skip("no usage.prompt_tokens for the measuring prompt");
    };
    let per_word = short_tokens.saturating_sub(base) as f64 / MEASURE_WORDS as f64;
    if per_word <= 0.0 {
        return skip("usage.prompt_tokens does not grow with the prompt; context not checked");
    }
    let target = f64::from(window) * FILL;
    let words = ((target - base as f64) / per_word).max(0.0) as usize;
    let sent = base as f64 + per_word * words as f64;
    let long: Attempt = attempt(client, &filler(words)).await;
    let sent_text = format!("{sent:.0}");
    if let Some(e) = &long.error {
        let fix = match e {
            LlmError::BadRequest { .. } => Some(format!(
                "the server refused a prompt of ~{sent_text} tokens: its context is smaller than \
                 context_window = {window}; start it with a larger context (llama.cpp: -c \
                 {window}; Ollama: OLLAMA_CONTEXT_LENGTH={window}) or lower context_window"
            )),
            _ => None,
        };
        return (probe("context", Outcome::Fail, e.to_string()), fix);
    }
    let Some(kept) = long.prompt_tokens else {
        return skip("no usage.prompt_tokens for the long prompt");
    };
    if (kept as f64) < sent * KEPT_ENOUGH {
        let detail = format!(
            "kept {kept} of ~{sent_text} prompt tokens: the server cuts the prompt silently"
        );
        let fix = format!(
            "the server keeps only ~{kept} tokens of context, context_window = {window} \
             expects more: start Ollama with OLLAMA_CONTEXT_LENGTH={window} (or set num_ctx), \
             or set context_window = {kept}"
        );
        return (probe("context", Outcome::Warn, detail), Some(fix));
    }
    (
        probe(
            "context",
            Outcome::Ok,
            format!("~{sent_text} prompt tokens sent, {kept} reported kept (window {window})"),
        ),
        None,
    )
}
