//! The session log reader (src/log/reader.rs) on arbitrary files.
#![no_main]

// Each target uses half of the shared checks.
#[allow(dead_code)]
#[path = "../../tests/security/invariants.rs"]
mod invariants;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    invariants::log_bytes(data);
});
