//! Context distillation for a handoff: what the senior (or triage) needs to know, bounded.
//!
//! The senior does not get the junior's hidden state, its transcript or its calls: it gets
//! why control left the junior, what the junior changed (a diff against the start), the
//! last check's command and failing output, and the task with the files as they stand now
//! in the shape of the junior's first message — the seed paper's "distil the context, not
//! the hidden states". On the old lane the note carried the junior's raw calls and the
//! senior went on hunting the junior's imaginary `calc.py`; 0 of 53 takeovers passed
//! (issue "The cascade, for real").

use crate::protocol::EvidenceTerm;

/// The last check, as the note shows it.
#[derive(Debug, Clone, Default)]
pub struct CheckFacts<'a> {
    pub command: &'a str,
    pub exit_code: Option<i32>,
    pub passed: bool,
    pub output_tail: &'a str,
}

/// The facts a handoff note is built from.
#[derive(Debug, Clone, Default)]
pub struct HandoffFacts<'a> {
    /// Why control left the junior, in words.
    pub reason: &'a str,
    pub belief: f64,
    pub threshold: f64,
    pub step: u32,
    pub tick: u64,
    pub why: &'a [EvidenceTerm],
    /// The junior's changes against the start of the session.
    pub diff: &'a str,
    /// The work tree went back to the start: the diff is what was tried, not what is there.
    pub restarted: bool,
    /// The last run of `agent.check`, when it ran.
    pub check: Option<CheckFacts<'a>>,
    /// Without a check: the output of the last command the junior ran.
    pub last_command: Option<&'a str>,
    /// The junior's last refused call, when no file has been written since: which
    /// tool and the first line of why (a patch that did not apply tells the senior, and
    /// triage, that the junior could not edit rather than did not know).
    pub refused: Option<&'a str>,
    /// The task and the files as they stand now (the junior's first-message shape).
    pub brief: &'a str,
}

/// What the session has done so far that a handoff note tells: fed by the loop step by
/// step, read only when control is handed off.
#[derive(Debug, Clone, Default)]
pub struct HandoffLedger {
    /// Files written, in the order first written.
    pub files_touched: Vec<String>,
    /// The output of the last `run` command.
    pub last_run: Option<String>,
    /// The last refused call (`tool: first line`) since a file was last written: a patch
    /// that did not apply stays news until an edit lands, whatever was read or run since.
    pub refused: Option<String>,
}

impl HandoffLedger {
    /// A tool's output, whether it did its job, and the file it wrote if any. A `run`
    /// whose command ran and exited non-zero did its job (the exit status is the answer);
    /// only one that could not run (`error: …`) was refused.
    pub fn tool(&mut self, name: &str, ok: bool, output: &str, wrote: Option<&str>) {
        let ran = name == "run" && !output.starts_with("error:");
        if name == "run" {
            self.last_run = Some(output.to_string());
        }
        if wrote.is_some() {
            self.refused = None;
        } else if !ok && !ran {
            let why = output.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
            self.refused = Some(format!("{name}: {}", head(why.trim(), 300)));
        }
        if let Some(path) = wrote
            && !self.files_touched.iter().any(|f| f == path)
        {
            self.files_touched.push(path.to_string());
        }
    }
}

/// Bytes kept of each part; the note stays well inside any model's context.
const DIFF_CAP: usize = 6_000;
const OUTPUT_CAP: usize = 2_000;

