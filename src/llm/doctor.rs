//! `handoff doctor`: what an endpoint can do for the judge, and what to change if not.
//!
//! Each endpoint gets the same short probes the agent depends on — reachable, model
//! listed, a streamed completion, logprobs and their top-k, a tool call in a stream, and
//! tools together with logprobs — then one verdict line naming the fix. Probes use the real
//! client, so what doctor reports is what a session will meet (including the llama.cpp
//! `n_probs` fallback).
//!
//! A verdict names the fix, not the symptom: the corrected `base_url` when the server
//! answers only under `/v1`; the listed model id closest to a missing one (an Ollama tag);
//! the proxy variable when a proxy sits between handoff and a local server; a network
//! problem (not "start the server") for a remote host; and, with a context window to
//! check, whether the server keeps that much prompt (from its `usage.prompt_tokens`).

mod context;
pub(crate) mod hints;
mod verdict;

use verdict::{Place, listed, model_fix, v1_fix};

use std::time::{Duration, Instant};

use futures::StreamExt;
use serde::Serialize;

use super::client::{Client, LOGPROBS_WITH_TOOLS_REJECTED};
use super::error::LlmError;
use super::types::{ChatRequest, Delta, Message, ToolSpec};
use crate::config::{Config, ModelConfig, ToolProtocol};

/// How one probe went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Ok,
    /// Usable, but degraded (the judge loses something, or the model misbehaved).
    Warn,
    /// The endpoint cannot be used for this.
    Fail,
    /// Not applicable (e.g. logprobs not requested) or not reached.
    Skip,
}

impl Outcome {
    pub fn label(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::Warn => "warn",
            Outcome::Fail => "FAIL",
            Outcome::Skip => "skip",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Probe {
    pub name: &'static str,
    pub outcome: Outcome,
    pub detail: String,
}

/// Everything doctor found out about one endpoint.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EndpointReport {
    /// `junior` or `senior`.
    pub role: String,
    pub base_url: String,
    pub model: String,
    pub probes: Vec<Probe>,
    /// One line: fine, or the fix to apply.
    pub verdict: String,
    /// False when a session could not use this endpoint at all.
    pub usable: bool,
}

/// What else to check beyond the standard probes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Options {
    /// Check that the server keeps a prompt of this many tokens (the endpoint's
    /// `context_window`); `None` skips the context probe.
    pub context_window: Option<u32>,
}

/// Probes both endpoints of a configuration.
pub async fn check(config: &Config) -> Vec<EndpointReport> {
    vec![
        check_endpoint("junior", &config.junior).await,
        check_endpoint("senior", &config.senior).await,
    ]
}

/// Probes one endpoint with the standard probes.
pub async fn check_endpoint(role: &str, cfg: &ModelConfig) -> EndpointReport {
    check_endpoint_with(role, cfg, Options::default()).await
}

