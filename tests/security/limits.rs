//! Issue 32, Deliver 7: the caps on what one `run` call may use (`agent.max_write_mib`,
//! `agent.max_processes`, `agent.max_memory_mib`), through the real binary as root and as
//! `nobody`: the command is stopped, the tool result says which cap and which key, handoff
//! lives on to a whole log, and a file cut at the cap is not copied into a checkpoint.

use std::path::Path;

use super::hostile::{Ended, exec_configured, python, users, who};
use crate::agent::support::repo;

/// One hostile call with the caps set by `tweak`, as `user`.
async fn capped(
    command: &str,
    dir: &Path,
    user: Option<u32>,
    tweak: impl Fn(&mut handoff::config::AgentConfig),
) -> Ended {
    exec_configured(command, dir, user, true, |c| tweak(&mut c.agent), |_| {}).await
}

/// Runs `command` once as each user with the caps `tweak` sets, and checks handoff ended
/// on its own with its log whole. Returns who ran it, what the session left and its
/// repository.
async fn ran_as_each(
    command: &str,
    tweak: impl Fn(&mut handoff::config::AgentConfig),
) -> Vec<(&'static str, Ended, tempfile::TempDir)> {
    let mut out = Vec::new();
    for user in users() {
        let who = who(user);
        let dir = repo(&[("notes.txt", "hi\n")]);
        let s = capped(command, dir.path(), user, &tweak).await;
        survived(&s, who);
        out.push((who, s, dir));
    }
    out
}

/// [`ran_as_each`], and checks the call was stopped for `key`: the run's result says so.
async fn stopped_for(
    command: &str,
    key: &str,
    tweak: impl Fn(&mut handoff::config::AgentConfig),
) -> Vec<(&'static str, Ended, tempfile::TempDir)> {
    let ran = ran_as_each(command, tweak).await;
    for (who, s, _) in &ran {
        assert!(
            s.output.contains("stopped") && s.output.contains(key),
            "{who}: the result says why ({key}): {}",
            s.output
        );
    }
    ran
}

/// handoff ended on its own (0 or 1), and its log ends with `session_ended`.
fn survived(s: &Ended, who: &str) {
    assert!(
        matches!(s.code, Some(0 | 1)),
        "{who}: handoff ended by {:?}: {}",
        s.code,
        s.log
    );
    let last = s.log.lines().last().unwrap_or_default();
    assert!(
        last.contains("\"session_ended\""),
        "{who}: the log is not whole: {last}"
    );
}

/// The paths the session's checkpoints hold, across every `refs/handoff` commit.
fn checkpointed(dir: &Path) -> String {
    let git = |args: &[&str]| {
        let out = std::process::Command::new("git")
            .args(["-c", "safe.directory=*", "-C"])
            .arg(dir)
            .args(args)
            .output()
            .expect("git");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let refs = git(&["for-each-ref", "--format=%(objectname)", "refs/handoff/"]);
    assert!(!refs.trim().is_empty(), "the session left checkpoints");
    refs.lines()
        .map(|r| git(&["ls-tree", "-r", "--name-only", r]))
        .collect()
}

#[tokio::test]
async fn a_write_past_the_file_cap_is_stopped_and_not_checkpointed() {
    let ran = stopped_for(
        "head -c 50000000 /dev/zero > big.bin",
        "agent.max_write_mib",
        |a| a.max_write_mib = 16,
    )
    .await;
    for (who, _, dir) in ran {
        let size = std::fs::metadata(dir.path().join("big.bin")).map_or(0, |m| m.len());
        assert!(
            size <= 16 * 1024 * 1024,
            "{who}: the file grew past the cap: {size}"
        );
        let held = checkpointed(dir.path());
        assert!(
            held.contains("notes.txt") && !held.contains("big.bin"),
            "{who}: a checkpoint kept the cut file: {held}"
        );
    }
}

#[tokio::test]
async fn a_command_past_the_process_cap_is_stopped_whole() {
    let ran = stopped_for(
        "for i in $(seq 1 60); do sleep 60 & done; wait; echo ALL-WAITED",
        "agent.max_processes",
        |a| a.max_processes = 20,
    )
    .await;
    for (who, s, _) in ran {
        assert!(
            !s.output.contains("ALL-WAITED"),
            "{who}: ran to its end: {}",
            s.output
        );
    }
}

/// Issue 50, item 13: threads count against the cap, as processes do (each one takes a
/// pid from the machine's pool): one process with 60 threads under a cap of 20 is stopped.
#[tokio::test]
async fn a_command_past_the_process_cap_in_threads_is_stopped() {
    if !python() {
        eprintln!("skipped: the thread case starts threads with python3, which is not installed");
        return;
    }
    let threads = r#"python3 -c 'import threading, time; [threading.Thread(target=time.sleep, args=(60,), daemon=True).start() for _ in range(60)]; time.sleep(60); print("ALL-WAITED")'"#;
    let ran = stopped_for(threads, "agent.max_processes", |a| a.max_processes = 20).await;
    for (who, s, _) in ran {
        assert!(
            !s.output.contains("ALL-WAITED"),
            "{who}: ran to its end: {}",
            s.output
        );
    }
}

/// Issue 50, item 14: an anonymous file's pages are memory no resident set shows, so
/// `memfd_create` is refused (seccomp) rather than left outside the memory cap.
#[tokio::test]
async fn memfd_create_is_refused_so_its_pages_cannot_pass_the_memory_cap() {
    if !python() {
        eprintln!("skipped: needs python3");
        return;
    }
    let command = r#"python3 -c 'import os; fd = os.memfd_create("x"); os.write(fd, b"x" * (8 << 20)); print("MEMFD-MADE")'"#;
    for (who, s, _) in ran_as_each(command, |a| a.max_memory_mib = 64).await {
        assert!(
            !s.output.contains("MEMFD-MADE") && s.output.contains("Operation not permitted"),
            "{who}: {}",
            s.output
        );
    }
}

#[tokio::test]
async fn a_command_past_the_memory_cap_is_stopped() {
    if !python() {
        eprintln!("skipped: the memory cases allocate with python3, which is not installed");
        return;
    }
    // Four processes of ~40 MiB each: none reaches the per-process limit, the tree does.
    let tree = "for i in 1 2 3 4; do python3 -c 'import time; b = bytearray(30 << 20); time.sleep(60)' & done; \
                wait; echo ALL-WAITED";
    // One process asking for more than the cap at once is refused by the kernel.
    let one = "python3 -c 'b = bytearray(400 << 20); print(\"ALL-WAITED\")'";
    // The tree is stopped by the poll ("used more"), the one process by the kernel's
    // refusal ("asked for more").
    for (command, how) in [
        (tree, "used more than 96 MiB"),
        (one, "asked for more than 96 MiB"),
    ] {
        let ran = stopped_for(command, "agent.max_memory_mib", |a| a.max_memory_mib = 96).await;
        for (who, s, _) in ran {
            assert!(
                s.output.contains(how) && !s.output.contains("ALL-WAITED"),
                "{who}: {command}: {}",
                s.output
            );
        }
    }
}
