//! A scripted OpenAI-compatible server on loopback.
//!
//! It speaks real HTTP and real server-sent events so that everything above it — the
//! client's SSE parsing, cancellation, retry classification — is exercised exactly as
//! against vLLM or llama.cpp. A script is a queue of [`Reply`]s, one per
//! `POST /v1/chat/completions`; each is raw SSE bytes (so tests can write any server's
//! wire format, quirks included), an HTTP error, or a stream that dies part way. When the
//! queue is empty an optional responder function decides from the request body, which is
//! how fakes that *behave* (reject logprobs with tools, say) are written. Every request is
//! recorded, and the moment a client connection goes away is observable, because
//! mid-stream handoff is only correct if the junior's connection really closes.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::serve::ListenerExt;
use serde_json::{Value, json};
use tokio::sync::Notify;
#[cfg(feature = "testkit")]
use tokio::sync::watch;

/// One SSE write: exact bytes, sent after `delay`.
#[derive(Debug, Clone, PartialEq)]
pub struct RawChunk {
    pub delay: Duration,
    pub bytes: Bytes,
}

impl RawChunk {
    pub fn new(bytes: impl Into<Bytes>) -> Self {
        RawChunk {
            delay: Duration::ZERO,
            bytes: bytes.into(),
        }
    }

    /// Sent `delay` after the previous write, so a stream can look like slow generation.
    pub fn after(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }
}

/// What happens after the last chunk of a streamed reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamEnd {
    /// Finish the HTTP body normally.
    Close,
    /// Kill the connection without finishing the body, like a crashed server.
    #[cfg(feature = "testkit")]
    Abort,
    /// Keep the connection open and silent until the client goes away (or the server
    /// stops), for idle-timeout and cancellation tests.
    #[cfg(feature = "testkit")]
    Hang,
    /// Keep the connection open, writing an SSE comment every `period`, like a server that
    /// is still busy; a write to a closed socket is how a real server notices a client left.
    #[cfg(feature = "testkit")]
    Tick(Duration),
    /// Send the last chunk again and again, as fast as the client reads, until it goes
    /// away: a server that ignores `max_tokens` and never finishes.
    #[cfg(feature = "testkit")]
    Endless,
}

/// A function that answers a request body when the queue is empty.
pub type Responder = Arc<dyn Fn(&Value) -> Reply + Send + Sync>;

/// The answer to one chat-completions request.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// `200 text/event-stream` with these writes, then `end`.
    Sse {
        chunks: Vec<RawChunk>,
        end: StreamEnd,
    },
    /// A non-2xx (or any) status with headers such as `Retry-After` and a body.
    Http {
        status: u16,
        headers: Vec<(String, String)>,
        body: String,
    },
}

impl Reply {
    /// A finished stream of the given writes, each `gap` after the previous one.
    pub fn sse(chunks: impl IntoIterator<Item = Bytes>, gap: Duration) -> Reply {
        Reply::Sse {
            chunks: chunks
                .into_iter()
                .map(|b| RawChunk::new(b).after(gap))
                .collect(),
            end: StreamEnd::Close,
        }
    }

    /// The first `n` writes of a stream, then a killed connection.
    #[cfg(feature = "testkit")]
    pub fn dropped_after(chunks: impl IntoIterator<Item = Bytes>, n: usize) -> Reply {
        Reply::Sse {
            chunks: chunks.into_iter().take(n).map(RawChunk::new).collect(),
            end: StreamEnd::Abort,
        }
    }

    /// An HTTP error with a JSON body in OpenAI's `{"error": {...}}` shape.
    pub fn error(status: u16, message: &str) -> Reply {
        Reply::Http {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            body: json!({"error": {"message": message, "type": "error", "code": status}})
                .to_string(),
        }
    }

    /// Adds a response header (only to `Http` replies).
    #[cfg(feature = "testkit")]
    pub fn with_header(mut self, name: &str, value: &str) -> Reply {
        if let Reply::Http { headers, .. } = &mut self {
            headers.push((name.into(), value.into()));
        }
        self
    }
}

/// The whole behaviour of one fake server.
#[derive(Clone, Default)]
pub struct Script {
    pub replies: Vec<Reply>,
    /// Model ids listed by `GET /v1/models`.
    pub models: Vec<String>,
    pub responder: Option<Responder>,
}

impl Script {
    /// Lists one model, `scripted`, so a config with `model = "scripted"` passes doctor.
    pub fn new(replies: Vec<Reply>) -> Script {
        Script {
            replies,
            models: vec!["scripted".into()],
            responder: None,
        }
    }

