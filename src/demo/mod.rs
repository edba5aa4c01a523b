//! The embedded demo: a bundled sample project, scripted OpenAI-compatible servers on
//! loopback, and a real session between them, so `handoff demo` and the tests run without
//! network, keys or model weights.
//!
//! What only the tests use — the recorded llama.cpp streams and the scripted server's
//! faults (killed, hanging, ticking and endless streams) — is compiled only with the
//! `testkit` feature, which the integration tests turn on; the demo needs none of it.

#[cfg(feature = "testkit")]
pub mod llamacpp;
pub mod run;
pub mod script;
pub mod server;
pub mod sse;
