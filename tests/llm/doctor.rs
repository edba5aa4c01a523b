//! `handoff doctor` against fake servers that behave like real ones.

use std::time::Duration;

use handoff::config::ModelConfig;
use handoff::demo::server::{Reply, Script, ScriptedServer};
use handoff::demo::sse::{self, Tok};
use handoff::llm::doctor::{self, EndpointReport, Outcome};
use pretty_assertions::assert_eq;
use serde_json::Value;

use super::common::*;

/// What a fake server can do.
#[derive(Clone, Copy)]
struct Behaviour {
    logprobs: bool,
    /// llama.cpp: `logprobs` with tools in a stream is a 400; `n_probs` is fine.
    rejects_logprobs_with_tools: bool,
}

const GOOD: Behaviour = Behaviour {
    logprobs: true,
    rejects_logprobs_with_tools: false,
};
const LLAMA_CPP: Behaviour = Behaviour {
    logprobs: true,
    rejects_logprobs_with_tools: true,
};
const LM_STUDIO: Behaviour = Behaviour {
    logprobs: false,
    rejects_logprobs_with_tools: false,
};

fn answer(b: Behaviour, body: &Value) -> Reply {
    let tools = body.get("tools").is_some();
    let asked_lp = body.get("logprobs") == Some(&Value::Bool(true));
    if tools && asked_lp && b.rejects_logprobs_with_tools {
        return Reply::Http {
            status: 400,
            headers: vec![],
            body: r#"{"error":{"code":400,"message":"logprobs is not supported with tools + stream","type":"invalid_request_error"}}"#.into(),
        };
    }
    let k = body
        .get("top_logprobs")
        .or_else(|| body.get("n_probs"))
        .and_then(Value::as_u64);
    let alternatives = [
        ("ready", -0.05),
        ("Ready", -3.0),
        ("OK", -4.0),
        ("Sure", -5.0),
    ];
    let tok = |text: &str, lp: f64| {
        let n = k.map_or(0, |k| usize::try_from(k).unwrap_or(0));
        Tok::new(text, lp).top(&alternatives[..n.min(alternatives.len())])
    };
    let with_lp = b.logprobs && k.is_some();
    let mut chunks = Vec::new();
    if tools {
        if with_lp {
            chunks.push(sse::data(&sse::tokens(&[tok("<tool_call>", -0.01)])));
        }
        chunks.push(sse::data(&sse::tool_call(
            0,
            Some("c1"),
            Some("echo"),
            r#"{"text":"hi"}"#,
        )));
        chunks.push(sse::data(&sse::finish("tool_calls")));
    } else {
        chunks.push(if with_lp {
            sse::data(&sse::tokens(&[tok("ready", -0.05)]))
        } else {
            sse::data(&sse::text("ready"))
        });
        chunks.push(sse::data(&sse::finish("stop")));
    }
    chunks.push(sse::data(&sse::usage(20, 1)));
    chunks.push(sse::done());
    Reply::sse(chunks, Duration::from_millis(1))
}

async fn fake(b: Behaviour) -> ScriptedServer {
    let script = Script::new(vec![])
        .models(&["scripted", "other-model"])
        .respond_with(move |body| answer(b, body));
    ScriptedServer::start(script).await.expect("server")
}

fn outcomes(r: &EndpointReport) -> Vec<(&'static str, Outcome)> {
    r.probes.iter().map(|p| (p.name, p.outcome)).collect()
}

#[tokio::test]
async fn good_server_is_ready() {
    let server = fake(GOOD).await;
    let report = doctor::check_endpoint("junior", &config(&server, 3)).await;
    println!("{}", doctor::render(std::slice::from_ref(&report)));
    assert_eq!(
        outcomes(&report),
        vec![
            ("reachable", Outcome::Ok),
            ("model listed", Outcome::Ok),
            ("stream", Outcome::Ok),
            ("logprobs", Outcome::Ok),
            ("tools in stream", Outcome::Ok),
            ("tools + logprobs", Outcome::Ok),
        ]
    );
    assert_eq!(report.probes[3].detail, "1/1 tokens with logprobs, top-3");
    assert_eq!(report.verdict, "ok: ready");
    assert!(report.usable);
}

/// A model that answers tools with plain text (what the small Qwens do) is ready under the
/// code protocol: it is never sent tools, so neither tool probe runs or blames it.
#[tokio::test]
async fn a_code_protocol_endpoint_skips_the_tool_probes() {
    let script = Script::new(vec![])
        .models(&["scripted"])
        .respond_with(|body| {
            assert!(body.get("tools").is_none(), "no tools under code: {body}");
            answer(GOOD, body)
        });
    let server = ScriptedServer::start(script).await.expect("server");
    let mut cfg = config(&server, 3);
    cfg.tool_protocol = handoff::config::ToolProtocol::Code;
    let report = doctor::check_endpoint("junior", &cfg).await;
    assert_eq!(
        outcomes(&report),
        vec![
            ("reachable", Outcome::Ok),
            ("model listed", Outcome::Ok),
            ("stream", Outcome::Ok),
            ("logprobs", Outcome::Ok),
            ("tools in stream", Outcome::Skip),
            ("tools + logprobs", Outcome::Skip),
        ]
    );
    assert_eq!(report.verdict, "ok: ready");
}

