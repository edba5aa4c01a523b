//! One integration-test binary (links once); one `mod` per area.

mod agent;
mod demo;
mod docs;
mod eval;
mod faults;
mod llm;
mod metrics;
mod security;
mod sim;
mod tools;
mod trajectory;
mod tui;
