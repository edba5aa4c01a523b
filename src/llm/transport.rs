//! What the HTTP layer reports, in the client's terms.
//!
//! Every request is sent exactly once on reqwest (the agent loop sees and logs each fault
//! and schedules retries itself), so all that is left here is reading an error answer
//! (status, `Retry-After`, a bounded prefix of the body) and naming reqwest's faults.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::error::{LlmError, parse_retry_after};

/// Most bytes of an error body kept for the message.
const ERROR_BODY_LIMIT: usize = 16 * 1024;

/// A non-2xx response: what [`LlmError::from_status`] needs to name the fault and to tell
/// whether and when it may be retried.
#[derive(Debug)]
pub struct HttpFailure {
    pub status: u16,
    pub retry_after: Option<Duration>,
    pub body: String,
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
