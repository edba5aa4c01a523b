//! Servers that never stop: an endless junior or senior stream is cut at the token budget
//! and at `max_tokens`, mid-stream, with memory and the log bounded; an endless SSE line is
//! a clear fault, not superlinear CPU.

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use handoff::demo::server::{RawChunk, Reply, Script, ScriptedServer, StreamEnd};
use handoff::demo::sse::{Tok, data, tokens};
use handoff::llm::{ChatRequest, Client, Message};
use serde_json::Value;

/// Confident `word ` tokens, as fast as the client reads, for every request.
fn endless_words() -> Script {
    Script::new(vec![]).respond_with(|_| Reply::Sse {
        chunks: vec![RawChunk::new(data(&tokens(&[Tok::new("word ", -0.001)])))],
        end: StreamEnd::Endless,
    })
}

struct Ended {
    events: Vec<Value>,
    log_bytes: u64,
    peak_rss_kib: u64,
    took: Duration,
}

/// Runs `handoff exec` against the servers, sampling its resident memory while it runs.
async fn exec(
    junior: &ScriptedServer,
    senior: &ScriptedServer,
    edit: impl FnOnce(&mut handoff::config::Config),
) -> Ended {
    let repo = crate::agent::support::repo(&[("notes.txt", "hi\n")]);
    let mut cfg = crate::agent::support::config(junior, senior);
    cfg.policy.constant = 0.01;
    edit(&mut cfg);
    let work = tempfile::tempdir().expect("tempdir");
    let cfg_path = work.path().join("config.toml");
    std::fs::write(&cfg_path, toml::to_string(&cfg).expect("toml")).expect("config");
    let log = work.path().join("s.jsonl");
    let start = Instant::now();
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_handoff"))
        .arg("exec")
        .arg("--repo")
        .arg(repo.path())
        .arg("--config")
        .arg(&cfg_path)
        .arg("--log")
        .arg(&log)
        .arg("say words")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn");
    let pid = child.id().expect("pid");
    let mut peak = 0;
    let deadline = start + Duration::from_secs(60);
    loop {
        peak = peak.max(rss_kib(pid));
        if let Ok(status) = tokio::time::timeout(Duration::from_millis(100), child.wait()).await {
            status.expect("wait");
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the session did not end within 60 s (log: {} bytes, RSS {peak} KiB)",
            std::fs::metadata(&log).map_or(0, |m| m.len())
        );
    }
    let text = std::fs::read_to_string(&log).expect("log");
    Ended {
        events: text
            .lines()
            .map(|l| serde_json::from_str(l).expect("log line"))
            .collect(),
        log_bytes: text.len() as u64,
        peak_rss_kib: peak,
        took: start.elapsed(),
    }
}

fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(Path::new("/proc").join(pid.to_string()).join("status"))
        .unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// Token counts per step of `actor`, in order.
fn tokens_per_step(events: &[Value], actor: &str) -> Vec<u64> {
    let mut steps: Vec<(String, u64)> = Vec::new();
    for e in events {
        match e["type"].as_str() {
            Some("step_started") => {
                steps.push((e["actor"].as_str().unwrap_or("").to_string(), 0));
            }
            Some("token") if e["actor"] == actor => {
                if let Some(last) = steps.last_mut() {
                    last.1 += 1;
                }
            }
            _ => {}
        }
    }
    steps
        .into_iter()
        .filter(|(a, _)| a == actor)
        .map(|(_, n)| n)
        .collect()
}

fn ended_aborted(events: &[Value]) -> bool {
    events
        .iter()
        .any(|e| e["type"] == "session_ended" && e["outcome"] == "aborted")
}

#[tokio::test]
async fn an_endless_junior_stream_is_cut_at_max_tokens_and_at_the_budget() {
    let j = ScriptedServer::start(endless_words())
        .await
        .expect("junior");
    let s = ScriptedServer::start(Script::new(vec![]))
        .await
        .expect("senior");
    let ended = exec(&j, &s, |c| {
        c.junior.max_tokens = Some(300);
        c.agent.token_budget = 1000;
        c.agent.max_steps = 50;
        // The endless reply carries no tool call: keep the repair, stuck and threshold rules
        // (each of which would end the session on its own) out of the way of the budget cut.
        c.agent.max_repairs = 50;
        c.agent.stuck_after = 0;
        c.policy.shadow = true;
    })
    .await;
    let per_step = tokens_per_step(&ended.events, "junior");
    assert!(!per_step.is_empty(), "no junior step");
    // 300 per turn (max_tokens), and the last turn only what was left of the budget.
    assert!(per_step.iter().all(|&n| n <= 300), "{per_step:?}");
    assert_eq!(per_step.iter().sum::<u64>(), 1000, "{per_step:?}");
    assert_eq!(per_step.last(), Some(&100), "{per_step:?}");
    let cuts = ended
        .events
        .iter()
        .filter(|e| e["type"] == "warning" && e["kind"] == "reply_cut")
        .count();
    assert_eq!(cuts, per_step.len(), "every turn was cut and said so");
    assert!(ended_aborted(&ended.events), "ends aborted at the budget");
    assert!(ended.log_bytes < 2_000_000, "log {} bytes", ended.log_bytes);
    assert!(
        ended.peak_rss_kib < 200 * 1024,
        "peak RSS {} KiB",
        ended.peak_rss_kib
    );
    assert!(ended.took < Duration::from_secs(30), "{:?}", ended.took);
}

