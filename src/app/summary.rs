//! What a person needs when a session ends, gathered once for `exec` (text and `--json`)
//! and for leaving the TUI: the money and escalations (the same fold `report` runs), the
//! model's `finish` summary and last message, what changed in the work tree (from the
//! session's checkpoints), and the exact commands that diff or undo it.

use std::path::Path;

use serde::Serialize;
use tokio::sync::mpsc;

use crate::agent::session::SessionEnd;
use crate::metrics::session::SessionFold;
use crate::protocol::{Actor, Event, Route, Stamped};

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct EscalationLine {
    pub route: Route,
    pub belief: f64,
    pub threshold: f64,
    pub step: u32,
    pub reason: crate::protocol::EscalationReason,
    pub shadow: bool,
}

#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct CostLine {
    pub usd: f64,
    pub junior_usd: f64,
    pub senior_usd: f64,
    pub junior_tokens: u64,
    pub senior_tokens: u64,
}

/// What the events of one session add up to.
#[derive(Debug, Clone, Default)]
pub struct Tally {
    pub session: String,
    pub escalations: Vec<EscalationLine>,
    pub cost: CostLine,
    /// The `summary` argument of the last `finish` call.
    pub finish: Option<String>,
    /// The text of the last model turn that said anything.
    pub last_message: String,
    /// Steps that tried to change a protected file.
    pub protected_touched: u32,
    /// Steps whose command changed git metadata that handoff then undid (or could not):
    /// the session exits 5.
    pub git_repaired: u32,
    /// Steps whose tree could not be checkpointed: the summary and `handoff diff` cannot
    /// show what they changed, so the session exits 5 as for a repair.
    pub checkpoint_failed: u32,
}

/// Folds a session's events as they come (a consumer on its own channel).
pub async fn collect(mut rx: mpsc::Receiver<Stamped>) -> Tally {
    let mut fold = SessionFold::new("");
    let mut tally = Tally::default();
    let mut turn = String::new();
    while let Some(s) = rx.recv().await {
        match &s.event {
            Event::SessionStarted { session_id, .. } => tally.session.clone_from(session_id),
            Event::CostIncurred {
                actor,
                input_tokens,
                output_tokens,
                ..
            } => match actor {
                Actor::Junior => tally.cost.junior_tokens += input_tokens + output_tokens,
                Actor::Senior => tally.cost.senior_tokens += input_tokens + output_tokens,
            },
            Event::StepStarted { .. } => turn.clear(),
            Event::Token { text, .. } => {
                turn.push_str(text);
                if !turn.trim().is_empty() {
                    tally.last_message.clone_from(&turn);
                }
            }
            Event::ToolCalled {
                name, arguments, ..
            } if name == "finish" => {
                tally.finish = arguments
                    .get("summary")
                    .and_then(serde_json::Value::as_str)
                    .map(str::to_string);
            }
            Event::ProtectedTouched { git, .. } if !git.is_empty() => tally.git_repaired += 1,
            Event::Warning { kind, .. } if kind == crate::agent::step::CHECKPOINT_FAILED => {
                tally.checkpoint_failed += 1;
            }
            _ => {}
        }
        fold.push(&s.event);
    }
    let summary = fold.finish();
    tally.escalations = summary
        .escalations
        .iter()
        .map(|e| EscalationLine {
            route: e.route,
            belief: e.belief,
            threshold: e.threshold,
            step: e.step,
            reason: e.reason,
            shadow: e.shadow,
        })
        .collect();
    tally.last_message = tally.last_message.trim().to_string();
    tally.protected_touched = summary.protected_touched;
    tally.cost.junior_usd = summary.cost.junior_usd;
    tally.cost.senior_usd = summary.cost.senior_usd;
    tally.cost.usd = summary.cost.junior_usd + summary.cost.senior_usd;
    tally
}

/// What the session changed in the work tree, and how to look at or undo it.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Changes {
    pub files_changed: usize,
    pub insertions: usize,
    pub deletions: usize,
    /// One line per file, then the totals.
    pub stat: String,
    /// The command that prints the whole session's diff.
    pub diff_command: String,
    /// The command that puts the work tree back as the session found it.
    pub undo_command: String,
    /// Changed `.gitattributes` files: they decide how git shows, diffs and filters every
    /// other file (`* -diff` hides an edit from `git diff`, a filter runs a program on
    /// checkout), so a session that touched one is told apart from an ordinary edit.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub attributes: Vec<String>,
}

