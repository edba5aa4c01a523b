//! `handoff run` in a real terminal (tmux) against scripted servers in this process:
//! with `NO_COLOR` the screen carries no colour, and leaving the TUI after the session
//! prints the summary with what changed and the commands to diff or undo it.
//!
//! Skips with a message when tmux is not installed.

use std::process::Command;
use std::time::{Duration, Instant};

use handoff::demo::server::Script;

use crate::agent::support::{FILES, config, finish, repo, servers, write_config, write_done};

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

async fn wait_for(name: &str, what: &str, escapes: bool) -> Option<String> {
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(60) {
        let mut args = vec!["capture-pane", "-p", "-t", name];
        if escapes {
            args.push("-e");
        }
        let screen = tmux(&args).unwrap_or_default();
        if screen.contains(what) {
            return Some(screen);
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    None
}

/// The colour parameters of every SGR sequence (`ESC [ … m`) on a captured screen:
/// foreground and background colours (30–38, 40–48, 90–97, 100–107), not the resets.
fn colours(screen: &str) -> Vec<String> {
    let mut out = Vec::new();
    for seq in screen.split('\x1b').skip(1) {
        let Some(body) = seq.strip_prefix('[') else {
            continue;
        };
        let Some(end) = body.find('m') else { continue };
        let params = &body[..end];
        if params.chars().all(|c| c.is_ascii_digit() || c == ';')
            && params.split(';').any(|p| {
                p.parse::<u32>()
                    .is_ok_and(|n| matches!(n, 30..=38 | 40..=48 | 90..=97 | 100..=107))
            })
        {
            out.push(params.to_string());
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_under_no_color_has_no_colour_and_leaves_with_the_summary() {
    if Command::new("tmux").arg("-V").output().is_err() {
        eprintln!("skipped: tmux is not installed");
        return;
    }
    let (j, s) = servers(
        Script::new(vec![write_done(), finish()]),
        Script::new(vec![]),
    )
    .await;
    let home = tempfile::tempdir().expect("tempdir");
    let dir = repo(&FILES);
    let cfg = write_config(home.path(), &config(&j, &s));
    let name = format!("handoff-run-test-{}", std::process::id());
    let cmd = format!(
        "env NO_COLOR=1 XDG_DATA_HOME={data} XDG_CONFIG_HOME={conf} {BIN} run --repo {repo} \
         --config {cfg} 'write done.txt'; sleep 30",
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
    let screen = wait_for(&session.0, "ENDED", true)
        .await
        .unwrap_or_else(|| panic!("the session did not end on screen"));
    assert_eq!(
        colours(&screen),
        Vec::<String>::new(),
        "colour under NO_COLOR:\n{screen:?}"
    );
    tmux(&["send-keys", "-t", &session.0, "q"]).expect("send q");
    let after = wait_for(&session.0, "undo         handoff restore", false)
        .await
        .unwrap_or_else(|| {
            panic!(
                "no summary after leaving; screen:\n{}",
                tmux(&["capture-pane", "-p", "-t", &session.0]).unwrap_or_default()
            )
        });
    for want in [
        "outcome      unlabelled",
        "finish       wrote done.txt",
        "1 file changed, +1 -0",
        "diff         handoff diff ",
    ] {
        assert!(after.contains(want), "missing {want:?}:\n{after}");
    }
}

#[test]
fn colour_parameters_are_found_and_resets_are_not() {
    assert_eq!(
        colours("\x1b[1;38;5;12mx\x1b[39m\x1b[0m"),
        vec!["1;38;5;12"]
    );
    assert!(colours("\x1b[1m\x1b[7mx\x1b[0m\x1b[39;49m").is_empty());
}
