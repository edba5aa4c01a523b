//! Keeping the junior's conversation inside its endpoint's `context_window`.
//!
//! Local servers hold a few thousand tokens; a session of file reads and test runs outgrows
//! that in a dozen steps, and a server that silently drops the start of the prompt loses the
//! system prompt and the task first. So before each request the history is fitted: the
//! system prompt, the task and the last steps stay whole; older tool outputs are replaced,
//! oldest first, by a marker saying how much was elided, then older replies' prose, until
//! the estimate fits the window minus the reply's room.
//!
//! The estimate is counted from what the server reported: after each request the ratio of
//! its `usage.prompt_tokens` to the bytes sent calibrates the next one (the first request,
//! before any report, uses a rough bytes-per-token rule). The same report shows a server
//! that truncates: far fewer prompt tokens than the bytes sent can hold. That is reported
//! once, as a `context_truncated` warning.

use crate::config::ModelConfig;
use crate::llm::types::Message;

/// Messages at the end that are never elided: the last steps (a step is the reply and its
/// tool result or repair message).
const KEEP_LAST: usize = 4;
/// Messages at the start that are never elided: the system prompt and the task.
const KEEP_FIRST: usize = 2;
/// Tokens per byte of JSON before the server has reported any usage: about 3.3 bytes per
/// token, on the generous side for code, so the first request does not overflow.
const FIRST_TOKENS_PER_BYTE: f64 = 0.3;
/// Room for the reply when the endpoint sets no `max_tokens`.
const DEFAULT_REPLY_ROOM: u64 = 1024;
/// Tokens per byte of JSON that real tokenizers give on code and prose (0.2–0.4).
const TYPICAL_TOKENS_PER_BYTE: f64 = 0.25;
/// Below this many tokens per byte sent, the server cannot have read the whole prompt; once
/// a count has been learned, below half of it.
const TRUNCATION_TOKENS_PER_BYTE: f64 = 0.1;
/// Requests smaller than this are too short to judge truncation by.
const TRUNCATION_MIN_BYTES: usize = 8_000;

/// The prefix of an elided message's content.
pub const ELIDED: &str = "[elided to fit the context window:";

/// The fitting rule of one endpoint, and what its reports have taught it.
#[derive(Debug, Clone)]
pub(crate) struct ContextFit {
    window: Option<u64>,
    reply_room: u64,
    tokens_per_byte: Option<f64>,
    truncation_reported: bool,
}

/// A history as it will be sent.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Fitted {
    pub messages: Vec<Message>,
    /// How many messages were elided.
    pub elided: usize,
    /// Bytes of the messages as sent (what the server's count is compared with).
    pub bytes: usize,
}

impl ContextFit {
    pub fn new(model: &ModelConfig) -> ContextFit {
        ContextFit {
            window: model.context_window.map(u64::from),
            reply_room: model.max_tokens.map_or(DEFAULT_REPLY_ROOM, u64::from),
            tokens_per_byte: None,
            truncation_reported: false,
        }
    }

    fn estimate(&self, bytes: usize) -> u64 {
        let per_byte = self.tokens_per_byte.unwrap_or(FIRST_TOKENS_PER_BYTE);
        (bytes as f64 * per_byte).ceil() as u64
    }

    /// `history` as it fits the window (unchanged when the window is unknown or it fits).
    pub fn fit(&self, history: &[Message]) -> Fitted {
        let size = |m: &[Message]| serde_json::to_string(m).map_or(0, |s| s.len());
        let mut messages = history.to_vec();
        let mut bytes = size(&messages);
        let mut elided = 0;
        let Some(window) = self.window else {
            return Fitted {
                messages,
                elided,
                bytes,
            };
        };
        let budget = window.saturating_sub(self.reply_room);
        let end = messages.len().saturating_sub(KEEP_LAST);
        // Tool outputs first (the bulk), then the older replies' prose.
        for pass in [Pass::ToolOutputs, Pass::Prose] {
            for i in KEEP_FIRST..end {
                if self.estimate(bytes) <= budget {
                    return Fitted {
                        messages,
                        elided,
                        bytes,
                    };
                }
                let m = &mut messages[i];
                if pass.takes(m) && elide(m) {
                    elided += 1;
                    bytes = size(&messages);
                }
            }
        }
        Fitted {
            messages,
            elided,
            bytes,
        }
    }

