//! One integration-test binary (links once); one `mod` per area.

mod agent;
mod llm;
mod metrics;
mod sim;
mod tools;
mod trajectory;
mod tui;
