//! Untrusted input and secrets: parsers that must not panic on what a server or a disk
//! hands them, configs that must say what is wrong and where, keys that must never show,
//! and what a hostile command does to the process around it (escapes, signals, survivors).

pub mod invariants;

use std::path::Path;

/// `handoff exec --repo DIR --config CFG --log LOG TASK`, the one session every test here
/// runs through the binary; each test adds its own environment, stdio and limits.
fn exec_command(dir: &Path, cfg: &Path, log: &Path, task: &str) -> std::process::Command {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_handoff"));
    cmd.arg("exec")
        .arg("--repo")
        .arg(dir)
        .arg("--config")
        .arg(cfg)
        .arg("--log")
        .arg(log)
        .arg(task);
    cmd
}

mod bounds;
mod configs;
mod contain32;
mod escape;
mod frontends;
mod hostile;
mod keys;
mod limits;
mod parsers;
mod planted;
mod signals;
mod streams;
mod through_binary;
