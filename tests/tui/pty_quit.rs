//! Leaving `handoff run` while a command runs (the review's M7, and SIGHUP from M6), in a
//! real pty this test owns: `q` then `y`, SIGINT, SIGTERM and SIGHUP each end the process
//! within a few seconds, not when the 30 s command ends; the command's tree is killed, the
//! log ends `session_ended: aborted`, and the terminal leaves the alternate screen.

use std::time::{Duration, Instant};

use handoff::protocol::{Event, Outcome};

use super::pty::{BIN, Handoff, Pty, RunArgs};
use crate::agent::support::{config, one_command, procs, read_log, repo, servers, write_config};

/// Leaves the alternate screen (what the terminal guard writes when it restores).
const LEAVE_ALTERNATE: &str = "\x1b[?1049l";

/// How the test leaves the TUI.
#[derive(Debug, Clone, Copy)]
enum Leave {
    Keys,
    Signal(i32),
}

async fn leave_while_a_command_runs(how: Leave) {
    let (j, s) = servers(
        one_command("sleep 30"),
        handoff::demo::server::Script::new(vec![]),
    )
    .await;
    let home = tempfile::tempdir().expect("home");
    let cfg = write_config(home.path(), &config(&j, &s));
    let dir = repo(&[("notes.txt", "hi\n")]);
    let log = home.path().join("s.jsonl");
    let args = RunArgs {
        repo: dir.path(),
        config: &cfg,
        log: &log,
        task: "sleep a while",
        home: home.path(),
    };
    let mut tui = Handoff::run(Pty::open(), BIN.as_ref(), &args);
    let shell_pid = tui.shell_pid();
    let sleeper = procs::wait_for_descendant(shell_pid, "sleep 30", Duration::from_secs(30))
        .await
        .unwrap_or_else(|| panic!("{how:?}: the command never started"));
    let handoff = tui.handoff_pid(BIN.as_ref()).expect("handoff's pid");
    let start = Instant::now();
    match how {
        Leave::Keys => {
            tui.press(b"q");
            tokio::time::sleep(Duration::from_millis(300)).await;
            tui.press(b"y");
        }
        // SAFETY: kill(2) on the handoff this test started.
        Leave::Signal(signal) => unsafe {
            libc::kill(handoff, signal);
        },
    }
    let exited = loop {
        if !procs::alive(handoff) {
            break Some(start.elapsed());
        }
        if start.elapsed() > Duration::from_secs(10) {
            break None;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let orphaned = procs::alive(sleeper);
    procs::kill_all(&[sleeper, handoff]);
    let seen = tui.finish().await.screen;
    let took = exited.unwrap_or_else(|| panic!("{how:?}: handoff still ran 10 s later"));
    assert!(
        took < Duration::from_secs(3),
        "{how:?}: handoff took {took:?} to exit"
    );
    assert!(!orphaned, "{how:?}: `sleep 30` outlived handoff");
    match read_log(&log).pop() {
        Some(Event::SessionEnded { outcome, .. }) => {
            assert_eq!(outcome, Outcome::Aborted, "{how:?}")
        }
        other => panic!("{how:?}: the log ends with {other:?}, not session_ended"),
    }
    assert!(
        seen.contains(LEAVE_ALTERNATE),
        "{how:?}: the terminal was not restored"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quitting_with_q_y_does_not_wait_for_the_command() {
    leave_while_a_command_runs(Leave::Keys).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigint_sigterm_and_sighup_end_the_tui_at_once() {
    for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        leave_while_a_command_runs(Leave::Signal(signal)).await;
    }
}
