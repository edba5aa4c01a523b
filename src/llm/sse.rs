//! Server-sent events read straight off the HTTP body, one chunk at a time.
//!
//! The body is pulled only when the consumer asks for the next event, so a server that
//! streams faster than the session can judge and log is slowed down by TCP instead of
//! filling a buffer; and no line may grow past [`MAX_SSE_LINE_BYTES`]: a server that sends
//! one endless line gets a clear fault after that many bytes, not a parser that rescans a
//! growing buffer (superlinear CPU) until memory runs out. Lines are split in place and
//! each event's data goes to the chunk decoder as a borrowed slice.

use super::error::LlmError;
use super::transport;

/// Longest SSE line accepted, in bytes, and longest data of one event. A chat-completions
/// chunk is a few hundred bytes; a whole tool call in one chunk (Ollama) carries the call's
/// arguments, which the agent caps far below this (`agent.max_argument_bytes`).
pub const MAX_SSE_LINE_BYTES: usize = 4 * 1024 * 1024;

/// Whether the stream goes on after what was just read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    More,
    /// `data: [DONE]` was read, or the body ended: nothing after it is read.
    Done,
}

/// Splits a byte stream into lines and lines into events, WHATWG "event stream" style:
/// lines end in `\n`, `\r\n` or `\r` (also when a read boundary falls between `\r` and
/// `\n`); `data:` lines are joined by newlines and dispatched on a blank line, or at the
/// end of the body without one; comments and unknown fields are ignored, and so are `id:`
/// and `retry:`, which steer reconnection: this client never reconnects, a dropped stream
/// is a fault the agent loop logs and answers with a new request. `keepalive` events
/// (OpenRouter) are skipped.
///
/// Lines are found in the bytes as they arrive and never moved within a buffer: a data byte
/// is copied once into the event's data (twice when its line straddles two reads, the
/// first part being kept until the line ends). A burst of n events therefore costs O(n),
/// however it is cut into reads.
#[derive(Debug, Default)]
pub struct SseReader {
    /// Bytes of the line not yet ended by a newline.
    partial: Vec<u8>,
    /// The data lines of the event being read, joined by `\n`; reused from event to event.
    data: Vec<u8>,
    has_data: bool,
    keepalive: bool,
    /// The last read ended with `\r`: a `\n` opening the next one ends no line.
    after_cr: bool,
    done: bool,
    /// Bytes copied into `partial` and `data` so far: the reader's work, which the tests
    /// check grows linearly with the stream.
    copied: usize,
}

impl SseReader {
    /// Reads one body chunk, handing the data of each event it completes to `on_data`, in
    /// order. Stops at `[DONE]`; an error from `on_data` stops the read and is returned.
    pub fn feed(
        &mut self,
        chunk: &[u8],
        on_data: &mut impl FnMut(&[u8]) -> Result<(), LlmError>,
    ) -> Result<Flow, LlmError> {
        if self.done {
            return Ok(Flow::Done);
        }
        let mut rest = chunk;
        if self.after_cr && !rest.is_empty() {
            self.after_cr = false;
            if rest[0] == b'\n' {
                rest = &rest[1..];
            }
        }
        while let Some(end) = memchr::memchr2(b'\n', b'\r', rest) {
            let line = &rest[..end];
            let skip = match (rest[end], rest.get(end + 1)) {
                (b'\r', Some(b'\n')) => 2,
                (b'\r', None) => {
                    self.after_cr = true;
                    1
                }
                _ => 1,
            };
            rest = &rest[end + skip..];
            let flow = if self.partial.is_empty() {
                self.line(line, on_data)
            } else {
                self.check_length(line.len())?;
                self.copied += line.len();
                let mut whole = std::mem::take(&mut self.partial);
                whole.extend_from_slice(line);
                let flow = self.line(&whole, on_data);
                whole.clear();
                self.partial = whole;
                flow
            }?;
            if flow == Flow::Done {
                self.done = true;
                return Ok(Flow::Done);
            }
        }
        self.check_length(rest.len())?;
        self.copied += rest.len();
        self.partial.extend_from_slice(rest);
        Ok(Flow::More)
    }

