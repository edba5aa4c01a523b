//! What the binary's exit status tells a script (`handoff::exit`): 0 success, 1 a failed
//! check or an eval that measured nothing, 3 an aborted session, 4 a broken input. The
//! real binary, real HTTP.

use handoff::demo::script::{confident, reply};
use handoff::demo::server::Script;
use serde_json::json;

use super::support::{config, repo, servers};

/// Runs the binary with `args`, stdin closed, and returns what it left.
async fn handoff_output(args: &[&std::ffi::OsStr]) -> std::process::Output {
    tokio::process::Command::new(env!("CARGO_BIN_EXE_handoff"))
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .expect("run handoff")
}

/// Runs the binary with `args`, stdin closed, and returns (exit code, stderr).
async fn handoff(args: &[&std::ffi::OsStr]) -> (Option<i32>, String) {
    let out = handoff_output(args).await;
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn write_config(dir: &std::path::Path, cfg: &handoff::config::Config) -> std::path::PathBuf {
    let path = dir.join("config.toml");
    std::fs::write(&path, toml::to_string(cfg).expect("config to toml")).expect("write config");
    path
}

/// A port nothing listens on: bound, read, released.
fn closed_port_url() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    drop(listener);
    format!("http://127.0.0.1:{port}/v1")
}

/// Both endpoints at closed ports, no retries: every request fails at once.
fn endpoints_down(cfg: &mut handoff::config::Config) {
    cfg.junior.base_url = closed_port_url();
    cfg.senior.base_url = closed_port_url();
    cfg.junior.max_retries = 0;
    cfg.senior.max_retries = 0;
}

/// `handoff exec` of a do-nothing task in `repo` under the config at `config`.
async fn exec(
    repo: &std::path::Path,
    config: &std::path::Path,
    log: &std::path::Path,
) -> (Option<i32>, String) {
    handoff(&[
        "exec".as_ref(),
        "--repo".as_ref(),
        repo.as_os_str(),
        "--config".as_ref(),
        config.as_os_str(),
        "--log".as_ref(),
        log.as_os_str(),
        "do nothing".as_ref(),
    ])
    .await
}

fn finishing_junior() -> Script {
    Script::new(vec![reply(
        confident("Done."),
        Some(("c1", "finish", json!({"summary": "nothing to do"}))),
    )])
}

#[tokio::test]
async fn a_failed_check_exits_1_and_a_passed_one_0() {
    for (check, want) in [("false", 1), ("true", 0)] {
        let (j, s) = servers(finishing_junior(), Script::new(vec![])).await;
        let dir = repo(&[("a.txt", "a\n")]);
        let work = tempfile::tempdir().expect("tempdir");
        let mut cfg = config(&j, &s);
        cfg.agent.check = Some(check.into());
        let path = write_config(work.path(), &cfg);
        let log = work.path().join("s.jsonl");
        let (code, err) = exec(dir.path(), &path, &log).await;
        assert_eq!(code, Some(want), "check {check}: {err}");
    }
}

#[tokio::test]
async fn endpoints_down_abort_the_session_and_exit_3() {
    let (j, s) = servers(Script::new(vec![]), Script::new(vec![])).await;
    let dir = repo(&[("a.txt", "a\n")]);
    let work = tempfile::tempdir().expect("tempdir");
    let mut cfg = config(&j, &s);
    endpoints_down(&mut cfg);
    let path = write_config(work.path(), &cfg);
    let log = work.path().join("s.jsonl");
    let (code, err) = exec(dir.path(), &path, &log).await;
    assert_eq!(code, Some(3), "{err}");
    let text = std::fs::read_to_string(&log).expect("the log was written");
    assert!(text.contains("\"outcome\":\"aborted\""), "{text}");
}

#[tokio::test]
async fn a_broken_config_exits_4_and_a_bad_flag_2() {
    let work = tempfile::tempdir().expect("tempdir");
    let path = work.path().join("config.toml");
    std::fs::write(&path, "[junior]\nbase_url = [\n").expect("write");
    let (code, err) = handoff(&["doctor".as_ref(), "--config".as_ref(), path.as_os_str()]).await;
    assert_eq!(code, Some(4), "{err}");
    assert!(err.contains("config.toml"), "names the file: {err}");
    let (code, _) = handoff(&["exec".as_ref(), "--no-such-flag".as_ref()]).await;
    assert_eq!(code, Some(2));
    let (code, err) = handoff(&["report".as_ref(), work.path().join("none").as_os_str()]).await;
    assert_eq!(code, Some(4), "{err}");
}

