//! The embedded demo: a scripted OpenAI-compatible server on loopback, so `handoff demo`
//! and the tests run without network or model weights.

pub mod server;
pub mod sse;
