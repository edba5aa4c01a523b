//! A finished model reply becomes exactly one tool call, or one short message back to the
//! model saying what to fix.
//!
//! Small models often write the call as text, break its JSON, name a tool that does not
//! exist, or answer in prose. The client's decoder reads calls written as text (under the
//! `auto` and `text` tool protocols) and says, with a `no_tool_call` or `malformed_call`
//! warning, why a reply held no usable one; a native call is checked here against the tools
//! offered, so both protocols give the model the same repair message. A reply without a
//! usable call is a step fact for the judge (it never passes silently), and the messages
//! are bounded by `agent.max_repairs` in a row: past that the loop treats the model as stuck.
//!
//! The unusable reply itself is logged but not kept in the conversation the model sees:
//! measured on Qwen2.5-Coder-0.5B, a model shown its own broken reply followed by the
//! correction writes the same reply again, token for token. It sees the task and one note
//! saying what was wrong instead (a second note replaces the first).

use crate::llm::textcall::{self, MALFORMED_CALL, NO_TOOL_CALL};
use crate::llm::types::{Message, ToolCall, ToolSpec};

/// What the stream said about a reply without a usable call: the kind (`no_tool_call` or
/// `malformed_call`) and the message written for the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallProblem {
    pub kind: String,
    pub message: String,
}

impl CallProblem {
    /// The decoder's warning, when it is about the reply's call.
    pub fn from_warning(kind: &str, message: &str) -> Option<CallProblem> {
        (kind == NO_TOOL_CALL || kind == MALFORMED_CALL).then(|| CallProblem {
            kind: kind.to_string(),
            message: message.to_string(),
        })
    }
}

/// Why a reply gave the loop nothing to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unusable {
    /// Text only: no call at all.
    NoCall,
    /// Something like a call that could not be used.
    Malformed,
}

/// What a reply comes to.
#[derive(Debug)]
pub(crate) enum Read<'a> {
    /// The call to run; further calls of the same reply are answered "not run".
    Call {
        call: &'a ToolCall,
        extra: &'a [ToolCall],
    },
    /// Nothing to run: the model is told `message`.
    Unusable {
        why: Unusable,
        message: String,
        /// Whether the stream already logged the problem (the decoder's warning).
        logged: bool,
    },
}

/// The message a model gets after a reply that called no tool (native protocol).
pub(crate) const NUDGE_NO_CALL: &str =
    "Reply with exactly one tool call. Call finish when the task is done.";

/// The warning kind of a reply holding several native calls (only the first runs).
pub(crate) const SEVERAL_TOOL_CALLS: &str = "several_tool_calls";

/// Reads a finished reply: its native or text call (the decoder has already turned a call
/// written as text into a [`ToolCall`]), checked against `tools`.
pub(crate) fn read<'a>(
    calls: &'a [ToolCall],
    problem: Option<&CallProblem>,
    tools: &[ToolSpec],
) -> Read<'a> {
    let Some((call, extra)) = calls.split_first() else {
        return match problem {
            Some(p) => Read::Unusable {
                why: if p.kind == MALFORMED_CALL {
                    Unusable::Malformed
                } else {
                    Unusable::NoCall
                },
                message: p.message.clone(),
                logged: true,
            },
            None => Read::Unusable {
                why: Unusable::NoCall,
                message: format!("{NUDGE_NO_CALL} Allowed tools: {}.", allowed(tools)),
                logged: false,
            },
        };
    };
    if tools.is_empty() {
        return Read::Call { call, extra };
    }
    let text = call.function.arguments.trim();
    let arguments = if text.is_empty() {
        serde_json::Value::Null
    } else {
        match serde_json::from_str::<serde_json::Value>(text) {
            Ok(v) => v,
            Err(e) => {
                return Read::Unusable {
                    why: Unusable::Malformed,
                    message: format!(
                        "the arguments of `{}` are not valid JSON ({e}); allowed tools: {}",
                        call.function.name,
                        allowed(tools)
                    ),
                    logged: false,
                };
            }
        }
    };
    match textcall::check_arguments(&call.function.name, arguments, tools) {
        Ok(_) => Read::Call { call, extra },
        Err(e) => Read::Unusable {
            why: Unusable::Malformed,
            message: e.to_string(),
            logged: false,
        },
    }
}

/// The warning kind and step fact of an unusable reply.
pub(crate) fn kind(why: Unusable) -> &'static str {
    match why {
        Unusable::NoCall => NO_TOOL_CALL,
        Unusable::Malformed => MALFORMED_CALL,
    }
}

/// How a repair note starts, so a later one can replace it.
const REPAIR_PREFIX: &str = "Your last reply could not be used: ";

/// The note a model gets instead of its unusable reply.
pub(crate) fn repair_note(message: &str) -> String {
    format!("{REPAIR_PREFIX}{message}")
}

