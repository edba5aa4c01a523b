//! How far the simulated operator's judgement can be trusted: its verdicts on real
//! questions against a person's labels.
//!
//! A labelled sample is a JSON-lines file, one question a real model asked on a blocker
//! suite per line, with the task's blocker and a person's verdict:
//!
//! ```json
//! {"task": "humaneval-12", "policy": "operator", "question": "…", "blocker": {…}, "targets": true}
//! ```
//!
//! `targets` says whether the question asks for exactly what the blocker's answer holds
//! (a question that would be answered by the removed text). The matcher under test is the
//! one eval runs by default ([`super::operator::screen`] then
//! [`super::operator::match_phrases`]); agreement, false accepts (it answers a question
//! the label says misses the blocker: the answer leaks) and false rejects (it refuses a
//! question that targets it: recall is understated) are what `handoff eval matcher` prints.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::operator::{ask_llm, match_phrases, screen};
use super::suite::Blocker;

#[derive(Debug, thiserror::Error)]
pub enum LabelError {
    /// Missing, not a regular file, too large or not text (see [`crate::infile`]).
    #[error("{0}")]
    File(#[from] crate::infile::InputFileError),
    #[error("{path}:{line}: not a labelled question: {message}")]
    Line {
        path: PathBuf,
        line: usize,
        message: String,
    },
    #[error("{0} holds no labelled question")]
    Empty(PathBuf),
}

/// One labelled question.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Labelled {
    pub task: String,
    pub policy: String,
    pub question: String,
    pub blocker: Blocker,
    /// The person's verdict: the question targets the blocker.
    pub targets: bool,
    /// Why, in a few words, where the call was close.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// The matcher against the labels.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Agreement {
    pub questions: usize,
    /// Labelled as targeting the blocker.
    pub positives: usize,
    pub agree: usize,
    /// The matcher answered; the label says the question misses the blocker.
    pub false_accepts: Vec<String>,
    /// The matcher refused; the label says the question targets the blocker.
    pub false_rejects: Vec<String>,
    /// Questions an LLM judge could not judge (its endpoint failed); counted as refused,
    /// and said, so an outage is not mistaken for a strict judge.
    #[serde(skip_serializing_if = "is_zero")]
    pub unjudged: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

impl Agreement {
    pub fn rate(&self) -> Option<f64> {
        (self.questions > 0).then(|| self.agree as f64 / self.questions as f64)
    }
}

/// The largest labelled sample read (the committed ones are a few tens of KB).
pub const MAX_SAMPLE_BYTES: u64 = 64 << 20;

/// Reads a labelled sample.
pub fn read(path: &Path) -> Result<Vec<Labelled>, LabelError> {
    let text = crate::infile::read_text(path, MAX_SAMPLE_BYTES, "a JSON-lines labelled sample")?;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let l: Labelled = serde_json::from_str(line).map_err(|e| LabelError::Line {
            path: path.to_path_buf(),
            line: i + 1,
            message: e.to_string(),
        })?;
        out.push(l);
    }
    if out.is_empty() {
        return Err(LabelError::Empty(path.to_path_buf()));
    }
    Ok(out)
}

/// Whether the default matcher would answer `question` with `blocker`'s answer.
pub fn accepts(blocker: &Blocker, question: &str) -> bool {
    screen(question)
        .ok()
        .is_some_and(|text| match_phrases(std::slice::from_ref(blocker), &text).is_some())
}

/// The default matcher's verdict on every labelled question.
pub fn agreement(sample: &[Labelled]) -> Agreement {
    let verdicts: Vec<bool> = sample
        .iter()
        .map(|l| accepts(&l.blocker, &l.question))
        .collect();
    tally(sample, &verdicts)
}

/// The LLM judge's verdict (`eval --llm-judge`, after the same screen) on every labelled
/// question, one call each.
pub async fn llm_agreement(client: &crate::llm::Client, sample: &[Labelled]) -> Agreement {
    let mut verdicts = Vec::with_capacity(sample.len());
    let mut unjudged = 0;
    for l in sample {
        let said = match screen(&l.question) {
            Err(_) => false,
            Ok(_) => match ask_llm(client, std::slice::from_ref(&l.blocker), &l.question).await {
                Some(id) => id == l.blocker.id,
                None => {
                    unjudged += 1;
                    false
                }
            },
        };
        verdicts.push(said);
    }
    Agreement {
        unjudged,
        ..tally(sample, &verdicts)
    }
}

fn tally(sample: &[Labelled], verdicts: &[bool]) -> Agreement {
    let mut out = Agreement {
        questions: sample.len(),
        ..Agreement::default()
    };
    for (l, &said) in sample.iter().zip(verdicts) {
        out.positives += usize::from(l.targets);
        let shown = format!(
            "{}: {}",
            l.task,
            crate::protocol::visible::visible(&l.question)
        );
        match (said, l.targets) {
            (a, b) if a == b => out.agree += 1,
            (true, false) => out.false_accepts.push(shown),
            _ => out.false_rejects.push(shown),
        }
    }
    out
}

/// The agreement as text.
pub fn to_text(a: &Agreement) -> String {
    let mut out = format!(
        "{} labelled questions ({} target their blocker): the matcher agrees on {} ({})\n\
         false accepts (answered, should not be): {}\nfalse rejects (refused, should be answered): {}\n",
        a.questions,
        a.positives,
        a.agree,
        a.rate()
            .map_or("-".into(), |r| format!("{:.1} %", 100.0 * r)),
        a.false_accepts.len(),
        a.false_rejects.len()
    );
    for (title, list) in [
        ("false accepts", &a.false_accepts),
        ("false rejects", &a.false_rejects),
    ] {
        if !list.is_empty() {
            out.push_str(&format!("\n{title}:\n"));
            for q in list {
                out.push_str(&format!("  {q}\n"));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule() -> Blocker {
        Blocker {
            id: "rule".into(),
            description: "a rule the docstring states: Return None in case the list is empty."
                .into(),
            answer: "Return None in case the list is empty.".into(),
            phrases: vec!["none".into(), "empty".into()],
        }
    }

    fn labelled(q: &str, targets: bool) -> Labelled {
        Labelled {
            task: "t".into(),
            policy: "operator".into(),
            question: q.into(),
            blocker: rule(),
            targets,
            note: None,
        }
    }

    #[test]
    fn agreement_counts_both_kinds_of_error() {
        let sample = vec![
            labelled(
                "What should the function return when the list is empty?",
                true,
            ),
            labelled("What should longest return for a list of ties?", false),
            labelled("Which value stands for an empty result, None or ''?", false),
            labelled("Should I raise on no input", true),
        ];
        let a = agreement(&sample);
        assert_eq!(a.questions, 4);
        assert_eq!(a.positives, 2);
        assert_eq!(a.agree, 2);
        assert_eq!(a.false_accepts.len(), 1, "{a:?}");
        assert_eq!(a.false_rejects.len(), 1, "{a:?}");
        assert_eq!(a.rate(), Some(0.5));
        assert!(to_text(&a).contains("agrees on 2 (50.0 %)"));
    }

    #[test]
    fn a_bad_line_is_named_by_file_and_line() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("labels.jsonl");
        let good = serde_json::to_string(&labelled("What if empty?", true)).expect("json");
        std::fs::write(&path, format!("{good}\n{{\"task\": 1}}\n")).expect("write");
        let err = read(&path).expect_err("line 2 is bad").to_string();
        assert!(err.contains("labels.jsonl:2:"), "{err}");
    }
}
