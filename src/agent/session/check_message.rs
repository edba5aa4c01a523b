//! What a failed check says to the model that wrote the code: the command, its status and
//! the useful end of its output, then the ways out of writing code.

use crate::agent::check_run::CheckResult;

/// Most bytes of a failing check's output the model is shown (its tail: the assertion or
/// the traceback's last frames are at the end).
const CHECK_TAIL_BYTES: usize = 2000;
/// Most lines of it.
const CHECK_TAIL_LINES: usize = 30;

/// The useful end of a check's output.
pub(super) fn check_tail(output: &str) -> String {
    let lines: Vec<&str> = output.trim_end().lines().collect();
    let from = lines.len().saturating_sub(CHECK_TAIL_LINES);
    let mut tail = lines[from..].join("\n");
    if tail.len() > CHECK_TAIL_BYTES {
        let mut cut = tail.len() - CHECK_TAIL_BYTES;
        while !tail.is_char_boundary(cut) {
            cut += 1;
        }
        tail = format!("…{}", &tail[cut..]);
    }
    tail
}

/// The ways out of writing code, told after a failed check (`retry = "feedback"`) rather
/// than in the system prompt: on the real lane (HumanEval every 4th task, 0.5B, T=0) a bare
/// system prompt passed 24/41 first replies, the same with these lines in the first message
/// 21/41, and the earlier rule-laden system prompt 18/41 (docs/guide.md, "A bare system prompt").
const ESCAPES: &str = "If you need information that only the user has, write one line: ASK: your question\nTo run a shell command, write one line: RUN: the command\nIf you cannot do the task, write one line: GIVE UP: the reason";

/// What the check said, written for the model.
pub(super) fn failure_message(r: &CheckResult, unchanged: bool) -> String {
    let status = r
        .exit_code
        .map_or("did not finish".to_string(), |c| format!("exit status {c}"));
    let lead = if unchanged {
        "Your reply changed nothing in the code, and the check still fails"
    } else {
        "The check failed"
    };
    format!(
        "{lead}: `{}` ({status}).\n```\n{}\n```\nFind the mistake and send the corrected definitions in a fenced code block.\n\n{ESCAPES}",
        r.command,
        check_tail(r.output_for_models())
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tail_keeps_the_end_of_long_output() {
        let long: String = (0..100).map(|i| format!("line {i}\n")).collect();
        let t = check_tail(&long);
        assert!(t.ends_with("line 99"));
        assert!(!t.contains("line 69\n"));
        assert_eq!(t.lines().count(), CHECK_TAIL_LINES);
        let wide = "é".repeat(3000);
        assert!(check_tail(&wide).len() <= CHECK_TAIL_BYTES + 4);
    }
}
