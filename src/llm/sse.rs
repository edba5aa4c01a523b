//! Server-sent events read straight off the HTTP body, one chunk at a time.
//!
//! The body is pulled only when the consumer asks for the next event, so a server that
//! streams faster than the session can judge and log is slowed down by TCP instead of
//! filling a buffer; and no line may grow past [`MAX_SSE_LINE_BYTES`]: a server that sends
//! one endless line gets a clear fault after that many bytes, not a parser that rescans a
//! growing buffer (superlinear CPU) until memory runs out. Each byte is looked at once.

use std::collections::VecDeque;

use serde_json::Value;

use super::error::LlmError;
use super::transport;

/// Longest SSE line accepted, in bytes. A chat-completions chunk is a few hundred bytes;
/// a whole tool call in one chunk (Ollama) carries the call's arguments, which the agent
/// caps far below this (`agent.max_argument_bytes`).
pub const MAX_SSE_LINE_BYTES: usize = 4 * 1024 * 1024;

/// What one dispatched event means for the stream.
#[derive(Debug, PartialEq)]
pub enum SseEvent {
    /// A JSON chunk.
    Data(Value),
    /// `data: [DONE]`: the server says the stream is over.
    Done,
}

/// Splits a byte stream into lines and lines into events (WHATWG "event stream"
/// interpretation: `data:` lines joined by newlines, dispatched on a blank line, comments
/// and unknown fields ignored, `keepalive` events skipped).
#[derive(Debug, Default)]
pub struct SseReader {
    /// Bytes of the line not yet ended by a newline.
    partial: Vec<u8>,
    data: String,
    has_data: bool,
    event: String,
}

impl SseReader {
    /// Reads one body chunk; returns the events it completed.
    pub fn feed(&mut self, chunk: &[u8]) -> Result<Vec<SseEvent>, LlmError> {
        let mut events = Vec::new();
        let mut rest = chunk;
        while let Some(end) = rest.iter().position(|&b| b == b'\n') {
            let (line, tail) = rest.split_at(end);
            rest = &tail[1..];
            if self.partial.is_empty() {
                self.line(line, &mut events)?;
            } else {
                self.check_length(line.len())?;
                let mut whole = std::mem::take(&mut self.partial);
                whole.extend_from_slice(line);
                self.line(&whole, &mut events)?;
            }
        }
        self.check_length(rest.len())?;
        self.partial.extend_from_slice(rest);
        Ok(events)
    }

    /// The body ended: a last event without its blank line still counts.
    pub fn end(&mut self) -> Result<Vec<SseEvent>, LlmError> {
        let mut events = Vec::new();
        if !self.partial.is_empty() {
            let last = std::mem::take(&mut self.partial);
            self.line(&last, &mut events)?;
        }
        self.dispatch(&mut events)?;
        Ok(events)
    }

    fn check_length(&self, more: usize) -> Result<(), LlmError> {
        if self.partial.len() + more > MAX_SSE_LINE_BYTES {
            return Err(LlmError::Protocol {
                message: format!(
                    "the server sent an SSE line longer than {MAX_SSE_LINE_BYTES} bytes \
                     (MAX_SSE_LINE_BYTES); the stream was dropped"
                ),
            });
        }
        Ok(())
    }