/// Fills the handoff template.
pub fn handoff_note(template: &str, f: &HandoffFacts<'_>) -> String {
    let why = if f.why.is_empty() {
        "(no single signal stands out)".to_string()
    } else {
        f.why
            .iter()
            .map(|t| {
                format!(
                    "- {}: value {:.3}, log-likelihood ratio {:+.3}",
                    t.signal.name(),
                    t.value,
                    t.llr
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    };
    let diff = match (f.diff.trim().is_empty(), f.restarted) {
        (true, _) => "(no changes)".to_string(),
        (false, false) => format!("```diff\n{}\n```", head(f.diff.trim_end(), DIFF_CAP)),
        // After a restart the attempt's code is not shown: on the real lane a 1.5B senior
        // shown the 0.5B's failed code sent it back verbatim (docs/results/2026-12-06-takeover.md).
        (false, true) => format!(
            "The work tree is back where the session started: start over. The junior's \
             attempt, not shown, changed {}.",
            touched(f.diff)
        ),
    };
    let check = match (&f.check, f.last_command) {
        (Some(c), _) => {
            let status = c
                .exit_code
                .map_or("did not finish".to_string(), |x| format!("exit status {x}"));
            let verdict = if c.passed { "passed" } else { "failed" };
            format!(
                "`{}` {verdict} ({status}):\n```\n{}\n```",
                c.command,
                tail(c.output_tail.trim_end(), OUTPUT_CAP)
            )
        }
        (None, Some(out)) => format!(
            "No check has run. The last command the junior ran printed:\n```\n{}\n```",
            tail(out.trim_end(), OUTPUT_CAP)
        ),
        (None, None) => "No check has run.".to_string(),
    };
    let check = match f.refused {
        Some(r) => format!("{check}\n\nThe junior's last call was refused: {r}"),
        None => check,
    };
    template
        .replace("{reason}", f.reason)
        .replace("{belief}", &format!("{:.2}", f.belief))
        .replace("{threshold}", &format!("{:.2}", f.threshold))
        .replace("{step}", &f.step.to_string())
        .replace("{tick}", &f.tick.to_string())
        .replace("{why}", &why)
        .replace("{diff}", &diff)
        .replace("{check}", &check)
        .replace("{brief}", f.brief.trim_end())
}

/// The files a unified diff changes, in order, as `a, b` (read by the diff renderer, which
/// knows renames and deletions).
fn touched(diff: &str) -> String {
    let files: Vec<String> = crate::diffview::from_patch(diff)
        .files
        .into_iter()
        .map(|f| f.path)
        .filter(|p| !p.is_empty())
        .collect();
    if files.is_empty() {
        "the files".to_string()
    } else {
        files.join(", ")
    }
}

/// The last `cap` bytes of `s`, cut at a character boundary, marked when cut.
pub fn tail(s: &str, cap: usize) -> String {
    if s.len() <= cap {
        return s.to_string();
    }
    let mut start = s.len() - cap;
    while !s.is_char_boundary(start) {
        start += 1;
    }
    format!("[… {start} bytes cut]\n{}", &s[start..])
}

/// The first `cap` bytes of `s`, cut at a character boundary, marked when cut.
pub fn head(s: &str, cap: usize) -> String {
    if s.len() <= cap {
        return s.to_string();
    }
    let mut end = cap;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}\n[… {} bytes cut]", &s[..end], s.len() - end)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::SignalKind;

    #[test]
    fn the_note_names_reason_belief_evidence_diff_check_and_brief() {
        let why = [EvidenceTerm {
            signal: SignalKind::PatchRejected,
            value: 1.0,
            llr: -0.7,
        }];
        let facts = HandoffFacts {
            reason: "the check failed",
            belief: 0.312,
            threshold: 0.4,
            step: 3,
            tick: 120,
            why: &why,
            diff: "-a\n+b\n",
            restarted: false,
            check: Some(CheckFacts {
                command: "pytest",
                exit_code: Some(1),
                passed: false,
                output_tail: "AssertionError\n",
            }),
            last_command: Some("never shown: a check ran"),
            refused: None,
            brief: "Task: fix dates\n",
        };
        let note = handoff_note(
            "{reason}|{belief}|{threshold}|{step}|{tick}|{why}|{diff}|{check}|{brief}",
            &facts,
        );
        assert_eq!(
            note,
            "the check failed|0.31|0.40|3|120|- patch_rejected: value 1.000, log-likelihood ratio -0.700|\
             ```diff\n-a\n+b\n```|`pytest` failed (exit status 1):\n```\nAssertionError\n```|Task: fix dates"
        );
        let restarted = handoff_note(
            "{diff}|{check}",
            &HandoffFacts {
                restarted: true,
                check: None,
                last_command: None,
                ..facts
            },
        );
        assert!(
            restarted.starts_with("The work tree is back"),
            "{restarted}"
        );
        assert!(restarted.ends_with("|No check has run."), "{restarted}");
        assert!(
            !restarted.contains("+b"),
            "the attempt's code is not shown: {restarted}"
        );
    }

    #[test]
    fn the_ledger_keeps_the_last_refusal_until_a_file_is_written() {
        let mut l = HandoffLedger::default();
        l.tool(
            "apply_patch",
            false,
            "\npatch rejected: hunk 1 does not match\nmore",
            None,
        );
        assert_eq!(
            l.refused.as_deref(),
            Some("apply_patch: patch rejected: hunk 1 does not match")
        );
        // A command that ran and failed is an answer, not a refusal; a read writes
        // nothing: the refusal stays.
        l.tool("run", false, "exit status 1\nAssertionError", None);
        l.tool("read_file", true, "def f(): ...", None);
        assert!(l.refused.is_some());
        assert_eq!(l.last_run.as_deref(), Some("exit status 1\nAssertionError"));
        l.tool("run", false, "error: command not allowed", None);
        assert_eq!(
            l.refused.as_deref(),
            Some("run: error: command not allowed")
        );
        l.tool("write_file", true, "wrote a.py", Some("a.py"));
        assert_eq!(l.refused, None);
        assert_eq!(l.files_touched, vec!["a.py".to_string()]);
        let note = handoff_note(
            "{check}",
            &HandoffFacts {
                refused: Some("apply_patch: patch rejected"),
                ..HandoffFacts::default()
            },
        );
        assert_eq!(
            note,
            "No check has run.\n\nThe junior's last call was refused: apply_patch: patch rejected"
        );
    }

    #[test]
    fn caps_cut_at_char_boundaries() {
        let s = "é".repeat(100);
        let t = tail(&s, 11);
        assert!(t.ends_with('é') && t.starts_with("[…"));
        let h = head(&s, 11);
        assert!(h.starts_with('é'));
    }
}
