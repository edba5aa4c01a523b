//! Drives `handoff demo` in a real terminal (tmux): waits for the operator question,
//! captures the pane and checks that the Competence panel shows both numbers, then quits
//! with Ctrl-C and checks the UI leaves.
//!
//! Skips with a message when tmux is not installed or the binary has no `demo`
//! subcommand yet. Run with `--nocapture` to see the captured screen.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_handoff");

/// Kills the tmux session however the test ends.
struct Session(String);

impl Drop for Session {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["kill-session", "-t", &self.0])
            .status();
    }
}

fn tmux(args: &[&str]) -> Option<String> {
    let out = Command::new("tmux").args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

fn capture(name: &str) -> String {
    tmux(&["capture-pane", "-p", "-t", name]).unwrap_or_default()
}

fn wait_for(name: &str, what: &str, timeout: Duration) -> Option<String> {
    let start = Instant::now();
    while start.elapsed() < timeout {
        let screen = capture(name);
        if screen.contains(what) {
            return Some(screen);
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    None
}

/// True when `B_t 0.62  τ_t 0.41` (any digits) is on the screen.
fn shows_both_numbers(screen: &str) -> bool {
    let re = regex::Regex::new(r"B_t [01]\.\d\d  τ_t [01]\.\d\d").expect("regex");
    re.is_match(screen)
}

#[test]
fn the_demo_shows_both_numbers_at_the_operator_question() {
    if Command::new("tmux").arg("-V").output().is_err() {
        eprintln!("skipped: tmux is not installed");
        return;
    }
    let has_demo = Command::new(BIN)
        .args(["demo", "--help"])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if !has_demo {
        eprintln!("skipped: this build has no `handoff demo` subcommand");
        return;
    }
    let home = tempfile::tempdir().expect("temp home");
    let name = format!("handoff-test-{}", std::process::id());
    let cmd = format!(
        "env XDG_DATA_HOME={data} XDG_CONFIG_HOME={conf} {BIN} demo; sleep 30",
        data = home.path().join("data").display(),
        conf = home.path().join("config").display(),
    );
    assert!(Path::new(BIN).exists());
    tmux(&[
        "new-session",
        "-d",
        "-s",
        &name,
        "-x",
        "100",
        "-y",
        "30",
        &cmd,
    ])
    .expect("tmux starts");
    let session = Session(name);
    let screen = wait_for(&session.0, "Operator question", Duration::from_secs(90))
        .unwrap_or_else(|| panic!("no operator question; screen:\n{}", capture(&session.0)));
    println!("{screen}");
    assert!(screen.contains("Competence"), "{screen}");
    assert!(shows_both_numbers(&screen), "{screen}");
    assert!(screen.contains("demo: scripted models"), "{screen}");
    tmux(&["send-keys", "-t", &session.0, "C-c"]).expect("send keys");
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(20) && capture(&session.0).contains("Competence") {
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(
        !capture(&session.0).contains("Competence"),
        "the UI did not leave the alternate screen after Ctrl-C"
    );
}

#[test]
fn the_number_pattern_matches_the_panel_text() {
    assert!(shows_both_numbers("│B_t 0.62  τ_t 0.41  optimal │"));
    assert!(!shows_both_numbers("B_t –  τ_t –"));
}