    fn line(&mut self, line: &[u8], events: &mut Vec<SseEvent>) -> Result<(), LlmError> {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.is_empty() {
            return self.dispatch(events);
        }
        if line.starts_with(b":") {
            return Ok(());
        }
        let (field, value) = match line.iter().position(|&b| b == b':') {
            Some(i) => {
                let value = &line[i + 1..];
                (&line[..i], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &b""[..]),
        };
        match field {
            b"data" => {
                let text = std::str::from_utf8(value).map_err(|e| LlmError::Protocol {
                    message: format!("the stream is not UTF-8: {e}"),
                })?;
                self.data.push_str(text);
                self.data.push('\n');
                self.has_data = true;
            }
            b"event" => self.event = String::from_utf8_lossy(value).into_owned(),
            _ => {}
        }
        Ok(())
    }

    fn dispatch(&mut self, events: &mut Vec<SseEvent>) -> Result<(), LlmError> {
        let event = std::mem::take(&mut self.event);
        if !std::mem::take(&mut self.has_data) {
            return Ok(());
        }
        let mut data = std::mem::take(&mut self.data);
        data.pop();
        if event == "keepalive" {
            return Ok(());
        }
        if data == "[DONE]" {
            events.push(SseEvent::Done);
            return Ok(());
        }
        let value = serde_json::from_str(&data).map_err(|e| LlmError::Protocol {
            message: format!(
                "malformed chunk ({e}): {}",
                data.chars().take(200).collect::<String>()
            ),
        })?;
        events.push(SseEvent::Data(value));
        Ok(())
    }
}

/// The JSON chunks of one streamed response body, read on demand.
pub struct SseBody {
    response: reqwest::Response,
    reader: SseReader,
    ready: VecDeque<Value>,
    over: bool,
    url: String,
}

impl SseBody {
    pub fn new(response: reqwest::Response, url: &str) -> SseBody {
        SseBody {
            response,
            reader: SseReader::default(),
            ready: VecDeque::new(),
            over: false,
            url: url.to_string(),
        }
    }

    /// The next chunk; `None` once the body ended or the server sent `[DONE]`. Reads the
    /// body only while no chunk is ready, so nothing is buffered ahead of the consumer.
    pub async fn next(&mut self) -> Option<Result<Value, LlmError>> {
        loop {
            if let Some(v) = self.ready.pop_front() {
                return Some(Ok(v));
            }
            if self.over {
                return None;
            }
            let events = match self.response.chunk().await {
                Ok(Some(bytes)) => self.reader.feed(&bytes),
                Ok(None) => {
                    self.over = true;
                    self.reader.end()
                }
                Err(e) => Err(transport::classify_reqwest(&e, &self.url)),
            };
            match events {
                Ok(events) => {
                    for event in events {
                        match event {
                            SseEvent::Data(v) => self.ready.push_back(v),
                            SseEvent::Done => {
                                self.over = true;
                                break;
                            }
                        }
                    }
                }
                Err(e) => {
                    self.over = true;
                    self.ready.clear();
                    return Some(Err(e));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_split_anywhere_read_the_same() {
        let wire = b"data: {\"a\":1}\r\n\r\n: comment\n\nevent: keepalive\ndata: {}\n\ndata: {\"b\":\ndata: 2}\n\ndata: [DONE]\n\n";
        let mut whole = SseReader::default();
        let expected = whole.feed(wire).expect("parse");
        assert_eq!(
            expected,
            vec![
                SseEvent::Data(serde_json::json!({"a": 1})),
                SseEvent::Data(serde_json::json!({"b": 2})),
                SseEvent::Done
            ]
        );
        for cut in 0..wire.len() {
            let mut r = SseReader::default();
            let mut got = r.feed(&wire[..cut]).expect("first half");
            got.extend(r.feed(&wire[cut..]).expect("second half"));
            got.extend(r.end().expect("end"));
            assert_eq!(got, expected, "cut at {cut}");
        }
    }

    #[test]
    fn a_line_past_the_cap_is_a_fault_without_keeping_it() {
        let mut r = SseReader::default();
        let piece = vec![b'x'; 64 * 1024];
        let mut fed = 0;
        let err = loop {
            match r.feed(&piece) {
                Ok(events) => assert!(events.is_empty()),
                Err(e) => break e,
            }
            fed += piece.len();
            assert!(fed <= MAX_SSE_LINE_BYTES, "never refused");
        };
        assert!(err.to_string().contains("MAX_SSE_LINE_BYTES"), "{err}");
        assert!(r.partial.len() <= MAX_SSE_LINE_BYTES);
    }
}
