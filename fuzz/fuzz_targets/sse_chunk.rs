//! The SSE reader, chunk parser and stream decoder (src/llm/sse.rs, chunk.rs, decode.rs) on
//! arbitrary bytes.
#![no_main]

// Each target uses half of the shared checks.
#[allow(dead_code)]
#[path = "../../tests/security/invariants.rs"]
mod invariants;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    // The first byte picks the request's settings; the rest is what the server sent.
    let Some((&settings, body)) = data.split_first() else {
        return;
    };
    let top_k = usize::from(settings % 21);
    invariants::sse_stream(body, settings & 0x80 != 0, top_k);
    // The same bytes as one bare chunk: read from the bytes, it says what its `Value` says.
    let typed = handoff::llm::chunk::parse_json(body);
    if let Ok(value) = serde_json::from_slice::<serde_json::Value>(body) {
        let typed = typed.expect("bytes that are JSON read as a chunk");
        assert_eq!(typed, handoff::llm::chunk::parse(&value));
    }
});
