//! What must hold for any bytes a server or a disk can hand us, checked by panicking.
//!
//! Shared by the proptest suite (tests/security/parsers.rs) and the cargo-fuzz targets
//! (fuzz/fuzz_targets/), which include this file by path, so both check the same contract.

use std::path::Path;

use handoff::llm::Delta;
use handoff::llm::chunk::LOGPROB_FLOOR;
use handoff::llm::decode::StreamDecoder;
use handoff::llm::sse::{Flow, SseReader};
use handoff::log::LogReader;
use handoff::log::reader::Damage;
use handoff::protocol::Event;

/// What a stream of bytes decoded to, for callers that want to look further.
#[derive(Debug, Default)]
pub struct Decoded {
    pub deltas: Vec<Delta>,
    /// The first error (from a chunk or the end of the stream), if any.
    pub error: Option<String>,
}

/// Reads `input` as the client reads a response body (the client's own SSE reader, then
/// each event's data decoded into deltas) until `[DONE]`, an error or the end, ends the
/// stream, and checks what came out.
pub fn sse_stream(input: &[u8], logprobs_requested: bool, top_k: usize) -> Decoded {
    let mut reader = SseReader::default();
    let mut decoder = StreamDecoder::new(logprobs_requested, top_k);
    let mut out = Decoded::default();
    let mut on_data = |data: &[u8]| decoder.push_json(data, &mut out.deltas);
    let read = match reader.feed(input, &mut on_data) {
        Ok(Flow::More) => reader.end(&mut on_data),
        other => other,
    };
    if let Err(e) = read {
        // A malformed chunk is a protocol fault; an error inside the stream may be retryable.
        assert!(e.retryable() || e.kind() == "protocol", "{e:?}");
        out.error = Some(e.to_string());
        check_deltas(&out.deltas, top_k);
        return out;
    }
    let was_finished = decoder.finished();
    match decoder.end() {
        Ok(deltas) => {
            assert!(
                was_finished,
                "end() accepted a stream without a finish reason"
            );
            out.deltas.extend(deltas);
        }
        Err(e) => {
            assert!(!was_finished, "end() refused a finished stream: {e}");
            assert_eq!(e.kind(), "protocol");
            out.error = Some(e.to_string());
        }
    }
    check_deltas(&out.deltas, top_k);
    out
}

/// Every token's numbers are usable by the judge, and stream bookkeeping is consistent.
pub fn check_deltas(deltas: &[Delta], top_k: usize) {
    let mut finishes = 0;
    let mut usages = 0;
    for d in deltas {
        match d {
            Delta::Token { logprob, top, .. } => {
                if let Some(lp) = logprob {
                    assert!(usable_logprob(*lp), "logprob {lp}");
                }
                assert!(
                    top.len() <= top_k,
                    "{} alternatives > k = {top_k}",
                    top.len()
                );
                for pair in top.windows(2) {
                    assert!(pair[0].logprob >= pair[1].logprob, "unsorted: {top:?}");
                }
                let mut names: Vec<&str> = top.iter().map(|a| a.token.as_str()).collect();
                names.sort_unstable();
                names.dedup();
                assert_eq!(names.len(), top.len(), "duplicate alternatives: {top:?}");
                assert!(top.iter().all(|a| usable_logprob(a.logprob)), "{top:?}");
            }
            Delta::ToolCall(call) => {
                assert!(!call.id.is_empty(), "a tool call without an id: {call:?}");
                assert!(!call.kind.is_empty());
            }
            Delta::Finish(reason) => {
                assert!(!reason.is_empty());
                finishes += 1;
            }
            Delta::Usage(_) => usages += 1,
            Delta::Warning { kind, .. } => assert!(!kind.is_empty()),
        }
    }
    assert!(usages <= 1, "usage reported {usages} times");
    let _ = finishes;
}

fn usable_logprob(lp: f64) -> bool {
    lp.is_finite() && lp <= 0.0 && lp > LOGPROB_FLOOR
}

/// Reads `input` as a session log: a bad header is an error, never a panic; after a good
/// header every line is an event or a warning naming its line, only the last line can be
/// torn, and reading stops only after an unreadable line.
pub fn log_bytes(input: &[u8]) -> Option<Vec<Event>> {
    let reader = LogReader::new(Path::new("fuzz.jsonl"), input).ok()?;
    let mut events = Vec::new();
    let mut last_line = 1;
    let mut torn_seen = false;
    for item in reader {
        assert!(!torn_seen, "an item after a torn last line");
        match item {
            Ok(stamped) => {
                // What was read can be written again (the log round-trips through replay).
                let line = serde_json::to_string(&stamped).expect("a read event re-encodes");
                assert!(serde_json::from_str::<serde_json::Value>(&line).is_ok());
                events.push(stamped.event);
            }
            Err(w) => {
                assert!(w.line > last_line, "line {} after {last_line}", w.line);
                last_line = w.line;
                assert!(w.to_string().contains(&format!(":{}:", w.line)), "{w}");
                match w.damage {
                    Damage::Torn => {
                        assert!(
                            !input.ends_with(b"\n"),
                            "torn line but the file ends in a newline"
                        );
                        torn_seen = true;
                    }
                    Damage::Unreadable => torn_seen = true,
                    Damage::Malformed => {}
                }
            }
        }
    }
    Some(events)
}
