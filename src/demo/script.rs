//! What the demo's scripted models say, in order.
//!
//! The junior's replies carry logprobs shaped like a real small model's: confident tokens
//! where it reads and lists, then hesitant ones (close alternatives, a fat tail) when the
//! task turns out to hide a choice it cannot make, and again after a patch that does not
//! apply. The judge, not the script, decides when to cut the junior off: the script only
//! makes the junior sound the way it would. The senior answers by looking at the request:
//! a triage request gets the next triage verdict, a takeover gets the fix.

use std::time::Duration;

use serde_json::{Value, json};

use super::server::{Reply, Script};
use super::sse::{Tok, completion};

/// Pause between two streamed chunks, so the TUI shows the stream being written.
pub const TOKEN_GAP: Duration = Duration::from_millis(35);

/// The fixed source of the sample project, after the senior's step.
pub const FIXED_LIB: &str = include_str!("sample/lib_fixed.rs.txt");

/// Tokens a model is sure of: the chosen one far ahead of its alternatives.
pub fn confident(text: &str) -> Vec<Tok> {
    words(text)
        .map(|w| Tok::new(w, -0.03).top(&[(w, -0.03), ("the", -4.5), ("a", -5.2)]))
        .collect()
}

/// Tokens a model hesitates over: close alternatives and a fat tail.
pub fn hesitant(text: &str) -> Vec<Tok> {
    words(text)
        .enumerate()
        .map(|(i, w)| {
            // Vary the shape a little so the trace does not look synthetic.
            let lp = -1.1 - 0.15 * ((i % 3) as f64);
            Tok::new(w, lp).top(&[
                (w, lp),
                ("or", -1.25),
                ("maybe", -1.5),
                ("if", -1.9),
                ("but", -2.2),
            ])
        })
        .collect()
}

/// Word-sized tokens with their leading space, as BPE tokenizers cut English.
fn words(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let skip = rest.len() - rest.trim_start().len();
        let end = rest[skip..].find(' ').map_or(rest.len(), |i| i + skip);
        let (w, r) = rest.split_at(end);
        rest = r;
        Some(w)
    })
}

/// A streamed reply of these tokens and at most one tool call.
pub fn reply(toks: Vec<Tok>, call: Option<(&str, &str, Value)>) -> Reply {
    let args = call.as_ref().map(|(_, _, a)| a.to_string());
    let calls: Vec<(&str, &str, &str)> = match (&call, &args) {
        (Some((id, name, _)), Some(a)) => vec![(*id, *name, a.as_str())],
        _ => Vec::new(),
    };
    Reply::sse(completion(&toks, &calls, 900), TOKEN_GAP)
}

/// Concatenates two token runs.
pub fn join(parts: [Vec<Tok>; 2]) -> Vec<Tok> {
    parts.into_iter().flatten().collect()
}

/// The junior's replies, one per request.
pub fn junior() -> Script {
    let bad_patch = "--- a/src/lib.rs\n+++ b/src/lib.rs\n@@ -20,3 +20,4 @@\n             's' => n,\n             'm' => n * 60,\n+            'h' => n * 3600,\n             _ => return Err(format!(\"unknown unit {c}\")),\n";
    Script::new(vec![
        reply(
            confident("I will look at the project layout first."),
            Some(("call_1", "list_files", json!({}))),
        ),
        reply(
            confident("The parser lives in src/lib.rs; reading it."),
            Some(("call_2", "read_file", json!({"path": "src/lib.rs"}))),
        ),
        reply(
            join([
                confident("Hours are missing from the match."),
                hesitant(
                    " But the task does not say what a bare number such as 90 should mean: \
                     seconds, or an error? The tests do not say either, and the README \
                     does not mention it, so I could guess seconds, or keep the error, \
                     and either choice changes the public behaviour of the library, which \
                     callers may already depend on in ways I cannot see from here",
                ),
            ]),
            Some((
                "call_3",
                "ask_operator",
                json!({"question": "Should a bare number mean seconds?"}),
            )),
        ),
        reply(
            join([
                confident("Thanks. I will add the hours unit with a patch."),
                hesitant(
                    " I think the match arm goes after minutes, if the context lines are right",
                ),
            ]),
            Some(("call_4", "apply_patch", json!({"patch": bad_patch}))),
        ),
        reply(
            confident("The senior rewrote the parser. Running the tests."),
            Some(("call_5", "run", json!({"command": "cargo test --quiet"}))),
        ),
        reply(
            confident("All tests pass."),
            Some((
                "call_6",
                "finish",
                json!({"summary": "parse_duration accepts hours; bare numbers stay an error"}),
            )),
        ),
    ])
}

/// The senior: a triage verdict read from the handoff note (a question while no patch has
/// failed, a takeover once one was rejected), and the fix. Reading the note rather than
/// counting triages keeps the story whichever escalations the judge's numbers produce (the
/// junior's own question needs no triage).
pub fn senior() -> Script {
    Script::new(Vec::new()).respond_with(move |body| {
        let system = body["messages"][0]["content"].as_str().unwrap_or("");
        if system.contains("decide what kind of blocker") {
            let note = body["messages"][1]["content"].as_str().unwrap_or("");
            let verdict = if !note.contains("patch rejected") {
                json!({
                    "route": "operator",
                    "question": "Should a bare number without a unit (e.g. \"90\") mean seconds, or stay an error?",
                    "options": ["seconds", "stay an error"],
                    "default_assumption": "stay an error",
                    "reason": "the task leaves the meaning of a unitless number open"
                })
            } else {
                json!({"route": "senior", "reason": "the patch keeps failing to apply: a capability problem"})
            };
            return Reply::sse(
                completion(&[Tok::new(&verdict.to_string(), -0.01)], &[], 1500),
                TOKEN_GAP,
            );
        }
        let args = json!({"path": "src/lib.rs", "content": FIXED_LIB}).to_string();
        let text = [Tok::new("Rewriting the parser with an hours unit.", -0.01)];
        Reply::sse(
            completion(&text, &[("call_s1", "write_file", args.as_str())], 2500),
            TOKEN_GAP,
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_keep_their_leading_space_and_lose_nothing() {
        let text = "Hours are  missing.";
        let ws: Vec<&str> = words(text).collect();
        assert_eq!(ws, vec!["Hours", " are", "  missing."]);
        assert_eq!(ws.concat(), text);
    }
}
