//! Agent tools, path confinement, checkpoints and the `run` sandbox.

mod checkpoints;
mod confine;
mod contain;
mod exec;
mod patch;
mod properties;
mod repo;
mod run;
mod sandbox;

use std::path::Path;

use handoff::agent::tools::{ToolOutcome, Workspace};
use handoff::config::AgentConfig;

/// A workspace over `root` with the default limits, the sandbox off unless asked.
pub fn workspace(root: &Path) -> Workspace {
    workspace_with(root, |_| {})
}

pub fn workspace_with(root: &Path, edit: impl FnOnce(&mut AgentConfig)) -> Workspace {
    let mut config = AgentConfig {
        sandbox: false,
        ..AgentConfig::default()
    };
    edit(&mut config);
    Workspace::new(root, &config).expect("workspace")
}

pub async fn call(ws: &Workspace, name: &str, args: serde_json::Value) -> ToolOutcome {
    ws.execute(name, &args.to_string()).await
}

pub fn write(root: &Path, rel: &str, content: &str) {
    let path = root.join(rel);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).expect("mkdir");
    }
    std::fs::write(path, content).expect("write");
}

pub fn read(root: &Path, rel: &str) -> String {
    std::fs::read_to_string(root.join(rel)).expect("read")
}

/// Stages everything (as `git add -A`) and commits it on HEAD, as a user would.
pub fn commit_all(repo: &git2::Repository, message: &str) -> git2::Oid {
    let mut index = repo.index().expect("index");
    index
        .add_all(["*"], git2::IndexAddOption::DEFAULT, None)
        .expect("add");
    index.write().expect("write index");
    let tree = repo
        .find_tree(index.write_tree().expect("tree"))
        .expect("find tree");
    let sig = git2::Signature::now("t", "t@example.com").expect("sig");
    let parent = repo.head().ok().and_then(|h| h.peel_to_commit().ok());
    let parents: Vec<&git2::Commit> = parent.iter().collect();
    repo.commit(Some("HEAD"), &sig, &sig, message, &tree, &parents)
        .expect("commit")
}
