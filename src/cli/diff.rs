//! `handoff diff SESSION [STEP]`: what one step of a session changed, or with no step what
//! the whole session changed, read from its checkpoints in the repository.

use super::args::{JsonArg, RepoArg, repo_error, session_id};
use super::output::{Shape, emit};
use crate::exit::Exit;

#[derive(clap::Args)]
pub struct Args {
    /// The session id (as the summary prints it), or `last` for the newest.
    session: String,
    /// One step (its change since the step before); without it, the whole session.
    step: Option<u32>,
    /// Only the diffstat, not the lines.
    #[arg(long)]
    stat: bool,
    #[command(flatten)]
    repo: RepoArg,
    #[command(flatten)]
    json: JsonArg,
}

pub fn run(args: Args) -> anyhow::Result<Exit> {
    let repo = args.repo.open()?;
    let session = session_id(&repo, &args.session)?;
    let d = repo
        .checkpoint_diff(&session, args.step)
        .map_err(repo_error)?;
    let doc = serde_json::json!({
        "session": d.session,
        "from": d.from,
        "to": d.to,
        "files": d.diff.files,
        "insertions": d.diff.insertions(),
        "deletions": d.diff.deletions(),
        "patch": (!args.stat).then(|| d.diff.text()),
    });
    emit(args.json.json, Shape::Document, &doc, || {
        let mut out = format!("session {}: {} → {}\n", d.session, d.from, d.to);
        if d.diff.is_empty() {
            out.push_str(" no change\n");
            return out;
        }
        out.push_str(&d.diff.stat());
        if !args.stat {
            out.push('\n');
            out.push_str(&d.diff.text());
        }
        out
    })?;
    Ok(Exit::Success)
}
