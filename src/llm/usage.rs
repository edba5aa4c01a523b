//! Token counts for cost, whether or not the server reports them.
//!
//! OpenAI-compatible servers report usage only when asked (`stream_options.include_usage`,
//! which the client always sets) and some ignore that. Cost must still be logged, so a
//! response's deltas are tallied and, without a reported usage, the counts are estimated
//! and marked so (`Event::CostIncurred::estimated`).

use super::types::{ChatRequest, Delta, Usage};

/// Characters per token of the estimate: the usual rule of thumb for English and code with
/// BPE tokenizers (OpenAI's tokenizer documentation gives "about 4 characters").
const CHARS_PER_TOKEN: u64 = 4;

/// Tally of one response.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct UsageTally {
    reported: Option<Usage>,
    tokens: u64,
    call_chars: u64,
}

impl UsageTally {
    /// Feed every delta of the response, in order.
    pub fn observe(&mut self, delta: &Delta) {
        match delta {
            Delta::Token { .. } => self.tokens += 1,
            Delta::ToolCall(call) => {
                let chars =
                    call.function.name.chars().count() + call.function.arguments.chars().count();
                self.call_chars += u64::try_from(chars).unwrap_or(u64::MAX);
            }
            Delta::Usage(u) => self.reported = Some(*u),
            Delta::Finish(_) | Delta::Warning { .. } => {}
        }
    }

    /// The server's usage if it sent one (`false`), else an estimate (`true`): the prompt
    /// from the request's JSON size, the completion as the token deltas plus the tool calls'
    /// text (tool-call tokens seldom arrive as token deltas).
    pub fn usage(&self, req: &ChatRequest) -> (Usage, bool) {
        if let Some(u) = self.reported {
            return (u, false);
        }
        let prompt_chars = serde_json::to_string(&req.messages).map_or(0, |s| s.len())
            + serde_json::to_string(&req.tools).map_or(0, |s| s.len());
        let prompt_chars = u64::try_from(prompt_chars).unwrap_or(u64::MAX);
        let usage = Usage {
            prompt_tokens: prompt_chars.div_ceil(CHARS_PER_TOKEN),
            completion_tokens: self.tokens + self.call_chars.div_ceil(CHARS_PER_TOKEN),
        };
        (usage, true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::types::{FunctionCall, Message, ToolCall};

    fn req() -> ChatRequest {
        ChatRequest {
            messages: vec![Message::user("0123456789")],
            tools: Vec::new(),
        }
    }

    #[test]
    fn reported_usage_wins() {
        let mut t = UsageTally::default();
        t.observe(&Delta::Token {
            text: "a".into(),
            logprob: None,
            top: vec![],
        });
        let u = Usage {
            prompt_tokens: 7,
            completion_tokens: 9,
        };
        t.observe(&Delta::Usage(u));
        assert_eq!(t.usage(&req()), (u, false));
    }

    #[test]
    fn estimate_without_usage() {
        let mut t = UsageTally::default();
        for _ in 0..3 {
            t.observe(&Delta::Token {
                text: "a".into(),
                logprob: Some(-0.1),
                top: vec![],
            });
        }
        t.observe(&Delta::ToolCall(ToolCall {
            id: "c".into(),
            kind: "function".into(),
            function: FunctionCall {
                name: "run".into(),
                arguments: "{\"c\":1}".into(),
            },
        }));
        let (u, estimated) = t.usage(&req());
        assert!(estimated);
        // 3 tokens + ceil(10 chars / 4).
        assert_eq!(u.completion_tokens, 6);
        // [{"role":"user","content":"0123456789"}] is 40 characters, plus "[]" for tools.
        assert_eq!(u.prompt_tokens, 42u64.div_ceil(4));
    }
}
