//! The one repetition rule: a move made again on the same work tree is no progress.
//!
//! A move is a tool call (its name and arguments, the JSON normalised) or, for a reply that
//! ran nothing, the reply's text. Its key includes the work tree it was made on (the
//! checkpoint's tree id), so re-running the tests after an edit is progress, while reading
//! the same file or sending the same prose again with nothing changed is a repeat.
//!
//! Two counts come out of each move, and both the loop and the step facts use them:
//! - **of the move**: how many times this very move was made on this tree before. It is the
//!   `repeated_action` fact, whose weight grows with it.
//! - **on the tree**: how many repeated moves, of any kind, were made on this tree so far
//!   (this one included). A junior cycling through three moves — a search, a test run, a
//!   question, again and again — never makes one move a fourth time, yet every move after
//!   the first round is a repeat; this count sees the cycle. It is what the stuck rule
//!   compares with `agent.stuck_after`, and what raises the `stuck` fact.
//!
//! Pure: no I/O, no clock; the loop says which tree a move was made on.

use std::collections::HashMap;

/// What one step did, for the repeat counts.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Move {
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

/// The two counts of one move (see the module doc).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Repeat {
    /// Earlier identical moves on this tree.
    pub of_move: u32,
    /// Repeated moves on this tree so far, this one included when it is a repeat.
    pub on_tree: u32,
}

/// The moves of a session so far, by work tree.
#[derive(Debug, Clone, Default)]
pub struct Progress {
    seen: HashMap<(Move, Option<String>), u32>,
    repeats_on: HashMap<Option<String>, u32>,
}

impl Progress {
    /// Records `m` made on `tree` and counts it.
    pub fn made(&mut self, m: Move, tree: Option<&str>) -> Repeat {
        let tree = tree.map(str::to_string);
        let n = self.seen.entry((m, tree.clone())).or_insert(0);
        let of_move = *n;
        *n += 1;
        let total = self.repeats_on.entry(tree).or_insert(0);
        if of_move > 0 {
            *total += 1;
        }
        Repeat {
            of_move,
            on_tree: *total,
        }
    }
}

/// Whether `repeats` repeated moves on one tree mean the session is stuck
/// (`stuck_after = 0` turns the rule off).
pub fn is_stuck(repeats: u32, stuck_after: u32) -> bool {
    stuck_after > 0 && repeats >= stuck_after
}

/// How many repeated moves on one tree raise the `stuck` fact: one fewer than the loop's
/// default bound (`agent.stuck_after = 3`), so the judge hears of a loop before the rule
/// ends it.
pub const STUCK_FACT_AFTER: u32 = 2;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_call_on_the_same_tree_counts_up() {
        let mut p = Progress::default();
        let run = || Move::call("run", r#"{"command": "pytest"}"#);
        assert_eq!(p.made(run(), Some("t1")).of_move, 0);
        assert_eq!(
            p.made(Move::call("run", r#"{ "command":"pytest" }"#), Some("t1"))
                .of_move,
            1
        );
        assert_eq!(p.made(run(), Some("t1")).of_move, 2);
        // After an edit the same test run is progress.
        assert_eq!(p.made(run(), Some("t2")), Repeat::default());
        assert_eq!(
            p.made(Move::call("run", r#"{"command": "ls"}"#), Some("t2")),
            Repeat::default()
        );
    }

    #[test]
    fn the_same_reply_counts_up_and_the_rule_fires_at_the_bound() {
        let mut p = Progress::default();
        let said = |t: &str| Move::said(t);
        assert_eq!(p.made(said("I will fix it."), None).of_move, 0);
        assert_eq!(p.made(said("  I will fix it.\n"), None).of_move, 1);
        assert_eq!(p.made(said("Something else."), None).of_move, 0);
        assert!(!is_stuck(2, 3) && is_stuck(3, 3) && is_stuck(4, 3));
        assert!(!is_stuck(100, 0), "0 turns the rule off");
    }

    /// The session that reached max_steps in the bundled rerun (rs-palindrome): three moves
    /// in a cycle, none made a fourth time; the tree count reaches the bound on the
    /// sixth move.
    #[test]
    fn a_cycle_of_three_moves_counts_on_the_tree() {
        let mut p = Progress::default();
        let moves = [
            Move::call("search", r#"{"pattern": "palindrome"}"#),
            Move::call("run", r#"{"command": "cargo test --lib"}"#),
            Move::call("ask_operator", r#"{"question": "Why?"}"#),
        ];
        let counts: Vec<Repeat> = moves
            .iter()
            .cycle()
            .take(7)
            .map(|m| p.made(m.clone(), Some("t")))
            .collect();
        let of_move: Vec<u32> = counts.iter().map(|r| r.of_move).collect();
        let on_tree: Vec<u32> = counts.iter().map(|r| r.on_tree).collect();
        assert_eq!(of_move, [0, 0, 0, 1, 1, 1, 2]);
        assert_eq!(on_tree, [0, 0, 0, 1, 2, 3, 4]);
        assert!(!is_stuck(of_move[5], 3), "no one move reached the bound");
        assert!(
            is_stuck(on_tree[5], 3),
            "the tree count did, at the sixth move"
        );
        // Another tree starts from nothing.
        assert_eq!(p.made(moves[0].clone(), Some("t2")), Repeat::default());
    }
}
