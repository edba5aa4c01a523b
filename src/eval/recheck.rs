//! `eval`'s own check of the tree a session left, when the session did not end with a
//! pass (it can stop at its budget with correct work in the tree): the label of the run.
//!
//! That tree is the model's: its tests, build scripts and `conftest.py` run when the
//! check runs, and it may hold links planted where the hidden tests go. So the check runs
//! exactly as the session's own check does (issue 50, items 1 and 2): through the
//! session's [`Workspace`], in the sandbox `run` commands get (unless the config turns the
//! check's sandbox off), without the API key variables, and the hidden tests are laid
//! beneath the repository's directory handle without following a link (a planted
//! `tests -> ~/elsewhere` makes the lay fail, and the run is not passed, instead of
//! writing outside).

use std::path::Path;

use crate::agent::overlay::CheckOverlay;
use crate::agent::tools::Workspace;
use crate::agent::tools::run::run_shell;
use crate::config::Config;

/// Whether `check` passes on `repo` with `hidden` laid over it first; false when the
/// workspace cannot be made or a hidden file cannot be laid.
pub async fn passes(config: &Config, check: &str, hidden: &CheckOverlay, repo: &Path) -> bool {
    let key_vars: Vec<String> = [&config.junior.api_key_env, &config.senior.api_key_env]
        .into_iter()
        .flatten()
        .cloned()
        .collect();
    let Ok(workspace) = Workspace::new(repo, &config.agent) else {
        return false;
    };
    let workspace = workspace
        .hide_env(key_vars)
        .with_check_overlay(hidden.clone());
    if !workspace.lay_check_overlay().is_empty() {
        return false;
    }
    run_shell(&workspace.check_command(check))
        .await
        .is_ok_and(|r| r.success())
}