/// Issue 32's bad inputs: each ends with a clear error and exit 4, never a silent 0 or
/// an abort's 3.
#[tokio::test]
async fn unusable_inputs_exit_4_with_a_word_on_stderr() {
    let work = tempfile::tempdir().expect("tempdir");
    // `report` on logs it cannot read: garbage, empty, a version from the future.
    for (name, text) in [
        ("garbage.jsonl", "this is not json\n"),
        ("empty.jsonl", ""),
        ("future.jsonl", "{\"v\":999,\"handoff\":\"9.9.9\"}\n"),
    ] {
        let path = work.path().join(name);
        std::fs::write(&path, text).expect("write");
        let (code, err) = handoff(&["report".as_ref(), path.as_os_str()]).await;
        assert_eq!(code, Some(4), "report {name}: {err}");
        assert!(
            err.contains("warning:") && err.contains(name),
            "{name}: {err}"
        );
    }
    let (j, s) = servers(finishing_junior(), Script::new(vec![])).await;
    let dir = repo(&[("a.txt", "a\n")]);
    // `exec --repo` of a directory that does not exist.
    let cfg = config(&j, &s);
    let path = write_config(work.path(), &cfg);
    let missing = work.path().join("no-such-repo");
    let (code, err) = exec(&missing, &path, &work.path().join("a.jsonl")).await;
    assert_eq!(code, Some(4), "{err}");
    assert!(err.contains("no-such-repo"), "{err}");
    // A key variable that is not set.
    let mut cfg = config(&j, &s);
    cfg.junior.api_key_env = Some("HANDOFF_TEST_EXIT_KEY_NEVER_SET".into());
    let path = write_config(work.path(), &cfg);
    let (code, err) = exec(dir.path(), &path, &work.path().join("b.jsonl")).await;
    assert_eq!(code, Some(4), "{err}");
    assert!(err.contains("HANDOFF_TEST_EXIT_KEY_NEVER_SET"), "{err}");
    // A reading root that does not exist.
    let mut cfg = config(&j, &s);
    cfg.agent.readable_roots = Some(vec![work.path().join("no-such-root")]);
    let path = write_config(work.path(), &cfg);
    let (code, err) = exec(dir.path(), &path, &work.path().join("c.jsonl")).await;
    assert_eq!(code, Some(4), "{err}");
    assert!(
        err.contains("readable_roots") && err.contains("no-such-root"),
        "{err}"
    );
}

#[tokio::test]
async fn an_eval_whose_endpoints_are_down_exits_1_and_names_the_runs() {
    let (j, s) = servers(Script::new(vec![]), Script::new(vec![])).await;
    let work = tempfile::tempdir().expect("tempdir");
    let mut cfg = config(&j, &s);
    endpoints_down(&mut cfg);
    let path = write_config(work.path(), &cfg);
    let suite = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("suites/bundled");
    let out = work.path().join("out");
    let (code, err) = handoff(&[
        "eval".as_ref(),
        suite.as_os_str(),
        "--config".as_ref(),
        path.as_os_str(),
        "--shard".as_ref(),
        "0/12".as_ref(),
        "--policy".as_ref(),
        "junior-only".as_ref(),
        "--out".as_ref(),
        out.as_os_str(),
    ])
    .await;
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("endpoints failed"), "{err}");
    assert!(err.contains("1 of 1 runs measured nothing"), "{err}");
}

/// Issue 32: a session whose command planted git metadata ends with exit 5 (`repaired`)
/// even though its check passed, and the `--json` summary names the exit and counts the
/// step; the planted `.git` is gone. A session that only edits files keeps 0 (above).
#[tokio::test]
async fn a_session_whose_command_planted_git_metadata_exits_5_whatever_its_check() {
    let (j, s) = servers(
        super::support::one_command(
            "mkdir -p sub/.git && printf 'ref: refs/heads/main\\n' > sub/.git/HEAD && echo planted",
        ),
        Script::new(vec![]),
    )
    .await;
    let dir = repo(&[("a.txt", "a\n"), ("sub/b.txt", "b\n")]);
    let work = tempfile::tempdir().expect("tempdir");
    let mut cfg = config(&j, &s);
    cfg.agent.check = Some("true".into());
    let path = write_config(work.path(), &cfg);
    let log = work.path().join("s.jsonl");
    let out = handoff_output(&[
        "exec".as_ref(),
        "--json".as_ref(),
        "--repo".as_ref(),
        dir.path().as_os_str(),
        "--config".as_ref(),
        path.as_os_str(),
        "--log".as_ref(),
        log.as_os_str(),
        "do nothing".as_ref(),
    ])
    .await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(5),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let summary: serde_json::Value =
        serde_json::from_str(stdout.lines().last().expect("summary")).expect("json");
    assert_eq!(summary["outcome"], "success", "{summary}");
    assert_eq!(summary["exit"], "repaired", "{summary}");
    assert_eq!(summary["git_repaired"], 1, "{summary}");
    assert!(!dir.path().join("sub/.git").exists());
}
