//! The config file format: the example, overrides, validation.

use super::*;
use pretty_assertions::assert_eq;

#[test]
fn the_example_parses_to_the_defaults() {
    let parsed = Config::parse(EXAMPLE, "config.example.toml").expect("example parses");
    assert_eq!(parsed, Config::default());
}

#[test]
fn a_bad_protected_glob_is_named_with_its_line() {
    let msg = err("[agent]\nmax_steps = 3\nprotected = [\"tests/[a\"]\n");
    assert!(
        msg.contains("agent.protected") && msg.contains("c.toml:3"),
        "{msg}"
    );
    let msg = err("[agent]\nprotected = [\"/etc/passwd\"]\n");
    assert!(msg.contains("relative to the repository"), "{msg}");
    let ok = Config::parse("[agent]\nprotected = [\"spec/**\"]\n", "c.toml").expect("ok");
    assert_eq!(ok.agent.protected, Some(vec!["spec/**".to_string()]));
}

#[test]
fn an_empty_file_is_the_defaults() {
    assert_eq!(Config::parse("", "x").expect("empty"), Config::default());
}

fn err(text: &str) -> String {
    match Config::parse(text, "c.toml") {
        Ok(_) => panic!("expected an error for {text:?}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn an_unknown_key_is_named_with_its_line() {
    let msg = err("[junior]\nmodel = \"m\"\ntemprature = 0.1\n");
    assert!(msg.contains("temprature"), "{msg}");
    assert!(msg.contains("line 3"), "{msg}");
}

#[test]
fn a_wrong_type_is_named_with_its_line() {
    let msg = err("[costs]\n\nloss = \"high\"\n");
    assert!(msg.contains("line 3"), "{msg}");
    assert!(msg.contains("loss"), "{msg}");
}

#[test]
fn a_dotted_key_is_named_with_its_own_line() {
    let msg = err("# top\n\n\njunior.max_tokens = 0\n");
    assert!(msg.starts_with("c.toml:4: `junior.max_tokens`"), "{msg}");
    let msg = err("[senior]\nmodel = \"s\"\n\n[junior]\nmodel = \"j\"\nmax_tokens = 0\n");
    assert!(msg.starts_with("c.toml:6: `junior.max_tokens`"), "{msg}");
    let msg = err("junior = { model = \"j\",\n  max_tokens = 0 }\n");
    assert!(msg.starts_with("c.toml:2: `junior.max_tokens`"), "{msg}");
}

#[test]
fn an_out_of_range_value_names_key_and_line() {
    let msg = err("[costs]\nkappa = 0.1\np_senior = 1.5\n");
    assert_eq!(
        msg,
        "c.toml:3: `costs.p_senior` must be a probability in [0, 1]"
    );
}

#[test]
fn an_unknown_enum_value_is_named() {
    let msg = err("[policy]\nthreshold = \"clever\"\n");
    assert!(msg.contains("clever") && msg.contains("line 2"), "{msg}");
}

#[test]
fn tool_protocol_and_context_window_are_checked_with_their_lines() {
    let ok = Config::parse(
        "[junior]\ntool_protocol = \"text\"\ncontext_window = 16384\n[senior]\ntool_protocol = \"native\"\n",
        "c.toml",
    )
    .expect("valid");
    assert_eq!(ok.junior.tool_protocol, ToolProtocol::Text);
    assert_eq!(ok.junior.context_window, Some(16384));
    assert_eq!(ok.senior.tool_protocol, ToolProtocol::Native);
    assert_eq!(Config::default().junior.tool_protocol, ToolProtocol::Auto);

    let schema =
        Config::parse("[junior]\ntool_protocol = \"json_schema\"\n", "c.toml").expect("valid");
    assert_eq!(schema.junior.tool_protocol, ToolProtocol::JsonSchema);
    assert!(schema.junior.tool_protocol.uses_text());
    assert!(!schema.junior.tool_protocol.sends_tools());
    assert!(schema.junior.tool_protocol.reads_text());
    assert!(!ToolProtocol::Text.constrains_reply());
    assert_eq!(
        err("[junior]\ntool_protocol = \"json_schema\"\n[junior.extra]\nresponse_format = \"x\"\n"),
        "c.toml:4: `junior.extra.response_format` must be left out under tool_protocol = \
         \"json_schema\", which builds response_format from the offered tools"
    );
    let msg = err("[junior]\nmodel = \"m\"\ntool_protocol = \"json\"\n");
    assert!(msg.contains("line 3") && msg.contains("json"), "{msg}");
    assert_eq!(
        err("[senior]\n\ncontext_window = 100\n"),
        "c.toml:3: `senior.context_window` must be at least 512 tokens (leave it out when unknown)"
    );
    assert_eq!(
        err("[junior]\nmax_tokens = 4096\ncontext_window = 4096\n"),
        "c.toml:2: `junior.max_tokens` must be smaller than context_window (4096): the reply \
         and the prompt share the window"
    );
}

#[test]
fn a_key_in_the_file_instead_of_a_variable_name_is_refused() {
    let msg = err("[senior]\napi_key_env = \"OPENAI_API_KEY=sk-123\"\n");
    assert!(msg.contains("senior.api_key_env"), "{msg}");
}

#[test]
fn init_refuses_to_overwrite() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("sub/config.toml");
    init(&path).expect("first init");
    assert_eq!(std::fs::read_to_string(&path).expect("read"), EXAMPLE);
    assert!(matches!(init(&path), Err(ConfigError::Exists(_))));
}

#[test]
fn the_digest_changes_with_the_config() {
    let a = Config::default();
    let mut b = Config::default();
    b.costs.loss = 2.0;
    assert_ne!(a.digest(), b.digest());
    assert_eq!(a.digest(), Config::default().digest());
}

#[test]
fn candidates_outside_one_to_eight_are_refused_with_their_line() {
    for bad in ["0", "9"] {
        let msg = err(&format!("[agent]\nmax_steps = 3\ncandidates = {bad}\n"));
        assert!(
            msg.contains("agent.candidates") && msg.contains("between 1 and 8"),
            "{msg}"
        );
    }
    let ok = Config::parse("[agent]\ncandidates = 4\n", "c.toml").expect("ok");
    assert_eq!(ok.agent.candidates, 4);
}
