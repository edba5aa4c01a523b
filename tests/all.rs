//! One integration-test binary (links once); one `mod` per area.

mod agent;
mod demo;
mod faults;
mod eval;
mod llm;
mod metrics;
mod security;
mod sim;
mod tools;
mod trajectory;
mod tui;
