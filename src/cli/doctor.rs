//! `handoff doctor`: probe both endpoints; exits 1 when one is unusable.

use super::args::{ConfigArg, JsonArg};
use super::output::{Shape, emit, runtime};
use crate::exit::Exit;

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    config: ConfigArg,
    #[command(flatten)]
    json: JsonArg,
}

pub fn run(args: Args) -> anyhow::Result<Exit> {
    let (config, source) = args.config.load_with_source()?;
    let reports = runtime()?.block_on(crate::llm::doctor::check(&config));
    let doc = serde_json::json!({"config": source.to_string(), "endpoints": reports});
    emit(args.json.json, Shape::Document, &doc, || {
        format!(
            "config: {source}\n\n{}",
            crate::llm::doctor::render(&reports)
        )
    })?;
    Ok(Exit::for_doctor(reports.iter().all(|r| r.usable)))
}
