//! The approval prompt in a real terminal (tmux): a command padded with 400 spaces is
//! shown whole, Enter does not approve it, `y` does (review finding M2).
//!
//! Skips with a message when tmux is not installed.

use std::process::Command;
use std::time::{Duration, Instant};

use handoff::demo::server::Script;

use crate::agent::support::{FILES, config, one_command, repo, servers, write_config};

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

fn screen(name: &str) -> String {
    tmux(&["capture-pane", "-p", "-t", name]).unwrap_or_default()
}

async fn wait_for(name: &str, what: &str) -> Option<String> {
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(60) {
        let s = screen(name);
        if s.contains(what) {
            return Some(s);
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    None
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_padded_command_is_shown_whole_and_enter_does_not_approve_it() {
    if Command::new("tmux").arg("-V").output().is_err() {
        eprintln!("skipped: tmux is not installed");
        return;
    }
    let command = format!("true{}; echo approved > ran.txt", " ".repeat(400));
    let (j, s) = servers(one_command(&command), Script::new(vec![])).await;
    let home = tempfile::tempdir().expect("tempdir");
    let dir = repo(&FILES);
    let mut cfg = config(&j, &s);
    cfg.agent.approval = handoff::config::Approval::Always;
    let cfg = write_config(home.path(), &cfg);
    let name = format!("handoff-approval-test-{}", std::process::id());
    let cmd = format!(
        "env NO_COLOR=1 XDG_DATA_HOME={data} XDG_CONFIG_HOME={conf} {BIN} run --repo {repo} \
         --config {cfg} 'run it'; sleep 30",
        data = home.path().join("data").display(),
        conf = home.path().join("config").display(),
        repo = dir.path().display(),
        cfg = cfg.display(),
    );
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
    let prompt = wait_for(&session.0, "Approve this tool call?")
        .await
        .unwrap_or_else(|| panic!("no approval prompt:\n{}", screen(&session.0)));
    // The prompt's rows, borders dropped, joined: the wrapped command reads whole.
    let rows: String = prompt
        .lines()
        .filter_map(|l| {
            l.split_once('│')
                .map(|(_, r)| r.trim_end_matches(['│', ' ']))
        })
        .collect();
    assert!(
        rows.contains("run `true␠×400; echo approved > ran.txt`"),
        "the whole command is on screen:\n{prompt}"
    );
    tmux(&["send-keys", "-t", &session.0, "Enter"]).expect("send Enter");
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(
        screen(&session.0).contains("Approve this tool call?"),
        "Enter closed the prompt:\n{}",
        screen(&session.0)
    );
    assert!(
        !dir.path().join("ran.txt").exists(),
        "Enter approved the call"
    );
    tmux(&["send-keys", "-t", &session.0, "y"]).expect("send y");
    wait_for(&session.0, "ENDED")
        .await
        .unwrap_or_else(|| panic!("the session did not end:\n{}", screen(&session.0)));
    assert!(dir.path().join("ran.txt").exists(), "y approved the call");
}
