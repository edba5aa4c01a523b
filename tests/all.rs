//! One integration-test binary (links once); one `mod` per area.

mod agent;
mod eval;
mod llm;
mod metrics;
mod tools;
mod trajectory;
mod tui;
