//! Property versions of the fuzz targets (fuzz/): the chunk parser and stream decoder on
//! chunk-shaped JSON and on noise, the log reader on damaged logs. Fast enough for every
//! test run; cargo-fuzz explores further.

use handoff::log::Header;
use handoff::protocol::{Event, Stamped};
use proptest::prelude::*;
use serde_json::{Value, json};

use super::invariants::{log_bytes, sse_stream};

/// Numbers a server might put where a logprob or a probability goes.
fn number() -> impl Strategy<Value = Value> {
    prop_oneof![
        (-30.0f64..0.0).prop_map(|x| json!(x)),
        Just(json!(-9999.0)),
        Just(json!(0.0)),
        Just(json!(1.5)),
        Just(json!(-1e308)),
        Just(json!(null)),
        Just(json!("-0.5")),
        any::<i64>().prop_map(|x| json!(x)),
    ]
}

fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        "[a-z ]{1,6}",
        "\\PC{0,4}",
        Just("\u{FFFD}\u{0}".to_string()),
    ]
}

fn alternative() -> impl Strategy<Value = Value> {
    (text(), number(), prop::bool::ANY).prop_map(|(t, n, prob)| {
        if prob {
            json!({"token": t, "prob": n})
        } else {
            json!({"token": t, "logprob": n, "bytes": t.as_bytes()})
        }
    })
}

fn logprob_entry() -> impl Strategy<Value = Value> {
    (
        text(),
        number(),
        prop::collection::vec(alternative(), 0..6),
        prop::bool::ANY,
    )
        .prop_map(|(t, n, top, llama)| {
            if llama {
                json!({"token": t, "prob": n, "top_probs": top})
            } else {
                json!({"token": t, "logprob": n, "top_logprobs": top})
            }
        })
}

fn fragment() -> impl Strategy<Value = Value> {
    (
        prop::option::of(0u64..4),
        prop::option::of("[a-c]{0,2}"),
        prop::option::of("[a-z_]{0,8}"),
        prop_oneof![
            "[{}\":a-z0-9]{0,8}".prop_map(Value::String),
            Just(json!({"path": "x"})),
            Just(Value::Null),
        ],
    )
        .prop_map(|(index, id, name, arguments)| {
            let mut call = json!({"function": {"arguments": arguments}});
            if let Some(i) = index {
                call["index"] = json!(i);
            }
            if let Some(id) = id {
                call["id"] = json!(id);
            }
            if let Some(name) = name {
                call["function"]["name"] = json!(name);
            }
            call
        })
}

/// A chunk with any subset of the fields real servers send, in plausible and odd shapes.
fn chunk() -> impl Strategy<Value = Value> {
    (
        prop::option::of(text()),
        prop::option::of(prop::collection::vec(logprob_entry(), 0..4)),
        prop::collection::vec(fragment(), 0..3),
        prop::option::of(prop_oneof![
            Just("stop".to_string()),
            Just("tool_calls".to_string()),
            Just(String::new()),
            "[a-z]{1,8}",
        ]),
        prop::option::of((0u64..1000, 0u64..1000)),
        prop::option::of((prop::option::of(0u64..600), text())),
        0u64..2,
    )
        .prop_map(|(content, logprobs, frags, finish, usage, error, index)| {
            let mut delta = json!({});
            if let Some(c) = content {
                delta["content"] = json!(c);
            }
            if !frags.is_empty() {
                delta["tool_calls"] = json!(frags);
            }
            let mut choice = json!({"index": index, "delta": delta, "finish_reason": finish});
            if let Some(l) = logprobs {
                choice["logprobs"] = json!({"content": l});
            }
            let mut c = json!({"object": "chat.completion.chunk", "choices": [choice]});
            if let Some((p, q)) = usage {
                c["usage"] = json!({"prompt_tokens": p, "completion_tokens": q});
            }
            if let Some((code, message)) = error {
                c["error"] = json!({"code": code, "message": message});
            }
            c
        })
}