    /// The body ended: a last line without its newline, and a last event without its blank
    /// line, still count.
    pub fn end(
        &mut self,
        on_data: &mut impl FnMut(&[u8]) -> Result<(), LlmError>,
    ) -> Result<Flow, LlmError> {
        if self.done {
            return Ok(Flow::Done);
        }
        self.done = true;
        if !self.partial.is_empty() {
            let last = std::mem::take(&mut self.partial);
            if self.line(&last, on_data)? == Flow::Done {
                return Ok(Flow::Done);
            }
        }
        self.dispatch(on_data)?;
        Ok(Flow::Done)
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

    fn line(
        &mut self,
        line: &[u8],
        on_data: &mut impl FnMut(&[u8]) -> Result<(), LlmError>,
    ) -> Result<Flow, LlmError> {
        if line.is_empty() {
            return self.dispatch(on_data);
        }
        if line[0] == b':' {
            return Ok(Flow::More);
        }
        let (field, value) = match memchr::memchr(b':', line) {
            Some(i) => {
                let value = &line[i + 1..];
                (&line[..i], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &b""[..]),
        };
        match field {
            b"data" => {
                if self.data.len() + value.len() + 1 > MAX_SSE_LINE_BYTES {
                    return Err(LlmError::Protocol {
                        message: format!(
                            "the server sent an SSE event with more than \
                             {MAX_SSE_LINE_BYTES} bytes of data (MAX_SSE_LINE_BYTES); the \
                             stream was dropped"
                        ),
                    });
                }
                if self.has_data {
                    self.data.push(b'\n');
                }
                self.copied += value.len();
                self.data.extend_from_slice(value);
                self.has_data = true;
            }
            b"event" => self.keepalive = value == b"keepalive",
            _ => {}
        }
        Ok(Flow::More)
    }

    fn dispatch(
        &mut self,
        on_data: &mut impl FnMut(&[u8]) -> Result<(), LlmError>,
    ) -> Result<Flow, LlmError> {
        let keepalive = std::mem::take(&mut self.keepalive);
        if !std::mem::take(&mut self.has_data) {
            return Ok(Flow::More);
        }
        let flow = if keepalive {
            Ok(Flow::More)
        } else if self.data == b"[DONE]" {
            Ok(Flow::Done)
        } else {
            on_data(&self.data).map(|()| Flow::More)
        };
        self.data.clear();
        flow
    }
}

/// One streamed response body, read as SSE on demand.
pub struct SseBody {
    response: reqwest::Response,
    reader: SseReader,
    url: String,
}

impl SseBody {
    /// Reads `response`'s body; `url` names the server in connection faults.
    pub fn new(response: reqwest::Response, url: &str) -> SseBody {
        SseBody {
            response,
            reader: SseReader::default(),
            url: url.to_string(),
        }
    }

    /// Reads the next piece of the body and hands the data of every event it completes to
    /// `on_data`. The body is read only when this is called, so nothing is buffered ahead
    /// of the consumer; dropping the `SseBody` drops the response and closes the connection.
    pub async fn read(
        &mut self,
        on_data: &mut impl FnMut(&[u8]) -> Result<(), LlmError>,
    ) -> Result<Flow, LlmError> {
        match self.response.chunk().await {
            Ok(Some(bytes)) => self.reader.feed(&bytes, on_data),
            Ok(None) => self.reader.end(on_data),
            Err(e) => Err(transport::classify_reqwest(&e, &self.url)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    /// What a reader made of some reads: each event's data as JSON (or as text when it is
    /// not JSON), and whether `[DONE]` or the end stopped it.
    #[derive(Debug, PartialEq)]
    enum Got {
        Data(Value),
        Text(String),
        Done,
    }

    fn read(pieces: &[&[u8]], end: bool) -> Vec<Got> {
        let mut r = SseReader::default();
        let mut got = Vec::new();
        let mut on_data = |data: &[u8]| {
            got.push(match serde_json::from_slice(data) {
                Ok(v) => Got::Data(v),
                Err(_) => Got::Text(String::from_utf8_lossy(data).into_owned()),
            });
            Ok(())
        };
        let mut done = false;
        for piece in pieces {
            if r.feed(piece, &mut on_data).expect("feed") == Flow::Done {
                done = true;
                break;
            }
        }
        if !done && end {
            r.end(&mut on_data).expect("end");
        }
        if done {
            got.push(Got::Done);
        }
        got
    }

    #[test]
    fn events_split_anywhere_read_the_same() {
        let wire: &[u8] = b"data: {\"a\":1}\r\n\r\n: comment\n\nevent: keepalive\ndata: {}\n\ndata: {\"b\":\ndata: 2}\n\nid: 7\rretry: 10\rdata:{\"c\":3}\r\revent: message\r\ndata: {\"d\"\r\ndata: :4}\r\n\r\ndata: [DONE]\n\ndata: {\"after\": 1}\n\n";
        let expected = vec![
            Got::Data(serde_json::json!({"a": 1})),
            Got::Data(serde_json::json!({"b": 2})),
            Got::Data(serde_json::json!({"c": 3})),
            Got::Data(serde_json::json!({"d": 4})),
            Got::Done,
        ];
        assert_eq!(read(&[wire], true), expected);
        for cut in 0..wire.len() {
            assert_eq!(
                read(&[&wire[..cut], &wire[cut..]], true),
                expected,
                "cut at {cut}"
            );
        }
        let bytes: Vec<&[u8]> = wire.chunks(1).collect();
        assert_eq!(read(&bytes, true), expected, "a byte per read");
    }

    #[test]
    fn a_last_event_without_its_blank_line_still_counts() {
        for wire in [
            &b"data: {\"x\": 1}"[..],
            b"data: {\"x\": 1}\n",
            b"data: {\"x\": 1}\r",
        ] {
            let got = read(&[wire], true);
            assert_eq!(got, [Got::Data(serde_json::json!({"x": 1}))], "{wire:?}");
            assert_eq!(read(&[wire], false), [], "not before the end: {wire:?}");
        }
    }

    #[test]
    fn fields_without_a_space_or_a_value_and_empty_data() {
        let wire = b"data\n\ndata:\ndata:x\n\nevent\ndata: {}\n\n";
        assert_eq!(
            read(&[wire], true),
            [
                Got::Text(String::new()),
                Got::Text("\nx".into()),
                Got::Data(serde_json::json!({}))
            ]
        );
    }

    #[test]
    fn an_error_from_the_consumer_stops_the_read() {
        let mut r = SseReader::default();
        let mut seen = 0;
        let err = r
            .feed(
                b"data: 1\n\ndata: 2\n\ndata: 3\n\n",
                &mut |data: &[u8]| {
                    seen += 1;
                    if data == b"2" {
                        Err(LlmError::Protocol {
                            message: "two".into(),
                        })
                    } else {
                        Ok(())
                    }
                },
            )
            .expect_err("stops");
        assert_eq!(seen, 2);
        assert!(err.to_string().contains("two"), "{err}");
    }

    #[test]
    fn a_burst_of_events_in_one_read_costs_the_same_per_event_at_any_size() {
        let event =
            b"data: {\"choices\": [{\"index\": 0, \"delta\": {\"content\": \"token\"}}]}\n\n";
        let copied_per_event = |n: usize, read_size: usize| {
            let wire: Vec<u8> = event
                .iter()
                .copied()
                .cycle()
                .take(event.len() * n)
                .collect();
            let mut r = SseReader::default();
            let mut events = 0;
            for piece in wire.chunks(read_size) {
                r.feed(piece, &mut |_: &[u8]| {
                    events += 1;
                    Ok(())
                })
                .expect("feed");
            }
            assert_eq!(events, n);
            r.copied as f64 / n as f64
        };
        for read_size in [usize::MAX, 65536, 1000] {
            let small = copied_per_event(100, read_size);
            let large = copied_per_event(10_000, read_size);
            // Each data byte is copied once, plus at most one line carried over per read.
            assert!(small <= 2.0 * event.len() as f64, "{small} per event");
            assert!(large <= small * 1.25, "{large} vs {small} bytes per event");
        }
    }

    #[test]
    fn a_line_past_the_cap_is_a_fault_without_keeping_it() {
        let mut r = SseReader::default();
        let piece = vec![b'x'; 64 * 1024];
        let mut fed = 0;
        let err = loop {
            match r.feed(&piece, &mut |_: &[u8]| panic!("no event")) {
                Ok(flow) => assert_eq!(flow, Flow::More),
                Err(e) => break e,
            }
            fed += piece.len();
            assert!(fed <= MAX_SSE_LINE_BYTES, "never refused");
        };
        assert!(err.to_string().contains("MAX_SSE_LINE_BYTES"), "{err}");
        assert!(r.partial.len() <= MAX_SSE_LINE_BYTES);
    }

    #[test]
    fn an_event_of_endless_short_data_lines_is_a_fault_too() {
        let mut r = SseReader::default();
        let piece = b"data: xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n"
            .repeat(1024);
        let mut fed = 0;
        let err = loop {
            match r.feed(&piece, &mut |_: &[u8]| panic!("no event")) {
                Ok(_) => {}
                Err(e) => break e,
            }
            fed += piece.len();
            assert!(fed <= 2 * MAX_SSE_LINE_BYTES, "never refused");
        };
        assert!(err.to_string().contains("MAX_SSE_LINE_BYTES"), "{err}");
        assert!(r.data.len() <= MAX_SSE_LINE_BYTES);
    }
}
