//! No-progress detection: the same move made again on the same work tree.
//!
//! A move is a tool call (its name and arguments, the JSON normalised) or, for a reply that
//! ran nothing, the reply's text. Its key includes the work tree it was made on (the
//! checkpoint's tree id), so re-running the tests after an edit is progress, while reading
//! the same file or sending the same prose again with nothing changed is a repeat. The
//! count of earlier identical moves is a step fact whose weight grows with it; once it
//! reaches `agent.stuck_after` the loop hands off with reason `stuck`.

use std::collections::HashMap;

/// What one step did, for the repeat count.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum Move {
    Call { tool: String, arguments: String },
    Said(String),
}

impl Move {
    /// A call, its arguments normalised (key order and spacing do not make a new move).
    pub fn call(tool: &str, arguments: &str) -> Move {
        let arguments = serde_json::from_str::<serde_json::Value>(arguments)
            .map_or_else(|_| arguments.trim().to_string(), |v| v.to_string());
        Move::Call {
            tool: tool.to_string(),
            arguments,
        }
    }

    /// A reply that ran nothing, by its text (surrounding whitespace ignored).
    pub fn said(text: &str) -> Move {
        Move::Said(text.trim().to_string())
    }
}

/// The moves of a session so far, by work tree.
#[derive(Debug, Clone, Default)]
pub(crate) struct Progress {
    seen: HashMap<(Move, Option<String>), u32>,
}

impl Progress {
    /// Records `m` made on `tree`; returns how many times it was made there before.
    pub fn made(&mut self, m: Move, tree: Option<&str>) -> u32 {
        let n = self.seen.entry((m, tree.map(str::to_string))).or_insert(0);
        let before = *n;
        *n += 1;
        before
    }
}

/// Whether `repeats` earlier identical moves mean the session is stuck (`stuck_after = 0`
/// turns the rule off).
pub(crate) fn is_stuck(repeats: u32, stuck_after: u32) -> bool {
    stuck_after > 0 && repeats >= stuck_after
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_call_on_the_same_tree_counts_up() {
        let mut p = Progress::default();
        let run = || Move::call("run", r#"{"command": "pytest"}"#);
        assert_eq!(p.made(run(), Some("t1")), 0);
        assert_eq!(
            p.made(Move::call("run", r#"{ "command":"pytest" }"#), Some("t1")),
            1
        );
        assert_eq!(p.made(run(), Some("t1")), 2);
        // After an edit the same test run is progress.
        assert_eq!(p.made(run(), Some("t2")), 0);
        assert_eq!(
            p.made(Move::call("run", r#"{"command": "ls"}"#), Some("t2")),
            0
        );
    }

    #[test]
    fn the_same_reply_counts_up_and_the_rule_fires_at_the_bound() {
        let mut p = Progress::default();
        let said = |t: &str| Move::said(t);
        assert_eq!(p.made(said("I will fix it."), None), 0);
        assert_eq!(p.made(said("  I will fix it.\n"), None), 1);
        assert_eq!(p.made(said("Something else."), None), 0);
        assert!(!is_stuck(2, 3) && is_stuck(3, 3) && is_stuck(4, 3));
        assert!(!is_stuck(100, 0), "0 turns the rule off");
    }
}
