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
    // Read once: both lines speak of it.
    let loaded = crate::judge::load_calibration(&config);
    let calibration = calibration_verdict(&config, &loaded);
    let threshold = threshold_verdict(&config, &loaded);
    let doc = serde_json::json!({
        "config": source.to_string(),
        "endpoints": reports,
        "calibration": calibration,
        "threshold": threshold,
    });
    emit(args.json.json, Shape::Document, &doc, || {
        format!(
            "config: {source}\n\n{}\ncalibration: {calibration}\nthreshold: {threshold}\n",
            crate::llm::doctor::render(&reports)
        )
    })?;
    Ok(Exit::for_doctor(reports.iter().all(|r| r.usable)))
}

/// One line on the threshold policy; for a step schedule, whether its file is usable (a
/// session would refuse to start on a bad one, so say it here first).
fn threshold_verdict(
    config: &crate::config::Config,
    loaded: &Result<crate::competence::Calibration, crate::judge::JudgeError>,
) -> String {
    use crate::config::ThresholdKind;
    match config.policy.threshold {
        ThresholdKind::Steps => match crate::judge::load_step_schedule(config) {
            Err(e) => format!("steps, unusable: {e}"),
            Ok(taus) => format!(
                "steps: {} thresholds, one per junior step end, from {}",
                taus.len(),
                config
                    .policy
                    .step_schedule
                    .as_deref()
                    .map_or(String::new(), |p| p.display().to_string())
            ),
        },
        // A session would refuse a calibration the token-clock DP cannot plan for.
        ThresholdKind::Optimal => match loaded.as_ref().map(|c| c.token_clock_refusal()) {
            Ok(Some(why)) => format!("optimal, unusable: {why}"),
            _ => ThresholdKind::Optimal.name().to_string(),
        },
        kind => kind.name().to_string(),
    }
}

/// One line on the judge's calibration: which one, and whether it fits the junior.
fn calibration_verdict(
    config: &crate::config::Config,
    loaded: &Result<crate::competence::Calibration, crate::judge::JudgeError>,
) -> String {
    use crate::judge::calibration_mismatch;
    match loaded {
        Err(e) => format!("unusable: {e}"),
        Ok(calibration) => {
            let source = &calibration.source;
            match (
                &calibration.fitted_on,
                calibration_mismatch(calibration, &config.junior),
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
