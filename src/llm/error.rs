//! What can go wrong talking to an endpoint, classified for the retry policy and the log.
//!
//! Every variant is a fault of the infrastructure (network, server, configuration), never a
//! failure of the model: a model that writes nonsense produces deltas, not an `LlmError`.
//! The judge must not mistake one for the other, so the agent loop logs these as
//! `Event::Fault` with [`LlmError::kind`] and never feeds them to the belief.

use std::time::Duration;

/// A classified fault of one request.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LlmError {
    /// TCP/TLS connection could not be made.
    #[error("cannot connect to {url}: {message}")]
    Connect { url: String, message: String },
    /// No response headers, or silence between two chunks, for longer than allowed.
    #[error("timed out: {message}")]
    Timeout { message: String },
    /// HTTP 429. `retry_after` is the server's `Retry-After` (or `retry-after-ms`).
    #[error("rate limited (HTTP 429): {message}")]
    RateLimited {
        retry_after: Option<Duration>,
        message: String,
    },
    /// HTTP 401, 402 or 403: the key is missing, wrong, or out of credit.
    #[error("not authorised (HTTP {status}): {message}")]
    Auth { status: u16, message: String },
    /// Any other 4xx: the request itself is wrong (unknown model, bad field).
    #[error("request rejected (HTTP {status}): {message}")]
    BadRequest { status: u16, message: String },
    /// HTTP 5xx.
    #[error("server error (HTTP {status}): {message}")]
    Server { status: u16, message: String },
    /// The stream broke its contract: malformed chunk, connection dropped mid-stream, or an
    /// error object inside an HTTP-200 stream.
    #[error("stream protocol error: {message}")]
    Protocol { message: String },
    /// The endpoint cannot be used as configured (e.g. the key's variable is unset).
    #[error("endpoint misconfigured: {message}")]
    Config { message: String },
}

impl LlmError {
    /// Stable machine-readable class, as in `Event::Fault::kind`.
    pub fn kind(&self) -> &'static str {
        match self {
            LlmError::Connect { .. } => "connect",
            LlmError::Timeout { .. } => "timeout",
            LlmError::RateLimited { .. } => "rate_limited",
            LlmError::Auth { .. } => "auth",
            LlmError::BadRequest { .. } => "bad_request",
            LlmError::Server { .. } => "server",
            LlmError::Protocol { .. } => "protocol",
            LlmError::Config { .. } => "config",
        }
    }

    /// Whether sending the same request again can help.
    pub fn retryable(&self) -> bool {
        matches!(
            self,
            LlmError::Connect { .. }
                | LlmError::Timeout { .. }
                | LlmError::RateLimited { .. }
                | LlmError::Server { .. }
                | LlmError::Protocol { .. }
        )
    }

    /// The same error with every occurrence of `secret` masked. Servers quote the key they
    /// were sent in error messages ("incorrect API key provided: ..."), and these messages
    /// are logged and shown; the client masks its own key before anyone sees them.
    pub fn redacted(self, secret: &str) -> LlmError {
        if secret.is_empty() {
            return self;
        }
        let m = |text: String| text.replace(secret, "[redacted]");
        match self {
            LlmError::Connect { url, message } => LlmError::Connect {
                url: m(url),
                message: m(message),
            },
            LlmError::Timeout { message } => LlmError::Timeout {
                message: m(message),
            },
            LlmError::RateLimited {
                retry_after,
                message,
            } => LlmError::RateLimited {
                retry_after,
                message: m(message),
            },
            LlmError::Auth { status, message } => LlmError::Auth {
                status,
                message: m(message),
            },
            LlmError::BadRequest { status, message } => LlmError::BadRequest {
                status,
                message: m(message),
            },
            LlmError::Server { status, message } => LlmError::Server {
                status,
                message: m(message),
            },
            LlmError::Protocol { message } => LlmError::Protocol {
                message: m(message),
            },
            LlmError::Config { message } => LlmError::Config {
                message: m(message),
            },
        }
    }

    /// Classifies a non-success HTTP response.
    pub fn from_status(status: u16, retry_after: Option<Duration>, body: &str) -> LlmError {
        let message = error_message(body);
        match status {
            429 => LlmError::RateLimited {
                retry_after,
                message,
            },
            401..=403 => LlmError::Auth { status, message },
            408 => LlmError::Timeout { message },
            500..=599 => LlmError::Server { status, message },
            _ => LlmError::BadRequest { status, message },
        }
    }

    /// Classifies an `{"error": ...}` object that arrived inside an HTTP-200 stream.
    ///
    /// OpenRouter reports provider failures this way; a numeric `code` of 429 or 5xx keeps
    /// its meaning so the retry policy treats it like the HTTP status it stands for.
    pub fn from_stream_error(error: &serde_json::Value) -> LlmError {
        let message = match error.get("message").and_then(|m| m.as_str()) {
            Some(m) => m.to_string(),
            None => error.to_string(),
        };
        let code = error.get("code").and_then(|c| {
            c.as_u64()
                .or_else(|| c.as_str().and_then(|s| s.parse().ok()))
        });
        match code {
            Some(429) => LlmError::RateLimited {
                retry_after: None,
                message: format!("error inside the stream: {message}"),
            },
            Some(c @ 500..=599) => LlmError::Server {
                status: u16::try_from(c).unwrap_or(500),
                message: format!("error inside the stream: {message}"),
            },
            _ => LlmError::Protocol {
                message: format!("error inside the stream: {message}"),
            },
        }
    }
}

