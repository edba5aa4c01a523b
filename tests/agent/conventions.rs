//! The conventions a command-line tool is expected to keep, through the real binary:
//! completions and a man page from the argument definitions, `-C DIR`, `-c key=value` over
//! `HANDOFF_*` over the file, the task from stdin with `-`, `run` without a terminal.

use std::ffi::OsStr;

use handoff::demo::server::Script;

use super::support::{FILES, bin, config, finish, read_log, repo, servers, write_config};

fn os(s: &str) -> &OsStr {
    OsStr::new(s)
}

#[tokio::test]
async fn completions_and_the_man_page_describe_the_commands() {
    let home = tempfile::tempdir().expect("tempdir");
    for shell in ["bash", "zsh", "fish"] {
        let out = bin(home.path(), &[os("completions"), os(shell)], None, &[]).await;
        assert_eq!(out.code, Some(0), "{shell}: {}", out.stderr);
        assert!(
            out.stdout.contains("restore"),
            "{shell}: no `restore` in the script"
        );
    }
    let man = bin(home.path(), &[os("man")], None, &[]).await;
    assert_eq!(man.code, Some(0), "{}", man.stderr);
    assert!(
        man.stdout.starts_with(".ie") || man.stdout.contains(".TH handoff"),
        "{}",
        &man.stdout[..200.min(man.stdout.len())]
    );
    assert!(man.stdout.contains("doctor"), "lists the commands");
}

/// The junior model `doctor` reports, with these settings (an unreachable port, so it
/// answers at once).
async fn doctor_model(
    home: &std::path::Path,
    cfg: &std::path::Path,
    set: &[&str],
    env: &[(&str, &str)],
) -> String {
    let mut args = vec![os("doctor"), os("--json"), os("--config"), cfg.as_os_str()];
    for s in set {
        args.push(os("-c"));
        args.push(os(s));
    }
    let out = bin(home, &args, None, env).await;
    let doc: serde_json::Value = serde_json::from_str(&out.stdout)
        .unwrap_or_else(|e| panic!("doctor --json: {e}: {}\n{}", out.stdout, out.stderr));
    doc["endpoints"][0]["model"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

#[tokio::test]
async fn c_beats_handoff_variables_which_beat_the_file() {
    let home = tempfile::tempdir().expect("tempdir");
    let cfg = home.path().join("c.toml");
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    drop(listener);
    std::fs::write(
        &cfg,
        format!(
            "[junior]\nbase_url = \"http://127.0.0.1:{port}/v1\"\nmodel = \"from-file\"\nmax_retries = 0\n\
             [senior]\nbase_url = \"http://127.0.0.1:{port}/v1\"\nmax_retries = 0\n"
        ),
    )
    .expect("write");
    let h = home.path();
    assert_eq!(doctor_model(h, &cfg, &[], &[]).await, "from-file");
    let env = [("HANDOFF_JUNIOR__MODEL", "from-env")];
    assert_eq!(doctor_model(h, &cfg, &[], &env).await, "from-env");
    assert_eq!(
        doctor_model(h, &cfg, &["junior.model=from-flag"], &env).await,
        "from-flag"
    );
    // A setting that does not validate is named by where it came from; exit 4.
    let bad = bin(
        h,
        &[
            os("doctor"),
            os("--config"),
            cfg.as_os_str(),
            os("-c"),
            os("agent.max_steps=lots"),
        ],
        None,
        &[],
    )
    .await;
    assert_eq!(bad.code, Some(4), "{}", bad.stderr);
    assert!(
        bad.stderr.contains("-c agent.max_steps=lots"),
        "{}",
        bad.stderr
    );
}

#[tokio::test]
async fn minus_c_dir_and_a_task_from_stdin() {
    let (j, s) = servers(Script::new(vec![finish()]), Script::new(vec![])).await;
    let home = tempfile::tempdir().expect("tempdir");
    let dir = repo(&FILES);
    let cfg = write_config(home.path(), &config(&j, &s));
    let log = home.path().join("s.jsonl");
    let out = bin(
        home.path(),
        &[
            os("-C"),
            dir.path().as_os_str(),
            os("exec"),
            os("--config"),
            cfg.as_os_str(),
            os("--log"),
            log.as_os_str(),
            os("-"),
        ],
        Some("a task\nfrom a pipe\n"),
        &[],
    )
    .await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let events = read_log(&log);
    let started = events
        .iter()
        .find_map(|e| match e {
            handoff::protocol::Event::SessionStarted { task, repo, .. } => {
                Some((task.clone(), repo.clone()))
            }
            _ => None,
        })
        .expect("session_started");
    assert_eq!(started.0, "a task\nfrom a pipe");
    let want = dir.path().canonicalize().expect("canonical");
    assert_eq!(
        std::path::PathBuf::from(started.1),
        want,
        "--repo . under -C DIR"
    );
}

#[tokio::test]
async fn run_without_a_terminal_points_to_exec() {
    let home = tempfile::tempdir().expect("tempdir");
    let out = bin(home.path(), &[os("run"), os("do it")], None, &[]).await;
    assert_eq!(out.code, Some(2), "{}", out.stderr);
    assert!(out.stderr.contains("use `handoff exec`"), "{}", out.stderr);
}

#[tokio::test]
async fn agents_md_reaches_the_junior_s_system_prompt() {
    let (j, s) = servers(Script::new(vec![finish()]), Script::new(vec![])).await;
    let home = tempfile::tempdir().expect("tempdir");
    let dir = repo(&[
        ("notes.txt", "hello\n"),
        ("AGENTS.md", "Run `make lint` before finishing.\n"),
    ]);
    let cfg = write_config(home.path(), &config(&j, &s));
    let out = bin(
        home.path(),
        &[
            os("exec"),
            os("--repo"),
            dir.path().as_os_str(),
            os("--config"),
            cfg.as_os_str(),
            os("look"),
        ],
        None,
        &[],
    )
    .await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let body = j.bodies().into_iter().next().expect("one request");
    let system = body["messages"][0]["content"].as_str().unwrap_or_default();
    assert!(
        system.contains("# Project instructions from AGENTS.md"),
        "{system}"
    );
    assert!(
        system.contains("Run `make lint` before finishing."),
        "{system}"
    );
}
