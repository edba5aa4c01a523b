//! Every preset parses: as TOML of the right shape, and with the config loader.

use super::*;
use crate::config::Config;
use pretty_assertions::assert_eq;

/// Keys another part of the config adds; until the loader knows them, they are checked
/// here for shape and stripped before the loader sees the text.
const NEW_ENDPOINT_KEYS: [&str; 2] = ["tool_protocol", "context_window"];

fn table(p: Preset) -> toml::Table {
    p.config_text()
        .parse::<toml::Table>()
        .unwrap_or_else(|e| panic!("{}: not TOML: {e}", p.name()))
}

/// Parses with the real loader; if it does not know the new keys yet, parses the text
/// without them (and says so), so everything else is still checked by the loader.
fn load(p: Preset) -> Config {
    let text = p.config_text();
    match Config::parse(&text, p.name()) {
        Ok(c) => c,
        Err(e) => {
            let msg = e.to_string();
            assert!(
                NEW_ENDPOINT_KEYS
                    .iter()
                    .any(|k| msg.contains(&format!("unknown field `{k}`"))),
                "{}: {msg}",
                p.name()
            );
            let stripped: String = text
                .lines()
                .filter(|l| {
                    !NEW_ENDPOINT_KEYS
                        .iter()
                        .any(|k| l.starts_with(&format!("{k} =")))
                })
                .map(|l| format!("{l}\n"))
                .collect();
            Config::parse(&stripped, p.name()).unwrap_or_else(|e| panic!("{}: {e}", p.name()))
        }
    }
}

#[test]
fn every_preset_has_matched_endpoint_sections_of_the_right_shape() {
    for p in Preset::ALL {
        let t = table(p);
        for role in ["junior", "senior"] {
            let s = t
                .get(role)
                .and_then(toml::Value::as_table)
                .unwrap_or_else(|| panic!("{}: no [{role}]", p.name()));
            let url = s["base_url"].as_str().unwrap_or_default();
            assert!(url.ends_with("/v1"), "{}: {url}", p.name());
            assert!(!s["model"].as_str().unwrap_or_default().is_empty());
            let proto = s["tool_protocol"].as_str().unwrap_or_default();
            assert!(
                ["auto", "native", "text", "json_schema", "code"].contains(&proto),
                "{proto}"
            );
            // Small local juniors write code; a senior writes code only on the reference lane,
            // whose 1.5B never returns a native call (elsewhere its model is unknown: auto).
            if role == "senior" {
                assert_eq!(proto == "code", p == Preset::RealModels, "{}", p.name());
            } else if p.local_only() {
                assert_eq!(proto, "code", "{}", p.name());
            }
            assert!(s["context_window"].as_integer().unwrap_or(0) >= 8192);
            if p.local_only() {
                assert!(url.starts_with("http://127.0.0.1:"), "{}: {url}", p.name());
                assert!(
                    s.get("api_key_env").is_none(),
                    "{}: a local preset needs no key",
                    p.name()
                );
                assert_eq!(s["price_output_per_mtok"].as_float(), Some(0.0));
            }
        }
        // The rest of the example follows, once.
        for rest in ["costs", "policy", "agent", "prompts"] {
            assert!(t.contains_key(rest), "{}: no [{rest}]", p.name());
        }
    }
}

#[test]
fn every_preset_loads_with_the_config_loader_to_its_own_values() {
    for p in Preset::ALL {
        let c = load(p);
        let (junior, senior) = p.endpoints();
        for (got, want) in [(&c.junior, &junior), (&c.senior, &senior)] {
            assert_eq!(got.base_url, want.base_url);
            assert_eq!(got.model, want.model);
            assert_eq!(got.api_key_env.as_deref(), want.api_key_env);
            assert_eq!(got.logprobs, want.logprobs);
            assert_eq!(got.top_logprobs, want.top_logprobs);
            assert_eq!(got.price_input_per_mtok, want.price_input_per_mtok);
        }
        assert_eq!(c.costs, Config::default().costs, "{}", p.name());
        assert_eq!(c.agent, Config::default().agent, "{}", p.name());
    }
}

#[test]
fn the_real_models_preset_matches_the_reference_lane() {
    let (junior, senior) = Preset::RealModels.endpoints();
    assert_eq!(junior.base_url, "http://127.0.0.1:8090/v1");
    assert_eq!(senior.base_url, "http://127.0.0.1:8091/v1");
    assert!(junior.model.contains("0.5b") && senior.model.contains("1.5b"));
    assert_eq!(
        (junior.tool_protocol, senior.tool_protocol),
        ("code", "code")
    );
    assert!(junior.logprobs);
}

#[test]
fn names_round_trip_and_unknown_names_are_none() {
    for p in Preset::ALL {
        assert_eq!(Preset::from_name(p.name()), Some(p));
    }
    assert_eq!(Preset::from_name("llama.cpp"), None);
    let names: Vec<&str> = Preset::ALL.iter().map(|p| p.name()).collect();
    assert_eq!(
        names,
        [
            "llamacpp",
            "ollama",
            "vllm",
            "lmstudio",
            "openai",
            "real-models"
        ]
    );
}

#[test]
fn the_real_models_preset_runs_the_fitted_judge_it_carries() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (name, json) = Preset::RealModels.calibration().expect("a calibration");
    let file = dir.path().join(name);
    std::fs::write(&file, json).expect("write");
    let text = Preset::RealModels.config_text_with(Some(&file));
    let c = Config::parse(&text, "real-models").expect("parses");
    assert_eq!(c.policy.calibration.as_deref(), Some(file.as_path()));
    assert_eq!(c.policy.threshold, crate::config::ThresholdKind::Constant);
    assert_eq!(c.policy.constant, REAL_MODELS_TAU);
    // A feature calibration fitted on this junior (the judge built from the whole config
    // is checked through the binary: tests/agent/onboarding.rs).
    let calibration = crate::competence::Calibration::from_json(json).expect("parses");
    assert!(calibration.features.is_some());
    assert!(calibration.prior > 0.5, "the 0.5B's measured base rate");
    // No other preset has one, and without a file the text is the plain preset's.
    assert!(Preset::Ollama.calibration().is_none());
    assert_eq!(
        Preset::RealModels.config_text_with(None),
        Preset::RealModels.config_text()
    );
}

#[test]
fn serve_runs_the_same_threshold_as_the_preset() {
    // tools/real-models/serve writes the lane's config in Python; one τ for both.
    let serve = include_str!("../tools/real-models/serve");
    assert!(
        serve.contains(&format!("\nTAU = {REAL_MODELS_TAU}\n")),
        "tools/real-models/serve's TAU is not REAL_MODELS_TAU ({REAL_MODELS_TAU})"
    );
}