/// The session's change from its first checkpoint (the work tree as it started) to its
/// last; `Err` with the reason when there are no checkpoints to read (no git repository).
pub fn changes(repo_dir: &Path, session: &str) -> Result<Changes, String> {
    let repo = crate::repo::Repo::open(repo_dir).map_err(|e| e.to_string())?;
    let d = repo
        .checkpoint_diff(session, None)
        .map_err(|e| e.to_string())?;
    let dir = repo.workdir().display().to_string();
    let dir = shell_quote(dir.trim_end_matches('/'));
    Ok(Changes {
        files_changed: d.diff.files.len(),
        insertions: d.diff.insertions(),
        deletions: d.diff.deletions(),
        stat: d.diff.stat(),
        diff_command: format!("handoff diff {session} --repo {dir}"),
        undo_command: format!("handoff restore {session} 0 --repo {dir}"),
        attributes: d
            .diff
            .files
            .iter()
            .filter(|f| f.path.rsplit('/').next() == Some(".gitattributes"))
            .map(|f| f.path.clone())
            .collect(),
    })
}

/// `s` as one POSIX shell word: unchanged when plainly safe, else single-quoted.
pub fn shell_quote(s: &str) -> String {
    let safe = !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+:=@%,".contains(c));
    if safe {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::shell_quote;

    #[test]
    fn paths_become_one_shell_word() {
        assert_eq!(shell_quote("/tmp/a-b_c.d"), "/tmp/a-b_c.d");
        assert_eq!(shell_quote("/tmp/my repo"), "'/tmp/my repo'");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
        assert_eq!(shell_quote(""), "''");
    }
}

/// The final object of `exec --json`, and what the text summary says.
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub session: String,
    pub outcome: crate::protocol::Outcome,
    pub steps: u32,
    /// The model's own summary, from its `finish` call.
    pub finish: Option<String>,
    /// The text of the last model turn that said anything.
    pub last_message: String,
    /// What the session changed in the work tree; `None` without checkpoints.
    pub changes: Option<Changes>,
    /// Why there are no changes to show (no git repository), when there are none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub no_checkpoints: Option<String>,
    pub escalations: Vec<EscalationLine>,
    pub cost: CostLine,
    pub ask: crate::protocol::AskCounts,
    /// Steps that tried to change a protected file (`protected_touched` events); left out
    /// of `--json` when none did.
    #[serde(skip_serializing_if = "is_zero")]
    pub protected_touched: u32,
    /// Steps whose command changed git metadata that handoff undid; left out of `--json`
    /// when none did. Any makes the exit 5.
    #[serde(skip_serializing_if = "is_zero")]
    pub git_repaired: u32,
    /// Steps whose tree could not be checkpointed (`checkpoint_failed` warnings); left out
    /// of `--json` when none. Any makes the exit 5: what they changed is not in the summary.
    #[serde(skip_serializing_if = "is_zero")]
    pub checkpoint_failed: u32,
    /// How the process exits for this session, by name (`success`, `check_failed`,
    /// `aborted`, `repaired`), so a `--json` reader sees why without the status.
    #[serde(serialize_with = "exit_name")]
    pub exit: crate::exit::Exit,
    pub log: String,
}

fn exit_name<S: serde::Serializer>(exit: &crate::exit::Exit, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(exit.name())
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl Summary {
    /// Builds the summary from the session's end, its tally and its repository.
    pub fn new(
        end: &SessionEnd,
        tally: Tally,
        repo: &std::path::Path,
        log: &std::path::Path,
    ) -> Summary {
        let (changes, no_checkpoints) = match changes(repo, &tally.session) {
            Ok(c) => (Some(c), None),
            Err(why) => (None, Some(why)),
        };
        Summary {
            kind: "summary",
            session: tally.session,
            outcome: end.outcome,
            steps: end.steps,
            finish: tally.finish,
            last_message: tally.last_message,
            changes,
            no_checkpoints,
            escalations: tally.escalations,
            cost: tally.cost,
            ask: end.ask,
            protected_touched: tally.protected_touched,
            git_repaired: tally.git_repaired,
            checkpoint_failed: tally.checkpoint_failed,
            exit: crate::exit::Exit::for_session(
                end.outcome,
                tally.git_repaired + tally.checkpoint_failed,
            ),
            log: log.display().to_string(),
        }
    }

    /// What `exec -o FILE` writes: the `finish` summary, else the last message.
    pub fn final_text(&self) -> &str {
        self.finish.as_deref().unwrap_or(&self.last_message)
    }
}