    pub fn models(mut self, models: &[&str]) -> Script {
        self.models = models.iter().map(|m| m.to_string()).collect();
        self
    }

    /// Answers requests from their body once the queue is empty.
    pub fn respond_with(mut self, f: impl Fn(&Value) -> Reply + Send + Sync + 'static) -> Script {
        self.responder = Some(Arc::new(f));
        self
    }
}

/// One request as the server received it.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedRequest {
    pub path: String,
    /// `authorization` header, if any (tests check that keys are sent or withheld).
    pub authorization: Option<String>,
    /// The JSON body; a non-JSON body is kept as a JSON string.
    pub body: Value,
    /// When the request's headers had arrived (before its body was read): how benchmarks
    /// time a handoff, from the judge's decision to the senior's first byte.
    pub received: Instant,
}

#[derive(Default)]
struct Shared {
    queue: VecDeque<Reply>,
    requests: Vec<RecordedRequest>,
    closed: Vec<Instant>,
}

struct Inner {
    shared: Mutex<Shared>,
    models: Vec<String>,
    responder: Option<Responder>,
    closed_notify: Notify,
    /// Turns true when the server stops, so the fault streams that never end by themselves
    /// (hanging, ticking, endless) end then.
    #[cfg(feature = "testkit")]
    shutdown: watch::Receiver<bool>,
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, Shared> {
        // A test that panicked while holding the lock leaves valid data behind; keep going.
        self.shared.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// A running fake server; stops when dropped.
pub struct ScriptedServer {
    addr: SocketAddr,
    inner: Arc<Inner>,
    #[cfg(feature = "testkit")]
    stop: watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
}

impl ScriptedServer {
    /// Binds 127.0.0.1 on a free port and starts serving on the current tokio runtime.
    pub async fn start(script: Script) -> std::io::Result<ScriptedServer> {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await?;
        let addr = listener.local_addr()?;
        #[cfg(feature = "testkit")]
        let (stop, shutdown) = watch::channel(false);
        let inner = Arc::new(Inner {
            shared: Mutex::new(Shared {
                queue: script.replies.into(),
                ..Shared::default()
            }),
            models: script.models,
            responder: script.responder,
            closed_notify: Notify::new(),
            #[cfg(feature = "testkit")]
            shutdown,
        });
        let app = Router::new()
            .route("/v1/chat/completions", post(chat))
            .route("/v1/models", get(models))
            .with_state(inner.clone());
        // Every write leaves at once, so tests that split a stream see their splits.
        let listener = listener.tap_io(|tcp| {
            let _ = tcp.set_nodelay(true);
        });
        let task = tokio::spawn(async move {
            // Serving ends only when the task is aborted; errors of single connections are
            // handled inside axum.
            let _ = axum::serve(listener, app).await;
        });
        Ok(ScriptedServer {
            addr,
            inner,
            #[cfg(feature = "testkit")]
            stop,
            task,
        })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The `/v1` root, as `base_url` in a model config.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// Appends a reply to the queue while running.
    pub fn push(&self, reply: Reply) {
        self.inner.lock().queue.push_back(reply);
    }

    /// Every chat-completions request so far, in arrival order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.inner.lock().requests.clone()
    }

    /// Just the JSON bodies of [`Self::requests`].
    pub fn bodies(&self) -> Vec<Value> {
        self.requests().into_iter().map(|r| r.body).collect()
    }

    /// When each streamed response's connection went away before the stream was done
    /// (client drop or server stop), in order.
    pub fn closed_at(&self) -> Vec<Instant> {
        self.inner.lock().closed.clone()
    }

    /// Waits until at least `n` streams were closed early; returns the time of the `n`th.
    pub async fn wait_closed(&self, n: usize, timeout: Duration) -> Option<Instant> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let notified = self.inner.closed_notify.notified();
            tokio::pin!(notified);
            // Registered before the check, so a close between check and wait is not missed.
            notified.as_mut().enable();
            if let Some(t) = self.inner.lock().closed.get(n.saturating_sub(1)) {
                return Some(*t);
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                return self.inner.lock().closed.get(n.saturating_sub(1)).copied();
            }
        }
    }
}

impl Drop for ScriptedServer {
    fn drop(&mut self) {
        #[cfg(feature = "testkit")]
        let _ = self.stop.send(true);
        self.task.abort();
    }
}

