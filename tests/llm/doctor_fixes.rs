//! Doctor verdicts that name the fix, each against a fake server of the flavour that
//! causes it (over real HTTP on 127.0.0.1).

use std::time::Duration;

use handoff::config::ModelConfig;
use handoff::demo::server::{Reply, Script, ScriptedServer};
use handoff::demo::sse;
use handoff::llm::doctor::{self, EndpointReport, Options, Outcome};
use pretty_assertions::assert_eq;
use serde_json::Value;

use super::common::config;

/// Whitespace-separated words in every message: the fake's token count.
fn words(body: &Value) -> u64 {
    body["messages"]
        .as_array()
        .map(|m| {
            m.iter()
                .filter_map(|msg| msg["content"].as_str())
                .map(|c| c.split_whitespace().count() as u64)
                .sum()
        })
        .unwrap_or(0)
}

/// A plain answer ("ready", or a tool call when tools were offered) with usage.
fn ready(body: &Value, prompt_tokens: u64) -> Reply {
    let mut chunks = Vec::new();
    if body.get("tools").is_some() {
        chunks.push(sse::data(&sse::tool_call(
            0,
            Some("c1"),
            Some("echo"),
            r#"{"text":"hi"}"#,
        )));
        chunks.push(sse::data(&sse::finish("tool_calls")));
    } else {
        chunks.push(sse::data(&sse::text("ready")));
        chunks.push(sse::data(&sse::finish("stop")));
    }
    chunks.push(sse::data(&sse::usage(prompt_tokens, 1)));
    chunks.push(sse::done());
    Reply::sse(chunks, Duration::from_millis(1))
}

/// Ollama: tagged model ids, 404 for an unknown one, and a context window that cuts the
/// prompt silently (the usage reports what was kept).
async fn ollama(window: u64) -> ScriptedServer {
    let listed = ["llama3:8b", "qwen2.5-coder:7b"];
    let script = Script::new(vec![]).models(&listed).respond_with(move |body| {
        let model = body["model"].as_str().unwrap_or_default();
        if !listed.contains(&model) {
            return Reply::Http {
                status: 404,
                headers: vec![],
                body: format!(
                    r#"{{"error":{{"message":"model \"{model}\" not found, try pulling it first","type":"api_error"}}}}"#
                ),
            };
        }
        ready(body, (words(body) + 8).min(window))
    });
    ScriptedServer::start(script).await.expect("server")
}

/// llama.cpp: refuses a prompt beyond its `-c` window with a 400.
async fn llama_cpp(window: u64) -> ScriptedServer {
    let script = Script::new(vec![])
        .models(&["scripted"])
        .respond_with(move |body| {
            let n = words(body) + 8;
            if n > window {
                return Reply::error(
                    400,
                    "the request exceeds the available context size, try increasing it",
                );
            }
            ready(body, n)
        });
    ScriptedServer::start(script).await.expect("server")
}

fn no_logprobs(server: &ScriptedServer, model: &str) -> ModelConfig {
    ModelConfig {
        model: model.into(),
        logprobs: false,
        top_logprobs: 0,
        ..config(server, 0)
    }
}

fn outcome_of(r: &EndpointReport, name: &str) -> Option<Outcome> {
    r.probes.iter().find(|p| p.name == name).map(|p| p.outcome)
}

#[tokio::test]
async fn a_base_url_without_v1_gets_the_corrected_url() {
    let server = ollama(1 << 20).await;
    let root = server.base_url().trim_end_matches("/v1").to_string();
    let cfg = ModelConfig {
        base_url: root.clone(),
        ..no_logprobs(&server, "qwen2.5-coder:7b")
    };
    let report = doctor::check_endpoint("junior", &cfg).await;
    println!("{}", doctor::render(std::slice::from_ref(&report)));
    assert_eq!(
        report.verdict,
        format!(
            "fix: set base_url = \"{root}/v1\" (the server answers under /v1; GET /models \
             answered HTTP 404)"
        )
    );
    assert!(!report.usable);
}

#[tokio::test]
async fn an_untagged_ollama_model_gets_the_tag_to_use() {
    let server = ollama(1 << 20).await;
    let report = doctor::check_endpoint("junior", &no_logprobs(&server, "qwen2.5-coder")).await;
    println!("{}", doctor::render(std::slice::from_ref(&report)));
    assert_eq!(outcome_of(&report, "model listed"), Some(Outcome::Warn));
    assert_eq!(outcome_of(&report, "stream"), Some(Outcome::Fail));
    assert_eq!(
        report.verdict,
        "fix: set model = \"qwen2.5-coder:7b\" (the closest id the server lists; \
         `qwen2.5-coder` is not one)"
    );
}

