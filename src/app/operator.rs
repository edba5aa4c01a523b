//! The operator when there is no TUI: answers from a file, from a terminal, or nobody.
//!
//! It is a consumer of the event stream like any other: it sees `OperatorAsked` and replies
//! with a `Command`, exactly as the TUI's question modal does, so the session has one way of
//! getting answers whoever gives them.

use std::collections::VecDeque;
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};

use serde::Deserialize;
use tokio::sync::mpsc;

use crate::config::NoOperator;
use crate::protocol::visible::{visible, visible_lines};
use crate::protocol::{Command, Event, Stamped};

/// One prepared answer (`--answers FILE`, one JSON object per line).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PreparedAnswer {
    pub answer: String,
    #[serde(default)]
    pub needed: Option<bool>,
}

#[derive(Debug, thiserror::Error)]
pub enum AnswersError {
    /// Missing, not a regular file, too large or not text (see [`crate::infile`]).
    #[error("answers file {0}")]
    File(#[from] crate::infile::InputFileError),
    #[error(
        "{path}:{line}: expected a JSON object like {{\"answer\": \"...\", \"needed\": true}}: {message}"
    )]
    Line {
        path: PathBuf,
        line: usize,
        message: String,
    },
}

/// The largest answers file read: a few hundred bytes per answer, thousands of answers.
pub const MAX_ANSWERS_BYTES: u64 = 16 << 20;

/// Reads and checks the whole answers file before the session starts, so a typo is an
/// error up front rather than a surprise at the first question.
pub fn load_answers(path: &Path) -> Result<VecDeque<PreparedAnswer>, AnswersError> {
    let text = crate::infile::read_text(path, MAX_ANSWERS_BYTES, "a JSON-lines answers file")?;
    let mut out = VecDeque::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let a: PreparedAnswer = serde_json::from_str(line).map_err(|e| AnswersError::Line {
            path: path.to_path_buf(),
            line: i + 1,
            message: e.to_string(),
        })?;
        out.push_back(a);
    }
    Ok(out)
}

/// Who answers operator questions in a headless session.
#[derive(Debug)]
pub enum Answerer {
    /// Prepared answers, in order; when they run out, `no_operator` applies.
    Prepared(VecDeque<PreparedAnswer>),
    /// A person at the terminal (stdin is a TTY).
    Terminal,
    /// Nobody: `no_operator` applies to every question.
    Nobody,
}

/// Runs until the event stream ends, replying to every operator question.
pub async fn serve(
    mut answerer: Answerer,
    no_operator: NoOperator,
    mut events: mpsc::Receiver<Stamped>,
    commands: mpsc::Sender<Command>,
) {
    while let Some(stamped) = events.recv().await {
        let Event::OperatorAsked {
            question, options, ..
        } = &stamped.event
        else {
            continue;
        };
        let reply = match &mut answerer {
            Answerer::Prepared(queue) => queue.pop_front().map(|a| Command::Answer {
                answer: a.answer,
                needed: a.needed,
            }),
            Answerer::Terminal => ask_terminal(question.clone(), options.clone()).await,
            Answerer::Nobody => None,
        };
        let reply = reply.unwrap_or(match no_operator {
            NoOperator::Senior => Command::DeferToSenior,
            NoOperator::Fail => Command::Quit,
        });
        if commands.send(reply).await.is_err() {
            return;
        }
    }
}

async fn ask_terminal(question: String, options: Vec<String>) -> Option<Command> {
    tokio::task::spawn_blocking(move || {
        let mut err = std::io::stderr();
        // The model's words, shown: an escape sequence could hide the question from the
        // person asked to answer it.
        let _ = writeln!(err, "\n? {}", visible_lines(&question));
        for (i, o) in options.iter().enumerate() {
            let _ = writeln!(err, "  {}) {}", i + 1, visible(o));
        }
        let _ = write!(
            err,
            "answer (number, text, or empty to let the senior decide): "
        );
        let _ = err.flush();
        let mut line = String::new();
        std::io::stdin().lock().read_line(&mut line).ok()?;
        let line = line.trim();
        if line.is_empty() {
            return Some(Command::DeferToSenior);
        }
        let answer = line
            .parse::<usize>()
            .ok()
            .and_then(|n| options.get(n.wrapping_sub(1)).cloned())
            .unwrap_or_else(|| line.to_string());
        let _ = write!(err, "was this question needed? [y/n/empty]: ");
        let _ = err.flush();
        let mut mark = String::new();
        std::io::stdin().lock().read_line(&mut mark).ok()?;
        let needed = match mark.trim() {
            "y" | "Y" | "yes" => Some(true),
            "n" | "N" | "no" => Some(false),
            _ => None,
        };
        Some(Command::Answer { answer, needed })
    })
    .await
    .ok()
    .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bad_answers_line_is_named() {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path().join("a.jsonl");
        std::fs::write(
            &p,
            "{\"answer\":\"ISO\",\"needed\":true}\n\n{\"answer\": 3}\n",
        )
        .expect("write");
        let err = load_answers(&p).expect_err("bad line").to_string();
        assert!(err.contains("a.jsonl:3:"), "{err}");
    }

    #[tokio::test]
    async fn prepared_answers_then_the_fallback() {
        let (etx, erx) = mpsc::channel(8);
        let (ctx, mut crx) = mpsc::channel(8);
        let answers = VecDeque::from([PreparedAnswer {
            answer: "ISO".into(),
            needed: Some(true),
        }]);
        let task = tokio::spawn(serve(
            Answerer::Prepared(answers),
            NoOperator::Senior,
            erx,
            ctx,
        ));
        let asked = Stamped {
            t_ms: 0,
            event: Event::OperatorAsked {
                step: 1,
                question: "q".into(),
                options: vec![],
                default_assumption: None,
                self_initiated: false,
                topic: None,
            },
        };
        etx.send(asked.clone()).await.expect("send");
        etx.send(asked).await.expect("send");
        drop(etx);
        assert_eq!(
            crx.recv().await,
            Some(Command::Answer {
                answer: "ISO".into(),
                needed: Some(true)
            })
        );
        assert_eq!(crx.recv().await, Some(Command::DeferToSenior));
        task.await.expect("join");
    }
}
