//! `handoff restore SESSION STEP`: put the work tree back to a checkpoint. Refuses over
//! changes no checkpoint of the session holds unless `--force`, which keeps them as a
//! checkpoint of their own first, so every restore can be undone.

use super::args::{RepoArg, repo_error, session_id};
use crate::exit::Exit;

#[derive(clap::Args)]
pub struct Args {
    /// The session id (as the summary prints it), or `last` for the newest.
    session: String,
    /// The step to go back to (0 is the work tree as the session found it), or a kept
    /// name such as the `before-restore-…` a forced restore printed.
    step: String,
    /// Restore even over changes no checkpoint holds (they are kept as a checkpoint first).
    #[arg(long)]
    force: bool,
    #[command(flatten)]
    repo: RepoArg,
}

pub fn run(args: Args) -> anyhow::Result<Exit> {
    let repo = args.repo.open()?;
    let session = session_id(&repo, &args.session)?;
    let r = repo
        .restore_named(&session, &args.step, args.force)
        .map_err(repo_error)?;
    let label = if r.name.parse::<u32>().is_ok() {
        format!("step {}", r.name)
    } else {
        r.name.clone()
    };
    println!(
        "restored {label} of session {} ({} file{} changed); the index, HEAD and branches are untouched",
        r.session,
        r.files_changed,
        if r.files_changed == 1 { "" } else { "s" }
    );
    if let Some(saved) = &r.saved_as {
        println!(
            "your changes are kept as `{saved}`; undo with: handoff restore {} {saved} --repo {}",
            r.session,
            super::args::shell_quote(&repo.workdir().display().to_string())
        );
    }
    Ok(Exit::Success)
}
