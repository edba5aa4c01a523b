//! The one integration-test binary: one `mod` per area.

mod llm;
