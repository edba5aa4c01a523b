//! Leaving `handoff run` while a command runs (the review's M7, and SIGHUP from M6), in a
//! real pty this test owns: `q` then `y`, SIGINT, SIGTERM and SIGHUP each end the process
//! within a few seconds, not when the 30 s command ends; the command's tree is killed, the
//! log ends `session_ended: aborted`, and the terminal leaves the alternate screen.

use std::io::{Read as _, Write as _};
use std::os::fd::{FromRawFd as _, OwnedFd};
use std::process::Stdio;
use std::time::{Duration, Instant};

use handoff::protocol::{Event, Outcome};

use crate::agent::support::{config, one_command, procs, read_log, repo, servers, write_config};

const BIN: &str = env!("CARGO_BIN_EXE_handoff");

/// Leaves the alternate screen (what the terminal guard writes when it restores).
const LEAVE_ALTERNATE: &str = "\x1b[?1049l";

/// How the test leaves the TUI.
#[derive(Debug, Clone, Copy)]
enum Leave {
    Keys,
    Signal(i32),
}

/// A pty pair, 100x30, as `(master, slave)`.
fn pty() -> (std::fs::File, OwnedFd) {
    let (mut master, mut slave) = (0, 0);
    let size = libc::winsize {
        ws_row: 30,
        ws_col: 100,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: openpty fills two descriptors; the name and termios arguments are null and
    // the window size is a local.
    let rc = unsafe {
        libc::openpty(
            &mut master,
            &mut slave,
            std::ptr::null_mut(),
            std::ptr::null(),
            &size,
        )
    };
    assert_eq!(rc, 0, "openpty");
    // SAFETY: fresh descriptors from openpty, owned here.
    unsafe {
        (
            std::fs::File::from_raw_fd(master),
            OwnedFd::from_raw_fd(slave),
        )
    }
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
    let (master, slave) = pty();
    let stdio = || -> Stdio { Stdio::from(slave.try_clone().expect("dup")) };
    // `setsid -c` makes the pty handoff's controlling terminal, as a login shell would;
    // `sh` stays in between, so handoff is not this test's child.
    let mut shell = std::process::Command::new("sh")
        .arg("-c")
        .arg("setsid -w -c \"$@\"; true")
        .arg("sh")
        .arg(BIN)
        .arg("run")
        .arg("--repo")
        .arg(dir.path())
        .arg("--config")
        .arg(&cfg)
        .arg("--log")
        .arg(&log)
        .arg("sleep a while")
        .env("XDG_CONFIG_HOME", home.path().join("config"))
        .env("XDG_DATA_HOME", home.path().join("data"))
        .env("TERM", "xterm-256color")
        .stdin(stdio())
        .stdout(stdio())
        .stderr(stdio())
        .spawn()
        .expect("spawn");
    drop(slave);
    let mut input = master.try_clone().expect("dup master");
    let reader = std::thread::spawn(move || {
        let mut master = master;
        let mut seen = Vec::new();
        let mut buf = [0u8; 4096];
        while let Ok(n) = master.read(&mut buf) {
            if n == 0 {
                break;
            }
            seen.extend_from_slice(&buf[..n]);
        }
        String::from_utf8_lossy(&seen).into_owned()
    });
    let shell_pid = i32::try_from(shell.id()).expect("pid");
    let sleeper = procs::wait_for_descendant(shell_pid, "sleep 30", Duration::from_secs(30))
        .await
        .unwrap_or_else(|| panic!("{how:?}: the command never started"));
    let handoff = procs::descendants(shell_pid)
        .into_iter()
        .find(|&p| procs::cmdline(p).starts_with(BIN))
        .expect("handoff's pid");
    let start = Instant::now();
    match how {
        Leave::Keys => {
            input.write_all(b"q").expect("q");
            tokio::time::sleep(Duration::from_millis(300)).await;
            input.write_all(b"y").expect("y");
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
    let _ = tokio::task::spawn_blocking(move || shell.wait()).await;
    drop(input);
    let seen = reader.join().expect("reader");
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