/// Probes one endpoint, with the extra checks of `opts`.
pub async fn check_endpoint_with(role: &str, cfg: &ModelConfig, opts: Options) -> EndpointReport {
    let mut probe_cfg = cfg.clone();
    // Probes need only a few tokens; a tool call needs a few dozen.
    probe_cfg.max_tokens = Some(cfg.max_tokens.unwrap_or(64).min(64));
    let mut report = EndpointReport {
        role: role.into(),
        base_url: cfg.base_url.clone(),
        model: cfg.model.clone(),
        probes: Vec::new(),
        verdict: String::new(),
        usable: false,
    };
    let client = match Client::new(&probe_cfg) {
        Ok(c) => c,
        Err(e) => {
            report
                .probes
                .push(probe("client", Outcome::Fail, e.to_string()));
            report.verdict = match &cfg.api_key_env {
                Some(var) => format!("fix: export {var}=<your key> (api_key_env names it)"),
                None => format!("fix: {e}"),
            };
            return report;
        }
    };
    let mut fixes: Vec<String> = Vec::new();
    let place = Place::of(&cfg.base_url);
    let mut wrong_model: Option<String> = None;

    // Reachable, and the model listed.
    match client.list_models().await {
        Ok(models) => {
            report.probes.push(probe(
                "reachable",
                Outcome::Ok,
                format!("GET /models lists {} model(s)", models.len()),
            ));
            if models.iter().any(|m| m == &cfg.model) {
                report
                    .probes
                    .push(probe("model listed", Outcome::Ok, String::new()));
            } else {
                report.probes.push(probe(
                    "model listed",
                    Outcome::Warn,
                    format!("`{}` not among: {}", cfg.model, listed(&models)),
                ));
                let fix = model_fix(&cfg.model, &models);
                wrong_model = Some(fix.clone());
                fixes.push(fix);
            }
        }
        Err(e @ (LlmError::Connect { .. } | LlmError::Timeout { .. })) => {
            report
                .probes
                .push(probe("reachable", Outcome::Fail, e.to_string()));
            report.verdict = place.unreachable_fix(&cfg.base_url, &e);
            return report;
        }
        Err(e @ LlmError::Auth { .. }) => {
            report
                .probes
                .push(probe("reachable", Outcome::Fail, e.to_string()));
            report.verdict = match &cfg.api_key_env {
                Some(var) => format!("fix: the server rejects the key in ${var}"),
                None => "fix: the server wants a key; set api_key_env".into(),
            };
            return report;
        }
        Err(e) => {
            if let Some(fix) = place.proxy_fix() {
                report
                    .probes
                    .push(probe("reachable", Outcome::Fail, e.to_string()));
                report.verdict = fix;
                return report;
            }
            if let LlmError::BadRequest { status: 404, .. } = e
                && let Some(fix) = v1_fix(cfg, "GET /models answered HTTP 404").await
            {
                report
                    .probes
                    .push(probe("reachable", Outcome::Fail, e.to_string()));
                report.verdict = fix;
                return report;
            }
            // Some servers have no /models; the completion probe decides.
            report
                .probes
                .push(probe("reachable", Outcome::Warn, e.to_string()));
            report
                .probes
                .push(probe("model listed", Outcome::Skip, "no model list".into()));
        }
    }

    // A short streamed completion, logprobs as configured.
    let plain = ChatRequest {
        messages: vec![Message::user("Reply with the single word: ready")],
        tools: Vec::new(),
    };
    let run = attempt(&client, &plain).await;
    match &run.error {
        Some(e) => {
            report
                .probes
                .push(probe("stream", Outcome::Fail, e.to_string()));
            report.verdict = match (e, &wrong_model) {
                (LlmError::BadRequest { .. }, Some(fix)) => format!("fix: {fix}"),
                (LlmError::BadRequest { status: 404, .. }, None) => {
                    v1_fix(cfg, "the completion answered HTTP 404")
                        .await
                        .unwrap_or_else(|| format!("fix: a streamed completion fails: {e}"))
                }
                _ => format!("fix: a streamed completion fails: {e}"),
            };
            return report;
        }
        None => report.probes.push(probe(
            "stream",
            if run.finish.is_some() {
                Outcome::Ok
            } else {
                Outcome::Warn
            },
            format!(
                "{} token(s), finish {}, first token after {} ms",
                run.tokens,
                run.finish.as_deref().unwrap_or("none"),
                run.first_token_ms.unwrap_or(0)
            ),
        )),
    }
    report.usable = true;
    if cfg.logprobs {
        let wanted = usize::from(cfg.top_logprobs);
        if run.with_logprob == 0 {
            report.probes.push(probe(
                "logprobs",
                Outcome::Warn,
                "absent: the judge will use step evidence only".into(),
            ));
            fixes.push(
                "no logprobs (LM Studio-like): the judge falls back to step evidence; use a \
                 server with logprobs (vLLM, llama.cpp, Ollama ≥ 0.12.11) or set logprobs = false"
                    .into(),
            );
        } else if run.max_top < wanted {
            report.probes.push(probe(
                "logprobs",
                Outcome::Warn,
                format!("top-{} alternatives, asked for {wanted}", run.max_top),
            ));
            fixes.push(format!(
                "the server returns top-{} only; set top_logprobs = {}",
                run.max_top, run.max_top
            ));
        } else {
            report.probes.push(probe(
                "logprobs",
                Outcome::Ok,
                format!(
                    "{}/{} tokens with logprobs, top-{}",
                    run.with_logprob, run.tokens, run.max_top
                ),
            ));
        }
    } else {
        report
            .probes
            .push(probe("logprobs", Outcome::Skip, "not requested".into()));
    }

    // Tools in a stream (logprobs off, to test one thing at a time), then tools + logprobs;
    // an endpoint under the code protocol is never sent tools, so nothing to probe.
    if cfg.tool_protocol == ToolProtocol::Code {
        for name in ["tools in stream", "tools + logprobs"] {
            report.probes.push(probe(
                name,
                Outcome::Skip,
                "tool_protocol = \"code\" sends no tools".into(),
            ));
        }
    } else {
        tool_probes(cfg, &client, &probe_cfg, &mut report, &mut fixes).await;
    }

    if let Some(window) = opts.context_window {
        let (p, fix) = context::check(&client, run.prompt_tokens, window).await;
        report.probes.push(p);
        fixes.extend(fix);
    }

    report.verdict = if fixes.is_empty() {
        "ok: ready".into()
    } else {
        fixes.join("; ")
    };
    report
}

