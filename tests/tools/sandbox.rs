//! The Landlock sandbox of `run` (issue 10): writes outside the repository fail.

use handoff::agent::sandbox::{self, SandboxStatus};
use serde_json::json;

use super::{call, read, workspace_with};

#[tokio::test]
async fn a_sandboxed_command_cannot_write_outside_the_repository() {
    if let SandboxStatus::Unavailable { reason } = sandbox::status() {
        eprintln!("skipped: {reason}");
        return;
    }
    let repo = tempfile::tempdir().expect("repo");
    let outside = tempfile::tempdir().expect("outside");
    let ws = workspace_with(repo.path(), |c| c.sandbox = true);
    assert!(ws.sandbox_note().is_some_and(|n| n.contains("Landlock")));
    let target = outside.path().join("escaped.txt");
    let cmd = format!("echo pwned > '{}'", target.display());
    let out = call(&ws, "run", json!({"command": cmd})).await;
    assert!(!out.ok, "{out:?}");
    // Landlock's EACCES, or EROFS where the read-only mount view refuses it first.
    assert!(
        out.output.contains("Permission denied") || out.output.contains("Read-only file system"),
        "{}",
        out.output
    );
    assert!(
        !target.exists(),
        "the write outside the repository went through"
    );

    // Inside the repository, the temp dir and /dev/null, writes work.
    let out = call(
        &ws,
        "run",
        json!({"command": "echo ok > inside.txt && echo t > \"$TMPDIR/t\" && cat \"$TMPDIR/t\" && echo x > /dev/null"}),
    )
    .await;
    assert!(out.ok, "{out:?}");
    assert_eq!(read(repo.path(), "inside.txt"), "ok\n");
    // Reads outside are allowed (toolchains live there).
    let out = call(
        &ws,
        "run",
        json!({"command": "cat /etc/hostname >/dev/null || true; ls / >/dev/null"}),
    )
    .await;
    assert!(out.ok, "{out:?}");
}

#[tokio::test]
async fn without_the_switch_commands_are_not_confined() {
    let repo = tempfile::tempdir().expect("repo");
    let outside = tempfile::tempdir().expect("outside");
    let ws = workspace_with(repo.path(), |c| c.sandbox = false);
    assert_eq!(ws.sandbox_note(), None);
    let target = outside.path().join("free.txt");
    let out = call(
        &ws,
        "run",
        json!({"command": format!("echo y > '{}'", target.display())}),
    )
    .await;
    assert!(out.ok, "{out:?}");
    assert!(target.exists());
}
