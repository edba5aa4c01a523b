//! Untrusted input and secrets: parsers that must not panic on what a server or a disk
//! hands them, configs that must say what is wrong and where, keys that must never show,
//! and what a hostile command does to the process around it (escapes, signals, survivors).

pub mod invariants;

use std::path::Path;

/// `handoff exec --repo DIR --config CFG --log LOG TASK`, the one session every test here
/// runs through the binary; each test adds its own environment, stdio and limits.
fn exec_command(dir: &Path, cfg: &Path, log: &Path, task: &str) -> std::process::Command {
    exec_command_of(
        Path::new(env!("CARGO_BIN_EXE_handoff")),
        dir,
        cfg,
        log,
        task,
    )
}

/// As [`exec_command`], running the binary at `bin`.
fn exec_command_of(
    bin: &Path,
    dir: &Path,
    cfg: &Path,
    log: &Path,
    task: &str,
) -> std::process::Command {
    let mut cmd = std::process::Command::new(bin);
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
mod contain50;
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

/// The handoff binary as another user can start it. A clean clone under `/root` (mode
/// 0700, where CI runs as root) leaves the built binary out of `nobody`'s reach, and the
/// unprivileged cases would fail to spawn rather than test anything: then a copy in a
/// world-readable directory of the temp dir is used, one per build (named by the binary's
/// size and modification time, so a rebuild never runs a stale copy).
fn binary_for_others() -> std::path::PathBuf {
    use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
    let bin = Path::new(env!("CARGO_BIN_EXE_handoff"));
    let reachable = bin
        .ancestors()
        .skip(1)
        .all(|d| std::fs::metadata(d).is_ok_and(|m| m.mode() & 0o001 != 0));
    if reachable {
        return bin.to_path_buf();
    }
    static COPY: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    COPY.get_or_init(|| {
        let meta = std::fs::metadata(bin).expect("the test binary");
        let dir = std::env::temp_dir().join(format!(
            "handoff-for-others-{}-{}",
            meta.len(),
            meta.mtime()
        ));
        let copy = dir.join("handoff");
        if !copy.exists() {
            std::fs::create_dir_all(&dir).expect("mkdir");
            std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).expect("chmod");
            let part = dir.join(format!("handoff.{}", std::process::id()));
            std::fs::copy(bin, &part).expect("copy the binary");
            std::fs::set_permissions(&part, std::fs::Permissions::from_mode(0o755)).expect("chmod");
            // A rename, so a parallel test never starts a half-written copy.
            std::fs::rename(&part, &copy).expect("rename");
        }
        copy
    })
    .clone()
}