#[tokio::test]
async fn llama_cpp_like_server_gets_the_n_probs_verdict() {
    let server = fake(LLAMA_CPP).await;
    let report = doctor::check_endpoint("junior", &config(&server, 3)).await;
    println!("{}", doctor::render(std::slice::from_ref(&report)));
    assert_eq!(
        outcomes(&report),
        vec![
            ("reachable", Outcome::Ok),
            ("model listed", Outcome::Ok),
            ("stream", Outcome::Ok),
            ("logprobs", Outcome::Ok),
            ("tools in stream", Outcome::Ok),
            ("tools + logprobs", Outcome::Warn),
        ]
    );
    assert_eq!(
        report.probes[5].detail,
        "rejected; retried with n_probs: logprobs present (1 call(s) assembled)"
    );
    assert_eq!(
        report.verdict,
        "llama.cpp: logprobs+tools rejected; handoff will retry with n_probs"
    );
    assert!(report.usable);
}

#[tokio::test]
async fn lm_studio_like_server_degrades_to_step_evidence() {
    let server = fake(LM_STUDIO).await;
    let report = doctor::check_endpoint("junior", &config(&server, 3)).await;
    println!("{}", doctor::render(std::slice::from_ref(&report)));
    assert_eq!(
        outcomes(&report),
        vec![
            ("reachable", Outcome::Ok),
            ("model listed", Outcome::Ok),
            ("stream", Outcome::Ok),
            ("logprobs", Outcome::Warn),
            ("tools in stream", Outcome::Ok),
            ("tools + logprobs", Outcome::Ok),
        ]
    );
    assert!(
        report.verdict.starts_with("no logprobs (LM Studio-like)"),
        "{}",
        report.verdict
    );
    assert!(report.usable);
}

#[tokio::test]
async fn senior_without_logprobs_and_a_model_not_listed() {
    let server = fake(GOOD).await;
    let cfg = ModelConfig {
        model: "gpt-9".into(),
        logprobs: false,
        top_logprobs: 0,
        ..config(&server, 0)
    };
    let report = doctor::check_endpoint("senior", &cfg).await;
    assert_eq!(
        outcomes(&report),
        vec![
            ("reachable", Outcome::Ok),
            ("model listed", Outcome::Warn),
            ("stream", Outcome::Ok),
            ("logprobs", Outcome::Skip),
            ("tools in stream", Outcome::Ok),
            ("tools + logprobs", Outcome::Skip),
        ]
    );
    assert_eq!(
        report.verdict,
        "set model to one the server lists (scripted, other-model)"
    );
}

#[tokio::test]
async fn unreachable_and_keyless_endpoints_name_the_fix() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        l.local_addr().expect("addr").port()
    };
    let server = fake(GOOD).await;
    let cfg = ModelConfig {
        base_url: format!("http://127.0.0.1:{port}/v1"),
        ..config(&server, 0)
    };
    let report = doctor::check_endpoint("junior", &cfg).await;
    assert_eq!(outcomes(&report), vec![("reachable", Outcome::Fail)]);
    assert_eq!(
        report.verdict,
        format!("fix: start the server or correct base_url (http://127.0.0.1:{port}/v1): connect")
    );
    assert!(!report.usable);

    let cfg = ModelConfig {
        api_key_env: Some("HANDOFF_TEST_DOCTOR_KEY_NEVER_SET".into()),
        ..config(&server, 0)
    };
    let report = doctor::check_endpoint("senior", &cfg).await;
    assert_eq!(outcomes(&report), vec![("client", Outcome::Fail)]);
    assert_eq!(
        report.verdict,
        "fix: export HANDOFF_TEST_DOCTOR_KEY_NEVER_SET=<your key> (api_key_env names it)"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_doctor_command_end_to_end() {
    let junior = fake(LLAMA_CPP).await;
    let senior = fake(GOOD).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("config.toml");
    let toml = format!(
        "[junior]\nbase_url = \"{}\"\nmodel = \"scripted\"\ntop_logprobs = 3\n\n\
         [senior]\nbase_url = \"{}\"\nmodel = \"scripted\"\nlogprobs = false\ntop_logprobs = 0\n",
        junior.base_url(),
        senior.base_url()
    );
    std::fs::write(&path, toml).expect("write config");
    let run = |json: bool| {
        let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_handoff"));
        cmd.arg("doctor").arg("--config").arg(&path);
        if json {
            cmd.arg("--json");
        }
        cmd.output()
    };
    let out = run(false).await.expect("run handoff doctor");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    println!("{text}");
    assert!(out.status.success(), "{text}");
    let verdicts: Vec<&str> = text
        .lines()
        .filter_map(|l| l.trim().strip_prefix("verdict: "))
        .collect();
    assert_eq!(
        verdicts,
        vec![
            "llama.cpp: logprobs+tools rejected; handoff will retry with n_probs",
            "ok: ready"
        ]
    );
    let out = run(true).await.expect("run handoff doctor --json");
    let doc: Value = serde_json::from_slice(&out.stdout).expect("JSON report");
    assert_eq!(doc["endpoints"][0]["role"], "junior");
    assert_eq!(doc["endpoints"][0]["probes"][5]["outcome"], "warn");
    assert_eq!(doc["endpoints"][1]["usable"], true);
}