/// The human part of an error body: `error.message` when it is JSON in OpenAI's (or
/// llama.cpp's, whose `code` is a number) shape, else the text itself, shortened.
pub fn error_message(body: &str) -> String {
    let parsed: Option<serde_json::Value> = serde_json::from_str(body).ok();
    let from_json = parsed.as_ref().and_then(|v| {
        let e = v.get("error").unwrap_or(v);
        e.get("message")
            .and_then(|m| m.as_str())
            .or_else(|| e.as_str())
            .map(str::to_string)
    });
    let text = from_json.unwrap_or_else(|| body.trim().to_string());
    shorten(&text, 300)
}

fn shorten(text: &str, max_chars: usize) -> String {
    if text.chars().count() <= max_chars {
        return text.to_string();
    }
    let cut: String = text.chars().take(max_chars).collect();
    format!("{cut}…")
}

/// Parses `Retry-After` (delta-seconds or an IMF-fixdate relative to `now_unix`) or
/// OpenAI's `retry-after-ms`.
pub fn parse_retry_after(
    retry_after: Option<&str>,
    retry_after_ms: Option<&str>,
    now_unix: u64,
) -> Option<Duration> {
    if let Some(ms) = retry_after_ms.and_then(|v| v.trim().parse::<f64>().ok())
        && ms.is_finite()
        && ms >= 0.0
    {
        return Some(Duration::from_secs_f64(ms / 1000.0));
    }
    let value = retry_after?.trim();
    if let Ok(secs) = value.parse::<f64>() {
        return (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs));
    }
    let at = parse_http_date(value)?;
    Some(Duration::from_secs(at.saturating_sub(now_unix)))
}

/// `Sun, 06 Nov 1994 08:49:37 GMT` → seconds since the Unix epoch.
fn parse_http_date(value: &str) -> Option<u64> {
    let parts: Vec<&str> = value.split_whitespace().collect();
    let [_, day, month, year, time, "GMT"] = parts.as_slice() else {
        return None;
    };
    let day: u64 = day.parse().ok()?;
    let month = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ]
    .iter()
    .position(|m| m == month)? as u64
        + 1;
    let year: i64 = year.parse().ok()?;
    let hms: Vec<u64> = time
        .split(':')
        .map(|p| p.parse().ok())
        .collect::<Option<_>>()?;
    let [h, m, s] = hms.as_slice() else {
        return None;
    };
    let days = days_from_civil(year, month, day)?;
    Some(days * 86_400 + h * 3600 + m * 60 + s)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(year: i64, month: u64, day: u64) -> Option<u64> {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = i64::try_from(month).ok()?;
    let d = i64::try_from(day).ok()?;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    u64::try_from(era * 146_097 + doe - 719_468).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_classes() {
        let kind = |s| LlmError::from_status(s, None, "").kind();
        assert_eq!(kind(429), "rate_limited");
        assert_eq!(kind(401), "auth");
        assert_eq!(kind(403), "auth");
        assert_eq!(kind(400), "bad_request");
        assert_eq!(kind(404), "bad_request");
        assert_eq!(kind(408), "timeout");
        assert_eq!(kind(500), "server");
        assert_eq!(kind(503), "server");
        assert!(!LlmError::from_status(400, None, "").retryable());
        assert!(LlmError::from_status(502, None, "").retryable());
    }

    #[test]
    fn messages_from_openai_and_llama_cpp_bodies() {
        assert_eq!(
            error_message(r#"{"error":{"message":"bad","code":"x"}}"#),
            "bad"
        );
        // llama.cpp: numeric code, which async-openai's own error type cannot parse.
        assert_eq!(
            error_message(
                r#"{"error":{"code":400,"message":"logprobs is not supported with tools + stream","type":"invalid_request_error"}}"#
            ),
            "logprobs is not supported with tools + stream"
        );
        assert_eq!(error_message(r#"{"error":"plain"}"#), "plain");
        assert_eq!(error_message("  Bad Gateway \n"), "Bad Gateway");
    }

    #[test]
    fn retry_after_forms() {
        assert_eq!(
            parse_retry_after(Some("2"), None, 0),
            Some(Duration::from_secs(2))
        );
        assert_eq!(
            parse_retry_after(Some("2"), Some("1500"), 0),
            Some(Duration::from_millis(1500))
        );
        // 1994-11-06T08:49:37Z is 784111777.
        assert_eq!(
            parse_retry_after(Some("Sun, 06 Nov 1994 08:49:37 GMT"), None, 784_111_770),
            Some(Duration::from_secs(7))
        );
        assert_eq!(parse_retry_after(Some("soon"), None, 0), None);
        assert_eq!(parse_retry_after(None, None, 0), None);
    }

    #[test]
    fn redaction_masks_every_copy_of_the_key_and_keeps_the_class() {
        let e = LlmError::from_status(401, None, r#"{"error":{"message":"bad key sk-1 (sk-1)"}}"#)
            .redacted("sk-1");
        assert_eq!(
            e,
            LlmError::Auth {
                status: 401,
                message: "bad key [redacted] ([redacted])".into()
            }
        );
        let untouched = LlmError::Timeout {
            message: "x".into(),
        };
        assert_eq!(untouched.clone().redacted(""), untouched);
    }

    #[test]
    fn stream_error_codes_keep_their_meaning() {
        let e = |v| LlmError::from_stream_error(&v).kind();
        assert_eq!(
            e(serde_json::json!({"code": 502, "message": "x"})),
            "server"
        );
        assert_eq!(
            e(serde_json::json!({"code": "429", "message": "x"})),
            "rate_limited"
        );
        assert_eq!(e(serde_json::json!({"message": "x"})), "protocol");
    }
}
