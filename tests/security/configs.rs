//! Malformed configs: each is refused with a message that names the key (or section) and
//! the line, so the operator can fix the file without guessing.

use handoff::config::Config;

/// (what is wrong, the file, pieces the message must contain)
const CASES: &[(&str, &str, &[&str])] = &[
    (
        "misspelt key",
        "[junior]\nmodel = \"m\"\ntemprature = 0.1\n",
        &["temprature", "line 3"],
    ),
    (
        "unknown section",
        "[costs]\nloss = 1.0\n\n[judge]\nprior = 0.5\n",
        &["judge", "line 4"],
    ),
    (
        "key outside any section",
        "shadow = true\n",
        &["shadow", "line 1"],
    ),
    (
        "string where a number goes",
        "[costs]\n\nloss = \"high\"\n",
        &["loss", "line 3"],
    ),
    (
        "negative count",
        "[junior]\nmax_retries = -1\n",
        &["max_retries", "line 2"],
    ),
    (
        "unknown enum value",
        "[policy]\nthreshold = \"clever\"\n",
        &["clever", "line 2"],
    ),
    (
        "unknown approval mode",
        "[agent]\n# who says yes\napproval = \"sometimes\"\n",
        &["sometimes", "line 3"],
    ),
    (
        "a table where a value goes",
        "[senior]\nextra = 5\n",
        &["extra", "line 2"],
    ),
    (
        "unclosed section header",
        "[junior\nmodel = \"m\"\n",
        &["line 1"],
    ),
    (
        "duplicate key",
        "[costs]\nloss = 1.0\nloss = 2.0\n",
        &["loss", "line 3"],
    ),
    (
        "probability above one",
        "[costs]\nkappa = 0.1\np_senior = 1.5\n",
        &["c.toml:3", "costs.p_senior", "probability"],
    ),
    (
        "negative probability threshold",
        "[policy]\nconstant = -0.1\n",
        &["c.toml:2", "policy.constant"],
    ),
    (
        "zero loss",
        "[costs]\nloss = 0\n",
        &["c.toml:2", "costs.loss", "positive"],
    ),
    (
        "infinite cost",
        "[costs]\n\n\nkappa = inf\n",
        &["c.toml:4", "costs.kappa"],
    ),
    (
        "NaN timeout",
        "[senior]\nidle_timeout_s = nan\n",
        &["c.toml:2", "senior.idle_timeout_s"],
    ),
    (
        "zero connect timeout",
        "[junior]\nconnect_timeout_s = 0\n",
        &["c.toml:2", "junior.connect_timeout_s"],
    ),
    (
        "base_url without a scheme",
        "[junior]\nbase_url = \"localhost:8080/v1\"\n",
        &["c.toml:2", "junior.base_url", "http"],
    ),
    (
        "base_url without a host",
        "[senior]\nmodel = \"m\"\nbase_url = \"https://\"\n",
        &["c.toml:3", "senior.base_url", "host"],
    ),
    (
        "base_url with spaces",
        "[junior]\nbase_url = \"http://my host/v1\"\n",
        &["c.toml:2", "junior.base_url"],
    ),
    (
        "empty model",
        "[junior]\nmodel = \"  \"\n",
        &["c.toml:2", "junior.model"],
    ),
    (
        "too many logprobs",
        "[junior]\ntop_logprobs = 25\n",
        &["c.toml:2", "junior.top_logprobs", "20"],
    ),
    (
        "temperature out of range",
        "[senior]\ntemperature = 3.5\n",
        &["c.toml:2", "senior.temperature"],
    ),
    (
        "negative price",
        "[senior]\nprice_input_per_mtok = -2\n",
        &["c.toml:2", "senior.price_input_per_mtok"],
    ),
    (
        "zero max_tokens",
        "[junior]\nmax_tokens = 0\n",
        &["c.toml:2", "junior.max_tokens"],
    ),
    (
        "a key instead of a variable name",
        "[senior]\napi_key_env = \"OPENAI_API_KEY=sk-123\"\n",
        &["c.toml:2", "senior.api_key_env"],
    ),
    (
        "empty variable name",
        "[junior]\napi_key_env = \"\"\n",
        &["c.toml:2", "junior.api_key_env"],
    ),
    (
        "zero steps",
        "[agent]\nmax_steps = 0\n",
        &["c.toml:2", "agent.max_steps"],
    ),
    (
        "zero token budget",
        "[agent]\ntoken_budget = 0\n",
        &["c.toml:2", "agent.token_budget"],
    ),
    (
        "tiny output cap",
        "[agent]\noutput_cap_bytes = 10\n",
        &["c.toml:2", "agent.output_cap_bytes"],
    ),
    (
        "zero schedule stride",
        "[policy]\nschedule_stride = 0\n",
        &["c.toml:2", "policy.schedule_stride"],
    ),
    (
        "empty check command",
        "[agent]\ncheck = \" \"\n",
        &["c.toml:2", "agent.check"],
    ),
    (
        "empty calibration path",
        "[policy]\ncalibration = \"\"\n",
        &["c.toml:2", "policy.calibration"],
    ),
    (
        "a timeout no duration can hold (panicked at start)",
        "[junior]\nconnect_timeout_s = 1e30\n",
        &["junior.connect_timeout_s", "c.toml:2"],
    ),
    (
        "an idle timeout no duration can hold (panicked mid-session)",
        "[senior]\nidle_timeout_s = 1e30\n",
        &["senior.idle_timeout_s", "c.toml:2"],
    ),
    (
        "an absurd cost",
        "[costs]\nloss = 1e300\n",
        &["costs.loss", "c.toml:2"],
    ),
    (
        "an absurd output cap",
        "[agent]\noutput_cap_bytes = 18446744073709551615\n",
        &["agent.output_cap_bytes", "c.toml:2"],
    ),
    (
        "a relative writable root",
        "[agent]\nwritable_roots = [\"cache\"]\n",
        &["agent.writable_roots", "c.toml:2"],
    ),
    (
        "a model's key passed to commands",
        "[junior]\napi_key_env = \"MY_KEY\"\n[agent]\nenv_pass = [\"MY_KEY\"]\n",
        &["agent.env_pass", "c.toml:4"],
    ),
];

#[test]
fn every_malformed_config_is_refused_with_its_key_and_line() {
    let mut failures = Vec::new();
    for (what, text, wanted) in CASES {
        match Config::parse(text, "c.toml") {
            Ok(_) => failures.push(format!("{what}: accepted")),
            Err(e) => {
                let msg = e.to_string();
                let missing: Vec<&&str> = wanted.iter().filter(|w| !msg.contains(**w)).collect();
                if !missing.is_empty() {
                    failures.push(format!("{what}: {missing:?} not in {msg:?}"));
                }
            }
        }
    }
    assert!(CASES.len() >= 10);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn the_same_keys_with_sane_values_are_accepted() {
    // Guards the table against refusing everything: each key it uses can be valid.
    let text = "[junior]\nbase_url = \"http://127.0.0.1:8080/v1\"\nmodel = \"m\"\nmax_tokens = 1\n\
                top_logprobs = 20\napi_key_env = \"MY_KEY\"\n\n[senior]\nbase_url = \"https://api.example.com/v1\"\n\
                temperature = 2.0\n\n[agent]\ncheck = \"cargo test\"\noutput_cap_bytes = 256\n\n\
                [policy]\nconstant = 0.0\ncalibration = \"cal.json\"\n";
    let config = Config::parse(text, "ok.toml").expect("a sane config parses");
    assert_eq!(config.junior.max_tokens, Some(1));
    assert_eq!(config.agent.check.as_deref(), Some("cargo test"));
}
