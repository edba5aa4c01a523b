//! `handoff doctor`: probe both endpoints; exits 1 when one is unusable.

use super::args::{Globals, JsonArg};
use super::output::{Shape, emit, runtime};
use crate::exit::Exit;

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    json: JsonArg,
}

pub fn run(args: Args, globals: &Globals) -> anyhow::Result<Exit> {
    let (config, source) = globals.load_with_source()?;
    let reports = runtime()?.block_on(crate::llm::doctor::check(&config));
    // Read once: both lines speak of it.
    let loaded = crate::judge::load_calibration(&config);
    let calibration = calibration_verdict(&config, &loaded);
    let threshold = threshold_verdict(&config, &loaded);
    let protocols: Vec<String> = [("junior", &config.junior), ("senior", &config.senior)]
        .into_iter()
        .map(|(role, m)| protocol_line(role, m.tool_protocol))
        .collect();
    let sandbox = crate::agent::sandbox::doctor_lines();
    let doc = serde_json::json!({
        "config": source.to_string(),
        "endpoints": reports,
        "protocols": protocols,
        "calibration": calibration,
        "threshold": threshold,
        "sandbox": sandbox,
    });
    emit(args.json.json, Shape::Document, &doc, || {
        format!(
            "config: {source}\n\n{}\n{}\ncalibration: {calibration}\nthreshold: {threshold}\n{}",
            crate::llm::doctor::render(&reports),
            protocols
                .iter()
                .map(|l| format!("{l}\n"))
                .collect::<String>(),
            sandbox
                .iter()
                .map(|l| format!("sandbox: {l}\n"))
                .collect::<String>()
        )
    })?;
    Ok(Exit::for_doctor(reports.iter().all(|r| r.usable)))
}

/// Which tool protocol an endpoint gets, and why one would choose it.
fn protocol_line(role: &str, protocol: crate::config::ToolProtocol) -> String {
    use crate::config::ToolProtocol;
    let why = match protocol {
        ToolProtocol::Code => {
            "writes code, no tools: the files in the first message, fenced blocks placed by \
             definition, the harness runs agent.check after every edit (for small models, which \
             write code better than tool calls)"
        }
        ToolProtocol::JsonSchema => {
            "tool calls as text under a response_format schema: the server can only sample a \
             well-formed call, and every token keeps its logprob"
        }
        ToolProtocol::Text => {
            "tool calls as text, listed in the prompt; every token keeps its logprob"
        }
        ToolProtocol::Native => "the OpenAI tools field, native calls only",
        ToolProtocol::Auto => "the OpenAI tools field; a call written as text is read too",
    };
    format!("{role} protocol: {} ({why})", protocol.name())
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