async fn models(State(inner): State<Arc<Inner>>) -> Response {
    let data: Vec<Value> = inner
        .models
        .iter()
        .map(|id| json!({"id": id, "object": "model", "owned_by": "scripted"}))
        .collect();
    axum::Json(json!({"object": "list", "data": data})).into_response()
}

async fn chat(State(inner): State<Arc<Inner>>, request: Request) -> Response {
    let received = Instant::now();
    let (parts, body) = request.into_parts();
    let headers: HeaderMap = parts.headers;
    let body = axum::body::to_bytes(body, usize::MAX)
        .await
        .unwrap_or_default();
    let body: Value = serde_json::from_slice(&body)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&body).into_owned()));
    let authorization = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let reply = {
        let mut shared = inner.lock();
        shared.requests.push(RecordedRequest {
            path: "/v1/chat/completions".into(),
            authorization,
            body: body.clone(),
            received,
        });
        shared.queue.pop_front()
    };
    let reply = match (reply, &inner.responder) {
        (Some(r), _) => r,
        (None, Some(f)) => f(&body),
        (None, None) => Reply::error(500, "scripted server: script exhausted"),
    };
    match reply {
        Reply::Http {
            status,
            headers,
            body,
        } => http_reply(status, &headers, body),
        Reply::Sse { chunks, end } => sse_reply(inner.clone(), chunks, end),
    }
}

fn http_reply(status: u16, headers: &[(String, String)], body: String) -> Response {
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response = (status, body).into_response();
    for (name, value) in headers {
        if let (Ok(n), Ok(v)) = (
            HeaderName::try_from(name.as_str()),
            HeaderValue::try_from(value.as_str()),
        ) {
            response.headers_mut().insert(n, v);
        }
    }
    response
}

/// Records an early close when dropped before the stream completed.
struct CloseWatch {
    inner: Arc<Inner>,
    done: bool,
}

impl CloseWatch {
    fn completed(&mut self) {
        self.done = true;
    }
}

impl Drop for CloseWatch {
    fn drop(&mut self) {
        if !self.done {
            self.inner.lock().closed.push(Instant::now());
            self.inner.closed_notify.notify_waiters();
        }
    }
}

fn sse_reply(inner: Arc<Inner>, chunks: Vec<RawChunk>, end: StreamEnd) -> Response {
    #[cfg(feature = "testkit")]
    let (shutdown, last) = (
        inner.shutdown.clone(),
        chunks.last().map(|c| c.bytes.clone()).unwrap_or_default(),
    );
    let watch = CloseWatch { inner, done: false };
    let state = (watch, chunks.into_iter(), false);
    let stream = futures::stream::unfold(state, move |(mut watch, mut chunks, over)| {
        #[cfg(feature = "testkit")]
        let (mut shutdown, last) = (shutdown.clone(), last.clone());
        async move {
            if over {
                return None;
            }
            if let Some(chunk) = chunks.next() {
                if !chunk.delay.is_zero() {
                    tokio::time::sleep(chunk.delay).await;
                }
                return Some((Ok::<_, std::io::Error>(chunk.bytes), (watch, chunks, false)));
            }
            match end {
                StreamEnd::Close => {
                    watch.completed();
                    None
                }
                #[cfg(feature = "testkit")]
                StreamEnd::Abort => {
                    // The server's own doing, not a client leaving. The pause lets the
                    // chunks before it reach the wire: "n chunks, then dead".
                    watch.completed();
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    Some((
                        Err(std::io::Error::other("scripted abort")),
                        (watch, chunks, true),
                    ))
                }
                #[cfg(feature = "testkit")]
                StreamEnd::Hang => {
                    let _ = shutdown.wait_for(|stop| *stop).await;
                    None
                }
                #[cfg(feature = "testkit")]
                StreamEnd::Endless => {
                    if *shutdown.borrow() {
                        return None;
                    }
                    tokio::task::yield_now().await;
                    Some((Ok(last), (watch, chunks, false)))
                }
                #[cfg(feature = "testkit")]
                StreamEnd::Tick(period) => {
                    tokio::select! {
                        _ = shutdown.wait_for(|stop| *stop) => None,
                        _ = tokio::time::sleep(period) => Some((
                            Ok(Bytes::from_static(b": tick\n\n")),
                            (watch, chunks, false),
                        )),
                    }
                }
            }
        }
    });
    Response::builder()
        .status(StatusCode::OK)
        .header("content-type", "text/event-stream")
        .header("cache-control", "no-cache")
        .body(Body::from_stream(stream))
        .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}