#[tokio::test]
async fn a_remote_host_that_cannot_be_reached_is_a_network_problem() {
    let cfg = ModelConfig {
        base_url: "http://doctor-check.invalid/v1".into(),
        api_key_env: None,
        connect_timeout_s: 3.0,
        ..ModelConfig::default()
    };
    let report = doctor::check_endpoint("senior", &cfg).await;
    assert_eq!(outcome_of(&report, "reachable"), Some(Outcome::Fail));
    assert!(
        report.verdict.starts_with(
            "fix: a network problem: doctor-check.invalid cannot be reached from here"
        ),
        "{}",
        report.verdict
    );
    assert!(
        !report.verdict.contains("start the server"),
        "{}",
        report.verdict
    );
}

#[tokio::test]
async fn ollamas_silent_cut_is_found_from_usage_prompt_tokens() {
    let server = ollama(2048).await;
    let opts = Options {
        context_window: Some(8192),
    };
    let report =
        doctor::check_endpoint_with("junior", &no_logprobs(&server, "qwen2.5-coder:7b"), opts)
            .await;
    println!("{}", doctor::render(std::slice::from_ref(&report)));
    assert_eq!(outcome_of(&report, "context"), Some(Outcome::Warn));
    assert_eq!(
        report.verdict,
        "the server keeps only ~2048 tokens of context, context_window = 8192 expects more: \
         start Ollama with OLLAMA_CONTEXT_LENGTH=8192 (or set num_ctx), or set context_window = 2048"
    );
    assert!(
        report.usable,
        "a cut context degrades, it does not stop a session"
    );

    // The same server with a big enough window passes.
    let roomy = ollama(1 << 20).await;
    let report =
        doctor::check_endpoint_with("junior", &no_logprobs(&roomy, "qwen2.5-coder:7b"), opts).await;
    assert_eq!(outcome_of(&report, "context"), Some(Outcome::Ok));
    assert_eq!(report.verdict, "ok: ready");
}

#[tokio::test]
async fn a_server_that_refuses_a_long_prompt_names_the_context_setting() {
    let server = llama_cpp(4096).await;
    let opts = Options {
        context_window: Some(8192),
    };
    let report =
        doctor::check_endpoint_with("junior", &no_logprobs(&server, "scripted"), opts).await;
    assert_eq!(outcome_of(&report, "context"), Some(Outcome::Fail));
    assert!(
        report
            .verdict
            .contains("its context is smaller than context_window = 8192")
            && report.verdict.contains("llama.cpp: -c 8192"),
        "{}",
        report.verdict
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_proxy_without_no_proxy_is_named_instead_of_start_the_server() {
    let server = ollama(1 << 20).await;
    let dead = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        l.local_addr().expect("addr").port()
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("config.toml");
    let section = |role: &str| {
        format!(
            "[{role}]\nbase_url = \"{}\"\nmodel = \"qwen2.5-coder:7b\"\nlogprobs = false\n\
             top_logprobs = 0\n",
            server.base_url()
        )
    };
    std::fs::write(
        &path,
        format!("{}\n{}", section("junior"), section("senior")),
    )
    .expect("write");
    let proxy = format!("http://127.0.0.1:{dead}");
    let run = |no_proxy: Option<&str>| {
        let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_handoff"));
        cmd.arg("doctor").arg("--config").arg(&path);
        for var in [
            "http_proxy",
            "HTTPS_PROXY",
            "https_proxy",
            "ALL_PROXY",
            "all_proxy",
            "NO_PROXY",
            "no_proxy",
        ] {
            cmd.env_remove(var);
        }
        cmd.env("HTTP_PROXY", &proxy);
        if let Some(n) = no_proxy {
            cmd.env("NO_PROXY", n);
        }
        cmd.output()
    };
    let verdicts = |out: &std::process::Output| -> Vec<String> {
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| l.trim().strip_prefix("verdict: ").map(str::to_string))
            .collect()
    };
    let out = run(None).await.expect("run doctor");
    let want = format!(
        "fix: HTTP_PROXY={proxy} routes requests for 127.0.0.1 through a proxy; exclude it: \
         export NO_PROXY=127.0.0.1,localhost"
    );
    assert_eq!(verdicts(&out), vec![want.clone(), want]);
    assert_eq!(out.status.code(), Some(1));

    let out = run(Some("localhost,127.0.0.1")).await.expect("run doctor");
    assert_eq!(verdicts(&out), vec!["ok: ready", "ok: ready"]);
    assert!(out.status.success());
}
