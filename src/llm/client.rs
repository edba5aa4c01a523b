//! One OpenAI-compatible endpoint: streamed completions, retry timing, cost.

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use futures::Stream;
use rand::Rng;
use serde_json::Value;

use super::decode::StreamDecoder;
use super::error::LlmError;
use super::request::{self, LogprobMode};
use super::sse::{Flow, SseBody};
use super::transport;
use super::types::{ChatRequest, Delta, Usage};
use crate::config::ModelConfig;

/// The parsed deltas of one response. Dropping it closes the HTTP connection.
pub type DeltaStream = Pin<Box<dyn Stream<Item = Result<Delta, LlmError>> + Send>>;

/// The `kind` of the warning sent when llama.cpp's refusal of logprobs with tools made the
/// client switch to `n_probs`.
pub const LOGPROBS_WITH_TOOLS_REJECTED: &str = "logprobs_with_tools_rejected";

/// First retry delay before jitter; doubles per attempt.
const BACKOFF_BASE: Duration = Duration::from_millis(500);
/// Longest computed backoff.
const BACKOFF_CAP: Duration = Duration::from_secs(20);
/// A `Retry-After` longer than this is not waited for: the caller should fall back instead.
const RETRY_AFTER_CAP: Duration = Duration::from_secs(120);

type RawEvents = SseBody;

/// A streaming client for one endpoint (junior or senior).
#[derive(Clone)]
pub struct Client {
    http: reqwest::Client,
    cfg: ModelConfig,
    api_key: Option<String>,
    /// Set once the server refused `logprobs` together with tools (llama.cpp); later
    /// requests with tools then ask for `n_probs` straight away.
    tools_logprobs_rejected: Arc<AtomicBool>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("base_url", &self.cfg.base_url)
            .field("model", &self.cfg.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "<set>"))
            .finish_non_exhaustive()
    }
}

impl Client {
    /// Reads the API key from the env var named by `api_key_env` (never logs it; the
    /// variable is then taken out of the environment, see [`super::keys`]).
    pub fn new(cfg: &ModelConfig) -> Result<Client, LlmError> {
        let api_key = match &cfg.api_key_env {
            None => None,
            Some(var) => Some(super::keys::read(var).ok_or_else(|| LlmError::Config {
                message: format!("environment variable {var} (api_key_env) is not set"),
            })?),
        };
        Client::with_api_key(cfg, api_key)
    }

