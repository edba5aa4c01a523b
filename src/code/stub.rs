//! Replies that leave the task's stub unwritten.
//!
//! A stub is a top-level Python function whose body ends in `raise NotImplementedError`
//! (HumanEval's stubs, and what `eval import-humaneval` writes). Only top-level functions
//! count: an abstract method raising `NotImplementedError` inside a class is a design, not
//! a task, and a reply may edit its file freely.

use super::place::{Files, Placed};
use super::reply::CodeReply;

/// The stub a reply left unwritten, if it did: the function's name, for the message that
/// asks for its body.
///
/// Two shapes, both seen on the real lane and both refused instead of written and checked
/// (docs/guide.md, "The junior writes code"):
/// - **echoed**: the reply's own code still has a `raise NotImplementedError` line and no
///   placed file has fewer such lines than before (the 0.5B on HumanEval/38 sent both
///   functions of a two-function file back, the one to write still raising, four times in a
///   row);
/// - **untouched**: every placed file that had stubs still has all of them (the 0.5B on
///   HumanEval/50 rewrote the already implemented `encode_shift` and never wrote the
///   `decode_shift` stub);
/// - **reverted**: a top-level function the file implements comes back as a stub (the 1.5B
///   as a senior, resampled after a failed check on HumanEval/147, sent the original stub
///   over the code it had written).
///
/// A reply that implements one stub of several is progress and passes, as does code for a
/// new file (an abstract method in it is not an echo).
pub fn left_unwritten(reply: &CodeReply, placed: &[Placed], files: &impl Files) -> Option<String> {
    if let Some(name) = reverted(placed, files) {
        return Some(name);
    }
    if let Some(name) = echoed(reply)
        && !placed.iter().any(|p| {
            let before = files.read(&p.path).map_or(0, |t| raise_lines(&t));
            raise_lines(&p.content) < before || before == 0
        })
    {
        return Some(name);
    }
    let mut left = None;
    for p in placed {
        let before = files.read(&p.path).map(|t| stubs(&t)).unwrap_or_default();
        if before.is_empty() {
            continue;
        }
        let after = stubs(&p.content);
        if after.len() < before.len() {
            return None;
        }
        left = left.or_else(|| after.into_iter().next());
    }
    left
}

/// A top-level function a placed file implemented that the placed code turns into a stub.
fn reverted(placed: &[Placed], files: &impl Files) -> Option<String> {
    placed.iter().find_map(|p| {
        let before = files.read(&p.path)?;
        let was_stub = stubs(&before);
        let defined = top_level_defs(&before);
        stubs(&p.content)
            .into_iter()
            .find(|n| defined.contains(n) && !was_stub.contains(n))
    })
}

/// The names of the top-level functions of `text`.
fn top_level_defs(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| {
            let t = l.strip_prefix("async ").unwrap_or(l);
            t.strip_prefix("def ")
                .and_then(|r| r.split('(').next())
                .map(|n| n.trim().to_string())
        })
        .collect()
}

fn raises(line: &str) -> bool {
    matches!(
        line.trim(),
        "raise NotImplementedError" | "raise NotImplementedError()"
    )
}

fn raise_lines(text: &str) -> usize {
    text.lines().filter(|l| raises(l)).count()
}

/// The name of the `def` a line at `at` belongs to, looking upwards, with its indentation.
fn owner(lines: &[&str], at: usize) -> Option<(usize, String)> {
    lines[..at].iter().rev().find_map(|l| {
        let t = l.trim_start();
        let indent = l.len() - t.len();
        let t = t.strip_prefix("async ").unwrap_or(t);
        t.strip_prefix("def ")
            .and_then(|r| r.split('(').next())
            .map(|n| (indent, n.trim().to_string()))
    })
}

/// The top-level functions of `text` that still raise `NotImplementedError`, in order.
fn stubs(text: &str) -> Vec<String> {
    let lines: Vec<&str> = text.lines().collect();
    let mut names: Vec<String> = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        if raises(l)
            && let Some((0, name)) = owner(&lines, i)
            && !names.contains(&name)
        {
            names.push(name);
        }
    }
    names
}

/// The function a reply's own code leaves raising, if any.
fn echoed(reply: &CodeReply) -> Option<String> {
    reply.blocks.iter().find_map(|b| {
        let lines: Vec<&str> = b.code.lines().collect();
        let at = lines.iter().position(|l| raises(l))?;
        Some(owner(&lines, at).map(|(_, n)| n).unwrap_or_default())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::code::place::place;
    use crate::code::reply::read;

    const TWO: &str = "def encode(s):\n    return s[::-1]\n\n\ndef decode(s):\n    \"\"\"Undo encode.\"\"\"\n    raise NotImplementedError\n";

    fn files(path: &'static str, text: &'static str) -> impl Fn(&str) -> Option<String> {
        move |p: &str| (p == path).then(|| text.to_string())
    }

    fn targets() -> Vec<String> {
        vec!["solution.py".to_string()]
    }

    fn verdict(file: &'static str, reply: &str) -> Option<String> {
        let files = files("solution.py", file);
        let reply = read(reply);
        let placed = place(&reply, &files, &targets()).expect("placed");
        left_unwritten(&reply, &placed, &files)
    }

    #[test]
    fn a_reply_that_sends_the_stub_back_is_named() {
        let echo = "```python\ndef encode(s):\n    return s[::-1]\n\n\ndef decode(s):\n    \"\"\"Undo encode.\"\"\"\n    raise NotImplementedError\n```\n";
        assert_eq!(verdict(TWO, echo).as_deref(), Some("decode"));
    }

    #[test]
    fn a_reply_that_rewrites_only_the_written_function_is_named() {
        // HumanEval/50 on the 0.5B: `encode_shift` rewritten, `decode_shift` never touched.
        let other = "```python\ndef encode(s):\n    return ''.join(reversed(s))\n```\n";
        assert_eq!(verdict(TWO, other).as_deref(), Some("decode"));
    }

    #[test]
    fn an_implemented_stub_or_one_of_several_is_progress() {
        let done = "```python\ndef decode(s):\n    return s[::-1]\n```\n";
        assert_eq!(verdict(TWO, done), None);
        let three = "def a():\n    raise NotImplementedError\n\n\ndef b():\n    raise NotImplementedError\n";
        assert_eq!(
            verdict(three, "```python\ndef b():\n    return 1\n```\n"),
            None
        );
        // A new file with a stub in it (an abstract method) is not an echo.
        let files = files("solution.py", TWO);
        let new = read("new.py\n```python\ndef later():\n    raise NotImplementedError\n```\n");
        let placed = place(&new, &files, &targets()).expect("placed");
        assert_eq!(left_unwritten(&new, &placed, &files), None);
    }

    #[test]
    fn a_reply_that_turns_written_code_back_into_the_stub_is_named() {
        let written = "def encode(s):\n    return s[::-1]\n\n\ndef decode(s):\n    return s\n";
        let stub = "```python\ndef decode(s):\n    \"\"\"Undo encode.\"\"\"\n    raise NotImplementedError\n```\n";
        assert_eq!(verdict(written, stub).as_deref(), Some("decode"));
        // Rewriting it with another body is not a revert.
        let other = "```python\ndef decode(s):\n    return s[::-1]\n```\n";
        assert_eq!(verdict(written, other), None);
    }

    #[test]
    fn abstract_methods_are_not_stubs() {
        let base = "class Shape:\n    def area(self):\n        raise NotImplementedError\n\n\ndef scale(x):\n    return x\n";
        assert_eq!(
            verdict(base, "```python\ndef scale(x):\n    return 2 * x\n```\n"),
            None
        );
    }
}