    /// What the server said it read for a request of `bytes`: calibrates the estimate, and
    /// returns the warning text the first time the count shows a truncating server.
    pub fn reported(&mut self, bytes: usize, prompt_tokens: u64) -> Option<String> {
        if bytes == 0 || prompt_tokens == 0 {
            return None;
        }
        let per_byte = prompt_tokens as f64 / bytes as f64;
        let floor = self
            .tokens_per_byte
            .map_or(TRUNCATION_TOKENS_PER_BYTE, |learned| learned / 2.0);
        if bytes >= TRUNCATION_MIN_BYTES && per_byte < floor {
            if self.truncation_reported {
                return None;
            }
            self.truncation_reported = true;
            let expected = bytes as f64 * self.tokens_per_byte.unwrap_or(TYPICAL_TOKENS_PER_BYTE);
            let window = self
                .window
                .map_or_else(|| "unset".to_string(), |w| w.to_string());
            return Some(format!(
                "the server read {prompt_tokens} prompt tokens of a {bytes}-byte request \
                 (about {} expected): it truncates the prompt, and the model no longer sees \
                 the start of the conversation. Give the server a larger context (Ollama's \
                 num_ctx, llama-server -c) and set context_window to it (now {window})",
                expected.round() as u64
            ));
        }
        self.tokens_per_byte = Some(per_byte);
        None
    }
}

#[derive(Clone, Copy)]
enum Pass {
    ToolOutputs,
    Prose,
}

impl Pass {
    fn takes(self, m: &Message) -> bool {
        match self {
            Pass::ToolOutputs => m.role == "tool",
            Pass::Prose => m.role == "assistant" || m.role == "user",
        }
    }
}

/// Replaces the content by the marker; `false` when there was nothing to elide.
fn elide(m: &mut Message) -> bool {
    let Some(content) = &m.content else {
        return false;
    };
    if content.starts_with(ELIDED) || content.len() < 200 {
        return false;
    }
    m.content = Some(format!("{ELIDED} {} bytes]", content.len()));
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn endpoint(window: Option<u32>) -> ModelConfig {
        let mut m = crate::config::Config::default().junior;
        m.context_window = window;
        m.max_tokens = Some(256);
        m
    }

    fn history(steps: usize) -> Vec<Message> {
        let mut h = vec![Message::system("be brief"), Message::user("fix calc.py")];
        for i in 0..steps {
            h.push(Message::assistant(format!("step {i}"), Vec::new()));
            h.push(Message::tool(format!("c{i}"), format!("{i}:").repeat(400)));
        }
        h
    }

    #[test]
    fn without_a_window_nothing_is_elided() {
        let h = history(20);
        let f = ContextFit::new(&endpoint(None)).fit(&h);
        assert_eq!(f.messages, h);
        assert_eq!(f.elided, 0);
    }

    #[test]
    fn old_tool_outputs_go_first_and_the_start_and_the_last_steps_stay() {
        let h = history(20);
        let fit = ContextFit::new(&endpoint(Some(4096)));
        let f = fit.fit(&h);
        assert!(f.elided > 0);
        assert!(
            fit.estimate(f.bytes) <= 4096 - 256,
            "fits: {}",
            fit.estimate(f.bytes)
        );
        assert_eq!(f.messages[..2], h[..2], "system prompt and task whole");
        let n = h.len();
        assert_eq!(
            f.messages[n - KEEP_LAST..],
            h[n - KEEP_LAST..],
            "last steps whole"
        );
        let first_tool = f.messages[3].content.as_deref().unwrap_or("");
        assert!(first_tool.starts_with(ELIDED), "{first_tool}");
        // The prose of the replies is short and stays.
        assert_eq!(f.messages[2], h[2]);
        assert_eq!(f.messages.len(), n);
    }

    #[test]
    fn the_servers_count_calibrates_the_estimate_and_truncation_is_reported_once() {
        let mut fit = ContextFit::new(&endpoint(Some(8192)));
        assert_eq!(fit.estimate(1000), 300);
        assert!(fit.reported(10_000, 2_000).is_none());
        assert_eq!(fit.estimate(1000), 200);
        // Ollama's default window: 2048 tokens of a 60 kB request.
        let warning = fit.reported(60_000, 2_048).expect("truncation seen");
        assert!(
            warning.contains("2048 prompt tokens") && warning.contains("60000"),
            "{warning}"
        );
        assert!(fit.reported(60_000, 2_048).is_none(), "reported once");
        assert_eq!(fit.estimate(1000), 200, "a truncated count teaches nothing");
    }
}
