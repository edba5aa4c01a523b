//! `handoff eval` through the binary: the hidden tests of a task are nowhere a `run`
//! command can read them during the session (review finding M8), and they still decide
//! the result.

use std::ffi::OsStr;
use std::path::Path;

use handoff::demo::server::{Script, ScriptedServer};

use crate::agent::support::{bin, one_command, write_config};

/// Copies a directory tree (the parts of the bundled suite one task needs).
fn copy(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read dir") {
        let entry = entry.expect("entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("type").is_dir() {
            copy(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy");
        }
    }
}

/// A suite of the bundled `py-config` task alone.
fn py_config_suite(dir: &Path) {
    let bundled = Path::new(env!("CARGO_MANIFEST_DIR")).join("suites/bundled");
    std::fs::copy(bundled.join("py-config.toml"), dir.join("py-config.toml")).expect("task");
    for part in ["repos", "hidden", "solutions"] {
        copy(
            &bundled.join(part).join("py-config"),
            &dir.join(part).join("py-config"),
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_junior_cannot_read_the_hidden_tests_and_they_still_judge_the_result() {
    if std::process::Command::new("python3")
        .arg("-c")
        .arg("")
        .status()
        .is_err()
    {
        eprintln!("skipped: needs python3");
        return;
    }
    let home = tempfile::tempdir().expect("home");
    let suite = home.path().join("suite");
    std::fs::create_dir_all(&suite).expect("suite dir");
    py_config_suite(&suite);
    // The review's probe, and a search of the whole temporary work directory.
    let probe = "ls ..; cat ../*.hidden/*.py; find .. -name '*.py' -not -path '../py-config/*' \
                 -exec cat {} +; echo probe-done";
    let j = ScriptedServer::start(one_command(probe))
        .await
        .expect("junior");
    let s = ScriptedServer::start(Script::new(vec![]))
        .await
        .expect("senior");
    let mut cfg = super::fake::config(&j, &s);
    cfg.agent.sandbox = false;
    let cfg = write_config(home.path(), &cfg);
    let out = home.path().join("out");
    let ran = bin(
        home.path(),
        &[
            OsStr::new("eval"),
            suite.as_os_str(),
            OsStr::new("--config"),
            cfg.as_os_str(),
            OsStr::new("--policy"),
            OsStr::new("junior-only"),
            OsStr::new("--out"),
            out.as_os_str(),
            OsStr::new("--json"),
        ],
        None,
        &[],
    )
    .await;
    // What went back to the junior: the probe's output, without the hidden test.
    let bodies: String = j.bodies().iter().map(|b| b.to_string()).collect();
    assert!(
        bodies.contains("probe-done"),
        "the probe ran: {}",
        ran.stderr
    );
    assert!(bodies.contains("py-config"), "`ls ..` listed the work dir");
    assert!(
        !bodies.contains("test_first_duplicate_wins") && !bodies.contains("k=1\\\\nk=2"),
        "the junior read the hidden test"
    );
    // The hidden test still judged the untouched template: it ran, and it failed.
    let report: serde_json::Value = serde_json::from_str(&ran.stdout).expect("eval --json");
    let run = &report["runs"][0];
    assert_eq!(run["task"], "py-config");
    assert_eq!(run["error"], serde_json::Value::Null, "{run}");
    assert_eq!(run["passed"], false, "{run}");
    let log = std::fs::read_to_string(out.join("logs/junior-only/py-config.jsonl")).expect("log");
    let check = log
        .lines()
        .find(|l| l.contains("\"check_ran\""))
        .expect("the session's check ran");
    assert!(
        check.contains("test_first_duplicate_wins"),
        "the check ran the hidden test: {check}"
    );
}
