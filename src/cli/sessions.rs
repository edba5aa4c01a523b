//! `handoff sessions list|prune`: the sessions that keep checkpoints in a repository, and
//! removing old ones (by age and count; a session start does the same with the limits of
//! `[checkpoints]`).

use std::time::SystemTime;

use clap::Subcommand;

use super::args::{Globals, JsonArg, RepoArg, repo_error};
use super::output::{Shape, emit};
use crate::exit::Exit;

#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: Sessions,
}

#[derive(Subcommand)]
enum Sessions {
    /// The sessions with checkpoints in the repository, newest first.
    List {
        #[command(flatten)]
        repo: RepoArg,
        #[command(flatten)]
        json: JsonArg,
    },
    /// Remove the checkpoints of old sessions (refs only; `git gc` collects the objects).
    Prune {
        /// Remove sessions older than this many days (default: checkpoints.max_age_days;
        /// 0: no age limit).
        #[arg(long, value_name = "DAYS")]
        max_age_days: Option<u32>,
        /// Keep at most this many sessions, the newest (default: checkpoints.max_sessions;
        /// 0: no count limit).
        #[arg(long, value_name = "N")]
        max_sessions: Option<u32>,
        #[command(flatten)]
        repo: RepoArg,
        #[command(flatten)]
        json: JsonArg,
    },
}

pub fn run(args: Args, globals: &Globals) -> anyhow::Result<Exit> {
    match args.command {
        Sessions::List { repo, json } => list(&repo, json.json),
        Sessions::Prune {
            max_age_days,
            max_sessions,
            repo,
            json,
        } => {
            let mut limits = globals.load()?.checkpoints;
            limits.max_age_days = max_age_days.unwrap_or(limits.max_age_days);
            limits.max_sessions = max_sessions.unwrap_or(limits.max_sessions);
            let repo = repo.open()?;
            let report = repo
                .prune(limits.policy(), SystemTime::now())
                .map_err(repo_error)?;
            let doc = serde_json::json!({
                "removed": report.removed,
                "refs_deleted": report.refs_deleted,
                "kept": report.kept,
            });
            emit(json.json, Shape::Document, &doc, || {
                format!(
                    "removed {} session(s) ({} refs), kept {}\n",
                    report.removed.len(),
                    report.refs_deleted,
                    report.kept
                )
            })?;
            Ok(Exit::Success)
        }
    }
}

fn list(repo: &RepoArg, json: bool) -> anyhow::Result<Exit> {
    let repo = repo.open()?;
    let sessions = repo.list_sessions().map_err(repo_error)?;
    let now = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX));
    let doc: Vec<serde_json::Value> = sessions
        .iter()
        .map(|s| {
            serde_json::json!({
                "session": s.session,
                "last_step": s.last_step(),
                "checkpoints": s.checkpoints.iter().map(|c| &c.name).collect::<Vec<_>>(),
                "newest": s.newest(),
            })
        })
        .collect();
    emit(json, Shape::Document, &doc, || {
        if sessions.is_empty() {
            return format!(
                "no session has checkpoints in {}\n",
                repo.workdir().display()
            );
        }
        let mut out = format!("{:<20} {:>5}  {:<10} kept\n", "session", "steps", "age");
        for s in &sessions {
            let kept: Vec<&str> = s
                .checkpoints
                .iter()
                .filter(|c| c.step.is_none())
                .map(|c| c.name.as_str())
                .collect();
            out.push_str(&format!(
                "{:<20} {:>5}  {:<10} {}\n",
                s.session,
                s.last_step().map_or("-".into(), |n| n.to_string()),
                s.newest().map_or("unknown".into(), |t| age(now - t)),
                kept.join(", ")
            ));
        }
        out
    })?;
    Ok(Exit::Success)
}

/// `45s ago`, `3h ago`, `12d ago`.
fn age(secs: i64) -> String {
    let s = secs.max(0);
    match s {
        0..60 => format!("{s}s ago"),
        60..3600 => format!("{}m ago", s / 60),
        3600..86400 => format!("{}h ago", s / 3600),
        _ => format!("{}d ago", s / 86400),
    }
}
