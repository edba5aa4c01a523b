//! `handoff eval`: suites against scripted models, Ask-F1 over blockers, shards, import.

mod asks;
mod cascade;
mod fake;
mod hidden;
mod humaneval;
mod judge;
mod matcher;
mod real_corpus;
mod runs;
mod schedule;
mod shard;

use crate::agent::support::{json_of, succeeded};

/// Passes of the first policy in an eval shard's `results.json.gz` (what `eval` itself
/// counted), for the tests that check another path through the code against it.
fn passed_in_results(shard: &std::path::Path) -> u64 {
    use std::io::Read as _;
    let file = std::fs::File::open(shard.join("results.json.gz")).expect("results.json.gz");
    let mut text = String::new();
    flate2::read::GzDecoder::new(file)
        .read_to_string(&mut text)
        .expect("gzip");
    let v: serde_json::Value = serde_json::from_str(&text).expect("json");
    v["policies"][0]["passed"].as_u64().expect("passed")
}
