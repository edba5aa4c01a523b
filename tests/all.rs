//! One integration-test binary (links once); one `mod` per area.

mod metrics;
mod trajectory;