#[tokio::test]
async fn an_endless_senior_stream_is_cut_at_its_max_tokens() {
    // The junior's endpoint is dead: the session hands off at once, as a fault.
    let dead = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let dead_url = format!("http://{}/v1", dead.local_addr().expect("addr"));
    drop(dead);
    let j = ScriptedServer::start(Script::new(vec![]))
        .await
        .expect("junior");
    let s = ScriptedServer::start(endless_words())
        .await
        .expect("senior");
    let ended = exec(&j, &s, |c| {
        c.junior.base_url = dead_url;
        c.junior.max_retries = 0;
        c.senior.max_tokens = Some(400);
        c.agent.max_steps = 3;
    })
    .await;
    let per_step = tokens_per_step(&ended.events, "senior");
    assert!(!per_step.is_empty(), "no senior step");
    assert!(per_step.iter().all(|&n| n == 400), "{per_step:?}");
    assert!(ended_aborted(&ended.events), "ends at max_steps");
    assert!(ended.log_bytes < 2_000_000, "log {} bytes", ended.log_bytes);
}

/// A 12 MB `data:` line, written in 64 KiB pieces: refused once it passes the cap, quickly.
#[tokio::test]
async fn a_twelve_megabyte_sse_line_is_a_clear_fault_in_linear_time() {
    let piece = bytes::Bytes::from(vec![b'x'; 64 * 1024]);
    let mut chunks = vec![RawChunk::new(
        "data: {\"choices\":[{\"delta\":{\"content\":\"",
    )];
    chunks.extend((0..192).map(|_| RawChunk::new(piece.clone())));
    chunks.push(RawChunk::new("\"}}]}\n\n"));
    let server = ScriptedServer::start(Script::new(vec![Reply::Sse {
        chunks,
        end: StreamEnd::Close,
    }]))
    .await
    .expect("server");
    let mut cfg = handoff::config::Config::default().junior;
    cfg.base_url = server.base_url();
    cfg.api_key_env = None;
    let client = Client::with_api_key(&cfg, None).expect("client");
    let req = ChatRequest {
        messages: vec![Message::user("hi")],
        tools: vec![],
    };
    let start = Instant::now();
    let mut stream = client.stream_once(&req).await.expect("opened");
    let mut fault = None;
    while let Some(delta) = futures::StreamExt::next(&mut stream).await {
        if let Err(e) = delta {
            fault = Some(e);
            break;
        }
    }
    let fault = fault.expect("the line is refused");
    assert!(
        fault.to_string().contains("MAX_SSE_LINE_BYTES"),
        "the fault names the cap: {fault}"
    );
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "{:?}",
        start.elapsed()
    );
}

/// A `write_file` with 200 KB of content against `max_argument_bytes = 4096`: the tool
/// refuses it, and the log keeps the head of the arguments with a marker, not 200 KB.
#[tokio::test]
async fn huge_tool_arguments_are_logged_capped_and_say_so() {
    use handoff::demo::script::{confident, reply};
    let content = "y".repeat(200_000);
    let junior = Script::new(vec![
        reply(
            confident("Writing."),
            Some((
                "c1",
                "write_file",
                serde_json::json!({"path": "big.txt", "content": content}),
            )),
        ),
        reply(
            confident("Done."),
            Some(("c2", "finish", serde_json::json!({"summary": "done"}))),
        ),
    ]);
    let (j, s) = crate::agent::support::servers(junior, Script::new(vec![])).await;
    let mut cfg = crate::agent::support::config(&j, &s);
    cfg.policy.constant = 0.01;
    cfg.agent.max_argument_bytes = 4096;
    let repo = crate::agent::support::repo(&[("notes.txt", "hi\n")]);
    let ran = crate::agent::support::run(
        cfg,
        repo.path(),
        "write it",
        vec![],
        handoff::agent::session::Approvals::Granted,
    )
    .await;
    let logged = ran
        .events
        .iter()
        .find_map(|e| match e {
            handoff::protocol::Event::ToolCalled {
                name, arguments, ..
            } if name == "write_file" => Some(arguments.clone()),
            _ => None,
        })
        .expect("write_file logged");
    let text = logged.as_str().expect("capped arguments are a string");
    assert!(text.len() < 4096 + 200, "{} bytes logged", text.len());
    assert!(
        text.contains("arguments cut at 4096 of") && text.contains("agent.max_argument_bytes"),
        "{}",
        &text[text.len() - 120..]
    );
    assert!(text.starts_with("{\"content\":\"yyy") || text.starts_with("{\"path\""));
    let log = std::fs::metadata(&ran.log).expect("log").len();
    assert!(log < 100_000, "log {log} bytes");
}
