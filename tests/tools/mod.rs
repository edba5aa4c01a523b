//! Agent tools, path confinement, checkpoints and the `run` sandbox.

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
