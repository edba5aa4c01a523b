//! A hostile `run` (and check) through the real binary: the review's escapes, each of which
//! must now fail. The keys in handoff's own environment, the sockets and secrets in the
//! user's environment, the user's terminal, the check's lack of a sandbox.

use std::path::Path;
use std::process::Stdio;

use handoff::demo::server::{Script, ScriptedServer};

use crate::agent::support::one_command;
use crate::tui::pty::{BIN, Handoff, Pty};

const KEY_VAR: &str = "HANDOFF_TEST_ESCAPE_KEY";
const KEY: &str = "sk-escape-SECRET-8f2c91d0";

struct Session {
    log: String,
    junior_bodies: String,
}

/// `handoff exec` with `cfg` edited by `edit`, the key in `KEY_VAR`, and `env` on top.
async fn exec(
    command: &str,
    dir: &Path,
    env: &[(&str, &str)],
    edit: impl FnOnce(&mut handoff::config::Config),
) -> Session {
    let j = ScriptedServer::start(one_command(command))
        .await
        .expect("junior");
    let s = ScriptedServer::start(Script::new(vec![]))
        .await
        .expect("senior");
    let mut cfg = crate::agent::support::config(&j, &s);
    cfg.junior.api_key_env = Some(KEY_VAR.into());
    edit(&mut cfg);
    let work = tempfile::tempdir().expect("tempdir");
    let cfg_path = work.path().join("config.toml");
    std::fs::write(&cfg_path, toml::to_string(&cfg).expect("toml")).expect("config");
    let log = work.path().join("s.jsonl");
    let mut cmd =
        tokio::process::Command::from(super::exec_command(dir, &cfg_path, &log, "look around"));
    cmd.env(KEY_VAR, KEY).stdin(Stdio::null());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().await.expect("run handoff");
    // A labelled session: 0 when its check passed, 1 when it failed (some of these
    // sessions fail their check on purpose); never an abort or a bad input.
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let bodies: Vec<String> = j.bodies().iter().map(|b| b.to_string()).collect();
    Session {
        log: std::fs::read_to_string(&log).expect("log"),
        junior_bodies: bodies.join("\n"),
    }
}

#[tokio::test]
async fn the_keys_are_gone_from_handoffs_own_environment_sandbox_or_not() {
    // Every process's environment (handoff's pid is not known inside a PID namespace).
    let read_parent = "cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n' | grep -a ESCAPE_KEY; \
                       echo parent-environ-read";
    for sandbox in [false, true] {
        let dir = crate::agent::support::repo(&[("notes.txt", "hi\n")]);
        let s = exec(read_parent, dir.path(), &[], |c| {
            c.agent.sandbox = sandbox;
            c.agent.check =
                Some("cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n'; env".into());
        })
        .await;
        assert!(s.log.contains("parent-environ-read"), "the command ran");
        assert!(
            !s.log.contains(KEY),
            "sandbox={sandbox}: the key reached the log"
        );
        assert!(
            !s.junior_bodies.contains(KEY),
            "sandbox={sandbox}: the key went back to the junior's server"
        );
    }
}

#[tokio::test]
async fn the_command_sees_an_allow_listed_environment() {
    let dir = crate::agent::support::repo(&[("notes.txt", "hi\n")]);
    let planted = [
        ("TMUX", "/tmp/tmux-0/default,1,0"),
        ("SSH_AUTH_SOCK", "/tmp/ssh-agent.sock"),
        ("DBUS_SESSION_BUS_ADDRESS", "unix:path=/run/user/0/bus"),
        ("DISPLAY", ":0"),
        ("WAYLAND_DISPLAY", "wayland-0"),
        ("OPENAI_KEY", "planted-openai"),
        ("GH_PAT", "planted-ghpat"),
        ("HF_AUTH", "planted-hf"),
        ("DATABASE_URL", "postgres://app:hunter2@db/app"),
        ("HANDOFF_TEST_PASSED", "passed-through"),
    ];
    let s = exec("env; echo env-listed", dir.path(), &planted, |c| {
        c.agent.env_pass = vec!["HANDOFF_TEST_PASSED".into()];
    })
    .await;
    assert!(s.log.contains("env-listed"), "the command ran");
    for (name, value) in &planted[..planted.len() - 1] {
        assert!(
            !s.log.contains(&format!("{name}={value}")) && !s.log.contains(&format!("{name}=")),
            "{name} reached the command"
        );
    }
    assert!(
        s.log.contains("HANDOFF_TEST_PASSED=passed-through"),
        "env_pass works"
    );
    assert!(s.log.contains("PATH="), "PATH is kept");
}