/// The two tool probes, for endpoints that are sent tools.
async fn tool_probes(
    cfg: &ModelConfig,
    client: &Client,
    probe_cfg: &ModelConfig,
    report: &mut EndpointReport,
    fixes: &mut Vec<String>,
) {
    let tools = tool_request();
    let mut no_lp_cfg = probe_cfg.clone();
    no_lp_cfg.logprobs = false;
    let tools_plain = match Client::new(&no_lp_cfg) {
        Ok(c) => attempt(&c, &tools).await,
        Err(e) => Attempt::failed(e),
    };
    report
        .probes
        .push(tool_probe("tools in stream", &tools_plain));
    match (&tools_plain.error, tools_plain.calls) {
        (Some(e), _) => fixes.push(format!("tool calls fail in a stream: {e}")),
        (None, 0) => fixes.push(
            "the model answered without calling the tool; use a tool-calling model (vLLM: \
             --enable-auto-tool-choice --tool-call-parser …; llama.cpp: --jinja)"
                .into(),
        ),
        _ => {}
    }
    if cfg.logprobs {
        let both = attempt(client, &tools).await;
        let mut p = tool_probe("tools + logprobs", &both);
        if both.fell_back {
            p.outcome = Outcome::Warn;
            p.detail = format!(
                "rejected; retried with n_probs: {} ({})",
                if both.with_logprob > 0 {
                    "logprobs present"
                } else {
                    "still no logprobs"
                },
                p.detail
            );
            fixes
                .push("llama.cpp: logprobs+tools rejected; handoff will retry with n_probs".into());
        } else if both.error.is_none() && both.tokens > 0 && both.with_logprob == 0 {
            p.outcome = Outcome::Warn;
            p.detail = format!("no logprobs with tools ({})", p.detail);
        }
        if let Some(e) = &both.error {
            fixes.push(format!("tools together with logprobs fail: {e}"));
        }
        report.probes.push(p);
    } else {
        report.probes.push(probe(
            "tools + logprobs",
            Outcome::Skip,
            "not requested".into(),
        ));
    }
}

fn probe(name: &'static str, outcome: Outcome, detail: String) -> Probe {
    Probe {
        name,
        outcome,
        detail,
    }
}

fn tool_probe(name: &'static str, run: &Attempt) -> Probe {
    match (&run.error, run.calls) {
        (Some(e), _) => probe(name, Outcome::Fail, e.to_string()),
        (None, 0) => probe(
            name,
            Outcome::Warn,
            format!(
                "no tool call (finish {})",
                run.finish.as_deref().unwrap_or("none")
            ),
        ),
        (None, n) => probe(name, Outcome::Ok, format!("{n} call(s) assembled")),
    }
}

fn tool_request() -> ChatRequest {
    ChatRequest {
        messages: vec![
            Message::system("You call tools when asked."),
            Message::user("Call the echo tool with text \"hi\". Do not answer in prose."),
        ],
        tools: vec![ToolSpec {
            name: "echo".into(),
            description: "Echo a text back".into(),
            parameters: serde_json::json!({
                "type": "object",
                "properties": {"text": {"type": "string"}},
                "required": ["text"],
            }),
        }],
    }
}

/// What one probe request produced.
#[derive(Debug, Default)]
struct Attempt {
    tokens: usize,
    with_logprob: usize,
    max_top: usize,
    calls: usize,
    finish: Option<String>,
    fell_back: bool,
    first_token_ms: Option<u128>,
    /// The server's `usage.prompt_tokens`, if it reported usage.
    prompt_tokens: Option<u64>,
    error: Option<LlmError>,
}

impl Attempt {
    fn failed(e: LlmError) -> Attempt {
        Attempt {
            error: Some(e),
            ..Attempt::default()
        }
    }
}

/// Longest a probe may take in total, whatever the endpoint's idle timeout.
const PROBE_LIMIT: Duration = Duration::from_secs(120);

async fn attempt(client: &Client, req: &ChatRequest) -> Attempt {
    let started = Instant::now();
    let mut out = Attempt::default();
    let run = async {
        let mut stream = match client.stream_once(req).await {
            Ok(s) => s,
            Err(e) => {
                out.error = Some(e);
                return;
            }
        };
        while let Some(item) = stream.next().await {
            match item {
                Ok(Delta::Token { logprob, top, .. }) => {
                    out.tokens += 1;
                    out.first_token_ms
                        .get_or_insert(started.elapsed().as_millis());
                    if logprob.is_some() {
                        out.with_logprob += 1;
                    }
                    out.max_top = out.max_top.max(top.len());
                }
                Ok(Delta::ToolCall(_)) => out.calls += 1,
                Ok(Delta::Finish(reason)) => out.finish = Some(reason),
                Ok(Delta::Warning { kind, .. }) => {
                    out.fell_back |= kind == LOGPROBS_WITH_TOOLS_REJECTED;
                }
                Ok(Delta::Usage(u)) => out.prompt_tokens = Some(u.prompt_tokens),
                Err(e) => {
                    out.error = Some(e);
                    return;
                }
            }
        }
    };
    if tokio::time::timeout(PROBE_LIMIT, run).await.is_err() {
        out.error = Some(LlmError::Timeout {
            message: format!("probe took longer than {} s", PROBE_LIMIT.as_secs()),
        });
    }
    out
}

/// The human-readable report: a table per endpoint and its verdict.
pub fn render(reports: &[EndpointReport]) -> String {
    let mut out = String::new();
    for r in reports {
        out.push_str(&format!("{}  {}  model {}\n", r.role, r.base_url, r.model));
        for p in &r.probes {
            let line = format!("  {:<17} {:<5} {}", p.name, p.outcome.label(), p.detail);
            out.push_str(line.trim_end());
            out.push('\n');
        }
        out.push_str(&format!("  verdict: {}\n\n", r.verdict));
    }
    out
}