    /// Like [`Client::new`] with the key given directly (`None` sends no key); for callers
    /// that hold a key from elsewhere, and for tests that must not touch the environment.
    pub fn with_api_key(cfg: &ModelConfig, api_key: Option<String>) -> Result<Client, LlmError> {
        // A key that is not a valid header value would only fail the first request, with an
        // error about headers; say what is wrong with it here instead.
        if let Some(key) = &api_key
            && (key.is_empty() || !key.bytes().all(|b| b.is_ascii_graphic()))
        {
            return Err(LlmError::Config {
                message: "the API key is empty or contains characters a header cannot carry".into(),
            });
        }
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs_f64(cfg.connect_timeout_s))
            .build()
            .map_err(|e| LlmError::Config {
                message: format!("cannot build the HTTP client: {e}"),
            })?;
        Ok(Client {
            http,
            cfg: cfg.clone(),
            api_key,
            tools_logprobs_rejected: Arc::new(AtomicBool::new(false)),
        })
    }

    /// The model id every request names; events and cost lines carry it.
    pub fn model(&self) -> &str {
        &self.cfg.model
    }

    /// The same endpoint sampled at another temperature: the `code` protocol's fresh
    /// reply after a failed check ([`crate::config::Retry::Resample`]) shares the
    /// connection pool and the logprobs fallback already learned.
    pub fn sampling_at(&self, temperature: f32) -> Client {
        let mut client = self.clone();
        client.cfg.temperature = temperature;
        client
    }

    /// The endpoint settings this client was built from (prices, timeouts, retries).
    pub fn config(&self) -> &ModelConfig {
        &self.cfg
    }

    /// One attempt: sends the request, returns the parsed delta stream.
    ///
    /// Does not retry faults (the caller logs each and asks [`Client::retry_delay`]), with
    /// one exception that is a property of the server, not a fault: llama.cpp rejects
    /// `logprobs` together with tools when streaming, so that 4xx is answered at once by
    /// the same request with its native `n_probs`, announced by a `Delta::Warning`.
    pub async fn stream_once(&self, req: &ChatRequest) -> Result<DeltaStream, LlmError> {
        self.stream_unredacted(req)
            .await
            .map_err(|e| self.redact(e))
    }

    /// Masks this client's key in an error before it leaves the client (see
    /// [`LlmError::redacted`]).
    fn redact(&self, e: LlmError) -> LlmError {
        match &self.api_key {
            Some(key) => e.redacted(key),
            None => e,
        }
    }

    async fn stream_unredacted(&self, req: &ChatRequest) -> Result<DeltaStream, LlmError> {
        let configured = LogprobMode::from_config(&self.cfg);
        let sends_tools = self.cfg.tool_protocol.sends_tools() && !req.tools.is_empty();
        let use_n_probs = sends_tools
            && configured.requested()
            && self.tools_logprobs_rejected.load(Ordering::Relaxed);
        let mode = if use_n_probs {
            n_probs_mode(&self.cfg)
        } else {
            configured
        };
        match self.open(req, mode).await {
            Ok(events) => Ok(self.deltas(events, req, mode, Vec::new())),
            Err(e)
                if matches!(mode, LogprobMode::OpenAi { .. })
                    && sends_tools
                    && rejects_logprobs_with_tools(&e) =>
            {
                self.tools_logprobs_rejected.store(true, Ordering::Relaxed);
                let fallback = n_probs_mode(&self.cfg);
                let events = self.open(req, fallback).await?;
                let warning = Delta::Warning {
                    kind: LOGPROBS_WITH_TOOLS_REJECTED.into(),
                    message: format!(
                        "the server rejected logprobs together with tools ({e}); retried with \
                         llama.cpp's n_probs instead"
                    ),
                };
                Ok(self.deltas(events, req, fallback, vec![warning]))
            }
            Err(e) if self.cfg.tool_protocol.constrains_reply() => Err(format_rejected(e)),
            Err(e) => Err(e),
        }
    }

    /// How long to wait after attempt number `attempt` (1 = the first request) failed with
    /// `err` before sending it again; `None` means give up. At most `max_retries` retries;
    /// jittered (half to full of an exponential step) so that clients do not retry in step;
    /// a 429's `Retry-After` is honoured as a lower bound, unless it is too long to wait.
    pub fn retry_delay(&self, err: &LlmError, attempt: u32) -> Option<Duration> {
        // 0 is read as 1, so a caller counting from zero retries once more, never less.
        let attempt = attempt.max(1);
        if !err.retryable() || attempt > self.cfg.max_retries {
            return None;
        }
        let mut rng = rand::rng();
        if let LlmError::RateLimited {
            retry_after: Some(after),
            ..
        } = err
        {
            if *after > RETRY_AFTER_CAP {
                return None;
            }
            let spread = after.as_secs_f64() * 0.1 + 0.05;
            return Some(*after + Duration::from_secs_f64(rng.random_range(0.0..spread)));
        }
        let exp = BACKOFF_BASE.saturating_mul(1u32 << (attempt - 1).min(16));
        let full = exp.min(BACKOFF_CAP).as_secs_f64();
        Some(Duration::from_secs_f64(rng.random_range(full / 2.0..=full)))
    }

    /// USD for a usage under this endpoint's prices.
    pub fn cost(&self, usage: Usage) -> f64 {
        (usage.prompt_tokens as f64 * self.cfg.price_input_per_mtok
            + usage.completion_tokens as f64 * self.cfg.price_output_per_mtok)
            / 1e6
    }

    /// Model ids the server lists under `GET /models`.
    pub async fn list_models(&self) -> Result<Vec<String>, LlmError> {
        self.list_models_unredacted()
            .await
            .map_err(|e| self.redact(e))
    }

    async fn list_models_unredacted(&self) -> Result<Vec<String>, LlmError> {
        let url = format!("{}/models", self.cfg.base_url.trim_end_matches('/'));
        let mut get = self.http.get(&url);
        if let Some(key) = &self.api_key {
            get = get.bearer_auth(key);
        }
        let response = tokio::time::timeout(self.idle(), get.send())
            .await
            .map_err(|_| LlmError::Timeout {
                message: format!("no answer from {url}"),
            })?
            .map_err(|e| transport::classify_reqwest(&e, &url))?;
        if !response.status().is_success() {
            let f = transport::failure(response).await;
            return Err(LlmError::from_status(f.status, f.retry_after, &f.body));
        }
        let list: Value = response.json().await.map_err(|e| LlmError::Protocol {
            message: format!("GET /models returned something other than JSON: {e}"),
        })?;
        let ids = list
            .get("data")
            .and_then(Value::as_array)
            .map(|data| {
                data.iter()
                    .filter_map(|m| m.get("id").and_then(Value::as_str))
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default();
        Ok(ids)
    }

    fn idle(&self) -> Duration {
        Duration::from_secs_f64(self.cfg.idle_timeout_s)
    }

    /// Sends the request once (no `OPENAI_*` variable is read, and no bearer header goes
    /// out without a key) and hands back the body as SSE chunks; a non-2xx answer comes
    /// back with status, `Retry-After` and a bounded prefix of its body.
    async fn open(&self, req: &ChatRequest, mode: LogprobMode) -> Result<RawEvents, LlmError> {
        let body = request::body(&self.cfg, req, mode);
        let url = format!(
            "{}/chat/completions",
            self.cfg.base_url.trim_end_matches('/')
        );
        let mut post = self
            .http
            .post(&url)
            .header(reqwest::header::ACCEPT, "text/event-stream")
            .json(&body);
        if let Some(key) = &self.api_key {
            post = post.bearer_auth(key);
        }
        let opened = tokio::time::timeout(self.idle(), post.send()).await;
        let response = match opened {
            Err(_) => {
                return Err(LlmError::Timeout {
                    message: format!(
                        "no response headers within {:.0} s",
                        self.cfg.idle_timeout_s
                    ),
                });
            }
            Ok(Err(e)) => return Err(transport::classify_reqwest(&e, &self.cfg.base_url)),
            Ok(Ok(response)) => response,
        };
        if !response.status().is_success() {
            let f = transport::failure(response).await;
            return Err(LlmError::from_status(f.status, f.retry_after, &f.body));
        }
        Ok(SseBody::new(response, &self.cfg.base_url))
    }

    fn deltas(
        &self,
        events: RawEvents,
        req: &ChatRequest,
        mode: LogprobMode,
        first: Vec<Delta>,
    ) -> DeltaStream {
        let top_k = match mode {
            LogprobMode::Off => 0,
            LogprobMode::OpenAi { top } => usize::from(top),
            LogprobMode::NProbs { .. } => usize::from(self.cfg.top_logprobs),
        };
        let mut decoder = StreamDecoder::new(mode.requested(), top_k);
        if self.cfg.tool_protocol.reads_text() {
            decoder = decoder.reading_text_calls(&req.tools);
        }
        let state = Decoding {
            events,
            decoder,
            pending: first.into(),
            decoded: Vec::new(),
            failed: None,
            idle: self.idle(),
            secret: self.api_key.clone(),
            over: false,
        };
        Box::pin(futures::stream::unfold(state, Decoding::next))
    }
}

/// `n_probs` asks for at least one alternative so the chosen token's probability comes back.
fn n_probs_mode(cfg: &ModelConfig) -> LogprobMode {
    LogprobMode::NProbs {
        n: cfg.top_logprobs.max(1),
    }
}

/// llama.cpp: `logprobs is not supported with tools + stream` (400, or 500 in old builds).
/// A 4xx that names the schema or `response_format`, said in terms of the setting that
/// sent it: the server has no constrained decoding (or cannot compile the schema), and the
/// fix is in the config, not the server.
fn format_rejected(e: LlmError) -> LlmError {
    match e {
        LlmError::BadRequest { status, message } => {
            let m = message.to_lowercase();
            let about_format = ["response_format", "json_schema", "schema", "grammar"]
                .iter()
                .any(|w| m.contains(w));
            if !about_format {
                return LlmError::BadRequest { status, message };
            }
            LlmError::BadRequest {
                status,
                message: format!(
                    "{message} (the server rejected the response_format schema that \
                     tool_protocol = \"json_schema\" sends; set tool_protocol = \"text\" for \
                     this endpoint if the server has no JSON-schema constrained decoding)"
                ),
            }
        }
        other => other,
    }
}

fn rejects_logprobs_with_tools(e: &LlmError) -> bool {
    match e {
        LlmError::BadRequest { message, .. } | LlmError::Server { message, .. } => {
            let m = message.to_lowercase();
            m.contains("logprobs") && m.contains("tool")
        }
        _ => false,
    }
}

/// The state of one delta stream.
struct Decoding {
    events: RawEvents,
    decoder: StreamDecoder,
    pending: VecDeque<Delta>,
    /// The deltas of the last read, before they join `pending` (reused, so reading a chunk
    /// allocates nothing for the list).
    decoded: Vec<Delta>,
    /// A fault met in the last read, reported once the deltas before it are out.
    failed: Option<LlmError>,
    idle: Duration,
    /// The client's key, masked in errors raised mid-stream.
    secret: Option<String>,
    over: bool,
}

impl Decoding {
    async fn next(mut self) -> Option<(Result<Delta, LlmError>, Decoding)> {
        loop {
            if let Some(d) = self.pending.pop_front() {
                return Some((Ok(d), self));
            }
            if let Some(e) = self.failed.take() {
                return Some((Err(e), self));
            }
            if self.over {
                return None;
            }
            let decoder = &mut self.decoder;
            let decoded = &mut self.decoded;
            let mut on_data = |data: &[u8]| decoder.push_json(data, decoded);
            let read = tokio::time::timeout(self.idle, self.events.read(&mut on_data)).await;
            self.pending.extend(self.decoded.drain(..));
            let step = match read {
                Err(_) => Err(LlmError::Timeout {
                    message: format!("no chunk for {:.0} s", self.idle.as_secs_f64()),
                }),
                Ok(Ok(Flow::More)) => Ok(()),
                Ok(Ok(Flow::Done)) => {
                    self.over = true;
                    self.decoder.end().map(|end| self.pending.extend(end))
                }
                Ok(Err(e)) => Err(e),
            };
            if let Err(e) = step {
                self.over = true;
                self.failed = Some(match &self.secret {
                    Some(key) => e.redacted(key),
                    None => e,
                });
            }
        }
    }
}
