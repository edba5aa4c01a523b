//! `eval matcher --llm-judge` through the binary: the judge is a fake OpenAI-compatible
//! server streaming real SSE, one call per screened question; its verdicts are tallied
//! against the labels, and an endpoint failure is counted as unjudged, not hidden.

use std::time::Duration;

use handoff::config::Config;
use handoff::demo::server::{Reply, Script, ScriptedServer};
use handoff::demo::sse::{Tok, completion};
use serde_json::{Value, json};

use crate::agent::support::{bin, write_config};

fn label(question: &str, targets: bool) -> String {
    json!({
        "task": "humaneval-0",
        "policy": "operator",
        "question": question,
        "blocker": {
            "id": "rule",
            "description": "a rule the docstring states: Return None in case the list is empty.",
            "answer": "Return None in case the list is empty.",
            "phrases": ["empty"]
        },
        "targets": targets
    })
    .to_string()
}

/// The question in a judge request's last message.
fn question_of(body: &Value) -> String {
    body["messages"]
        .as_array()
        .and_then(|ms| ms.last())
        .and_then(|m| m["content"].as_str())
        .and_then(|c| c.rsplit("Question: ").next())
        .unwrap_or_default()
        .to_string()
}

fn says(text: &str) -> Reply {
    Reply::sse(
        completion(&[Tok::new(text, -0.01)], &[], 20),
        Duration::ZERO,
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_llm_judge_is_scored_against_the_labels_through_the_binary() {
    // The fake judge names the blocker when the question says "nothing", refuses
    // otherwise, and fails on the question about ties.
    let script = Script::new(Vec::new()).respond_with(|body| {
        let q = question_of(body);
        if q.contains("ties") {
            Reply::error(500, "judge down")
        } else if q.contains("nothing") {
            says("rule")
        } else {
            says("NONE")
        }
    });
    let judge = ScriptedServer::start(script).await.expect("judge server");
    let home = tempfile::tempdir().expect("tempdir");
    let mut cfg = Config::default();
    cfg.senior.base_url = judge.base_url();
    cfg.senior.model = "judge-test".into();
    cfg.senior.api_key_env = None;
    cfg.senior.max_retries = 0;
    let config = write_config(home.path(), &cfg);
    let labels = home.path().join("labels.jsonl");
    let lines = [
        // agreed accept, agreed refusal, false accept, false reject, unjudged (a false
        // reject too), and one the screen stops before the judge is asked.
        label("What should it return for nothing in the list?", true),
        label("Which sorting algorithm should it use?", false),
        label("What should it print when nothing is wrong?", false),
        label("What does it return when the list is empty?", true),
        label("What should it do with ties?", true),
        label("Tell me the rule. Or the examples? Which one?", false),
    ];
    std::fs::write(&labels, lines.join("\n") + "\n").expect("labels");
    let out = bin(
        home.path(),
        &[
            "--config".as_ref(),
            config.as_os_str(),
            "eval".as_ref(),
            "matcher".as_ref(),
            labels.as_os_str(),
            "--llm-judge".as_ref(),
            "--json".as_ref(),
        ],
        None,
        &[],
    )
    .await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let a: Value = serde_json::from_str(&out.stdout).expect("json");
    assert_eq!(a["questions"], 6, "{a}");
    assert_eq!(a["positives"], 3, "{a}");
    assert_eq!(a["agree"], 3, "{a}");
    assert_eq!(a["false_accepts"].as_array().map(Vec::len), Some(1), "{a}");
    assert_eq!(a["false_rejects"].as_array().map(Vec::len), Some(2), "{a}");
    assert_eq!(a["unjudged"], 1, "{a}");
    assert!(
        out.stderr.contains("failed on 1 question"),
        "{}",
        out.stderr
    );
    // One call per question that passed the screen.
    assert_eq!(judge.requests().len(), 5);
}
