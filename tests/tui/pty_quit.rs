//! Leaving `handoff run` while a command runs (the review's M7, and SIGHUP from M6), in a
//! real pty this test owns: `q` then `y`, SIGINT, SIGTERM and SIGHUP each end the process
//! within a few seconds, not when the 30 s command ends; the command's tree is killed, the
//! log ends `session_ended: aborted`, and the terminal leaves the alternate screen. When
//! the first signal cannot end the TUI (its terminal takes no more output), a second one
//! does, as in `exec`.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use handoff::demo::server::{Script, ScriptedServer};
use handoff::protocol::{Event, Outcome};

use super::pty::{Handoff, Pty, RunArgs, bin};
use crate::agent::support::{config, one_command, procs, read_log, repo, servers, write_config};

/// Leaves the alternate screen (what the terminal guard writes when it restores).
const LEAVE_ALTERNATE: &str = "\x1b[?1049l";

/// How the test leaves the TUI.
#[derive(Debug, Clone, Copy)]
enum Leave {
    Keys,
    Signal(i32),
}

/// `handoff run` on a pty while its junior's one command, `sleep 30`, runs.
struct Sleeping {
    tui: Handoff,
    handoff: i32,
    sleeper: i32,
    log: PathBuf,
    _kept: (
        ScriptedServer,
        ScriptedServer,
        tempfile::TempDir,
        tempfile::TempDir,
    ),
}

async fn start_sleeping() -> Sleeping {
    let (j, s) = servers(one_command("sleep 30"), Script::new(vec![])).await;
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
    let bin = bin();
    let tui = Handoff::run(Pty::open(), &bin, &args);
    let sleeper = procs::wait_for_descendant(tui.shell_pid(), "sleep 30", Duration::from_secs(30))
        .await
        .expect("the command never started");
    let handoff = tui.handoff_pid(&bin).expect("handoff's pid");
    Sleeping {
        tui,
        handoff,
        sleeper,
        log,
        _kept: (j, s, home, dir),
    }
}

/// How long after `start` `pid` was gone, if it went within 10 s.
async fn exit_of(pid: i32, start: Instant) -> Option<Duration> {
    while start.elapsed() < Duration::from_secs(10) {
        if !procs::alive(pid) {
            return Some(start.elapsed());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    None
}

async fn leave_while_a_command_runs(how: Leave) {
    let Sleeping {
        mut tui,
        handoff,
        sleeper,
        log,
        _kept,
    } = start_sleeping().await;
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
    let exited = exit_of(handoff, start).await;
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

/// The TUI blocks drawing to a terminal that takes no more output (nothing reads the pty,
/// as with a stalled connection), so the first SIGINT cannot end it; the second kills the
/// command and exits 3 at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_sigint_ends_a_tui_whose_terminal_takes_no_output() {
    let Sleeping {
        tui,
        handoff,
        sleeper,
        _kept,
        ..
    } = start_sleeping().await;
    // Each resize is a whole redraw; a few hundred kilobytes fill the pty's buffers.
    tui.pause_reading(true);
    for i in 0..200 {
        tui.resize(if i % 2 == 0 { 101 } else { 100 }, 30);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // SAFETY: kill(2) on the handoff this test started.
    unsafe { libc::kill(handoff, libc::SIGINT) };
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let held = procs::alive(handoff);
    let start = Instant::now();
    // SAFETY: as above.
    unsafe { libc::kill(handoff, libc::SIGINT) };
    let exited = exit_of(handoff, start).await;
    let orphaned = procs::alive(sleeper);
    procs::kill_all(&[sleeper, handoff]);
    let ended = tui.finish().await;
    assert!(
        held,
        "the first SIGINT ended handoff: its terminal never filled, so this tested nothing"
    );
    let took = exited.expect("a second SIGINT did not end handoff within 10 s");
    assert!(
        took < Duration::from_secs(3),
        "handoff took {took:?} to exit after the second SIGINT"
    );
    assert_eq!(ended.code, Some(3), "the second signal's exit code");
    assert!(!orphaned, "`sleep 30` outlived handoff");
}