/// One SSE write: a chunk, a comment, `[DONE]`, or bytes that are not JSON at all.
fn frame() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        8 => chunk().prop_map(|c| format!("data: {c}\n\n").into_bytes()),
        1 => Just(b": keep-alive\n\n".to_vec()),
        1 => Just(b"data: [DONE]\n\n".to_vec()),
        1 => prop::collection::vec(any::<u8>(), 0..24),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn any_stream_decodes_to_usable_deltas_or_a_protocol_fault(
        frames in prop::collection::vec(frame(), 0..8),
        logprobs in prop::bool::ANY,
        top_k in 0usize..21,
    ) {
        sse_stream(&frames.concat(), logprobs, top_k);
    }

    #[test]
    fn a_chunk_read_from_its_bytes_says_what_its_value_says(c in chunk()) {
        let bytes = serde_json::to_vec(&c).expect("encode");
        let typed = handoff::llm::chunk::parse_json(&bytes).expect("a chunk");
        // The value read back from the same bytes: text does not round-trip every float.
        let value: Value = serde_json::from_slice(&bytes).expect("decode");
        prop_assert_eq!(typed, handoff::llm::chunk::parse(&value));
    }

    #[test]
    fn raw_bytes_never_panic_the_decoder(bytes in prop::collection::vec(any::<u8>(), 0..256)) {
        sse_stream(&bytes, true, 5);
    }
}

/// A log of `picks` from the sample events, as the writer lays it out.
fn log_text(picks: &[usize]) -> (Vec<u8>, Vec<Event>) {
    let samples = Event::samples();
    let mut out = serde_json::to_vec(&Header::current("d")).expect("header");
    out.push(b'\n');
    let mut events = Vec::new();
    for (t, i) in picks.iter().enumerate() {
        let event = samples[i % samples.len()].clone();
        let stamped = Stamped {
            t_ms: t as u64,
            event: event.clone(),
        };
        out.extend(serde_json::to_vec(&stamped).expect("event"));
        out.push(b'\n');
        events.push(event);
    }
    (out, events)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// A crash can cut the file anywhere: every line written whole before the cut is read
    /// back exactly, in order, and nothing else is.
    #[test]
    fn a_log_cut_anywhere_keeps_every_whole_line(
        picks in prop::collection::vec(0usize..64, 0..24),
        cut in any::<prop::sample::Index>(),
    ) {
        let (bytes, events) = log_text(&picks);
        let at = cut.index(bytes.len() + 1);
        let kept = &bytes[..at];
        match log_bytes(kept) {
            None => {
                // Only a cut inside the header line loses the file.
                let header_end = bytes.iter().position(|b| *b == b'\n').unwrap_or(0);
                prop_assert!(at <= header_end, "cut at {at}, header ends at {header_end}");
            }
            Some(read) => {
                let whole_lines = kept.iter().filter(|b| **b == b'\n').count().saturating_sub(1);
                prop_assert!(read.len() >= whole_lines);
                prop_assert!(read.len() <= whole_lines + 1);
                prop_assert_eq!(&read[..], &events[..read.len()]);
            }
        }
    }

    /// Damage anywhere (a byte changed, garbage inserted) is skipped with a warning that
    /// names the line; the reader never panics and never stops early.
    #[test]
    fn damaged_logs_read_without_panicking(
        picks in prop::collection::vec(0usize..64, 1..16),
        flips in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..4),
        garbage in prop::option::of((any::<prop::sample::Index>(), prop::collection::vec(any::<u8>(), 0..40))),
    ) {
        let (mut bytes, events) = log_text(&picks);
        for (i, b) in flips {
            let at = i.index(bytes.len());
            bytes[at] = b;
        }
        if let Some((i, junk)) = garbage {
            let at = i.index(bytes.len());
            bytes.splice(at..at, junk);
        }
        let lines = bytes.iter().filter(|b| **b == b'\n').count();
        if let Some(read) = log_bytes(&bytes) {
            prop_assert!(read.len() <= lines.max(events.len()) + 1);
        }
    }
}