/// What the model reads above the result of a call it already made on the same tree.
pub(crate) const REPEAT_NOTE: &str = "You made this exact call before and nothing has \
    changed since, so the result is the same as before. Make a different move: edit a file, \
    run the tests, or call finish.";

/// Puts [`REPEAT_NOTE`] before the tool results of a repeated call. Measured on
/// Qwen2.5-Coder-0.5B: shown the same file again with nothing said, it reads it again.
pub(crate) fn note_repeat(replies: &mut [Message]) {
    for m in replies.iter_mut().filter(|m| m.role == "tool") {
        let output = m.content.take().unwrap_or_default();
        m.content = Some(format!("{REPEAT_NOTE}\n\n{output}"));
    }
}

/// Adds the repair note to the conversation, replacing a note left by the previous reply.
pub(crate) fn ask_again(history: &mut Vec<Message>, notes: Vec<Message>) {
    let last_is_note = history
        .last()
        .and_then(|m| m.content.as_deref())
        .is_some_and(|c| c.starts_with(REPAIR_PREFIX));
    if last_is_note {
        history.pop();
    }
    history.extend(notes);
}

fn allowed(tools: &[ToolSpec]) -> String {
    tools
        .iter()
        .map(|t| t.name.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Counts the repair messages sent in a row, within `agent.max_repairs`.
#[derive(Debug, Clone)]
pub(crate) struct Repairs {
    in_a_row: u32,
    max: u32,
}

impl Repairs {
    pub fn new(max: u32) -> Repairs {
        Repairs { in_a_row: 0, max }
    }

    /// A usable call: the count starts again.
    pub fn usable(&mut self) {
        self.in_a_row = 0;
    }

    /// One more unusable reply: `true` while a repair message may still be sent, `false`
    /// when the bound is spent (the model is stuck).
    pub fn another(&mut self) -> bool {
        self.in_a_row += 1;
        self.in_a_row <= self.max
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::types::FunctionCall;

    fn call(name: &str, arguments: &str) -> ToolCall {
        ToolCall {
            id: "c1".into(),
            kind: "function".into(),
            function: FunctionCall {
                name: name.into(),
                arguments: arguments.into(),
            },
        }
    }

    fn tools() -> Vec<ToolSpec> {
        crate::agent::tools::specs()
    }

    #[test]
    fn a_native_call_is_checked_like_a_text_one() {
        let calls = [call("read_file", r#"{"path": "a.py"}"#)];
        assert!(matches!(read(&calls, None, &tools()), Read::Call { .. }));
        for (bad, names) in [
            (call("open_file", r#"{"path": "a.py"}"#), "open_file"),
            (call("read_file", "{}"), "path"),
            (call("read_file", r#"{"path": 3}"#), "path"),
            (call("read_file", r#"{"path": "a"#), "not valid JSON"),
        ] {
            let calls = [bad];
            match read(&calls, None, &tools()) {
                Read::Unusable {
                    why: Unusable::Malformed,
                    message,
                    logged: false,
                } => {
                    assert!(message.contains(names), "{message}");
                    assert!(message.contains("read_file, "), "allowed tools: {message}");
                }
                other => panic!("{other:?}"),
            }
        }
    }

    #[test]
    fn no_call_gets_the_streams_message_or_the_nudge() {
        let p = CallProblem::from_warning(MALFORMED_CALL, "there is no tool named `x`")
            .expect("a call problem");
        match read(&[], Some(&p), &tools()) {
            Read::Unusable {
                why,
                message,
                logged,
            } => {
                assert_eq!(why, Unusable::Malformed);
                assert_eq!(message, "there is no tool named `x`");
                assert!(logged);
            }
            other => panic!("{other:?}"),
        }
        assert!(CallProblem::from_warning("no_logprobs", "m").is_none());
        match read(&[], None, &tools()) {
            Read::Unusable { why, message, .. } => {
                assert_eq!(why, Unusable::NoCall);
                assert!(message.starts_with(NUDGE_NO_CALL) && message.contains("finish"));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_second_note_replaces_the_first_and_the_broken_reply_is_not_kept() {
        let mut h = vec![Message::system("s"), Message::user("task")];
        ask_again(
            &mut h,
            vec![Message::user(repair_note("no tool named `x`"))],
        );
        ask_again(
            &mut h,
            vec![Message::user(repair_note("no tool named `y`"))],
        );
        assert_eq!(h.len(), 3);
        assert_eq!(
            h[2].content.as_deref(),
            Some("Your last reply could not be used: no tool named `y`")
        );
    }

    #[test]
    fn repairs_are_bounded_in_a_row() {
        let mut r = Repairs::new(2);
        assert!(r.another() && r.another());
        assert!(!r.another());
        r.usable();
        assert!(r.another());
    }
}
