//! The embedded demo: a bundled sample project, scripted OpenAI-compatible servers on
//! loopback, and a real session between them, so `handoff demo` and the tests run without
//! network, keys or model weights.

pub mod llamacpp;
pub mod run;
pub mod script;
pub mod server;
pub mod sse;
