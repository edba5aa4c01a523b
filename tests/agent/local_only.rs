//! Local-only use: a senior without a key is an error only when the session may need it,
//! and the text protocol's prompts reach the session.

use handoff::agent::session::Approvals;
use handoff::app::wiring::{ExecError, prepare};
use handoff::config::{Config, NoOperator, RouteMode, ToolProtocol};

/// A variable name no environment sets.
const UNSET: &str = "HANDOFF_TEST_KEY_THAT_IS_NEVER_SET";

fn config(route: RouteMode) -> Config {
    let mut c = Config::default();
    c.senior.api_key_env = Some(UNSET.into());
    c.policy.route = route;
    c
}

#[test]
fn route_operator_needs_no_senior_key() {
    let dir = tempfile::tempdir().expect("tempdir");
    let prepared = prepare(
        config(RouteMode::Operator),
        dir.path(),
        "fix it",
        Approvals::Refused,
        Some(dir.path().join("log.jsonl")),
    )
    .expect("a missing senior key is no error under route = operator");
    // Nobody to fall back on: an unanswered question ends the session.
    assert_eq!(prepared.setup.config.agent.no_operator, NoOperator::Fail);
}

#[test]
fn a_missing_senior_key_says_how_to_run_local_only() {
    let dir = tempfile::tempdir().expect("tempdir");
    let err = match prepare(
        config(RouteMode::Triage),
        dir.path(),
        "fix it",
        Approvals::Refused,
        Some(dir.path().join("log.jsonl")),
    ) {
        Ok(_) => panic!("a senior that may be needed and has no key is an error"),
        Err(e) => e,
    };
    assert!(
        matches!(
            err,
            ExecError::Client {
                model: "senior",
                ..
            }
        ),
        "{err:?}"
    );
    let msg = err.to_string();
    assert_eq!(
        msg,
        format!(
            "senior endpoint: endpoint misconfigured: environment variable {UNSET} (api_key_env) \
             is not set; a senior on \
             a local server needs no key (leave api_key_env out of [senior]), and route = \
             \"operator\" needs no senior at all"
        )
    );
}

#[test]
fn a_local_senior_section_needs_no_key_and_text_prompts_list_the_tools() {
    let text = "[senior]\nbase_url = \"http://127.0.0.1:8091/v1\"\nmodel = \"qwen2.5-coder-1.5b-instruct\"\n\
                [junior]\ntool_protocol = \"text\"\n";
    let cfg = Config::parse(text, "local.toml").expect("config");
    assert_eq!(cfg.senior.api_key_env, None);
    let dir = tempfile::tempdir().expect("tempdir");
    let prepared = prepare(
        cfg,
        dir.path(),
        "fix it",
        Approvals::Refused,
        Some(dir.path().join("log.jsonl")),
    )
    .expect("a local senior needs no key");
    assert_eq!(
        prepared.setup.config.junior.tool_protocol,
        ToolProtocol::Text
    );
    assert!(
        prepared
            .setup
            .prompts
            .junior
            .contains("- write_file(path, content): ")
    );
    assert!(!prepared.setup.prompts.junior.contains("{tools}"));
    // The senior stays on the native protocol and its own prompt.
    assert_eq!(
        prepared.setup.prompts.senior,
        handoff::agent::prompts::Prompts::default().senior
    );
}
