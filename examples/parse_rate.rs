//! Tool-call parse rate of the system-prompt variants on real models.
//!
//! Sends each task of a suite as a first turn (system prompt + task, as a session starts)
//! to the junior and the senior of a config, once per prompt variant, and counts the replies
//! from which the client read a tool call (native, or from the text under `auto`/`text`).
//! The numbers in docs/results/2026-12-01-tool-call-parse-rates.md come from:
//!
//! ```sh
//! tools/real-models/setup && CFG=$(tools/real-models/serve)
//! cargo run --release --example parse_rate -- --config "$CFG"
//! tools/real-models/stop
//! ```
//!
//! Options: `--suite DIR` (default `suites/bundled`), `--models junior,senior`,
//! `--variants native,text,...`, `--max-tokens N` (default 256), `--out FILE` (one JSON
//! line per reply, text included).

use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, bail};
use futures::StreamExt;
use handoff::agent::tools::spec::specs;
use handoff::config::{Config, ModelConfig, ToolProtocol};
use handoff::eval::suite::Suite;
use handoff::llm::textprompt::system_prompt;
use handoff::llm::{ChatRequest, Client, Delta, Message};

/// (name, protocol, prompt file); text-protocol prompts get the tool list filled in.
const VARIANTS: [(&str, ToolProtocol, &str); 8] = [
    ("native", ToolProtocol::Auto, "prompts/junior.txt"),
    (
        "native-example",
        ToolProtocol::Auto,
        "tools/real-models/prompts/junior_native_example.txt",
    ),
    (
        "text-v1",
        ToolProtocol::Text,
        "tools/real-models/prompts/junior_text_v1.txt",
    ),
    (
        "text-v2",
        ToolProtocol::Text,
        "tools/real-models/prompts/junior_text_v2.txt",
    ),
    (
        "text-tags",
        ToolProtocol::Text,
        "tools/real-models/prompts/junior_text_tags.txt",
    ),
    // The kept prompt: v2 with a worked example of a whole task.
    ("text", ToolProtocol::Text, "prompts/junior_text.txt"),
    ("text-remind", ToolProtocol::Text, "prompts/junior_text.txt"),
    // The kept text prompt, and the reply constrained by a response_format schema.
    (
        "json_schema",
        ToolProtocol::JsonSchema,
        "prompts/junior_text.txt",
    ),
];

struct Args {
    config: PathBuf,
    suite: PathBuf,
    models: Vec<String>,
    variants: Vec<String>,
    max_tokens: u32,
    out: Option<PathBuf>,
}

fn args() -> anyhow::Result<Args> {
    let mut a = Args {
        config: PathBuf::new(),
        suite: "suites/bundled".into(),
        models: vec!["junior".into(), "senior".into()],
        variants: VARIANTS.iter().map(|v| v.0.to_string()).collect(),
        max_tokens: 256,
        out: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().with_context(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--config" => a.config = value()?.into(),
            "--suite" => a.suite = value()?.into(),
            "--models" => a.models = value()?.split(',').map(str::to_string).collect(),
            "--variants" => a.variants = value()?.split(',').map(str::to_string).collect(),
            "--max-tokens" => a.max_tokens = value()?.parse()?,
            "--out" => a.out = Some(value()?.into()),
            other => bail!("unknown option {other}"),
        }
    }
    if a.config.as_os_str().is_empty() {
        bail!("--config FILE is required (tools/real-models/serve prints one)");
    }
    Ok(a)
}

/// What one reply gave.
struct Reply {
    parsed: bool,
    native: bool,
    warnings: Vec<String>,
    text: String,
    tokens: usize,
}

async fn ask(client: &Client, req: &ChatRequest) -> anyhow::Result<Reply> {
    let mut stream = client.stream_once(req).await?;
    let mut r = Reply {
        parsed: false,
        native: false,
        warnings: Vec::new(),
        text: String::new(),
        tokens: 0,
    };
    while let Some(delta) = stream.next().await {
        match delta? {
            Delta::Token { text, .. } => {
                r.text.push_str(&text);
                r.tokens += 1;
            }
            Delta::ToolCall(call) => {
                r.parsed = true;
                r.native = !call.id.starts_with(handoff::llm::decode::TEXT_CALL_ID);
            }
            Delta::Warning { kind, .. } => r.warnings.push(kind),
            Delta::Finish(_) | Delta::Usage(_) => {}
        }
    }
    Ok(r)
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let a = args()?;
    let config = Config::load_file(&a.config)?;
    let suite = Suite::load(&a.suite)?;
    let tools = specs();
    let mut out = match &a.out {
        Some(p) => Some(std::fs::File::create(p)?),
        None => None,
    };
    println!(
        "| model | variant | protocol | parsed | rate | native | text | mean tokens | s/reply |"
    );
    println!("| --- | --- | --- | --- | --- | --- | --- | --- | --- |");
    for model in &a.models {
        let base: &ModelConfig = match model.as_str() {
            "junior" => &config.junior,
            "senior" => &config.senior,
            other => bail!("--models takes junior and senior, not {other}"),
        };
        for (name, protocol, prompt) in VARIANTS
            .iter()
            .filter(|v| a.variants.iter().any(|n| n == v.0))
        {
            let template = std::fs::read_to_string(prompt).with_context(|| prompt.to_string())?;
            let system = if protocol.uses_text() {
                system_prompt(&template, &tools)
            } else {
                template
            };
            let cfg = ModelConfig {
                tool_protocol: *protocol,
                max_tokens: Some(a.max_tokens),
                ..base.clone()
            };
            let client = Client::new(&cfg)?;
            let (mut parsed, mut native, mut tokens) = (0, 0, 0);
            let started = Instant::now();
            for task in &suite.tasks {
                let req = ChatRequest {
                    messages: vec![
                        Message::system(system.clone()),
                        Message::user(task.text.clone()),
                    ],
                    tools: tools.clone(),
                };
                let r = ask(&client, &req)
                    .await
                    .with_context(|| format!("{model} {name} {}", task.id))?;
                parsed += usize::from(r.parsed);
                native += usize::from(r.native);
                tokens += r.tokens;
                if let Some(f) = &mut out {
                    let line = serde_json::json!({
                        "model": model, "variant": name, "task": task.id, "parsed": r.parsed,
                        "native": r.native, "warnings": r.warnings, "tokens": r.tokens, "text": r.text,
                    });
                    writeln!(f, "{line}")?;
                }
            }
            let n = suite.tasks.len().max(1);
            println!(
                "| {model} | {name} | {} | {parsed}/{n} | {:.0}% | {native} | {} | {:.0} | {:.1} |",
                protocol.name(),
                100.0 * parsed as f64 / n as f64,
                parsed - native,
                tokens as f64 / n as f64,
                started.elapsed().as_secs_f64() / n as f64,
            );
        }
    }
    Ok(())
}
