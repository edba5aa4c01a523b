//! `handoff exec --json` as a user runs it: the real binary, a config file, scripted servers.

use handoff::demo::script::{confident, hesitant, join, reply};
use handoff::demo::server::Script;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::support::{config, lost, repo, servers};

#[tokio::test]
async fn exec_json_prints_events_then_one_summary_and_writes_the_log() {
    let junior = Script::new(vec![
        reply(
            confident("Reading."),
            Some(("c1", "read_file", json!({"path": "notes.txt"}))),
        ),
        reply(join([confident("Now"), hesitant(&lost())]), None),
    ]);
    let senior = Script::new(vec![
        reply(
            confident("Writing it."),
            Some((
                "s1",
                "write_file",
                json!({"path": "done.txt", "content": "ok\n"}),
            )),
        ),
        reply(
            confident("Done."),
            Some(("s2", "finish", json!({"summary": "done"}))),
        ),
    ]);
    let (j, s) = servers(junior, senior).await;
    let dir = repo(&[("notes.txt", "hi\n")]);
    let mut cfg = config(&j, &s);
    cfg.policy.handoff = handoff::config::HandoffMode::Rest;
    cfg.agent.check = Some("test -f done.txt".into());
    let work = tempfile::tempdir().expect("tempdir");
    let cfg_path = work.path().join("config.toml");
    std::fs::write(&cfg_path, toml::to_string(&cfg).expect("config to toml"))
        .expect("write config");
    let log = work.path().join("s.jsonl");
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_handoff"))
        .arg("exec")
        .arg("--repo")
        .arg(dir.path())
        .arg("--config")
        .arg(&cfg_path)
        .arg("--json")
        .arg("--log")
        .arg(&log)
        .arg("create done.txt")
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .expect("run handoff");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).expect("every stdout line is JSON"))
        .collect();
    let (summary, events) = lines.split_last().expect("some output");
    assert_eq!(summary["type"], "summary");
    assert_eq!(summary["outcome"], "success");
    assert_eq!(summary["exit"], "success");
    assert_eq!(summary.get("git_repaired"), None);
    assert_eq!(summary["escalations"].as_array().map(Vec::len), Some(1));
    assert_eq!(summary["escalations"][0]["route"], "senior");
    assert_eq!(summary["log"], log.display().to_string());
    assert_eq!(
        events.first().map(|e| e["type"].clone()),
        Some(json!("session_started"))
    );
    assert_eq!(
        events.last().map(|e| e["type"].clone()),
        Some(json!("session_ended"))
    );
    // The log holds the same events as stdout, after its header.
    let logged = std::fs::read_to_string(&log).expect("log");
    assert_eq!(logged.lines().count(), events.len() + 1);
}

#[tokio::test]
async fn exec_with_a_bad_config_fails_with_the_line() {
    let work = tempfile::tempdir().expect("tempdir");
    let cfg_path = work.path().join("config.toml");
    std::fs::write(&cfg_path, "[costs]\nloss = -1\n").expect("write");
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_handoff"))
        .args(["exec", "--repo", "."])
        .arg("--config")
        .arg(&cfg_path)
        .arg("task")
        .output()
        .await
        .expect("run handoff");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("config.toml:2") && err.contains("costs.loss"),
        "{err}"
    );
}

#[tokio::test]
async fn exec_reads_operator_answers_from_a_file() {
    let junior = Script::new(vec![
        reply(join([confident("Which"), hesitant(&lost())]), None),
        reply(
            confident("Writing it."),
            Some((
                "c2",
                "write_file",
                json!({"path": "done.txt", "content": "ok\n"}),
            )),
        ),
        reply(
            confident("Done."),
            Some(("c3", "finish", json!({"summary": "done"}))),
        ),
    ]);
    let (j, s) = servers(junior, Script::new(vec![])).await;
    let dir = repo(&[("notes.txt", "hi\n")]);
    let mut cfg = config(&j, &s);
    cfg.policy.route = handoff::config::RouteMode::Operator;
    cfg.agent.check = Some("test -f done.txt".into());
    let work = tempfile::tempdir().expect("tempdir");
    let cfg_path = work.path().join("config.toml");
    std::fs::write(&cfg_path, toml::to_string(&cfg).expect("config to toml")).expect("write");
    let answers = work.path().join("answers.jsonl");
    std::fs::write(&answers, "{\"answer\": \"done.txt\", \"needed\": false}\n").expect("write");
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_handoff"))
        .arg("exec")
        .arg("--repo")
        .arg(dir.path())
        .arg("--config")
        .arg(&cfg_path)
        .arg("--answers")
        .arg(&answers)
        .arg("--log")
        .arg(work.path().join("s.jsonl"))
        .arg("--json")
        .arg("create the file")
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .expect("run handoff");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let summary: Value =
        serde_json::from_str(stdout.lines().last().expect("summary")).expect("json");
    assert_eq!(summary["outcome"], "success");
    assert_eq!(summary["escalations"][0]["route"], "operator");
    // Marked "not needed": a false positive.
    assert_eq!(summary["ask"], json!({"tp": 0, "fp": 1, "fn": 0}));
    assert!(stdout.contains("\"type\":\"operator_answered\""));
    // The junior's second request carries the answer.
    assert!(j.bodies()[1].to_string().contains("done.txt"));
}
