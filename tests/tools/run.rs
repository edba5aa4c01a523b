//! `run`: exit codes, combined output tail, timeouts that kill the whole process group.

use std::time::{Duration, Instant};

use handoff::agent::tools::OutcomeKind;
use serde_json::json;

use super::{call, workspace, workspace_with};

#[tokio::test]
async fn exit_code_and_both_streams_are_reported_from_the_repo_root() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = workspace(dir.path());
    let out = call(
        &ws,
        "run",
        json!({"command": "pwd; echo out; echo err >&2; exit 3"}),
    )
    .await;
    assert_eq!(out.kind, OutcomeKind::ToolError, "{out:?}");
    assert!(!out.ok && out.writes);
    let root = ws.root().display().to_string();
    assert_eq!(out.output, format!("exit code: 3\n{root}\nout\nerr\n"));
    let killed = call(&ws, "run", json!({"command": "kill -TERM $$"})).await;
    assert_eq!(killed.output, "killed by signal 15\n(no output)");
    let ok = call(&ws, "run", json!({"command": "true"})).await;
    assert!(ok.ok);
    assert_eq!(ok.output, "exit code: 0\n(no output)");
}

#[tokio::test]
async fn long_output_keeps_the_tail() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = workspace_with(dir.path(), |c| c.output_cap_bytes = 300);
    let out = call(&ws, "run", json!({"command": "seq 1 5000"})).await;
    assert!(out.ok, "{out:?}");
    assert!(out.output.ends_with("4999\n5000\n"), "{}", out.output);
    assert!(!out.output.contains("\n1\n"));
    let total: usize = (1..=5000).map(|i: u32| i.to_string().len() + 1).sum();
    assert!(
        out.output
            .contains(&format!("[output was {total} bytes; showing the last 300]")),
        "{}",
        out.output
    );
}

#[tokio::test]
async fn a_timeout_kills_the_whole_process_group() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = workspace(dir.path());
    let started = Instant::now();
    let out = call(
        &ws,
        "run",
        json!({"command": "sleep 30 & echo $! > bg.pid; echo started; sleep 30", "timeout_s": 1}),
    )
    .await;
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(out.kind, OutcomeKind::TimedOut, "{out:?}");
    assert!(
        out.output.starts_with("timed out after 1s"),
        "{}",
        out.output
    );
    assert!(out.output.contains("started"), "{}", out.output);
    let pid: i32 = std::fs::read_to_string(dir.path().join("bg.pid"))
        .expect("pid file")
        .trim()
        .parse()
        .expect("pid");
    // The background child must be gone (allow the kernel a moment to reap it).
    let mut alive = true;
    for _ in 0..50 {
        alive = is_alive(pid);
        if !alive {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(!alive, "background process {pid} survived the timeout");
}

/// Whether `pid` is a live (not zombie) process, from /proc.
fn is_alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

#[tokio::test]
async fn the_timeout_cannot_exceed_the_configured_limit() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = workspace_with(dir.path(), |c| c.command_timeout_s = 1);
    let started = Instant::now();
    let out = call(&ws, "run", json!({"command": "sleep 20", "timeout_s": 600})).await;
    assert_eq!(out.kind, OutcomeKind::TimedOut);
    assert!(started.elapsed() < Duration::from_secs(10));
}

#[tokio::test]
async fn a_background_child_holding_the_pipe_does_not_hang_the_tool() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = workspace(dir.path());
    let started = Instant::now();
    let out = call(
        &ws,
        "run",
        json!({"command": "(sleep 30; echo late) & echo now"}),
    )
    .await;
    assert!(out.ok, "{out:?}");
    assert!(out.output.contains("now") && !out.output.contains("late"));
    assert!(started.elapsed() < Duration::from_secs(10));
}

#[tokio::test]
async fn hidden_variables_do_not_reach_commands() {
    let dir = tempfile::tempdir().expect("tempdir");
    // HOME is set in any test environment; hiding it shows the mechanism works.
    let ws = super::workspace(dir.path()).hide_env(["HOME"]);
    assert!(ws.hidden_env().contains(&"HOME".to_string()));
    let out = call(&ws, "run", json!({"command": "echo ${HOME-unset}"})).await;
    assert_eq!(out.output, "exit code: 0\nunset\n");
}

#[tokio::test]
async fn outputs_that_quote_long_input_are_capped_too() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = workspace_with(dir.path(), |c| c.output_cap_bytes = 256);
    let long = "x".repeat(10_000);
    super::write(dir.path(), "a", "z\n");
    let out = ws
        .execute(
            "apply_patch",
            &json!({"patch": format!("--- a\n+++ a\n@@ -1 +1 @@\n-{long}\n+y\n")}).to_string(),
        )
        .await;
    assert!(!out.ok);
    assert!(out.output.len() <= 256 + 512 + 64, "{}", out.output.len());
    assert!(out.output.contains("[output cut at"), "{}", out.output);
}
