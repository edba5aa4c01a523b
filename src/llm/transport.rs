//! The HTTP layer under async-openai: one plain request per call.
//!
//! async-openai's default executor retries 429, 5xx and connect errors itself (sleeping
//! through `Retry-After` up to three times) and turns error responses into its own error
//! type, dropping the headers and, for bodies whose `code` is a number (llama.cpp), even
//! the status. The agent loop must see and log every fault and schedule retries itself, so
//! this service replaces that executor: it sends exactly once, withholds an empty bearer
//! token, and hands non-2xx responses back with status, `Retry-After` and body intact.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use async_openai::error::OpenAIError;
use async_openai::middleware::HttpRequestFactory;

use super::error::{LlmError, parse_retry_after};

/// Most bytes of an error body kept for the message.
const ERROR_BODY_LIMIT: usize = 16 * 1024;

/// A non-2xx response, carried through async-openai inside `OpenAIError::Boxed`.
#[derive(Debug, thiserror::Error)]
#[error("HTTP {status}: {body}")]
pub struct HttpFailure {
    pub status: u16,
    pub retry_after: Option<Duration>,
    pub body: String,
}

/// Sends each request once on a shared `reqwest::Client`.
#[derive(Clone, Debug)]
pub struct SingleAttempt {
    http: reqwest::Client,
}

impl SingleAttempt {
    pub fn new(http: reqwest::Client) -> Self {
        SingleAttempt { http }
    }
}

type AttemptFuture = Pin<Box<dyn Future<Output = Result<reqwest::Response, OpenAIError>> + Send>>;

impl tower::Service<HttpRequestFactory> for SingleAttempt {
    type Response = reqwest::Response;
    type Error = OpenAIError;
    type Future = AttemptFuture;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, factory: HttpRequestFactory) -> Self::Future {
        let http = self.http.clone();
        Box::pin(async move {
            let mut request = factory.build().await?;
            strip_empty_bearer(request.headers_mut());
            let response = http.execute(request).await.map_err(OpenAIError::Reqwest)?;
            if response.status().is_success() {
                return Ok(response);
            }
            Err(OpenAIError::Boxed(Box::new(failure(response).await)))
        })
    }
}

/// async-openai always sends `Authorization: Bearer <key>`; with no key configured that
/// header is noise at best and rejected by some proxies at worst.
fn strip_empty_bearer(headers: &mut reqwest::header::HeaderMap) {
    let empty = headers
        .get(reqwest::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim() == "Bearer");
    if empty {
        headers.remove(reqwest::header::AUTHORIZATION);
    }
}

/// Reads status, retry hints and (a bounded prefix of) the body of an error response.
pub async fn failure(response: reqwest::Response) -> HttpFailure {
    let status = response.status().as_u16();
    let header = |name: &str| {
        response
            .headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    };
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let retry_after = parse_retry_after(
        header("retry-after").as_deref(),
        header("retry-after-ms").as_deref(),
        now,
    );
    // At most ERROR_BODY_LIMIT bytes are read; the rest is never fetched (the connection
    // is dropped with the response), so a huge or endless error body costs nothing.
    let mut response = response;
    let mut bytes: Vec<u8> = Vec::new();
    while bytes.len() < ERROR_BODY_LIMIT {
        match response.chunk().await {
            Ok(Some(chunk)) => bytes.extend_from_slice(&chunk),
            _ => break,
        }
    }
    let body = String::from_utf8_lossy(&bytes[..bytes.len().min(ERROR_BODY_LIMIT)]).into_owned();
    HttpFailure {
        status,
        retry_after,
        body,
    }
}

/// Classifies what async-openai (with this service underneath) reports.
pub fn classify(err: OpenAIError, url: &str) -> LlmError {
    match err {
        OpenAIError::Boxed(boxed) => match boxed.downcast::<HttpFailure>() {
            Ok(f) => LlmError::from_status(f.status, f.retry_after, &f.body),
            Err(other) => LlmError::Protocol {
                message: other.to_string(),
            },
        },
        OpenAIError::Reqwest(e) => classify_reqwest(&e, url),
        OpenAIError::ApiError(api) => {
            LlmError::from_status(api.status_code.as_u16(), None, &api.api_error.message)
        }
        OpenAIError::JSONDeserialize(e, content) => LlmError::Protocol {
            message: format!("malformed chunk ({e}): {}", shorten(&content)),
        },
        OpenAIError::StreamError(e) => LlmError::Protocol {
            message: format!("the stream broke: {e}"),
        },
        OpenAIError::InvalidArgument(m) => LlmError::Config { message: m },
        other => LlmError::Protocol {
            message: other.to_string(),
        },
    }
}

/// Network faults of reqwest: connect and timeout are their own kinds; anything else that
/// broke an exchange in flight is a connection-level fault too.
pub fn classify_reqwest(e: &reqwest::Error, url: &str) -> LlmError {
    let message = error_chain(e);
    if e.is_timeout() {
        LlmError::Timeout { message }
    } else if e.is_connect() || e.is_request() {
        LlmError::Connect {
            url: url.to_string(),
            message,
        }
    } else {
        LlmError::Protocol { message }
    }
}

fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

fn shorten(s: &str) -> String {
    s.chars().take(200).collect()
}