#[tokio::test]
async fn a_check_runs_in_the_sandbox_unless_the_user_opts_out() {
    let outside = tempfile::tempdir().expect("outside");
    let target = outside.path().join("from_check.txt");
    let check = format!("echo pwned > '{}'", target.display());
    if !matches!(
        handoff::agent::sandbox::status(),
        handoff::agent::sandbox::SandboxStatus::Available { .. }
    ) {
        eprintln!("skipped: no Landlock");
        return;
    }
    let dir = crate::agent::support::repo(&[("notes.txt", "hi\n")]);
    let s = exec("true", dir.path(), &[], |c| {
        c.agent.check = Some(check.clone())
    })
    .await;
    assert!(!target.exists(), "the check wrote outside the repository");
    assert!(
        s.log.contains("\"passed\":false"),
        "the refused write fails the check"
    );
    let s = exec("true", dir.path(), &[], |c| {
        c.agent.check = Some(check.clone());
        c.agent.check_sandbox = false;
    })
    .await;
    assert!(
        target.exists(),
        "check_sandbox = false runs the check unconfined"
    );
    assert!(
        s.log.contains("agent.check runs unconfined"),
        "and the session says so"
    );
}

/// The command tries to type into the terminal handoff runs in (`TIOCSTI` on `/dev/tty`).
/// handoff runs as the session leader of a real pty; whatever reaches the pty's input is
/// echoed to its master, which the test reads.
#[tokio::test]
async fn a_command_cannot_type_into_the_users_terminal() {
    if std::process::Command::new("python3")
        .arg("-c")
        .arg("")
        .status()
        .is_err()
        || std::process::Command::new("setsid")
            .arg("--help")
            .output()
            .is_err()
    {
        eprintln!("skipped: needs python3 and setsid");
        return;
    }
    let inject = "python3 -c \"import fcntl,termios,os\ntry:\n fd=os.open('/dev/tty', os.O_RDWR)\n \
                  [fcntl.ioctl(fd, termios.TIOCSTI, bytes([c])) for c in b'INJECTED-BY-RUN']\n \
                  print('injected')\nexcept OSError as e:\n print('no tty:', e)\"";
    let j = ScriptedServer::start(one_command(inject))
        .await
        .expect("junior");
    let s = ScriptedServer::start(Script::new(vec![]))
        .await
        .expect("senior");
    let cfg = crate::agent::support::config(&j, &s);
    let dir = crate::agent::support::repo(&[("notes.txt", "hi\n")]);
    let work = tempfile::tempdir().expect("tempdir");
    let cfg_path = work.path().join("config.toml");
    std::fs::write(&cfg_path, toml::to_string(&cfg).expect("toml")).expect("config");
    let log = work.path().join("s.jsonl");

    let argv: [&std::ffi::OsStr; 8] = [
        "exec".as_ref(),
        "--repo".as_ref(),
        dir.path().as_os_str(),
        "--config".as_ref(),
        cfg_path.as_os_str(),
        "--log".as_ref(),
        log.as_os_str(),
        "type something".as_ref(),
    ];
    let ended = Handoff::spawn(Pty::open(), BIN.as_ref(), &argv, work.path())
        .finish()
        .await;
    assert_eq!(ended.code, Some(0), "{}", ended.screen);
    let seen = ended.screen;
    let text = std::fs::read_to_string(&log).expect("log");
    assert!(
        text.contains("no tty"),
        "the command found no terminal: {text}"
    );
    assert!(
        !seen.contains("INJECTED-BY-RUN"),
        "keystrokes reached the terminal: {seen}"
    );
}
