//! Context distillation for a handoff: what the senior (or triage) needs to know, bounded.
//!
//! The senior does not get the junior's hidden state or its whole transcript: it gets the
//! task, the plan so far, the files touched, the diff, the last tool outputs and why the
//! judge escalated — the seed paper's "distil the context, not the hidden states".

use crate::event::EvidenceTerm;

/// The facts a handoff note is built from.
#[derive(Debug, Clone, Default)]
pub struct HandoffFacts<'a> {
    pub task: &'a str,
    pub belief: f64,
    pub threshold: f64,
    pub step: u32,
    pub tick: u64,
    pub why: &'a [EvidenceTerm],
    /// The junior's own words so far (assistant text), oldest first.
    pub plan: &'a [String],
    pub files: &'a [String],
    pub diff: &'a str,
    /// (tool name, output) of the most recent steps, oldest first.
    pub tool_outputs: &'a [(String, String)],
}

/// What the session has done so far that a handoff note tells: fed by the loop step by
/// step, read only when control is handed off.
#[derive(Debug, Clone, Default)]
pub struct HandoffLedger {
    /// The junior's own words so far (assistant text), oldest first.
    pub plan: Vec<String>,
    /// Files written, in the order first written.
    pub files_touched: Vec<String>,
    /// (tool name, output) of every step, oldest first.
    pub tool_outputs: Vec<(String, String)>,
}

impl HandoffLedger {
    /// A reply's text joins the plan (an empty one says nothing).
    pub fn said(&mut self, text: &str) {
        if !text.trim().is_empty() {
            self.plan.push(text.to_string());
        }
    }

    /// A tool's output, and the file it wrote if any.
    pub fn tool(&mut self, name: &str, output: &str, wrote: Option<&str>) {
        self.tool_outputs
            .push((name.to_string(), output.to_string()));
        if let Some(path) = wrote
            && !self.files_touched.iter().any(|f| f == path)
        {
            self.files_touched.push(path.to_string());
        }
    }
}

/// Bytes kept of each part; the note stays well inside any model's context.
const PLAN_CAP: usize = 4_000;
const DIFF_CAP: usize = 8_000;
const OUTPUT_CAP: usize = 1_500;
const OUTPUTS_KEPT: usize = 3;

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
    let plan = tail(&f.plan.join("\n"), PLAN_CAP);
    let files = if f.files.is_empty() {
        "(none)".to_string()
    } else {
        f.files.join("\n")
    };
    let diff = if f.diff.trim().is_empty() {
        "(no changes yet)".to_string()
    } else {
        head(f.diff, DIFF_CAP)
    };
    let start = f.tool_outputs.len().saturating_sub(OUTPUTS_KEPT);
    let outputs = f.tool_outputs[start..]
        .iter()
        .map(|(name, out)| format!("### {name}\n{}", tail(out, OUTPUT_CAP)))
        .collect::<Vec<_>>()
        .join("\n\n");
    template
        .replace("{task}", f.task)
        .replace("{belief}", &format!("{:.2}", f.belief))
        .replace("{threshold}", &format!("{:.2}", f.threshold))
        .replace("{step}", &f.step.to_string())
        .replace("{tick}", &f.tick.to_string())
        .replace("{why}", &why)
        .replace(
            "{plan}",
            if plan.is_empty() {
                "(nothing said)"
            } else {
                &plan
            },
        )
        .replace("{files}", &files)
        .replace("{diff}", &diff)
        .replace(
            "{tool_outputs}",
            if outputs.is_empty() {
                "(none)"
            } else {
                &outputs
            },
        )
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
    use crate::event::SignalKind;

    #[test]
    fn the_note_names_task_belief_and_evidence() {
        let why = [EvidenceTerm {
            signal: SignalKind::PatchRejected,
            value: 1.0,
            llr: -0.7,
        }];
        let plan = ["I will fix the parser".to_string()];
        let files = ["src/date.rs".to_string()];
        let outputs = [("run".to_string(), "test failed".to_string())];
        let note = handoff_note(
            "{task}|{belief}|{threshold}|{step}|{tick}|{why}|{plan}|{files}|{diff}|{tool_outputs}",
            &HandoffFacts {
                task: "fix dates",
                belief: 0.312,
                threshold: 0.4,
                step: 3,
                tick: 120,
                why: &why,
                plan: &plan,
                files: &files,
                diff: "",
                tool_outputs: &outputs,
            },
        );
        assert_eq!(
            note,
            "fix dates|0.31|0.40|3|120|- patch_rejected: value 1.000, log-likelihood ratio -0.700|\
             I will fix the parser|src/date.rs|(no changes yet)|### run\ntest failed"
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
