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
    let calibration = calibration_verdict(&config);
    let doc = serde_json::json!({
        "config": source.to_string(),
        "endpoints": reports,
        "calibration": calibration,
    });
    emit(args.json.json, Shape::Document, &doc, || {
        format!(
            "config: {source}\n\n{}\ncalibration: {calibration}\n",
            crate::llm::doctor::render(&reports)
        )
    })?;
    Ok(Exit::for_doctor(reports.iter().all(|r| r.usable)))
}

/// One line on the judge's calibration: which one, and whether it fits the junior.
fn calibration_verdict(config: &crate::config::Config) -> String {
    use crate::judge::{calibration_mismatch, load_calibration};
    match load_calibration(config) {
        Err(e) => format!("unusable: {e}"),
        Ok(calibration) => {
            let source = &calibration.source;
            match (
                &calibration.fitted_on,
                calibration_mismatch(&calibration, &config.junior),
            ) {
                (None, _) => format!("{source} (records no fit, nothing to compare)"),
                (Some(_), Some(why)) => format!("{source}; MISMATCH: {why}"),
                (Some(f), None) => format!(
                    "{source}; fitted on {} with top_logprobs {}, as this junior",
                    f.model, f.top_logprobs
                ),
            }
        }
    }
}
